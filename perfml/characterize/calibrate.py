"""The ``calibrated`` tier: achieved peaks inferred from measured runtimes of known work.

``perfml characterize --from-runtimes FILE --board B`` reads rows with the columns of
``runtimes.csv`` (``board``, ``app_id``, ``input_size``, launch, ``time_ms_median`` /
``time_ms_mean``) or of ``dlops_runtimes.csv`` (``board``, ``op``, ``B``, ``H``, ``M``,
``N``, ``K``, ``time_ms``) and infers, on board B only:

``dram_bandwidth`` [B/s]
    median of ``bytes / time`` over the *top sizes* of the streaming kernel
    (``vectorAdd``: bytes = ``dram_bytes_total`` of its kernel description; ``add``:
    3 tensors of B*H float32): the rows whose bytes are in the top
    :data:`TOP_FRACTION` of that kernel's rows, after dropping working sets smaller than
    :data:`L2_FACTOR` x the board's L2 (they would measure the L2, not the DRAM).
``fp32_throughput`` [FLOP/s]
    per compute kernel (every ``matMul`` variant, or ``bmm``), the median of
    ``flops / time`` over its top-FLOP rows; the kernel with the highest median is kept
    (the closest to the board's capacity). The nine-app matMuls are hand-written kernels
    far from the FP32 pipe's peak, so their value is a lower bound (``bound = "lower"``);
    cuBLAS ``bmm`` is an estimate of the achieved peak.
``launch_overhead`` [ms]
    the :data:`FLOOR_QUANTILE` quantile of the times of the smallest calls: the rows of
    known work with at most :data:`MAX_FLOOR_INTENSITY` FLOP per DRAM byte (a small matMul
    is not a small call) in the bottom :data:`FLOOR_FRACTION` of compulsory DRAM bytes
    (at least :data:`MIN_ROWS`), every kernel pooled. Those calls still do a little work, so it is
    an upper bound of the fixed cost per call. (nvprof kernel durations of ``runtimes.csv`` exclude the host's
    launch latency; NeuSight's CUDA-event times of ``dlops_runtimes.csv`` include it.)

Medians and low quantiles, not maxima: one fast outlier does not move the figure. Each
value's provenance names the file, the filters, the rows used (kernel and size range,
never the rows themselves), their number and the statistic.

Bad input (issue 11 §5), each a :class:`~perfml.errors.CalibrationDataError`: no row of
the board, a missing time or kernel column, fewer than :data:`MIN_ROWS` rows of known
work, only kernels of unknown work. A quantity the rows cannot give (no vectorAdd rows,
too few top-size rows) is left out, with an explicit warning in the file; values above
1.5x the specification are refused (:mod:`perfml.characterize.limits`).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np

from perfml._files import not_a_file
from perfml.characterize.characterization import Characterization
# working sets below L2_FACTOR x the L2 size do not calibrate the DRAM bandwidth (the same limit
# decides which knots of a streaming curve are DRAM-bound)
from perfml.characterize.limits import L2_FACTOR, MAX_OVERHEAD_S, WARN_STREAM_SHARE
from perfml.characterize.stream_curve import MIN_KNOTS, StreamCurve
from perfml.characterize.values import CharacterizedValue
from perfml.errors import CalibrationDataError, UnknownBoardError

__all__ = [
    "CUPTI_DURATION_TIMING",
    "FLOOR_FRACTION",
    "FLOOR_QUANTILE",
    "L2_FACTOR",
    "MAX_FLOOR_INTENSITY",
    "MIN_ROWS",
    "KERNEL_DURATION_TIMINGS",
    "NVPROF_DURATION_TIMING",
    "NVPROF_SOURCES",
    "TOP_FRACTION",
    "calibrate_from_rows",
    "calibrate_from_runtimes",
    "launch_timing",
    "timing_kind",
    "read_runtime_rows",
]

#: fewest rows of known work a calibration accepts, and fewest rows behind one statistic
MIN_ROWS = 3
#: share of a kernel's rows (largest work first) that are its "top sizes"
TOP_FRACTION = 0.2
#: share of the rows of known work (fewest DRAM bytes first) that are the "smallest calls"
FLOOR_FRACTION = 0.05
#: calls doing more FLOPs per DRAM byte than this are compute-heavy, not "small"
MAX_FLOOR_INTENSITY = 1.0
#: quantile of the smallest calls' times taken as the launch floor
FLOOR_QUANTILE = 0.1
#: a call is launch-bound when its roofline at the registry's peaks (the L2's worth of bytes
#: from a warm cache) is at most this share of its time: the smallest calls of every board of
#: the data home are at 0.43 or less (the GTX-680's vectorAdd of 131072 floats), a
#: bandwidth-bound call at 0.6-0.9. The launch overhead and the bottom of a streaming curve
#: are read only from such calls: the three largest add calls of a T4 gave a "launch
#: overhead" of 1.38 ms, and every small call was predicted at it.
LAUNCH_BOUND_SHARE = 0.5
#: a streaming-kernel call that takes this many times longer than one moving at least twice
#: its bytes is refused: a larger call of the same kernel is never several times faster (the
#: L2 makes small calls faster, not slower; in the data home and this project's H100 and
#: H200 measurements the worst such pair is 1.48x, the T4's add calls of different shapes),
#: so one of the two times is in another unit
MAX_STREAM_INVERSION = 4.0
# WARN_STREAM_SHARE (a calibrated DRAM bandwidth below it is told) is perfml.characterize.limits'

#: time columns, in order of preference (a median is robust to a slow repetition)
TIME_COLUMNS = ("time_ms", "time_ms_median", "time_ms_mean")

#: (kernel column, streaming kernels, compute-kernel family) per corpus
_CORPORA = {
    "runtimes": ("app_id", ("vectorAdd",), "matMul"),
    "dlops": ("op", ("add",), "bmm"),
}
#: columns of a calibration row that, where given, must be positive whole numbers
_SIZE_COLUMNS = ("input_size", "block_x", "block_y", "grid_x", "grid_y", "B", "H", "M", "N", "K")
_READ_COLUMNS = (
    "source", "board", "app", "app_id", "op", "gpu_config", "input_size", "block_x", "block_y",
    "grid_x", "grid_y", "B", "H", "M", "N", "K", *TIME_COLUMNS,
)


def sha256_of(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _result_set_sha256(path: Path) -> str:
    """Hex sha256 over a result set's manifest and data parts (names and bytes, in name order)."""
    digest = hashlib.sha256()
    for part in sorted([path / "manifest.json", *path.glob("part-*.parquet")]):
        if part.is_file():
            digest.update(part.name.encode() + b"\0" + sha256_of(part).encode())
    return digest.hexdigest()


def _manifest_sha256(path: Path) -> str | None:
    """The sha256 the data home's ``manifest.csv`` (next to the file) lists for it."""
    import csv

    manifest = path.parent / "manifest.csv"
    if not manifest.is_file():
        return None
    with manifest.open(newline="") as fh:
        for row in csv.DictReader(fh):
            if row.get("file") == path.name:
                return row.get("sha256")
    return None


def read_runtime_rows(path: str | os.PathLike[str]):
    """Read the columns a calibration uses from a CSV (``.csv`` or ``.csv.gz``), or the
    application kernels of a sweep result-set folder (``perfml sweep run --out``, e.g. the
    ``calibration`` spec on the target: :func:`perfml.measure.runtime_rows.application_runtime_rows`).

    Raises
    ------
    CalibrationDataError
        The file is missing, unreadable or not a CSV; the folder is not a measured result set.
    """
    import pandas as pd

    path = Path(path)
    if path.is_dir():
        from perfml.errors import PerfmlError
        from perfml.measure.runtime_rows import application_runtime_rows

        try:
            rows = application_runtime_rows(path)
        except PerfmlError as exc:
            raise CalibrationDataError(f"calibration folder {path}: {exc}") from None
        if rows.empty:
            raise CalibrationDataError(f"calibration folder {path} holds no application kernel run; measure the "
                                       "`calibration` spec on the target (perfml sweep run calibration --out "
                                       f"{path})")
        return rows[[c for c in rows.columns if c in _READ_COLUMNS]]
    why = not_a_file(path)
    if why is not None:
        raise CalibrationDataError(f"calibration file {path} {why}; pass a CSV of runtime rows "
                                   "or a sweep result-set folder")
    from perfml._csv_header import check_header

    try:
        header = check_header(path, CalibrationDataError, f"calibration file {path}")
        # " time_ms " names time_ms, as in the query and reference files (the header's spaces dropped)
        usecols = [c for c in header if c.strip() in _READ_COLUMNS]
        if not any(c.strip() == "board" for c in header):
            shown = ", ".join(repr(c) for c in header[:8]) or "none"
            raise CalibrationDataError(
                f"calibration file {path}: no board column in its header (found {shown}); give a comma-separated "
                "CSV with columns board, the kernel (app_id or op), its sizes and time_ms"
            )
        try:
            import pyarrow  # noqa: F401

            engine = "pyarrow"
        except ImportError:  # pragma: no cover - pyarrow is optional
            engine = "c"
        frame = pd.read_csv(path, usecols=usecols, engine=engine)
        frame.columns = [str(c).strip() for c in frame.columns]
        return frame
    except CalibrationDataError:
        raise
    except UnicodeDecodeError as exc:
        from perfml._csv_header import not_utf8

        raise CalibrationDataError(not_utf8(f"calibration file {path}", exc, path)) from None
    except (ValueError, OSError, pd.errors.ParserError) as exc:
        raise CalibrationDataError(f"cannot read calibration file {path} as CSV ({exc})") from None


#: the data home's runtimes sources, all timed by nvprof (kernel duration; the datasets README)
NVPROF_SOURCES = ("BSPGPU", "gpuperfpredict-nca", "gpuperfpredict-rodinia")


#: launch_timing label of the data home's nvprof-timed runtimes
NVPROF_DURATION_TIMING = "nvprof kernel duration (excludes host launch latency)"
#: launch_timing label of a ``perfml sweep run --timing kernel-duration`` result set
CUPTI_DURATION_TIMING = ("CUPTI kernel duration (perfml sweep run --timing kernel-duration; excludes host launch "
                         "latency, as nvprof)")
#: launch_timing labels whose times hold the kernel alone, no host launch latency
KERNEL_DURATION_TIMINGS = (NVPROF_DURATION_TIMING, CUPTI_DURATION_TIMING)


def launch_timing(corpus: str, sources=None) -> str:
    """How the rows a launch floor comes from were timed: what that floor includes.

    The data home's application runtimes are nvprof kernel durations (no host launch
    latency); NeuSight's operator calls are timed around the whole call; a sweep of
    ``perfml sweep run`` times each launch between CUDA events (``cupyx.profiler.benchmark``)
    unless run with ``--timing kernel-duration`` (CUPTI's kernel records, the durations
    nvprof reports: :mod:`perfml.measure.kernel_timing`). A source perfml does not know is
    said to be unknown rather than guessed.
    """
    from perfml.measure.runtime_rows import SWEEP_DURATION_SOURCE, SWEEP_SOURCE

    if corpus != "runtimes":
        return "CUDA events around the whole call (includes launch)"
    named = set() if sources is None else {str(s) for s in sources.dropna().unique()}
    kinds = set()
    for source in named or {""}:
        if source in NVPROF_SOURCES:
            kinds.add(NVPROF_DURATION_TIMING)
        elif source.startswith(SWEEP_DURATION_SOURCE):  # before SWEEP_SOURCE, its prefix
            kinds.add(CUPTI_DURATION_TIMING)
        elif source.startswith(SWEEP_SOURCE):
            kinds.add("CUDA events around each launch (perfml sweep run: cupyx.profiler.benchmark)")
        else:
            kinds.add("not recorded in the rows (no source perfml knows the timing of)")
    return "; ".join(sorted(kinds))


def timing_kind(label: str) -> str:
    """What a :func:`launch_timing` label's times hold: ``"kernel duration"`` (nvprof or CUPTI alike), else the label.

    Two floors timed as kernel durations compare, whichever tool read them; a mix of
    timings in one label (rows of several sources) stays its own kind.
    """
    return "kernel duration" if label in KERNEL_DURATION_TIMINGS else label


def _time_column(frame) -> str:
    for name in TIME_COLUMNS:
        if name in frame.columns:
            return name
    raise CalibrationDataError(
        f"calibration rows need a time column ({' or '.join(TIME_COLUMNS)}, in ms); found columns "
        f"{', '.join(map(str, frame.columns))}"
    )


def _corpus(frame) -> str:
    if "app_id" in frame.columns:
        if "input_size" not in frame.columns:
            raise CalibrationDataError("runtimes rows (with app_id) need an input_size column")
        return "runtimes"
    if "op" in frame.columns:
        return "dlops"
    raise CalibrationDataError(
        "calibration rows need the kernel: an app_id column (rows of runtimes.csv) or an op column "
        f"(rows of dlops_runtimes.csv); found {', '.join(map(str, frame.columns))}"
    )


def _empty_cells(column) -> np.ndarray:
    """Where a cell of ``column`` is empty: missing, or only spaces (text cells as read)."""
    return (column.isna() | (column.astype(str).str.strip() == "")).to_numpy()


def of_board(names, board: str) -> np.ndarray:
    """Per row, whether its board name (a column of names) denotes ``board`` (:func:`perfml.boards.same_board`)."""
    import pandas as pd

    from perfml.boards import same_board

    names = pd.Series(names).astype(str)
    return names.isin([name for name in names.unique() if same_board(name, board)]).to_numpy()


def _board_rows(frame, board: str, file=None):
    rows_of = str(file) if file is not None else "the calibration rows"
    if "board" not in frame.columns:
        raise CalibrationDataError(f"{rows_of}: calibration rows need a board column")
    if not len(frame):
        raise CalibrationDataError(f"{rows_of}: no rows under the header; add the runs measured on {board}")
    empty = _empty_cells(frame["board"])
    if empty.any():
        raise CalibrationDataError(
            f"{_row_where(file, frame.index[np.flatnonzero(empty)[0]])}, column board: "
            "empty; name the board the row was measured on (or remove the row)"
        )
    mine = of_board(frame["board"], board)
    if not mine.any():
        present = ", ".join(sorted(frame["board"].astype(str).unique())[:12])
        raise CalibrationDataError(
            f"no row of board {board!r} in {rows_of} (boards present: {present}); the rows must be measured on "
            f"{board!r}: give a file of its runs (perfml predict calibrates the queries' board), or name the board "
            "the rows were measured on (perfml characterize --board)"
        )
    return frame[mine]


def _row_where(file, label) -> str:
    """``FILE, row r (line l)`` of a row label (a position when the rows were read from a file).

    ``l`` is the line the record starts on (:func:`perfml._csv_header.record_lines`): a blank
    line before it (skipped by the reader) put it below line r + 1, which the message said.
    The file is read again for it only here, when a message names a row.
    """
    name = Path(file).name if file is not None else "the calibration rows"
    if not isinstance(label, (int, np.integer)):
        return f"{name}, row {label!r}"
    lines = None
    if file is not None and Path(file).is_file():
        from perfml._csv_header import record_lines

        lines = record_lines(file)
    line = lines[label] if lines and 0 <= label < len(lines) else label + 2
    return f"{name}, row {label + 1} (line {line})"


def _refuse_unmeasured_times(rows, time_column: str, file) -> None:
    """Refuse a row whose time is empty, not finite, not positive (no kernel runs in 0 ms or less)
    or beyond :data:`perfml.characterize.limits.MAX_MEASURED_MS`.

    Such a row was dropped before, silently, so a file with one bad row calibrated from the
    others and the count in the "too few rows" message did not match the file.
    """
    import pandas as pd

    from perfml.characterize.limits import BAD_MEASURED_TIME, valid_measured_time

    bad = np.flatnonzero(~valid_measured_time(rows["_time_s"].to_numpy(dtype=float) * 1e3))
    if len(bad):
        i = int(bad[0])
        value = rows[time_column].iloc[i]
        found = "an empty cell or a missing-value marker (NA, n/a, ...)" if pd.isna(value) else repr(str(value))
        raise CalibrationDataError(
            f"{_row_where(file, rows.index[i])}, column {time_column}: {BAD_MEASURED_TIME}, found {found}"
            + (f" ({len(bad)} such rows)" if len(bad) > 1 else "")
            + "; remove the row or give its measured time")


def _refuse_bad_sizes(rows, file) -> None:
    """Refuse a row whose size or launch cell is given but is not a positive whole number,
    or a launch beyond CUDA's limits (:mod:`perfml.boards._launch_limits`).

    An empty cell is allowed (an operator has only some of the dimensions, a launch may be
    left out); anything else would leave the row's work unknown and the row silently out of
    the calibration, or fail deep in the kernel description's expressions. A block of 4096
    threads never ran, and it moved the calibrated launch overhead.
    """
    import pandas as pd

    from perfml.boards import MAX_BLOCK, MAX_GRID

    for column in [c for c in _SIZE_COLUMNS if c in rows.columns]:
        raw = rows[column]
        given = ~_empty_cells(raw)
        value = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
        high = MAX_BLOCK.get(column) or MAX_GRID.get(column) or np.inf
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(value) & (value >= 1) & (np.floor(value) == value) & (value <= high)
        bad = np.flatnonzero(given & ~ok)
        if len(bad):
            i = int(bad[0])
            expected = "a positive whole number" + (f" at most {high} (CUDA's launch limit)" if np.isfinite(high) else "")
            raise CalibrationDataError(
                f"{_row_where(file, rows.index[i])}, column {column}: expected {expected}, "
                f"found {str(raw.iloc[i])!r}; give the size the kernel ran at, or leave the cell empty where the "
                "kernel has no such dimension")


def _refuse_rows_without_size(rows, corpus: str, file) -> None:
    """Refuse a ``runtimes.csv`` row with an empty ``input_size``: a run is a kernel at a size,
    and without it the row's work fails deep in the kernel description's expressions."""
    if corpus != "runtimes":
        return
    empty = _empty_cells(rows["input_size"])
    if empty.any():
        i = int(np.flatnonzero(empty)[0])
        raise CalibrationDataError(f"{_row_where(file, rows.index[i])}, column input_size: empty; give the size "
                                   "the kernel ran at (or remove the row)")


def check_kernel_names(rows, file) -> None:
    """Refuse a row naming two kernels (``app_id`` and ``op`` both given), or an operator or a
    described kernel whose name is a known one in other letter case or with spaces (``ADD``,
    `` add``, ``VectorAdd``).

    The first was taken as its ``app_id`` kernel (vectorAdd), then refused for a time unit
    it did not have; the second was dropped as an operator of unknown work, silently.
    """
    import pandas as pd

    from perfml.apps import list_apps
    from perfml.datasets import DLOPS_OP_DIMS

    app = ~_empty_cells(rows["app_id"]) if "app_id" in rows.columns else np.zeros(len(rows), dtype=bool)
    op = ~_empty_cells(rows["op"]) if "op" in rows.columns else np.zeros(len(rows), dtype=bool)
    both = np.flatnonzero(app & op)
    if len(both):
        i = int(both[0])
        raise CalibrationDataError(
            f"{_row_where(file, rows.index[i])}, columns app_id and op: both name a kernel "
            f"({rows['app_id'].iloc[i]!r} and {rows['op'].iloc[i]!r}); keep the one the row measured")
    for column, given, names, what in (("op", op, tuple(DLOPS_OP_DIMS), "an operator name"),
                                       ("app_id", app, tuple(list_apps()), "the name of a described kernel")):
        if not given.any():
            continue
        known = {name.lower(): name for name in names}
        cells = rows[column].astype(str).to_numpy()
        for name in pd.unique(cells[given]):  # each distinct name once: a file holds thousands of rows of few kernels
            if name not in names and name.strip().lower() in known:
                i = int(np.flatnonzero(given & (cells == name))[0])
                raise CalibrationDataError(
                    f"{_row_where(file, rows.index[i])}, column {column}: {name!r} is not {what}; write "
                    f"{known[name.strip().lower()]!r} (names are matched exactly: letter case, no spaces)")


def _refuse_calibration_ops_of_unknown_work(rows, file) -> None:
    """Refuse an ``add`` or ``bmm`` row whose dimensions the work model refuses: such a row was
    left out of the calibration silently before (the operators a calibration reads,
    :data:`perfml.characterize._work.CALIBRATION_OPS`)."""
    from perfml.characterize._work import CALIBRATION_OPS
    from perfml.datasets import DLOPS_OP_DIMS

    bad = np.isin(rows["op"].astype(str).to_numpy(), CALIBRATION_OPS) & ~np.isfinite(rows["_bytes"].to_numpy(dtype=float))
    if not bad.any():
        return
    i = int(np.flatnonzero(bad)[0])
    op = str(rows["op"].iloc[i])
    needs = tuple(DLOPS_OP_DIMS[op])
    found = ", ".join(f"{c}={rows[c].iloc[i] if c in rows.columns else None!s}" for c in needs)
    raise CalibrationDataError(f"{_row_where(file, rows.index[i])}, columns {', '.join(needs)}: op {op!r} needs them as "
                               f"positive whole numbers, found {found}; give the call's dimensions, or remove the row")


def _refuse_rows_beyond_memory(rows, corpus: str, registry_board, file) -> None:
    """Refuse a row whose buffers exceed the board's memory: no such run can have been measured
    (the query paths refuse the same rows, :mod:`perfml.learned.queries`)."""
    from perfml.characterize._work import app_footprint

    memory = float(registry_board.global_mem_bytes or np.nan)
    if not np.isfinite(memory):
        return
    footprint = app_footprint(rows) if corpus == "runtimes" else rows["_bytes"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        over = np.flatnonzero(footprint > memory)
    if len(over):
        i = int(over[0])
        column = "input_size" if corpus == "runtimes" else "B, H, M, N, K"
        raise CalibrationDataError(
            f"{_row_where(file, rows.index[i])}, column {column}: the row's buffers hold {footprint[i] / 2**30:,.1f} GiB, "
            f"more than the {memory / 2**30:,.1f} GiB of {registry_board.name}: it cannot have run there; check "
            "the row's sizes and board")


def _refuse_unphysical_rows(known, registry_board, time_column: str, file) -> None:
    """Refuse a row measured faster than its work allows on the board (issue 11 §5).

    The row's lower bound is its roofline at the registry's peaks, with up to the L2's
    bytes from a warm cache (:func:`perfml.characterize.limits.first_unphysical_time`). A
    median over many rows would hide one such row; it still says the file is wrong.
    """
    from perfml.characterize.limits import first_unphysical_time, unphysical_time_message
    from perfml.errors import PhysicalLimitError

    bound_ms = _roofline_ms(known, registry_board)
    if bound_ms is None:
        return  # no peaks to bound by
    time_ms = known["_time_s"].to_numpy(dtype=float) * 1e3
    i = first_unphysical_time(time_ms, np.where(bound_ms > 0, bound_ms, np.nan))
    if i is None:
        return
    raise PhysicalLimitError(f"{_row_where(file, known.index[i])}, column {time_column}: "
                             f"{unphysical_time_message(time_ms[i], bound_ms[i], registry_board.name)}")


def _refuse_too_slow_streaming_rows(stream, registry_board, time_column: str, file) -> None:
    """Refuse a streaming-kernel row far slower than any board streams (a time in us or s among ms).

    The medians of :func:`calibrate_from_rows` hide one such row, and the streaming curve and
    the launch overhead take it as it is (five vectorAdd rows in microseconds predicted
    vectorAdd of 1M floats at 3.7 ms instead of 0.073). Refused: a row slower than a launch
    of :data:`~perfml.characterize.limits.MAX_OVERHEAD_S` plus its bytes at
    :data:`~perfml.characterize.limits.MIN_UNDER_SPEC` x the specified bandwidth (the
    limits of a calibrated value), and a row :data:`MAX_STREAM_INVERSION` x slower than a
    call of the same kernel moving at least twice its bytes.
    """
    from perfml.boards import peak_bandwidth
    from perfml.characterize.limits import MIN_UNDER_SPEC
    from perfml.errors import MissingBoardParameterError, PhysicalLimitError

    nbytes = stream["_bytes"].to_numpy(dtype=float)
    time_ms = stream["_time_s"].to_numpy(dtype=float) * 1e3
    ok = np.isfinite(nbytes) & np.isfinite(time_ms)
    try:
        bandwidth = peak_bandwidth(registry_board)
    except MissingBoardParameterError:
        bandwidth = None
    if bandwidth:
        ceiling_ms = MAX_OVERHEAD_S * 1e3 + nbytes / (MIN_UNDER_SPEC * bandwidth) * 1e3
        hits = np.flatnonzero(ok & (time_ms > ceiling_ms))
        if len(hits):
            i = int(hits[0])
            raise PhysicalLimitError(
                f"{_row_where(file, stream.index[i])}, column {time_column}: {time_ms[i]:.4g} ms for {nbytes[i]:.4g} "
                f"bytes is slower than any board streams (a launch of at most {MAX_OVERHEAD_S * 1e3:g} ms plus the "
                f"bytes at {MIN_UNDER_SPEC:g}x the {registry_board.name}'s {bandwidth / 1e9:.4g} GB/s: "
                f"{ceiling_ms[i]:.4g} ms); check the time unit of this row (milliseconds, not microseconds or seconds)")
    # the fastest call moving at least twice the bytes, per row (a suffix minimum over the sorted sizes)
    order = np.argsort(np.where(ok, nbytes, np.inf), kind="stable")
    sorted_bytes, sorted_time = nbytes[order], np.where(ok, time_ms, np.inf)[order]
    suffix_min = np.minimum.accumulate(sorted_time[::-1])[::-1]
    start = np.searchsorted(sorted_bytes, 2.0 * sorted_bytes, side="left")
    faster = np.where(start < len(order), suffix_min[np.minimum(start, len(order) - 1)], np.inf)
    hits = np.flatnonzero(ok[order] & (sorted_time > MAX_STREAM_INVERSION * faster))
    if len(hits):
        j = int(hits[0])
        i = int(order[j])
        k = int(order[start[j] + int(np.argmin(sorted_time[start[j]:]))])
        raise PhysicalLimitError(
            f"{_row_where(file, stream.index[i])}, column {time_column}: {time_ms[i]:.4g} ms for {nbytes[i]:.4g} bytes, "
            f"{time_ms[i] / time_ms[k]:.3g}x the time of {_row_where(file, stream.index[k])} ({time_ms[k]:.4g} ms for "
            f"{nbytes[k]:.4g} bytes, the same kernel moving more); a larger call is never several times faster: "
            "check the time unit of the two rows (milliseconds)")


def _share_of_spec_bandwidth(rate: float, registry_board) -> float:
    """``rate`` (B/s) over the board's specified DRAM bandwidth; inf where it is unknown (nothing to tell)."""
    from perfml.boards import peak_bandwidth
    from perfml.errors import MissingBoardParameterError

    try:
        return rate / peak_bandwidth(registry_board) if registry_board is not None else np.inf
    except MissingBoardParameterError:
        return np.inf


def _registry_board(board: str):
    from perfml.boards import get_board

    try:
        return get_board(board)
    except UnknownBoardError:
        return None


def _describe_sizes(part, corpus: str) -> dict[str, Any]:
    """A reproducible description of the rows used (never the rows themselves)."""
    if corpus == "runtimes":
        sizes = part["input_size"].astype(float)
        return {"input_size_min": float(sizes.min()), "input_size_max": float(sizes.max())}
    dims = {}
    for key in ("B", "H", "M", "N", "K"):
        if key in part.columns and part[key].notna().any():
            dims[f"{key}_min"] = float(part[key].min())
            dims[f"{key}_max"] = float(part[key].max())
    return dims


def _top(part, work_column: str, fraction: float):
    threshold = part[work_column].quantile(1.0 - fraction)
    return part[part[work_column] >= threshold], float(threshold)


def calibrate_from_rows(
    frame,
    board: str,
    *,
    file: str | os.PathLike[str] | None = None,
    source: str | None = None,
    command: str = "",
    min_rows: int = MIN_ROWS,
) -> Characterization:
    """Calibrate ``board`` from runtime rows (a DataFrame); see the module docstring.

    Parameters
    ----------
    frame : pandas.DataFrame
        Rows of ``runtimes.csv`` or ``dlops_runtimes.csv`` (other boards' rows are ignored).
    board : str
        The board to calibrate (registry name or alias; an unregistered name is matched
        after normalization, and then has no spec tier to check against).
    file : path-like, optional
        Where the rows came from, for the provenance (its sha256 is recorded, and compared
        with the data home's ``manifest.csv`` when the file sits next to one).
    source : str, optional
        Keep only rows of this ``source`` (e.g. ``gpuperfpredict-nca``).
    command : str
        The command line that produced it, for the provenance.

    Raises
    ------
    CalibrationDataError
        See the module docstring.
    PhysicalLimitError
        A calibrated value above 1.5x the board's specification.
    """
    import pandas as pd

    from perfml.characterize._work import app_work, op_work
    from perfml.characterize.spec import spec_values

    corpus = _corpus(frame)
    time_column = _time_column(frame)
    kernel_column, streaming, compute_family = _CORPORA[corpus]
    rows = _board_rows(frame, board, file)
    check_kernel_names(rows, file)
    filters: dict[str, Any] = {"board": board}
    if source is not None:
        if "source" not in rows.columns:
            raise CalibrationDataError(f"--source {source!r} given, but the rows have no source column")
        sources = rows["source"].astype(str)
        rows = rows[sources == source]
        filters["source"] = source
        if len(rows) == 0:
            present = sorted(sources.unique())
            raise CalibrationDataError(f"no row of board {board!r} with source {source!r}; its rows' sources: "
                                       f"{', '.join(present[:12])}{', ...' if len(present) > 12 else ''}")
    if "gpu_config" in rows.columns and (rows["gpu_config"].astype(str) == "default").any():
        rows = rows[rows["gpu_config"].astype(str) == "default"]
        filters["gpu_config"] = "default"
    rows = rows.copy()
    # a cell that is not a number becomes NaN here and is refused, by row, just below
    rows["_time_s"] = pd.to_numeric(rows[time_column], errors="coerce").to_numpy(dtype=float) * 1e-3
    _refuse_unmeasured_times(rows, time_column, file)
    _refuse_bad_sizes(rows, file)
    filters["time"] = f"{time_column} finite and > 0"

    _refuse_rows_without_size(rows, corpus, file)
    dram, flops, family = (app_work if corpus == "runtimes" else op_work)(rows)
    rows["_bytes"], rows["_flops"], rows["_family"] = dram, flops, family
    if corpus == "dlops":
        _refuse_calibration_ops_of_unknown_work(rows, file)
    known = rows[np.isfinite(rows["_bytes"]) | np.isfinite(rows["_flops"])]
    if len(known) == 0:
        kernels = ", ".join(sorted(rows[kernel_column].astype(str).unique())[:10]) or "none"
        raise CalibrationDataError(
            f"the rows of {board!r} are only kernels of unknown work ({kernels}); a calibration needs "
            f"kernels whose work is known ({'the nine apps of perfml.apps' if corpus == 'runtimes' else 'add, bmm'})"
        )
    if len(known) < min_rows:
        raise CalibrationDataError(
            f"{Path(file).name + ': ' if file is not None else ''}{len(known)} row(s) of known work for {board!r}; "
            f"a calibration needs at least {min_rows} "
            "(e.g. a vectorAdd or element-wise add sweep over several sizes)"
        )

    registry_board = _registry_board(board)
    if registry_board is not None:
        _refuse_rows_beyond_memory(rows, corpus, registry_board, file)
        _refuse_unphysical_rows(known, registry_board, time_column, file)
        _refuse_too_slow_streaming_rows(known[known[kernel_column].astype(str).isin(streaming)], registry_board,
                                        time_column, file)
    spec = spec_values(registry_board) if registry_board is not None else ()
    path = Path(file) if file is not None else None
    base = {"file": path.name if path else "(in-memory rows)", "filters": dict(filters), "time_column": time_column}
    values: list[CharacterizedValue] = []
    warnings: list[str] = []
    if registry_board is None:
        warnings.append(
            f"board {board!r} is not in the registry: no spec tier, so the calibrated values are checked "
            "for being finite and positive only, not against a specification"
        )

    # -- DRAM bandwidth from the streaming kernel's top sizes --------------------------------------
    stream = known[known[kernel_column].astype(str).isin(streaming) & np.isfinite(known["_bytes"])]
    l2 = getattr(registry_board, "l2_bytes", None)
    if l2:
        stream = stream[stream["_bytes"] >= L2_FACTOR * l2]
    if len(stream) >= min_rows:
        top, threshold = _top(stream, "_bytes", TOP_FRACTION)
        if len(top) < min_rows:  # few distinct sizes: take the largest min_rows rows
            top = stream.nlargest(min_rows, "_bytes")
        rate = top["_bytes"] / top["_time_s"]
        share = _share_of_spec_bandwidth(float(np.median(rate)), registry_board)
        if share < WARN_STREAM_SHARE:
            warnings.append(stream_share_warning("/".join(streaming), share))
        filters_used = {**filters, kernel_column: list(streaming), "bytes_min": float(top["_bytes"].min())}
        if l2:
            filters_used["footprint"] = f">= {L2_FACTOR} x l2_bytes ({L2_FACTOR * l2} bytes)"
        values.append(
            CharacterizedValue(
                quantity="dram_bandwidth",
                value=float(np.median(rate)),
                unit="B/s",
                tier="calibrated",
                source=f"median bytes/time of the top-size {'/'.join(streaming)} rows of {base['file']}",
                provenance={
                    **base,
                    "filters": filters_used,
                    "kernel": "/".join(streaming),
                    "work": "dram_bytes_total of perfml.apps" if corpus == "runtimes" else "3 * B * H * 4 bytes",
                    "rows": {**_describe_sizes(top, corpus), "n_rows": int(len(top))},
                    "n_rows": int(len(top)),
                    "statistic": f"median of bytes / time over the rows in the top {TOP_FRACTION:.0%} of bytes",
                    "spread": {"min": float(rate.min()), "max": float(rate.max())},
                },
            )
        )
    else:
        warnings.append(
            f"dram_bandwidth not calibrated: {len(stream)} row(s) of {'/'.join(streaming)} "
            f"large enough (need {min_rows}{f', working set >= {L2_FACTOR} x L2' if l2 else ''})"
        )

    # -- streaming time at every size (L2, latency-bound and launch-bound sizes included) ----------
    curve = _stream_curve(known, kernel_column, streaming, corpus, base, min_rows, warnings, registry_board)

    # -- FP32 throughput from the best compute kernel's top FLOP rows -------------------------------
    if corpus == "runtimes":
        compute = known[(known["_family"] == compute_family) & np.isfinite(known["_flops"])]
    else:
        compute = known[(known[kernel_column].astype(str) == compute_family) & np.isfinite(known["_flops"])]
    per_kernel = {}
    for kernel, part in compute.groupby(kernel_column, sort=True):
        if len(part) < min_rows:
            continue
        top, _ = _top(part, "_flops", TOP_FRACTION)
        if len(top) < min_rows:
            top = part.nlargest(min_rows, "_flops")
        per_kernel[str(kernel)] = (float(np.median(top["_flops"] / top["_time_s"])), top)
    if per_kernel:
        best_kernel = max(per_kernel, key=lambda k: per_kernel[k][0])
        rate, top = per_kernel[best_kernel]
        values.append(
            CharacterizedValue(
                quantity="fp32_throughput",
                value=rate,
                unit="FLOP/s",
                tier="calibrated",
                bound="lower" if corpus == "runtimes" else "estimate",
                source=f"median FLOPs/time of the top-FLOP {best_kernel} rows of {base['file']}",
                provenance={
                    **base,
                    "filters": {**filters, kernel_column: best_kernel},
                    "kernel": best_kernel,
                    "work": "flops x threads of perfml.apps" if corpus == "runtimes" else "2 * B * M * N * K",
                    "rows": {**_describe_sizes(top, corpus), "n_rows": int(len(top))},
                    "n_rows": int(len(top)),
                    "statistic": (
                        f"median of flops / time over the rows in the top {TOP_FRACTION:.0%} of flops, "
                        "best kernel of: " + ", ".join(f"{k} {v[0]:.4g}" for k, v in sorted(per_kernel.items()))
                    ),
                    **({"note": "hand-written matMul kernels do not reach the FP32 pipe's peak: "
                        "the board sustains at least this rate"} if corpus == "runtimes" else {}),
                },
            )
        )
    else:
        warnings.append(
            f"fp32_throughput not calibrated: no {compute_family} kernel with {min_rows} or more rows of known work"
        )

    # -- launch floor from the smallest calls ------------------------------------------------------
    intensity = known["_flops"].fillna(0.0) / known["_bytes"]
    sized = known[np.isfinite(known["_bytes"]) & (intensity <= MAX_FLOOR_INTENSITY)]
    k = max(min_rows, int(np.ceil(FLOOR_FRACTION * len(sized))))
    smallest = sized.nsmallest(k, "_bytes")
    bound_share = _roofline_share(smallest, registry_board)
    floor_ms = float(np.quantile(smallest["_time_s"], FLOOR_QUANTILE)) * 1e3 if len(smallest) else np.nan
    if len(smallest) >= min_rows and bound_share > LAUNCH_BOUND_SHARE:
        warnings.append(
            f"launch_overhead not calibrated: the smallest calls ({smallest['_bytes'].max():.4g} bytes or less) are not "
            f"launch-bound (their roofline is {bound_share:.2f} of their time, over {LAUNCH_BOUND_SHARE}): add calls "
            "of a few kB")
    elif len(smallest) >= min_rows and floor_ms > MAX_OVERHEAD_S * 1e3:
        warnings.append(
            f"launch_overhead not calibrated: the smallest calls took {floor_ms:.4g} ms, more than any launch "
            f"({MAX_OVERHEAD_S * 1e3:g} ms): check the time unit of the rows (milliseconds)")
    elif len(smallest) >= min_rows:
        values.append(
            CharacterizedValue(
                quantity="launch_overhead",
                value=floor_ms,
                unit="ms",
                tier="calibrated",
                bound="upper",
                source=f"{FLOOR_QUANTILE:.0%} quantile of the smallest calls' times in {base['file']}",
                provenance={
                    **base,
                    "kernels": sorted(map(str, smallest[kernel_column].unique())),
                    "rows": {"bytes_max": float(smallest["_bytes"].max()), "n_rows": int(len(smallest))},
                    "n_rows": int(len(smallest)),
                    "statistic": (
                        f"{FLOOR_QUANTILE} quantile of time over the rows of known work with at most "
                        f"{MAX_FLOOR_INTENSITY:g} FLOP per DRAM byte in the bottom {FLOOR_FRACTION:.0%} of "
                        f"compulsory DRAM bytes (at least {min_rows} rows)"
                    ),
                    "timing": launch_timing(corpus, smallest.get("source")),
                },
            )
        )
    else:
        warnings.append(f"launch_overhead not calibrated: {len(smallest)} smallest call(s), need {min_rows}")

    if not values:
        raise CalibrationDataError(
            f"the rows of {board!r} give no calibrated value ({'; '.join(warnings)}); add a sweep of "
            f"{'/'.join(streaming)} or {compute_family} over several sizes"
        )
    provenance: dict[str, Any] = {
        "command": command,
        "data_file": base["file"],
        "corpus": corpus,
        "filters": filters,
        "n_rows_board": int(len(rows)),
        "n_rows_known_work": int(len(known)),
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if path is not None and path.is_dir():
        provenance["sha256"] = _result_set_sha256(path)
    if path is not None and path.is_file():
        provenance["sha256"] = sha256_of(path)
        listed = _manifest_sha256(path)
        if listed is not None:
            provenance["manifest_sha256"] = listed
            if listed != provenance["sha256"]:
                warnings.append(
                    f"{path.name}: sha256 differs from the data home's manifest.csv (the data file was changed)"
                )
    return Characterization(
        board=registry_board.name if registry_board is not None else board,
        source=f"calibrated from {base['file']}",
        device={"name": board},
        values=tuple(spec) + tuple(values),
        warnings=tuple(warnings),
        provenance=provenance,
        stream_curve=curve,
    )


def _roofline_ms(rows, registry_board):
    """Per row, its roofline (ms) at the registry's peak FP32 rate and DRAM bandwidth, the L2's
    worth of bytes from a warm cache (:func:`perfml.boards.l2_resident_roofline_ms`); None
    where the board or a peak is unknown."""
    from perfml.boards import l2_resident_roofline_ms, peak_bandwidth, peak_flops
    from perfml.errors import MissingBoardParameterError

    if registry_board is None:
        return None
    try:
        fp32, bandwidth = peak_flops(registry_board, "fp32"), peak_bandwidth(registry_board)
    except MissingBoardParameterError:
        return None
    return l2_resident_roofline_ms(np.nan_to_num(rows["_flops"].to_numpy(dtype=float), nan=0.0),
                                   np.nan_to_num(rows["_bytes"].to_numpy(dtype=float), nan=0.0),
                                   peak_flops_per_s=fp32, peak_bytes_per_s=bandwidth,
                                   l2_bytes=float(registry_board.l2_bytes or 0.0))


def _roofline_share(rows, registry_board) -> float:
    """Median over ``rows`` of their roofline (:func:`_roofline_ms`) over their time; 0 if unknown."""
    bound_ms = _roofline_ms(rows, registry_board) if len(rows) else None
    if bound_ms is None:
        return 0.0
    return float(np.median(bound_ms / (rows["_time_s"].to_numpy(dtype=float) * 1e3)))


def _stream_curve(known, kernel_column: str, streaming, corpus: str, base: dict, min_rows: int,
                  warnings: list[str], registry_board=None) -> StreamCurve | None:
    """The streaming kernel's median time per distinct byte count (:mod:`perfml.characterize.stream_curve`).

    Every size counts (no L2 filter: the curve is meant to hold the L2 and launch-bound
    sizes too). Fewer than ``max(min_rows, MIN_KNOTS)`` distinct sizes: no curve, and a
    warning in the file.
    """
    rows = known[known[kernel_column].astype(str).isin(streaming) & np.isfinite(known["_bytes"])
                 & (known["_bytes"] > 0)]
    sizes = int(rows["_bytes"].nunique())
    if sizes < max(min_rows, MIN_KNOTS):
        warnings.append(
            f"stream_curve not built: {sizes} distinct size(s) of {'/'.join(streaming)} (need {max(min_rows, MIN_KNOTS)})"
        )
        return None
    first = rows[rows["_bytes"] == rows["_bytes"].min()]
    share = _roofline_share(first, registry_board)
    if share > LAUNCH_BOUND_SHARE:
        warnings.append(
            f"stream_curve not built: its smallest call ({first['_bytes'].iloc[0]:.4g} bytes) is not launch-bound "
            f"(its roofline is {share:.2f} of its time, over {LAUNCH_BOUND_SHARE}), so the curve would hold its "
            f"time for every smaller call: add {'/'.join(streaming)} calls down to a few kB")
        return None
    kernel = "/".join(streaming)
    work = "dram_bytes_total of perfml.apps" if corpus == "runtimes" else "3 * B * H * 4 bytes"
    return StreamCurve.from_samples(
        rows["_bytes"].to_numpy(), rows["_time_s"].to_numpy(), kernel=kernel, tier="calibrated",
        source=f"{kernel} rows of {base['file']} ({len(rows)} rows, bytes = {work})",
        statistic="median time per distinct byte count, made non-decreasing in bytes (weighted isotonic regression)",
    )


#: repeats of one run further apart than this factor are told (:func:`repeat_spread_warning`,
#: and for --reference files :func:`perfml.learned.bundle.reference_repeat_warnings`): the
#: run-to-run spread of one board is a few % for calls >= 0.05 ms and about 13 % below
#: (an H200 and its repeat, sweeps/results/archive/H200-run2), never 2x
REPEAT_SPREAD_WARN = 2.0


def far_repeats(times, runs) -> list[np.ndarray]:
    """The runs measured more than once whose times are more than :data:`REPEAT_SPREAD_WARN`x
    apart, each as the positions of its rows.

    ``runs``: one row per time, the columns that name a run (equal cells, empty equal to
    empty, are one run): the rule of the repeat warnings of calibrations
    (:func:`repeat_spread_warning`). A reference's repeats are the rows its lookup merges
    (:func:`perfml.learned.bundle.reference_repeat_warnings`).
    """
    import pandas as pd

    ids = runs.astype(str).groupby(list(runs.columns), sort=False, dropna=False).ngroup().to_numpy()
    stats = pd.Series(np.asarray(times, dtype=float)).groupby(ids).agg(["count", "min", "max"])
    far = stats.index[(stats["count"] > 1) & (stats["max"] > REPEAT_SPREAD_WARN * stats["min"])]
    return [np.flatnonzero(ids == g) for g in far]


def stream_share_warning(kernel: str, share: float) -> str:
    """The warning of a DRAM bandwidth that ``kernel`` (a streaming kernel) reached at ``share`` x
    the specification, under :data:`~perfml.characterize.limits.WARN_STREAM_SHARE`: written into a
    calibrated characterization, and given again when a file holding such a value is used
    (:func:`perfml.learned.target_characterization.file_consistency_warnings`)."""
    return (f"dram_bandwidth: {kernel} reached {share:.2g}x the specified bandwidth, where it reaches 0.6-0.9x on "
            "every board of the data home: check the time unit of the rows (milliseconds) and that the board is the "
            "one named")


def repeat_spread_warning(frame, board: str, where) -> str | None:
    """A line telling the runs of ``board`` measured more than once whose times disagree by
    more than :data:`REPEAT_SPREAD_WARN`x (:func:`far_repeats`), or None.

    The calibration takes medians and quantiles over the rows, so such repeats do not stop
    it, but they move it (the file's rows pasted again at 100x the time halved the
    calibrated DRAM bandwidth): one of them has a wrong unit, board or size. A run is the
    kernel, its sizes and launch, and (where the rows carry them) the source and GPU
    configuration. Rows that are not times at all are refused elsewhere.
    """
    import pandas as pd

    try:
        kernel_column = _CORPORA[_corpus(frame)][0]
        time_column = _time_column(frame)
        rows = _board_rows(frame, board)
    except CalibrationDataError:
        return None  # the calibration itself says what is wrong
    keys = ["board", kernel_column, *[c for c in (*_SIZE_COLUMNS, "input_size_2", "source", "gpu_config")
                                      if c in rows.columns and c != kernel_column]]
    times = pd.to_numeric(rows[time_column], errors="coerce").to_numpy(dtype=float)
    far = far_repeats(times, rows[keys])
    if not far:
        return None
    first = rows.iloc[far[0][0]]
    low, high = times[far[0]].min(), times[far[0]].max()
    at = ", ".join(f"{k}={first[k]}" for k in keys[2:] if pd.notna(first[k]))
    return (f"{where}: {len(far)} run(s) of {board} measured more than once are more than {REPEAT_SPREAD_WARN:g}x "
            f"apart (e.g. {first[kernel_column]} at {at}: {low:.4g} to {high:.4g} ms, {high / low:.3g}x); the "
            "calibration takes medians over such rows: check their unit, board and sizes")


def calibrate_from_runtimes(
    path: str | os.PathLike[str],
    board: str,
    *,
    source: str | None = None,
    command: str = "",
    frame=None,
) -> Characterization:
    """Read ``path`` (:func:`read_runtime_rows`) and calibrate ``board`` from its rows.

    ``frame`` may pass the rows already read (several boards from one file). Repeats of a
    run far apart (:func:`repeat_spread_warning`) are among the result's ``warnings``, so
    that a file written from it (``--out``) and its JSON keep them, not only the terminal.
    """
    from dataclasses import replace

    rows = read_runtime_rows(path) if frame is None else frame
    ch = calibrate_from_rows(rows, board, file=path, source=source, command=command)
    if source is not None and "source" in rows.columns:
        rows = rows[rows["source"].astype(str) == source]
    spread = repeat_spread_warning(rows, board, path)
    return replace(ch, warnings=(*ch.warnings, spread)) if spread else ch
