"""Lab fixtures: a throw-away PostgreSQL cluster and a real ``mlflow server`` on loopback.

Imported by the ``tests/test_lab_*.py`` modules (``from lab_fixtures import ...``).

* :func:`postgres` (session scope) runs ``initdb`` and ``pg_ctl`` from the PostgreSQL
  binaries of this machine (``pg_config --bindir``, ``/usr/lib/postgresql/*/bin`` or the
  ``PATH``) in a temporary directory, listening on 127.0.0.1 and a free port only. The
  server refuses to run as root, so as root it runs as the ``postgres`` system user
  (``runuser``/``su``). Every password is random, travels through files (initdb's
  ``--pwfile``, a ``PGPASSFILE``), never through a command line or a log. Tests that
  need it skip, with the reason, only when the binaries are absent.
* :class:`MlflowServer` / :func:`mlflow_server` runs ``mlflow server`` with a PostgreSQL
  backend store (a database of its own: MLflow and Optuna both keep an
  ``alembic_version`` table) and an artifacts destination in a temporary directory,
  waits (bounded) until ``/health`` answers, and can be stopped and started again on the
  same port (the server-restart fault test).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

HOST = "127.0.0.1"
#: Bound of every wait on a subprocess of these fixtures, in seconds.
START_TIMEOUT = 90


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (now)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def postgres_bindir() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``, or None when PostgreSQL is not installed."""
    candidates = []
    if shutil.which("pg_config"):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, timeout=10, check=True)
            candidates.append(out.stdout.strip())
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    if shutil.which("initdb"):
        candidates.append(str(Path(shutil.which("initdb")).parent))
    for folder in candidates:
        if folder and (Path(folder) / "initdb").is_file() and (Path(folder) / "pg_ctl").is_file():
            return Path(folder)
    return None


def _as_server_user() -> tuple[list[str], str | None]:
    """The command prefix that runs the server unprivileged, and that user's name (None: this user)."""
    if os.geteuid() != 0:
        return [], None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("running as root and no `postgres` system user to run the PostgreSQL server as")
    if shutil.which("runuser"):
        return ["runuser", "-u", "postgres", "--"], "postgres"
    return ["su", "postgres", "-s", "/bin/sh", "-c"], "postgres"  # pragma: no cover - runuser is in util-linux


def _run(prefix: list[str], argv: list[str], what: str, timeout: float = START_TIMEOUT) -> None:
    cmd = prefix + ([" ".join(argv)] if prefix[:1] == ["su"] else argv)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")


@dataclass
class PostgresCluster:
    """A running throw-away cluster; credentials live in ``pgpass`` (exported as ``PGPASSFILE``)."""

    bindir: Path
    root: Path
    port: int
    pgpass: Path
    admin: str = "perfml_admin"
    user: str = "perfml_lab"
    host: str = HOST
    _prefix: list[str] = field(default_factory=list)
    _n_databases: int = 0

    @property
    def data(self) -> Path:
        return self.root / "data"

    def url(self, database: str, driver: str = "postgresql+psycopg") -> str:
        """SQLAlchemy URL without a password: libpq reads it from ``PGPASSFILE``."""
        return f"{driver}://{self.user}@{self.host}:{self.port}/{database}"

    def _connect(self, dbname: str = "postgres", user: str | None = None):
        import psycopg

        return psycopg.connect(host=self.host, port=self.port, dbname=dbname, user=user or self.admin,
                               autocommit=True, connect_timeout=10)

    def new_database(self, prefix: str = "lab") -> str:
        """Create a fresh database owned by the lab role and return its name."""
        from psycopg import sql

        self._n_databases += 1
        name = f"{prefix}_{self._n_databases}_{secrets.token_hex(3)}"
        with self._connect() as conn:
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(name), sql.Identifier(self.user)))
        return name

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            _run(self._prefix, [str(self.bindir / "pg_ctl"), "stop", "-D", str(self.data), "-m", "fast", "-w", "-t", "30"],
                 "pg_ctl stop", timeout=45)


@pytest.fixture(scope="session")
def postgres():
    """A throw-away PostgreSQL cluster on 127.0.0.1:<free port> with a password-protected role.

    Yields a :class:`PostgresCluster`; ``PGPASSFILE`` points at a 0600 file holding the
    random passwords of the admin and the lab role while the session runs.
    """
    with postgres_cluster() as cluster:
        yield cluster


@contextlib.contextmanager
def postgres_cluster():
    """The cluster of :func:`postgres` as a context manager (also used by experiments/bench_tracking_load.py)."""
    bindir = postgres_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) not found: install postgresql (e.g. apt-get install postgresql-15)")
    pytest.importorskip("psycopg", reason="psycopg is needed for PostgreSQL URLs: pip install -e '.[lab]'")
    prefix, server_user = _as_server_user()
    # under /tmp itself, not $TMPDIR (which may be a folder the server user cannot enter)
    root = Path(tempfile.mkdtemp(prefix="perfml-pg-", dir="/tmp"))
    secrets_dir = Path(tempfile.mkdtemp(prefix="perfml-pgpass-"))
    admin_pw, lab_pw = secrets.token_urlsafe(18), secrets.token_urlsafe(18)
    pwfile = root / "pwfile"
    pwfile.write_text(admin_pw + "\n")
    os.chmod(pwfile, 0o600)
    if server_user is not None:
        entry = pwd.getpwnam(server_user)
        os.chown(root, entry.pw_uid, entry.pw_gid)
        os.chown(pwfile, entry.pw_uid, entry.pw_gid)
    os.chmod(root, 0o700)
    port = free_port()
    cluster = PostgresCluster(bindir=bindir, root=root, port=port, pgpass=secrets_dir / "pgpass", _prefix=prefix)
    cluster.pgpass.write_text(f"{HOST}:{port}:*:{cluster.admin}:{admin_pw}\n{HOST}:{port}:*:{cluster.user}:{lab_pw}\n")
    os.chmod(cluster.pgpass, 0o600)
    saved = os.environ.get("PGPASSFILE")
    os.environ["PGPASSFILE"] = str(cluster.pgpass)
    try:
        _run(prefix, [str(bindir / "initdb"), "-D", str(cluster.data), "-U", cluster.admin, f"--pwfile={pwfile}",
                      "-A", "scram-sha-256", "-E", "UTF8", "--no-sync"], "initdb")
        pwfile.unlink()
        options = f"-c listen_addresses={HOST} -c port={port} -c unix_socket_directories={root} -c fsync=off -c max_connections=200"
        _run(prefix, [str(bindir / "pg_ctl"), "start", "-D", str(cluster.data), "-l", str(root / "server.log"),
                      "-w", "-t", "60", "-o", f"'{options}'" if prefix[:1] == ["su"] else options], "pg_ctl start")
        from psycopg import sql

        with cluster._connect() as conn:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(cluster.user), sql.Literal(lab_pw)))
        yield cluster
    finally:
        cluster.stop()
        if saved is None:
            os.environ.pop("PGPASSFILE", None)
        else:
            os.environ["PGPASSFILE"] = saved
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(secrets_dir, ignore_errors=True)


class MlflowServer:
    """``mlflow server`` on 127.0.0.1 with a PostgreSQL backend store; restartable on its port."""

    def __init__(self, backend_uri: str, artifacts: Path, log: Path, port: int | None = None, *,
                 app_name: str | None = None, env: dict | None = None):
        self.backend_uri = backend_uri
        self.artifacts = Path(artifacts)
        self.log = Path(log)
        self.port = port or free_port()
        self.app_name = app_name  # e.g. "basic-auth" (MLflow's authentication app)
        self.env = dict(env or {})  # added to the server's environment only
        self.proc: subprocess.Popen | None = None

    @property
    def uri(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self, timeout: float = START_TIMEOUT) -> None:
        cmd = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", self.backend_uri,
               "--artifacts-destination", str(self.artifacts), "--host", HOST, "--port", str(self.port), "--workers", "2"]
        if self.app_name:
            cmd += ["--app-name", self.app_name]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                         env={**os.environ, **self.env})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mlflow server exited with {self.proc.returncode}: {self.log.read_text()[-3000:]}")
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"{self.uri}/health", timeout=2) as resp:
                    if resp.status == 200:
                        return
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"mlflow server did not answer /health within {timeout} s: {self.log.read_text()[-3000:]}")

    def stop(self, timeout: float = 15) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=timeout)
        # the uvicorn workers of the group: wait until the port is free again
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex((HOST, self.port)) != 0:
                    return
            time.sleep(0.2)


@pytest.fixture(scope="session")
def mlflow_server(postgres, tmp_path_factory):
    """A running ``mlflow server`` on a PostgreSQL database of its own (session scope)."""
    folder = tmp_path_factory.mktemp("mlflow-server")
    server = MlflowServer(postgres.url(postgres.new_database("mlflow")), folder / "artifacts", folder / "server.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def tracking_uri(uri: str):
    """Point MLflow (``MLFLOW_TRACKING_URI``, read by MLflow when no URI was set in code) at ``uri``."""
    saved = os.environ.get("MLFLOW_TRACKING_URI")
    os.environ["MLFLOW_TRACKING_URI"] = uri
    try:
        yield uri
    finally:
        if saved is None:
            os.environ.pop("MLFLOW_TRACKING_URI", None)
        else:
            os.environ["MLFLOW_TRACKING_URI"] = saved
