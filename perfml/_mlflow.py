"""Bounded waits for MLflow's network stores (used by every layer that talks to MLflow).

MLflow's own defaults (a 120 s request timeout and 7 retries with a factor-2 back-off)
wait minutes for a tracking server that does not answer. :func:`configure_http` sets
``MLFLOW_HTTP_REQUEST_TIMEOUT``, ``MLFLOW_HTTP_REQUEST_MAX_RETRIES``,
``MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR`` and ``MLFLOW_HTTP_REQUEST_BACKOFF_JITTER`` unless
the user set them (and keeps MLflow's "View run at" links off perfml's stdout, where
``--json`` output goes), and :func:`check_reachable` refuses an ``http(s)`` or database URI
whose server does not accept a TCP connection within :data:`CONNECT_TIMEOUT` seconds, and
an in-memory SQLite store.
"""

from __future__ import annotations

import os
from urllib.parse import unquote, urlsplit

from perfml.errors import TrackingStoreError

__all__ = ["HTTP_DEFAULTS", "CONNECT_TIMEOUT", "DATABASE_PORTS", "configure_http", "tracking_uri", "local_store_path",
           "check_reachable", "database_tables", "check_database_store", "refusal_fix",
           "check_store_exists"]

#: perfml's defaults for MLflow's HTTP client (a user's environment wins).
HTTP_DEFAULTS = {
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER": "0.5",
    # stdout is perfml's (tables, --json): no "View run ... at: http://..." lines from a server
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
    # perfml's artifacts are small tables: no download bars on stderr (shown off a terminal too)
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
}

#: Seconds to wait for a tracking server to accept a TCP connection.
CONNECT_TIMEOUT = 5.0

#: What to do when a tracking server with MLflow's basic-auth app (docs/lab_setup.md,
#: "Shared use") refuses a request, by the error code of its answer.
_REFUSAL_FIXES = {
    "UNAUTHENTICATED": "the tracking server asks for a login: set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD "
                       "(or ~/.mlflow/credentials) to a user its admin created, with that user's password",
    "PERMISSION_DENIED": "the tracking server's user (MLFLOW_TRACKING_USERNAME) may not do this: ask the server's admin "
                         "for EDIT or MANAGE on the experiment, or log under an experiment name of your own",
}


def refusal_fix(exc: BaseException) -> str | None:
    """What to do about an MLflow error that is a server's refusal of the login or the permission (else None)."""
    return _REFUSAL_FIXES.get(getattr(exc, "error_code", None))


_FIX = "start the server, set MLFLOW_TRACKING_URI to a store that answers, or (experiment run) pass --no-track"


def configure_http() -> None:
    """Bound MLflow's HTTP waits (see :data:`HTTP_DEFAULTS`), keeping values the user set."""
    for name, value in HTTP_DEFAULTS.items():
        os.environ.setdefault(name, value)


def tracking_uri() -> str:
    """The tracking URI MLflow will use (``MLFLOW_TRACKING_URI`` or its default); creates nothing."""
    import mlflow

    return str(mlflow.get_tracking_uri())


def refuse_nul(uri: str, what: str, error: type[Exception], fix: str) -> None:
    """Raise ``error`` for a store URI holding a NUL byte, raw or as ``%00``: no file or host
    name holds one, and the database drivers raised "embedded null byte" (an internal error)."""
    if "\x00" in uri or "\x00" in unquote(uri):
        shown = uri.replace("\x00", "\\x00")  # printed raw, a NUL byte cut the terminal's line
        raise error(f"{what} {shown!r} holds a NUL byte (%00), which no file or host name can; {fix}")


def local_store_path(uri: str) -> str | None:
    """The file or folder of a local store URI (``sqlite:///``, ``file:``, a bare path), else None."""
    parts = urlsplit(uri)
    if parts.scheme == "sqlite":
        path = unquote(uri[len("sqlite:///"):]) if uri.startswith("sqlite:///") else ""
        return None if path in ("", ":memory:") else ("/" + path.lstrip("/") if uri.startswith("sqlite:////") else path)
    if parts.scheme == "file":
        return unquote(parts.path)
    if uri.startswith("databricks"):  # "databricks", "databricks://profile": remote
        return None
    if parts.scheme == "" or (len(parts.scheme) == 1 and os.name == "nt"):
        return uri
    return None


#: tables every MLflow SQL store has (its schema, created by MLflow's migrations)
MLFLOW_TABLES = frozenset({"experiments", "runs", "alembic_version"})


def sqlite_tables(path: str) -> set[str] | None:
    """The table names of the SQLite file ``path``, read without changing it (None: not SQLite)."""
    import sqlite3
    from pathlib import Path

    try:
        con = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
        try:
            return {row[0] for row in con.execute("select name from sqlite_master where type = 'table'")}
        finally:
            con.close()
    except sqlite3.DatabaseError:
        return None


def check_sqlite_store(path: str | None, uri: str) -> None:
    """Refuse a SQLite file that is some other program's database: MLflow would add its ~20 tables
    to it (even ``perfml report``, which only reads, made MLflow run its migrations there).

    A file that does not exist (in a folder that does), is empty, or holds no table is a new
    store; one that holds MLflow's tables is a store. Anything else raises
    :class:`TrackingStoreError`.
    """
    if path is not None and os.path.isdir(path):  # MLflow retried it for 105 s: "unable to open database file"
        raise TrackingStoreError(f"MLflow tracking store {uri}: {path} is a folder; give a database file in it, "
                                 f"e.g. sqlite:///{os.path.join(path, 'mlflow.db')}")
    folder = os.path.dirname(path) if path is not None else ""
    if folder and not os.path.isdir(folder):  # MLflow would create every missing folder of a mistyped path
        raise TrackingStoreError(f"MLflow tracking store {uri}: the folder {folder} does not exist; create it "
                                 "(mkdir -p) or fix MLFLOW_TRACKING_URI")
    if path is None or not os.path.isfile(path) or os.path.getsize(path) == 0:
        return
    tables = sqlite_tables(path)
    if tables is None:
        raise TrackingStoreError(f"MLflow tracking store {uri}: {path} is not a SQLite database; perfml leaves it "
                                 "as it is: give the store your experiments were logged to, or a new file")
    _refuse_half_created(path, uri, tables)
    _refuse_unless_mlflows(tables, f"MLflow tracking store {uri}: {path}",
                           "give the store your experiments were logged to, or a new file")


def _refuse_half_created(path: str, uri: str, tables: set[str]) -> None:
    """Refuse a store whose MLflow migration stopped half-way, with the fix.

    MLflow's migrations rebuild SQLite tables through ``_alembic_tmp_<table>`` copies; a
    migration that stops (two processes migrating one new store at once, before perfml created
    new stores under a lock; an interrupted ``mlflow db upgrade``) leaves them, and every later
    command failed with "table _alembic_tmp_... already exists". Dropping the leftovers and
    upgrading repairs it (seen on two such stores); a store without runs is simply made again.
    """
    import sqlite3
    from pathlib import Path

    leftovers = sorted(t for t in tables if t.startswith("_alembic_tmp_"))
    if not leftovers:
        return
    runs = 0
    if "runs" in tables:
        con = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
        try:
            runs = con.execute("select count(*) from runs").fetchone()[0]
        except sqlite3.DatabaseError:  # its runs table unreadable: treat it as holding runs
            runs = "some"
        finally:
            con.close()
    fix = (f"it holds no run: delete {path} and run the command again" if not runs else
           f"it holds {runs} run(s): back {path} up, drop each {leftovers[0][:13]}<table> whose <table> also exists "
           f"(sqlite3 {path} 'drop table {leftovers[0]}'; where <table> is missing, rename the copy to it instead), "
           f"then run `mlflow db upgrade {uri}`")
    raise TrackingStoreError(f"MLflow tracking store {uri}: {path} was left half-created by a migration that stopped "
                             f"(leftover tables {', '.join(leftovers)}); {fix}")


def create_new_sqlite_store(path: str | None, uri: str) -> None:
    """Create the tables of a new SQLite store once, holding an exclusive lock on its folder.

    MLflow creates a store's tables (some forty migrations) when it first opens an empty
    file. Several perfml commands starting together on one new store all migrated it: the
    losers failed ("table datasets already exists", "duplicate column name: step"), and in two
    of the five races of a helper's probe (concurrent ``perfml experiment run`` and ``perfml
    tune``) the store was left half-created, every later command failing on it. Under the lock the first
    process creates the store; the others wait, then find its tables and only use it. A
    store that already has tables is not locked. Without ``fcntl`` (Windows) MLflow creates
    it unguarded, as before.
    """
    if path is None or _has_tables(path):
        return
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return
    folder = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)  # a lock that leaves no file behind
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        try:
            if _has_tables(path):  # another process created it while this one waited
                return
            import logging

            from mlflow.tracking import MlflowClient

            logging.getLogger("mlflow").setLevel(logging.WARNING)  # no "creating tables" chatter on stderr
            MlflowClient(tracking_uri=uri).search_experiments(max_results=1)  # opening the store migrates it
        finally:
            fcntl.flock(folder, fcntl.LOCK_UN)
    finally:
        os.close(folder)


def _has_tables(path: str) -> bool:
    return os.path.isfile(path) and os.path.getsize(path) > 0 and bool(sqlite_tables(path))


def _refuse_unless_mlflows(tables: set[str], subject: str, advice: str) -> None:
    """Raise :class:`TrackingStoreError` if ``tables`` (of a store that holds some) are not MLflow's."""
    if tables and not MLFLOW_TABLES <= tables:
        shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
        raise TrackingStoreError(f"{subject} is another program's database (tables {shown}, not MLflow's); perfml "
                                 f"does not add MLflow's tables to it: {advice}")


#: default ports of the database stores MLflow takes (``postgresql+psycopg://``, ...)
DATABASE_PORTS = {"postgresql": 5432, "mysql": 3306, "mssql": 1433}


def database_tables(url: str, error: type[Exception], what: str, timeout: float = CONNECT_TIMEOUT) -> set[str]:
    """The table names of the database server store ``url`` (a SQLAlchemy URL), read without changing it.

    One connection, within ``timeout`` seconds: a refused login or a missing database is
    ``error`` at once, with the driver's reason (MLflow's engine retried a wrong password for
    about 105 s and then blamed a lock), and so is a URL whose driver is not installed.
    """
    import sqlalchemy

    database = urlsplit(url).scheme.split("+", 1)[0]
    connect_args = {"connect_timeout": max(1, int(timeout))} if database in ("postgresql", "mysql") else {}
    try:
        engine = sqlalchemy.create_engine(url, connect_args=connect_args, poolclass=sqlalchemy.pool.NullPool)
    except ImportError as exc:  # the dialect's driver module (MySQLdb for mysql://)
        raise error(f"{what} {url}: the Python driver for this database is not installed ({exc}); install it "
                    "(e.g. psycopg for postgresql, pymysql for mysql+pymysql)") from None
    except Exception as exc:  # an URL SQLAlchemy cannot parse
        raise error(f"{what} {url} is not a database URL SQLAlchemy takes ({type(exc).__name__}: {exc})") from None
    try:
        with engine.connect() as connection:
            return set(sqlalchemy.inspect(connection).get_table_names())
    except sqlalchemy.exc.SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise error(f"{what} {url}: could not open the database ({reason}); check that its server runs, the user, "
                    "the database name and the password (PGPASSFILE or ~/.pgpass, PGPASSWORD)") from None
    finally:
        engine.dispose()


def check_database_store(uri: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Refuse a database server store that holds another program's tables (an Optuna study
    database, say): MLflow adds its tables to any database it is given, and even ``perfml
    report``, which only reads, ran MLflow's migrations in the Optuna database."""
    _refuse_unless_mlflows(database_tables(uri, TrackingStoreError, "MLflow tracking store", timeout),
                           f"MLflow tracking store {uri}", "give the database of your tracking store, or a new one")


def check_store_exists(uri: str, nothing: str, fix: str) -> None:
    """Refuse a local store that does not exist yet, for a command that only reads.

    MLflow creates a SQLite file store (and its tables) on first use, so a read of a
    store that is not there would leave an empty ``mlflow.db`` behind and then report
    that nothing was found in it. ``nothing`` says what the command then has to do
    without (``nothing to report``), ``fix`` where to look instead.

    Raises
    ------
    TrackingStoreError
        If ``uri`` is a local store whose file or folder does not exist, or a SQLite file
        without a table.
    """
    refuse_nul(uri, "MLflow tracking URI", TrackingStoreError, "fix MLFLOW_TRACKING_URI")
    try:
        path = local_store_path(uri)
    except ValueError:  # malformed: check_reachable names it
        return
    if path is None:
        return
    empty = uri.startswith("sqlite") and os.path.isfile(path) and sqlite_tables(path) == set()  # None: not SQLite
    if not os.path.exists(path) or empty:
        raise TrackingStoreError(f"no MLflow store at {path} ({uri}): {nothing}; {fix}")


def check_file_store(path: str, uri: str) -> None:
    """Refuse a file-system store (a bare path or ``file:``) that this MLflow cannot use.

    A regular file is no store at all. A folder is MLflow's file store, which MLflow 3.x
    refuses unless ``MLFLOW_ALLOW_FILE_STORE=true`` (its "maintenance mode" message, a
    paragraph long, came out as "MLflow failed: ..."); an MLflow without that switch
    still uses it.
    """
    if os.path.isfile(path):
        raise TrackingStoreError(f"MLflow tracking URI {uri!r} is a file, not a tracking store; give a SQLite store "
                                 "(e.g. sqlite:///mlflow.db) or a server's http(s) URL in MLFLOW_TRACKING_URI")
    try:
        from mlflow.environment_variables import MLFLOW_ALLOW_FILE_STORE
    except ImportError:  # an MLflow from before the switch uses file stores
        return
    if not MLFLOW_ALLOW_FILE_STORE.get():
        raise TrackingStoreError(
            f"MLflow tracking URI {uri!r} is a file-system store, which this MLflow refuses: log to a SQLite store "
            "(e.g. sqlite:///mlflow.db; `mlflow migrate-filestore` moves an existing store there), or set "
            "MLFLOW_ALLOW_FILE_STORE=true to keep the folder")


def check_reachable(uri: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Raise :class:`TrackingStoreError` unless the store of ``uri`` can be used.

    An ``http(s)`` server or a database (``postgresql``, ``mysql``, ``mssql``, any driver)
    must accept a TCP connection within ``timeout`` seconds: MLflow's own engine retries an
    unreachable database for about 105 s. An in-memory SQLite store (``sqlite://``,
    ``sqlite:///``, ``sqlite:///:memory:``) is refused: every run logged there is lost when
    the command ends, while its artifacts land in ``./mlruns``.
    """
    import socket

    refuse_nul(uri, "MLflow tracking URI", TrackingStoreError, "fix MLFLOW_TRACKING_URI")
    try:
        parts = urlsplit(uri)
    except ValueError as exc:  # e.g. 'http://[::1' (an unclosed IPv6 bracket)
        raise TrackingStoreError(f"MLflow tracking URI {uri!r} is malformed ({exc}); fix MLFLOW_TRACKING_URI") from None
    if parts.scheme == "sqlite" and local_store_path(uri) is None:
        raise TrackingStoreError(f"MLflow tracking URI {uri!r} is an in-memory SQLite store: it keeps nothing after "
                                 "this command; give a file (e.g. sqlite:///mlflow.db), or (experiment run) pass --no-track")
    if parts.scheme == "sqlite":
        check_sqlite_store(local_store_path(uri), uri)
        create_new_sqlite_store(local_store_path(uri), uri)
    if parts.scheme == "file" or local_store_path(uri) == uri:
        check_file_store(local_store_path(uri), uri)
    database = parts.scheme.split("+", 1)[0]
    if parts.scheme not in ("http", "https") and database not in DATABASE_PORTS:
        return
    if database in DATABASE_PORTS and not parts.hostname:
        check_database_store(uri, timeout)  # a local socket (postgresql:///db?host=/run/postgresql)
        return
    try:
        port = parts.port or DATABASE_PORTS.get(database) or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise TrackingStoreError(f"MLflow tracking URI {uri!r} has an invalid port ({exc}); fix MLFLOW_TRACKING_URI") from exc
    if not parts.hostname:
        raise TrackingStoreError(f"MLflow tracking URI {uri!r} names no host; fix MLFLOW_TRACKING_URI")
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            pass
    except OSError as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc) or type(exc).__name__)
        raise TrackingStoreError(
            f"MLflow tracking store {uri} does not answer ({reason} after at most {timeout:g} s); {_FIX}"
        ) from exc
    if database in DATABASE_PORTS:
        check_database_store(uri, timeout)
