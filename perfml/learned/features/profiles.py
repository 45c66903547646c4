"""The profile group: ``prof_*`` nvprof counters of the same run on the *other* training boards.

For each row, the median over the training boards other than its own of the counters
of the same app, size and launch (e.g. global load transactions per request: how
coalesced the kernel is; instructions executed), and the MEMTHR / ARITHTHR criteria of
seed 000 (achieved DRAM / FP32 throughput as a share of the peak) of those runs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from perfml.learned.features._common import PROFILE_KEY, PROFILE_METRICS, OtherBoardsMedian, log_or_nan


def throughput_criteria(prof: pd.DataFrame, registry=None) -> tuple[np.ndarray, np.ndarray]:
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
        board = get_board(board_name, registry=registry)
        clock = board.boost_clock_mhz or board.base_clock_mhz
        if np.isfinite(dram[i]) and clock and board.sms:
            mem[i] = memthr(dram[i], cycles[i], sms=board.sms, clock_mhz=clock, peak_bandwidth_gbs=peak_bandwidth(board) / 1e9)
        if np.isfinite(flops[i]) and board.fp32_cores_per_sm:
            arith[i] = ariththr(flops[i], cycles[i], fp32_cores_per_sm=board.fp32_cores_per_sm)
    return mem, arith


def profile_feature_values(prof: pd.DataFrame, registry=None) -> pd.DataFrame:
    """The ``prof_*`` values (logs, MEMTHR, ARITHTHR) of profile rows, median per board and :data:`PROFILE_KEY`.

    ``prof`` has ``board``, the key columns and counters named as in ``profiles_nca``
    (:data:`~perfml.learned.features._common.PROFILE_METRICS`); a missing counter gives NaN.
    """
    cols = {name: metric for name, metric in PROFILE_METRICS.items() if metric in prof.columns}
    values = prof[["board", *PROFILE_KEY]].copy()
    for name, metric in cols.items():
        values[name] = log_or_nan(prof[metric].to_numpy(dtype=float) + (1.0 if name.endswith(("_tpr", "_efficiency")) else 0.0))
    values["prof_memthr"], values["prof_ariththr"] = throughput_criteria(prof, registry)
    return values.groupby(["board", *PROFILE_KEY], as_index=False).median()


class ProfileFeatures(TransformerMixin, BaseEstimator):
    """``prof_*`` of every row from the profiles of the training boards (never the row's own board).

    Parameters
    ----------
    data_home : DataHome or path-like, optional
        Where ``profiles_nca`` is read from (read once per DataHome).
    registry : perfml.boards.Registry, optional

    Attributes
    ----------
    profile_values_ : pandas.DataFrame
        Profile counters (log) of the training boards, indexed by app, size and launch.
    """

    def __init__(self, *, data_home=None, registry=None):
        self.data_home = data_home
        self.registry = registry

    def fit(self, X, y=None):
        from perfml.datasets import as_data_home

        train_boards = sorted(X["board"].unique())
        prof = as_data_home(self.data_home, what="ProfileFeatures").table("profiles_nca")
        prof = prof[prof["board"].isin(train_boards)]
        self.profile_values_ = profile_feature_values(prof, self.registry)
        return self

    def transform(self, X, *, launch: pd.DataFrame) -> pd.DataFrame:
        check_is_fitted(self, "profile_values_")
        rows = pd.concat([X[["board", "app_id", "input_size"]], launch[["block_x", "block_y"]]], axis=1)
        rows = rows.astype({"input_size": float})
        cache = self.__dict__.get("_lookup_cache")
        if cache is None:
            cache = self._lookup_cache = {}
        if "profiles" not in cache:
            table = self.profile_values_.astype({"input_size": float})
            names = [c for c in self.profile_values_.columns if c.startswith("prof_")]
            cache["profiles"] = OtherBoardsMedian(table, PROFILE_KEY, names)  # medians computed once per board
        return cache["profiles"](rows)
