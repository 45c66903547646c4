"""Prediction queries for deep-learning operators: rows of dlops_runtimes.csv minus the time.

A query row names a ``board``, an ``op`` (one of :data:`perfml.datasets.DLOPS_OPS`) and the
dimensions the op needs (:data:`perfml.datasets.DLOPS_OP_DIMS`; semantics: datasets
README, NeuSight section, "Operator semantics"):

* ``bmm``: ``B, M, N, K`` (x (B,M,N) times y (B,N,K));
* ``linear``: ``B, M, N, K`` (input (B,M,N), weight (K,N), bias (K));
* element-wise ops, ``softmax`` and ``ln``: ``B, H`` (a (B,H) tensor);
* ``conv``: ``B, in_channels, out_channels, kernel_size, input_size, stride`` and
  optionally ``padding`` (0 when empty).

Launch columns (``grid_*``, ``block_*``), ``kernel_name`` and every other column are
optional and carried to the output unchanged. Every row is checked before anything is
predicted and nothing is written when a row fails; the error names the file, the row,
the column, the value and the fix (unknown op, a dimension missing, not a whole number or
not positive, an unknown board, tensors larger than the board's memory, a measured-time
column in the queries, a reference that disagrees with a query on the launch).

A row's prediction rests on, first that applies (``basis``): the user's ``--reference``
measurement of the same op and dimensions on another board, scaled by the model's ratio
between the two boards (``reference``); the operator measured on the training boards
(``training-boards``); the operator work model of :mod:`perfml.operators` only
(``description``). It gets the ``level`` split-conformal interval of its op class
(:mod:`perfml.learned.intervals`) and is never faster than the board's roofline bound of
its work (:func:`perfml.operators.roofline_lower_bound_ms`; raised and flagged
``clamped_to_bound`` otherwise).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfml.errors import DatasetSchemaError, PerfmlError, QueryValidationError
from perfml.learned.board_range import board_range_flags, carried_within_architecture, unseen_architecture_flags
from perfml.learned.queries import (
    LAUNCH_COLUMNS, MAX_BLOCK, MAX_GRID, OUTPUT_COLUMNS, _at, _infer, _num, answered, launches_agree, measured_on_board,
    take_measured, unless_measured,
)

__all__ = [
    "OPERATOR_DIM_COLUMNS",
    "OPERATOR_QUERY_REQUIRED",
    "check_operator_queries",
    "check_operator_reference",
    "host_floor_note",
    "operator_training_ranges",
    "predict_operator_queries",
]

OPERATOR_QUERY_REQUIRED = ("board", "op")
#: every dimension column of dlops_runtimes (an op uses some of them)
OPERATOR_DIM_COLUMNS = ("B", "M", "N", "K", "H", "in_channels", "out_channels", "kernel_size", "input_size", "stride", "padding")
#: largest dimension accepted (PyTorch indexes tensors with 64-bit integers, but a single
#: dimension beyond 2**31 - 1 is far outside any measured operator; a bound keeps the work finite)
MAX_DIM = 2**31 - 1
#: a spec-tier operator prediction within this factor of its operator's launch floor is mostly
#: that floor, the time of a call without work on the training corpus' hosts
HOST_FLOOR_FACTOR = 2.0


def _needs(op: str) -> tuple[str, ...]:
    from perfml.datasets import DLOPS_OP_DIMS

    return tuple(DLOPS_OP_DIMS[op])


def _dims_text(op: str) -> str:
    return ", ".join(_needs(op)) + (" (and padding, 0 if empty)" if op == "conv" else "")


def _parse(frame: pd.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray]:
    """(values as float with NaN where empty or not a number, empty mask) of a text column."""
    raw = frame[column]
    text = raw.astype(str).str.strip()
    empty = raw.isna().to_numpy() | (text == "").to_numpy()
    values = pd.to_numeric(text.where(~empty, None), errors="coerce").to_numpy(dtype=float)
    return values, empty


def _first(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


def _check_integers(frame, column, needed, where, *, low, high, problem_fix, required=True, error=QueryValidationError):
    """Parse ``column``; raise naming the first needed row that is missing / not an integer in [low, high]."""
    n = len(frame)
    if column not in frame.columns:
        if required and needed.any():
            i = _first(needed)
            op = str(frame["op"].iloc[i]).strip() if "op" in frame.columns else "?"
            raise error(f"{_at(where, i)}, column {column}: the column is missing; op {op!r} needs {_dims_text(op)}; "
                        f"add a column {column}")
        return np.full(n, np.nan)
    values, empty = _parse(frame, column)
    if required:
        i = _first(needed & empty)
        if i is not None:
            op = str(frame["op"].iloc[i]).strip() if "op" in frame.columns else "?"
            raise error(f"{_at(where, i)}, column {column}: a value is required, found ''; op {op!r} needs "
                        f"{_dims_text(op)}: {problem_fix}")
    finite = np.isfinite(values)
    ok = finite & (values == np.floor(np.where(finite, values, 0.0))) & (values >= low) & (values <= high)
    i = _first(needed & ~empty & ~ok)
    if i is not None:
        raise error(f"{_at(where, i)}, column {column}: expected a whole number in [{low}, {high}], "
                    f"found {_num(frame[column].iloc[i])!r}; {problem_fix}")
    return np.where(needed & ~empty, values, np.nan)


def _takes(op: str) -> tuple[str, ...]:
    """The dimension columns an op reads: its required ones, and ``padding`` (optional) for conv."""
    return _needs(op) + (("padding",) if op == "conv" else ())


def _refuse_unused_dims(frame: pd.DataFrame, names, codes, where, *, error) -> None:
    """Refuse a row that gives a dimension its op does not take (``softmax`` with ``M``).

    Such a cell was ignored, and the prediction was that of the row without it: the user
    may have meant another op or another shape. The corpus leaves those cells empty.
    """
    for column in OPERATOR_DIM_COLUMNS:
        if column not in frame.columns:
            continue
        unused = np.array([column not in _takes(op) for op in names], dtype=bool)[codes]
        cells = frame[column]
        given = ~(cells.isna() | cells.astype(str).str.strip().isin(["", "nan", "NaN"])).to_numpy()
        i = _first(unused & given)
        if i is not None:
            op = names[codes[i]]
            raise error(f"{_at(where, i)}, column {column}: op {op} takes {', '.join(_takes(op))}, not {column} (found "
                        f"{str(cells.iloc[i]).strip()!r}); leave the cell empty, or name the op whose shape this is")


def _check_common(frame: pd.DataFrame, where, *, error) -> pd.DataFrame:
    """Board, op, dimensions and launch of operator rows; the parsed frame (other columns passed through)."""
    from perfml.closed_form._inputs import check_column_names

    check_column_names(frame, str(where) if isinstance(where, str) else "the queries", error)
    from perfml.boards import resolve_board_name
    from perfml.datasets import DLOPS_OPS

    missing = [c for c in OPERATOR_QUERY_REQUIRED if c not in frame.columns]
    if missing:
        from perfml.closed_form._inputs import near_misses

        raise DatasetSchemaError(f"{where}: missing column(s) {', '.join(missing)}{near_misses(missing, frame.columns)}; "
                                 "operator rows need board, op and "
                                 "the op's dimensions (the columns of dlops_runtimes.csv without time_ms)")
    if len(frame) == 0:
        raise error(f"{where}: no operator rows; add at least one row under the header")
    # the checked columns are gathered here and made a frame once (a column added to a frame
    # at a time costs pandas more than the checks of a one-row query)
    cols: dict[str, object] = {}
    resolved: dict[str, str] = {}
    boards = []
    for i, name in enumerate(frame["board"].astype(str).str.strip()):
        if name not in resolved:
            try:
                resolved[name] = resolve_board_name(name)
            except PerfmlError as exc:
                raise error(f"{_at(where, i)}, column board: unknown board, found {name!r}; use a board of "
                            f"`perfml boards list` or add yours to the registry ({exc})") from None
        boards.append(resolved[name])
    cols["board"] = boards
    ops = frame["op"].astype(str).str.strip().to_numpy(dtype=object)
    known = np.isin(ops, list(DLOPS_OPS))
    i = _first(~known)
    if i is not None:
        from perfml.errors import UnsupportedQueryError

        raise UnsupportedQueryError(
            f"{_at(where, i)}, column op: unknown operator, found {ops[i]!r}; use one of {', '.join(DLOPS_OPS)} "
            "(perfml has a work model for these), or ask about your own kernel as an app_id row with its "
            "measured time in a --reference CSV"
        )
    cols["op"] = ops
    codes, names = pd.factorize(ops)  # the questions below are asked of the distinct ops, then indexed by code
    for column in OPERATOR_DIM_COLUMNS:
        needed = np.array([column in _takes(op) for op in names], dtype=bool)[codes]
        cols[column] = _check_integers(
            frame, column, needed, where, low=0 if column == "padding" else 1, high=MAX_DIM, error=error,
            required=column != "padding",
            problem_fix="give the dimension as a positive whole number" if column != "padding" else
            "give the padding as a whole number >= 0, or leave it empty for 0",
        )
    _refuse_unused_dims(frame, names, codes, where, error=error)
    is_conv = ops == "conv"
    if is_conv.any():
        cols["padding"] = np.where(is_conv & np.isnan(cols["padding"]), 0.0, cols["padding"])
        with np.errstate(invalid="ignore"):
            out = np.floor((cols["input_size"] + 2 * cols["padding"] - cols["kernel_size"]) / cols["stride"]) + 1
        i = _first(is_conv & ~(out >= 1))
        if i is not None:
            raise error(f"{_at(where, i)}, column kernel_size: the convolution output is empty "
                        f"(input_size + 2 padding < kernel_size), found {_num(frame['kernel_size'].iloc[i])!r}; "
                        "give a kernel no larger than the padded input")
    _check_memory(pd.DataFrame(cols, index=frame.index), where, error=error)
    for column in LAUNCH_COLUMNS:
        if column in frame.columns:
            high = MAX_BLOCK.get(column) or MAX_GRID[column]
            cols[column] = _check_integers(frame, column, np.ones(len(frame), dtype=bool), where, low=1, high=high,
                                        required=False, error=error,
                                        problem_fix=f"CUDA allows 1 to {high}; leave the cell empty if unknown")
    if {"block_x", "block_y", "block_z"} & set(cols):
        threads = np.ones(len(frame))
        for c in ("block_x", "block_y", "block_z"):
            if c in cols:
                threads = threads * np.nan_to_num(np.asarray(cols[c], dtype=float), nan=1.0)
        i = _first(threads > 1024)
        if i is not None:
            raise error(f"{_at(where, i)}, column block_x*block_y*block_z: CUDA allows at most 1024 threads per "
                        f"block, found {int(threads[i])}; give the launch the kernel ran with")
    if "dtype" in frame.columns:
        _check_dtype(frame, where, error=error)
    for column in frame.columns:  # the other columns pass through (numbers parsed as read_csv would)
        if column not in cols:
            cols[column] = _infer(frame[column])
    return pd.DataFrame(cols, index=frame.index)


#: the element types of the operator corpus (dlops_runtimes.csv.gz: FP32 only) and how users
#: write them; the work model counts 4 bytes per element
FP32_NAMES = ("float32", "fp32", "torch.float32", "float")


def _check_dtype(frame: pd.DataFrame, where, *, error) -> None:
    """A ``dtype`` column, where given, must name FP32: the work model, the roofline and every
    training call are FP32, so an FP16 call would silently be answered as FP32 (half its
    bytes, another compute pipe). An empty cell means FP32."""
    text = frame["dtype"].astype(str).str.strip().str.lower()
    bad = ~(text.isin(FP32_NAMES) | (text == "")).to_numpy()
    i = _first(bad)
    if i is not None:
        raise error(f"{_at(where, i)}, column dtype: perfml models FP32 operator calls only (dlops_runtimes.csv.gz "
                    f"measures FP32), found {_num(frame['dtype'].iloc[i])!r}; give float32 calls, or leave the cell empty")


def _check_memory(q: pd.DataFrame, where, *, error) -> None:
    """Refuse a call whose tensors do not fit in its board's memory: it cannot run there.

    The call's compulsory bytes (:func:`perfml.operators.operator_work`: every operand read
    and every result written once, FP32) are the tensors it holds at once, a lower bound of
    the memory it needs; above the board's ``global_mem_bytes`` (registry) no measurement of
    it can exist, so no prediction is given. The largest measured call of the data home
    holds 0.96 of its board's memory (a ``bmm`` on the A100-PCIe-40GB). Boards without a
    memory size in the registry are not checked.
    """
    from perfml.boards import get_board
    from perfml.operators import operator_work

    memory_of = {}
    for name in pd.unique(q["board"]):
        size = getattr(get_board(name), "global_mem_bytes", None)
        memory_of[name] = float(size) if size else np.nan
    memory = q["board"].map(memory_of).to_numpy(dtype=float)
    nbytes = operator_work(q)["bytes"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        i = _first(nbytes > memory)
    if i is not None:
        op = str(q["op"].iloc[i])
        raise error(f"{_at(where, i)}, columns {', '.join(_needs(op))}: op {op!r} with these dimensions holds "
                    f"{nbytes[i] / 2**30:,.1f} GiB of FP32 tensors (operands and result), more than the "
                    f"{memory[i] / 2**30:,.1f} GiB of board {q['board'].iloc[i]}: it cannot run there; give "
                    "dimensions whose tensors fit, or a board with more memory")


def check_operator_queries(frame: pd.DataFrame, where) -> pd.DataFrame:
    """Check operator query rows (as read, text cells); return the frame the model takes.

    Parameters
    ----------
    frame : DataFrame
        The operator rows of the query file.
    where : str or callable
        The file name (rows are numbered) or a function naming a 0-based row
        (:class:`perfml.learned.queries.RowNames` for a subset of a file).

    Raises
    ------
    QueryValidationError
        Naming the file, row, column, value and fix.
    UnsupportedQueryError
        For an op without a work model.
    DatasetSchemaError
        For a missing ``board`` / ``op`` column or a measured-time column.
    """
    collide = [c for c in frame.columns if str(c) in OUTPUT_COLUMNS]
    if collide:
        raise QueryValidationError(f"{where}: input column {collide[0]!r} has the name of a column perfml predict writes "
                                   f"({', '.join(OUTPUT_COLUMNS)}); rename or drop it")
    timing = [c for c in frame.columns if str(c).startswith("time_ms")]
    if timing:
        raise DatasetSchemaError(f"{where}: queries must not carry measured times ({', '.join(timing)}); drop those columns")
    return _check_common(frame, where, error=QueryValidationError).reset_index(drop=True)


def check_operator_reference(frame: pd.DataFrame, where) -> pd.DataFrame:
    """Check the operator rows of a ``--reference`` file: query columns plus ``time_ms`` (ms, finite, > 0).

    Raises
    ------
    ReferenceValidationError
        Naming the file, row, column, value and fix.
    """
    from perfml.errors import ReferenceValidationError

    if "time_ms" not in frame.columns:
        raise ReferenceValidationError(f"{where}: missing column time_ms; a reference needs board, op, the op's "
                                       "dimensions and time_ms (your measured call time in ms)")
    try:
        ref = _check_common(frame, where, error=ReferenceValidationError)
    except QueryValidationError as exc:
        if isinstance(exc, ReferenceValidationError):
            raise
        raise ReferenceValidationError(str(exc)) from None
    from perfml.characterize.limits import (
        BAD_MEASURED_TIME,
        first_bad_measured_time,
        first_unphysical_time,
        unphysical_time_message,
    )

    times, empty = _parse(frame, "time_ms")
    i = first_bad_measured_time(times)
    if i is not None:
        raise ReferenceValidationError(f"{_at(where, i)}, column time_ms: {BAD_MEASURED_TIME}, "
                                       f"found {_num(frame['time_ms'].iloc[i])!r}; give the call's measured time in milliseconds")
    ref["time_ms"] = times
    ref = ref.reset_index(drop=True)

    bound = _bounds(ref, l2_resident=True)
    i = first_unphysical_time(times, bound)
    if i is not None:
        raise ReferenceValidationError(f"{_at(where, i)}, column time_ms: "
                                       f"{unphysical_time_message(times[i], bound[i], ref['board'].iloc[i])}")
    return ref


def _run_keys(frame: pd.DataFrame) -> pd.Series:
    """A key per row naming the run: op and its dimensions (padding 0 when empty)."""
    parts = [frame["op"].astype(str)]
    for c in OPERATOR_DIM_COLUMNS:
        v = frame[c].to_numpy(dtype=float) if c in frame.columns else np.full(len(frame), np.nan)
        parts.append(pd.Series(np.where(np.isfinite(v), v, -1.0), index=frame.index).map("{:.0f}".format))
    key = parts[0]
    for p in parts[1:]:
        key = key + "|" + p
    return key


def operator_training_ranges(X: pd.DataFrame) -> dict:
    """Boards, ops and, per op, the [min, max] of each dimension it uses in the training rows."""
    ranges = {}
    for op, part in X.groupby(X["op"].astype(str)):
        ranges[op] = {c: [float(part[c].min()), float(part[c].max())] for c in _needs(op) if c in part.columns}
    return {"rows": int(len(X)), "boards": sorted(map(str, X["board"].unique())), "ops": sorted(ranges),
            "dims": ranges}


def _extrapolation(q: pd.DataFrame, training: dict) -> tuple[np.ndarray, list[str]]:
    """Rows with a dimension outside its op's training range (or an op never trained on)."""
    ranges = (training or {}).get("dims") or {}
    flags = np.zeros(len(q), dtype=bool)
    reasons = [""] * len(q)
    for op, idx in q.groupby("op", sort=False).indices.items():
        rng = ranges.get(str(op))
        if rng is None:
            flags[idx] = True
            for i in idx:
                reasons[i] = f"the model records no training range for op {op}"
            continue
        for c, (lo, hi) in rng.items():
            v = q[c].to_numpy(dtype=float)[idx]
            for j in idx[(v < lo) | (v > hi)]:
                if not flags[j]:
                    flags[j] = True
                    side = "below" if q[c].iat[j] < lo else "above"
                    reasons[j] = f"{c} {side} the training range [{_num(lo)}, {_num(hi)}] of op {op}"
    return flags, reasons


def _reference_rows(q: pd.DataFrame, reference: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(query row, reference row) pairs of the same run (op and dimensions) and launch
    (:func:`~perfml.learned.queries.launches_agree`)."""
    by_key: dict = {}
    for k, key in enumerate(_run_keys(reference).to_numpy()):
        by_key.setdefault(key, []).append(k)
    cols = [c for c in LAUNCH_COLUMNS if c in q.columns and c in reference.columns]
    ref_launch = reference[cols].to_numpy(dtype=float)
    q_launch = q[cols].to_numpy(dtype=float)
    owners, rows = [], []
    for i, key in enumerate(_run_keys(q).to_numpy()):
        ks = np.asarray(by_key.get(key, ()), dtype=int)
        if len(ks):
            ks = ks[launches_agree(ref_launch[ks], q_launch[i])]
            owners += [i] * len(ks)
            rows += ks.tolist()
    return np.asarray(owners, dtype=int), np.asarray(rows, dtype=int)


def _matched_reference_rows(q, reference, where, ref_where) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_reference_rows`, after refusing a query whose run a reference board measured,
    but at none of its launch (that board's measurement cannot answer the query; dropping
    it silently would hide that)."""
    from perfml.errors import ReferenceValidationError

    owners, rows = _reference_rows(q, reference)
    cols = [c for c in LAUNCH_COLUMNS if c in q.columns and c in reference.columns]
    if not cols:
        return owners, rows
    by_key: dict = {}
    for k, key in enumerate(_run_keys(reference)):
        by_key.setdefault(key, []).append(k)
    boards = reference["board"].to_numpy()
    matched = {(int(i), boards[k]) for i, k in zip(owners, rows)}
    for i, key in enumerate(_run_keys(q)):
        for k in by_key.get(key, ()):
            if (i, boards[k]) in matched:
                continue
            c = next(c for c in cols if np.isfinite(reference[c].iat[k]) and np.isfinite(q[c].iat[i])
                     and reference[c].iat[k] != q[c].iat[i])
            raise ReferenceValidationError(
                f"{_at(ref_where, k)}, column {c}: the reference ran op {q['op'].iat[i]} on {boards[k]} with {c} = "
                f"{_num(reference[c].iat[k])} (none of its rows of this run on that board at the query's launch) "
                f"but {_at(where, i)} asks for {c} = {_num(q[c].iat[i])}; a reference predicts only the launch "
                "it measured: make the launches agree, leave the query's launch empty, or measure the query's launch"
            )
    return owners, rows


def _reference_predictions(model, q, pred, reference, pairs):
    """Per query row with a reference of the same run: the reference carried to the row's board, else NaN.

    ``T_q = exp(mean_r [log t_r + log M(q) - log M(q on board_r)])`` over the reference rows
    r of the same op, dimensions and launch (``pairs``, from :func:`_matched_reference_rows`):
    the user's time scaled by the model's ratio between the two boards (as for application
    kernels, :mod:`perfml.learned.queries`); a run the reference measured on the row's own
    board takes only those rows (:func:`~perfml.learned.queries.own_board_first`). Returns the
    predictions and their spread (:func:`~perfml.learned.queries.carried_references`), and per row
    whether the reference measured its run on its own board (:func:`~perfml.learned.queries.measured_here`).
    """
    from perfml.learned.queries import carried_references, measured_here, own_board_first

    owners, rows = pairs
    if not len(owners):
        return (*carried_references(owners, np.zeros(0), len(q)), np.zeros(len(q), dtype=bool))
    keep = own_board_first(reference["board"].to_numpy()[rows], owners, q["board"].to_numpy())
    owners, rows = owners[keep], rows[keep]
    moved = q.iloc[owners].reset_index(drop=True).copy()
    moved["board"] = reference["board"].to_numpy()[rows]
    with np.errstate(all="ignore"):
        at_ref = np.asarray(model.predict(moved), dtype=float)
    logs = np.log(reference["time_ms"].to_numpy()[rows]) + np.log(pred[owners]) - np.log(at_ref)
    return (*carried_references(owners, logs, len(q)), measured_here(moved["board"].to_numpy(), owners,
                                                                      q["board"].to_numpy()))


def _bounds(q: pd.DataFrame, *, l2_resident: bool = False) -> np.ndarray:
    """The roofline lower bound per row (ms); NaN on a board whose registry entry lacks the peaks.

    ``l2_resident``: the bound a measured time must respect (up to the L2's bytes from cache).
    """
    from perfml.operators import roofline_lower_bound_ms

    out = np.full(len(q), np.nan)
    for board, idx in q.groupby("board", sort=False).indices.items():
        try:
            out[idx] = roofline_lower_bound_ms(q.iloc[idx], board, l2_resident=l2_resident).to_numpy(dtype=float)
        except PerfmlError:
            continue  # no peaks in the registry: no floor (the registry names what is missing)
    return out


def predict_operator_queries(model, original: pd.DataFrame, where, *, reference: pd.DataFrame | None = None,
                             reference_where="--reference", level: float = 0.90) -> pd.DataFrame:
    """The operator queries as given plus ``predicted_ms``, its interval, ``basis`` and flags.

    Parameters
    ----------
    model : estimator
        Fitted operator model: ``predict(X) -> ms`` on the frame of
        :func:`check_operator_queries`, with ``metadata_`` holding ``training``
        (:func:`operator_training_ranges`) and ``intervals`` (op-class groups).
    original : DataFrame
        The operator rows as read (text cells).
    where, reference_where : str or callable
        Names of the query and reference files (or row-naming callables).
    reference : DataFrame, optional
        Checked reference rows (:func:`check_operator_reference`).
    level : float
        Nominal level of the interval (one of :data:`perfml.learned.intervals.LEVELS`).

    Raises
    ------
    QueryValidationError, UnsupportedQueryError, ReferenceValidationError
        Naming the row, column and fix; nothing is predicted.
    """
    from perfml.learned.intervals import check_level
    from perfml.learned.queries import refuse_a_bundle
    from perfml.operators import OP_CLASS

    refuse_a_bundle(model, "predict_operator_queries", "dlops")
    level = check_level(level)
    q = check_operator_queries(original, where)
    pairs = None
    if reference is not None and len(reference):
        pairs = _matched_reference_rows(q, reference, where, reference_where)
    meta = getattr(model, "metadata_", {}) or {}
    training = meta.get("training") or {}
    trained = set(training.get("ops") or ())
    # a call its own board ran in training is answered with that measurement (the model is not run
    # for it), but a row a reference matches is the reference's first
    own_run = measured_on_board(model, q)
    matched = np.zeros(len(q), dtype=bool)
    if pairs is not None:
        matched[np.asarray(pairs[0], dtype=int)] = True
    pred = unless_measured(model.predict, q, own_run, matched)
    basis = np.where(q["op"].isin(trained).to_numpy(), "training-boards", "description").astype(object)
    within = np.zeros(len(q), dtype=bool)  # carried from a reference on a board of the row's architecture
    here = np.zeros(len(q), dtype=bool)  # answered by a reference measured on the row's own board
    if reference is not None and len(reference):
        scaled, spread, here = _reference_predictions(model, q, pred, reference, pairs)
        has = np.isfinite(scaled)
        pred = np.where(has, scaled, pred)
        basis[has] = "reference"
        within = has & carried_within_architecture(len(q), pairs[0], q["board"].to_numpy(),
                                                   reference["board"].to_numpy()[pairs[1]])
    pred = take_measured(pred, basis, own_run)
    bad = _first(~(np.isfinite(pred) & (pred > 0)))
    if bad is not None:
        raise QueryValidationError(
            f"{_at(where, bad)}: the prediction is {_num(pred[bad])!r} ms, not a finite positive time (board "
            f"{q['board'].iat[bad]}, op {q['op'].iat[bad]}); the query is too far outside the training data: "
            "choose dimensions nearer the training range"
        )
    flags, reasons = _extrapolation(q, training)
    groups = q["op"].map(dict(OP_CLASS)).to_numpy(dtype=object)
    on_board = board_range_flags(q["board"], training.get("boards"))
    return answered(original, pred, basis, flags, reasons, _bounds(q), meta.get("intervals"), level, groups=groups,
                    board_flags=on_board, spread=spread if reference is not None and len(reference) else None,
                    measured_here=here,
                    architecture_flags=unseen_architecture_flags(q["board"], training.get("boards"),
                                                                 carried_within=within))


def host_floor_note(model, result: pd.DataFrame) -> str | None:
    """A note on the operator rows the spec-only tier predicts within :data:`HOST_FLOOR_FACTOR`
    of their launch floor (:class:`~perfml.learned.operator_model._floor.LaunchFloor`), or None.

    The floor is what a call without work took on the hosts of the training corpus (NeuSight:
    PyTorch 2.1, CUDA 12.1; 0.024-0.031 ms per board); it belongs to the host, driver and
    framework more than to the GPU. This project's H100 host (PyTorch 2.11, CUDA 13) ran
    calls from 0.014 ms (README, "Most of the error is in the shortest calls"); on the H200 the
    spec-only tier's calls measured under 0.05 ms have a median error of 74 % and their 90 %
    interval covers 35 % of them (``experiments/results/measured_board_check_H200.txt``). Such rows
    follow the floor of the machine they run on, which only a calibration measured there
    gives; rows answered by a reference, a measurement or the calibrated tier are not counted.
    """
    floor = getattr(model, "floor_", None)
    if floor is None or not getattr(floor, "floors_ms_", None) or "op" not in result.columns or not len(result):
        return None
    ops = result["op"].astype(str).str.strip()
    mine = (result["op"].notna() & ops.ne("") & result.get("tier", pd.Series("spec", index=result.index)).eq("spec")
            & result["basis"].isin(["training-boards", "description"])).to_numpy()
    if not mine.any():
        return None
    floors = floor.floor_ms(ops[mine])
    near = result["predicted_ms"].to_numpy(dtype=float)[mine] <= HOST_FLOOR_FACTOR * floors
    if not near.any():
        return None
    low, high = float(floors[near].min()), float(floors[near].max())
    span = f"{low:.3f} ms" if np.isclose(low, high) else f"{low:.3f}-{high:.3f} ms"
    return (f"{int(near.sum())} operator row(s) are predicted within {HOST_FLOOR_FACTOR:g}x of their launch floor "
            f"({span}: what a call without work took on the training corpus' hosts, PyTorch 2.1 and CUDA 12.1); "
            "the floor belongs to the host and its software more than to the GPU (an H100 host with PyTorch 2.11 "
            "ran calls from 0.014 ms), so these rows follow the floor of the machine that runs them: calibrate "
            "it with --calibration FILE, element-wise add calls timed there")
