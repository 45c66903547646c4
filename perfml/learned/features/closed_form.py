"""The closed-form group: ``bsp_*``, ``roof_*``, ``base_log_t`` and the transfer features ``xfer_*``.

* ``bsp_*``: the BSP model of seed 003 with registry constants (cores x clock, the
  paper's latencies): ``bsp_log_t1`` = T_k with lambda = 1; ``bsp_log_tk`` = T_k with the
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
  boards (same architecture first): their log(T_measured / T_model), carried to this
  board through each closed-form model (``xfer_log_t_<model>``), and through the app's
  chosen one (``xfer_log_t``).

How the app's baseline is chosen (``baseline_selection``):

* ``"spread"`` (default, the pinned figures): the one whose per-board offset varies
  least across the training boards;
* ``"transfer-cv"``: the one whose *transfer* misses least when each training board in
  turn is predicted from the others exactly as a held-out board is (same run, same
  architecture first, per-app offset as fallback): the mean of
  ``|T_transferred / T_measured - 1|`` over that board's runs. It is an inner
  leave-one-board-out over the training boards, so it scores what the baseline is used
  for. The spread criterion mixes architectures: with achieved (calibrated) bandwidths
  the roofline-memory offsets of the compute-bound matMul apps vary little across the
  Kepler boards, so "spread" picked that baseline for them and carried them to the
  Maxwell boards by a bandwidth ratio (GTX-970 transfer error 8.8 % -> 16.3 %).

References
----------
Amaris et al., HiPC 2015 (seed 003), eq. 3 (BSP); Williams et al., CACM 2009 (roofline).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from perfml.apps import list_apps
from perfml.learned.features._common import (
    BASELINES,
    RUN_KEY,
    architecture,
    board_peaks,
    log_or_nan,
    other_boards_median,
    second_size,
)


def closed_form_logs(rows: pd.DataFrame, *, data_home=None, registry=None, peaks: str = "spec",
                     characterizations=None) -> pd.DataFrame:
    """log T of the closed-form models with unit efficiency: BSP T_1, roofline compute and memory.

    ``rows`` has board, app_id, input_size and the launch columns, and optionally the work
    per launch of kernels without a description (``work_flops``, ``work_dram_bytes``:
    :data:`~perfml.learned.features._common.WORK_COLUMNS`). Nothing measured is used
    (with ``peaks="characterized"`` the roofline of described kernels takes the boards'
    achieved peaks from ``characterizations``: :class:`~perfml.closed_form.roofline.RooflineModel`).
    """
    from perfml.closed_form.bsp import BSPModel
    from perfml.closed_form.roofline import RooflineModel

    peak_choice = peaks
    out = pd.DataFrame(np.nan, index=rows.index, columns=list(BASELINES))
    is_described = rows["app_id"].isin(list_apps()).to_numpy()
    part = rows[is_described]
    if len(part):
        terms = BSPModel(constants_sources=(), data_home=data_home, registry=registry).model_terms(part)
        roof = RooflineModel(traffic="requested", registry=registry, peaks=peaks,
                             characterizations=characterizations).roofline_terms(part)
        out.loc[part.index, "bsp"] = log_or_nan(terms["t1_ms"])
        out.loc[part.index, "roof_memory"] = log_or_nan(roof["memory_ms"])
        out.loc[part.index, "roof_compute"] = log_or_nan(roof["compute_ms"])
    part = rows[~is_described]
    if len(part):
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
        out.loc[part.index, "bsp"] = log_or_nan(threads / peaks["compute"])
        out.loc[part.index, "roof_compute"] = log_or_nan(compute)
        out.loc[part.index, "roof_memory"] = log_or_nan(memory)
    return out


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


def baseline_choice(offsets: pd.DataFrame) -> dict[str, str]:
    """Per app, the baseline whose offset varies least across the boards of ``offsets``."""
    spread = offsets.groupby("app_id")[list(BASELINES)].std(ddof=0).fillna(0.0)
    return spread.idxmin(axis=1).to_dict()


#: how an app's closed-form baseline is chosen (see the module docstring)
BASELINE_SELECTIONS = ("spread", "transfer-cv")


def _cross_fitted(rows: pd.DataFrame, table: pd.DataFrame, keys, arch_of) -> pd.DataFrame:
    """Per row, the median of ``table``'s baselines over the *other* boards, same architecture first."""
    keys = list(keys)
    names = list(BASELINES)
    all_boards = other_boards_median(table, keys, names, rows)
    same_arch = pd.DataFrame(np.nan, index=rows.index, columns=names)
    for arch, part in rows.groupby(rows["board"].map(arch_of), sort=False):
        pool = table[table["architecture"] == arch]
        same_arch.loc[part.index, names] = other_boards_median(pool, keys, names, part)[names].to_numpy()
    return same_arch.fillna(all_boards)


def transfer_cv_choice(transfer: pd.DataFrame, offsets: pd.DataFrame, arch_of) -> dict[str, str]:
    """Per app, the baseline whose transfer from the other boards of the tables misses least.

    Each board of ``transfer`` (per-run offsets, :attr:`ClosedFormFeatures.transfer_`) is
    predicted from the other boards as a held-out board would be (same run, same
    architecture first, then the app's offset from ``offsets``); the baseline with the
    lowest mean ``|exp(error) - 1|`` over the app's runs wins. Falls back to
    :func:`baseline_choice` with fewer than two boards or for an app nothing scores.
    """
    fallback = baseline_choice(offsets)
    if transfer["board"].nunique() < 2:
        return fallback
    rows = transfer.reset_index(drop=True)
    names = list(BASELINES)
    per_run = _cross_fitted(rows, rows, RUN_KEY, arch_of)
    per_app = _cross_fitted(rows, offsets, ("app_id",), arch_of)
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
    baseline_selection : {"spread", "transfer-cv"}, default="spread"
        How each app's baseline is chosen (see the module docstring).

    Attributes
    ----------
    train_boards_ : list of str
    offsets_ : pandas.DataFrame
        Per training (board, app): median log(T_measured / T_model) of each closed-form
        baseline (BSP: -log lambda; roofline: log of an efficiency).
    transfer_ : pandas.DataFrame
        The same per training (board, run), for the transfer features.
    baseline_choice_ : dict
        Per app, the baseline with the least spread of offsets across training boards.
    """

    def __init__(self, *, registry=None, baseline_selection: str = "spread"):
        self.registry = registry
        self.baseline_selection = baseline_selection

    def _choose(self, offsets: pd.DataFrame, transfer: pd.DataFrame) -> dict[str, str]:
        """Per app, the baseline chosen on these training tables."""
        if self.baseline_selection == "transfer-cv":
            return transfer_cv_choice(transfer, offsets, self._arch)
        return baseline_choice(offsets)

    def _arch(self, board: str) -> str:
        return architecture(board, self.registry)

    def fit(self, X, y, *, launch: pd.DataFrame, logs: pd.DataFrame):
        self.train_boards_ = sorted(X["board"].unique())
        # Per (board, app): median over sizes of log(T_measured / T_closed_form). For
        # BSP this is -log(lambda) of seed 003; for the roofline terms an efficiency.
        ratios = pd.DataFrame({"board": X["board"].to_numpy(), "app_id": X["app_id"].to_numpy()})
        for name in BASELINES:
            ratios[name] = np.log(y) - logs[name].to_numpy()
        self.offsets_ = ratios.groupby(["board", "app_id"], as_index=False).median()
        # The same ratios per launch configuration (app, size, block), for the transfer
        # features: how the *same* kernel run behaved on the other training boards.
        per_run = ratios.assign(
            input_size=X["input_size"].to_numpy(dtype=float),
            input_size_2=second_size(X),
            block_x=launch["block_x"].to_numpy(),
            block_y=launch["block_y"].to_numpy(),
            grid_x=launch["grid_x"].to_numpy(),
            grid_y=launch["grid_y"].to_numpy(),
        )
        self.transfer_ = per_run.groupby(["board", *RUN_KEY], as_index=False)[list(BASELINES)].median()
        self.transfer_["architecture"] = self.transfer_["board"].map(self._arch)
        self.offsets_["architecture"] = self.offsets_["board"].map(self._arch)
        self.baseline_choice_ = self._choose(self.offsets_, self.transfer_)
        return self

    def _row_baseline_choice(self, rows: pd.DataFrame) -> np.ndarray:
        """Per row, the app's baseline chosen on the training boards other than the row's own."""
        choice = np.full(len(rows), "bsp", dtype=object)
        cache = self.__dict__.setdefault("_choice_without", {})  # per training board: fixed once fitted
        for board, part in rows.groupby("board", sort=False):
            if board in self.train_boards_:
                if board not in cache:
                    cache[board] = self._choose(self.offsets_[self.offsets_["board"] != board],
                                                self.transfer_[self.transfer_["board"] != board])
                table = cache[board]
            else:
                table = self.baseline_choice_
            pos = rows.index.get_indexer(part.index)
            choice[pos] = [table.get(a, "bsp") for a in part["app_id"]]
        return choice

    def _cross_fitted_offsets(self, rows: pd.DataFrame, table=None, keys=("app_id",)) -> pd.DataFrame:
        """Offsets of each row's app (or run, with ``keys``) from the *other* training boards, same architecture first."""
        return _cross_fitted(rows, self.offsets_ if table is None else table, keys, self._arch)

    def transform(self, X, *, launch: pd.DataFrame, logs: pd.DataFrame) -> pd.DataFrame:
        check_is_fitted(self, "offsets_")
        rows = pd.concat([X[["board", "app_id", "input_size"]], launch], axis=1)
        out = pd.DataFrame(index=X.index, dtype=float)
        closed = logs
        offsets = self._cross_fitted_offsets(rows)
        out["bsp_log_t1"] = closed["bsp"]
        out["bsp_log_lambda"] = -offsets["bsp"]
        out["bsp_log_tk"] = closed["bsp"] + offsets["bsp"]
        out["roof_log_compute"] = closed["roof_compute"]
        out["roof_log_memory"] = closed["roof_memory"]
        out["roof_log_bound"] = np.maximum(closed["roof_compute"], closed["roof_memory"])
        out["roof_log_memory_eff"] = closed["roof_memory"] + offsets["roof_memory"]
        out["roof_log_compute_eff"] = closed["roof_compute"] + offsets["roof_compute"]
        choice = self._row_baseline_choice(rows)
        stacked = {name: (closed[name] + offsets[name]).to_numpy() for name in BASELINES}
        out["base_log_t"] = np.array([stacked[c][i] for i, c in enumerate(choice)])
        # Transfer: the same (app, size, block) run on the other training boards, carried
        # to this board by each closed-form model's ratio; falls back to the per-app offset.
        runs = rows.astype({"input_size": float}).assign(input_size_2=second_size(X))
        transfer = self._cross_fitted_offsets(runs, self.transfer_, RUN_KEY).fillna(offsets)
        for name in BASELINES:
            out[f"xfer_log_t_{name}"] = closed[name] + transfer[name]
        xfer = {name: out[f"xfer_log_t_{name}"].to_numpy() for name in BASELINES}
        out["xfer_log_t"] = np.array([xfer[c][i] for i, c in enumerate(choice)])
        return out
