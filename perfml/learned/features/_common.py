"""Names, keys and helpers shared by the feature groups."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from perfml.apps import list_apps

#: Columns every row must have.
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
PROFILE_KEY = ["app_id", "input_size", "block_x", "block_y"]
#: A kernel run: the app, its size and its full launch configuration.
RUN_KEY = ["app_id", "input_size", "input_size_2", "block_x", "block_y", "grid_x", "grid_y"]

#: Work per launch a row may carry when its kernel has no description (sweep rows of
#: microbenchmarks, whose sidecar gives it: :mod:`perfml.measure.runtime_rows`).
WORK_COLUMNS = ("work_flops", "work_dram_bytes")

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


def log_or_nan(values) -> np.ndarray:
    """Natural log of positive values, 0 for 0, NaN for negative or missing values."""
    v = np.asarray(values, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(v > 0, np.log(v), np.where(v == 0, 0.0, np.nan))


def described(app_id: str) -> bool:
    """Whether the app has a kernel description."""
    return app_id in set(list_apps())


def second_size(X: pd.DataFrame) -> np.ndarray:
    """The second size parameter (Rodinia ``input_size_2``), 0 where there is none."""
    if "input_size_2" not in X:
        return np.zeros(len(X))
    return np.nan_to_num(X["input_size_2"].to_numpy(dtype=float), nan=0.0)


@functools.lru_cache(maxsize=256)
def _default_architecture(board: str) -> str:
    from perfml.boards import get_board

    return str(get_board(board).architecture)


def architecture(board: str, registry=None) -> str:
    """Architecture of a board of ``registry`` (the default registry when None)."""
    if registry is None:
        return _default_architecture(board)
    from perfml.boards import get_board

    return str(get_board(board, registry=registry).architecture)


def other_boards_median(table: pd.DataFrame, keys: list[str], value_cols: list[str], rows: pd.DataFrame) -> pd.DataFrame:
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


def board_peaks(boards: pd.Series, registry=None) -> pd.DataFrame:
    """Per row: FP32 peak (FLOP/s) and peak bandwidth (bytes/s) of the board, NaN if unknown."""
    from perfml.boards import get_board, peak_bandwidth, peak_flops
    from perfml.errors import MissingBoardParameterError

    table = {}
    for name in boards.unique():
        board = get_board(name, registry=registry)
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
