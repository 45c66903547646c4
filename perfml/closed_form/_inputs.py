"""Validation of the X / y that the closed-form regressors take."""

from __future__ import annotations

import functools
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np
import pandas as pd

from perfml.errors import DatasetSchemaError

#: Optional launch-configuration columns of X (as in runtimes.csv).
LAUNCH_COLUMNS = ("block_x", "block_y", "grid_x", "grid_y")


#: Within one public call (:func:`checks_frames_once`), the frames :func:`check_frame` returned,
#: by ``id``: (the frame, the required columns it was checked for). None outside such a call.
_CHECKED_IN_THIS_CALL: ContextVar[dict | None] = ContextVar("perfml_checked_frames", default=None)


@contextmanager
def one_check_per_frame():
    """Inside, a frame that :func:`check_frame` returned is not checked again.

    A prediction hands the checked frame from the regressor to the feature builder and on to
    the closed-form models, each of which checks its input as a public method must: one
    frame was checked again at each step of a single query. The memory lasts for
    the outermost call only, so a frame the caller changes between two calls is checked
    anew; inside a call perfml does not change a frame in place once checked.
    """
    if _CHECKED_IN_THIS_CALL.get() is not None:  # an inner call shares the outer call's memory
        yield
        return
    token = _CHECKED_IN_THIS_CALL.set({})
    try:
        yield
    finally:
        _CHECKED_IN_THIS_CALL.reset(token)


def checks_frames_once(method):
    """Decorator: the method runs inside :func:`one_check_per_frame`."""

    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        with one_check_per_frame():
            return method(*args, **kwargs)

    return wrapper


def check_frame(X, required, who: str) -> pd.DataFrame:
    """X must be a DataFrame with the ``required`` columns, positive input sizes and launch
    values CUDA runs; returned with board aliases resolved to the board's name, and renumbered
    when its index repeats a label (the models match rows by index).

    Inside :func:`one_check_per_frame`, a frame this function returned earlier in the same
    call, for the same or more required columns, is returned as it is."""
    checked = _CHECKED_IN_THIS_CALL.get()
    if checked is not None:
        earlier = checked.get(id(X))
        if earlier is not None and earlier[0] is X and set(required) <= earlier[1]:
            return X
    X = _checked_frame(X, required, who)
    if checked is not None:
        checked[id(X)] = (X, frozenset(required))
    return X


def near_misses(missing, columns) -> str:
    """`` (found 'Board' ...)`` for the missing names a column spells with other case or spaces, else ""."""
    close = {m: c for m in missing for c in columns if str(c) != m and str(c).strip().lower() == m.lower()}
    if not close:
        return ""
    shown = ", ".join(f"{c!r} for {m}" for m, c in close.items())
    return f" (found {shown}: column names are exact, case and spaces included)"


def check_column_names(X: pd.DataFrame, who: str, error: type[Exception] = DatasetSchemaError) -> None:
    """One level of column names, each once: with a MultiIndex or a repeated name, ``X[name]``
    is a frame, which no check or model reads as a column (an AttributeError deep inside, or
    a loop over the column labels: "unknown board 'board'")."""
    if isinstance(X.columns, pd.MultiIndex):
        raise error(f"{who}: the frame has MultiIndex columns; give one level of column names "
                    "(e.g. X.columns = X.columns.get_level_values(0))")
    twice = list(dict.fromkeys(X.columns[X.columns.duplicated()]))
    if twice:
        raise error(f"{who}: the frame has column(s) {', '.join(map(str, twice))} more than once; keep one of each")


def _checked_frame(X, required, who: str) -> pd.DataFrame:
    """:func:`check_frame`'s checks, every time."""
    if not isinstance(X, pd.DataFrame):
        raise DatasetSchemaError(
            f"{who} takes a pandas DataFrame with columns {', '.join(dict.fromkeys(required))} "
            f"(one row per kernel run), got {type(X).__name__}"
        )
    check_column_names(X, who)
    missing = [c for c in dict.fromkeys(required) if c not in X.columns]
    if missing:
        raise DatasetSchemaError(f"{who}: X lacks column(s) {', '.join(missing)}{near_misses(missing, X.columns)}; "
                                 "add them (see runtimes.csv)")
    for column in ("board", "app_id"):
        if column in required and column in X.columns:
            _check_names(X[column], column, who)
    for column, low in (("input_size", 1), ("input_size_2", 0)):
        if column in X.columns:
            _check_sizes(X[column], column, low, who)
    check_launch_columns(X, who)
    X = _canonical_boards(X)
    if not X.index.is_unique:  # rows are matched by index inside the models; the caller's index is not used
        X = X.reset_index(drop=True)
    return X


#: largest input size accepted at all (2**53: beyond it a float no longer holds every integer)
MAX_INPUT_SIZE = 2**53


def _check_sizes(given: pd.Series, column: str, low: int, who: str) -> None:
    """``input_size`` (every row) or ``input_size_2`` (empty allowed): a whole number in
    [low, :data:`MAX_INPUT_SIZE`]. A size counts elements: 1048576.5 was used as given, True
    (also a nullable ``boolean``) as 1, and text in ``input_size_2`` raised numpy's error."""
    n = _as_numbers(given)
    if column == "input_size":
        present = np.ones(len(n), dtype=bool)
    else:
        present = ~np.isnan(n) if given.dtype.kind in "fiu" else given.notna().to_numpy(dtype=bool)
    with np.errstate(invalid="ignore"):
        bad = present & ~(np.isfinite(n) & (n >= low) & (n <= MAX_INPUT_SIZE) & (n == np.floor(n)))
    bad |= present & (boolean_cells(given) | above_exactly(given, MAX_INPUT_SIZE))  # True is no size (read as 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        need = "a positive whole number" if low else "a whole number >= 0"
        raise DatasetSchemaError(f"{who}: {column} must be {need} (at most 2**53) in every row"
                                 f"{'' if column == 'input_size' else ' that gives it'}; row {i + 1} has "
                                 f"{plain_value(given.iloc[i])!r}")


def above_exactly(column: pd.Series, limit: int) -> np.ndarray:
    """True where a cell holds a whole number above ``limit`` (an integer, or integer text),
    compared exactly: read as a float first, 2**53 + 1 became 2**53 and passed a limit of
    2**53 (and was echoed as 2**53). A float cell is compared as it is, by the callers."""
    if column.dtype.kind in "iu":
        return column.to_numpy() > limit
    if column.dtype.kind in "fbc" or pd.api.types.is_bool_dtype(column):
        return np.zeros(len(column), dtype=bool)

    def above(value) -> bool:
        if isinstance(value, (bool, np.bool_)):
            return False
        if isinstance(value, (int, np.integer)):
            return int(value) > limit
        if isinstance(value, str):
            text = value.strip().removeprefix("+")
            return text.isascii() and text.isdigit() and int(text) > limit
        return False

    return column.map(above).to_numpy(dtype=bool)


def boolean_cells(column: pd.Series) -> np.ndarray:
    """True where a cell holds a boolean (a ``bool`` or nullable ``boolean`` column, or a True
    among the numbers of an object column): pandas and numpy read True as the number 1."""
    if pd.api.types.is_bool_dtype(column):
        return column.notna().to_numpy(dtype=bool)
    if column.dtype == object:
        return column.map(lambda v: isinstance(v, (bool, np.bool_))).to_numpy(dtype=bool)
    return np.zeros(len(column), dtype=bool)


def _as_numbers(column: pd.Series) -> np.ndarray:
    """The column as floats, NaN where a cell is no number (``pd.to_numeric(errors="coerce")``);
    a numeric column directly, as a one-row query is checked several times per prediction."""
    if column.dtype.kind in "fiu":
        return column.to_numpy(dtype=float)
    return pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)


def plain_value(value):
    """A numpy scalar as the plain Python value (messages show 2.5, not np.float64(2.5))."""
    return value.item() if hasattr(value, "item") else value


def _check_names(values: pd.Series, column: str, who: str) -> None:
    """Every cell of a key column (``board``, ``app_id``) is non-empty text: an empty one (None,
    NaN) fell out of the models' per-(board, app) groups and was predicted NaN, or left out of
    the fit without a word."""
    if pd.api.types.is_object_dtype(values) or pd.api.types.is_string_dtype(values):
        cells = values.to_numpy(dtype=object)
        # each distinct name once (a table holds thousands of rows of a few boards and kernels)
        if all(isinstance(v, str) and v.strip() for v in pd.unique(cells)):
            return
        bad = np.array([not (isinstance(v, str) and v.strip()) for v in cells], dtype=bool)
    else:  # a numeric or boolean column names nothing
        bad = np.ones(len(values), dtype=bool)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DatasetSchemaError(f"{who}: row {i + 1} has {column} = {plain_value(values.iloc[i])!r}; every row names its "
                                 f"{'board' if column == 'board' else 'kernel (app_id)'} as text: fill the cell or drop the row")


def check_launch_columns(X: pd.DataFrame, who: str) -> None:
    """A launch value given is a whole number within CUDA's limits; an empty cell means "the
    kernel's default launch". A 0, negative, fractional or text value was used (or ignored)
    silently by the models, unlike ``perfml predict``, which refused it. The limits are
    CUDA's (:mod:`perfml.boards._launch_limits`, any compute capability); a board's own are
    checked where the board is known, e.g. ``perfml predict``."""
    from perfml.boards import MAX_BLOCK, MAX_GRID

    for column, high in {**MAX_BLOCK, **MAX_GRID}.items():
        if column not in X.columns:
            continue
        given = X[column]
        values = _as_numbers(given)
        present = ~np.isnan(values) if given.dtype.kind in "fiu" else given.notna().to_numpy(dtype=bool)
        with np.errstate(invalid="ignore"):
            bad = present & ~(np.isfinite(values) & (values >= 1) & (values <= high) & (values == np.floor(values)))
        bad |= present & boolean_cells(given)  # True is no launch value (to_numeric reads it as 1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            shown = plain_value(given.iloc[i])
            row = X.iloc[i]
            ids = ", ".join(f"{c} {row[c]}" for c in ("source", "board", "app_id", "input_size")
                            if c in X.columns and pd.notna(row[c]))
            raise DatasetSchemaError(
                f"{who}: row {i + 1}{f' ({ids})' if ids else ''} has {column} = {shown!r}; expected a whole number "
                f"in [1, {high:,}] (CUDA's limit), or an empty cell for the kernel's default launch")


def _canonical_boards(X: pd.DataFrame) -> pd.DataFrame:
    """``board`` with every registry name, alias or device name replaced by the board's own
    name (as ``perfml predict`` does): 'Tesla K40c' and 'Tesla-K40' are one board, and a
    model keyed by name must not see two. Names the registry does not know are left for the
    model to refuse."""
    if "board" not in X.columns:
        return X
    from perfml.boards import resolve_board_name
    from perfml.errors import UnknownBoardError

    mapping = {}
    for name in pd.unique(X["board"].astype(object)):
        if isinstance(name, str):
            try:
                mapping[name] = resolve_board_name(name.strip())
            except UnknownBoardError:
                pass
    if all(k == v for k, v in mapping.items()):
        return X
    return X.assign(board=[mapping.get(b, b) if isinstance(b, str) else b for b in X["board"].astype(object)])


def check_target(y, n_rows: int, who: str) -> np.ndarray:
    """y must be finite, strictly positive times (ms), one per row of X."""
    try:
        y = np.asarray(y, dtype=float).ravel()
    except (TypeError, ValueError) as exc:  # text, None or objects: "could not convert string to float"
        raise DatasetSchemaError(f"{who}: y must be measured times in ms, numbers one per row of X ({exc})") from None
    if n_rows == 0:
        raise DatasetSchemaError(f"{who}: no training rows (X is empty); fit on at least one measured run")
    if y.shape[0] != n_rows:
        raise DatasetSchemaError(f"{who}: y has {y.shape[0]} values for {n_rows} rows of X")
    if not np.all(np.isfinite(y) & (y > 0)):
        raise DatasetSchemaError(f"{who}: measured times must be positive, finite milliseconds (found NaN, 0 or < 0)")
    return y
