"""MLflow tracking (issue 14 sections 2 and 4): reading creates no store; a store that does
not answer is refused within seconds with a typed one-line error naming the URI."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perfml.cli import main

from conftest import needs_data_home

ROOT = Path(__file__).resolve().parents[1]


def _closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _perfml(args: list[str], cwd: Path, env: dict[str, str], timeout: float):
    full = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")} | env
    full["PYTHONPATH"] = str(ROOT) + os.pathsep + full.get("PYTHONPATH", "")
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "perfml", *args], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=timeout)
    return proc, time.monotonic() - t0


@pytest.fixture()
def empty_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    return tmp_path


def test_report_creates_no_store_in_the_working_directory(empty_cwd, capsys):
    code = main(["report"])
    err = capsys.readouterr().err
    assert list(empty_cwd.iterdir()) == [], "perfml report created a tracking store"
    assert code == 2 and err.count("\n") == 1 and "nothing to report" in err and "mlflow.db" in err


@pytest.mark.parametrize("uri", ["sqlite:///{tmp}/store/mlflow.db", "file://{tmp}/mlruns"])
def test_report_on_a_missing_store_names_it_and_creates_nothing(empty_cwd, capsys, monkeypatch, uri):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri.format(tmp=empty_cwd))
    assert main(["report", "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and str(empty_cwd) in err and "nothing to report" in err
    assert list(empty_cwd.iterdir()) == []


def test_report_against_a_closed_port_fails_fast(tmp_path):
    uri = f"http://127.0.0.1:{_closed_port()}"
    proc, seconds = _perfml(["report"], tmp_path, {"MLFLOW_TRACKING_URI": uri}, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and uri in proc.stderr and "does not answer" in proc.stderr
    assert "MLFLOW_TRACKING_URI" in proc.stderr or "--no-track" in proc.stderr
    assert seconds < 30  # MLflow's defaults (7 retries, back-off factor 2) took minutes
    assert list(tmp_path.iterdir()) == []


@needs_data_home()
def test_experiment_run_refuses_an_unreachable_store_before_working(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://127.0.0.1:{_closed_port()}")
    import perfml.experiments.runner as runner

    def must_not_run(*args, **kwargs):
        raise AssertionError("the experiment ran although its store does not answer")

    monkeypatch.setattr(runner, "run_experiment", must_not_run)
    t0 = time.monotonic()
    assert main(["experiment", "run", str(ROOT / "experiments" / "unseen_boards.toml")]) == 2
    assert time.monotonic() - t0 < 15
    assert "does not answer" in capsys.readouterr().err


def test_a_silent_server_times_out_with_a_typed_error(tmp_path):
    """A server that accepts connections but never answers: MLflow's request timeout applies."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        uri = f"http://127.0.0.1:{server.getsockname()[1]}"
        env = {"MLFLOW_TRACKING_URI": uri, "MLFLOW_HTTP_REQUEST_TIMEOUT": "1", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0"}
        proc, seconds = _perfml(["report"], tmp_path, env, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr and "MLflow" in proc.stderr
    assert seconds < 30


def test_configure_http_bounds_waits_and_keeps_the_users_values(monkeypatch):
    from perfml._mlflow import HTTP_DEFAULTS, configure_http

    for name in HTTP_DEFAULTS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "3")
    configure_http()
    assert os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] == "3"
    assert int(os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"]) <= 2
    assert float(os.environ["MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR"]) <= 2


@pytest.mark.parametrize(
    "uri, path",
    [
        ("sqlite:///mlflow.db", "mlflow.db"),
        ("sqlite:////abs/dir/mlflow.db", "/abs/dir/mlflow.db"),
        ("file:///abs/mlruns", "/abs/mlruns"),
        ("./mlruns", "./mlruns"),
        ("http://127.0.0.1:5000", None),
        ("databricks", None),
    ],
)
def test_local_store_path(uri, path):
    from perfml._mlflow import local_store_path

    assert local_store_path(uri) == path


@pytest.mark.parametrize("uri", ["sqlite://", "sqlite:///", "sqlite:///:memory:"])
def test_an_in_memory_sqlite_store_is_refused(uri):
    # a run logged there was reported done and lost, its artifacts left in ./mlruns
    from perfml._mlflow import check_reachable
    from perfml.errors import TrackingStoreError

    with pytest.raises(TrackingStoreError, match="in-memory SQLite store: it keeps nothing"):
        check_reachable(uri)


@pytest.mark.parametrize("uri", ["postgresql://u@127.0.0.1:1/db", "postgresql+psycopg://u:pw@127.0.0.1:1/db",
                                 "mysql+pymysql://u@127.0.0.1:1/db"])
def test_an_unreachable_database_store_fails_fast(uri):
    # MLflow's engine retried it for about 105 s
    from perfml._mlflow import check_reachable
    from perfml.errors import TrackingStoreError

    with pytest.raises(TrackingStoreError, match="does not answer"):
        check_reachable(uri, timeout=2.0)


def test_file_stores_are_not_probed_and_a_local_socket_is_opened_once(monkeypatch):
    from perfml._mlflow import check_reachable
    from perfml.errors import TrackingStoreError

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3.x uses a folder store only so
    for uri in ("sqlite:///mlflow.db", "file:///tmp/mlruns"):
        check_reachable(uri)  # nothing to connect to: no error
    # a database on a local socket is opened once, to read its tables (another program's database is
    # refused before MLflow adds its own to it): without a server, at once, with the driver's reason
    with pytest.raises(TrackingStoreError, match="could not open the database|driver for this database is not installed"):
        check_reachable("postgresql:///db?host=/nonexistent-socket-dir")


@pytest.mark.parametrize("kind", ["folder", "file"])
@pytest.mark.parametrize("scheme", ["", "file://"])
def test_a_file_system_store_this_mlflow_refuses_is_one_line_naming_the_fixes(tmp_path, monkeypatch, capsys, kind, scheme):
    """MLflow 3.x refuses a folder store unless MLFLOW_ALLOW_FILE_STORE=true: its paragraph came out
    as "MLflow failed: ... See ..."; a regular file given as the store got the same paragraph."""
    store = tmp_path / "mlruns"
    store.mkdir() if kind == "folder" else store.write_text("not a store")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"{scheme}{store}")
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    assert main(["report"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    if kind == "file":
        assert "is a file, not a tracking store" in err
        return
    assert "is a file-system store, which this MLflow refuses" in err and "MLFLOW_ALLOW_FILE_STORE=true" in err
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # the user's choice: the folder is used
    assert main(["report"]) == 2
    assert "no finished perfml experiment runs" in capsys.readouterr().err


def _half_created_store(path: Path, runs: int) -> None:
    """A SQLite store as a stopped MLflow migration leaves it: its tables and an ``_alembic_tmp_`` copy."""
    import sqlite3

    con = sqlite3.connect(path)
    for table in ("experiments", "runs", "alembic_version", "metrics", "_alembic_tmp_metrics"):
        con.execute(f"create table {table} (id integer)")
    con.executemany("insert into runs values (?)", [(i,) for i in range(runs)])
    con.commit()
    con.close()


@pytest.mark.parametrize("runs", [0, 3])
def test_a_half_created_store_is_refused_with_its_repair(tmp_path, monkeypatch, capsys, runs):
    """Two processes migrating one new store left it with _alembic_tmp_ tables, and every later
    command failed on "table _alembic_tmp_... already exists" (helper probe, 2026-11-28)."""
    store = tmp_path / "mlflow.db"
    _half_created_store(store, runs)
    before = store.read_bytes()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{store}")
    assert main(["report"]) == 2
    err = capsys.readouterr().err
    assert "half-created" in err and "_alembic_tmp_metrics" in err and "Traceback" not in err
    if runs:
        assert "3 run(s)" in err and "mlflow db upgrade" in err and "back" in err
    else:
        assert f"delete {store}" in err
    assert store.read_bytes() == before  # left as it was


def test_a_new_sqlite_store_is_created_under_a_lock_on_its_folder(tmp_path):
    """While another process holds the folder's lock, a command on a new store in it waits and
    creates nothing; released, the command creates the store once (concurrent creations broke
    new stores: helper probe, 2026-11-28)."""
    fcntl = pytest.importorskip("fcntl")
    store = tmp_path / "mlflow.db"
    code = ("from perfml._mlflow import check_reachable; import sys; check_reachable(sys.argv[1]); print('done')")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    folder = os.open(tmp_path, os.O_RDONLY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        proc = subprocess.Popen([sys.executable, "-c", code, f"sqlite:///{store}"], env=env, cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(8)  # long enough for the child to import MLflow and reach the store
            assert proc.poll() is None, proc.communicate()
            assert not store.exists() or store.stat().st_size == 0
        finally:
            fcntl.flock(folder, fcntl.LOCK_UN)
        out, err = proc.communicate(timeout=120)
    finally:
        os.close(folder)
    assert proc.returncode == 0 and out.strip() == "done", err
    from perfml._mlflow import MLFLOW_TABLES, sqlite_tables

    tables = sqlite_tables(str(store))
    assert MLFLOW_TABLES <= tables and not any(t.startswith("_alembic_tmp_") for t in tables)


def test_commands_starting_together_on_a_new_store_all_succeed(tmp_path):
    """Three processes open one new store at once: each succeeds, and the store is whole."""
    store = tmp_path / "mlflow.db"
    code = ("from perfml._mlflow import check_reachable; import sys, time; from mlflow.tracking import MlflowClient\n"
            "while time.time() < float(sys.argv[2]): time.sleep(0.01)\n"
            "check_reachable(sys.argv[1]); c = MlflowClient(sys.argv[1]); c.create_experiment(sys.argv[3])\n"
            "print(len(c.search_experiments()))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    start = str(time.time() + 12)  # every process has imported MLflow by then
    procs = [subprocess.Popen([sys.executable, "-c", code, f"sqlite:///{store}", start, f"e{i}"], env=env,
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(3)]
    results = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err[-500:] for _, err in results]
    from perfml._mlflow import sqlite_tables

    assert not any(t.startswith("_alembic_tmp_") for t in sqlite_tables(str(store)))


@needs_data_home()
def test_two_runs_of_one_experiment_in_one_second_have_distinct_parent_names(tmp_path, monkeypatch, capsys):
    """Two concurrent runs of one file got one parent run name (its time had a one-second
    resolution; helper probe): the name also carries the host and the process id."""
    import mlflow

    import perfml.experiments.runner as runner

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    spec = tmp_path / "tiny.toml"
    spec.write_text('format = "perfml-experiment"\nversion = 1\nname = "tiny_names"\ndescription = "two runs in one second"\nprotocol = "leave-one-board-out"\n'
                    '[data]\nsource = "gpuperfpredict-nca"\napps = ["vectorAdd"]\n'
                    'boards = ["GTX-680", "GTX-980", "Tesla-K40"]\n'
                    '[[models]]\nname = "bsp"\nkind = "closed_form"\nmodel = "bsp"\n')
    monkeypatch.setattr(runner.time, "strftime", lambda fmt, *a: "20261128-191321")  # one second for both
    for pid in (1001, 1002):
        monkeypatch.setattr(os, "getpid", lambda pid=pid: pid)
        assert main(["-q", "experiment", "run", str(spec)]) == 0
    capsys.readouterr()
    client = mlflow.tracking.MlflowClient()
    runs = client.search_runs([client.get_experiment_by_name("tiny_names").experiment_id],
                              filter_string="tags.`perfml.kind` = 'experiment'")
    names = sorted(r.info.run_name for r in runs)
    assert len(names) == 2 and names[0] != names[1], names
    assert all(n.startswith("tiny_names-20261128-191321-") for n in names) and names[1].endswith("-1002"), names
