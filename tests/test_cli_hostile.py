"""Hostile and careless invocations of every command (issue 14 section 5).

Each invocation runs in-process through :func:`perfml.cli.main` in an empty working
directory, with inputs built in ``tmp_path``: missing files, directories given as files,
empty files, binary garbage, a data home whose ``runtimes.csv.gz`` is cut mid-stream,
unknown options and values, negative and huge numbers. Whatever the input, the contract
is the same:

* exit status 0 (handled) or 2 (bad input), never a crash;
* no ``Traceback`` on stderr, and an error is exactly one line;
* on error, no file or directory was created (in ``tmp_path`` or the working directory).

Foreign exceptions that are hard to provoke from outside (a full disk, a read-only file
system, xgboost / Optuna / MLflow / pyarrow failures, Ctrl-C) are injected into a
command with ``monkeypatch`` and must come out as typed one-line errors too.
"""

from __future__ import annotations

import errno
import gzip
import os
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfml.cli import main

from conftest import data_home_path, needs_data_home

SHARED = data_home_path() or Path("/nonexistent-data-home")  # None only under --without-data-home
needs_data = needs_data_home()


def _snapshot(*roots: Path) -> set[str]:
    return {str(p) for root in roots for p in root.rglob("*")}


def _data_home(tmp: Path, name: str, runtimes: bytes | None) -> Path:
    """A data home linking every shared table, with ``runtimes.csv.gz`` replaced."""
    home = tmp / name
    home.mkdir()
    for table in SHARED.iterdir():
        if table.name != "runtimes.csv.gz":
            (home / table.name).symlink_to(table)
    if runtimes is not None:
        (home / "runtimes.csv.gz").write_bytes(runtimes)
    return home


@pytest.fixture()
def hostile(tmp_path, monkeypatch):
    """Inputs of every bad kind, and a working directory that must stay empty."""
    files = tmp_path / "in"
    files.mkdir()
    (files / "empty.csv").write_bytes(b"")
    (files / "empty.toml").write_bytes(b"")
    (files / "garbage.bin").write_bytes(bytes(range(256)) * 8)
    (files / "garbage.toml").write_bytes(b"\xff\xfe\x00[[[\x00 = =\n\x80")
    (files / "bad.toml").write_text("[model\nname = 'x'\n")
    (files / "bad.json").write_text("{\"board\": ")
    (files / "scalar.json").write_text("0")
    (files / "a_dir").mkdir()
    (files / "empty_dir").mkdir()
    (files / "queries.csv").write_text("board,app_id,input_size\nGTX-680,matMul_gpu,1024\n")
    if (SHARED / "runtimes.csv.gz").is_file():
        whole = (SHARED / "runtimes.csv.gz").read_bytes()
        _data_home(files, "truncated_home", whole[:60_000])
        _data_home(files, "garbage_home", bytes(range(256)) * 64)
        _data_home(files, "plain_text_home", gzip.decompress(whole)[:5_000])  # not gzip at all
        _data_home(files, "empty_home", b"")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'nostore' / 'mlflow.db'}")
    monkeypatch.setenv("NO_COLOR", "1")
    return tmp_path


def _check(argv: list[str], root: Path, capsys) -> tuple[int, str]:
    before = _snapshot(root)
    code = main(argv)
    out, err = capsys.readouterr()
    assert code in (0, 2), f"{argv}: exit {code}\n{err}"
    assert "Traceback" not in err and "Traceback" not in out, f"{argv}:\n{err}"
    if code != 0:
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1, f"{argv}: error is not one line:\n{err}"
        assert lines[0].startswith("error: "), f"{argv}: {lines[0]}"
        created = _snapshot(root) - before
        assert not created, f"{argv}: created {sorted(created)} on error"
    return code, err


# (argv with {in} for the inputs folder, expected exit status or None for "0 or 2")
CASES = [
    # unknown commands, options and values
    (["no-such-command"], 2),
    (["boards", "show"], 2),
    (["boards", "show", "GTX-6800"], 2),
    (["boards", "show", "", "--json"], 2),
    (["boards", "list", "--bogus"], 2),
    (["fit-lambda", "--source", "nowhere"], 2),
    (["evaluate", "--model", "gpt"], 2),
    (["evaluate"], 2),
    (["evaluate", "--model", "bsp", "--protocol", "leave-nothing-out"], 2),
    (["bsp-table2", "--runs", "imaginary"], 2),
    (["predict-lambda", "--board", "GTX-680", "--size", "not-a-number"], 2),
    (["cumapz", "seed004_fetch0_rowwise", "--set", "MAX"], 2),
    (["cumapz", "seed004_fetch0_rowwise", "--set", "MAX=abc"], 2),
    (["cumapz", "seed004_fetch0_rowwise", "--board", "GTX-9999"], 2),
    (["cumapz", "no_such_description"], 2),
    (["cumapz", "seed004_fetch0_rowwise", "--no-buffer-policy", "sometimes"], 2),
    (["tune", "--n-trials", "many"], 2),
    (["--quiet", "--debug", "boards", "show", "nope"], 2),
    # missing files, directories given as files, empty files, garbage
    (["fit-lambda", "--data-home", "/nonexistent/dir"], 2),
    (["fit-lambda", "--data-home", "{in}/garbage.bin"], 2),
    (["fit-lambda", "--data-home", "{in}/empty_dir"], 2),
    (["characterize"], 2),
    (["characterize", "{in}/missing_results"], 2),
    (["characterize", "{in}/garbage.bin"], 2),
    (["characterize", "{in}/empty_dir"], 2),
    (["characterize", "--reference", "GTX-980", "--out", "{in}/a_dir", "--force"], 2),
    (["characterize", "--reference", "GTX-980", "--out", "{in}/garbage.bin/x.json"], 2),
    (["characterize", "--reference", "nope"], 2),
    (["diagnose", "--board", "GTX-680", "--app", "matMul_gpu", "--characterization", "{in}/missing.json"], 2),
    (["diagnose", "--board", "GTX-680", "--app", "matMul_gpu", "--characterization", "{in}/bad.json"], 2),
    (["diagnose", "--board", "GTX-680", "--app", "matMul_gpu", "--characterization", "{in}/garbage.bin"], 2),
    (["diagnose", "--board", "GTX-680", "--app", "matMul_gpu", "--characterization", "{in}/scalar.json"], 2),
    (["diagnose", "--board", "GTX-680"], 2),
    (["cumapz", "{in}/missing.toml"], 2),
    (["cumapz", "{in}/a_dir"], 2),
    (["cumapz", "{in}/garbage.toml"], 2),
    (["cumapz", "{in}/bad.toml"], 2),
    (["experiment", "run", "{in}/missing.toml", "--no-track"], 2),
    (["experiment", "run", "{in}/a_dir", "--no-track"], 2),
    (["experiment", "run", "{in}/empty.toml", "--no-track"], 2),
    (["experiment", "run", "{in}/garbage.toml", "--no-track"], 2),
    (["experiment", "run", "{in}/bad.toml", "--no-track"], 2),
    (["predict", "--model", "{in}/missing_model", "--queries", "{in}/queries.csv", "--output", "{in}/out.csv"], 2),
    (["predict", "--model", "{in}/empty_dir", "--queries", "{in}/queries.csv", "--output", "{in}/out.csv"], 2),
    (["predict", "--model", "{in}/garbage.bin", "--queries", "{in}/queries.csv", "--output", "{in}/out.csv"], 2),
    (["predict", "--model", "{in}/empty_dir", "--queries", "{in}/garbage.bin", "--output", "{in}/out.csv"], 2),
    (["predict", "--model", "{in}/empty_dir", "--queries", "{in}/a_dir", "--output", "{in}/out.csv"], 2),
    (["sweep", "plan", "{in}/garbage.toml"], 2),
    (["sweep", "plan", "{in}/a_dir"], None),  # a directory of specs: here, none
    (["tune", "--storage", "sqlite:///{in}/no/such/dir/optuna.db", "--n-trials", "1", "--no-mlflow",
      "--data-home", "/nonexistent/dir"], 2),
    (["report"], None),
    (["report", "--experiment", "nope", "--json"], None),
    (["train", "--out", "{in}/model", "--wave-scaling", "maybe"], 2),
    # a board no training row is of: refused (a typo would exclude nothing), before any training
    (["train", "--out", "{in}/model", "--source", "BSPGPU", "--exclude-board", "GTX-6800"], 2),
    (["train", "--out", "{in}/model", "--source", "BSPGPU", "--corpus", "described", "--exclude-board", "GT-630",
      "--exclude-board", "GTX-295", "--exclude-board", "GTX-680", "--exclude-board", "GTX-Titan",
      "--exclude-board", "Tesla-K20"], 2),
]

DATA_CASES = [
    # a data home whose runtime table is cut mid-stream, garbage, plain text or empty
    (["fit-lambda", "--data-home", "{in}/truncated_home", "--board", "GTX-680"], 2),
    (["fit-lambda", "--data-home", "{in}/garbage_home"], 2),
    (["fit-lambda", "--data-home", "{in}/plain_text_home"], 2),
    (["fit-lambda", "--data-home", "{in}/empty_home"], 2),
    (["evaluate", "--model", "roofline", "--data-home", "{in}/truncated_home"], 2),
    (["predict-lambda", "--board", "GTX-680", "--data-home", "{in}/truncated_home"], 2),
    (["train", "--out", "{in}/model", "--data-home", "{in}/truncated_home"], 2),
    (["tune", "--data-home", "{in}/truncated_home", "--n-trials", "1", "--no-mlflow",
      "--storage", "sqlite:///{in}/optuna.db"], 2),
    (["tune", "--source", "BSPGPU", "--learner", "svr", "--target", "log", "--n-trials", "1", "--no-mlflow",
      "--storage", "sqlite:///{in}/no/such/dir/optuna.db"], 2),
    (["tune", "--source", "BSPGPU", "--learner", "svr", "--target", "log", "--n-trials", "1", "--no-mlflow",
      "--storage", "nosuchdialect://x/y"], 2),
    (["tune", "--source", "BSPGPU", "--learner", "svr", "--board", "GTX-680", "--no-mlflow",
      "--storage", "sqlite:///{in}/optuna.db"], 2),
    (["predict-lambda", "--board", "GTX-680", "--size", "-5"], None),
    (["predict-lambda", "--board", "GTX-680", "--size", str(10**30)], None),
    (["fit-lambda", "--board", "GTX-680", "--app", "../../etc/passwd"], 2),
]


def _ids(cases) -> list[str]:
    return [" ".join(c.values[0] if hasattr(c, "values") else c[0]) for c in cases]


def _fill(argv: list[str], root: Path) -> list[str]:
    return [a.replace("{in}", str(root / "in")) for a in argv]


@pytest.mark.parametrize("argv, expected", CASES, ids=_ids(CASES))
def test_hostile_invocation(hostile, capsys, argv, expected):
    code, _ = _check(_fill(argv, hostile), hostile, capsys)
    if expected is not None:
        assert code == expected


# (argv with an empty value, what the one-line error must name)
EMPTY_VALUES = [
    (["sweep", "run", "--backend", "replay", "--replay", "{in}/a_dir", "--out", ""], "--out is empty"),
    (["sweep", "run", "--out="], "--out is empty"),
    (["predict", "--model", "", "--queries", "{in}/queries.csv", "--output", "p.csv"], "--model is empty"),
    (["train", "--out", ""], "--out is empty"),
    (["characterize", "--reference", "GTX-980", "--out", ""], "--out is empty"),
    (["fit-lambda", "--data-home", ""], "--data-home is empty"),
    (["--boards", "", "boards", "list"], "--boards is empty: give it a value, or leave the option out (see `perfml --help`)"),
    (["sweep", "run", "", "--backend", "replay"], "an argument of `perfml sweep run` is empty"),
    (["experiment", "run", "", "--no-track"], "an argument of `perfml experiment run` is empty"),
    # a required option or argument cannot be left out: the fix says so (it said "leave the option out")
    (["boards", "from-properties", "{in}/queries.csv", "--name", "", "--out", "b.toml"],
     "--name is empty: give it a value, it is required (see `perfml boards from-properties --help`)"),
    (["boards", "show", ""], "an argument of `perfml boards show` is empty: give it a value, it is required"),
    (["sweep", "run", "", "--backend", "replay"], "an argument of `perfml sweep run` is empty: give it a value, or leave it out"),
]


@pytest.mark.parametrize("argv, message", EMPTY_VALUES, ids=_ids(EMPTY_VALUES))
def test_an_empty_option_value_or_argument_is_refused_by_name(hostile, capsys, argv, message):
    """An empty path was the working directory (typer reads ``Path("")`` as ``.``): ``sweep run
    --out ""`` wrote its result set where the user stood, ``predict --model ""`` read that
    folder as a model and blamed --output. Every command refuses an empty value by name, and
    the working directory stays empty (``_check``)."""
    code, err = _check(_fill(argv, hostile), hostile, capsys)
    assert code == 2, err
    assert message in err, err


def test_a_flag_before_an_empty_argument_is_not_blamed(hostile, capsys):
    """``--json`` takes no value: the empty string after it is a positional argument."""
    code, err = _check(["boards", "show", "--json", ""], hostile, capsys)
    assert code == 2 and "an argument of `perfml boards show` is empty" in err, err


# (argv with an option given twice, what the one-line error must name); thirty-third session:
# click kept the last value, and `--calibration A --calibration B` read B alone without a word
REPEATED = [
    (["predict", "--model", "m1", "--model", "m2", "--queries", "{in}/queries.csv", "--output", "p.csv"],
     "--model is given twice; it takes one value, and only the last would be read: give it once "
     "(see `perfml predict --help`)"),
    (["predict", "--model", "m", "--queries", "q.csv", "--output", "a.csv", "--calibration", "c1.csv",
      "--calibration=c2.csv"], "--calibration is given twice"),
    (["sweep", "run", "--out", "a", "--backend", "replay", "--out", "b"], "--out is given twice"),
    (["characterize", "--from-runtimes", "a.csv", "--board", "GTX-980", "--board", "Tesla-K40"], "--board is given twice"),
]


@pytest.mark.parametrize("argv, message", REPEATED, ids=_ids(REPEATED))
def test_an_option_of_one_value_given_twice_is_refused_by_name(hostile, capsys, argv, message):
    code, err = _check(_fill(argv, hostile), hostile, capsys)
    assert code == 2 and message in err, err


def test_an_option_declared_repeatable_may_repeat_and_a_value_is_not_read_as_an_option(hostile, capsys):
    """``train --source`` and ``kernels check --family`` take several values; the value of an
    option that reads like an option (``--out --out``) is its value."""
    import typer

    from perfml.cli import _repeated_option, app

    command = typer.main.get_command(app)
    assert _repeated_option(command, ["train", "--source", "a", "--source", "b", "--out", "m"]) is None
    assert _repeated_option(command, ["kernels", "check", "--family", "ilp", "--family", "dram"]) is None
    assert _repeated_option(command, ["sweep", "run", "--out", "--out"]) is None
    assert _repeated_option(command, ["sweep", "run", "--", "--out", "a", "--out", "b"]) is None


@needs_data
@pytest.mark.parametrize("argv, expected", DATA_CASES, ids=_ids(DATA_CASES))
def test_hostile_data_home(hostile, capsys, argv, expected):
    code, err = _check(_fill(argv, hostile), hostile, capsys)
    if expected is not None:
        assert code == expected
    if "truncated_home" in " ".join(argv):
        assert "runtimes.csv.gz" in err, err  # the message names the broken file


@needs_data
def test_truncated_gzip_is_not_just_aborted(hostile, capsys):
    """click treats EOFError as Ctrl-D and printed only "Aborted."; now it is typed."""
    assert main(["fit-lambda", "--data-home", str(hostile / "in" / "truncated_home")]) == 2
    err = capsys.readouterr().err
    assert "Aborted" not in err and "runtimes.csv.gz" in err and "truncated" in err


# --- hypothesis: arbitrary values and arbitrary bytes in the files commands read ---

_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30)
_number = st.one_of(st.integers(min_value=-(10**40), max_value=10**40).map(str),
                    st.sampled_from(["nan", "inf", "-inf", "1e308", "-0", "0x10", "1.5"]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    template=st.sampled_from([
        ["boards", "show", "{v}"],
        ["boards", "show", "{v}", "--json"],
        ["cumapz", "seed004_fetch0_rowwise", "--set", "MAX={v}", "--json"],
        ["cumapz", "seed004_fetch0_rowwise", "--param", "{v}", "--json"],
        ["cumapz", "{v}"],
        ["characterize", "--reference", "{v}", "--json"],
        ["evaluate", "--model", "{v}"],
        ["tune", "--learner", "{v}", "--n-trials", "{v}", "--no-mlflow", "--data-home", "/nonexistent"],
    ]),
    value=st.one_of(_text, _number),
)
def test_arbitrary_values(hostile, capsys, template, value):
    if value.startswith("-"):
        value = " " + value  # would be read as an option; the option case is covered above
    if "MAX={v}" in template and value.strip().lstrip("-").isdigit() and 4096 < abs(int(value)) < 2**63:
        value = "4096"  # a mid-size MAX is real (slow) work, bounded by the expression limits, not an error
    _check([a.replace("{v}", value) for a in template], hostile, capsys)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    content=st.one_of(st.binary(max_size=400), _text.map(str.encode)),
    template=st.sampled_from([
        ["cumapz", "{f}.toml", "--json"],
        ["experiment", "run", "{f}.toml", "--no-track", "--json"],
        ["sweep", "plan", "{f}.toml", "--json"],
        ["characterize", "{f}"],
        ["diagnose", "--board", "GTX-680", "--app", "matMul_gpu", "--characterization", "{f}.json"],
    ]),
)
def test_arbitrary_file_content(hostile, capsys, content, template):
    stem = hostile / "in" / "arbitrary"
    for suffix in ("", ".toml", ".json"):
        Path(f"{stem}{suffix}").write_bytes(content)
    try:
        _check([a.replace("{f}", str(stem)) for a in template], hostile, capsys)
    finally:
        for suffix in ("", ".toml", ".json"):
            Path(f"{stem}{suffix}").unlink(missing_ok=True)


# --- foreign exceptions injected into a command -------------------------------------------


def _is_json_non_object(content: bytes) -> bool:
    import json

    try:
        return not isinstance(json.loads(content), dict)
    except ValueError:
        return False


def _raiser(exc: BaseException):
    def boom(*args, **kwargs):
        raise exc

    return boom


def _foreign_exceptions():
    import pyarrow
    import xgboost.core
    import optuna.exceptions
    import mlflow.exceptions
    import sqlalchemy.exc

    return [
        ("enospc", OSError(errno.ENOSPC, "No space left on device", "/data/out.json"), ["/data/out.json", "space"]),
        ("erofs", OSError(errno.EROFS, "Read-only file system", "/ro/out.json"), ["/ro/out.json", "read-only"]),
        ("eisdir", IsADirectoryError(errno.EISDIR, "Is a directory", "/tmp/somedir"), ["/tmp/somedir", "directory"]),
        ("enotdir", NotADirectoryError(errno.ENOTDIR, "Not a directory", "/a/file/x"), ["/a/file/x", "not a directory"]),
        ("eacces", PermissionError(errno.EACCES, "Permission denied", "/root/x"), ["/root/x", "permission"]),
        ("enoent", FileNotFoundError(errno.ENOENT, "No such file or directory", "/no/x.csv"), ["/no/x.csv", "check the path"]),
        ("edquot", OSError(errno.EDQUOT, "Disk quota exceeded", "/q/x"), ["/q/x", "quota"]),
        ("eof", EOFError("Compressed file ended before the end-of-stream marker was reached"), ["truncated"]),
        ("zlib", zlib.error("Error -3 while decompressing data: invalid stored block lengths"), ["corrupt"]),
        ("badgzip", gzip.BadGzipFile("Not a gzipped file (b'ab')"), ["corrupt"]),
        ("unicode", UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), ["UTF-8"]),
        ("arrow_invalid", pyarrow.lib.ArrowInvalid("CSV parse error: Expected 5 columns, got 3"), ["Arrow", "Expected 5 columns"]),
        ("arrow_io", pyarrow.lib.ArrowIOError("Unexpected end of stream"), ["Unexpected end of stream"]),
        ("xgboost", xgboost.core.XGBoostError("value 0 for Parameter max_depth should be greater"), ["xgboost", "max_depth"]),
        ("optuna_dup", optuna.exceptions.DuplicatedStudyError("Another study with name 'x' already exists."), ["Optuna", "already exists"]),
        ("optuna_storage", optuna.exceptions.StorageInternalError("An exception is raised during the commit."), ["Optuna", "--storage"]),
        ("mlflow", mlflow.exceptions.MlflowException("API request to http://127.0.0.1:1 failed"), ["MLflow", "MLFLOW_TRACKING_URI"]),
        ("sqlalchemy", sqlalchemy.exc.OperationalError("INSERT", {}, Exception("database is locked")), ["database is locked"]),
        # two commands creating one new SQLite MLflow store at once: alembic's migration lost the race
        ("alembic", __import__("alembic.util.exc", fromlist=["CommandError"]).CommandError(
            "Online migration expected to match one row when updating"), ["MLflow store", "run the command again"]),
        ("memory", MemoryError(), ["out of memory"]),
        ("overflow", OverflowError("Python int too large to convert to C long"), ["too large"]),
    ]


#: the cases of _foreign_exceptions, named without importing xgboost, Optuna or MLflow: collection
#: must not need them (`pytest -m gpu` runs on GPU machines that have none of them)
FOREIGN_EXCEPTIONS = ("enospc", "erofs", "eisdir", "enotdir", "eacces", "enoent", "edquot", "eof", "zlib", "badgzip",
                      "unicode", "arrow_invalid", "arrow_io", "xgboost", "optuna_dup", "optuna_storage", "mlflow",
                      "sqlalchemy", "alembic", "memory", "overflow")


def test_the_named_foreign_exceptions_are_the_built_ones():
    assert FOREIGN_EXCEPTIONS == tuple(n for n, _, _ in _foreign_exceptions())


@pytest.mark.parametrize("name", FOREIGN_EXCEPTIONS)
def test_foreign_exception_is_typed_one_line(monkeypatch, capsys, name):
    exc, needles = next((e, nd) for n, e, nd in _foreign_exceptions() if n == name)
    import perfml.boards

    monkeypatch.setattr(perfml.boards, "get_board", _raiser(exc))
    assert main(["boards", "show", "GTX-680"]) == 2
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    for needle in needles:
        assert needle.lower() in err.lower(), (needle, err)


def test_ctrl_c_prints_interrupted_and_exits_130(monkeypatch, capsys):
    import perfml.boards

    monkeypatch.setattr(perfml.boards, "get_board", _raiser(KeyboardInterrupt()))
    assert main(["boards", "show", "GTX-680"]) == 130
    err = capsys.readouterr().err
    assert err.strip() == "interrupted"


def test_sigterm_prints_terminated_and_exits_143_and_the_handler_is_restored(monkeypatch, capsys):
    # kill/timeout/Slurm send SIGTERM: it ended the process at once (an MLflow run left RUNNING,
    # a sweep's last points lost); during a command it now stops it as Ctrl-C does, and exits
    # 128 + 15 as a shell reports it (it exited 130, Ctrl-C's status: a log could not tell them apart)
    import os
    import signal

    import perfml.boards

    def terminated(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM did not stop the command")

    before = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(perfml.boards, "get_board", terminated)
    assert main(["boards", "show", "GTX-680"]) == 143
    assert capsys.readouterr().err.strip() == "terminated"
    assert signal.getsignal(signal.SIGTERM) == before


def test_a_sigterm_a_finalizer_swallowed_comes_again_as_sigterm(monkeypatch, capsys):
    """The interrupt delivered again after a finalizer swallowed it keeps its kind: 143, not 130."""
    import gc
    import os
    import signal
    import time

    import perfml.boards

    class Finalized:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGTERM)  # lands here, in a finalizer: Python swallows it

    def swallowed(*args, **kwargs):
        Finalized()
        gc.collect()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # the interrupt delivered again must end this loop
            time.sleep(0.001)
        raise AssertionError("the swallowed SIGTERM did not come again")

    monkeypatch.setattr(perfml.boards, "get_board", swallowed)
    assert main(["boards", "show", "GTX-680"]) == 143
    assert capsys.readouterr().err.strip() == "terminated"


@pytest.mark.parametrize("exc", [AssertionError("invariant broken"), TypeError("unsupported operand"), KeyError("lambda")])
def test_programming_error_is_one_internal_line_and_traceback_only_with_debug(monkeypatch, capsys, exc):
    import perfml.boards

    monkeypatch.setattr(perfml.boards, "get_board", _raiser(exc))
    monkeypatch.delenv("PERFML_DEBUG", raising=False)
    assert main(["boards", "show", "GTX-680"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("internal error: ") and type(exc).__name__ in err
    assert "Traceback" not in err and "please report" in err

    assert main(["--debug", "boards", "show", "GTX-680"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and err.splitlines()[-1].startswith("internal error: ")

    monkeypatch.setenv("PERFML_DEBUG", "1")
    assert main(["boards", "show", "GTX-680"]) == 1
    assert "Traceback" in capsys.readouterr().err


def test_disk_full_while_writing_an_output(hostile, capsys):
    """A real ENOSPC from the kernel: /dev/full refuses every write."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    code, err = _check(["characterize", "--reference", "GTX-980", "--out", "/dev/full", "--force"], hostile, capsys)
    assert code == 2 and "/dev/full" in err


def test_debug_env_is_not_needed_for_help_speed():
    """The handler imports no third-party library: translating must not pull them in."""
    import subprocess
    import sys

    code = ("import sys; from perfml.cli._errors import translate; translate(OSError(28, 'x')); "
            "translate(EOFError()); translate(ValueError()); "
            "print(sorted(m for m in ('xgboost', 'mlflow', 'optuna', 'pyarrow', 'sqlalchemy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


@needs_data
@pytest.mark.parametrize("which", ["queries", "reference", "calibration", "from-runtimes"])
def test_a_csv_that_is_not_utf8_is_named_with_the_encoding_to_save_it_in(hostile, capsys, which):
    """A spreadsheet's UTF-16 "Unicode text" export: one line saying it is not UTF-8 and how to save it."""
    model = Path(__file__).resolve().parents[1] / "models" / "default"
    files = hostile / "in"
    good_query = files / "op_queries.csv"
    good_query.write_text("board,op,B,M,N,K\nA100-PCIe-40GB,bmm,8,512,64,512\n")
    utf16 = files / "utf16.csv"
    utf16.write_bytes("board,op,B,H,time_ms\nA100-PCIe-40GB,add,1,1024,0.01\n".encode("utf-16"))
    out = ["--output", str(files / "out.csv"), "--data-home", str(SHARED)]
    argv = {
        "queries": ["predict", "--model", str(model), "--queries", str(utf16), *out],
        "reference": ["predict", "--model", str(model), "--queries", str(good_query), "--reference", str(utf16), *out],
        "calibration": ["predict", "--model", str(model), "--queries", str(good_query), "--calibration", str(utf16), *out],
        "from-runtimes": ["characterize", "--from-runtimes", str(utf16), "--board", "A100-PCIe-40GB",
                          "--out", str(files / "c.json")],
    }[which]
    code, err = _check(argv, hostile, capsys)
    assert code == 2 and "is not UTF-8 text" in err and "save it as a UTF-8 CSV" in err, err


@needs_data
@pytest.mark.parametrize("which, row", [
    ("queries", "Tesla-T4,add,1000000,1000000,,,"),
    ("queries", "A100-PCIe-40GB,bmm,1,,100000,100000,100000"),
    ("reference", "Tesla-T4,add,1000000,1000000,,,"),
])
def test_an_operator_call_whose_tensors_exceed_the_boards_memory_is_refused(hostile, capsys, which, row):
    """A T4 holds 16 GB: an add of 10^12 floats (11,176 GiB of tensors) cannot run there, so no
    time is predicted for it, nor taken as a reference (the largest measured call of the data
    home holds 0.96 of its board's memory)."""
    model = Path(__file__).resolve().parents[1] / "models" / "default"
    files = hostile / "in"
    header = "board,op,B,H,M,N,K"
    huge = files / "huge.csv"
    good = files / "good.csv"
    good.write_text(f"{header}\nA100-PCIe-40GB,bmm,8,,512,64,512\n")
    out = ["--output", str(files / "out.csv"), "--data-home", str(SHARED)]
    if which == "queries":
        huge.write_text(f"{header}\n{row}\n")
        argv = ["predict", "--model", str(model), "--queries", str(huge), *out]
    else:
        huge.write_text(f"{header},time_ms\n{row},1000.0\n")
        argv = ["predict", "--model", str(model), "--queries", str(good), "--reference", str(huge), *out]
    code, err = _check(argv, hostile, capsys)
    assert code == 2 and "it cannot run there" in err and "GiB of board" in err, err
    assert not (files / "out.csv").exists()


@needs_data
@pytest.mark.parametrize("row", ["GTX-980,vectorAdd,500000000000", "GTX-980,matMul_gpu,1000000"])
def test_a_described_kernel_whose_buffers_exceed_the_boards_memory_is_refused(hostile, capsys, row):
    """A GTX-980 holds 4 GB: vectorAdd of 5 x 10^11 floats or a matMul of 10^6 x 10^6 cannot run
    there (the buffers of their sidecars' [[args]]), so no time is predicted for them."""
    model = Path(__file__).resolve().parents[1] / "models" / "default"
    files = hostile / "in"
    queries = files / "apps.csv"
    queries.write_text(f"board,app_id,input_size\nGTX-980,vectorAdd,1048576\n{row}\n")
    argv = ["predict", "--model", str(model), "--queries", str(queries), "--output", str(files / "out.csv"),
            "--data-home", str(SHARED)]
    code, err = _check(argv, hostile, capsys)
    assert code == 2 and "row 2 (line 3), column input_size" in err and "it cannot run there" in err, err
    assert not (files / "out.csv").exists()


@needs_data
@pytest.mark.parametrize("which, header, row, query", [
    # an add of 4096 x 65536 floats moves 3.2 GB: at least 10 ms at the T4's 320 GB/s (a time
    # under 0.5 us is refused before this check: MIN_MEASURED_MS)
    ("reference", "board,op,B,H", "Tesla-T4,add,4096,65536,0.5", "A100-PCIe-40GB,add,4096,65536"),
    # vectorAdd of 2^26 floats (768 MiB) takes at least 3.6 ms at the GTX-980's 224 GB/s: 0.05 ms is a unit slip
    ("reference", "board,app_id,input_size", "GTX-980,vectorAdd,67108864,0.05", "GTX-970,vectorAdd,67108864"),
    ("calibration", "board,op,B,H", "Tesla-T4,add,4096,65536,0.5", "Tesla-T4,relu,4096,65536"),
])
def test_a_measured_time_faster_than_the_board_can_run_the_work_is_refused(hostile, capsys, which, header, row, query):
    """Issue 11 §5: a --reference or --calibration row measured faster than its work's roofline on
    its own board (peak FP32 and DRAM bandwidth, the L2's bytes from cache) by more than 1.5x
    is not physical; before, the reference was carried to the query board (clamped there to
    its bound, flagged as a reference) and the calibration row dropped silently into a median."""
    model = Path(__file__).resolve().parents[1] / "models" / "default"
    files = hostile / "in"
    measured = files / "measured.csv"
    queries = files / "q.csv"
    queries.write_text(f"{header}\n{query}\n")
    rows = [row]
    if which == "calibration":  # a usable sweep of the T4's add calls around the bad row
        from perfml.datasets import load_dlops_runtimes

        adds = load_dlops_runtimes(SHARED, boards="Tesla-T4", ops="add").head(40)
        rows += [f"Tesla-T4,add,{b},{h},{t}" for b, h, t in zip(adds["B"], adds["H"], adds["time_ms"])]
    measured.write_text(f"{header},time_ms\n" + "\n".join(rows) + "\n")
    argv = ["predict", "--model", str(model), "--queries", str(queries), f"--{which}", str(measured),
            "--output", str(files / "out.csv"), "--data-home", str(SHARED)]
    code, err = _check(argv, hostile, capsys)
    assert code == 2, err
    assert "row 1 (line 2), column time_ms" in err and "faster than board" in err and "time unit" in err, err
    assert not (files / "out.csv").exists()
    # the same file with a physical time is taken (slower than every bound above)
    measured.write_text(f"{header},time_ms\n" + "\n".join([row.rsplit(',', 1)[0] + ",50.0"] + rows[1:]) + "\n")
    code, err = _check(argv, hostile, capsys)
    assert code == 0 and (files / "out.csv").is_file(), err


# -- named pipes: opening one for reading blocks until something writes to it, so a FIFO named
# by mistake must be refused before it is opened, not hang the command -----------------------
def _fifo_cases(tmp_path: Path) -> list[tuple[list[str], str]]:
    """(arguments, the file the error must name) for every file a command reads by name."""
    root = Path(__file__).resolve().parents[1]
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    queries = tmp_path / "q.csv"
    queries.write_text("board,op,B,H\nTesla-T4,mul,64,64\n", encoding="utf-8")
    sweep = tmp_path / "set"
    import shutil

    shutil.copytree(root / "sweeps" / "results" / "H100-SXM", sweep,
                    ignore=shutil.ignore_patterns("logs", "README.md", "dlops_torch.csv"))
    part = sorted(sweep.glob("part-*.parquet"))[0]
    part.unlink()
    os.mkfifo(part)
    plans_set = tmp_path / "set2"
    shutil.copytree(root / "sweeps" / "results" / "H100-SXM", plans_set,
                    ignore=shutil.ignore_patterns("logs", "README.md", "dlops_torch.csv"))
    os.mkfifo(plans_set / "plans.json")
    model = str(root / "models" / "default")
    out = str(tmp_path / "out.csv")
    predict = ["predict", "--model", model, "--queries", str(queries), "--output", out]
    return [
        (["predict", "--model", model, "--queries", str(fifo), "--output", out], str(fifo)),
        ([*predict, "--reference", str(fifo)], str(fifo)),
        ([*predict, "--characterization", str(fifo)], str(fifo)),
        ([*predict, "--calibration", str(fifo)], str(fifo)),
        ([*predict, "--calibration", str(sweep)], str(part)),
        (["characterize", str(sweep), "--out", str(tmp_path / "c.json")], str(part)),
        (["characterize", str(plans_set), "--out", str(tmp_path / "c.json")], str(plans_set / "plans.json")),
        (["characterize", "--from-runtimes", str(fifo), "--board", "Tesla-T4"], str(fifo)),
        (["experiment", "run", str(fifo)], str(fifo)),
        (["cumapz", str(fifo)], str(fifo)),
        (["sweep", "run", str(fifo), "--out", str(tmp_path / "sw")], str(fifo)),
        (["boards", "from-properties", str(fifo), "--name", "X", "--out", str(tmp_path / "b.toml")], str(fifo)),
    ]


def test_a_named_pipe_given_as_a_file_is_refused_not_waited_on(tmp_path):
    import subprocess
    import sys

    for args, named in _fifo_cases(tmp_path):
        if args[0] in ("predict", "experiment") and data_home_path() is None:
            continue  # they resolve the data home first
        try:  # a subprocess: a command that opened the pipe would block forever in-process
            done = subprocess.run([sys.executable, "-m", "perfml", *args, *(["--data-home", str(SHARED)]
                                   if args[0] in ("predict", "experiment") else [])],
                                  capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            pytest.fail(f"perfml {' '.join(args)} waited on a named pipe")
        assert done.returncode == 2, (args, done.stderr)
        assert "Traceback" not in done.stderr
        assert named in done.stderr and "FIFO, not a regular file" in done.stderr, (args, done.stderr)
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "c.json").exists()


@needs_data
@pytest.mark.parametrize("which, text, line", [
    # blank lines (pandas skips them) and a quoted cell over three lines: "row 2 (line 3)" pointed
    # at a blank line or inside the note, not at the bad row
    ("queries", "board,app_id,input_size\nGTX-980,vectorAdd,1048576\n\n\nGTX-980,vectorAdd,-5\n", 5),
    ("queries", 'board,app_id,input_size,note\nGTX-980,vectorAdd,1048576,"a\nb\nc"\nGTX-980,vectorAdd,-5,x\n', 5),
    ("queries", "board,op,B,H,app_id,input_size\nTesla-T4,add,8,64,,\n\n  \nTesla-T4,,,,vectorAdd,-3\n", 5),
    ("reference", "board,app_id,input_size,time_ms\n\nGTX-680,my_k,1024,0.1\n\nGTX-680,my_k,1024,-1\n", 5),
    ("reference", "board,op,B,H,time_ms\nTesla-T4,add,8,64,0.01\n\n\n\nTesla-T4,add,8,128,-1\n", 6),
])
def test_a_bad_row_is_named_by_the_line_it_is_on(hostile, capsys, which, text, line):
    model = Path(__file__).resolve().parents[1] / "models" / "default"
    files = hostile / "in"
    bad = files / "bad.csv"
    bad.write_text(text)
    good = files / "good.csv"
    good.write_text("board,app_id,input_size\nGTX-980,my_k,1024\n" if "app_id" in text.splitlines()[0]
                    else "board,op,B,H\nTesla-T4,add,8,128\n")
    out = ["--output", str(files / "out.csv"), "--data-home", str(SHARED)]
    argv = (["predict", "--model", str(model), "--queries", str(bad), *out] if which == "queries" else
            ["predict", "--model", str(model), "--queries", str(good), "--reference", str(bad), *out])
    code, err = _check(argv, hostile, capsys)
    assert code == 2 and f"row 2 (line {line})" in err, err


@needs_data
@pytest.mark.parametrize("which", ["queries", "reference", "calibration", "from-runtimes", "properties"])
def test_an_output_that_is_an_input_file_is_refused_even_with_overwrite(hostile, capsys, which):
    """--overwrite replaces an earlier result, never the file the command reads: --output q.csv
    --queries q.csv replaced the user's queries with the predictions."""
    model = Path(__file__).resolve().parents[1] / "models" / "default"
    files = hostile / "in"
    queries = files / "q.csv"
    queries.write_text("board,op,B,H\nTesla-T4,relu,8,4096\n")
    adds = files / "adds.csv"
    adds.write_text("board,op,B,H,time_ms\n" + "".join(f"Tesla-T4,add,{b},4096,{0.01 * b:.4f}\n" for b in range(1, 31)))
    properties = files / "props.json"
    properties.write_text((Path(__file__).resolve().parents[1] / "sweeps" / "results" / "H200" /
                           "device_properties.json").read_text())
    predict = ["predict", "--model", str(model), "--queries", str(queries), "--data-home", str(SHARED), "--overwrite"]
    argv, target, option = {
        "queries": ([*predict, "--output", str(queries)], queries, "--queries"),
        "reference": ([*predict, "--reference", str(adds), "--output", str(adds)], adds, "--reference"),
        "calibration": ([*predict, "--calibration", str(adds), "--output", str(adds)], adds, "--calibration"),
        "from-runtimes": (["characterize", "--from-runtimes", str(adds), "--board", "Tesla-T4", "--out", str(adds),
                           "--overwrite"], adds, "--from-runtimes"),
        "properties": (["boards", "from-properties", str(properties), "--name", "My-GPU", "--out", str(properties),
                        "--overwrite"], properties, "PROPERTIES"),
    }[which]
    before = target.read_bytes()
    code, err = _check(argv, hostile, capsys)
    assert code == 2 and f"is the file given as {option}" in err, err
    assert target.read_bytes() == before


def _predict_queries_argv(files: Path, queries_text: str, *extra: str) -> list[str]:
    """``perfml predict`` of models/default on ``queries_text`` (written to files/q.csv), output files/o.csv."""
    queries = files / "q.csv"
    queries.write_text(queries_text)
    model = Path(__file__).resolve().parents[1] / "models" / "default"
    return ["predict", "--model", str(model), "--queries", str(queries), "--output", str(files / "o.csv"),
            "--data-home", str(SHARED), *extra]


def _predict_argv(files: Path, *extra: str, model: Path | None = None) -> list[str]:
    queries = files / "q1.csv"
    queries.write_text("board,app_id,input_size\nGTX-980,vectorAdd,1048576\n")
    model = model or Path(__file__).resolve().parents[1] / "models" / "default"
    return ["predict", "--model", str(model), "--queries", str(queries), "--data-home", str(SHARED), *extra]


@needs_data
@pytest.mark.parametrize("name, overwrite", [("perfml-model.json", True), ("pred.csv", False), ("sub/pred.csv", False)])
def test_an_output_inside_the_model_directory_is_refused(hostile, capsys, name, overwrite):
    """--output MODEL/perfml-model.json --overwrite replaced the model's manifest, and a new file
    there made the directory no saved model any more (its manifest lists every file)."""
    import shutil

    model = hostile / "in" / "model"
    shutil.copytree(Path(__file__).resolve().parents[1] / "models" / "default", model)
    before = {p.relative_to(model): p.read_bytes() for p in model.rglob("*") if p.is_file()}
    argv = _predict_argv(hostile / "in", "--output", str(model / name), *(["--overwrite"] if overwrite else []), model=model)
    code, err = _check(argv, hostile, capsys)
    assert code == 2 and "lies in the directory given as --model" in err, err
    assert {p.relative_to(model): p.read_bytes() for p in model.rglob("*") if p.is_file()} == before


@needs_data
@pytest.mark.parametrize("which", ["predict", "characterize", "boards"])
def test_an_output_name_ending_with_a_slash_is_refused_not_written_as_a_file(hostile, capsys, which):
    """``Path("out/")`` is ``Path("out")``: a file named ``out`` was written where a folder was meant."""
    files = hostile / "in"
    target = str(files / "newdir") + "/"
    adds = files / "adds.csv"
    adds.write_text("board,op,B,H,time_ms\n" + "".join(f"Tesla-T4,add,{b},4096,{0.01 * b:.4f}\n" for b in range(1, 31)))
    properties = Path(__file__).resolve().parents[1] / "sweeps" / "results" / "H200" / "device_properties.json"
    argv = {
        "predict": _predict_argv(files, "--output", target),
        "characterize": ["characterize", "--from-runtimes", str(adds), "--board", "Tesla-T4", "--out", target],
        "boards": ["boards", "from-properties", str(properties), "--name", "My-GPU", "--out", target],
    }[which]
    code, err = _check(argv, hostile, capsys)
    assert code == 2 and "names a directory" in err, err
    assert not (files / "newdir").exists()


@needs_data
@pytest.mark.parametrize("name", ["p.xlsx", "p.tsv", "p.zip", "p.feather"])
def test_an_output_named_as_a_format_perfml_does_not_write_is_refused(hostile, capsys, name):
    """A CSV written under a spreadsheet's or another table format's name would be misread."""
    code, err = _check(_predict_argv(hostile / "in", "--output", str(hostile / "in" / name)), hostile, capsys)
    assert code == 2 and f"does not write {Path(name).suffix} files" in err, err


@needs_data
@pytest.mark.parametrize("name", ["p.csv.gz", "p.csv.bz2", "p.csv.xz"])
def test_a_compressed_output_is_compressed_as_its_name_says(hostile, capsys, name):
    """``--output p.csv.gz`` wrote plain text, which pandas (and perfml's own readers) then
    failed to decompress; a query file is read decompressed by the same names."""
    import pandas as pd

    from perfml._csv_header import COMPRESSIONS

    files = hostile / "in"
    out = files / name
    code, err = _check(_predict_argv(files, "--output", str(out)), hostile, capsys)
    assert code == 0, err
    assert out.read_bytes().startswith(COMPRESSIONS[out.suffix][1])
    written = pd.read_csv(out)  # pandas decompresses by the name
    assert list(written.columns[:3]) == ["board", "app_id", "input_size"] and written["predicted_ms"].iloc[0] > 0
    queries = files / ("q" + "".join(out.suffixes))
    written[["board", "app_id", "input_size"]].to_csv(queries, index=False)  # compressed as named
    again = ["predict", "--model", str(Path(__file__).resolve().parents[1] / "models" / "default"), "--queries",
             str(queries), "--data-home", str(SHARED), "--output", str(files / "again.csv")]
    code, err = _check(again, hostile, capsys)
    assert code == 0, err
    assert pd.read_csv(files / "again.csv")["predicted_ms"].iloc[0] == written["predicted_ms"].iloc[0]


def test_a_json_output_keeps_small_values():
    """pandas writes JSON with 10 decimals by default: 1.2e-11 read back as 0."""
    import json
    import tempfile

    import pandas as pd

    from perfml._safe_output import write_dataframe_atomic

    with tempfile.TemporaryDirectory() as tmp:
        path = write_dataframe_atomic(pd.DataFrame({"x": [1.2345678901234e-11, 0.07361380951999999]}), Path(tmp) / "p.json")
        values = [row["x"] for row in json.loads(path.read_text())]
    assert values[0] == pytest.approx(1.2345678901234e-11, rel=1e-12)
    assert values[1] == pytest.approx(0.07361380951999999, rel=1e-14)


@needs_data
@pytest.mark.parametrize("which", ["queries", "reference", "calibration", "from-runtimes"])
@pytest.mark.parametrize("mismatch", ["plain-named-gz", "gzip-named-csv"])
def test_a_file_whose_name_and_content_disagree_on_compression_says_so(hostile, capsys, which, mismatch):
    """A plain CSV named .csv.gz failed as "cannot be read (None)"; a gzip file named .csv as "not UTF-8 text"."""
    files = hostile / "in"
    text = "board,op,B,H,time_ms\n" + "".join(f"Tesla-T4,add,{b},4096,{0.01 * b:.4f}\n" for b in range(1, 31))
    bad = files / ("rows.csv.gz" if mismatch == "plain-named-gz" else "rows.csv")
    bad.write_bytes(text.encode() if mismatch == "plain-named-gz" else gzip.compress(text.encode()))
    good = files / "op_queries.csv"
    good.write_text("board,op,B,H\nTesla-T4,relu,8,4096\n")
    model = str(Path(__file__).resolve().parents[1] / "models" / "default")
    out = ["--output", str(files / "out.csv"), "--data-home", str(SHARED)]
    argv = {
        "queries": ["predict", "--model", model, "--queries", str(bad), *out],
        "reference": ["predict", "--model", model, "--queries", str(good), "--reference", str(bad), *out],
        "calibration": ["predict", "--model", model, "--queries", str(good), "--calibration", str(bad), *out],
        "from-runtimes": ["characterize", "--from-runtimes", str(bad), "--board", "Tesla-T4", "--out", str(files / "c.json")],
    }[which]
    code, err = _check(argv, hostile, capsys)
    expected = "is named .gz but is not gzip-compressed" if mismatch == "plain-named-gz" else \
        "is gzip-compressed but its name does not end with .gz"
    assert code == 2 and expected in err, err


@needs_data
def test_a_byte_that_is_not_utf8_is_named_by_its_line_in_the_file(hostile, capsys):
    """pandas decodes in chunks: its offset ("at byte 3") was within a chunk, not the file."""
    files = hostile / "in"
    bad = files / "bad.csv"
    bad.write_bytes(b"board,app_id,input_size,note\n" + b"GTX-980,vectorAdd,1048576,ok\n" * 50
                    + b"GTX-980,vectorAdd,1048576,caf\xe9\n")
    model = str(Path(__file__).resolve().parents[1] / "models" / "default")
    argv = ["predict", "--model", model, "--queries", str(bad), "--output", str(files / "o.csv"), "--data-home", str(SHARED)]
    code, err = _check(argv, hostile, capsys)
    offset = len(b"board,app_id,input_size,note\n" + b"GTX-980,vectorAdd,1048576,ok\n" * 50 + b"GTX-980,vectorAdd,1048576,caf")
    assert code == 2 and f"line 52, byte {offset}" in err, err


def test_a_cumapz_description_dividing_by_zero_is_refused(hostile, capsys):
    """The index ``row*MAX + col / 0`` was analyzed as ``row*MAX``: exit 0 and another MPE."""
    source = Path(__file__).resolve().parents[1] / "perfml" / "descriptions" / "cumapz" / "seed004_fetch0_colwise.toml"
    text = source.read_text()
    assert 'index = "row*MAX + col"' in text
    bad = hostile / "in" / "div0.toml"
    bad.write_text(text.replace('index = "row*MAX + col"', 'index = "row*MAX + col / 0"'))
    code, err = _check(["cumapz", "analyze", str(bad), "--json"], hostile, capsys)
    assert code == 2 and "divides by zero" in err, err


@needs_data
def test_a_characterization_whose_curve_is_100x_too_slow_is_warned_about_where_it_carries_predictions(hostile, capsys):
    """The curve carries the memory-bound calls it is used for (100x slower curve, 100x slower
    bmm), so the warning must reach the user: before, only a rate under 0.001x the
    specification was refused, and this file was used in silence."""
    import json

    import pandas as pd

    from perfml.characterize import board_characterization

    files = hostile / "in"
    good, slow = files / "t4.json", files / "t4_slow.json"
    doc = board_characterization("Tesla-T4").to_dict()
    good.write_text(json.dumps(doc))
    doc["stream_curve"]["seconds"] = [s * 100 for s in doc["stream_curve"]["seconds"]]
    slow.write_text(json.dumps(doc))
    queries = files / "qt4.csv"
    queries.write_text("board,op,B,M,N,K\nTesla-T4,bmm,24,2048,64,2048\n")
    model = str(Path(__file__).resolve().parents[1] / "models" / "default")
    times = {}
    for path in (good, slow):
        out = files / f"{path.stem}.out.csv"
        code = main(["predict", "--model", model, "--queries", str(queries), "--characterization", str(path),
                     "--output", str(out), "--data-home", str(SHARED)])
        err = capsys.readouterr().err
        assert code == 0, err
        assert ("streaming curve's DRAM-bound calls" in err) == (path == slow), err
        times[path] = float(pd.read_csv(out)["predicted_ms"].iloc[0])
    assert times[slow] / times[good] > 50


@needs_data
@pytest.mark.parametrize("row, refused", [
    ("GTX-980,vectorAdd,1048576,5", True),  # a described app, trained
    ("GTX-980,lud_diagonal,512,3", True),  # a Rodinia kernel whose runs have none
    ("GTX-980,vectorAdd,1048576,0", False),
    ("GTX-980,vectorAdd,1048576,", False),
    ("GTX-980,calculate_temp,512,256", False),  # hotspot's pyramid height: its runs have one
])
def test_a_second_size_for_a_kernel_that_takes_one_size_is_refused(hostile, capsys, row, refused):
    """vectorAdd of 1048576 on the GTX-980 with input_size_2 5 was answered (exit 0) from the
    other boards' transfer instead of its measured time: the value missed its runs."""
    argv = _predict_queries_argv(hostile / "in", f"board,app_id,input_size,input_size_2\n{row}\n")
    code, err = _check(argv, hostile, capsys)
    assert (code == 2 and "takes one size, input_size" in err and "column input_size_2" in err) if refused \
        else code == 0, err


@needs_data
@pytest.mark.parametrize("header, row", [
    ("board,app_id,input_size,input_size_2", "GTX-980,calculate_temp,1024,"),
    ("board,app_id,input_size,input_size_2", "GTX-980,calculate_temp,1024,0"),
    ("board,app_id,input_size,block_x,block_y,grid_x,grid_y", "GTX-980,calculate_temp,1024,16,16,86,86"),
])
def test_a_kernel_whose_runs_all_take_a_second_size_refuses_a_row_without_one(hostile, capsys, header, row):
    """calculate_temp of 1024 without its second size (hotspot's pyramid height) was answered at
    1.00 ms on the GTX-980 and 0.69 ms on the GTX-680, where every measured second size gives
    0.77-0.81 and 0.98-1.04 ms: no run the model knows, the boards' order reversed."""
    files = hostile / "in"
    code, err = _check(_predict_queries_argv(files, f"{header}\n{row}\n"), hostile, capsys)
    assert code == 2 and "row 1 (line 2), column input_size_2: kernel calculate_temp takes a second size" in err, err
    assert "add input_size_2 to the row" in err
    # a reference of the kernel measured without one answers it
    (files / "r.csv").write_text("board,app_id,input_size,block_x,block_y,grid_x,grid_y,time_ms\n"
                                 "GTX-680,calculate_temp,1024,16,16,86,86,1.0\n")
    argv = _predict_queries_argv(files, "board,app_id,input_size,block_x,block_y,grid_x,grid_y\n"
                                 "GTX-980,calculate_temp,1024,16,16,86,86\n", "--reference", str(files / "r.csv"),
                                 "--overwrite")
    code, err = _check(argv, hostile, capsys)
    assert code == 0, err


@needs_data
def test_a_second_size_is_taken_for_a_kernel_the_reference_measured_with_it(hostile, capsys):
    files = hostile / "in"
    (files / "r.csv").write_text("board,app_id,input_size,input_size_2,time_ms\nGTX-680,vectorAdd,1048576,5,0.2\n")
    argv = _predict_queries_argv(files, "board,app_id,input_size,input_size_2\nGTX-980,vectorAdd,1048576,5\n",
                                 "--reference", str(files / "r.csv"))
    code, err = _check(argv, hostile, capsys)
    assert code == 0, err


@needs_data
@pytest.mark.parametrize("command", ["characterize", "predict"])
@pytest.mark.parametrize("case", ["op-case", "app-case", "both"])
def test_a_calibration_row_whose_kernel_name_is_in_doubt_is_refused(hostile, capsys, command, case):
    """'ADD' was dropped as an operator of unknown work, silently; a row naming vectorAdd and add
    was taken as vectorAdd and refused for a time unit it did not have."""
    files = hostile / "in"
    rows = [f"Tesla-T4,,add,{b},4096,,{0.01 + 0.001 * b:.4f}" for b in range(1, 31)]
    if case == "op-case":
        rows[3] = rows[3].replace(",add,", ",ADD,")
    elif case == "app-case":
        rows.append("Tesla-T4,VectorAdd,,,,1048576,0.05")
    else:
        rows.append("Tesla-T4,vectorAdd,add,1,4096,1048576,0.05")
    calibration = files / "adds.csv"
    calibration.write_text("board,app_id,op,B,H,input_size,time_ms\n" + "\n".join(rows) + "\n")
    queries = files / "q.csv"
    queries.write_text("board,op,B,H\nTesla-T4,relu,8,4096\n")
    model = str(Path(__file__).resolve().parents[1] / "models" / "default")
    argv = (["characterize", "--from-runtimes", str(calibration), "--board", "Tesla-T4", "--out", str(files / "c.json")]
            if command == "characterize" else
            ["predict", "--model", model, "--queries", str(queries), "--calibration", str(calibration),
             "--output", str(files / "o.csv"), "--data-home", str(SHARED)])
    code, err = _check(argv, hostile, capsys)
    expected = {"op-case": "column op: 'ADD' is not an operator name; write 'add'",
                "app-case": "column app_id: 'VectorAdd' is not the name of a described kernel; write 'vectorAdd'",
                "both": "columns app_id and op: both name a kernel"}[case]
    assert code == 2 and expected in err, err


@needs_data
def test_a_model_directory_that_does_not_exist_is_named_so(hostile, capsys):
    files = hostile / "in"
    argv = _predict_argv(files, "--output", str(files / "o.csv"), model=files / "no-such-model")
    code, err = _check(argv, hostile, capsys)
    assert code == 2 and "no-such-model does not exist" in err, err


@needs_data
def test_a_calibration_of_another_board_names_the_file_and_a_fix_predict_has(hostile, capsys):
    """The message said "pass the board the rows were measured on": predict has no --board, and
    the file was named by its base name only."""
    files = hostile / "in"
    (files / "p4.csv").write_text("board,op,B,H,time_ms\n" + "".join(f"Tesla-P4,add,{b},4096,0.0{b + 10}\n"
                                                                      for b in range(1, 31)))
    (files / "q.csv").write_text("board,op,B,H\nTesla-T4,relu,8,4096\n")
    model = str(Path(__file__).resolve().parents[1] / "models" / "default")
    argv = ["predict", "--model", model, "--queries", str(files / "q.csv"), "--calibration", str(files / "p4.csv"),
            "--output", str(files / "o.csv"), "--data-home", str(SHARED)]
    code, err = _check(argv, hostile, capsys)
    assert code == 2 and f"no row of board 'Tesla-T4' in {files / 'p4.csv'}" in err and "give a file of its runs" in err, err


def _nvprof_export(flop: float, dram_read: float, dram_write: float, inst: float) -> str:
    lines = ["==4242== NVPROF is profiling process 4242, command: ./app", "==4242== Profiling result:",
             "==4242== Metric result:",
             '"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"']
    for metric, value in (("flop_count_sp", flop), ("dram_read_transactions", dram_read),
                          ("dram_write_transactions", dram_write), ("inst_executed", inst)):
        lines.append(f'"GeForce GTX 680 (0)","my_lud(float*, int)",3,"{metric}","d",{value:g},{value:g},{value:g}')
    return "\n".join(lines) + "\n"


@needs_data
@pytest.mark.parametrize("counters, expected", [
    ((1e6, 2e5, 1e5, 4e5), None),  # plausible: answered
    ((1e17, 2e5, 1e5, 4e5), "FP32 FLOPs (1e+17) take at least"),  # 1e8 x what a GTX-680 does in 0.11 ms
    ((1e6, 1e12, 1e12, 4e5), "DRAM bytes"),
    ((0, 0, 0, 0), "executed no instruction"),
])
def test_a_profile_counting_no_work_or_more_than_the_board_can_do_is_refused(hostile, capsys, counters, expected):
    """An export of all-zero counters, or flop_count_sp 1e17 for a 0.11 ms GTX-680 run, was taken
    as the kernel's work (exit 0)."""
    files = hostile / "in"
    (files / "prof.csv").write_text(_nvprof_export(*counters))
    (files / "ref.csv").write_text("board,app_id,input_size,block_x,block_y,grid_x,grid_y,time_ms\n"
                                   "GTX-680,my_lud,8192,32,1,256,1,0.110623\n")
    (files / "q.csv").write_text("board,app_id,input_size,block_x,block_y,grid_x,grid_y\n"
                                 "GTX-980,my_lud,8192,32,1,256,1\n")
    model = str(Path(__file__).resolve().parents[1] / "models" / "default")
    argv = ["predict", "--model", model, "--queries", str(files / "q.csv"), "--reference", str(files / "ref.csv"),
            "--profile", str(files / "prof.csv"), "--output", str(files / "o.csv"), "--data-home", str(SHARED)]
    code, err = _check(argv, hostile, capsys)
    if expected is None:
        assert code == 0, err
    else:
        assert code == 2 and expected in err and "--profile" in err, err


@needs_data
@pytest.mark.parametrize("row, query, warned", [
    ("GTX-680,vectorAdd,1048576,,,,,500", "GTX-980,vectorAdd,1048576,,,,", True),  # the data home: about 0.08 ms
    ("GTX-680,vectorAdd,1048576,,,,,0.08223", "GTX-980,vectorAdd,1048576,,,,", False),
    ("Tesla-T4,,,bmm,24,2048,64,2048,5000", "Tesla-V100-PCIe-32GB,,,bmm,24,2048,64,2048", True),  # measured 3.78 ms
    ("Tesla-T4,,,bmm,24,2048,64,2048,3.783307", "Tesla-V100-PCIe-32GB,,,bmm,24,2048,64,2048", False),
])
def test_a_reference_far_from_the_training_datas_measurement_of_the_same_run_is_warned_about(
        hostile, capsys, row, query, warned):
    """A reference of vectorAdd on the GTX-680 at 500 ms gave 380 ms on the GTX-980, silently: the
    user's time comes first, and must be told when it is thousands of times the data home's."""
    files = hostile / "in"
    app = "app_id" if "vectorAdd" in row else "op"
    if app == "app_id":
        (files / "r.csv").write_text("board,app_id,input_size,block_x,block_y,grid_x,grid_y,time_ms\n" + row + "\n")
        (files / "q.csv").write_text("board,app_id,input_size,block_x,block_y,grid_x,grid_y\n" + query + "\n")
    else:
        (files / "r.csv").write_text("board,app_id,input_size,op,B,M,N,K,time_ms\n" + row + "\n")
        (files / "q.csv").write_text("board,app_id,input_size,op,B,M,N,K\n" + query + "\n")
    model = str(Path(__file__).resolve().parents[1] / "models" / "default")
    argv = ["predict", "--model", model, "--queries", str(files / "q.csv"), "--reference", str(files / "r.csv"),
            "--output", str(files / "o.csv"), "--data-home", str(SHARED)]
    code, err = _check(argv, hostile, capsys)
    assert code == 0, err
    assert ("differ by more than 10x from the training data's measurement" in err) == warned, err


@needs_data
@pytest.mark.parametrize("row, query, warned", [
    # no training board ran these sizes: compared with the model's own prediction (thirty-third session)
    ("Tesla-T4,,,,,add,8,,,,4096,26.0", "A100-PCIe-40GB,,,,,add,8,,,,4096", True),  # 0.026 ms given in microseconds
    ("Tesla-T4,,,,,add,8,,,,4096,0.026", "A100-PCIe-40GB,,,,,add,8,,,,4096", False),
    ("GTX-680,vectorAdd,1000000,,,,,,,,,80", "GTX-980,vectorAdd,1000000,,,,,,,,", True),
    ("GTX-680,vectorAdd,1000000,,,,,,,,,0.08", "GTX-980,vectorAdd,1000000,,,,,,,,", False),
    ("GTX-680,my_kernel,1000000,256,3907,,,,,,,80", "GTX-980,my_kernel,1000000,256,3907,,,,,,", False),  # no work known
])
def test_a_reference_far_from_the_models_prediction_of_a_run_no_training_board_ran_is_warned_about(
        hostile, capsys, row, query, warned):
    """An add on the T4 given in microseconds (26 for 0.026 ms) carried the A100's prediction
    1000x, without a word: only runs the training data measured were compared."""
    files = hostile / "in"
    header = "board,app_id,input_size,block_x,grid_x,op,B,M,N,K,H"
    (files / "r.csv").write_text(f"{header},time_ms\n{row}\n")
    (files / "q.csv").write_text(f"{header}\n{query}\n")
    model = str(Path(__file__).resolve().parents[1] / "models" / "default")
    argv = ["predict", "--model", model, "--queries", str(files / "q.csv"), "--reference", str(files / "r.csv"),
            "--output", str(files / "o.csv"), "--data-home", str(SHARED)]
    code, err = _check(argv, hostile, capsys)
    assert code == 0, err
    assert ("differ by more than 30x from the model's prediction of the same run" in err) == warned, err
    assert "training data's measurement" not in err, err


@needs_data
def test_reference_kernels_no_query_names_are_told(hostile, capsys):
    """A reference kernel spelt otherwise than the query's (vectoradd / vectorAdd) was not used,
    and the query was answered from the training boards without a word (helper probe)."""
    files = hostile / "in"
    (files / "r.csv").write_text("board,app_id,input_size,block_x,grid_x,time_ms\n"
                                 "GTX-680,vectoradd,1048576,256,4096,0.08\nGTX-680,vectorAdd,2097152,256,8192,0.16\n")
    (files / "q.csv").write_text("board,app_id,input_size\nGTX-980,vectorAdd,1048576\n")
    model = str(Path(__file__).resolve().parents[1] / "models" / "default")
    argv = ["predict", "--model", model, "--queries", str(files / "q.csv"), "--reference", str(files / "r.csv"),
            "--output", str(files / "o.csv"), "--data-home", str(SHARED)]
    code, err = _check(argv, hostile, capsys)
    assert code == 0, err
    assert ("kernel(s) vectoradd (row 1; the queries name vectorAdd) are named by no query row and not used" in err
            and err.count("named by no query row") == 1), err


@needs_data
def test_a_reference_without_launch_columns_answers_a_query_that_gives_its_launch(hostile, capsys):
    """The reference's rows of its own kernel gave no launch, the query's did: the warning that
    compares references with the training data's measurements asked the model for the launch of
    the reference rows, and the command stopped with "its rows lack a launch configuration",
    though an empty launch constrains nothing (queries.launches_agree)."""
    files = hostile / "in"
    (files / "r.csv").write_text("board,app_id,input_size,time_ms\nGTX-680,my_k,1048576,0.1\n")
    (files / "q.csv").write_text("board,app_id,input_size,block_x,grid_x\nGTX-680,my_k,1048576,256,4096\n"
                                 "Tesla-K40,my_k,1048576,256,4096\n")
    model = str(Path(__file__).resolve().parents[1] / "models" / "default")
    argv = ["predict", "--model", model, "--queries", str(files / "q.csv"), "--reference", str(files / "r.csv"),
            "--output", str(files / "o.csv"), "--data-home", str(SHARED)]
    code, err = _check(argv, hostile, capsys)
    assert code == 0, err
    import pandas as pd

    out = pd.read_csv(files / "o.csv")
    assert out["basis"].tolist() == ["reference", "reference"]
    assert out["predicted_ms"].iloc[0] == pytest.approx(0.1)


@needs_data
def test_characterize_writes_its_warnings_to_stderr_as_every_command_does(hostile, capsys):
    files = hostile / "in"
    adds = files / "adds.csv"  # small calls only: the DRAM bandwidth is not calibrated, a warning
    adds.write_text("board,op,B,H,time_ms\n" + "".join(f"Tesla-T4,add,{b},4096,{0.01 + 0.001 * b:.4f}\n"
                                                         for b in range(1, 31)))
    assert main(["characterize", "--from-runtimes", str(adds), "--board", "Tesla-T4"]) == 0
    out, err = capsys.readouterr()
    assert "warning:" in err and "warning:" not in out, (out, err)


@needs_data
@pytest.mark.parametrize("value, expected", [("-1", "expected an integer in [0,"), ("2.5", "expected an integer")])
def test_a_second_size_that_is_no_whole_number_is_refused_as_such_first(hostile, capsys, value, expected):
    """The one-size check must not hide the plainer error: -1 is no size at all."""
    files = hostile / "in"
    (files / "q.csv").write_text(f"board,app_id,input_size,input_size_2\nGTX-980,vectorAdd,1048576,{value}\n")
    model = str(Path(__file__).resolve().parents[1] / "models" / "default")
    argv = ["predict", "--model", model, "--queries", str(files / "q.csv"), "--output", str(files / "o.csv"),
            "--data-home", str(SHARED)]
    code, err = _check(argv, hostile, capsys)
    assert code == 2 and expected in err and "takes one size" not in err, err


@needs_data
@pytest.mark.parametrize("column", ["input_size", "input_size_2"])
def test_a_size_one_above_2_to_the_53_is_refused_not_read_as_2_to_the_53(hostile, capsys, column):
    """Read as a float, 9007199254740993 was 2**53, passed the limit and was named as 9007199254740992."""
    files = hostile / "in"
    row = {"input_size": "1048576", "input_size_2": "0", column: "9007199254740993"}
    (files / "q.csv").write_text("board,app_id,input_size,input_size_2\n"
                                 f"GTX-980,vectorAdd,{row['input_size']},{row['input_size_2']}\n")
    model = str(Path(__file__).resolve().parents[1] / "models" / "default")
    argv = ["predict", "--model", model, "--queries", str(files / "q.csv"), "--output", str(files / "o.csv"),
            "--data-home", str(SHARED)]
    code, err = _check(argv, hostile, capsys)
    assert code == 2 and f"column {column}: expected an integer in [" in err and "found '9007199254740993'" in err, err


@pytest.mark.parametrize("protocol", ["grouped-kfold", "size-extrapolation", "leave-one-app-out", "size-cv",
                                      "reference-board"])
def test_a_dlops_experiment_under_a_protocol_of_runtime_rows_is_refused_by_its_file(hostile, capsys, protocol):
    """grouped-kfold and size-extrapolation were internal errors (KeyError 'app_id'); the others
    refused with a message about X, or an option experiment files do not have."""
    files = hostile / "in"
    spec = files / "dl.toml"
    spec.write_text(f'format = "perfml-experiment"\nversion = 1\nname = "dl"\ndescription = "d"\nprotocol = "{protocol}"\n'
                    '[data]\ncorpus = "dlops"\nops = ["add"]\n[[models]]\nname = "roofline"\nkind = "closed_form"\n'
                    'model = "roofline"\n')
    code, err = _check(["experiment", "run", str(spec), "--no-track"], hostile, capsys)
    assert code == 2 and f"{spec}: [top level] protocol '{protocol}'" in err and "leave-one-board-out" in err, err


def test_tuning_a_learner_without_a_search_space_is_refused_by_its_file(hostile, capsys):
    """learner = "linear" with a tune table was a KeyError once the run had started (a FAILED MLflow run left)."""
    spec = hostile / "in" / "tl.toml"
    spec.write_text('format = "perfml-experiment"\nversion = 1\nname = "tl"\ndescription = "d"\n'
                    'protocol = "leave-one-board-out"\n[[models]]\nname = "lin"\nkind = "learned"\nlearner = "linear"\n'
                    'target = "log"\ntune = { n_trials = 1, n_splits = 2 }\n')
    code, err = _check(["experiment", "run", str(spec), "--no-track"], hostile, capsys)
    assert code == 2 and "[models[0].tune] learner 'linear' has no search space" in err, err


@pytest.mark.parametrize("where", ["tracking", pytest.param("storage", marks=needs_data)])  # tune reads the rows first
def test_a_store_url_holding_a_nul_byte_is_refused(hostile, capsys, monkeypatch, where):
    """'embedded null byte' was an internal error of the database drivers; report printed the raw NUL."""
    if where == "tracking":
        monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{hostile / 'a%00.db'}")
        argv = ["report"]
    else:
        argv = ["tune", "--learner", "svr", "--app", "vectorAdd", "--n-trials", "1", "--no-mlflow",
                "--storage", f"sqlite:///{hostile / 'x%00.db'}"]
    code, err = _check(argv, hostile, capsys)
    assert code == 2 and "holds a NUL byte (%00)" in err and "\x00" not in err, err


def test_a_sweep_with_an_unusable_tracking_store_is_refused_before_it_measures(hostile, capsys):
    """The store was checked only after every point had been measured (hours on a GPU)."""
    root = Path(__file__).resolve().parents[1]
    out = hostile / "in" / "set"
    argv = ["sweep", "run", str(root / "perfml" / "data" / "sweeps" / "ilp.toml"), "--backend", "replay", "--replay",
            str(root / "sweeps" / "results" / "H100-SXM"), "--out", str(out), "--tracking-uri", "http://127.0.0.1:1"]
    code, err = _check(argv, hostile, capsys)
    assert code == 2 and "does not answer" in err and not out.exists(), err


@pytest.mark.parametrize("resume", [False, True])
def test_a_result_set_without_its_manifest_is_named_so_with_or_without_resume(hostile, capsys, resume):
    """With --resume the message said "already holds a result set; pass --resume"."""
    root = Path(__file__).resolve().parents[1]
    out = hostile / "in" / "set"
    argv = ["sweep", "run", str(root / "perfml" / "data" / "sweeps" / "ilp.toml"), "--backend", "replay", "--replay",
            str(root / "sweeps" / "results" / "H100-SXM"), "--out", str(out)]
    assert main(["-q", *argv]) == 0
    capsys.readouterr()
    (out / "manifest.json").unlink()
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    code, err = _check(["-q", *argv, *(["--resume"] if resume else [])], hostile, capsys)
    assert code == 2 and "holds measured parts but no manifest.json" in err and "pass --resume" not in err, err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


@needs_data
def test_evaluating_a_source_without_a_described_kernel_says_why(hostile, capsys):
    """It said "widen --source/--board/--app": evaluate has no --board or --app, and no filter gives
    Rodinia's kernels a description."""
    code, err = _check(["evaluate", "--model", "bsp", "--source", "gpuperfpredict-rodinia", "--data-home", str(SHARED)],
                       hostile, capsys)
    assert code == 2 and "in source 'gpuperfpredict-rodinia'" in err and "BSPGPU, gpuperfpredict-nca" in err, err
