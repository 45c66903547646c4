"""The roofline model as a scikit-learn regressor.

``time = max(work / peak compute, bytes / peak bandwidth)`` per board and precision.

References
----------
S. Williams, A. Waterman, D. Patterson, "Roofline: an insightful visual performance
model for multicore architectures", Communications of the ACM 52(4), 2009, eq. of
Section 2 (attainable performance = min(peak FLOP/s, intensity x peak bandwidth)),
written here as a time.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from perfml._grouping import group_positions
from perfml.apps import get_app
from perfml.errors import DatasetSchemaError
from perfml.closed_form._inputs import LAUNCH_COLUMNS, check_frame, check_target

_REQUIRED = ("board", "app_id", "input_size")
TRAFFIC = ("compulsory", "requested")
PRECISIONS = ("fp32", "fp64", "fp16")
CLOCKS = ("boost", "base")
PEAKS = ("spec", "characterized")


def roofline_time_ms(work_ops, bytes_moved, peak_ops_per_s, peak_bytes_per_s) -> np.ndarray:
    """Roofline time in ms: ``1e3 * max(work / peak_ops, bytes / peak_bandwidth)``."""
    compute = np.asarray(work_ops, dtype=float) / peak_ops_per_s
    memory = np.asarray(bytes_moved, dtype=float) / peak_bytes_per_s
    return 1e3 * np.maximum(compute, memory)


class RooflineModel(RegressorMixin, BaseEstimator):
    """Roofline time of a kernel from its description and the board's peaks.

    Work is the kernel description's ``flops + int_ops`` per thread times the threads
    (integer operations are charged at the FP32 issue rate, one per core per cycle
    counted as one op); bytes are either the compulsory DRAM traffic of the whole
    kernel (``traffic="compulsory"``: every input read once, every output written
    once) or all requested global loads and stores (``"requested"``: no cache reuse).
    Peaks come from the board registry (:func:`perfml.boards.peak_flops`,
    :func:`perfml.boards.peak_bandwidth`).

    Parameters
    ----------
    traffic : {"compulsory", "requested"}
    precision : {"fp32", "fp64", "fp16"}
    clock : {"boost", "base"}
    calibrate : bool, default=False
        If True, ``fit`` learns one efficiency per app (median of roofline / measured
        time) and predictions are divided by it; otherwise the model is the pure
        roofline bound and ``fit`` only validates.
    registry : perfml.boards.Registry, optional
        Where boards are looked up (the default registry when None).
    peaks : {"spec", "characterized"}, default="spec"
        ``"spec"``: the registry's datasheet peaks. ``"characterized"``: the board's
        achieved DRAM bandwidth and FP32 throughput (an ``estimate`` of the measured,
        calibrated or published tier of its characterization) where it has them, the
        datasheet peak otherwise; :meth:`roofline_terms` says per row which tier was used.
        Achieved FP32 throughput replaces the peak only for ``precision="fp32"``. Where the
        characterization has a streaming curve (:mod:`perfml.characterize.stream_curve`),
        the memory time is the curve's time for the row's bytes (the time the board's
        streaming kernel took to move as many bytes) instead of bytes over one bandwidth.
    characterizations : None, mapping or callable, optional
        Board -> :class:`~perfml.characterize.Characterization` or a callable
        such as :func:`perfml.characterize.board_characterization` (see
        :mod:`perfml.closed_form._characterized`); required with ``peaks="characterized"``.

    Attributes
    ----------
    efficiency_ : pandas.Series
        Per-app efficiency (all ones when ``calibrate=False``).
    """

    def __init__(self, *, traffic: str = "compulsory", precision: str = "fp32", clock: str = "boost", calibrate: bool = False,
                 registry=None, peaks: str = "spec", characterizations=None):
        self.peaks = peaks
        self.characterizations = characterizations
        self.traffic = traffic
        self.precision = precision
        self.clock = clock
        self.calibrate = calibrate
        self.registry = registry

    def roofline_terms(self, X) -> pd.DataFrame:
        """Work (ops), bytes, compute time, memory time and roofline time (ms) per row.

        Also ``bandwidth_tier`` and ``compute_tier``: which tier the peaks came from.
        """
        from perfml.boards import get_board, peak_bandwidth, peak_flops

        if self.traffic not in TRAFFIC:
            raise DatasetSchemaError(f"traffic must be one of {TRAFFIC}, got {self.traffic!r}")
        X = check_frame(X, _REQUIRED, "RooflineModel")
        columns = ["ops", "bytes", "compute_ms", "memory_ms", "roofline_ms"]
        values = np.full((len(X), len(columns)), np.nan)
        bandwidth_tier = np.full(len(X), "spec", dtype=object)
        compute_tier = np.full(len(X), "spec", dtype=object)
        # columns read once as arrays and written by position; the work depends on the kernel, its
        # sizes and launch only, so it is evaluated once per kernel, the peaks once per board
        # (per (board, kernel) group, a batch of 11 boards evaluated each sidecar 11 times)
        sizes = X["input_size"].to_numpy(dtype=float)
        launches = {c: X[c].to_numpy(dtype=float) for c in LAUNCH_COLUMNS if c in X}
        for app_id, pos in group_positions(X["app_id"]).items():
            w = get_app(app_id).work_per_thread(sizes[pos], **{c: v[pos] for c, v in launches.items()})
            values[pos, 0] = (w["flops"] + w["int_ops"]) * w["threads"]
            if self.traffic == "compulsory":
                values[pos, 1] = w["dram_bytes_total"]
            else:
                values[pos, 1] = (w["gld"] + w["gst"]) * w["elem_bytes"] * w["threads"]
        for board_name, pos in group_positions(X["board"]).items():
            board = get_board(board_name, registry=self.registry)
            ops, moved = values[pos, 0], values[pos, 1]
            peak_ops = peak_flops(board, self.precision, clock=self.clock)
            peak_bw = peak_bandwidth(board)
            curve = None
            if self.peaks == "characterized":
                peak_ops, peak_bw, tiers = self._achieved(board_name, peak_ops, peak_bw)
                bandwidth_tier[pos], compute_tier[pos] = tiers
                curve = self._stream_curve(board_name)
            values[pos, 2] = 1e3 * ops / peak_ops
            values[pos, 3] = 1e3 * moved / peak_bw
            if curve is not None:  # the memory roof as measured at this byte count on the board
                values[pos, 3] = 1e3 * curve.time_s(moved, l2_bytes=float(board.l2_bytes or 0.0), bandwidth=peak_bw)
                bandwidth_tier[pos] = f"{curve.tier} stream curve"
            values[pos, 4] = np.maximum(values[pos, 2], values[pos, 3])
        out = pd.DataFrame(values, index=X.index, columns=columns)
        out["bandwidth_tier"] = bandwidth_tier
        out["compute_tier"] = compute_tier
        return out

    def _achieved(self, board_name: str, peak_ops: float, peak_bw: float) -> tuple[float, float, tuple[str, str]]:
        """Achieved FP32 throughput and DRAM bandwidth of the board, else the datasheet's (Williams et al. 2009, Sec. 2)."""
        from perfml.closed_form._characterized import achieved_or_spec, characterization_for

        ch = characterization_for(board_name, self.characterizations)
        bw, bw_tier = achieved_or_spec(ch, "dram_bandwidth", "B/s", peak_bw)
        ops, ops_tier = (achieved_or_spec(ch, "fp32_throughput", "FLOP/s", peak_ops)
                         if self.precision == "fp32" else (peak_ops, "spec"))
        return ops, bw, (bw_tier, ops_tier)

    def _stream_curve(self, board_name: str):
        """The board's streaming curve (:mod:`perfml.characterize.stream_curve`), None if it has none."""
        from perfml.closed_form._characterized import characterization_for

        return getattr(characterization_for(board_name, self.characterizations), "stream_curve", None)

    def fit(self, X, y):
        """Validate the parameters, X and y; with ``calibrate=True`` learn one efficiency per app."""
        from perfml.closed_form._params import check_bool, check_choice

        check_choice("RooflineModel", "traffic", self.traffic, TRAFFIC)
        check_choice("RooflineModel", "precision", self.precision, PRECISIONS)
        check_choice("RooflineModel", "clock", self.clock, CLOCKS)
        check_bool("RooflineModel", "calibrate", self.calibrate)
        check_choice("RooflineModel", "peaks", self.peaks, PEAKS)
        from perfml.closed_form._characterized import check_characterizations

        check_characterizations("RooflineModel", self.characterizations, required=self.peaks == "characterized")
        X = check_frame(X, _REQUIRED, "RooflineModel")
        y = check_target(y, len(X), "RooflineModel")
        roof = self.roofline_terms(X)["roofline_ms"].to_numpy(dtype=float)
        apps = X["app_id"].to_numpy()
        if self.calibrate:
            self.efficiency_ = pd.Series(roof / y).groupby(apps).median()
        else:
            self.efficiency_ = pd.Series(1.0, index=pd.unique(apps))
        self.n_features_in_ = X.shape[1]
        self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        return self

    def predict(self, X) -> np.ndarray:
        """Predicted kernel time in ms (the roofline bound, divided by the efficiency if calibrated)."""
        check_is_fitted(self, "efficiency_")
        X = check_frame(X, _REQUIRED, "RooflineModel")
        roof = self.roofline_terms(X)["roofline_ms"].to_numpy(dtype=float)
        if not self.calibrate:
            return roof
        eff = X["app_id"].map(self.efficiency_).to_numpy(dtype=float)
        eff = np.where(np.isfinite(eff), eff, float(np.exp(np.mean(np.log(self.efficiency_)))))
        return roof / eff


def roofline_bound_ms(q: pd.DataFrame, registry=None) -> np.ndarray:
    """Per row, the physical lower bound ``max(ops / peak_ops, bytes / peak_bw)`` (ms) where the work is known.

    :func:`roofline_bound_and_bytes` without the bytes.
    """
    return roofline_bound_and_bytes(q, registry)[0]


def roofline_bound_and_bytes(q: pd.DataFrame, registry=None) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the physical lower bound (ms) and the compulsory bytes it charges, NaN where the work is unknown.

    The bound is ``max(ops / peak_ops, bytes / peak_bw)``.

    The roofline of Williams et al. (CACM 2009), eq. 1, at the board's boost-clock FP32 peak
    and peak bandwidth (:mod:`perfml.boards`), with the operation count and the compulsory
    traffic of the kernel description (:class:`perfml.closed_form.roofline.RooflineModel`),
    less the board's L2 capacity: at most ``l2_bytes`` of the data can be served without
    DRAM, so the memory term is ``max(bytes - l2_bytes, 0) / peak_bw``. (Without that
    subtraction 19 of the 11,656 described-app runtimes of runtimes.csv.gz, inputs of at
    most 1.5 x the L2 on GTX-750/970/980, run up to 1.5x faster than the "bound".)
    NaN for kernels without a description (their work is unknown).
    """
    from perfml.apps import list_apps
    from perfml.boards import get_board, l2_resident_roofline_ms, peak_bandwidth, peak_flops

    if not isinstance(q, pd.DataFrame):  # a Series (one row) or a dict failed on .isin
        raise DatasetSchemaError(f"roofline_bound_ms takes a pandas DataFrame with columns board, app_id, input_size "
                                 f"(one row per kernel run), got {type(q).__name__}")
    bound = np.full(len(q), np.nan)
    moved = np.full(len(q), np.nan)
    mask = q["app_id"].isin(list_apps()).to_numpy()
    if mask.any():
        part = q if mask.all() else q[mask]  # q itself: a frame already checked in this call is not checked again
        terms = RooflineModel(registry=registry).roofline_terms(part)
        codes, names = pd.factorize(part["board"].to_numpy(dtype=object))
        boards = [get_board(name, registry=registry) for name in names]
        # each figure once per board, then spread over its rows
        fp, bw, l2 = (np.array([f(board) for board in boards], dtype=float)[codes]
                      for f in (peak_flops, peak_bandwidth, lambda b: float(b.l2_bytes or 0.0)))
        moved[mask] = terms["bytes"].to_numpy(dtype=float)
        bound[mask] = l2_resident_roofline_ms(terms["ops"].to_numpy(dtype=float), moved[mask],
                                              peak_flops_per_s=fp, peak_bytes_per_s=bw, l2_bytes=l2)
    return bound, moved


def board_rates(boards, rates, registry=None) -> np.ndarray:
    """Per row, each of ``rates`` (functions of a :class:`~perfml.boards.Board`, e.g.
    :func:`perfml.boards.peak_flops`) of the row's board: an array of rows x rates, NaN where
    the board lacks a figure the rate needs. Each board is looked up once."""
    from perfml.boards import get_board
    from perfml.errors import MissingBoardParameterError

    codes, names = pd.factorize(pd.Series(boards, dtype=object).astype(str))
    table = np.full((len(names), len(rates)), np.nan)
    for j, name in enumerate(names):
        board = get_board(name, registry=registry)
        for k, rate in enumerate(rates):
            try:
                table[j, k] = rate(board)
            except MissingBoardParameterError:
                pass
    return table[codes]


def profiled_roofline_terms(boards, flops, dram_bytes, warp_instructions, dp_flops=None, registry=None) -> np.ndarray:
    """Per row, the seconds of each roof of :func:`profiled_roofline_ms` (columns: FP32 FLOPs, DRAM
    bytes, warp instructions, FP64 FLOPs): the work over the board's peak; NaN where the work or
    the board figure is missing."""
    from perfml.boards import peak_bandwidth, peak_flops, peak_warp_instructions

    rates = board_rates(boards, (peak_flops, peak_bandwidth, peak_warp_instructions,
                                 lambda board: peak_flops(board, "fp64")), registry)
    if dp_flops is None:
        dp_flops = np.full(len(rates), np.nan)
    work = np.column_stack([np.asarray(w, dtype=float) for w in (flops, dram_bytes, warp_instructions, dp_flops)])
    with np.errstate(invalid="ignore", divide="ignore"):
        seconds = work / rates
    return np.where(np.isfinite(seconds) & (seconds >= 0), seconds, np.nan)


def _longest(seconds: np.ndarray) -> np.ndarray:
    """Per row, 1e3 x the largest non-NaN term (ms); NaN where every term is."""
    known = ~np.isnan(seconds).all(axis=1)
    out = np.full(len(seconds), np.nan)
    out[known] = 1e3 * np.nanmax(seconds[known], axis=1)
    return out


def profiled_roofline_ms(boards, flops, dram_bytes, warp_instructions, dp_flops=None, registry=None) -> np.ndarray:
    """Per row, the roofline time (ms) of work counted by a profiler, on the row's board.

    ``1e3 * max(flops / peak FP32, dram_bytes / peak bandwidth, warp_instructions / peak
    warp instruction rate, dp_flops / peak FP64)``: the roofline of Williams et al. (CACM
    2009), one ceiling per precision, with the instruction ceiling of Ding & Williams'
    Instruction Roofline Model (PMBS 2019, :func:`perfml.boards.peak_warp_instructions`),
    which bounds the kernels that do little floating-point work (integer, control and
    address arithmetic) where the FLOP roofs say nothing. Boost-clock peaks of the
    registry. A missing term (NaN, or a board figure the entry lacks) is left out; NaN
    where every term is.
    """
    return _longest(profiled_roofline_terms(boards, flops, dram_bytes, warp_instructions, dp_flops, registry))


def profiled_roofline_ratio(to_boards, from_boards, flops, dram_bytes, warp_instructions, dp_flops=None,
                            registry=None) -> np.ndarray:
    """Per row, :func:`profiled_roofline_ms` on ``to_boards`` over the same on ``from_boards``, with
    only the roofs both boards have.

    A roof one board lacks a figure for (the registry gives the Tesla-P4 no issue rate) is left
    out on both sides, so that the ratio compares the same ceilings. NaN where no roof is
    known on both, or the time on ``from_boards`` is 0. Used to carry a user's measurement of a
    kernel perfml knows nothing of to another board (``--profile``,
    :func:`perfml.learned.queries.predict_queries`).
    """
    work = (flops, dram_bytes, warp_instructions, dp_flops)
    to = profiled_roofline_terms(to_boards, *work, registry=registry)
    fro = profiled_roofline_terms(from_boards, *work, registry=registry)
    both = ~(np.isnan(to) | np.isnan(fro))
    to, fro = np.where(both, to, np.nan), np.where(both, fro, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = _longest(to) / _longest(fro)
    return np.where(np.isfinite(ratio) & (ratio > 0), ratio, np.nan)
