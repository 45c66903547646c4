"""The descriptor group: ``desc_*`` work counts of the kernel description (no measurement involved)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfml.apps import get_app
from perfml.closed_form._inputs import LAUNCH_COLUMNS
from perfml.learned.features._common import described, log_or_nan


def descriptor_features(X: pd.DataFrame, launch: pd.DataFrame) -> pd.DataFrame:
    """``desc_*`` features: input sizes, threads, blocks, block size, and (described apps) the work.

    Total flops, global/shared loads and stores, compulsory DRAM bytes, work per thread,
    whether the variant is coalesced / uses shared memory, all from the kernel description.
    """
    out = pd.DataFrame(index=X.index, dtype=float)
    n2 = X["input_size_2"].to_numpy(dtype=float) if "input_size_2" in X else np.full(len(X), np.nan)
    out["desc_log_n2"] = log_or_nan(np.nan_to_num(n2, nan=0.0))
    for app_id, part in X.groupby("app_id", sort=False):
        idx = part.index
        dims = {c: launch.loc[idx, c].to_numpy(dtype=float) for c in LAUNCH_COLUMNS}
        n = part["input_size"].to_numpy(dtype=float)
        threads = dims["block_x"] * dims["block_y"] * dims["grid_x"] * dims["grid_y"]
        out.loc[idx, "desc_log_n"] = np.log(n)
        out.loc[idx, "desc_log_threads"] = log_or_nan(threads)
        out.loc[idx, "desc_log_blocks"] = log_or_nan(dims["grid_x"] * dims["grid_y"])
        out.loc[idx, "desc_block_size"] = dims["block_x"] * dims["block_y"]
        if not described(app_id):
            continue  # no description: the work counts stay unknown (NaN)
        app = get_app(app_id)
        w = app.work_per_thread(n, **dims)
        t = w["threads"]
        out.loc[idx, "desc_log_flops"] = log_or_nan((w["flops"] + w["int_ops"]) * t)
        out.loc[idx, "desc_log_gld"] = log_or_nan(w["gld"] * t)
        out.loc[idx, "desc_log_gst"] = log_or_nan(w["gst"] * t)
        out.loc[idx, "desc_log_sld"] = log_or_nan(w["sld"] * t)
        out.loc[idx, "desc_log_sst"] = log_or_nan(w["sst"] * t)
        out.loc[idx, "desc_log_dram_bytes"] = log_or_nan(w["dram_bytes_total"])
        out.loc[idx, "desc_work_per_thread"] = log_or_nan(w["flops"] + w["int_ops"] + w["gld"] + w["gst"])
        out.loc[idx, "desc_coalesced"] = 0.0 if "uncoalesced" in app.variant else 1.0
        out.loc[idx, "desc_shared"] = 1.0 if bool(app.bsp["uses_shared"]) else 0.0
    return out
