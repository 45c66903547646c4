"""Work of the runtime rows a calibration reads: DRAM bytes and FLOPs per call.

Two corpora, two sources of work:

* rows of ``runtimes.csv`` (column ``app_id``): the app's kernel description, read only
  through :mod:`perfml.apps` (:func:`perfml.apps.get_app` and
  :meth:`~perfml.apps.AppDescription.work_per_thread`): ``dram_bytes_total`` is the
  compulsory DRAM traffic of the whole call (vectorAdd: ``3 * N * 4``), ``flops`` is per
  thread and is multiplied by the launch's threads (matMul: ``2 * N`` per thread). An
  app without a description has unknown work (NaN).
* rows of ``dlops_runtimes.csv`` (column ``op``): a *minimal* local operator model, only
  for the two operators a calibration needs, with the semantics the datasets README
  states for NeuSight's ``collect.py`` (section "Operator semantics", FP32 tensors):

  - ``add``: ``torch.add(x, y)`` on x, y of shape (B, H): "3 tensors of B*H floats
    moved", so ``bytes = 3 * B * H * 4`` and ``flops = B * H``;
  - ``bmm``: ``torch.bmm(x, y)``, x (B, M, N), y (B, N, K): "FLOPs = 2BMNK"; bytes =
    ``4 * (B*M*N + B*N*K + B*M*K)`` (each operand once).

  Every other operator has unknown work here. (A full operator work model is being built
  in ``perfml/operators/``; this one stays minimal on purpose.)
"""

from __future__ import annotations

import numpy as np

__all__ = ["FLOAT32_BYTES", "app_work", "op_work"]

#: bytes of one float32 element
FLOAT32_BYTES = 4


def _column(frame, name):
    import pandas as pd

    if name not in frame.columns:
        return None
    return pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float)


def app_work(frame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dram_bytes, flops, app family) per row of ``runtimes.csv`` rows; NaN where unknown.

    The launch columns (``block_x``, ``block_y``, ``grid_x``, ``grid_y``) are used where
    present; missing values fall back to the description's default launch.
    """
    from perfml.apps import get_app
    from perfml.errors import UnknownAppError

    n_rows = len(frame)
    dram = np.full(n_rows, np.nan)
    flops = np.full(n_rows, np.nan)
    family = np.full(n_rows, "", dtype=object)
    app_ids = frame["app_id"].astype(str).to_numpy()
    for app_id in np.unique(app_ids):
        try:
            app = get_app(app_id)
        except UnknownAppError:
            continue
        mask = app_ids == app_id
        part = frame[mask]
        n = _column(part, "input_size")
        launch = {k: _column(part, k) for k in ("block_x", "block_y", "grid_x", "grid_y")}
        work = app.work_per_thread(n, **launch)
        dram[mask] = work["dram_bytes_total"]
        flops[mask] = work["flops"] * work["threads"]
        family[mask] = app.app
    return dram, flops, family


def op_work(frame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dram_bytes, flops, op) per row of ``dlops_runtimes.csv`` rows; NaN where unknown."""
    n_rows = len(frame)
    dram = np.full(n_rows, np.nan)
    flops = np.full(n_rows, np.nan)
    ops = frame["op"].astype(str).to_numpy()
    dims = {k: _column(frame, k) for k in ("B", "H", "M", "N", "K")}
    if dims["B"] is not None and dims["H"] is not None:
        add = ops == "add"
        elements = dims["B"][add] * dims["H"][add]
        dram[add] = 3 * elements * FLOAT32_BYTES
        flops[add] = elements
    if all(dims[k] is not None for k in ("B", "M", "N", "K")):
        bmm = ops == "bmm"
        b, m, n, k = (dims[x][bmm] for x in ("B", "M", "N", "K"))
        flops[bmm] = 2 * b * m * n * k
        dram[bmm] = FLOAT32_BYTES * (b * m * n + b * n * k + b * m * k)
    bad = ~(np.isfinite(dram) & (dram > 0))
    dram[bad] = np.nan
    flops[bad] = np.nan
    return dram, flops, ops.astype(object)
