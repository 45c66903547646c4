"""Runtime rows from a sweep result set: microbenchmark kernels as training rows (issue 11 §2).

A recorded sweep (:class:`~perfml.measure.store.ResultSet`, written by ``perfml sweep
run``) is turned into rows with the columns of ``runtimes.csv`` that the learned
predictor reads, so the microbenchmark kernels of a board enter
:class:`~perfml.learned.regressors.RuntimeRegressor` training like any other kernel:

``source``
    ``"sweep"`` for a set timed with CUDA events, ``"sweep-kernel-duration"`` for one timed
    by the kernels' durations (:mod:`perfml.measure.kernel_timing`); ``"-synthetic"`` added
    for a set created as synthetic (never a measurement).
``board``
    the registry name of the set's device (:func:`perfml.boards.resolve_board_name` of the
    manifest's device name), or the ``board`` given.
``app_id``, ``app``, ``kernel``
    the kernel (``"<family>.<variant>"``), its family.
``input_size``
    threads of the launch (the size every sidecar's work is expressed per: ``[work]`` is
    per thread); ``input_size_2`` the shared-memory bytes per block.
``grid_*``, ``block_*``
    the launch.
``time_ms_mean``, ``time_ms_median``, ``time_ms_min``, ``time_ms_std``, ``measured_ms``
    the repetition statistics in ms (``measured_ms`` = mean, as
    :func:`perfml.learned.training.training_runtimes`).
``work_flops``, ``work_dram_bytes``
    the work per launch from the kernel's sidecar: ``flops`` as recorded, DRAM bytes as
    the sidecar's per-thread ``dram_bytes`` x threads (else the recorded ``bytes``). The
    closed-form features use them as the kernel's work
    (:func:`perfml.learned.features.closed_form.closed_form_logs`).
``synthetic``, ``noisy``, ``validated``
    carried from the set.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd

__all__ = ["SWEEP_DURATION_SOURCE", "SWEEP_SOURCE", "application_runtime_rows", "sweep_source", "sweep_runtime_rows"]

#: ``source`` of rows from a measured sweep timed with CUDA events (a synthetic set adds ``-synthetic``)
SWEEP_SOURCE = "sweep"
#: ``source`` of rows from a sweep timed by kernel durations (``perfml sweep run --timing kernel-duration``)
SWEEP_DURATION_SOURCE = "sweep-kernel-duration"


def sweep_source(result_set) -> str:
    """The ``source`` of a result set's rows: how its launches were timed, and whether it is synthetic."""
    base = SWEEP_DURATION_SOURCE if result_set.timing == "kernel-duration" else SWEEP_SOURCE
    return base + ("-synthetic" if result_set.synthetic else "")


def _dram_bytes(row) -> float:
    """DRAM bytes per launch: the sidecar's per-thread ``dram_bytes`` x threads, else ``bytes``."""
    try:
        work = json.loads(row["work_json"] or "{}")
    except (TypeError, ValueError):
        work = {}
    per_thread = work.get("dram_bytes")
    if isinstance(per_thread, (int, float)) and not isinstance(per_thread, bool):
        return float(per_thread) * float(row["threads"])
    value = row["bytes"]
    return float(value) if value is not None and np.isfinite(value) else np.nan


def sweep_runtime_rows(results, *, board: str | None = None, registry=None) -> pd.DataFrame:
    """Runtime rows (see the module docstring) of every measured point of a sweep result set.

    Parameters
    ----------
    results : path-like or ResultSet
        A result set directory written by ``perfml sweep run --out``.
    board : str, optional
        The board it was measured on; default: the set's device name, resolved in ``registry``.
    registry : perfml.boards.Registry, optional

    Raises
    ------
    ResultSchemaError
        Not a result set, or one of an unknown schema version.
    UnknownBoardError
        The device (or ``board``) is not in the registry.
    """
    from perfml.boards import resolve_board_name
    from perfml.measure.store import ResultSet

    rs = results if isinstance(results, ResultSet) else ResultSet.open(os.fspath(results))
    name = resolve_board_name(board or rs.device.name, registry=registry)
    raw = rs.read()
    if raw.empty:
        return pd.DataFrame(columns=["source", "board", "app_id", "input_size", "measured_ms"])
    out = pd.DataFrame({
        "source": sweep_source(rs),
        "board": name,
        "app": raw["family"].astype(str),
        "app_id": raw["kernel"].astype(str),
        "kernel": raw["kernel"].astype(str),
        "gpu_config": "default",
        "input_size": raw["threads"].astype(float),
        "input_size_2": raw["shared_mem_bytes"].astype(float),
        **{c: raw[c].astype(float) for c in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")},
        "time_ms_mean": raw["time_mean_s"].astype(float) * 1e3,
        "time_ms_median": raw["time_median_s"].astype(float) * 1e3,
        "time_ms_min": raw["time_min_s"].astype(float) * 1e3,
        "time_ms_std": raw["time_std_s"].astype(float) * 1e3,
        "work_flops": pd.to_numeric(raw["flops"], errors="coerce").astype(float),
        "work_dram_bytes": [_dram_bytes(r) for r in raw.to_dict("records")],
        "synthetic": raw["synthetic"].astype(bool) | bool(rs.synthetic),
        "noisy": raw["noisy"].astype(bool),
        "validated": raw["validated"].astype(bool),
    })
    out["measured_ms"] = out["time_ms_mean"]
    return out.reset_index(drop=True)


def application_runtime_rows(results, *, board: str | None = None, registry=None) -> pd.DataFrame:
    """The application kernels of a sweep result set as rows of ``runtimes.csv`` with ``time_ms``.

    Not :func:`sweep_runtime_rows`: that names a microbenchmark row ``family.variant`` with
    its thread count as ``input_size`` (its sidecar's work is per thread), while an
    application's rows in ``runtimes.csv`` (and in the queries and calibration files perfml
    reads) give the problem size ``N`` under the app's own name (``app_id`` = the family,
    as the nine applications' sidecars name them). ``time_ms`` is the median of the timed
    repetitions, ``source`` says how they were timed (:func:`sweep_source`: ``"sweep"``
    between CUDA events, ``"sweep-kernel-duration"`` kernel durations), ``spec`` the spec that measured the
    point (a launch two specs measured gives two rows). This is what ``perfml predict
    --calibration RESULTS`` and ``perfml characterize --from-runtimes RESULTS`` read when
    given a result-set folder: the ``applications`` or ``calibration`` spec measured on the
    target (vectorAdd over sizes: the target's streaming curve).

    Raises
    ------
    ResultSchemaError
        Not a result set; a synthetic one (never a measurement); an application row
        without the size parameter ``N``.
    UnknownBoardError
        The device (or ``board``) is not in the registry.
    """
    from perfml.boards import resolve_board_name
    from perfml.errors import ResultSchemaError
    from perfml.measure.store import ResultSet

    rs = results if isinstance(results, ResultSet) else ResultSet.open(os.fspath(results))
    if rs.synthetic:
        raise ResultSchemaError(f"{rs.path}: a synthetic result set holds no measurement; calibrate from measured runs")
    name = resolve_board_name(board or rs.device.name, registry=registry)
    raw = rs.read()
    apps = raw[raw["kind"].astype(str) == "application"] if len(raw) else raw
    launch = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")
    if apps.empty:
        return pd.DataFrame(columns=["source", "board", "app_id", "input_size", *launch, "spec", "point_id", "time_ms"])
    params = apps["params_json"].map(json.loads)
    sizeless = [k for k, p in zip(apps["kernel"], params) if "N" not in p]
    if sizeless:
        raise ResultSchemaError(f"{rs.path}: application kernel {sizeless[0]} has no size parameter N; "
                                "only application kernels sized by N become runtime rows")
    out = pd.DataFrame({
        "source": sweep_source(rs),
        "board": name,
        "app_id": apps["family"].astype(str).to_numpy(),
        "input_size": params.map(lambda p: int(p["N"])).to_numpy(),
        **{c: apps[c].astype(int).to_numpy() for c in launch},
        "spec": apps["spec"].astype(str).to_numpy(),
        "point_id": apps["point_id"].to_numpy(),
        "time_ms": (apps["time_median_s"].astype(float) * 1e3).to_numpy(),
    })
    return out.reset_index(drop=True)
