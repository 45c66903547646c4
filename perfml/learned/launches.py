"""Which rows ask for a block shape that no training run of their kernel has.

A launch the training boards never measured for a kernel is answered from the kernel's
nearest measured launch; :func:`perfml.learned.queries.unmeasured_launches` flags such
rows and :class:`perfml.learned.regressors.RuntimeRegressor` leaves its learned residual
out there. Both read the same test, here, below either of them (no import cycle).
"""

from __future__ import annotations

import weakref

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


#: id(runs) -> (weak reference to runs, its distinct shapes, their index, their apps)
_MEASURED: dict = {}


def _measured_shapes(runs: pd.DataFrame):
    """The distinct block shapes of ``runs`` (frame, MultiIndex, app set), built once per table.

    A fitted model's training runs do not change, and a one-row query checked them all
    again on every call, twice per ``perfml predict`` row (the residual rule and the flag);
    the single-query latency this cost is in ``experiments/results/bench_predictor.txt``
    (2c8c91b against 46e161c). The entry goes when the table does.
    """
    key = id(runs)
    hit = _MEASURED.get(key)
    if hit is not None and hit[0]() is runs:
        return hit[1:]
    seen = _block_shapes(runs).drop_duplicates()
    _MEASURED[key] = (weakref.ref(runs, lambda _, key=key: _MEASURED.pop(key, None)),
                      seen, pd.MultiIndex.from_frame(seen), set(seen["app_id"]))
    return _MEASURED[key][1:]


def unmeasured_rows(q: pd.DataFrame, runs: pd.DataFrame | None):
    """(positions of the rows whose block shape no run of their app has, the rows' shapes, the runs' shapes)."""
    if runs is None or not len(runs) or not {"app_id", "block_x", "block_y"} <= set(runs.columns) or not len(q):
        return np.zeros(0, dtype=int), None, None
    seen, seen_index, seen_apps = _measured_shapes(runs)
    mine = _block_shapes(q)
    judged = mine["app_id"].isin(seen_apps).to_numpy() & np.isfinite(mine["block_x"].to_numpy())
    if not judged.any():  # no row gives a block of a kernel the runs hold (a described kernel's default launch)
        return np.zeros(0, dtype=int), mine, seen
    hit = pd.MultiIndex.from_frame(mine).isin(seen_index)
    return np.flatnonzero(judged & ~hit), mine, seen


def unmeasured_launch_mask(q: pd.DataFrame, runs: pd.DataFrame | None) -> np.ndarray:
    """True for the rows whose block shape no training run of their app has (:func:`perfml.learned.queries.unmeasured_launches` says why)."""
    mask = np.zeros(len(q), dtype=bool)
    mask[unmeasured_rows(q, runs)[0]] = True
    return mask
