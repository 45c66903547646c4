"""Features of a runtime row, built without leaking the target board's measurements.

For each row (board, app_id, input_size, launch configuration) :class:`FeatureBuilder`
produces, with its source:

* ``board_*``: specifications and derived peaks of the board, from the registry
  (:mod:`perfml.learned.board_features`).
* ``desc_*``: kernel descriptors from the kernel description (``perfml/data/apps.toml``):
  total flops, global/shared loads and stores, compulsory DRAM bytes, threads, blocks,
  block size, input size; whether the variant is coalesced / uses shared memory.
* ``bsp_*``: the BSP model of seed 003 with registry constants (cores x clock, the
  paper's latencies): ``bsp_t1`` = T_k with lambda = 1; ``bsp_tk`` = T_k with the app's
  lambda fitted on the *training boards other than the row's own* (cross-fitted, so a
  training row sees what a test row sees); ``bsp_log_lambda`` that lambda.
* ``roof_*``: roofline compute, memory and bound times (registry peaks, requested
  global traffic), and the same with the app's efficiency cross-fitted like lambda.
* ``base_log_t``: the closed-form baseline of the row's app: among BSP, roofline memory
  and roofline compute, the one whose per-board offset log(T_measured / T_model) varies
  least across the training boards (other than the row's own), with its offset taken from the other training
  boards of the same architecture (all other training boards if none). Lambda and the
  efficiencies are cross-fitted this way too.
* ``xfer_*``: transfer of the *same run* (app, size, block) from the other training
  boards (same architecture first; same size, block and grid): their log(T_measured / T_model), carried to this
  board through each closed-form model (``xfer_log_t_<model>``), and through the app's
  chosen one (``xfer_log_t``).
* ``occ_*``: occupancy of the launch from the registry's occupancy calculator, with the
  registers per thread observed for that app and launch on *other* training boards.
* ``prof_*``: nvprof counters of the same app, size and launch measured on the training
  boards other than the row's own (median), e.g. global load transactions per request
  (how coalesced the kernel is) or instructions executed, and the MEMTHR / ARITHTHR
  criteria of seed 000 (achieved DRAM / FP32 throughput as a share of the peak) of
  those runs.

All times and counts enter as natural logs. ``fit`` only stores what it learned from
the training rows; ``transform`` never reads a runtime.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from perfml.apps import get_app, list_apps
from perfml.learned.board_features import board_features
from perfml.closed_form._inputs import LAUNCH_COLUMNS, check_frame, check_target

REQUIRED = ("board", "app_id", "input_size")

#: nvprof counters used as kernel descriptors (profiles_nca names), all compute capabilities.
PROFILE_METRICS = {
    "prof_inst_executed": "e.inst_executed",
    "prof_gld_inst": "e.gld_inst_32bit",
    "prof_gst_inst": "e.gst_inst_32bit",
    "prof_shared_load": "e.shared_load",
    "prof_shared_store": "e.shared_store",
    "prof_gld_transactions": "m.Global Load Transactions",
    "prof_gst_transactions": "m.Global Store Transactions",
    "prof_gld_tpr": "m.Global Load Transactions Per Request",
    "prof_gst_tpr": "m.Global Store Transactions Per Request",
    "prof_shm_ld_tpr": "m.Shared Memory Load Transactions Per Request",
    "prof_dram_read_tx": "m.Device Memory Read Transactions",
    "prof_dram_write_tx": "m.Device Memory Write Transactions",
    "prof_l2_read_tx": "m.L2 Read Transactions",
    "prof_gld_efficiency": "m.Global Memory Load Efficiency",
    "prof_ldst_executed": "m.Executed Load/Store Instructions",
}
_PROFILE_KEY = ["app_id", "input_size", "block_x", "block_y"]
#: A kernel run: the app, its size and its full launch configuration.
_RUN_KEY = ["app_id", "input_size", "input_size_2", "block_x", "block_y", "grid_x", "grid_y"]

#: Closed-form baselines whose per-app offset is cross-fitted over training boards.
BASELINES = ("bsp", "roof_memory", "roof_compute")

#: Features whose value can only increase the runtime (monotone +1 constraints).
MONOTONE_INCREASING = (
    "desc_log_n",
    "desc_log_flops",
    "desc_log_gld",
    "desc_log_gst",
    "desc_log_dram_bytes",
    "bsp_log_t1",
    "roof_log_compute",
    "roof_log_memory",
    "roof_log_bound",
)


def _log(values) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(v > 0, np.log(v), np.where(v == 0, 0.0, np.nan))


def _described(app_id: str) -> bool:
    return app_id in set(list_apps())


def _launch_frame(X: pd.DataFrame) -> pd.DataFrame:
    """Block/grid dims per row: the row's own where given, else the description's default.

    A kernel without a description (e.g. the Rodinia kernels) keeps the row's own launch.
    """
    out = pd.DataFrame(index=X.index, columns=list(LAUNCH_COLUMNS), dtype=float)
    for app_id, part in X.groupby("app_id", sort=False):
        given = {c: part[c].to_numpy(dtype=float) if c in part else None for c in LAUNCH_COLUMNS}
        if not _described(app_id):
            if any(given[c] is None or not np.all(np.isfinite(given[c])) for c in ("block_x", "grid_x")):
                from perfml.errors import UnknownAppError

                raise UnknownAppError(
                    f"app {app_id!r} has no kernel description (perfml/data/apps.toml) and its rows lack a launch "
                    "configuration; give block_x/block_y/grid_x/grid_y for every row, or describe the kernel"
                )
            for c in LAUNCH_COLUMNS:
                out.loc[part.index, c] = given[c] if given[c] is not None else np.nan
            continue
        app = get_app(app_id)
        bx, by, gx, gy = app.launch_dims(part["input_size"].to_numpy(dtype=float), **given)
        out.loc[part.index, "block_x"], out.loc[part.index, "block_y"] = bx, by
        out.loc[part.index, "grid_x"], out.loc[part.index, "grid_y"] = gx, gy
    return out


def descriptor_features(X: pd.DataFrame, launch: pd.DataFrame) -> pd.DataFrame:
    """``desc_*`` features from the kernel descriptions (no measurement involved)."""
    out = pd.DataFrame(index=X.index, dtype=float)
    n2 = X["input_size_2"].to_numpy(dtype=float) if "input_size_2" in X else np.full(len(X), np.nan)
    out["desc_log_n2"] = _log(np.nan_to_num(n2, nan=0.0))
    for app_id, part in X.groupby("app_id", sort=False):
        idx = part.index
        dims = {c: launch.loc[idx, c].to_numpy(dtype=float) for c in LAUNCH_COLUMNS}
        n = part["input_size"].to_numpy(dtype=float)
        threads = dims["block_x"] * dims["block_y"] * dims["grid_x"] * dims["grid_y"]
        out.loc[idx, "desc_log_n"] = np.log(n)
        out.loc[idx, "desc_log_threads"] = _log(threads)
        out.loc[idx, "desc_log_blocks"] = _log(dims["grid_x"] * dims["grid_y"])
        out.loc[idx, "desc_block_size"] = dims["block_x"] * dims["block_y"]
        if not _described(app_id):
            continue  # no description: the work counts stay unknown (NaN)
        app = get_app(app_id)
        w = app.work_per_thread(n, **dims)
        t = w["threads"]
        out.loc[idx, "desc_log_flops"] = _log((w["flops"] + w["int_ops"]) * t)
        out.loc[idx, "desc_log_gld"] = _log(w["gld"] * t)
        out.loc[idx, "desc_log_gst"] = _log(w["gst"] * t)
        out.loc[idx, "desc_log_sld"] = _log(w["sld"] * t)
        out.loc[idx, "desc_log_sst"] = _log(w["sst"] * t)
        out.loc[idx, "desc_log_dram_bytes"] = _log(w["dram_bytes_total"])
        out.loc[idx, "desc_work_per_thread"] = _log(w["flops"] + w["int_ops"] + w["gld"] + w["gst"])
        out.loc[idx, "desc_coalesced"] = 0.0 if "uncoalesced" in app.variant else 1.0
        out.loc[idx, "desc_shared"] = 1.0 if bool(app.bsp["uses_shared"]) else 0.0
    return out


class FeatureBuilder(TransformerMixin, BaseEstimator):
    """Build the learned predictor's features (see the module docstring for each group).

    Parameters
    ----------
    analytical : bool, default=True
        Add the ``bsp_*``, ``roof_*`` and ``occ_*`` features.
    profiles : bool, default=True
        Add the ``prof_*`` features (profiles of the app on the *other* training boards).
    app_identity : bool, default=True
        Add one indicator column per app seen in training (``app=<id>``); turn it off
        for leave-one-app-out, where the app is by definition unseen.
    board_features : {"both", "absolute", "relative"}, default="both"
        ``board_*`` absolute specifications, ``rel_*`` specifications relative to the
        other training boards (log differences), or both.
    data_home : path-like, optional
        Where profiles are read from.

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
    profile_values_ : pandas.DataFrame
        Profile counters (log) of the training boards, indexed by app, size and launch.
    registers_ : pandas.DataFrame
        Registers per thread per (board, app, block) of the training rows.
    apps_ : list of str
    feature_names_ : list of str
    """

    def __init__(self, *, analytical: bool = True, profiles: bool = True, app_identity: bool = True,
                 board_features: str = "both", data_home=None):
        self.analytical = analytical
        self.profiles = profiles
        self.app_identity = app_identity
        self.board_features = board_features
        self.data_home = data_home

    def fit(self, X, y):
        """Learn, from the training rows only, what the features of any row need."""
        X = check_frame(X, REQUIRED, "FeatureBuilder")
        y = check_target(y, len(X), "FeatureBuilder")
        self.train_boards_ = sorted(X["board"].unique())
        self.apps_ = sorted(X["app_id"].unique())
        if self.analytical:
            launch = _launch_frame(X)
            rows = pd.concat([X[["board", "app_id", "input_size"]], launch], axis=1)
            closed = self._closed_form_logs(rows)
            # Per (board, app): median over sizes of log(T_measured / T_closed_form). For
            # BSP this is -log(lambda) of seed 003; for the roofline terms an efficiency.
            ratios = pd.DataFrame({"board": X["board"].to_numpy(), "app_id": X["app_id"].to_numpy()})
            for name in BASELINES:
                ratios[name] = np.log(y) - closed[name].to_numpy()
            self.offsets_ = ratios.groupby(["board", "app_id"], as_index=False).median()
            # The same ratios per launch configuration (app, size, block), for the transfer
            # features: how the *same* kernel run behaved on the other training boards.
            per_run = ratios.assign(
                input_size=X["input_size"].to_numpy(dtype=float),
                input_size_2=_second_size(X),
                block_x=launch["block_x"].to_numpy(),
                block_y=launch["block_y"].to_numpy(),
                grid_x=launch["grid_x"].to_numpy(),
                grid_y=launch["grid_y"].to_numpy(),
            )
            self.transfer_ = per_run.groupby(["board", *_RUN_KEY], as_index=False)[list(BASELINES)].median()
            self.transfer_["architecture"] = self.transfer_["board"].map(_architecture)
            self.offsets_["architecture"] = self.offsets_["board"].map(_architecture)
            # Per app, the baseline whose offset varies least across training boards.
            self.baseline_choice_ = self._baseline_choice(self.offsets_)
            regs = X.get("registers_per_thread")
            self.registers_ = pd.DataFrame(
                {
                    "board": X["board"].to_numpy(),
                    "app_id": X["app_id"].to_numpy(),
                    "block_x": launch["block_x"].to_numpy(),
                    "block_y": launch["block_y"].to_numpy(),
                    "registers": (regs.to_numpy(dtype=float) if regs is not None else np.full(len(X), np.nan)),
                }
            ).dropna().groupby(["board", "app_id", "block_x", "block_y"], as_index=False)["registers"].median()
        if self.profiles:
            from perfml.datasets import load_profiles_nca

            prof = load_profiles_nca(self.data_home)
            prof = prof[prof["board"].isin(self.train_boards_)]
            cols = {name: metric for name, metric in PROFILE_METRICS.items() if metric in prof.columns}
            values = prof[["board", *_PROFILE_KEY]].copy()
            for name, metric in cols.items():
                values[name] = _log(prof[metric].to_numpy(dtype=float) + (1.0 if name.endswith(("_tpr", "_efficiency")) else 0.0))
            values["prof_memthr"], values["prof_ariththr"] = _throughput_criteria(prof)
            self.profile_values_ = values.groupby(["board", *_PROFILE_KEY], as_index=False).median()
        self.feature_names_ = list(self.transform(X.head(1)).columns)
        return self

    # -- persistence (plain tables, never pickles) --------------------------------------
    _STATE_TABLES = ("offsets_", "transfer_", "registers_", "profile_values_")

    def get_state(self) -> tuple[dict, dict[str, pd.DataFrame]]:
        """The fitted state as JSON-able metadata plus named tables (for Parquet)."""
        check_is_fitted(self, "train_boards_")
        meta = {
            "params": self.get_params(deep=False) | {"data_home": None},
            "train_boards": list(self.train_boards_),
            "apps": list(self.apps_),
            "feature_names": list(self.feature_names_),
            "baseline_choice": dict(getattr(self, "baseline_choice_", {})),
        }
        tables = {name.rstrip("_"): getattr(self, name) for name in self._STATE_TABLES if hasattr(self, name)}
        return meta, tables

    @classmethod
    def from_state(cls, meta: dict, tables: dict[str, pd.DataFrame], data_home=None) -> "FeatureBuilder":
        """Rebuild a fitted FeatureBuilder from :meth:`get_state`'s output."""
        builder = cls(**{**meta["params"], "data_home": data_home})
        builder.train_boards_ = list(meta["train_boards"])
        builder.apps_ = list(meta["apps"])
        builder.feature_names_ = list(meta["feature_names"])
        if builder.analytical:
            builder.baseline_choice_ = dict(meta["baseline_choice"])
        for name in cls._STATE_TABLES:
            key = name.rstrip("_")
            if key in tables:
                setattr(builder, name, tables[key])
        return builder

    def _relative_board_features(self, X: pd.DataFrame, absolute: pd.DataFrame) -> pd.DataFrame:
        """``rel_*``: log of each board figure minus its mean log over the *other* training boards.

        How the board differs from the boards its transfer features come from; the same
        quantity for a training row (against the other training boards) and a test row.
        """
        train = board_features(self.train_boards_)
        train.index = self.train_boards_
        logs = np.log(train.where(train > 0))
        out = pd.DataFrame(index=X.index, dtype=float)
        own = np.log(absolute.where(absolute > 0))
        for board, part in X.groupby("board", sort=False):
            others = logs.drop(index=board, errors="ignore").mean()
            delta = own.loc[part.index] - others
            out.loc[part.index, [f"rel_{c[6:]}" for c in delta.columns]] = delta.to_numpy()
        out["rel_same_architecture_boards"] = X["board"].map(
            lambda b: sum(_architecture(t) == _architecture(b) for t in self.train_boards_ if t != b)
        ).astype(float)
        return out

    # -- leave-own-board-out aggregation ------------------------------------------------
    def _other_boards_median(self, table: pd.DataFrame, keys: list[str], value_cols: list[str], rows: pd.DataFrame) -> pd.DataFrame:
        """For each row, the median of ``value_cols`` over training boards other than the row's."""
        out = pd.DataFrame(np.nan, index=rows.index, columns=value_cols)
        if table.empty:
            return out
        for board, part in rows.groupby("board", sort=False):
            pool = table[table["board"] != board]
            if pool.empty:
                continue
            med = pool.groupby(keys)[value_cols].median()
            joined = part[keys].merge(med, left_on=keys, right_index=True, how="left")
            out.loc[part.index, value_cols] = joined[value_cols].to_numpy()
        return out

    def _closed_form_logs(self, rows: pd.DataFrame) -> pd.DataFrame:
        """log T of the closed-form models with unit efficiency: BSP T_1, roofline compute and memory."""
        from perfml.closed_form.bsp import BSPModel
        from perfml.closed_form.roofline import RooflineModel

        out = pd.DataFrame(np.nan, index=rows.index, columns=list(BASELINES))
        described = rows["app_id"].isin(list_apps()).to_numpy()
        part = rows[described]
        if len(part):
            terms = BSPModel(constants_sources=(), data_home=self.data_home).model_terms(part)
            roof = RooflineModel(traffic="requested").roofline_terms(part)
            out.loc[part.index, "bsp"] = _log(terms["t1_ms"])
            out.loc[part.index, "roof_memory"] = _log(roof["memory_ms"])
            out.loc[part.index, "roof_compute"] = _log(roof["compute_ms"])
        part = rows[~described]
        if len(part):
            # No description: the work is unknown, so each model keeps only how it scales
            # with the board and the launch: threads / (cores x clock) for BSP (seed 003 eq. 3
            # with unit work) and the compute roof, threads / bandwidth for the memory roof.
            threads = (part["block_x"] * part["block_y"].fillna(1) * part["grid_x"] * part["grid_y"].fillna(1)).to_numpy(dtype=float)
            peaks = _board_peaks(part["board"])
            out.loc[part.index, "bsp"] = _log(threads / peaks["compute"])
            out.loc[part.index, "roof_compute"] = _log(threads / peaks["compute"])
            out.loc[part.index, "roof_memory"] = _log(threads / peaks["bandwidth"])
        return out

    @staticmethod
    def _baseline_choice(offsets: pd.DataFrame) -> dict[str, str]:
        spread = offsets.groupby("app_id")[list(BASELINES)].std(ddof=0).fillna(0.0)
        return spread.idxmin(axis=1).to_dict()

    def _row_baseline_choice(self, rows: pd.DataFrame) -> np.ndarray:
        """Per row, the app's baseline chosen on the training boards other than the row's own."""
        choice = np.full(len(rows), "bsp", dtype=object)
        for board, part in rows.groupby("board", sort=False):
            pool = self.offsets_[self.offsets_["board"] != board]
            table = self._baseline_choice(pool) if board in self.train_boards_ else self.baseline_choice_
            pos = rows.index.get_indexer(part.index)
            choice[pos] = [table.get(a, "bsp") for a in part["app_id"]]
        return choice

    def _cross_fitted_offsets(self, rows: pd.DataFrame, table=None, keys=("app_id",)) -> pd.DataFrame:
        """Offsets of each row's app (or run, with ``keys``) from the *other* training boards, same architecture first."""
        table = self.offsets_ if table is None else table
        keys = list(keys)
        names = list(BASELINES)
        all_boards = self._other_boards_median(table, keys, names, rows)
        same_arch = pd.DataFrame(np.nan, index=rows.index, columns=names)
        for arch, part in rows.groupby(rows["board"].map(_architecture), sort=False):
            pool = table[table["architecture"] == arch]
            same_arch.loc[part.index, names] = self._other_boards_median(pool, keys, names, part)[names].to_numpy()
        return same_arch.fillna(all_boards)

    def transform(self, X) -> pd.DataFrame:
        """Features of the rows of X (a DataFrame with board, app_id, input_size, launch)."""
        check_is_fitted(self, "train_boards_")
        X = check_frame(X, REQUIRED, "FeatureBuilder")
        launch = _launch_frame(X)
        absolute = board_features(X["board"]).set_index(X.index)
        parts = [descriptor_features(X, launch)]
        if self.board_features in ("absolute", "both"):
            parts.insert(0, absolute)
        if self.board_features in ("relative", "both"):
            parts.append(self._relative_board_features(X, absolute))
        if self.analytical:
            parts.append(self._analytical(X, launch))
        if self.profiles:
            rows = pd.concat([X[["board", "app_id", "input_size"]], launch[["block_x", "block_y"]]], axis=1)
            rows = rows.astype({"input_size": float})
            table = self.profile_values_.astype({"input_size": float})
            names = [c for c in self.profile_values_.columns if c.startswith("prof_")]
            parts.append(self._other_boards_median(table, _PROFILE_KEY, names, rows))
        if self.app_identity:
            parts.append(pd.DataFrame({f"app={a}": (X["app_id"] == a).astype(float) for a in self.apps_}, index=X.index))
        return pd.concat(parts, axis=1).astype(float)

    def _analytical(self, X: pd.DataFrame, launch: pd.DataFrame) -> pd.DataFrame:
        from perfml.boards import get_board, occupancy
        from perfml.errors import MissingBoardParameterError

        rows = pd.concat([X[["board", "app_id", "input_size"]], launch], axis=1)
        out = pd.DataFrame(index=X.index, dtype=float)
        closed = self._closed_form_logs(rows)
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
        runs = rows.astype({"input_size": float}).assign(input_size_2=_second_size(X))
        transfer = self._cross_fitted_offsets(runs, self.transfer_, _RUN_KEY).fillna(offsets)
        for name in BASELINES:
            out[f"xfer_log_t_{name}"] = closed[name] + transfer[name]
        xfer = {name: out[f"xfer_log_t_{name}"].to_numpy() for name in BASELINES}
        out["xfer_log_t"] = np.array([xfer[c][i] for i, c in enumerate(choice)])
        regs = self._other_boards_median(self.registers_, ["app_id", "block_x", "block_y"], ["registers"], rows)["registers"]
        block = (launch["block_x"] * launch["block_y"].fillna(1)).to_numpy()
        keys = pd.DataFrame({"board": X["board"].to_numpy(), "threads": block, "regs": regs.to_numpy()})
        cache: dict[tuple, float] = {}
        for board, threads, r in keys.drop_duplicates().itertuples(index=False):
            try:
                value = occupancy(get_board(board), int(threads), int(r) if np.isfinite(r) else 0).occupancy
            except (MissingBoardParameterError, ValueError):
                value = np.nan
            cache[(board, threads, r)] = value
        occ = np.array([cache.get(k, np.nan) for k in keys.itertuples(index=False, name=None)])
        out["occ_fraction"] = occ
        out["occ_registers"] = regs.to_numpy()
        return out


def _second_size(X: pd.DataFrame) -> np.ndarray:
    """The second size parameter (Rodinia ``input_size_2``), 0 where there is none."""
    if "input_size_2" not in X:
        return np.zeros(len(X))
    return np.nan_to_num(X["input_size_2"].to_numpy(dtype=float), nan=0.0)


def _board_peaks(boards: pd.Series) -> pd.DataFrame:
    """Per row: FP32 peak (FLOP/s) and peak bandwidth (bytes/s) of the board, NaN if unknown."""
    from perfml.boards import get_board, peak_bandwidth, peak_flops
    from perfml.errors import MissingBoardParameterError

    table = {}
    for name in boards.unique():
        board = get_board(name)
        try:
            compute = peak_flops(board, "fp32")
        except MissingBoardParameterError:
            compute = np.nan
        try:
            bandwidth = peak_bandwidth(board)
        except MissingBoardParameterError:
            bandwidth = np.nan
        table[name] = (compute, bandwidth)
    return pd.DataFrame([table[b] for b in boards], columns=["compute", "bandwidth"], index=boards.index)


def _throughput_criteria(prof: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """MEMTHR and ARITHTHR (seed 000 Sec. IV-H and V) of each profile row, on the board it was profiled on.

    Uses :func:`perfml.diagnosis.criteria.memthr` / :func:`~perfml.diagnosis.criteria.ariththr`
    with identity characterization; NaN where a counter or a board field is missing.
    """
    from perfml.boards import get_board, peak_bandwidth
    from perfml.diagnosis.criteria import ariththr, memthr

    dram_cols = ["m.Device Memory Read Transactions", "m.Device Memory Write Transactions"]
    flop_col = "m.Floating Point Operations(Single Precision)"
    mem = np.full(len(prof), np.nan)
    arith = np.full(len(prof), np.nan)
    if "e.elapsed_cycles_sm" not in prof.columns:
        return mem, arith
    cycles = prof["e.elapsed_cycles_sm"].to_numpy(dtype=float)
    dram = prof[dram_cols].sum(axis=1, min_count=2).to_numpy(dtype=float) * 32.0 if set(dram_cols) <= set(prof.columns) else np.full(len(prof), np.nan)
    flops = prof[flop_col].to_numpy(dtype=float) if flop_col in prof.columns else np.full(len(prof), np.nan)
    for i, board_name in enumerate(prof["board"].to_numpy()):
        if not (np.isfinite(cycles[i]) and cycles[i] > 0):
            continue
        board = get_board(board_name)
        clock = board.boost_clock_mhz or board.base_clock_mhz
        if np.isfinite(dram[i]) and clock and board.sms:
            mem[i] = memthr(dram[i], cycles[i], sms=board.sms, clock_mhz=clock, peak_bandwidth_gbs=peak_bandwidth(board) / 1e9)
        if np.isfinite(flops[i]) and board.fp32_cores_per_sm:
            arith[i] = ariththr(flops[i], cycles[i], fp32_cores_per_sm=board.fp32_cores_per_sm)
    return mem, arith


@functools.lru_cache(maxsize=256)
def _architecture(board: str) -> str:
    from perfml.boards import get_board

    return str(get_board(board).architecture)
