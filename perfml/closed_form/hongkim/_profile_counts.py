"""Per-warp instruction counts of the NCA profiles, for ``instruction_source="profiles"``.

A row's counts are the median over the profiles of the same app, input size and block
shape measured on the *other* boards, so its own measurements never leak into its
prediction.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd

from perfml.errors import MissingMetricError, PerfmlError

__all__ = ["from_other_boards", "profile_counts"]


def profile_counts(data_home) -> pd.DataFrame:
    """Per-warp instruction counts of every NCA profile row.

    ``insts`` = ``e.inst_executed`` / warps launched (``blocks x ceil(threads per block /
    warp_size)``), ``mem`` = global load plus store instructions (``e.gld_inst_*bit``,
    ``e.gst_inst_*bit``, thread-level events) / threads. Read through
    ``perfml.datasets.load_profiles_nca`` at call time.
    """
    from perfml import datasets

    prof = datasets.load_profiles_nca(data_home)
    for column in ("e.inst_executed", "e.gld_inst_32bit", "e.gst_inst_32bit"):
        if column not in prof:
            raise MissingMetricError(
                f"profiles_nca lacks {column!r}, which the Hong & Kim instruction counts need; "
                "use instruction_source='description'"
            )
    warp = prof["board"].map(lambda b: _warp_size(str(b))).to_numpy(dtype=float)
    tpb = (prof["block_x"] * prof["block_y"].fillna(1)).to_numpy(dtype=float)
    blocks = (prof["grid_x"] * prof["grid_y"].fillna(1)).to_numpy(dtype=float)
    threads = tpb * blocks
    warps = blocks * np.ceil(tpb / warp)
    width_cols = [c for c in prof.columns if c.startswith(("e.gld_inst_", "e.gst_inst_"))]
    mem = prof[width_cols].sum(axis=1, min_count=1).to_numpy(dtype=float) / threads
    insts = prof["e.inst_executed"].to_numpy(dtype=float) / warps
    frame = pd.DataFrame({
        "board": prof["board"].astype(str).to_numpy(),
        "app_id": prof["app_id"].astype(str).to_numpy(),
        "input_size": prof["input_size"].to_numpy(dtype=float),
        "block_x": prof["block_x"].to_numpy(dtype=float),
        "block_y": prof["block_y"].fillna(1).to_numpy(dtype=float),
        "comp": np.clip(insts - mem, 0.0, None),
        "mem": mem,
    })
    ok = np.isfinite(frame["comp"]) & np.isfinite(frame["mem"]) & (frame["mem"] > 0)
    # One value per board and configuration (several block_dir / kernel versions may
    # hold the same one), so that every board weighs the same in the median.
    keys = ["app_id", "input_size", "block_x", "block_y", "board"]
    return frame[ok].groupby(keys, as_index=False)[["comp", "mem"]].median()


@functools.lru_cache(maxsize=64)
def _warp_size(board_name: str) -> float:
    from perfml.boards import get_board

    try:
        return float(get_board(board_name).warp_size or math.nan)
    except PerfmlError:
        return math.nan


def from_other_boards(profiles, app_id, boards, n, bx, by):
    """Median per-warp (comp, mem) over the boards other than each row's own."""
    comp = np.full(len(n), np.nan)
    mem = np.full(len(n), np.nan)
    same_app = profiles[profiles["app_id"] == app_id]
    by_config = {key: (g["board"].to_numpy(), g["comp"].to_numpy(), g["mem"].to_numpy())
                 for key, g in same_app.groupby(["input_size", "block_x", "block_y"])}
    keys = pd.DataFrame({"board": boards, "n": n, "bx": bx, "by": by})
    for (board, size, x, y), rows in keys.groupby(["board", "n", "bx", "by"], sort=False).indices.items():
        found = by_config.get((size, x, y))
        if found is None:
            continue
        other = found[0] != board
        if other.any():
            comp[rows] = np.median(found[1][other])
            mem[rows] = np.median(found[2][other])
    return comp, mem, ~np.isfinite(comp)
