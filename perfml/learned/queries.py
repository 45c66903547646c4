"""Prediction queries: a CSV with the columns of runtimes.csv minus the time columns."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from perfml.errors import DatasetSchemaError, ResultFileExistsError

QUERY_REQUIRED = ("board", "app_id", "input_size")


def read_queries(path) -> pd.DataFrame:
    """Read and check a query CSV: board, app_id, input_size (+ optional launch columns).

    Board names are resolved through the registry (aliases allowed) and apps through the
    kernel descriptions; unknown ones raise :class:`~perfml.errors.UnknownBoardError` /
    :class:`~perfml.errors.UnknownAppError` naming them.
    """
    from perfml.apps import get_app
    from perfml.boards import resolve_board_name

    path = Path(path)
    if not path.is_file():
        raise DatasetSchemaError(f"query file {str(path)!r} does not exist; give a CSV with columns {', '.join(QUERY_REQUIRED)}")
    try:
        q = pd.read_csv(path, low_memory=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DatasetSchemaError(f"{path}: cannot be read as CSV ({exc.__class__.__name__})") from None
    missing = [c for c in QUERY_REQUIRED if c not in q.columns]
    if missing:
        raise DatasetSchemaError(
            f"{path}: missing column(s) {', '.join(missing)}; queries need {', '.join(QUERY_REQUIRED)} "
            "(the columns of runtimes.csv without the time columns)"
        )
    timing = [c for c in q.columns if c.startswith("time_ms")]
    if timing:
        raise DatasetSchemaError(f"{path}: queries must not carry measured times ({', '.join(timing)}); drop those columns")
    n = pd.to_numeric(q["input_size"], errors="coerce")
    if not np.all(np.isfinite(n) & (n > 0)):
        row = int(np.flatnonzero(~(np.isfinite(n) & (n > 0)))[0])
        raise DatasetSchemaError(f"{path}: input_size must be a positive number, found {q['input_size'].iloc[row]!r} in row {row + 2}")
    q = q.copy()
    q["input_size"] = n
    q["board"] = [resolve_board_name(str(b)) for b in q["board"]]
    for app_id in q["app_id"].unique():
        get_app(str(app_id))
    return q


def write_predictions(frame: pd.DataFrame, path, *, overwrite: bool = False) -> Path:
    """Write ``frame`` to CSV atomically; refuse to replace an existing file unless ``overwrite``."""
    path = Path(path)
    if path.exists() and not overwrite:
        raise ResultFileExistsError(f"{path} exists; choose another --output or pass --overwrite")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".perfml-", suffix=".csv", dir=path.parent)
    os.close(fd)
    try:
        frame.to_csv(tmp, index=False)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path
