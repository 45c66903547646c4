"""The descriptor group: ``desc_*`` work counts of the kernel description (no measurement involved)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfml._grouping import group_positions
from perfml.apps import get_app
from perfml.closed_form._inputs import LAUNCH_COLUMNS
from perfml.learned.features._common import described, log_or_nan


def descriptor_features(X: pd.DataFrame, launch: pd.DataFrame) -> pd.DataFrame:
    """``desc_*`` features: input sizes, threads, blocks, block size, and (described apps) the work.

    Total flops, global/shared loads and stores, compulsory DRAM bytes, work per thread,
    whether the variant is coalesced / uses shared memory, all from the kernel description.
    """
    names = ["desc_log_n2", "desc_log_n", "desc_log_threads", "desc_log_blocks", "desc_block_size", "desc_log_flops",
             "desc_log_gld", "desc_log_gst", "desc_log_sld", "desc_log_sst", "desc_log_dram_bytes",
             "desc_work_per_thread", "desc_coalesced", "desc_shared"]
    cols = {name: np.full(len(X), np.nan) for name in names}
    n2 = X["input_size_2"].to_numpy(dtype=float) if "input_size_2" in X else np.full(len(X), np.nan)
    cols["desc_log_n2"] = log_or_nan(np.nan_to_num(n2, nan=0.0))
    launch_values = {c: launch[c].to_numpy(dtype=float) for c in LAUNCH_COLUMNS}
    sizes = X["input_size"].to_numpy(dtype=float)
    any_described = False
    # positional assignment per app: no per-group .loc writes
    for app_id, pos in group_positions(X["app_id"]).items():
        dims = {c: launch_values[c][pos] for c in LAUNCH_COLUMNS}
        n = sizes[pos]
        threads = dims["block_x"] * dims["block_y"] * dims["grid_x"] * dims["grid_y"]
        cols["desc_log_n"][pos] = np.log(n)
        cols["desc_log_threads"][pos] = log_or_nan(threads)
        cols["desc_log_blocks"][pos] = log_or_nan(dims["grid_x"] * dims["grid_y"])
        cols["desc_block_size"][pos] = dims["block_x"] * dims["block_y"]
        if not described(app_id):
            continue  # no description: the work counts stay unknown (NaN)
        any_described = True
        app = get_app(app_id)
        w = app.work_per_thread(n, **dims)
        t = w["threads"]
        cols["desc_log_flops"][pos] = log_or_nan((w["flops"] + w["int_ops"]) * t)
        cols["desc_log_gld"][pos] = log_or_nan(w["gld"] * t)
        cols["desc_log_gst"][pos] = log_or_nan(w["gst"] * t)
        cols["desc_log_sld"][pos] = log_or_nan(w["sld"] * t)
        cols["desc_log_sst"][pos] = log_or_nan(w["sst"] * t)
        cols["desc_log_dram_bytes"][pos] = log_or_nan(w["dram_bytes_total"])
        cols["desc_work_per_thread"][pos] = log_or_nan(w["flops"] + w["int_ops"] + w["gld"] + w["gst"])
        cols["desc_coalesced"][pos] = 0.0 if "uncoalesced" in app.variant else 1.0
        cols["desc_shared"][pos] = 1.0 if bool(app.bsp["uses_shared"]) else 0.0
    if not len(X):
        names = ["desc_log_n2"]  # as before: no group, no column but the second size
    elif not any_described:
        names = names[:5]  # only undescribed kernels: the work columns were never made
    return pd.DataFrame({name: cols[name] for name in names}, index=X.index)
