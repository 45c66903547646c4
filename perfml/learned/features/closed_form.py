"""The closed-form group: ``bsp_*``, ``roof_*``, ``base_log_t`` and the transfer features ``xfer_*``.

* ``bsp_*``: the BSP model of seed 003 with registry constants (cores x clock, or with
  ``compute_rate="issue"`` the issue-limited rate of :func:`perfml.boards.issue_limited_flops`;
  the paper's latencies): ``bsp_log_t1`` = T_k with lambda = 1; ``bsp_log_tk`` = T_k with the
  app's lambda fitted on the *training boards other than the row's own* (cross-fitted, so
  a training row sees what a test row sees); ``bsp_log_lambda`` that lambda.
* ``roof_*``: roofline compute, memory and bound times (registry peaks, requested global
  traffic), and the same with the app's efficiency cross-fitted like lambda.
* ``base_log_t``: the closed-form baseline of the row's app: among BSP, roofline memory
  and roofline compute, the one whose per-board offset log(T_measured / T_model) varies
  least across the training boards (other than the row's own), with its offset taken
  from the other training boards of the same architecture (all other training boards
  if none).
* ``xfer_*``: transfer of the *same run* (app, size, block) from the other training
  boards: their log(T_measured / T_model), carried to this board through each
  closed-form model (``xfer_log_t_<model>``), and through the app's chosen one
  (``xfer_log_t``). A run no other training board measured takes the app's *nearest*
  measured run (size and launch compared on log scales,
  :class:`~perfml.learned.features._common.NearestRunMedian`). The boards of the row's
  architecture come first, for the nearest run as for the same one
  (:func:`transferred_runs`); only an app no other board measured falls back to the
  app's offset.
* ``xfer_log_t_blend`` (only with ``blend=True``): a geometric blend of the BSP and the
  memory-roofline transfers, ``w * xfer_log_t_bsp + (1 - w) * xfer_log_t_roof_memory``: the
  run's time scaled from the other boards by (cores x clock)^w x (bandwidth)^(1-w), a
  kernel between compute- and bandwidth-bound (the same idea as Habitat's wave scaling,
  Yu et al., USENIX ATC 2021, Sec. 4.1, which mixes the bandwidth and clock ratios by
  the kernel's arithmetic intensity). The app's ``w`` (0, 0.1, ..., 1) is the one whose
  cross-fitted transfers have the lowest mean absolute percentage error on the training
  boards other than the row's own (an inner leave-one-board-out).

How the app's baseline is chosen (``baseline_selection``):

* ``"spread"`` (default, the pinned figures): the one whose per-board offset varies
  least across the training boards;
* ``"transfer-cv"``: the one whose *transfer* misses least when each training board in
  turn is predicted from the others exactly as a held-out board is (same run, same
  architecture first, then the app's nearest run, then the per-app offset): the mean of
  ``|T_transferred / T_measured - 1|`` over that board's runs. It is an inner
  leave-one-board-out over the training boards, so it scores what the baseline is used
  for. The spread criterion mixes architectures: with achieved (calibrated) bandwidths
  the roofline-memory offsets of the compute-bound matMul apps vary little across the
  Kepler boards, so "spread" picked that baseline for them and carried them to the
  Maxwell boards by a bandwidth ratio (GTX-970 transfer error 8.8 % -> 16.3 %).

References
----------
Amaris et al., HiPC 2015 (seed 003), eq. 3 (BSP); Williams et al., CACM 2009 (roofline);
Yu et al., "Habitat", USENIX ATC 2021 (wave scaling).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from perfml.apps import list_apps
from perfml.learned.features._common import (
    BASELINES,
    MEASURED_LOG_MS,
    RUN_KEY,
    NearestRunMedian,
    OtherBoardsMedian,
    architecture,
    board_peaks,
    log_or_nan,
    second_size,
)


def closed_form_logs(rows: pd.DataFrame, *, data_home=None, registry=None, peaks: str = "spec",
                     characterizations=None, compute_rate: str = "cores", waves: bool = True) -> pd.DataFrame:
    """log T of the closed-form models with unit efficiency: BSP T_1, roofline compute and memory.

    ``rows`` has board, app_id, input_size and the launch columns, and optionally the work
    per launch of kernels without a description (``work_flops``, ``work_dram_bytes``:
    :data:`~perfml.learned.features._common.WORK_COLUMNS`). Nothing measured is used
    (with ``peaks="characterized"`` the roofline of described kernels takes the boards'
    achieved peaks from ``characterizations``: :class:`~perfml.closed_form.roofline.RooflineModel`).

    ``compute_rate="issue"`` divides the BSP and compute-roofline times by the issue-limited
    rate instead of cores x clock (seed 003 eq. 3 with the lanes an SM can issue to
    without instruction-level parallelism, :func:`perfml.boards.issue_limited_flops`):
    the times of a Kepler board grow by 3/2, those of boards whose schedulers feed every
    core stay. The spec-only transfer between architectures then scales a simple kernel
    by the rate it can reach; within one architecture nothing changes (same factor on
    every board of it). A board whose issue rate is unknown keeps cores x clock.

    ``waves``: add the ``waves`` column (:func:`wave_logs`); without it the frame has the
    three columns of seed 003 and the roofline (a model without wave scaling needs no more).
    """
    from perfml.closed_form.bsp import BSPModel
    from perfml.closed_form.roofline import RooflineModel

    peak_choice = peaks
    # the columns as arrays written by position, one frame at the end (a one-row query passes here too)
    names = [name for name in BASELINES if waves or name != "waves"]
    out = {name: np.full(len(rows), np.nan) for name in names}
    is_described = rows["app_id"].isin(list_apps()).to_numpy()
    part = rows if is_described.all() else rows[is_described]  # one frame for both models: checked once
    if len(part):
        at = np.flatnonzero(is_described)
        terms = BSPModel(constants_sources=(), data_home=data_home, registry=registry).model_terms(part)
        roof = RooflineModel(traffic="requested", registry=registry, peaks=peaks,
                             characterizations=characterizations).roofline_terms(part)
        out["bsp"][at] = log_or_nan(terms["t1_ms"])
        out["roof_memory"][at] = log_or_nan(roof["memory_ms"])
        out["roof_compute"][at] = log_or_nan(roof["compute_ms"])
    part = rows[~is_described]
    if len(part):
        at = np.flatnonzero(~is_described)
        # No description: the work is unknown, so each model keeps only how it scales
        # with the board and the launch: threads / (cores x clock) for BSP (seed 003 eq. 3
        # with unit work) and the compute roof, threads / bandwidth for the memory roof.
        threads = (part["block_x"] * part["block_y"].fillna(1) * part["grid_x"] * part["grid_y"].fillna(1)).to_numpy(dtype=float)
        peaks = board_peaks(part["board"], registry)
        if peak_choice == "characterized":
            # the boards' achieved peaks where their characterization has them (the
            # calibrated tier: a memory-bound kernel is carried between boards by the
            # ratio of their achieved bandwidths, not of their datasheet ones)
            peaks = _achieved(peaks, part["board"], characterizations)
        compute = threads / peaks["compute"].to_numpy()
        memory = threads / peaks["bandwidth"].to_numpy()
        # Rows that carry their work (microbenchmark rows of a sweep, whose sidecar gives
        # it: perfml.measure.runtime_rows) get the roofline of that work instead.
        if "work_flops" in part:
            flops = part["work_flops"].to_numpy(dtype=float)
            compute = np.where(np.isfinite(flops) & (flops > 0), flops / peaks["compute"].to_numpy(), compute)
        if "work_dram_bytes" in part:
            dram = part["work_dram_bytes"].to_numpy(dtype=float)
            memory = np.where(np.isfinite(dram) & (dram > 0), dram / peaks["bandwidth"].to_numpy(), memory)
        out["bsp"][at] = log_or_nan(threads / peaks["compute"])
        out["roof_compute"][at] = log_or_nan(compute)
        out["roof_memory"][at] = log_or_nan(memory)
    if waves:
        out["waves"] = wave_logs(rows, registry)
    if compute_rate == "issue":
        # T x (cores rate / issue-limited rate): log factor >= 0 per board
        factor = issue_rate_log_factor(rows["board"], registry)
        out["bsp"] = out["bsp"] + factor
        if peak_choice == "characterized":
            # an achieved FP32 rate (measured, calibrated, published) already is what the board reaches
            factor = np.where(_has_achieved_fp32(rows["board"], characterizations), 0.0, factor)
        out["roof_compute"] = out["roof_compute"] + factor
    return pd.DataFrame(out, index=rows.index, columns=names)


def wave_logs(rows: pd.DataFrame, registry=None) -> np.ndarray:
    """log of the wave-quantized time: ``log(ceil(blocks / wave_size) / clock)`` per row.

    Habitat's wave scaling (Yu et al., USENIX ATC 2021, Sec. 4.1): the blocks of a launch
    run in waves of :func:`perfml.boards.wave_size` blocks (SMs x resident blocks per SM),
    and a wave lasts a fixed number of the board's clock cycles, so between boards a
    kernel's time scales with its number of waves over the clock. A launch that fills less
    than one wave leaves SMs idle and does not speed up with more SMs, which the
    cores x clock scaling of the BSP model and the roofline assumes (Rodinia's
    ``lud_perimeter``: one flat time step per wave of 128 blocks on the GTX-680, 208 on the
    Tesla-K20). Residency is taken from the launch alone (threads per block against the
    per-SM warp and block limits): registers and shared memory come from the board's own
    compilation and a query need not carry them. NaN where the launch or a board figure
    (SM count, residency limits, boost clock) is unknown.
    """
    from perfml.boards import get_board, wave_size
    from perfml.errors import PerfmlError

    threads = (rows["block_x"] * rows["block_y"].fillna(1)).to_numpy(dtype=float)
    blocks = (rows["grid_x"] * rows["grid_y"].fillna(1)).to_numpy(dtype=float)
    out = np.full(len(rows), np.nan)
    ok = np.isfinite(threads) & np.isfinite(blocks) & (threads >= 1) & (blocks >= 1)
    if not ok.any():
        return out
    board_codes, board_names = pd.factorize(rows["board"].to_numpy()[ok])
    thread_codes, thread_values = pd.factorize(threads[ok])
    combined, codes = np.unique(board_codes.astype(np.int64) * len(thread_values) + thread_codes, return_inverse=True)
    uniques = [(str(board_names[c // len(thread_values)]), thread_values[c % len(thread_values)]) for c in combined]
    per_key = np.full(len(uniques), np.nan)
    size = np.full(len(uniques), np.nan)
    for j, (board_name, n_threads) in enumerate(uniques):
        board = get_board(board_name, registry=registry)
        try:
            size[j] = wave_size(board, int(n_threads))
            per_key[j] = board.require("boost_clock_mhz", needed_for="wave time") * 1e6
        except (PerfmlError, ValueError):  # a missing board figure, or a launch the board cannot place
            continue
    waves = np.ceil(blocks[ok] / size[codes])
    out[ok] = np.log(waves) - np.log(per_key[codes])
    return out


def _has_achieved_fp32(boards: pd.Series, characterizations) -> np.ndarray:
    """Per row, whether its board's characterization gives an achieved FP32 rate (not the spec)."""
    from perfml.closed_form._characterized import achieved_or_spec, characterization_for

    codes, names = pd.factorize(boards.astype(str))
    has = np.array([achieved_or_spec(characterization_for(name, characterizations), "fp32_throughput", "FLOP/s",
                                     np.nan)[1] != "spec" for name in names], dtype=bool)
    return has[codes]


def issue_rate_log_factor(boards: pd.Series, registry=None) -> np.ndarray:
    """Per row, ``log(peak_flops / issue_limited_flops)`` of its board (0 where either is unknown)."""
    from perfml.boards import get_board, issue_limited_flops, peak_flops
    from perfml.errors import MissingBoardParameterError

    codes, names = pd.factorize(boards.astype(str))
    table = np.zeros(len(names))
    for i, name in enumerate(names):
        board = get_board(name, registry=registry)
        try:
            table[i] = np.log(peak_flops(board) / issue_limited_flops(board))
        except MissingBoardParameterError:
            table[i] = 0.0
    return table[codes]


def _achieved(peaks: pd.DataFrame, boards: pd.Series, characterizations) -> pd.DataFrame:
    """``peaks`` (compute, bandwidth per row) with each board's achieved values where known.

    Takes :func:`perfml.closed_form._characterized.achieved_or_spec` of the board's
    characterization (an estimate of a measured, calibrated or published tier; a lower
    bound is not a peak), the registry peak otherwise.
    """
    from perfml.closed_form._characterized import achieved_or_spec, characterization_for

    out = peaks.copy()
    for board in boards.unique():
        ch = characterization_for(str(board), characterizations)
        mask = (boards == board).to_numpy()
        spec = peaks.loc[mask].iloc[0]
        for column, quantity, unit in (("compute", "fp32_throughput", "FLOP/s"), ("bandwidth", "dram_bandwidth", "B/s")):
            if np.isfinite(spec[column]):
                out.loc[mask, column] = achieved_or_spec(ch, quantity, unit, float(spec[column]))[0]
    return out


def _pick(columns: dict[str, np.ndarray], choice: np.ndarray) -> np.ndarray:
    """Per row ``i``, ``columns[choice[i]][i]``."""
    out = np.full(len(choice), np.nan)
    for name, values in columns.items():
        mask = choice == name
        out[mask] = np.asarray(values, dtype=float)[mask]
    return out


def baseline_choice(offsets: pd.DataFrame, names=BASELINES) -> dict[str, str]:
    """Per app, the baseline among ``names`` (those ``offsets`` has) whose offset varies least across its boards."""
    grouped = offsets.groupby("app_id")[[name for name in names if name in offsets]]
    # a baseline without a finite offset for the app (e.g. its launch is unknown) is never chosen
    spread = grouped.std(ddof=0).fillna(0.0).where(grouped.count() > 0, np.inf)
    return spread.idxmin(axis=1).to_dict()


#: how an app's closed-form baseline is chosen (see the module docstring)
BASELINE_SELECTIONS = ("spread", "transfer-cv")


def _cross_fitted(rows: pd.DataFrame, table: pd.DataFrame, keys, arch_of, names=BASELINES, cache=None) -> pd.DataFrame:
    """Per row, the median of ``table``'s baselines ``names`` over the *other* boards, same architecture first.

    ``cache`` (a dict, optional) keeps each pool's :class:`OtherBoardsMedian` across calls
    with the same ``table``, ``keys`` and ``names``: a fitted estimator passes its own.
    """
    keys = list(keys)
    names = list(names)
    cache = {} if cache is None else cache

    def lookup(arch):
        if arch not in cache:
            pool = table if arch is None else table[table["architecture"] == arch]
            cache[arch] = OtherBoardsMedian(pool, keys, names)
        return cache[arch]

    same_arch = np.full((len(rows), len(names)), np.nan)
    board_codes, boards = pd.factorize(rows["board"])
    row_arch = np.asarray([arch_of(b) for b in boards], dtype=object)[board_codes]
    for arch in pd.unique(row_arch):
        pick = np.flatnonzero(row_arch == arch)
        same_arch[pick] = lookup(arch).values(rows if len(pick) == len(rows) else rows.iloc[pick])
    missing = np.isnan(same_arch)
    if missing.any():  # the median over every other board, where the row's architecture has none
        same_arch = np.where(missing, lookup(None).values(rows), same_arch)
    return pd.DataFrame(same_arch, index=rows.index, columns=names)


#: the per-run lookups of :func:`transferred_runs`, in the order they are tried within a pool of boards
RUN_LOOKUPS = ("same-run", "nearest-run")


class RunPools:
    """The lookups of a per-run table by pool of boards, each built once.

    A pool is ``None`` (every board of the table), an architecture (its boards) or
    ``("other", architecture)`` (the boards of every other architecture). ``kind`` is one
    of :data:`RUN_LOOKUPS`: the median of the same run over the pool's boards other than
    the row's (:class:`~perfml.learned.features._common.OtherBoardsMedian`), or of the
    app's nearest run (:class:`~perfml.learned.features._common.NearestRunMedian`).

    Parameters
    ----------
    table : DataFrame
        Per (board, run): ``board``, ``architecture``, :data:`RUN_KEY` and ``names``
        (:attr:`ClosedFormFeatures.transfer_`).
    names : list of str
    """

    def __init__(self, table: pd.DataFrame, names):
        self.table = table
        self.names = list(names)
        self._built: dict = {}

    def _table(self, pool) -> pd.DataFrame:
        if pool is None:
            return self.table
        if isinstance(pool, tuple):
            return self.table[self.table["architecture"] != pool[1]]
        return self.table[self.table["architecture"] == pool]

    def __call__(self, kind: str, pool=None):
        if (kind, pool) not in self._built:
            table = self._table(pool)
            self._built[(kind, pool)] = (OtherBoardsMedian(table, RUN_KEY, self.names) if kind == "same-run"
                                         else NearestRunMedian(table, self.names))
        return self._built[(kind, pool)]

    def has_others(self, pool, boards) -> bool:
        """Whether the pool has a board other than each of ``boards`` (a pool of the rows' own board alone answers nothing)."""
        if ("boards", pool) not in self._built:
            self._built[("boards", pool)] = frozenset(self._table(pool)["board"].unique())
        members = self._built[("boards", pool)]
        return any(members - {board} for board in boards)


def transferred_runs(rows: pd.DataFrame, arch_of, pools: RunPools) -> pd.DataFrame:
    """Per row, the offsets ``pools.names`` of its run carried from the *other* boards of a per-run table.

    The sources, in order; each row takes all its values from the first that has them:

    1. the boards of the row's architecture that measured the same run (median);
    2. the app's nearest run on those boards, moved by how much the other architectures'
       offset changes from that run to the row's:
       ``o_A(r) = o_A(r') + [o_other(r) - o_other(r')]``, with ``r'`` the nearest run and
       ``o_other(r)``, ``o_other(r')`` the medians over the boards of the other
       architectures that measured each run (``o_A(r')`` unmoved where either is missing);
    3. every board that measured the same run;
    4. the app's nearest run on every board.

    Why the row's architecture before the same run on others, and why moved: a board's
    offset from a closed-form model (its efficiency) depends on its architecture more than
    on the size, and the training boards did not all run the same sizes. Taking the other
    architectures' offset at every size one's own architecture skipped made a prediction
    jump at each size it measured: the GTX-570, whose one Fermi training board (GT-630)
    ran matrix_sum_normal at powers of two, fell to 0.419x from 3840 to 4096, and the
    compute-capability-1.x boards to 0.318x for matMul_gpu_sharedmem
    (``experiments/size_continuity.py``). The offset of a run can still change with its
    size, most where the closed-form model does not see the size at all (a kernel without
    a description is carried by its launch alone): the GTX-970 ran quicksort at sizes the
    other Maxwell boards stopped short of, and their largest run's offset, unmoved, made
    its time flat beyond it. Moved by the other architectures' change, the row keeps its
    architecture's level and the size's trend, a difference in differences; at a run its
    architecture measured, the move is zero. (The steps 1 and 3 are the same run, the
    steps 2 and 4 the nearest: :data:`RUN_LOOKUPS`.)

    Not mended: each median of steps 2 and 3 is over the boards that measured that run,
    and where those boards differ from one run to the next the median jumps with them
    (subSeqMax, 0.862x from 130023424 to 134217728 on 19 boards out of training: the
    GT-630 ran the second size and not the first; ``experiments/size_continuity.py``).
    That fall is step 3's (no training board of those boards' architectures ran
    subSeqMax); a move of step 2 as a median of within-board changes, tried, left it as
    it was.
    """
    names = pools.names
    out = np.full((len(rows), len(names)), np.nan)
    board_codes, boards = pd.factorize(rows["board"])
    row_arch = np.asarray([arch_of(b) for b in boards], dtype=object)[board_codes]
    for same_architecture in (True, False):
        for kind in RUN_LOOKUPS:
            missing = np.isnan(out).all(axis=1)
            if not missing.any():
                return pd.DataFrame(out, index=rows.index, columns=names)
            for arch in (pd.unique(row_arch[missing]) if same_architecture else [None]):
                pick = np.flatnonzero(missing & (row_arch == arch) if same_architecture else missing)
                if not pools.has_others(arch, pd.unique(boards[board_codes[pick]])):
                    continue
                part = rows.iloc[pick]
                if kind == "same-run" or not same_architecture:
                    lookup = pools(kind, arch)
                    out[pick] = lookup.values(part) if kind == "same-run" else lookup(part)[names].to_numpy(dtype=float)
                    continue
                values, nearest = pools(kind, arch).nearest(part)
                values = values.to_numpy(dtype=float, copy=True)
                found = np.flatnonzero(~np.isnan(values).all(axis=1))
                if len(found):  # the architecture ran the app: move its nearest run
                    others = pools("same-run", ("other", arch))
                    move = others.values(part.iloc[found]) - others.values(nearest.iloc[found])
                    values[found] = np.where(np.isfinite(move), values[found] + move, values[found])
                out[pick] = values
    return pd.DataFrame(out, index=rows.index, columns=names)


def transfer_cv_choice(transfer: pd.DataFrame, offsets: pd.DataFrame, arch_of, candidates=BASELINES) -> dict[str, str]:
    """Per app, the baseline among ``candidates`` whose transfer from the other boards of the tables misses least.

    Each board of ``transfer`` (per-run offsets, :attr:`ClosedFormFeatures.transfer_`) is
    predicted from the other boards as a held-out board would be
    (:func:`transferred_runs`, then the app's offset from ``offsets``); the baseline with
    the lowest mean ``|exp(error) - 1|`` over the app's runs wins. Falls back to
    :func:`baseline_choice` with fewer than two boards or for an app nothing scores.
    """
    fallback = baseline_choice(offsets, candidates)
    if transfer["board"].nunique() < 2:
        return fallback
    rows = transfer.reset_index(drop=True)
    names = [name for name in candidates if name in transfer and name in offsets]
    per_run = transferred_runs(rows, arch_of, RunPools(rows, names))
    per_app = _cross_fitted(rows, offsets, ("app_id",), arch_of, names)
    predicted = per_run.fillna(per_app)
    miss = np.abs(np.expm1(rows[names].to_numpy(dtype=float) - predicted[names].to_numpy(dtype=float)))
    score = pd.DataFrame(miss, columns=names).assign(app_id=rows["app_id"].to_numpy()).groupby("app_id")[names].mean()
    choice = dict(fallback)
    for app, values in score.iterrows():
        if values.notna().any():
            choice[app] = str(values.idxmin())
    return choice


class ClosedFormFeatures(TransformerMixin, BaseEstimator):
    """Closed-form times and their offsets cross-fitted over the *other* training boards.

    ``fit(X, y, launch=, logs=)`` takes the rows' launch frame and closed-form logs
    (:func:`closed_form_logs`) when the caller already has them.

    Parameters
    ----------
    registry : perfml.boards.Registry, optional
    blend : bool, default=False
        Add ``xfer_log_t_blend`` (the blended transfer, weights in ``blend_weights_``).
    baseline_selection : {"spread", "transfer-cv"}, default="spread"
        How each app's baseline is chosen (see the module docstring).
    waves : bool, default=False
        Make the wave-quantized time (:func:`wave_logs`) a candidate baseline and add its
        transfer ``xfer_log_t_waves``; False keeps the three baselines of seed 003 and the
        roofline.

    Attributes
    ----------
    train_boards_ : list of str
    blend_weights_ : pandas.DataFrame
        With ``blend``: per (board left out, app) the BSP weight of the blend; board ""
        is the weight for a board not in training, app "" the weight over all apps.
    offsets_ : pandas.DataFrame
        Per training (board, app): median log(T_measured / T_model) of each closed-form
        baseline (BSP: -log lambda; roofline: log of an efficiency).
    transfer_ : pandas.DataFrame
        The same per training (board, run), for the transfer features, and the median log of
        the run's measured times there (``measured_log_ms``, :data:`MEASURED_LOG_MS`).
    baseline_choice_ : dict
        Per app, the baseline with the least spread of offsets across training boards.
    """

    def __init__(self, *, registry=None, blend: bool = False, baseline_selection: str = "spread", waves: bool = False):
        self.registry = registry
        self.blend = blend
        self.baseline_selection = baseline_selection
        self.waves = waves

    def _candidates(self) -> tuple[str, ...]:
        """The baselines an app may be given (and whose transfers are features)."""
        return BASELINES if self.waves else tuple(name for name in BASELINES if name != "waves")

    def _choose(self, offsets: pd.DataFrame, transfer: pd.DataFrame) -> dict[str, str]:
        """Per app, the baseline chosen on these training tables."""
        if self.baseline_selection == "transfer-cv":
            return transfer_cv_choice(transfer, offsets, self._arch, self._candidates())
        return baseline_choice(offsets, self._candidates())

    def _arch(self, board: str) -> str:
        return architecture(board, self.registry)

    def fit(self, X, y, *, launch: pd.DataFrame, logs: pd.DataFrame):
        self.train_boards_ = sorted(X["board"].unique())
        # Per (board, app): median over sizes of log(T_measured / T_closed_form). For
        # BSP this is -log(lambda) of seed 003; for the roofline terms an efficiency.
        ratios = pd.DataFrame({"board": X["board"].to_numpy(), "app_id": X["app_id"].to_numpy()})
        names = [name for name in BASELINES if name in logs]  # logs built elsewhere may lack the waves column
        for name in names:
            ratios[name] = np.log(y) - logs[name].to_numpy()
        self.offsets_ = ratios.groupby(["board", "app_id"], as_index=False).median()
        # The same ratios per launch configuration (app, size, block), for the transfer
        # features: how the *same* kernel run behaved on the other training boards.
        per_run = ratios.assign(
            **{MEASURED_LOG_MS: np.log(np.asarray(y, dtype=float))},
            input_size=X["input_size"].to_numpy(dtype=float),
            input_size_2=second_size(X),
            block_x=launch["block_x"].to_numpy(),
            block_y=launch["block_y"].to_numpy(),
            grid_x=launch["grid_x"].to_numpy(),
            grid_y=launch["grid_y"].to_numpy(),
        )
        self.transfer_ = per_run.groupby(["board", *RUN_KEY], as_index=False)[[*names, MEASURED_LOG_MS]].median()
        self.transfer_["architecture"] = self.transfer_["board"].map(self._arch)
        self.offsets_["architecture"] = self.offsets_["board"].map(self._arch)
        self.baseline_choice_ = self._choose(self.offsets_, self.transfer_)
        if self.blend:
            self.blend_weights_ = self._fit_blend_weights(X, y, launch, logs)
        return self

    _BLEND_GRID = np.round(np.linspace(0.0, 1.0, 11), 10)

    def _fit_blend_weights(self, X, y, launch, logs) -> pd.DataFrame:
        """Per (board left out, app), the BSP weight of the blend with the lowest MAPE on the other boards."""
        self._lookup_cache = {}
        feats = self.transform(X, launch=launch, logs=logs, blend=False)
        bsp = feats["xfer_log_t_bsp"].to_numpy()
        memory = feats["xfer_log_t_roof_memory"].to_numpy()
        log_y = np.log(np.asarray(y, dtype=float))
        ok = np.isfinite(bsp) & np.isfinite(memory)
        frame = pd.DataFrame({"board": X["board"].to_numpy()[ok], "app_id": X["app_id"].to_numpy()[ok]})
        for j, w in enumerate(self._BLEND_GRID):
            frame[j] = np.abs(np.exp(w * bsp[ok] + (1 - w) * memory[ok] - log_y[ok]) - 1.0)
        grid = list(range(len(self._BLEND_GRID)))
        sums = frame.groupby(["board", "app_id"])[grid].sum()
        counts = frame.groupby(["board", "app_id"]).size()
        rows = []
        for left_out in [*self.train_boards_, ""]:
            keep = sums.index.get_level_values("board") != left_out
            s, n = sums[keep], counts[keep]
            if not len(s):
                continue
            per_app = s.groupby(level="app_id").sum().div(n.groupby(level="app_id").sum(), axis=0)
            overall = s.sum() / n.sum()
            for app, errors in [*per_app.iterrows(), ("", overall)]:
                rows.append((left_out, app, float(self._BLEND_GRID[int(np.argmin(errors.to_numpy()))])))
        return pd.DataFrame(rows, columns=["board", "app_id", "weight"])

    def _row_blend_weights(self, rows: pd.DataFrame) -> np.ndarray:
        """Per row, the app's blend weight chosen without the row's board (the all-apps weight for an unseen app)."""
        table = self.blend_weights_
        weights = np.full(len(rows), np.nan)
        boards = rows["board"].to_numpy(dtype=object)
        apps = rows["app_id"].to_numpy(dtype=object)
        for board in pd.unique(boards):
            key = board if board in self.train_boards_ else ""
            part = table[table["board"] == key]
            by_app = dict(zip(part["app_id"], part["weight"]))
            pick = np.flatnonzero(boards == board)
            w = pd.Series(apps[pick], dtype=object).map(by_app).to_numpy(dtype=float)
            weights[pick] = np.where(np.isfinite(w), w, by_app.get("", np.nan))
        return weights

    def _lookups(self) -> dict:
        """Per-table, per-architecture median lookups (built once per fitted state; see :class:`OtherBoardsMedian`)."""
        cache = self.__dict__.get("_lookup_cache")
        if cache is None:
            cache = self._lookup_cache = {}
        return cache

    def _choice_table(self, board: str) -> dict:
        """The baseline choice per app made without ``board`` (the fitted one for a board not in training).

        Built for a board the first time one of its rows is transformed, and kept: a query
        about one board builds one table, not one per training board.
        """
        if board not in self.train_boards_:
            return self.baseline_choice_
        tables = self._lookups().setdefault("choice", {})
        if board not in tables:
            tables[board] = self._choose(self.offsets_[self.offsets_["board"] != board],
                                         self.transfer_[self.transfer_["board"] != board])
        return tables[board]

    def _row_baseline_choice(self, rows: pd.DataFrame) -> np.ndarray:
        """Per row, the app's baseline chosen on the training boards other than the row's own."""
        choice = np.full(len(rows), "bsp", dtype=object)
        boards = rows["board"].to_numpy(dtype=object)
        apps = rows["app_id"].to_numpy(dtype=object)
        for board in pd.unique(boards):
            table = self._choice_table(board)
            pick = np.flatnonzero(boards == board)
            # dict.get, not Series.map + fillna: an empty table maps to float NaN, and pandas 4
            # refuses a text fill value for a float column
            choice[pick] = [table.get(app, "bsp") for app in apps[pick]]
        return choice

    def _cross_fitted_offsets(self, rows: pd.DataFrame) -> pd.DataFrame:
        """Offsets of each row's app from the *other* training boards, same architecture first."""
        names = list(self._candidates())  # a model saved before the waves baseline has no such column
        return _cross_fitted(rows, self.offsets_, ("app_id",), self._arch, names,
                             cache=self._lookups().setdefault("offsets", {}))

    def _run_offsets(self, runs: pd.DataFrame) -> pd.DataFrame:
        """Offsets of each row's run from the *other* training boards (:func:`transferred_runs`; NaN where
        no other training board measured the app: the caller falls back to the app offset)."""
        cache = self._lookups()
        if "runs" not in cache:
            # a model saved before the waves baseline has no such column
            cache["runs"] = RunPools(self.transfer_, self._candidates())
        return transferred_runs(runs, self._arch, cache["runs"])

    def transform(self, X, *, launch: pd.DataFrame, logs: pd.DataFrame, blend: bool | None = None) -> pd.DataFrame:
        """The group's features of X (``blend``: add ``xfer_log_t_blend``; default: as fitted)."""
        check_is_fitted(self, "offsets_")
        blend = self.blend if blend is None else blend
        rows = pd.concat([X[["board", "app_id", "input_size"]], launch], axis=1)
        # columns as numpy arrays, one frame at the end: a single query's row passes here too
        closed = _columns(logs, X.index)
        offsets = self._cross_fitted_offsets(rows)
        offset = _columns(offsets, X.index)
        out = {}
        out["bsp_log_t1"] = closed["bsp"]
        out["bsp_log_lambda"] = -offset["bsp"]
        out["bsp_log_tk"] = closed["bsp"] + offset["bsp"]
        out["roof_log_compute"] = closed["roof_compute"]
        out["roof_log_memory"] = closed["roof_memory"]
        out["roof_log_bound"] = np.maximum(closed["roof_compute"], closed["roof_memory"])
        out["roof_log_memory_eff"] = closed["roof_memory"] + offset["roof_memory"]
        out["roof_log_compute_eff"] = closed["roof_compute"] + offset["roof_compute"]
        choice = self._row_baseline_choice(rows)
        out["base_log_t"] = _pick({name: closed[name] + offset[name] for name in self._candidates()}, choice)
        # Transfer: the same (app, size, block) run on the other training boards, carried
        # to this board by each closed-form model's ratio; a run no other board measured
        # takes the app's nearest measured run, and an app no other board measured its offset.
        runs = rows.astype({"input_size": float}).assign(input_size_2=second_size(X))
        transfer = _columns(self._run_offsets(runs).fillna(offsets), X.index)
        for name in self._candidates():
            out[f"xfer_log_t_{name}"] = closed[name] + transfer[name]
        out["xfer_log_t"] = _pick({name: out[f"xfer_log_t_{name}"] for name in self._candidates()}, choice)
        if blend:
            w = self._row_blend_weights(rows)
            out["xfer_log_t_blend"] = w * out["xfer_log_t_bsp"] + (1 - w) * out["xfer_log_t_roof_memory"]
        return pd.DataFrame(out, index=X.index, dtype=float)


def _columns(frame: pd.DataFrame, index: pd.Index) -> dict[str, np.ndarray]:
    """The frame's columns as float arrays in the order of ``index`` (aligned by label, as pandas would)."""
    if not frame.index.equals(index):
        frame = frame.reindex(index)
    return {name: frame[name].to_numpy(dtype=float) for name in frame.columns}
