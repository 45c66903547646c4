"""Turn the foreign exceptions that reach the command line into typed perfml errors.

perfml's own code raises :class:`~perfml.errors.PerfmlError` on bad input. Below it,
the operating system, gzip, pandas, pyarrow, xgboost, Optuna, MLflow and SQLAlchemy
raise their own exceptions: a full disk, a read-only file system, a directory given as
a file, a truncated ``.csv.gz``. :func:`translate` maps each of those families to a
one-line typed error that names the file (when it can be found) and the fix.

Everything else (``AssertionError``, ``TypeError``, ``KeyError``... raised by perfml's
own code) is a bug, not bad input: :func:`internal_error_line` reports it as
``internal error`` on one line, and the CLI prints the traceback only with
``--debug`` or ``PERFML_DEBUG=1``.

The libraries are looked up in :data:`sys.modules` only: an exception of a library
can only be raised once that library is imported, so translating never imports one
(``perfml --help`` stays fast).
"""

from __future__ import annotations

import errno
import os
import sys
from types import TracebackType

from perfml.errors import (
    CorruptFileError,
    ExternalLibraryError,
    FileAccessError,
    NumberRangeError,
    PerfmlError,
)

__all__ = ["translate", "internal_error_line", "failing_file"]

#: Local variable names that hold the file an operation was working on.
_PATH_NAMES = ("path", "filename", "filepath_or_buffer", "file", "fname", "source", "out", "output")

_OS_FIXES = {
    errno.ENOSPC: ("no space left on device", "free some space or write to another disk"),
    errno.EDQUOT: ("disk quota exceeded", "free some space or write to another disk"),
    errno.EROFS: ("read-only file system", "write to a writable directory (e.g. --out/--output under your home)"),
    errno.EISDIR: ("is a directory, expected a file", "pass the path of a file, not of a directory"),
    errno.ENOTDIR: ("a component of the path is not a directory", "check the path: a file stands where a directory is expected"),
    errno.EACCES: ("permission denied", "check the file's permissions or choose another path"),
    errno.EPERM: ("operation not permitted", "check the file's permissions or choose another path"),
    errno.ENOENT: ("no such file or directory", "check the path (and that its directory exists)"),
    errno.EEXIST: ("already exists", "choose a new path; perfml does not overwrite files silently"),
    errno.ENAMETOOLONG: ("file name too long", "choose a shorter path"),
    errno.ELOOP: ("too many levels of symbolic links", "check the symbolic links on the path"),
    errno.ENXIO: ("no such device or address", "use a regular file"),
}


def _frames(tb: TracebackType | None):
    """Frames of a traceback, innermost first."""
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    return reversed(frames)


def failing_file(exc: BaseException) -> str | None:
    """Best guess of the file ``exc`` was raised on, or None.

    ``OSError.filename`` when set; otherwise, walking the traceback from the innermost
    frame out, the ``name`` of an open file object (``self`` of a ``gzip.GzipFile``,
    say) or a local variable with a path-like name (``path``, ``filename``...) holding a
    ``str`` or :class:`os.PathLike`.
    """
    name = getattr(exc, "filename", None)
    if isinstance(name, (str, os.PathLike)):
        return os.fspath(name)
    for frame in _frames(exc.__traceback__):
        local = frame.f_locals
        owner = local.get("self")
        owner_name = getattr(owner, "name", None) if owner is not None and hasattr(owner, "read") else None
        if _is_path(owner_name):
            return os.fspath(owner_name)
        for key in _PATH_NAMES:
            if _is_path(local.get(key)):
                return os.fspath(local[key])
    return None


def _is_path(value) -> bool:
    """A str / PathLike naming something on disk (so that a ``source="BSPGPU"`` is not taken for a file)."""
    if not isinstance(value, (str, os.PathLike)):
        return False
    text = os.fspath(value)
    if not isinstance(text, str) or not text or len(text) > 4096 or "\n" in text:
        return False
    try:
        return os.path.lexists(text)
    except (OSError, ValueError):
        return False


def _one_line(text: object) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    line = lines[0] if lines else ""
    return line if len(line) <= 300 else line[:297] + "..."


def _where(exc: BaseException) -> str:
    name = failing_file(exc)
    return f"{name}: " if name else ""


def _module_class(module: str, *path: str):
    """A class of an already-imported module, or None (never imports)."""
    obj = sys.modules.get(module)
    for attr in path:
        obj = getattr(obj, attr, None)
    return obj if isinstance(obj, type) else None


def _os_error(exc: OSError) -> PerfmlError:
    where = _where(exc)
    if exc.errno in _OS_FIXES:
        what, fix = _OS_FIXES[exc.errno]
        return FileAccessError(f"{where}{what}; {fix}")
    reason = exc.strerror or _one_line(exc) or type(exc).__name__
    return FileAccessError(f"{where}{reason}; check the path and the file")


def _corrupt(exc: BaseException, what: str, fix: str) -> PerfmlError:
    detail = _one_line(exc)
    return CorruptFileError(f"{_where(exc)}{what}" + (f" ({detail})" if detail else "") + f"; {fix}")


_COMPRESSED_FIX = "the file is truncated or corrupt: restore it from the original download (compare its sha256 with the data home's manifest.csv)"

_MLFLOW_FIX = "check MLFLOW_TRACKING_URI and that the store answers (commands that log to MLflow also take --no-track)"


def translate(exc: BaseException) -> PerfmlError | None:
    """The typed perfml error for a foreign exception, or None when it is a bug.

    Parameters
    ----------
    exc
        An exception that reached the command line unwrapped.

    Returns
    -------
    PerfmlError or None
        ``exc`` itself when it is already a :class:`PerfmlError`; a
        :class:`~perfml.errors.FileAccessError`, :class:`~perfml.errors.CorruptFileError` or
        :class:`~perfml.errors.ExternalLibraryError` naming the file and the fix for the
        known families; None for anything else (a programming error).
    """
    import gzip
    import json
    import tomllib
    import zlib

    if isinstance(exc, PerfmlError):
        return exc
    # Decoding errors first: gzip.BadGzipFile is an OSError, ArrowInvalid a ValueError.
    if isinstance(exc, (EOFError, zlib.error, gzip.BadGzipFile)):
        return _corrupt(exc, "compressed data ended early or is corrupt", _COMPRESSED_FIX)
    lzma_error = _module_class("lzma", "LZMAError")
    if lzma_error is not None and isinstance(exc, lzma_error):
        return _corrupt(exc, "compressed data is corrupt", _COMPRESSED_FIX)
    if isinstance(exc, UnicodeError):
        return _corrupt(exc, "not a text file in UTF-8", "pass the CSV/TOML/JSON file itself, not a binary or compressed file")
    if isinstance(exc, tomllib.TOMLDecodeError):
        return _corrupt(exc, "invalid TOML", "fix the syntax at the line and column named")
    if isinstance(exc, json.JSONDecodeError):
        return _corrupt(exc, "invalid JSON", "fix the syntax or restore the file")
    pandas_errors = sys.modules.get("pandas.errors")
    if pandas_errors is not None and isinstance(exc, (pandas_errors.EmptyDataError, pandas_errors.ParserError)):
        return _corrupt(exc, "not a readable CSV table", "pass a comma-separated file with a header row")
    arrow_invalid = _module_class("pyarrow.lib", "ArrowInvalid")
    arrow_error = _module_class("pyarrow.lib", "ArrowException")
    if arrow_invalid is not None and isinstance(exc, arrow_invalid):
        return _corrupt(exc, "Arrow could not read the data", "the file is truncated or not of the expected format: restore it")
    if isinstance(exc, OSError):
        return _os_error(exc)
    if arrow_error is not None and isinstance(exc, arrow_error):
        return _corrupt(exc, "Arrow failed", "check the file and the disk")
    mlflow_error = _module_class("mlflow.exceptions", "MlflowException")
    if mlflow_error is not None and isinstance(exc, mlflow_error):
        from perfml._mlflow import refusal_fix

        fix = refusal_fix(exc) or _MLFLOW_FIX
        return ExternalLibraryError(f"MLflow failed: {_one_line(exc) or type(exc).__name__}; {fix}")
    for module, cls_path, library, fix in (
        ("xgboost.core", ("XGBoostError",), "xgboost", "check the learner parameters (experiment file or --learner options) and the training rows"),
        ("optuna.exceptions", ("OptunaError",), "Optuna", "check --storage, --study-name and the tuning options"),
        ("sqlalchemy.exc", ("SQLAlchemyError",), "the database",
         "check the database the command uses (the MLflow tracking store: MLFLOW_TRACKING_URI or --tracking-uri; the "
         "Optuna storage: --storage), that its directory is writable, and that no other program holds a lock"),
        # MLflow migrating a new store while another process creates the same one
        ("alembic.util.exc", ("CommandError",), "creating the MLflow store's tables",
         "another process was migrating the same store: run the command again (if the store was left "
         "half-created, perfml names its repair; a database server's store: create it with one command first)"),
    ):
        cls = _module_class(module, *cls_path)
        if cls is not None and isinstance(exc, cls):
            return ExternalLibraryError(f"{library} failed: {_one_line(exc) or type(exc).__name__}; {fix}")
    if isinstance(exc, OverflowError):
        return NumberRangeError(
            f"a number is too large for the computation ({_one_line(exc) or 'overflow'}); "
            "check the sizes and values given (options, --set, query files) and use smaller ones"
        )
    if isinstance(exc, RecursionError):  # a parser (JSON, TOML, expressions) fed hundreds of nested levels
        return CorruptFileError("an input is nested too deeply to read (hundreds of nested brackets or tables); "
                                "check the files and values given: perfml's files nest a few levels at most")
    if isinstance(exc, MemoryError):
        return ExternalLibraryError("out of memory; select fewer rows, boards or points, or use a machine with more memory")
    return None


def internal_error_line(exc: BaseException) -> str:
    """The one line the CLI prints for an exception that is a bug in perfml."""
    detail = _one_line(exc)
    return (
        f"internal error: {type(exc).__name__}" + (f": {detail}" if detail else "")
        + " (a bug in perfml: please report it with the command you ran; "
        "rerun with --debug or PERFML_DEBUG=1 for the traceback)"
    )
