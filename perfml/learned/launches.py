"""Which rows ask for a block shape that no training run of their kernel has.

A launch the training boards never measured for a kernel is answered from the kernel's
nearest measured launch; :func:`perfml.learned.queries.unmeasured_launches` flags such
rows and :class:`perfml.learned.regressors.RuntimeRegressor` leaves its learned residual
out there. Both read the same test, here, below either of them (no import cycle).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["unmeasured_launch_mask", "unmeasured_rows"]


def _block_shapes(frame) -> pd.DataFrame:
    """app_id, block_x, block_y per row (an empty block_y is 1; no block_x column: NaN)."""
    def number(c):
        return pd.to_numeric(frame[c], errors="coerce") if c in frame else pd.Series(np.nan, index=frame.index)

    return pd.DataFrame({"app_id": frame["app_id"].astype(str).to_numpy(),
                         "block_x": number("block_x").to_numpy(dtype=float),
                         "block_y": number("block_y").fillna(1.0).to_numpy(dtype=float)})


def unmeasured_rows(q: pd.DataFrame, runs: pd.DataFrame | None):
    """(positions of the rows whose block shape no run of their app has, the rows' shapes, the runs' shapes)."""
    if runs is None or not len(runs) or not {"app_id", "block_x", "block_y"} <= set(runs.columns) or not len(q):
        return np.zeros(0, dtype=int), None, None
    seen = _block_shapes(runs).drop_duplicates()
    mine = _block_shapes(q)
    known_app = mine["app_id"].isin(set(seen["app_id"])).to_numpy()
    hit = pd.MultiIndex.from_frame(mine).isin(pd.MultiIndex.from_frame(seen))
    return np.flatnonzero(known_app & np.isfinite(mine["block_x"].to_numpy()) & ~hit), mine, seen


def unmeasured_launch_mask(q: pd.DataFrame, runs: pd.DataFrame | None) -> np.ndarray:
    """True for the rows whose block shape no training run of their app has (:func:`perfml.learned.queries.unmeasured_launches` says why)."""
    mask = np.zeros(len(q), dtype=bool)
    mask[unmeasured_rows(q, runs)[0]] = True
    return mask
