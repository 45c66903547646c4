"""Features of one operator row on one board: its work, the board, and where the two meet.

Every feature is computed from the row's operator and dimensions
(:func:`perfml.operators.operator_work`), the board registry
(:func:`perfml.boards.peak_flops`, :func:`perfml.boards.peak_bandwidth`, SMs, L2, clocks)
and, optionally, the board's characterization (``char_*``,
:class:`perfml.learned.features.characterization.CharacterizationFeatures`). Nothing is
learned from measured times here: the transfer group is
:mod:`perfml.learned.operator_model._transfer`.

Groups (natural logs throughout; NaN where an operator does not use a dimension):

``op=<name>``, ``class=<name>``
    one-hot operator and op class (NeuSight's BMM, FC, EW, Softmax, LN; Conv apart).
``work_*``
    log FLOPs, log bytes, log arithmetic intensity (FLOP/byte), reductions per row,
    log reduction length (Williams et al. 2009 for the intensity; the work formulas are
    those of :mod:`perfml.operators`).
``dim_*``
    log of every dimension (B, M, N, K, H, conv channels, kernel, input size), stride,
    padding, log output elements.
``board_*``
    log peak FP32 FLOP/s, log peak DRAM bandwidth, log ridge point (FLOP/byte at which
    the roofline turns), log SMs, log L2 bytes, log boost clock.
    (Computed here; :class:`~perfml.learned.operator_model._regressor.OperatorRegressor`
    drops them unless ``board_identity=True``: five boards give five values, which a tree
    learns as board identities.)
``fit_*``
    where work and board meet: log(bytes / L2) (does the footprint fit in L2, where the
    DRAM roofline does not bind), log(intensity / ridge point) (which roof binds), log
    output elements per SM (how many waves of work each SM runs; NeuSight's tile/wave
    view [2]_), log of the compute and memory roofline times and of the bound.
``char_*`` (``characterization=True``)
    the board's achieved DRAM bandwidth, FP32 rate and launch floor and their ratios to
    the datasheet, plus the roofline time with the achieved peaks (the memory roof from
    the board's streaming curve where it has one) and the launch floor over the spec bound.

References
----------
.. [1] S. Williams, A. Waterman, D. Patterson, "Roofline: An Insightful Visual Performance
   Model for Multicore Architectures", CACM 52(4), 2009.
.. [2] S. Lee, A. Phanishayee, D. Mahajan, "Forecasting GPU Performance for Deep Learning
   Training and Inference" (NeuSight), ASPLOS 2025, doi:10.1145/3669940.3707265, Section 4
   (tiles, waves and per-tile utilization).
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from perfml.learned.features.characterization import CHARACTERIZATION_COLUMNS
from perfml.operators import OP_CLASS, OP_CLASSES, operator_work

__all__ = [
    "BOARD_LEVEL_CHAR",
    "DIM_COLUMNS",
    "MONOTONE",
    "board_peaks",
    "bound_ms",
    "characterization_block",
    "held_intensity_over_ridge",
    "operator_feature_frame",
    "stream_memory_s",
]

#: dimension columns of the corpus (README, dlops_runtimes column dictionary)
DIM_COLUMNS = ("B", "M", "N", "K", "H", "in_channels", "out_channels", "kernel_size", "input_size", "stride", "padding")

#: ``char_*`` columns with one value per board (not per row): raw board figures, kept only
#: with ``board_identity`` (:class:`~perfml.learned.operator_model._regressor.OperatorRegressor`)
BOARD_LEVEL_CHAR = CHARACTERIZATION_COLUMNS

#: monotone constraints on the residual log(T / T_bound), with the spec bound of the row
#: held fixed: more achieved bandwidth or FP32 never slows a call (-1), a higher launch
#: floor or a higher achieved-peak roofline time never speeds it up (+1)
MONOTONE = {
    "char_log_dram_bandwidth": -1,
    "char_log_fp32_throughput": -1,
    "char_dram_over_spec": -1,
    "char_fp32_over_spec": -1,
    "char_log_launch_floor_ms": 1,
    "char_log_bound_ms": 1,
    "char_log_floor_over_bound": 1,
}


def _log(values) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(v > 0, np.log(np.where(v > 0, v, 1.0)), np.nan)


@functools.lru_cache(maxsize=256)
def _default_peaks(name: str, board_files: tuple) -> tuple[float, float, float, float, float]:
    # keyed by the user's boards files too: another file may give the same name other values
    return _peaks(name, None)


def _peaks(name: str, registry) -> tuple[float, float, float, float, float]:
    from perfml.boards import get_board, peak_bandwidth, peak_flops

    board = get_board(name, registry=registry)
    return (
        float(peak_flops(board)),
        float(peak_bandwidth(board)),
        float(board.sms or np.nan),
        float(board.l2_bytes or np.nan),
        float(board.boost_clock_mhz or np.nan),
    )


def board_peaks(boards, registry=None) -> pd.DataFrame:
    """Peak FP32 (FLOP/s), peak bandwidth (B/s), SMs, L2 bytes, boost clock (MHz) per row.

    Raises
    ------
    UnknownBoardError
        A board is not in the registry.
    MissingBoardParameterError
        The registry lacks a peak's inputs for a board.
    """
    boards = pd.Series(boards).astype(str).to_numpy()
    if registry is None:
        from perfml.boards._registry import registry_key

        files = registry_key()
        lookup = lambda b: _default_peaks(b, files)  # noqa: E731
    else:
        lookup = lambda b: _peaks(b, registry)  # noqa: E731
    unique = {b: lookup(b) for b in dict.fromkeys(boards)}
    values = np.array([unique[b] for b in boards], dtype=float).reshape(len(boards), 5)
    return pd.DataFrame(values, columns=["peak_fp32", "peak_bw", "sms", "l2_bytes", "boost_clock_mhz"])


def held_intensity_over_ridge(frame: pd.DataFrame, X: pd.DataFrame, train_boards, registry=None) -> np.ndarray:
    """``fit_log_intensity_over_ridge`` with the ridge point of the two peaks held to the training boards' range.

    The ridge point (peak FP32 / peak bandwidth, Williams et al. 2009) is a ratio of two
    capacities. A board beyond every training board in both (an H200 beside an H100:
    4.8 and 3.35 TB/s, the same FP32 rate) has its ridge inside the training range, where
    the trees split on it, and came out up to 1.2x slower than the H100 on element-wise
    calls. Each peak held to the training boards' [min, max] (where a tree is flat anyway)
    gives both the same ridge, and the bound, which scales with each peak, orders them. A
    training board's own peaks lie in the range: its value is unchanged.
    """
    columns = ["peak_fp32", "peak_bw"]
    own = board_peaks(X["board"], registry)[columns].to_numpy(dtype=float)
    train = board_peaks(list(train_boards), registry)[columns].to_numpy(dtype=float)
    # numpy rather than DataFrame.clip, as this runs on every query; fmin / fmax leave a NaN bound unclipped, as pandas does
    held = np.fmax(np.fmin(own, np.max(train, axis=0)), np.min(train, axis=0))
    return frame["work_log_intensity"].to_numpy() - _log(held[:, 0] / held[:, 1])


def bound_ms(work: pd.DataFrame, peaks: pd.DataFrame) -> np.ndarray:
    """Roofline lower bound in ms (the formula of :func:`perfml.operators.roofline_lower_bound_ms`).

    ``max(flops / peak FP32, bytes / peak bandwidth)``; the conv FLOP term is left out
    (Winograd / FFT need fewer multiplications than the direct count), as there.
    """
    compute = work["flops"].to_numpy() / peaks["peak_fp32"].to_numpy()
    compute = np.where(work["op_class"].to_numpy() == "Conv", 0.0, compute)
    memory = work["bytes"].to_numpy() / peaks["peak_bw"].to_numpy()
    return 1e3 * np.maximum(compute, memory)


def _dims(X: pd.DataFrame) -> dict[str, np.ndarray]:
    out = {}
    for column in DIM_COLUMNS:
        if column in X.columns:
            out[column] = pd.to_numeric(X[column], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        else:
            out[column] = np.full(len(X), np.nan)
    return out


def operator_feature_frame(X: pd.DataFrame, registry=None) -> tuple[pd.DataFrame, np.ndarray]:
    """The work, dimension, board and fit groups of every row, and its roofline bound (ms).

    Raises
    ------
    OperatorWorkError
        Unknown operator, missing or invalid dimension (names the row and column).
    UnknownBoardError
        A board is not in the registry.
    """
    work = operator_work(X)
    peaks = board_peaks(X["board"], registry)
    bound = bound_ms(work, peaks)
    ops = X["op"].astype(str).to_numpy()
    classes = work["op_class"].astype(str).to_numpy()
    cols: dict[str, np.ndarray] = {}
    for op in OP_CLASS:
        cols[f"op={op}"] = (ops == op).astype(float)
    for cls in OP_CLASSES:
        cols[f"class={cls}"] = (classes == cls).astype(float)
    flops, nbytes = work["flops"].to_numpy(), work["bytes"].to_numpy()
    cols["work_log_flops"] = _log(flops)
    cols["work_log_bytes"] = _log(nbytes)
    cols["work_log_intensity"] = _log(work["arithmetic_intensity"].to_numpy())
    cols["work_reductions_per_row"] = work["reductions_per_row"].to_numpy(dtype=float)
    cols["work_log_reduction_length"] = _log(work["reduction_length"].to_numpy())
    dims = _dims(X)
    for column in ("B", "M", "N", "K", "H", "in_channels", "out_channels", "kernel_size", "input_size"):
        cols[f"dim_log_{column}"] = _log(dims[column])
    cols["dim_stride"] = dims["stride"]
    cols["dim_padding"] = dims["padding"]
    is_matmul = np.isin(classes, ["BMM", "FC"])
    is_conv = classes == "Conv"
    with np.errstate(invalid="ignore"):
        out_side = np.floor((dims["input_size"] + 2 * dims["padding"] - dims["kernel_size"]) / dims["stride"]) + 1
        outputs = np.where(
            is_matmul, dims["B"] * dims["M"] * dims["K"],
            np.where(is_conv, dims["B"] * dims["out_channels"] * out_side**2, dims["B"] * dims["H"]),
        )
    cols["dim_log_outputs"] = _log(outputs)
    fp32, bw = peaks["peak_fp32"].to_numpy(), peaks["peak_bw"].to_numpy()
    cols["board_log_peak_fp32"] = _log(fp32)
    cols["board_log_peak_bw"] = _log(bw)
    cols["board_log_ridge"] = _log(fp32 / bw)
    cols["board_log_sms"] = _log(peaks["sms"].to_numpy())
    cols["board_log_l2"] = _log(peaks["l2_bytes"].to_numpy())
    cols["board_log_clock"] = _log(peaks["boost_clock_mhz"].to_numpy())
    cols["fit_log_bytes_over_l2"] = cols["work_log_bytes"] - cols["board_log_l2"]
    cols["fit_log_intensity_over_ridge"] = cols["work_log_intensity"] - cols["board_log_ridge"]
    cols["fit_log_outputs_per_sm"] = cols["dim_log_outputs"] - cols["board_log_sms"]
    cols["fit_log_compute_ms"] = _log(1e3 * flops / fp32)
    cols["fit_log_memory_ms"] = _log(1e3 * nbytes / bw)
    cols["fit_log_bound_ms"] = _log(bound)
    frame = pd.DataFrame(cols, index=X.index)
    return frame, bound


def stream_memory_s(boards: pd.Series, nbytes: np.ndarray, characterizations) -> np.ndarray:
    """Per row, the time (s) its board's streaming curve takes for the row's compulsory bytes.

    :meth:`perfml.characterize.StreamCurve.time_s` of the board's characterization
    (``characterizations``, else the committed one); NaN where the board has no curve.
    """
    from perfml.closed_form._characterized import stream_time_s
    from perfml.learned.features.characterization import resolve_characterization

    return stream_time_s(boards, nbytes, lambda board: resolve_characterization(board, characterizations))


def characterization_block(X: pd.DataFrame, work_frame: pd.DataFrame, bound: np.ndarray, characterizations,
                           fallback_floor_ms=None) -> pd.DataFrame:
    """The ``char_*`` group: achieved figures of each row's board and the achieved-peak roofline.

    The roofline's memory roof is the board's streaming curve where its characterization
    has one (:mod:`perfml.characterize.stream_curve`: the time a streaming kernel took for
    the same number of bytes on that board, so the L2-, latency- and launch-bound sizes
    are as measured). A board without a curve gets what a curve looks like, a launch floor
    plus the compulsory bytes at the achieved DRAM bandwidth (Hockney's ``t_0 + n / r_inf``,
    as in the spec-only base, :mod:`~perfml.learned.operator_model._floor`): the board's
    ``launch_overhead`` where its characterization gives one, else ``fallback_floor_ms`` (the
    training boards' median launch overhead: a board never seen is charged what the
    training boards' curves start at, as the spec-only tier charges it their floors), which is
    also its ``char_log_launch_floor_ms``. Without any
    floor a tiny call's base is its nanosecond roofline, below every call the training
    boards' curves knew: a microbenchmark characterization of the H100
    (``sweeps/results/H100-SXM``, no curve, no launch overhead) put 64 x 64 ``mul`` calls at
    0.0005 ms against 0.014 ms measured. Measured on the NeuSight boards, each held out with
    its committed characterization stripped of curve and launch overhead
    (``python experiments/characterization_without_floor.py``,
    ``experiments/results/characterization_without_floor.txt``).

    ``characterizations``: board -> Characterization mapping or callable; None: the
    committed ones (:func:`perfml.characterize.board_characterization`).
    """
    from perfml.learned.features.characterization import CharacterizationFeatures

    char = CharacterizationFeatures(characterizations=characterizations).fit(X).transform(X)
    char.index = X.index
    flops = np.exp(work_frame["work_log_flops"].to_numpy())
    nbytes = np.exp(work_frame["work_log_bytes"].to_numpy())
    is_conv = work_frame["class=Conv"].to_numpy() > 0
    fp32 = np.exp(char["char_log_fp32_throughput"].to_numpy())
    bw = np.exp(char["char_log_dram_bandwidth"].to_numpy())
    compute = np.where(is_conv, 0.0, flops / fp32)
    memory = nbytes / bw
    floor = np.exp(char["char_log_launch_floor_ms"].to_numpy())
    if fallback_floor_ms is not None:
        floor = np.where(np.isfinite(floor), floor, np.asarray(fallback_floor_ms, dtype=float))
        char["char_log_launch_floor_ms"] = _log(floor)
    # without a curve, the curve's shape: the floor plus the bytes at the achieved bandwidth
    memory = np.where(np.isfinite(floor), memory + floor / 1e3, memory)
    stream = stream_memory_s(X["board"], nbytes, characterizations)
    memory = np.where(np.isfinite(stream), stream, memory)  # the measured curve where the board has one
    achieved_bound = 1e3 * np.fmax(compute, memory)
    char["char_log_bound_ms"] = _log(achieved_bound)
    char["char_log_floor_over_bound"] = char["char_log_launch_floor_ms"].to_numpy() - _log(bound)
    return char
