"""Work of the runtime rows a calibration reads: DRAM bytes and FLOPs per call.

Two corpora, two sources of work:

* rows of ``runtimes.csv`` (column ``app_id``): the app's kernel description, read only
  through :mod:`perfml.apps` (:func:`perfml.apps.get_app` and
  :meth:`~perfml.apps.AppDescription.work_per_thread`): ``dram_bytes_total`` is the
  compulsory DRAM traffic of the whole call (vectorAdd: ``3 * N * 4``), ``flops`` is per
  thread and is multiplied by the launch's threads (matMul: ``2 * N`` per thread). An
  app without a description has unknown work (NaN).
* rows of ``dlops_runtimes.csv`` (column ``op``): the operator work model of
  :mod:`perfml.operators` (formulas and sources there), for the two operators a
  calibration reads: ``add`` (``bytes = 3 * B * H * 4``) and ``bmm`` (``flops = 2BMNK``).
  Every other operator has unknown work here.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FLOAT32_BYTES", "app_work", "op_work"]

#: bytes of one float32 element
FLOAT32_BYTES = 4
#: the operators a calibration reads: element-wise ``add`` (bandwidth) and ``bmm`` (FP32)
CALIBRATION_OPS = ("add", "bmm")


def _column(frame, name):
    import pandas as pd

    if name not in frame.columns:
        return None
    return pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float)


def _described_apps(frame):
    """``(description, row mask, input sizes, launch columns)`` per described app of the rows
    (rows of an app without a description are left out)."""
    from perfml.apps import get_app
    from perfml.errors import UnknownAppError

    app_ids = frame["app_id"].astype(str).to_numpy()
    for app_id in np.unique(app_ids):
        try:
            app = get_app(app_id)
        except UnknownAppError:
            continue
        mask = app_ids == app_id
        part = frame[mask]
        launch = {k: _column(part, k) for k in ("block_x", "block_y", "grid_x", "grid_y")}
        yield app, mask, _column(part, "input_size"), launch


def app_work(frame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dram_bytes, flops, app family) per row of ``runtimes.csv`` rows; NaN where unknown.

    The launch columns (``block_x``, ``block_y``, ``grid_x``, ``grid_y``) are used where
    present; missing values fall back to the description's default launch.
    """
    n_rows = len(frame)
    dram = np.full(n_rows, np.nan)
    flops = np.full(n_rows, np.nan)
    family = np.full(n_rows, "", dtype=object)
    for app, mask, n, launch in _described_apps(frame):
        work = app.work_per_thread(n, **launch)
        dram[mask] = work["dram_bytes_total"]
        flops[mask] = work["flops"] * work["threads"]
        family[mask] = app.app
    return dram, flops, family


def op_work(frame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dram_bytes, flops, op) per row of ``dlops_runtimes.csv`` rows; NaN where unknown.

    The work is :func:`perfml.operators.operator_work`'s; a calibration reads only the
    ``add`` and ``bmm`` rows, so every other operator, and a row whose dimensions the work
    model refuses, has unknown work (NaN) here.
    """
    from perfml.errors import OperatorWorkError
    from perfml.operators import operator_work

    n_rows = len(frame)
    dram = np.full(n_rows, np.nan)
    flops = np.full(n_rows, np.nan)
    ops = frame["op"].astype(str).to_numpy()
    wanted = np.flatnonzero(np.isin(ops, CALIBRATION_OPS))
    try:  # one vectorized call; row by row only when some row is refused
        blocks = [(wanted, operator_work(frame.iloc[wanted]))]
    except OperatorWorkError:
        blocks = []
        for position in wanted:
            try:
                blocks.append(([position], operator_work(frame.iloc[[position]])))
            except OperatorWorkError:
                continue  # missing or non-positive dimensions: unknown work
    for positions, work in blocks:
        dram[positions] = work["bytes"].to_numpy(dtype=float)
        flops[positions] = work["flops"].to_numpy(dtype=float)
    return dram, flops, ops.astype(object)


def app_footprint(frame) -> np.ndarray:
    """Bytes of device memory the buffers of each ``runtimes.csv`` row hold (the sidecar's
    ``[[args]]``: :meth:`perfml.apps.AppDescription.footprint_bytes`); NaN where unknown."""
    footprint = np.full(len(frame), np.nan)
    for app, mask, n, launch in _described_apps(frame):
        with np.errstate(all="ignore"):
            footprint[mask] = app.footprint_bytes(n, **launch)
    return footprint
