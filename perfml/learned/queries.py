"""Prediction queries: a CSV with the columns of runtimes.csv minus the time columns.

Every row is checked before anything is predicted, and nothing is written when any row
fails; the error names the file, the row (1-based, the header is line 1, so row ``r`` is
line ``r + 1``), the column, the bad value and the fix:

* ``board`` resolves in the board registry (aliases allowed);
* ``app_id`` is an app the model was trained on (:class:`~perfml.errors.UnknownAppError`
  semantics, raised as :class:`~perfml.errors.QueryValidationError`);
* ``input_size`` is a positive, finite integer (``1.5``, ``0``, ``-3``, ``nan``, ``inf``
  and text are refused);
* the launch, given or derived from the kernel description, respects CUDA's limits
  (CUDA C++ Programming Guide, "Features and Technical Specifications", table of
  technical specifications per compute capability): ``block_x, block_y <= 1024``,
  ``block_z <= 64``, ``block_x * block_y * block_z <=`` the board's
  ``max_threads_per_block`` (registry; 512 before compute capability 2.0),
  ``grid_x <= 2**31 - 1`` (65535 before compute capability 3.0), ``grid_y, grid_z <= 65535``;
* no input column has the name of an output column (:data:`OUTPUT_COLUMNS`).

Queries beyond the training range are answered but flagged: ``extrapolated`` is True and
``extrapolation`` says why (e.g. "input_size above the training range [1024, 16777216] of
app vectorAdd"). A prediction that is not finite and positive is an error naming the row:
``inf`` and ``NaN`` are never written.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from perfml.errors import DatasetSchemaError, PerfmlError, QueryValidationError

QUERY_REQUIRED = ("board", "app_id", "input_size")
#: columns ``perfml predict`` adds to the queries; an input column of the same name is refused
OUTPUT_COLUMNS = ("predicted_ms", "extrapolated", "extrapolation")
LAUNCH_COLUMNS = ("block_x", "block_y", "block_z", "grid_x", "grid_y", "grid_z")

#: CUDA limits for compute capability >= 3.0 (CUDA C++ Programming Guide, technical specifications)
MAX_BLOCK = {"block_x": 1024, "block_y": 1024, "block_z": 64}
MAX_GRID = {"grid_x": 2**31 - 1, "grid_y": 65535, "grid_z": 65535}
#: before compute capability 3.0 grid_x is limited to 65535 as well
MAX_GRID_X_BEFORE_CC3 = 65535
#: largest input size accepted at all (2**53: beyond it a float no longer holds every integer)
MAX_INPUT_SIZE = 2**53


def _num(value):
    """A plain Python number for messages (no ``np.float64(...)``; integers without ``.0``)."""
    if isinstance(value, (np.integer, np.floating)):
        value = value.item()
    if isinstance(value, float) and np.isfinite(value) and value == int(value) and abs(value) < 1e18:
        return int(value)
    return value


def _row_error(where, row: int, column: str, value, problem: str, fix: str) -> QueryValidationError:
    """``where`` is a file name (rows are numbered) or a callable naming row ``row`` itself."""
    at = where(row) if callable(where) else f"{where}: row {row + 1} (line {row + 2})"
    return QueryValidationError(f"{at}, column {column}: {problem}, found {_num(value)!r}; {fix}")


def _as_integers(frame: pd.DataFrame, column: str, where, *, required: bool, low: int, high: int, fix: str) -> np.ndarray:
    """The column as float integers (NaN where optional and empty); raise naming the first bad row."""
    raw = frame[column]
    text = raw.astype(str).str.strip()
    empty = raw.isna().to_numpy() | (text == "").to_numpy()
    values = pd.to_numeric(text.where(~empty, None), errors="coerce").to_numpy(dtype=float)
    for i in range(len(frame)):
        if empty[i]:
            if required:
                raise _row_error(where, i, column, raw.iloc[i], "a value is required", fix)
            continue
        v = values[i]
        if not np.isfinite(v):
            raise _row_error(where, i, column, raw.iloc[i], "expected a finite integer", fix)
        if v != np.floor(v):
            raise _row_error(where, i, column, raw.iloc[i], "expected an integer", fix)
        if not low <= v <= high:
            raise _row_error(where, i, column, raw.iloc[i], f"expected an integer in [{low}, {high}]", fix)
    return np.where(empty, np.nan, values)


def read_query_csv(path) -> pd.DataFrame:
    """The query CSV as text columns, exactly as given (empty cells are empty strings)."""
    path = Path(path)
    if not path.is_file():
        what = "is not a regular file" if path.exists() else "does not exist"
        raise DatasetSchemaError(f"query file {str(path)!r} {what}; give a CSV with columns {', '.join(QUERY_REQUIRED)}")
    try:
        return pd.read_csv(path, dtype=str, keep_default_na=False, low_memory=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DatasetSchemaError(f"{path}: cannot be read as CSV ({exc.__class__.__name__}); give a CSV with a header line") from None
    except OSError as exc:
        raise DatasetSchemaError(f"{path}: cannot be read ({exc.strerror}); give a readable CSV file") from None


def check_queries(frame: pd.DataFrame, where, *, apps=None) -> pd.DataFrame:
    """Check query rows; return the frame the regressor takes (numbers parsed, boards resolved).

    Parameters
    ----------
    frame : DataFrame
        The queries as read (any dtypes).
    where : str or callable
        The file name used in messages (rows are then numbered), or a function of the
        0-based row giving its name (e.g. "--size 1024 for app vectorAdd").
    apps : iterable of str, optional
        The apps the model was trained on; other apps are refused. Default: every app
        with a kernel description.

    Raises
    ------
    QueryValidationError
        Naming the file, row, column, bad value and fix.
    DatasetSchemaError
        For a missing required column or a measured-time column.
    """
    from perfml.boards import get_board, resolve_board_name

    collide = [c for c in frame.columns if str(c) in OUTPUT_COLUMNS]
    if collide:
        raise QueryValidationError(
            f"{where}: input column {collide[0]!r} has the name of a column perfml predict writes "
            f"({', '.join(OUTPUT_COLUMNS)}); rename or drop it"
        )
    missing = [c for c in QUERY_REQUIRED if c not in frame.columns]
    if missing:
        raise DatasetSchemaError(
            f"{where}: missing column(s) {', '.join(missing)}; queries need {', '.join(QUERY_REQUIRED)} "
            "(the columns of runtimes.csv without the time columns)"
        )
    timing = [c for c in frame.columns if str(c).startswith("time_ms")]
    if timing:
        raise DatasetSchemaError(f"{where}: queries must not carry measured times ({', '.join(timing)}); drop those columns")
    if len(frame) == 0:
        raise QueryValidationError(f"{where}: no query rows; add at least one row under the header")

    q = pd.DataFrame(index=frame.index)
    boards = []
    for i, name in enumerate(frame["board"]):
        try:
            boards.append(resolve_board_name(str(name).strip()))
        except PerfmlError as exc:
            raise _row_error(where, i, "board", name, "unknown board", f"{exc}") from None
    q["board"] = boards
    if apps is None:
        from perfml.apps import list_apps

        apps = list_apps()
    apps = sorted(map(str, apps))
    app_ids = [str(a).strip() for a in frame["app_id"]]
    for i, app in enumerate(app_ids):
        if app not in apps:
            raise _row_error(where, i, "app_id", frame["app_id"].iloc[i], "the model was not trained on this app",
                             f"query one of {', '.join(apps)}, or train a model that covers it")
    q["app_id"] = app_ids
    q["input_size"] = _as_integers(frame, "input_size", where, required=True, low=1, high=MAX_INPUT_SIZE,
                                   fix="give the problem size as a positive whole number")
    for column in LAUNCH_COLUMNS:
        if column in frame.columns:
            high = MAX_BLOCK.get(column) or MAX_GRID[column]
            q[column] = _as_integers(frame, column, where, required=False, low=1, high=high,
                                     fix=f"CUDA allows 1 to {high}; leave the cell empty to use the kernel's default launch")
    for column in frame.columns:  # pass the other columns through, numbers parsed as read_csv would
        if column not in q.columns:
            q[column] = _infer(frame[column])
    _check_launch(q, where, get_board)
    return q.reset_index(drop=True)


def _check_launch(q: pd.DataFrame, where, get_board) -> None:
    """The launch each row will run (given or derived) respects CUDA's and the board's limits."""
    from perfml.apps import get_app

    dims = {c: np.full(len(q), np.nan) for c in ("block_x", "block_y", "grid_x", "grid_y")}
    for app, part in q.groupby("app_id", sort=False):
        launch = {c: part[c].to_numpy(dtype=float) for c in dims if c in part.columns}
        with np.errstate(all="ignore"):
            bx, by, gx, gy = get_app(str(app)).launch_dims(part["input_size"].to_numpy(dtype=float), **launch)
        idx = q.index.get_indexer(part.index)
        for c, v in zip(dims, (bx, by, gx, gy)):
            dims[c][idx] = v
    bz = q["block_z"].fillna(1).to_numpy(dtype=float) if "block_z" in q.columns else np.ones(len(q))
    for i in range(len(q)):
        board = get_board(q["board"].iloc[i])
        for c, high in (("block_x", 1024), ("block_y", 1024), ("grid_x", MAX_GRID["grid_x"]), ("grid_y", 65535)):
            if c == "grid_x" and _cc(board) < 3.0:
                high = MAX_GRID_X_BEFORE_CC3
            v = dims[c][i]
            if not (np.isfinite(v) and 1 <= v <= high):
                if c in q.columns and np.isfinite(q[c].iloc[i]):
                    raise _row_error(where, i, c, v, f"CUDA allows {c} in [1, {high}] on {board.name}",
                                     "give a launch within CUDA's limits")
                raise _row_error(where, i, "input_size", q["input_size"].iloc[i],
                                 f"the kernel's default launch for this size needs {c} = {_num(v)}, "
                                 f"CUDA allows [1, {high}] on {board.name}",
                                 "choose a smaller input_size or give the launch columns explicitly")
        threads = dims["block_x"][i] * dims["block_y"][i] * bz[i]
        limit = board.max_threads_per_block or 1024
        if threads > limit:
            raise _row_error(where, i, "block_x*block_y*block_z", int(threads),
                             f"{board.name} allows at most {limit} threads per block",
                             "choose a smaller block")


def _infer(column: pd.Series) -> pd.Series:
    if column.dtype != object:
        return column
    blank = column.astype(str).str.strip() == ""
    try:
        return pd.to_numeric(column.where(~blank, None))
    except (ValueError, TypeError):
        return column.where(~blank, None)


def _cc(board) -> float:
    try:
        return float(board.compute_capability)
    except (TypeError, ValueError):
        return 99.0


def read_queries(path, *, apps=None) -> pd.DataFrame:
    """Read and check a query CSV (see :func:`check_queries`)."""
    return check_queries(read_query_csv(path), str(path), apps=apps)


def extrapolation(q: pd.DataFrame, training: dict) -> tuple[np.ndarray, list[str]]:
    """Flag rows whose input size lies outside the app's training range.

    Returns the boolean ``extrapolated`` column and the ``extrapolation`` reasons ("" when
    within range). A model that records no ranges flags every row.
    """
    ranges = (training or {}).get("input_size") or {}
    flags, reasons = [], []
    for app, n in zip(q["app_id"], q["input_size"]):
        rng = ranges.get(str(app))
        if rng is None:
            flags.append(True)
            reasons.append(f"the model records no training range for app {app}")
            continue
        lo, hi = _num(rng[0]), _num(rng[1])
        if n < lo:
            flags.append(True)
            reasons.append(f"input_size below the training range [{lo}, {hi}] of app {app}")
        elif n > hi:
            flags.append(True)
            reasons.append(f"input_size above the training range [{lo}, {hi}] of app {app}")
        else:
            flags.append(False)
            reasons.append("")
    return np.asarray(flags, dtype=bool), reasons


def predict_queries(model, original: pd.DataFrame, where) -> pd.DataFrame:
    """The queries as given plus ``predicted_ms``, ``extrapolated`` and ``extrapolation``.

    Raises
    ------
    QueryValidationError
        A row fails :func:`check_queries`, or its prediction is not finite and positive.
    """
    meta = getattr(model, "metadata_", {}) or {}
    apps = ((meta.get("training") or {}).get("apps") or (meta.get("features") or {}).get("apps")
            or getattr(model.features_, "apps_", None))
    q = check_queries(original, where, apps=apps)
    with np.errstate(all="ignore"):
        pred = np.asarray(model.predict(q), dtype=float)
    bad = np.flatnonzero(~(np.isfinite(pred) & (pred > 0)))
    if bad.size:
        i = int(bad[0])
        raise QueryValidationError(
            f"{where}: row {i + 1} (line {i + 2}): the prediction is {pred[i]!r} ms, not a finite positive time "
            f"(board {q['board'].iloc[i]}, app {q['app_id'].iloc[i]}, input_size {_num(q['input_size'].iloc[i])}); "
            "the query is too far outside the training data: choose a size nearer the training range"
        )
    flags, reasons = extrapolation(q, meta.get("training"))
    out = original.copy()
    out["predicted_ms"] = pred
    out["extrapolated"] = flags
    out["extrapolation"] = reasons
    return out


def write_predictions(frame: pd.DataFrame, path, *, overwrite: bool = False) -> Path:
    """Write ``frame`` as CSV to a regular file atomically (:mod:`perfml._safe_output`)."""
    from perfml._safe_output import write_dataframe_atomic

    return write_dataframe_atomic(frame, Path(path), overwrite=overwrite, option="--output")
