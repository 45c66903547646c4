"""Prediction queries: a CSV with the columns of runtimes.csv minus the time columns.

Every row is checked before anything is predicted, and nothing is written when any row
fails; the error names the file, the row (1-based, the header is line 1, so row ``r`` is
line ``r + 1``), the column, the bad value and the fix:

* ``board`` resolves in the board registry (aliases allowed);
* ``app_id`` names a kernel perfml knows something about, in this order: the user's
  ``--reference`` measurements of it (:func:`read_reference`), its measurements on the
  training boards, its kernel description; otherwise
  :class:`~perfml.errors.UnsupportedQueryError` names the row and what to add. The
  output's ``basis`` column says which was used (:func:`predict_queries`); a run that the
  row's own board ran in the training rows is answered with that measurement
  (:func:`measured_on_board`). A kernel without
  a description takes its launch from the row, else from the reference or the training
  runs of the same size;
* ``input_size`` is a positive, finite integer (``1.5``, ``0``, ``-3``, ``nan``, ``inf``
  and text are refused), ``input_size_2`` (where given) one >= 0 or empty
  (:func:`checked_sizes`, the rule of ``--reference`` rows too);
* the launch, given or derived from the kernel description, respects CUDA's limits
  (CUDA C++ Programming Guide, "Features and Technical Specifications", table of
  technical specifications per compute capability): ``block_x, block_y <= 1024``,
  ``block_z <= 64``, ``block_x * block_y * block_z <=`` the board's
  ``max_threads_per_block`` (registry; 512 before compute capability 2.0),
  ``grid_x <= 2**31 - 1`` (65535 before compute capability 3.0), ``grid_y, grid_z <= 65535``;
* no input column has the name of an output column (:data:`OUTPUT_COLUMNS`).

Every answered row gets a ``level`` interval (``lower_ms``/``upper_ms``,
:mod:`perfml.learned.intervals`), and no prediction is faster than the board's roofline
lower bound where the work is known (:func:`roofline_bound_ms`), nor than the fastest call of
the training data, or of the user's reference on the row's board (:func:`call_floor_ms`; 0.5 us,
:data:`~perfml.characterize.limits.MIN_MEASURED_MS`, where a model does not record it): a
faster one is raised to the bound and flagged ``clamped_to_bound`` (rather than refused: the
bound is a floor the user can act on, and the row's other knowledge still holds).

Queries beyond the training range are answered but flagged: ``extrapolated`` is True and
``extrapolation`` says why (e.g. "input_size above the training range [1024, 16777216] of
app vectorAdd", "block 128x1 of app vectorAdd was measured on no training board ...",
:func:`unmeasured_launches`, or "board H100-SXM: DRAM bandwidth 3350 GB/s above the training
boards' range ...", :mod:`perfml.learned.board_range`). A prediction that is not finite and
positive is an error naming the row: ``inf`` and ``NaN`` are never written.
"""

from __future__ import annotations

import math

from pathlib import Path

import numpy as np
import pandas as pd

from perfml.boards import MAX_BLOCK, MAX_GRID, MAX_GRID_X_BEFORE_CC3  # CUDA's launch limits
from perfml.closed_form._inputs import MAX_INPUT_SIZE, above_exactly, checks_frames_once  # the size limit of every estimator
from perfml.closed_form.roofline import roofline_bound_and_bytes, roofline_bound_ms
from perfml.errors import DatasetSchemaError, PerfmlError, QueryValidationError
from perfml.learned.board_range import board_range_flags, carried_within_architecture, unseen_architecture_flags

QUERY_REQUIRED = ("board", "app_id", "input_size")
#: columns ``perfml predict`` adds to the queries; an input column of the same name is refused
OUTPUT_COLUMNS = ("predicted_ms", "lower_ms", "upper_ms", "basis", "clamped_to_bound", "extrapolated", "extrapolation")
LAUNCH_COLUMNS = ("block_x", "block_y", "block_z", "grid_x", "grid_y", "grid_z")
#: threads per block of the launch assumed for a kernel known only from ``--reference``
#: rows that give no launch (nor does the query or a training run): one thread per element
#: of ``input_size``, in blocks of this size (``experiments/launch_free_reference.py``
#: measures what the assumption costs)
NOMINAL_BLOCK = 256
NOMINAL_LAUNCH_NOTE = (
    f"launch assumed ({NOMINAL_BLOCK} threads per block, one thread per element of input_size): "
    "neither the row, its reference nor a training run gives one; add block_x, block_y, grid_x, "
    "grid_y to the row and the reference for a prediction of the launch you run"
)



#: the ``basis`` values of a row carried from the user's own measurement of the same run
REFERENCE_BASES = ("reference", "reference+profile")


def _num(value):
    """A plain Python number for messages (no ``np.float64(...)`` or ``np.True_``; integers without ``.0``)."""
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        value = value.item()
    if isinstance(value, float) and np.isfinite(value) and value == int(value) and abs(value) < 1e18:
        return int(value)
    return value


def _at(where, row: int) -> str:
    """Row ``row`` (0-based) named: ``where(row)`` when ``where`` is callable, else "FILE: row r (line r + 1)"."""
    return where(row) if callable(where) else f"{where}: row {row + 1} (line {row + 2})"


class RowNames(str):
    """A file label that also names rows of a subset by their rows in the whole file.

    ``RowNames("q.csv", [3, 7])(1)`` is "q.csv: row 8 (line 9)": used where the rows of one
    file are split among models (operator rows, application rows) and each part is checked
    on its own, so that every message still names the row of the user's file.
    """

    def __new__(cls, label: str, rows):
        obj = super().__new__(cls, label)
        obj.rows = [int(r) for r in rows]
        obj.base = label if callable(label) else None  # a FileRows label knows the rows' lines
        return obj

    def __call__(self, row: int) -> str:
        r = self.rows[row]
        return self.base(r) if self.base is not None else f"{str(self)}: row {r + 1} (line {r + 2})"


def _row_error(where, row: int, column: str, value, problem: str, fix: str) -> QueryValidationError:
    """``where`` is a file name (rows are numbered) or a callable naming row ``row`` itself."""
    at = _at(where, row)
    return QueryValidationError(f"{at}, column {column}: {problem}, found {_num(value)!r}; {fix}")


def _as_integers(frame: pd.DataFrame, column: str, where, *, required: bool, low: int, high: int, fix: str) -> np.ndarray:
    """The column as float integers (NaN where optional and empty); raise naming the first bad row."""
    raw = frame[column]
    text = raw.astype(str).str.strip()
    empty = raw.isna().to_numpy() | (text == "").to_numpy()
    values = pd.to_numeric(text.where(~empty, None), errors="coerce").to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        plain = ~empty & np.isfinite(values) & (values == np.floor(values)) & (values >= low) & (values < high)
    # the rows below are the ones that may fail (a many-row file is judged on arrays, not row by row)
    for i in np.flatnonzero(~plain & (~empty | required)).tolist():
        if empty[i]:
            if required:
                raise _row_error(where, i, column, raw.iloc[i], "a value is required", fix)
            continue
        v = values[i]
        if not np.isfinite(v):
            raise _row_error(where, i, column, raw.iloc[i], "expected a finite integer", fix)
        if v != np.floor(v):
            raise _row_error(where, i, column, raw.iloc[i], "expected an integer", fix)
        if not low <= v <= high or (v == high and above_exactly(raw.iloc[i:i + 1], high)[0]):
            raise _row_error(where, i, column, raw.iloc[i], f"expected an integer in [{low}, {high}]", fix)
    return np.where(empty, np.nan, values)


def checked_sizes(frame: pd.DataFrame, where, *, launch_fix: str) -> dict[str, np.ndarray]:
    """The size and launch columns of query or reference rows, parsed by one rule.

    ``input_size`` a whole number in [1, MAX_INPUT_SIZE] (required); ``input_size_2``, where
    the file has it, a whole number in [0, MAX_INPUT_SIZE] or empty; the launch columns a
    whole number within CUDA's limits or empty. Raises
    :class:`~perfml.errors.QueryValidationError` naming the first bad row.
    """
    sizes = {"input_size": _as_integers(frame, "input_size", where, required=True, low=1, high=MAX_INPUT_SIZE,
                                        fix="give the problem size as a positive whole number")}
    if "input_size_2" in frame.columns:
        sizes["input_size_2"] = _as_integers(frame, "input_size_2", where, required=False, low=0, high=MAX_INPUT_SIZE,
                                             fix="give the second size as a whole number >= 0, or leave it empty")
    for column in LAUNCH_COLUMNS:
        if column in frame.columns:
            high = MAX_BLOCK.get(column) or MAX_GRID[column]
            sizes[column] = _as_integers(frame, column, where, required=False, low=1, high=high,
                                         fix=f"CUDA allows 1 to {high}; {launch_fix}")
    return sizes


def read_query_csv(path, what: str = "query file") -> pd.DataFrame:
    """The query CSV as text columns, exactly as given (empty cells are empty strings).

    ``what`` names the file in a message (``"reference file"`` for ``--reference``).
    """
    from perfml._files import not_a_file

    path = Path(path)
    why = not_a_file(path)
    if why is not None:
        raise DatasetSchemaError(f"{what} {str(path)!r} {why}; give a CSV with columns {', '.join(QUERY_REQUIRED)}")
    from perfml._csv_header import check_header, read_text_csv

    try:
        check_header(path, DatasetSchemaError)
        return read_text_csv(path)
    except UnicodeDecodeError as exc:
        from perfml._csv_header import not_utf8

        raise DatasetSchemaError(not_utf8(path, exc, path)) from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise DatasetSchemaError(f"{path}: cannot be read as CSV ({exc.__class__.__name__}: {str(exc).strip()}); "
                                 "give a CSV with a header line and as many fields in every row") from None
    except OSError as exc:
        raise DatasetSchemaError(f"{path}: cannot be read ({exc.strerror or exc}); give a readable CSV file") from None


def check_queries(frame: pd.DataFrame, where, *, apps=None, reference_apps=None, launch_fill=None) -> pd.DataFrame:
    """Check query rows; return the frame the regressor takes (numbers parsed, boards resolved).

    Parameters
    ----------
    frame : DataFrame
        The queries as read (any dtypes).
    where : str or callable
        The file name used in messages (rows are then numbered), or a function of the
        0-based row giving its name (e.g. "--size 1024 for app vectorAdd").
    apps : iterable of str, optional
        The kernels the model was trained on. A kernel neither trained on, nor described,
        nor in ``reference_apps`` is refused (:class:`~perfml.errors.UnsupportedQueryError`).
    reference_apps : iterable of str, optional
        Kernels the user's ``--reference`` file measures.
    launch_fill : callable, optional
        ``launch_fill(q)`` fills the missing launch of undescribed kernels (from the
        reference or the training runs) before the launch is checked.

    Raises
    ------
    QueryValidationError
        Naming the file, row, column, bad value and fix.
    DatasetSchemaError
        For a missing required column or a measured-time column.
    """
    from perfml.boards import get_board, resolve_board_name
    from perfml.closed_form._inputs import check_column_names

    check_column_names(frame, str(where) if isinstance(where, str) else "the queries", QueryValidationError)
    collide = [c for c in frame.columns if str(c) in OUTPUT_COLUMNS]
    if collide:
        raise QueryValidationError(
            f"{where}: input column {collide[0]!r} has the name of a column perfml predict writes "
            f"({', '.join(OUTPUT_COLUMNS)}); rename or drop it"
        )
    missing = [c for c in QUERY_REQUIRED if c not in frame.columns]
    if missing:
        from perfml.closed_form._inputs import near_misses

        raise DatasetSchemaError(
            f"{where}: missing column(s) {', '.join(missing)}{near_misses(missing, frame.columns)}; queries need "
            f"{', '.join(QUERY_REQUIRED)} "
            "(the columns of runtimes.csv without the time columns)"
        )
    timing = [c for c in frame.columns if str(c).startswith("time_ms")]
    if timing:
        raise DatasetSchemaError(f"{where}: queries must not carry measured times ({', '.join(timing)}); drop those columns")
    if len(frame) == 0:
        raise QueryValidationError(f"{where}: no query rows; add at least one row under the header")
    # rows are named by position, and the launch check matches rows by label: a frame from
    # Python with a repeated index label (two concatenated frames) is read by position
    frame = frame.reset_index(drop=True)

    # the checked columns are gathered here and made a frame once: a column added to a frame at a
    # time costs pandas more than the checks of a one-row query, and with thousands of carried
    # columns pandas warned that the frame was fragmented
    cols: dict[str, object] = {}
    given = [str(name).strip() for name in frame["board"]]
    codes, names = pd.factorize(np.asarray(given, dtype=object))
    resolved = []
    for k, name in enumerate(names):  # once per distinct name, in the order of the rows
        try:
            resolved.append(resolve_board_name(name))
        except PerfmlError as exc:
            i = int(np.flatnonzero(codes == k)[0])
            raise _row_error(where, i, "board", frame["board"].iloc[i], "unknown board", f"{exc}") from None
    cols["board"] = list(np.asarray(resolved, dtype=object)[codes]) if len(resolved) else []
    from perfml.apps import list_apps

    described = set(list_apps())
    trained = set(map(str, apps)) if apps is not None else described
    referenced = set(map(str, reference_apps or ()))
    app_ids = [str(a).strip() for a in frame["app_id"]]
    for i, app in enumerate(app_ids):
        if app not in trained and app not in described and app not in referenced:
            from perfml.errors import UnsupportedQueryError

            at = where(i) if callable(where) else f"{where}: row {i + 1} (line {i + 2})"
            raise UnsupportedQueryError(
                f"{at}, column app_id: perfml knows nothing about kernel {app!r} (no --reference measurement, "
                "no measurement on the training boards, no kernel description); add its measured time on a board you "
                "have to a --reference CSV (query columns + time_ms), or describe it in the [model] table of a sidecar (perfml/kernels/cuda/SIDECAR.md)"
            )
    cols["app_id"] = app_ids
    cols.update(checked_sizes(frame, where, launch_fix="leave the cell empty to use the kernel's default launch"))
    _refuse_a_third_launch_dimension(cols, where, referenced)
    for column in frame.columns:  # pass the other columns through, numbers parsed as read_csv would
        if column not in cols:
            cols[column] = _infer(frame[column])
    q = pd.DataFrame(cols, index=frame.index)
    if launch_fill is not None:
        launch_fill(q)
    _check_launch(q, where, get_board)
    return q.reset_index(drop=True)


def _refuse_a_third_launch_dimension(cols: dict, where, referenced: set[str]) -> None:
    """Refuse ``block_z`` / ``grid_z`` other than 1 for a kernel the model answers.

    Every training run has a two-dimensional launch (``block_z`` and ``grid_z`` 1 or
    empty in runtimes.csv), and the models read block_x, block_y, grid_x, grid_y only: 100
    in ``grid_z`` left the prediction as it was, where the same 100 in ``grid_y``
    multiplied it. A kernel of the user's ``--reference`` is carried from its own
    measurement, whose launch the reference gives, and keeps them.
    """
    for column, fold in (("block_z", "block_y"), ("grid_z", "grid_y")):
        values = cols.get(column)
        if values is None:
            continue
        for i in np.flatnonzero(np.isfinite(values) & (values != 1)):
            if cols["app_id"][i] not in referenced:
                raise _row_error(where, int(i), column, values[i],
                                 "perfml's models know two-dimensional launches only (every training run has "
                                 f"{column} = 1)", f"give the same launch with {fold} x {column} in {fold}, "
                                 f"and {column} 1 or empty")


def _completed_launches(q: pd.DataFrame) -> pd.DataFrame:
    """``q`` with a partly given launch completed by the kernel's default (its description).

    The launch's extent (threads per block, blocks: :func:`extrapolation`) multiplied the
    columns given only: ``grid_y = 5`` alone read as 5 blocks, where the kernel runs its
    default grid_x times 5. Rows that give no launch, and kernels without a description,
    are left as they are.
    """
    from perfml.apps import get_app, list_apps

    dims = ("block_x", "block_y", "grid_x", "grid_y")
    if not any(c in q.columns for c in LAUNCH_COLUMNS):
        return q
    given = np.isfinite(np.column_stack([q[c].to_numpy(dtype=float) if c in q.columns else np.full(len(q), np.nan)
                                         for c in LAUNCH_COLUMNS]))
    four = [LAUNCH_COLUMNS.index(c) for c in dims]
    partly = given.any(axis=1) & ~given[:, four].all(axis=1) & q["app_id"].isin(list_apps()).to_numpy()
    if not partly.any():
        return q
    q = q.assign(**{c: np.nan for c in dims if c not in q.columns})
    for app, part in q[partly].groupby("app_id", sort=False):
        launch = {c: part[c].to_numpy(dtype=float) for c in dims}
        with np.errstate(all="ignore"):
            filled = get_app(str(app)).launch_dims(part["input_size"].to_numpy(dtype=float), **launch)
        for c, values in zip(dims, filled):
            q.loc[part.index, c] = values
    return q


def _check_launch(q: pd.DataFrame, where, get_board) -> None:
    """The launch each row will run (given or derived) respects CUDA's and the board's limits,
    and a described kernel's buffers (:meth:`perfml.apps.AppDescription.footprint_bytes`) fit
    in the board's memory (every measured run of the data home holds at most 0.97 of it)."""
    from perfml.apps import get_app

    dims = {c: np.full(len(q), np.nan) for c in ("block_x", "block_y", "grid_x", "grid_y")}
    footprint = np.full(len(q), np.nan)  # bytes of the described kernels' buffers (sidecar [[args]])
    from perfml.apps import list_apps

    described = set(list_apps())
    for app, part in q.groupby("app_id", sort=False):
        launch = {c: part[c].to_numpy(dtype=float) for c in dims if c in part.columns}
        idx = q.index.get_indexer(part.index)
        if str(app) not in described:  # no description: the row's own launch (given or filled)
            for c in dims:
                v = launch.get(c, np.full(len(part), np.nan))
                dims[c][idx] = np.where(np.isfinite(v), v, 1.0) if c in ("block_y", "grid_y") else v
            for j, c in ((i, c) for i in idx for c in ("block_x", "grid_x")):
                if not np.isfinite(dims[c][j]):
                    at = where(j) if callable(where) else f"{where}: row {j + 1} (line {j + 2})"
                    raise QueryValidationError(
                        f"{at}, column {c}: kernel {app!r} has no description and no measured run of this input_size "
                        "(and input_size_2) gives its launch; add block_x, block_y, grid_x, grid_y to the row"
                    )
            continue
        description = get_app(str(app))
        with np.errstate(all="ignore"):
            n = part["input_size"].to_numpy(dtype=float)
            bx, by, gx, gy = description.launch_dims(n, **launch)
            footprint[idx] = description.footprint_bytes(n, block_x=bx, block_y=by, grid_x=gx, grid_y=gy)
        for c, v in zip(dims, (bx, by, gx, gy)):
            dims[c][idx] = v
    bz = q["block_z"].fillna(1).to_numpy(dtype=float) if "block_z" in q.columns else np.ones(len(q))
    # the limits of each row's board, looked up once per board (a loop over the rows took most of
    # the time of a file of many rows); the first row over a limit is then checked alone, for its message
    codes, names = pd.factorize(q["board"].to_numpy(dtype=object))
    boards = [get_board(name) for name in names]

    def per_row(figure) -> np.ndarray:
        return np.asarray([figure(board) for board in boards], dtype=float)[codes]

    highs = {"block_x": 1024, "block_y": 1024, "grid_y": 65535,
             "grid_x": per_row(lambda b: MAX_GRID_X_BEFORE_CC3 if _cc(b) < 3.0 else MAX_GRID["grid_x"])}
    bad = np.zeros(len(q), dtype=bool)
    with np.errstate(invalid="ignore"):
        for c, high in highs.items():
            bad |= ~(np.isfinite(dims[c]) & (dims[c] >= 1) & (dims[c] <= high))
        bad |= dims["block_x"] * dims["block_y"] * bz > per_row(lambda b: b.max_threads_per_block or 1024)
        bad |= footprint > per_row(lambda b: float(b.global_mem_bytes or np.nan))
    for i in np.flatnonzero(bad):
        _check_launch_row(q, int(i), dims, bz[i], footprint[i], boards[codes[i]], where)


def _check_launch_row(q: pd.DataFrame, i: int, dims: dict, bz: float, footprint: float, board, where) -> None:
    """:func:`_check_launch` of row ``i``: raise naming the first limit it is over."""
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
    threads = dims["block_x"][i] * dims["block_y"][i] * bz
    limit = board.max_threads_per_block or 1024
    if threads > limit:
        raise _row_error(where, i, "block_x*block_y*block_z", int(threads),
                         f"{board.name} allows at most {limit} threads per block",
                         "choose a smaller block")
    memory = float(board.global_mem_bytes or np.nan)
    if footprint > memory:  # its buffers cannot be allocated there: no run, no prediction
        raise _row_error(where, i, "input_size", q["input_size"].iloc[i],
                         f"the buffers of kernel {q['app_id'].iloc[i]!r} for this size hold "
                         f"{footprint / 2**30:,.1f} GiB (its sidecar's [[args]]), more than the "
                         f"{memory / 2**30:,.1f} GiB of {board.name}: it cannot run there",
                         "choose a smaller input_size or a board with more memory")


def _infer(column: pd.Series) -> pd.Series:
    if column.dtype != object and not pd.api.types.is_string_dtype(column):  # pandas 3 reads text as "str"
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
    """Flag rows whose input size, or launch, lies outside the app's training range.

    Returns the boolean ``extrapolated`` column and the ``extrapolation`` reasons ("" when
    within range). A model that records no ranges flags every row. The launch (threads
    per block, blocks) is checked where the row has one and the model recorded the app's
    launches (models saved before they were recorded check the size only).
    """
    from perfml.learned.persistence import launch_extent

    ranges = (training or {}).get("input_size") or {}
    launches = (training or {}).get("launch") or {}
    extent = launch_extent(_completed_launches(q)).to_numpy(dtype=float)
    sizes = pd.to_numeric(q["input_size"], errors="coerce").to_numpy(dtype=float)
    flags = np.zeros(len(q), dtype=bool)
    reasons = [""] * len(q)
    # per kernel, the comparisons as arrays; a reason is written for the flagged rows only (a query
    # file of many rows went through a Python loop over every row)
    codes, kernels = pd.factorize(q["app_id"], use_na_sentinel=False)
    for j, app in enumerate(kernels):
        pos = np.flatnonzero(codes == j)
        rng = ranges.get(str(app))
        if rng is None:
            flags[pos] = True
            for i in pos:
                reasons[i] = f"the model records no training range for app {app}"
            continue
        lo, hi = _num(rng[0]), _num(rng[1])
        n = sizes[pos]
        below, above = n < lo, n > hi
        checks = []  # per launch extent the app's recorded range has: (k, name, range, rows outside it)
        for k, name in enumerate(("threads_per_block", "blocks")):
            seen = (launches.get(str(app)) or {}).get(name)
            if seen is not None:
                v = extent[pos, k]
                checks.append((k, name, seen, np.isfinite(v) & ~((seen[0] <= v) & (v <= seen[1]))))
        hit = below | above
        for *_, outside in checks:
            hit = hit | outside
        for r in np.flatnonzero(hit):
            i = pos[r]
            why = []
            if below[r]:
                why.append(f"input_size below the training range [{lo}, {hi}] of app {app}")
            elif above[r]:
                why.append(f"input_size above the training range [{lo}, {hi}] of app {app}")
            for k, name, seen, outside in checks:
                if outside[r]:
                    v = extent[i, k]
                    side = "below" if v < seen[0] else "above"
                    why.append(f"{_num(v)} {name.replace('_', ' ')} {side} the training range "
                               f"[{_num(seen[0])}, {_num(seen[1])}] of app {app}")
            flags[i] = True
            reasons[i] = "; ".join(why)
    return flags, reasons


def unmeasured_launches(q: pd.DataFrame, runs: pd.DataFrame | None) -> list[str]:
    """Per row, why its block shape is one no training board measured for its app ("" when measured).

    A run no training board measured is carried from the app's *nearest* measured run
    (:class:`~perfml.learned.features.closed_form.ClosedFormFeatures`), and no feature models
    what a block shape changes (occupancy, coalescing, cache reuse): with each block size held
    out of every training board in turn, the nine apps' MAPE on unseen boards rose from 10.75 %
    to 32.63 % (the transfer baseline) and from 10.77 % to 48.85 % (with the learned residual;
    ``experiments/results/unseen_launches.txt``, the recording at f2e026b). Such a row is answered by the transfer
    baseline alone (the residual is not added: :meth:`RuntimeRegressor._row_shrinkage
    <perfml.learned.regressors.RuntimeRegressor._row_shrinkage>`), flagged, like a
    size beyond the training range, and given the interval of such rows: the model's
    unmeasured-launch calibration where it has one (:mod:`perfml.learned.intervals`; the
    described sub-model's 90 % interval covers 89.3 % of held-out-board rows at a held-out
    block size, ``experiments/results/train_default.txt``), else twice the log half-width
    (which covered 74.01 % of them, ``experiments/results/unseen_launch_coverage.txt``, the
    recording at 70b8960). ``runs``: the model's training
    runs (its closed-form group's ``transfer_`` table: app, sizes, block and grid per board);
    None (a model without them) flags nothing. A row without a block (a described app's
    default launch) or of an app the runs do not hold is not judged here.
    """
    from perfml.learned.launches import unmeasured_rows

    out = [""] * len(q)
    flagged, mine, seen = unmeasured_rows(q, runs)
    if not len(flagged):  # also a model without training runs (runs None): nothing flagged
        return out
    said: dict = {}  # one message per distinct (app, block): a large query file repeats them
    for i, key in zip(flagged, mine.iloc[flagged].itertuples(index=False, name=None)):
        if key not in said:
            app, x, y = key
            listed = seen[seen["app_id"] == app].sort_values(["block_x", "block_y"]).head(8)
            shown = ", ".join(f"{_num(a)}x{_num(b)}" for a, b in zip(listed["block_x"], listed["block_y"]))
            said[key] = (f"block {_num(x)}x{_num(y)} of app {app} was measured on no training board "
                         f"(measured: {shown}): its time is carried from the nearest launch, and launch effects "
                         "(occupancy, coalescing) are not modelled")
        out[i] = said[key]
    return out


def _with_unmeasured_launches(q, model, reasons):
    """``reasons`` of :func:`extrapolation` joined with those of :func:`unmeasured_launches`, and the rows it flags."""
    runs = getattr(getattr(model, "features_", None), "transfer_", None)
    why = unmeasured_launches(q, runs)
    launch = np.array([bool(w) for w in why], dtype=bool)
    reasons = ["; ".join(x for x in (r, w) if x) for r, w in zip(reasons, why)]
    return reasons, launch


REFERENCE_REQUIRED = ("board", "app_id", "input_size", "time_ms")
#: columns that identify a kernel run besides the board
_RUN_COLUMNS = ("app_id", "input_size", "input_size_2")


def read_reference(path) -> pd.DataFrame:
    """Read and check a ``--reference`` CSV: the user's own measurements (query columns + ``time_ms``).

    Every row needs ``board`` (in the registry), ``app_id``, ``input_size`` (a positive
    integer) and ``time_ms`` (a finite positive time); launch columns are optional integers
    within CUDA's limits; other columns are ignored.

    Raises
    ------
    ReferenceValidationError
        Naming the file, row, column, value and fix.
    """
    return check_reference(read_query_csv(path, "reference file"), f"--reference {path}")


def check_reference(frame: pd.DataFrame, where) -> pd.DataFrame:
    """Check reference rows (as read by :func:`read_query_csv`); see :func:`read_reference`.

    ``where`` is the file name (rows are numbered) or a callable naming a 0-based row.
    """
    from perfml.boards import resolve_board_name
    from perfml.errors import ReferenceValidationError

    missing = [c for c in REFERENCE_REQUIRED if c not in frame.columns]
    if missing:
        raise ReferenceValidationError(f"{where}: missing column(s) {', '.join(missing)}; a reference needs "
                                       f"{', '.join(REFERENCE_REQUIRED)} (your measured kernel time in ms)")
    if len(frame) == 0:
        raise ReferenceValidationError(f"{where}: no rows; add at least one measurement under the header")

    def err(i, column, value, problem, fix):
        return ReferenceValidationError(f"{_at(where, i)}, column {column}: {problem}, found {_num(value)!r}; {fix}")

    ref = pd.DataFrame(index=frame.index)
    boards = []
    for i, name in enumerate(frame["board"]):
        try:
            boards.append(resolve_board_name(str(name).strip()))
        except PerfmlError as exc:
            raise err(i, "board", name, "the board is not in the registry",
                      f"use a board of `perfml boards list` or add yours to the registry ({exc})") from None
    ref["board"] = boards
    ref["app_id"] = [str(a).strip() for a in frame["app_id"]]
    for i, a in enumerate(ref["app_id"]):
        if not a:
            raise err(i, "app_id", a, "a kernel name is required", "name the kernel as in your queries")
    try:
        for column, values in checked_sizes(frame, where, launch_fix="leave the cell empty if unknown").items():
            ref[column] = values
    except QueryValidationError as exc:
        raise ReferenceValidationError(str(exc)) from None
    from perfml.characterize.limits import (
        BAD_MEASURED_TIME,
        first_bad_measured_time,
        first_unphysical_time,
        unphysical_time_message,
    )

    text = frame["time_ms"].astype(str).str.strip()
    times = pd.to_numeric(text.where(text != "", None), errors="coerce").to_numpy(dtype=float)
    i = first_bad_measured_time(times)
    if i is not None:
        raise err(i, "time_ms", frame["time_ms"].iloc[i], BAD_MEASURED_TIME, "give the kernel's measured time in milliseconds")
    ref["time_ms"] = times
    ref = ref.reset_index(drop=True)
    # A time faster than the row's work allows on its board (described kernels: work known)

    bound = roofline_bound_ms(ref)
    i = first_unphysical_time(ref["time_ms"].to_numpy(dtype=float), bound)
    if i is not None:
        raise ReferenceValidationError(f"{_at(where, i)}, column time_ms: "
                                       f"{unphysical_time_message(ref['time_ms'].iloc[i], bound[i], ref['board'].iloc[i])}")
    return ref


def _same_run(a: pd.DataFrame, b_row) -> np.ndarray:
    """Rows of ``a`` with the app, input size (and second size) of ``b_row``."""
    mask = (a["app_id"].to_numpy() == b_row["app_id"]) & (a["input_size"].to_numpy(dtype=float) == float(b_row["input_size"]))
    if "input_size_2" in a.columns:
        other = b_row.get("input_size_2", np.nan)
        other = 0.0 if other is None or not np.isfinite(float(other)) else float(other)
        mask &= np.nan_to_num(a["input_size_2"].to_numpy(dtype=float), nan=0.0) == other
    return mask


def launches_agree(ref: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Per row of ``ref`` (rows x launch columns, NaN where not given): does it agree with the
    query's launch ``query`` (one value per column) on every column both give?

    The one rule of a reference's launch (application and operator rows alike): a reference
    may hold several launches of one run (the same kernel and size at several block sizes),
    a query is answered from the rows of its own launch, and a column left empty on either
    side constrains nothing.
    """
    ref = np.asarray(ref, dtype=float)  # 2-D, also with no launch column: (rows, 0) agrees everywhere
    query = np.asarray(query, dtype=float)
    return np.all(~np.isfinite(ref) | ~np.isfinite(query) | (ref == query), axis=1)


def launch_agrees(a: pd.DataFrame, b_row) -> np.ndarray:
    """Rows of ``a`` whose launch agrees with ``b_row``'s (:func:`launches_agree`)."""
    cols = [c for c in LAUNCH_COLUMNS if c in a.columns and c in b_row.index]
    query = pd.to_numeric(b_row[cols], errors="coerce").to_numpy(dtype=float)
    return launches_agree(a[cols].to_numpy(dtype=float), query)


class _LaunchFiller:
    """The ``launch_fill(q)`` of :func:`check_queries`: fill the undescribed kernels' missing launch.

    The launch comes from the reference rows of the same run (a reference and a query that
    both give a launch must agree, and a query without one whose reference measured the run
    at several launches is refused: :class:`~perfml.errors.ReferenceValidationError`), else
    from the training runs of the same (app, input size) whose launch agrees with the
    query's given cells (several such launches are refused the same way:
    :class:`~perfml.errors.QueryValidationError`; Rodinia's ``lud_perimeter`` ran at up to
    511 grids per size, the slowest up to 12x the fastest on one board,
    experiments/results/launches_per_run.txt, and a query without its grid was answered at
    whichever launch came first), else,
    for a kernel the reference measured at this size, the nominal launch
    (:data:`NOMINAL_BLOCK` threads per block, one thread per element): the launch is
    optional in a query (issue 10 §2), and the reference answer is a ratio between two
    boards of the same run, which the launch moves little. The rows given the nominal
    launch are listed in :attr:`nominal_rows` (positions in the query frame).
    """

    DIMS = ("block_x", "block_y", "grid_x", "grid_y")

    def __init__(self, model, reference: pd.DataFrame | None, where, ref_where):
        from perfml.apps import list_apps

        self.described = set(list_apps())
        self.runs = getattr(getattr(model, "features_", None), "transfer_", None)
        self.reference = reference
        self.where = where
        self.ref_where = ref_where
        #: positions (in the query frame) of the rows given the nominal launch
        self.nominal_rows: list[int] = []

    def __call__(self, q: pd.DataFrame) -> None:
        reference, dims = self.reference, self.DIMS
        for c in dims:
            if c not in q.columns:
                q[c] = np.nan
        undescribed = ~q["app_id"].isin(self.described).to_numpy()
        no_launch = ~(np.isfinite(q["block_x"].to_numpy(dtype=float)) & np.isfinite(q["grid_x"].to_numpy(dtype=float)))
        in_reference = q["app_id"].isin(set(reference["app_id"])).to_numpy() if reference is not None else False
        for i in np.flatnonzero((undescribed & no_launch) | in_reference):
            row = q.iloc[i]
            hits = reference[_same_run(reference, row)] if reference is not None else None
            if hits is not None:
                hits = self._same_launch(hits, row, i)
            if str(row["app_id"]) in self.described or np.isfinite(row["block_x"]) and np.isfinite(row["grid_x"]):
                continue
            source = None
            if hits is not None and len(hits) and all(c in hits.columns for c in ("block_x", "grid_x")) \
                    and hits["block_x"].notna().any():
                source = hits.dropna(subset=["block_x", "grid_x"])
                self._one_launch(source, row, i)
            if (source is None or not len(source)) and self.runs is not None:
                source = self._training_launch(self.runs[_same_run(self.runs, row)], row, i)
            if source is None or not len(source):
                if hits is not None and len(hits):
                    _fill_nominal(q, i)
                    self.nominal_rows.append(i)
                continue  # else _check_launch names the row and the fix
            launch = source[[c for c in dims if c in source.columns]].fillna(1.0).iloc[0]
            for c, v in zip([c for c in dims if c in source.columns], launch):
                if not np.isfinite(q.iat[i, q.columns.get_loc(c)]):
                    q.iat[i, q.columns.get_loc(c)] = float(v)

    def _one_launch(self, source: pd.DataFrame, row, i: int) -> None:
        """Refuse a query without a launch whose reference measured the run at several launches.

        Which of the user's launches the query means cannot be guessed: taking the first
        row's made the prediction depend on the order of the reference file.
        """
        from perfml.errors import ReferenceValidationError

        launches = self._launches(source)
        if launches is None:
            return
        raise ReferenceValidationError(
            f"{_at(self.where, i)}: the query gives no launch for kernel {row['app_id']} at input_size "
            f"{_num(row['input_size'])}, and {self.ref_where} measured that run at {launches} "
            f"(first at {_at(self.ref_where, int(source.index[0]))}); add block_x, block_y, "
            "grid_x, grid_y to the query row to say which launch it asks for"
        )

    def _launches(self, source: pd.DataFrame) -> str | None:
        """``"N launches (block_x = .., ...; ... and K more)"`` of the rows of ``source``, or None for one launch."""
        cols = [c for c in self.DIMS if c in source.columns]
        launches = source[cols].fillna(1.0).drop_duplicates()
        if len(launches) < 2:
            return None
        shown = "; ".join(", ".join(f"{c} = {_num(v)}" for c, v in zip(cols, launch))
                          for launch in launches.head(3).itertuples(index=False))
        more = f" and {len(launches) - 3} more" if len(launches) > 3 else ""
        return f"{len(launches)} launches ({shown}{more})"

    def _training_launch(self, runs: pd.DataFrame, row, i: int) -> pd.DataFrame:
        """The training runs of the query's run (``runs``) whose launch agrees with the query's
        given cells (:func:`launch_agrees`; all of them if none agrees: that launch is then
        unmeasured, and flagged so by :func:`unmeasured_launches`).

        Raises :class:`~perfml.errors.QueryValidationError` when they hold several launches:
        which one the query asks for cannot be guessed, as for a reference (:meth:`_one_launch`).
        """
        agree = runs[launch_agrees(runs, row)] if len(runs) else runs
        source = agree if len(agree) else runs
        launches = self._launches(source)
        if launches is None:
            return source
        given = [f"{c} = {_num(row[c])}" for c in self.DIMS if c in row.index and np.isfinite(row[c])]
        raise QueryValidationError(
            f"{_at(self.where, i)}: the query gives {'only ' + ', '.join(given) if given else 'no launch'} for kernel "
            f"{row['app_id']} at input_size {_num(row['input_size'])}, and the training boards measured that run at "
            f"{launches}; add block_x, block_y, grid_x, grid_y to the query row to say "
            "which launch it asks for"
        )

    def _same_launch(self, hits: pd.DataFrame, row, i: int) -> pd.DataFrame:
        """The reference rows of the run whose launch agrees with the query's (:func:`launch_agrees`).

        Raises :class:`~perfml.errors.ReferenceValidationError` when a board of the
        reference measured the run, but at none of the query's launch: its measurement
        cannot answer the query, and dropping it silently would hide that.
        """
        from perfml.errors import ReferenceValidationError

        agree = hits[launch_agrees(hits, row)]
        for board, part in hits.groupby("board", sort=False):
            if (agree["board"] == board).any():
                continue
            r = part.iloc[0]
            c = next(c for c in LAUNCH_COLUMNS if c in hits.columns and c in row.index and np.isfinite(r[c])
                     and np.isfinite(row[c]) and r[c] != row[c])
            raise ReferenceValidationError(
                f"{_at(self.ref_where, int(r.name))}, column {c}: the reference ran kernel "
                f"{row['app_id']} at input_size {_num(row['input_size'])} on {board} with {c} = {_num(r[c])} "
                f"({len(part)} row(s) of this run on that board, none at the query's launch) but "
                f"{_at(self.where, i)} asks for {c} = {_num(row[c])}; a reference predicts only the same "
                "launch: make the launches agree or measure the query's launch"
            )
        return agree


def _fill_nominal(q: pd.DataFrame, i: int) -> None:
    """Row ``i`` gets the nominal launch in the cells it leaves empty (:data:`NOMINAL_BLOCK`)."""
    n = float(q["input_size"].iloc[i])
    nominal = {"block_x": float(NOMINAL_BLOCK), "block_y": 1.0,
               "grid_x": float(min(max(1, math.ceil(n / NOMINAL_BLOCK)), MAX_GRID["grid_x"])), "grid_y": 1.0}
    for c, v in nominal.items():
        if not np.isfinite(q.iat[i, q.columns.get_loc(c)]):
            q.iat[i, q.columns.get_loc(c)] = v


def own_board_first(reference_boards, owners, query_boards) -> np.ndarray:
    """Mask of the (query row, reference row) pairs to use: for a query row whose board the
    reference measured, only the pairs of that board; for the others, every pair.

    ``reference_boards[k]`` is the board of pair k's reference row, ``owners[k]`` its query
    row (a position in ``query_boards``). The user's measurement of the run on the query's
    own board is the prediction (the model's ratio from a board to itself is 1); averaging
    it with the times carried from other boards moved it, by a factor of two with a
    reference 4x apart between two boards, and out of its own interval.
    """
    reference_boards = np.asarray(reference_boards, dtype=object)
    owners = np.asarray(owners, dtype=int)
    if not len(owners):
        return np.ones(0, dtype=bool)
    own = reference_boards == np.asarray(query_boards, dtype=object)[owners]
    has_own = np.bincount(owners[own], minlength=int(owners.max()) + 1) > 0
    return own | ~has_own[owners]


def measured_here(reference_boards, owners, query_boards) -> np.ndarray:
    """Per query row, whether one of its (query row, reference row) pairs is on its own board:
    the user measured the row's run on the row's board, and that measurement is the answer
    (:func:`own_board_first`; :func:`answered` does not raise it to the roofline bound)."""
    out = np.zeros(len(query_boards), dtype=bool)
    owners = np.asarray(owners, dtype=int)
    if len(owners):
        own = np.asarray(reference_boards, dtype=object) == np.asarray(query_boards, dtype=object)[owners]
        out[owners[own]] = True
    return out


def _reference_predictions(model, q: pd.DataFrame, pred: np.ndarray, reference: pd.DataFrame, known=(),
                           floor_at=None):
    """Per query row with a reference of the same run: the reference carried to the row's board, else NaN.

    ``T_q = exp(mean_r [log t_r + log M'(q) - log M'(q on board_r)])``, ``M' = max(M, floor)`` (NaN stays NaN),
    ``floor`` the call floor of the board the time is of (``floor_at(boards)``, :func:`call_floor_ms`;
    None: no floor) (no call is faster, so neither is a model time in the ratio; the
    ratio of two times below it is the ratio of two works a launch hides: an H100 vectorAdd
    of 131,072 elements carried to the GTX-980 came out 34x its measured time; not for a
    kernel outside ``known``, whose model times mean something only as a ratio), over the reference
    rows r of the same (app, input size) and launch (:func:`launch_agrees`; a launch the
    query leaves empty takes every launch of the run): the user's time scaled by the model's ratio
    between the two boards, the model being the transfer baseline plus the learned
    residual (:class:`~perfml.learned.regressors.RuntimeRegressor`), so the ratio is the
    closed-form (or cores x clock, bandwidth) ratio the transfer baseline uses. Where the
    reference measured the run on the row's own board, only those rows count
    (:func:`own_board_first`). ``known``: the kernels whose work the model knows (trained on or
    described); the others' intervals also span the boards' ratios (:func:`_unknown_work_alternatives`),
    and where ``reference`` carries the work a profile counted on the run
    (:data:`~perfml.learned.profile_import.PROFILED_WORK`, ``--profile``), such a kernel is carried
    by the geometric mean of the model's ratio and the ratio of that work's roofline
    (:func:`_with_profiled_roofline`).

    Returns the carried predictions and their spread (:func:`carried_references`), and per
    row whether it was carried by the profiled roofline, whether one of its references is
    on a board of its own architecture (:func:`~perfml.learned.board_range.carried_within_architecture`)
    and whether one is on its own board (:func:`measured_here`).
    """
    from perfml.learned.profile_import import PROFILED_WORK

    pairs, owners, times, work = [], [], [], []
    profiled = [c for c in PROFILED_WORK if c in reference.columns]
    for i in np.flatnonzero(q["app_id"].isin(set(reference["app_id"])).to_numpy()):
        row = q.iloc[i]
        hits = reference[_same_run(reference, row) & launch_agrees(reference, row)]
        hits = hits[own_board_first(hits["board"].to_numpy(), np.zeros(len(hits), dtype=int), [row["board"]])]
        for _, r in hits.iterrows():
            pairs.append(row.to_dict() | {"board": r["board"]})
            owners.append(i)
            times.append(r["time_ms"])
            work.append([r[c] if c in profiled else np.nan for c in PROFILED_WORK])
    if not pairs:
        nothing = np.zeros(len(q), dtype=bool)
        return (*carried_references(np.zeros(0, dtype=int), np.zeros(0), len(q)), nothing, nothing, nothing)
    moved = pd.DataFrame(pairs)
    with np.errstate(all="ignore"):
        at_ref = np.asarray(model.predict_transfer(moved), dtype=float)  # a ratio: any kernel
    owners = np.asarray(owners)
    unknown = ~q["app_id"].iloc[owners].isin(set(known)).to_numpy()
    # a kernel the model knows nothing of has model times that are only a ratio: no floor for them
    floor_q, floor_r = ((np.zeros(len(owners)),) * 2 if floor_at is None
                        else (floor_at(q["board"].iloc[owners]), floor_at(moved["board"])))
    floor_q, floor_r = np.where(unknown, 0.0, floor_q), np.where(unknown, 0.0, floor_r)
    logs = np.log(np.asarray(times)) + np.log(np.maximum(pred[owners], floor_q)) - np.log(np.maximum(at_ref, floor_r))
    alternatives = _unknown_work_alternatives(model, q, moved, owners, times, unknown)
    logs, alternatives, by_profile = _with_profiled_roofline(model, q, moved, owners, times,
                                                             np.asarray(work, dtype=float), unknown, logs, alternatives)
    profiled = np.zeros(len(q), dtype=bool)
    profiled[owners[by_profile]] = True
    within = carried_within_architecture(len(q), owners, q["board"].to_numpy(), moved["board"].to_numpy(),
                                         getattr(model, "registry", None))
    here = measured_here(moved["board"].to_numpy(), owners, q["board"].to_numpy())
    return (*carried_references(owners, logs, len(q), alternatives=alternatives), profiled, within, here)


def _with_profiled_roofline(model, q: pd.DataFrame, moved: pd.DataFrame, owners: np.ndarray, times, work: np.ndarray,
                            unknown: np.ndarray, logs: np.ndarray,
                            alternatives: tuple) -> tuple[np.ndarray, tuple, np.ndarray]:
    """For the reference pairs of a kernel whose work is unknown to the model but was profiled (``--profile``):
    the carried time is the geometric mean of the model's carry and the carry by the profiled roofline.

    The profiled roofline (:func:`perfml.closed_form.roofline.profiled_roofline_ratio`: the
    reference run's FP32 and FP64 FLOPs, DRAM bytes and warp instructions against each board's
    peaks, the roofs both boards have) says by which ratio the kernel's own work moves
    between the two boards; the model's ratio is what kernels of the training boards did. Neither is known to be the
    better one for a kernel no training row describes: alone, each misses where the other
    holds (the model does not know that a kernel streams; the roofline carries it by the
    full bandwidth ratio, which a kernel below its bandwidth roof does not reach, and carries
    a compute- or latency-bound kernel by peaks it does not reach either). Measured, pooled,
    the geometric mean misses less than either: the nine apps as own kernels on the
    2012-2016 boards 24.69 % MAPE against 25.22 % (model) and 28.82 % (roofline), median
    13.74 against 14.92 and 14.54 % (``experiments/profile_roofline_own_kernels.py``); on
    the Hopper boards 7.64 and 7.60 % against 10.38 and 8.17 % (model)
    (``experiments/profile_own_kernels_check.py``). It gains on the streaming kernels and
    loses on the compute- and latency-bound ones (matMul, subSeqMax). Both carries also
    enter the row's spread (its interval holds each). ``work``: per pair, the
    :data:`~perfml.learned.profile_import.PROFILED_WORK` of its reference row (NaN where the
    profile gave none). Returns ``(logs, alternatives, used)``, ``used`` marking the pairs
    the profiled roofline carried.
    """
    from perfml.closed_form.roofline import profiled_roofline_ratio

    use = unknown & np.isfinite(work).any(axis=1)
    if not use.any():
        return logs, alternatives, np.zeros(len(logs), dtype=bool)
    pick = np.flatnonzero(use)
    ratio = profiled_roofline_ratio(q["board"].iloc[owners[pick]].to_numpy(), moved["board"].iloc[pick].to_numpy(),
                                    *(work[pick, k] for k in range(work.shape[1])), registry=getattr(model, "registry", None))
    with np.errstate(all="ignore"):
        roof = np.log(np.asarray(times, dtype=float)[pick]) + np.log(ratio)
    ok = np.isfinite(roof)
    pick, roof = pick[ok], roof[ok]
    logs = logs.copy()
    model_logs = logs[pick]
    logs[pick] = 0.5 * (model_logs + roof)
    alt_owners, alt_logs = alternatives
    alternatives = (np.concatenate([np.asarray(alt_owners, dtype=int), owners[pick], owners[pick]]),
                    np.concatenate([np.asarray(alt_logs, dtype=float), model_logs, roof]))
    used = np.zeros(len(logs), dtype=bool)
    used[pick] = True
    return logs, alternatives, used


def _unknown_work_alternatives(model, q: pd.DataFrame, moved: pd.DataFrame, owners: np.ndarray, times,
                               unknown: np.ndarray) -> tuple:
    """For the reference pairs of a kernel whose work is unknown, the reference time carried by
    the ratio of the boards' DRAM bandwidths and by the ratio of their FP32 rates.

    A kernel known only from ``--reference`` (neither trained on nor described) may be
    compute- or memory-bound; the model carries it by one ratio, and its calibrated interval
    (made on kernels whose boundness the training boards showed) does not hold the other: a
    memory-bound kernel measured on the GTX-980 came out 0.75 ms [0.53, 1.06] on an L4, whose
    bandwidth alone takes 2.5 ms for its bytes. ``unknown`` marks the pairs of such kernels.
    Returns ``(owners, logs)`` of both
    alternatives, which :func:`carried_references` adds to the row's spread only (the
    prediction stays the model's).
    """
    from perfml.learned.features._common import board_peaks

    if not unknown.any():
        return np.zeros(0, dtype=int), np.zeros(0)
    registry = getattr(model, "registry", None)
    at_query = board_peaks(q["board"].iloc[owners].reset_index(drop=True), registry).to_numpy(dtype=float)
    at_ref = board_peaks(moved["board"].reset_index(drop=True), registry).to_numpy(dtype=float)
    base = np.log(np.asarray(times, dtype=float))
    with np.errstate(all="ignore"):
        ratios = np.log(at_ref) - np.log(at_query)  # columns: compute, bandwidth
    alt_owners = np.concatenate([owners[unknown], owners[unknown]])
    alt_logs = np.concatenate([base[unknown] + ratios[unknown, 0], base[unknown] + ratios[unknown, 1]])
    keep = np.isfinite(alt_logs)
    return alt_owners[keep], alt_logs[keep]


def carried_references(owners, logs, n: int, *, alternatives=None) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Per query row, the geometric mean of its carried reference times, and their spread.

    ``owners[k]`` is the query row of carried log time ``logs[k]``. Returns ``(pred, (lo,
    hi))``: ``pred`` the mean in log space (NaN for a row without reference), ``lo`` and
    ``hi`` the smallest and largest carried time over ``pred`` (1 for a row with one
    reference or none). :func:`answered` widens the row's interval by them, so that it holds
    the interval of every reference time carried to the row: two repeats of a run 10x apart,
    or two boards whose times the model carries to 4x apart, are a disagreement the calibrated
    width (made for one reference) does not know about; it covered neither of them.
    ``alternatives``: more ``(owners, logs)`` that widen the spread without moving the mean
    (:func:`_unknown_work_alternatives`).
    """
    owners = np.asarray(owners, dtype=int)
    logs = np.asarray(logs, dtype=float)
    pred, lo, hi = np.full(n, np.nan), np.ones(n), np.ones(n)
    if len(owners):
        mean = pd.DataFrame({"row": owners, "log": logs}).groupby("row")["log"].mean()
        if alternatives is not None and len(alternatives[0]):
            owners = np.concatenate([owners, np.asarray(alternatives[0], dtype=int)])
            logs = np.concatenate([logs, np.asarray(alternatives[1], dtype=float)])
        frame = pd.DataFrame({"row": owners, "log": logs}).groupby("row")["log"]
        low, high = frame.min().reindex(mean.index), frame.max().reindex(mean.index)
        rows = mean.index.to_numpy(dtype=int)
        pred[rows] = np.exp(mean.to_numpy())
        with np.errstate(invalid="ignore", over="ignore"):
            lo[rows] = np.where(np.isfinite(low - mean), np.exp(np.minimum((low - mean).to_numpy(), 0.0)), 1.0)
            hi[rows] = np.where(np.isfinite(high - mean), np.exp(np.maximum((high - mean).to_numpy(), 0.0)), 1.0)
    return pred, (lo, hi)


@checks_frames_once
def predict_queries(model, original: pd.DataFrame, where, *, reference: pd.DataFrame | None = None,
                    reference_where: str = "--reference", level: float = 0.90) -> pd.DataFrame:
    """The queries as given plus the prediction, its interval, its basis and flags.

    Added columns (:data:`OUTPUT_COLUMNS`): ``predicted_ms``; ``lower_ms`` / ``upper_ms``
    (the ``level`` conformal interval of :mod:`perfml.learned.intervals`, empty when the
    model stores no calibration); ``basis``, what the prediction rests on, first that
    applies: ``reference`` (the user's measurement of the same run on another board,
    scaled by the model's board ratio), ``reference+profile`` (the same, for a kernel the
    model knows nothing of whose reference run carries the work a profile counted: scaled by
    the geometric mean of the model's ratio and the profiled roofline's), ``measured`` (the
    row's board is a training board that ran this very run: its measured time,
    :func:`measured_on_board`), ``training-boards`` (the kernel was measured on the training
    boards), ``description`` (only the kernel description); ``clamped_to_bound``
    (the prediction was below the roofline lower bound of the row's work and was raised
    to it: a prediction never beats the board's peaks); ``extrapolated`` / ``extrapolation``.

    Raises
    ------
    QueryValidationError
        A row fails :func:`check_queries`, or its prediction is not finite and positive.
    UnsupportedQueryError
        A row's kernel has no reference, no training measurement and no description.
    ReferenceValidationError
        A reference row disagrees with a query on the launch.
    """
    refuse_a_bundle(model, "predict_queries", "described")
    from perfml.apps import list_apps
    from perfml.learned.intervals import check_level

    level = check_level(level)
    meta = getattr(model, "metadata_", {}) or {}
    apps = ((meta.get("training") or {}).get("apps") or (meta.get("features") or {}).get("apps")
            or getattr(model.features_, "apps_", None))
    ref_apps = set(reference["app_id"]) if reference is not None else set()
    filler = _LaunchFiller(model, reference, where, reference_where)
    described = set(list_apps())
    # before the launch is filled from the kernel's runs, which such a size misses
    _refuse_a_second_size_the_kernel_lacks(model, original, where, described, ref_apps)
    _refuse_a_missing_second_size(model, original, where, ref_apps)
    q = check_queries(original, where, apps=apps, reference_apps=ref_apps, launch_fill=filler)
    trained = set(map(str, apps or ()))
    own_run = measured_on_board(model, q)
    # a kernel known only from the reference is answered below by carrying its measurement (this
    # prediction enters that as a ratio between boards), or refused; a kernel of the reference may
    # be answered by it before its own board's measurement, so its rows are predicted
    pred = unless_measured(model.predict_transfer, q, own_run, q["app_id"].isin(ref_apps).to_numpy())
    basis = np.array(["training-boards" if a in trained else "description" for a in q["app_id"]], dtype=object)
    registry = getattr(model, "registry", None)

    def floor_at(boards):  # the call floor per row of these boards (a reference lowers its own boards' only)
        return call_floor_ms(meta.get("training"), reference, boards, registry)

    within = np.zeros(len(q), dtype=bool)  # carried from a reference on a board of the row's architecture
    here = np.zeros(len(q), dtype=bool)  # answered by a reference measured on the row's own board
    if reference is not None:
        scaled, spread, profiled, within, here = _reference_predictions(model, q, pred, reference,
                                                                        known=trained | described, floor_at=floor_at)
        has = np.isfinite(scaled)
        pred = np.where(has, scaled, pred)
        basis[has] = "reference"
        basis[has & profiled] = "reference+profile"
    pred = take_measured(pred, basis, own_run)
    for i in np.flatnonzero(~(np.isfinite(pred) & (pred > 0))):
        # a board without the figures every prediction rests on: said first, as it is the cause
        # whatever the row's kernel (a reference carried there is NaN too)
        lacking = missing_board_figure(q["board"].iloc[i], getattr(model, "registry", None))
        if lacking:
            raise QueryValidationError(f"{_at(where, int(i))}: no prediction on board {q['board'].iloc[i]}: the "
                                       f"closed-form times under the model need a figure its entry lacks: {lacking}")
    unknown = np.flatnonzero(~q["app_id"].isin(trained | described).to_numpy() & ~np.isin(basis, REFERENCE_BASES))
    if unknown.size:  # a kernel known only from the reference, at a size it does not measure
        from perfml.errors import UnsupportedQueryError

        i = int(unknown[0])
        raise UnsupportedQueryError(
            f"{_at(where, i)}, column input_size: kernel {q['app_id'].iloc[i]!r} is known only from "
            f"{reference_where}, which has no measurement at input_size {_num(q['input_size'].iloc[i])}; "
            "add a reference measurement of this size"
        )
    bad = np.flatnonzero(~(np.isfinite(pred) & (pred > 0)))
    if bad.size:
        i = int(bad[0])
        raise QueryValidationError(
            f"{_at(where, i)}: the prediction is {_num(pred[i])!r} ms, not a finite positive time "
            f"(board {q['board'].iloc[i]}, app {q['app_id'].iloc[i]}, input_size {_num(q['input_size'].iloc[i])}); "
            "the query is too far outside the training data: choose a size nearer the training range"
        )
    flags, reasons = extrapolation(q, meta.get("training"))
    reasons, launch = _with_unmeasured_launches(q, model, reasons)
    bound, moved = roofline_bound_and_bytes(q, registry)
    on_board = board_range_flags(q["board"], (meta.get("training") or {}).get("boards"), registry)
    beyond = beyond_dram_flags(q, moved, pred, bound, (basis == "measured") | here, registry)
    on_board = (np.asarray(on_board[0], dtype=bool) | beyond[0],
                ["; ".join(x for x in (w, b) if x) for w, b in zip(on_board[1], beyond[1])])
    if filler.nominal_rows:  # flagged whatever the basis, like a board beyond the training boards
        nominal = np.zeros(len(q), dtype=bool)
        nominal[filler.nominal_rows] = True
        on_board = (np.asarray(on_board[0], dtype=bool) | nominal,
                    ["; ".join(x for x in (w, NOMINAL_LAUNCH_NOTE if f else "") if x)
                     for w, f in zip(on_board[1], nominal)])
    return answered(original, pred, basis, flags, reasons, bound, meta.get("intervals"), level, app_ids=q["app_id"],
                    board_flags=on_board, spread=spread if reference is not None else None,
                    floor_ms=target_call_floor_ms(floor_at(q["board"]), model, q["board"]), launch_flags=launch,
                    measured_here=here,
                    architecture_flags=unseen_architecture_flags(q["board"], (meta.get("training") or {}).get("boards"),
                                                                 registry, carried_within=within & np.isin(basis, REFERENCE_BASES)))


def _runs_second_sizes(model) -> tuple[pd.Series, np.ndarray] | None:
    """Per training run of the model (its transfer table): the kernel and its second size (0 where
    it has none); None for a model whose runs have no ``input_size_2``."""
    table = getattr(getattr(model, "features_", None), "transfer_", None)
    if table is None or "input_size_2" not in table.columns:
        return None
    return table["app_id"].astype(str), np.nan_to_num(table["input_size_2"].to_numpy(dtype=float), nan=0.0)


def _refuse_a_missing_second_size(model, original: pd.DataFrame, where, ref_apps) -> None:
    """Refuse a row that leaves ``input_size_2`` empty (or 0) for a kernel every training run of which gives one.

    Rodinia's ``calculate_temp`` (hotspot; its second size is the pyramid height) ran with
    one on every training board. Without it the row was no run the model knows, and the
    answer was the model's guess at a second size of none: 1.00 ms on the GTX-980 and 0.69 ms on
    the GTX-680 for 1024, where every measured second size gives 0.77-0.81 and 0.98-1.04 ms, the
    boards' order reversed. A kernel of the ``--reference`` is left to it: its measurements say.
    """
    runs = _runs_second_sizes(model)
    if runs is None or "app_id" not in original.columns:
        return
    apps, second = runs
    takes = second != 0
    # unique() first: a set of the training table's column iterates its every cell (tens of ms a query)
    needs = set(apps[takes].unique()) - set(apps[~takes].unique()) - set(map(str, ref_apps))
    if not needs:
        return
    if "input_size_2" in original.columns:  # empty or 0 (a value that is not a number is refused by check_queries)
        text = original["input_size_2"].astype(str).str.strip()
        blank = ((text == "") | (pd.to_numeric(text, errors="coerce") == 0)).to_numpy()
    else:
        blank = np.ones(len(original), dtype=bool)
    rows = np.flatnonzero(original["app_id"].astype(str).str.strip().isin(needs).to_numpy() & blank)
    if rows.size:
        i = int(rows[0])
        app = str(original["app_id"].iloc[i]).strip()
        sizes = second[(apps == app).to_numpy()]
        value = original["input_size_2"].iloc[i] if "input_size_2" in original.columns else ""
        raise _row_error(where, i, "input_size_2", value,
                         f"kernel {app} takes a second size (every run of it on the training boards gives one, "
                         f"{_num(sizes.min())} to {_num(sizes.max())})",
                         "add input_size_2 to the row (or a --reference of the kernel measured without one)")


def _refuse_a_second_size_the_kernel_lacks(model, original: pd.DataFrame, where, described, ref_apps) -> None:
    """Refuse a row giving a second size (``input_size_2`` other than 0) for a kernel that has none.

    A kernel takes a second size when one of its training runs has one (Rodinia's
    ``calculate_temp``, hotspot's pyramid height); a description takes ``input_size``
    alone. Given anyway, the value only missed the kernel's runs on the training boards
    and moved the answer (vectorAdd of 1048576 on the GTX-980 with ``input_size_2`` 5 left
    its measured time for the other boards' transfer). A kernel of the ``--reference`` may
    take one: its measurements say.
    """
    if "input_size_2" not in original.columns or "app_id" not in original.columns:
        return
    # a value that is no whole number >= 0 is refused by check_queries, with its own message
    second = pd.to_numeric(original["input_size_2"].astype(str).str.strip(), errors="coerce").to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        rows = np.flatnonzero(np.isfinite(second) & (second > 0) & (second == np.floor(second))
                              & (second <= MAX_INPUT_SIZE) & ~above_exactly(original["input_size_2"], MAX_INPUT_SIZE))
    runs = _runs_second_sizes(model)
    if not len(rows) or runs is None:
        return
    apps, second = runs
    takes = set(apps[second != 0])
    known = set(apps) | set(described)
    for i in rows:
        app = str(original["app_id"].iloc[i]).strip()
        if app in known and app not in takes and app not in ref_apps:
            raise _row_error(where, i, "input_size_2", original["input_size_2"].iloc[i],
                             f"kernel {app} takes one size, input_size (no run of it on the training boards, and "
                             "no description of it, has a second size)",
                             "leave input_size_2 empty (or 0), or give a --reference of the kernel measured with it")


#: a note of :func:`beyond_dram_flags`
BEYOND_DRAM_NOTE = ("predicted at {share:.0%} of board {board}'s peak DRAM bandwidth ({bw:.4g} GB/s) for the {mb:.4g} MB "
                    "its kernel must move, at least {factor}x the board's {l2:.4g} MB L2: no measured run of a described "
                    "kernel streams a working set its L2 cannot hold that fast (the model carried the kernel by a rate "
                    "other than the bandwidth, as on the training boards they rose together): expect it slower than "
                    "{dram_ms:.4g} ms, its time at the full bandwidth")


def beyond_dram_flags(q: pd.DataFrame, moved_bytes: np.ndarray, pred_ms: np.ndarray, bound_ms: np.ndarray,
                      answered_by_measurement: np.ndarray, registry=None) -> tuple[np.ndarray, list[str]]:
    """``(flags, reasons)`` of the rows predicted faster than their board's DRAM streams their working set.

    For a described kernel whose compulsory DRAM traffic ``W`` (``moved_bytes``, NaN where
    unknown: the roofline's bytes, :func:`~perfml.closed_form.roofline.roofline_bound_and_bytes`) is at least
    :data:`~perfml.characterize.limits.L2_FACTOR` x the board's L2, the written time
    (``max(pred_ms, bound_ms)``, the prediction as :func:`answered` raises it) implies the share
    ``W / (t * peak_bw)`` of the datasheet DRAM bandwidth; a row above 1 is flagged. The
    roofline bound (:func:`~perfml.closed_form.roofline.roofline_bound_ms`) lets up to an L2 of
    the bytes come from a warm cache, as physics allows, so it lets such a row through; but no
    measured run does it (the largest share of the described kernels' runs of ``runtimes.csv``
    at such sizes is below 1, and a test holds it, as for this project's H100 and H200
    recordings). A kernel the spread rule of
    :func:`~perfml.learned.features.closed_form.baseline_choice` carries by the FP32 rate was so
    predicted on a board of far more FLOP per byte than the training boards (matrix_sum_normal on
    the L4 at 102 % of its bandwidth, a strided sum that stays well under it on every measured
    board). Rows answered by a measurement of their own run on their board
    (``answered_by_measurement``) are not flagged.
    """
    from perfml.boards import get_board, peak_bandwidth
    from perfml.characterize.limits import L2_FACTOR
    from perfml.errors import MissingBoardParameterError

    flags = np.zeros(len(q), dtype=bool)
    reasons = [""] * len(q)
    moved = np.asarray(moved_bytes, dtype=float)
    rows = np.flatnonzero(np.isfinite(moved) & ~np.asarray(answered_by_measurement, dtype=bool))
    if not rows.size:
        return flags, reasons
    moved = moved[rows]
    written = np.fmax(np.asarray(pred_ms, dtype=float)[rows], np.asarray(bound_ms, dtype=float)[rows])
    codes, names = pd.factorize(q["board"].iloc[rows].astype(str))
    figures = np.full((len(names), 2), np.nan)  # peak bandwidth (B/s), L2 (B): once per board
    for j, name in enumerate(names):
        board = get_board(name, registry=registry)
        try:
            figures[j] = peak_bandwidth(board), float(board.l2_bytes or 0.0)
        except MissingBoardParameterError:
            continue
    bw, l2 = figures[codes, 0], figures[codes, 1]
    board_names = list(names)  # indexing a pandas Index row by row cost 14 us a row
    with np.errstate(invalid="ignore", divide="ignore"):
        share = moved / (written * 1e-3 * bw)
        beyond = (l2 > 0) & (moved >= L2_FACTOR * l2) & (written > 0) & (share > 1.0)
    for k in np.flatnonzero(beyond):
        flags[rows[k]] = True
        reasons[rows[k]] = BEYOND_DRAM_NOTE.format(share=share[k], board=board_names[codes[k]], bw=bw[k] / 1e9,
                                                   mb=moved[k] / 1e6, factor=L2_FACTOR, l2=l2[k] / 1e6,
                                                   dram_ms=moved[k] / bw[k] * 1e3)
    return flags, reasons


def refuse_a_bundle(model, function: str, route: str) -> None:
    """Refuse a :class:`~perfml.learned.bundle.ModelBundle` (what ``load_predictor`` returns)
    where one sub-model is expected: it has no ``predict`` of its own, and the call failed
    with Python's ``AttributeError``."""
    if hasattr(model, "model_for") and hasattr(model, "models"):
        from perfml.errors import InvalidValueError

        raise InvalidValueError(
            f"{function}: got a model bundle (perfml.learned.bundle.load_predictor), which answers every kind of "
            "row through perfml.learned.bundle.predict_any(bundle, queries, where); or pass its sub-model, "
            f"bundle.model_for({route!r})"
        )


def measured_on_board(model, q: pd.DataFrame) -> np.ndarray:
    """Per query row, the time its own board took for its run in the model's training rows (ms),
    NaN where it has none (:meth:`~perfml.learned.regressors.RuntimeRegressor.measured_ms`).

    :func:`predict_queries` answers such a row with it (``basis`` ``measured``): the model's
    features of a training board leave that board out, as for a board never seen, and so
    missed its own measurements (the nine applications' rows of ``models/default`` on its
    training boards, scored against their own runs: ``experiments/measured_runs.py``). Not
    on the board of a ``--calibration`` / ``--characterization``: the calibrated tier takes
    nothing of its target board but that file.
    """
    times = model.measured_ms(q) if hasattr(model, "measured_ms") else np.full(len(q), np.nan)  # a wrapper without it: none
    target = getattr(getattr(model, "characterizations", None), "target", None)
    if target is not None:
        from perfml.boards import same_board

        names = q["board"].astype(str)
        mine = {b for b in names.unique() if same_board(b, target.board)}
        times = np.where(names.isin(mine).to_numpy(), np.nan, times)
    return times


def unless_measured(predict, q: pd.DataFrame, own_run: np.ndarray, keep) -> np.ndarray:
    """``predict`` of the rows of ``q`` that no training measurement answers (``own_run`` NaN,
    :func:`measured_on_board`) and of the rows ``keep``; NaN for the others, which
    :func:`take_measured` answers: the model is not run for them."""
    run = ~np.isfinite(own_run) | np.asarray(keep, dtype=bool)
    pred = np.full(len(q), np.nan)
    if run.any():
        with np.errstate(all="ignore"):  # q itself when every row runs: it is checked once per call
            pred[run] = np.asarray(predict(q if run.all() else q[run]), dtype=float)
    return pred


def take_measured(pred: np.ndarray, basis: np.ndarray, own_run: np.ndarray) -> np.ndarray:
    """``pred`` with each row still on the training boards' basis (no reference answered it) and
    measured on its own board (:func:`measured_on_board`) answered by that measurement; its
    ``basis`` (changed in place) becomes ``measured``."""
    measured = np.isfinite(own_run) & (basis == "training-boards")
    basis[measured] = "measured"
    return np.where(measured, own_run, pred)


def target_call_floor_ms(floor_ms: float | np.ndarray, model, boards: pd.Series) -> float | np.ndarray:
    """:func:`call_floor_ms`, lowered on the target board to the launch floor its calibration measured.

    With ``--calibration`` / ``--characterization`` the model holds the target board's
    characterization (:class:`~perfml.learned.target_characterization.TargetFirst`). Its
    calibrated ``launch_overhead`` is a quantile of the times of the smallest calls measured
    on that board: a call that fast ran there, so no row of that board need be predicted
    slower for being small. Ten of the H100's application kernels, timed by their durations
    (``perfml sweep run --timing kernel-duration``), take 1.2-3.1 us, under the nine
    applications' fastest training call (3.3 us, on a 2012-2016 board): nine of them were
    predicted at that floor (``experiments/results/kernel_duration_check.txt``). A floor
    timed between CUDA events holds the launch overhead (about 10 us) and so never lowers
    it. The user's ``--reference`` times lower the floor already (:func:`call_floor_ms`).
    """
    target = getattr(getattr(model, "characterizations", None), "target", None)
    if target is None:
        return floor_ms
    measured = target.best("launch_overhead", "ms", tiers=("calibrated",))
    if measured is None or not (np.isfinite(measured.value) and measured.value > 0):
        return floor_ms
    from perfml.boards import same_board

    names = boards.astype(str)
    mine = {b for b in names.unique() if same_board(b, target.board)}  # once per board name, not per row
    floor_ms = np.asarray(floor_ms, dtype=float)  # one floor, or one per row (call_floor_ms)
    return np.where(names.isin(mine).to_numpy(), np.minimum(floor_ms, float(measured.value)), floor_ms)


def call_floor_ms(training: dict | None, reference: pd.DataFrame | None = None, boards: pd.Series | None = None,
                  registry=None) -> float | np.ndarray:
    """The least time a query row is predicted at (ms): the fastest call of the data the model knows.

    That is the fastest training row (the manifest's ``training.min_time_ms``), never below
    :data:`~perfml.characterize.limits.MIN_MEASURED_MS`, which is also the floor of a model
    that does not record its fastest row. A launch costs time whatever the work: below the
    training sizes, the sub-models extrapolate the work's scaling to nothing (vectorAdd of
    1,000 elements on the GTX-980: 0.0005 ms, where no kernel of the nine applications or of
    Rodinia was ever measured below 0.0033 ms, on any of the eleven boards; the H100's and
    H200's smallest calls measured with perfml's sweeps take 0.006 ms).

    With ``reference`` (the user's measurements) and ``boards`` (one board name per row), one
    floor per row: on a board the reference measured, lowered to the fastest call it measured
    there (a call that fast ran on that board). A call of one board says nothing of another's
    launch cost: one 1.1 us H100 row of a reference lowered the floor of every row, those of a
    2-SM GT-630 (whose fastest measured kernel takes 22 us) included.
    """
    from perfml.characterize.limits import MIN_MEASURED_MS

    floor = (training or {}).get("min_time_ms")
    floor = float(floor) if isinstance(floor, (int, float)) and math.isfinite(floor) and floor > 0 else MIN_MEASURED_MS
    floor = max(floor, MIN_MEASURED_MS)
    if reference is None or "time_ms" not in reference.columns or not len(reference):
        return floor if boards is None else np.full(len(boards), floor)
    if boards is None:
        raise ValueError("call_floor_ms: a reference lowers the floor on the boards it measured only; "
                         "pass boards (the rows' board names)")
    from perfml.boards import same_board

    times = pd.to_numeric(reference["time_ms"], errors="coerce")
    fastest = times[np.isfinite(times) & (times > 0)].groupby(reference["board"].astype(str)).min()
    names = pd.Series(boards).astype(str)
    per_name = {name: max(min([floor] + [float(t) for b, t in fastest.items() if same_board(name, b, registry=registry)]),
                          MIN_MEASURED_MS)
                for name in names.unique()}
    return names.map(per_name).to_numpy(dtype=float)


def missing_board_figure(board_name: str, registry=None) -> str | None:
    """What the board's registry entry lacks of the figures every prediction rests on, or None.

    The transfer features scale a time between boards by the FP32 rate (SMs x cores per SM
    x clock), the DRAM bandwidth and the wave size (SMs, residency limits of the compute
    capability); a board without one of them predicts NaN. The message of
    :class:`~perfml.errors.MissingBoardParameterError` names the field and where to add it
    (a compute capability perfml has no table for leaves the per-SM figures empty).
    """
    from perfml.boards import default_registry, get_board, peak_bandwidth, peak_flops, wave_size
    from perfml.errors import MissingBoardParameterError

    board = get_board(board_name, registry=registry)
    try:
        peak_flops(board)
        peak_bandwidth(board)
        wave_size(board, 32)
    except MissingBoardParameterError as exc:
        cc = board.compute_capability
        if cc and cc not in (registry or default_registry()).compute_capabilities():
            return (f"{exc}; perfml has no [cc.\"{cc}\"] table, so none of the per-SM figures of compute "
                    f"capability {cc} (cores per SM, residency limits) is known: give them in the board's entry")
        return str(exc)
    return None


#: appended to the reason of a row at an unmeasured launch when the model has no launch calibration
UNCALIBRATED_LAUNCH_NOTE = ("its interval is twice the log half-width of a measured launch, a convention: this model "
                            "has no interval calibrated on held-out launches (none of its kernels was measured at two "
                            "block sizes, or it was trained before perfml calibrated them)")


def answered(original: pd.DataFrame, pred, basis, flags, reasons, bound, calibration, level: float, *,
             app_ids=None, groups=None, board_flags=None, spread=None, floor_ms=None, launch_flags=None,
             architecture_flags=None, measured_here=None) -> pd.DataFrame:
    """The queries as given plus the output columns, for either corpus.

    ``flags``/``reasons``: the rows beyond the training range (never a row answered from
    the user's own measurement of that run, ``basis`` in :data:`REFERENCE_BASES`), whose interval is
    widened; ``reasons`` also says why a row of ``launch_flags`` is flagged: a block shape no
    training board measured for its kernel (:func:`unmeasured_launches`), whose interval is
    the model's unmeasured-launch one where it has it
    (:func:`~perfml.learned.intervals.interval_bounds`). ``board_flags``: ``(flags, reasons)``
    of the rows whose board is beyond the training boards' figures (:func:`perfml.learned.board_range.board_range_flags`),
    flagged whatever the basis (a reference on another board is carried to this one by the
    model) and not widened. ``architecture_flags``: ``(flags, reasons)`` of the rows whose board's
    architecture is none of the training boards' (:func:`perfml.learned.board_range.unseen_architecture_flags`),
    flagged whatever the basis, their interval the model's unseen-architecture one where it has it. ``bound``: the
    row's roofline lower bound (NaN where the work is unknown), never below ``floor_ms``
    (:func:`call_floor_ms`; None: :data:`~perfml.characterize.limits.MIN_MEASURED_MS`, which
    no kernel call is shorter than: a prediction far beyond the training sizes gave 1.5e-6 ms); a faster prediction is
    raised to it and flagged ``clamped_to_bound``; the interval is taken around the written
    (raised) prediction, and ``lower_ms`` never goes below the bound. Not a row of
    ``measured_here`` (:func:`measured_here`), answered with the user's measurement of its run on
    its board: that time passed the reference's physical check (within
    :data:`~perfml.characterize.limits.MAX_OVER_SPEC` of the bound, which allows for a boost
    clock or a registry figure below the board's), and raising it rewrote a time the command had
    accepted (an H100 add measured at 0.15 ms came back as 0.24 ms, its basis still the reference). ``calibration``: the manifest's ``intervals`` entry (None: no interval), by kernel
    group of ``app_ids`` or by the given ``groups`` (op classes). ``spread``: ``(lo, hi)``
    per row from :func:`carried_references`, the interval's ends multiplied by them.
    """
    from perfml.learned.intervals import check_calibration, interval_bounds

    own = np.isin(basis, REFERENCE_BASES)  # the user measured this very run
    flags = np.where(own, False, flags)
    launch = np.zeros(len(flags), dtype=bool) if launch_flags is None else np.where(own, False, launch_flags)
    reasons = [r if f or u else "" for r, f, u in zip(reasons, flags, launch)]
    if launch.any() and calibration is not None and calibration.get("unmeasured_launch") is None:
        # the model has no launch calibration (its kernels each ran at one block size, e.g. the
        # Rodinia kernels, or it predates it): say that the interval is the convention's
        reasons = [f"{r}; {UNCALIBRATED_LAUNCH_NOTE}" if u else r for r, u in zip(reasons, launch)]
    beyond = np.zeros(len(flags), dtype=bool)
    if board_flags is not None:
        beyond, why = np.asarray(board_flags[0], dtype=bool), board_flags[1]
        reasons = ["; ".join(x for x in (r, w) if x) for r, w in zip(reasons, why)]
    unseen = np.zeros(len(flags), dtype=bool)
    if architecture_flags is not None:
        unseen, why = np.asarray(architecture_flags[0], dtype=bool), architecture_flags[1]
        reasons = ["; ".join(x for x in (r, w) if x) for r, w in zip(reasons, why)]
    from perfml.characterize.limits import MIN_MEASURED_MS

    # one floor, or one per row (:func:`target_call_floor_ms`)
    floor = MIN_MEASURED_MS if floor_ms is None else np.maximum(np.asarray(floor_ms, dtype=float), MIN_MEASURED_MS)
    bound = np.fmax(np.asarray(bound, dtype=float), floor)  # fmax: NaN (work unknown) -> the floor
    here = np.zeros(len(pred), dtype=bool) if measured_here is None else (
        np.asarray(measured_here, dtype=bool) & np.isin(basis, REFERENCE_BASES))
    bound = np.where(here, np.fmin(bound, pred), bound)
    # at the bound counts as clamped: the operator model stops its own predictions at the roofline
    # (a GEMM at exactly 100 % of the datasheet peak was written unflagged)
    clamped = (pred <= bound * (1.0 + 1e-9)) & ~here
    pred = np.where(clamped, bound, pred)
    if calibration is not None:
        calibration = check_calibration(calibration, "model manifest")
        # only a size beyond the training range widens the interval: a board beyond the training
        # boards is flagged, its interval is the calibrated one (perfml.learned.board_range says why).
        # The interval is the written prediction's: around a clamped one it keeps its width (taken
        # around the prediction below the bound, it shrank to [bound, bound])
        lower, upper = interval_bounds(pred, app_ids, flags, calibration, level, groups=groups, unmeasured_launch=launch,
                                       unseen_architecture=unseen)
        if spread is not None:
            lower, upper = lower * np.asarray(spread[0], dtype=float), upper * np.asarray(spread[1], dtype=float)
        # a row of the user's own measurement below the bound: its interval around it, over the call floor
        lower = np.where(here, np.fmax(lower, np.fmin(floor, pred)), np.fmax(lower, bound))
    else:
        lower = upper = np.full(len(pred), np.nan)
    out = original.copy()
    out["predicted_ms"] = pred
    out["lower_ms"] = lower
    out["upper_ms"] = upper
    out["basis"] = basis
    out["clamped_to_bound"] = clamped
    out["extrapolated"] = flags | launch | beyond | unseen
    out["extrapolation"] = reasons
    return out


def write_predictions(frame: pd.DataFrame, path, *, overwrite: bool = False) -> Path:
    """Write ``frame`` as CSV to a regular file atomically (:mod:`perfml._safe_output`)."""
    from perfml._safe_output import write_dataframe_atomic

    return write_dataframe_atomic(frame, Path(path), overwrite=overwrite, option="--output")
