"""The measurement layer: what runs kernels, what is run, and what was measured.

Every import in this package runs downward, in this order:

* :mod:`~perfml.measure.backend`: the seam (``run(launch) -> Measurement``), with
  :class:`Launch`, :class:`Measurement` and :class:`DeviceInfo`;
* :mod:`~perfml.measure.kernel_timing`: how a launch is timed (CUDA events, or the
  kernel's duration from CUPTI activity records);
* :mod:`~perfml.measure.store`: the append-only, versioned Parquet result store;
* :mod:`~perfml.measure.cupy_backend` (a real GPU: ``cupy.RawModule``,
  ``cupyx.profiler.benchmark``, NVML clocks and energy) and
  :mod:`~perfml.measure.replay` (serves a recorded result store, so everything above
  the seam is tested and usable without a GPU);
* :mod:`~perfml.measure.spec`: sweep specs and their plans;
* :mod:`~perfml.measure.runner`: runs plans on a backend, resumable.

:mod:`perfml.testing.backend_conformance` is the suite every backend passes. CuPy is
imported only when a :class:`CupyBackend` is created.
"""

from __future__ import annotations

from perfml.measure.backend import (
    Backend,
    DeviceInfo,
    KernelValidationError,
    Launch,
    Measurement,
    canonical_json,
)
from perfml.measure.cupy_backend import CupyBackend, cupy_device_available
from perfml.measure.kernel_timing import DEFAULT_TIMING, TIMINGS, check_timing
from perfml.measure.replay import ReplayBackend, ReplayMissError
from perfml.measure.runner import SweepFailedPointsError, SweepReport, run_plans, run_sweeps
from perfml.measure.spec import (
    DEFAULT_MAX_POINTS,
    FamilyRun,
    PlannedPoint,
    SweepPlan,
    SweepSpec,
    count_points,
    default_spec_paths,
    load_spec,
    load_specs,
    parse_spec,
    plan_spec,
    plan_specs,
)
from perfml.measure.store import SCHEMA_VERSION, ResultSet, make_row, point_id

__all__ = [
    "BACKENDS",
    "DEFAULT_MAX_POINTS",
    "SCHEMA_VERSION",
    "Backend",
    "CupyBackend",
    "DeviceInfo",
    "FamilyRun",
    "KernelValidationError",
    "Launch",
    "Measurement",
    "PlannedPoint",
    "ReplayBackend",
    "ReplayMissError",
    "ResultSet",
    "SweepFailedPointsError",
    "SweepPlan",
    "SweepReport",
    "SweepSpec",
    "canonical_json",
    "count_points",
    "cupy_device_available",
    "default_spec_paths",
    "load_spec",
    "load_specs",
    "make_backend",
    "make_row",
    "parse_spec",
    "plan_spec",
    "plan_specs",
    "point_id",
    "run_plans",
    "run_sweeps",
]

#: backend names accepted on the command line
BACKENDS = ("cupy", "replay")


def make_backend(name: str, *, replay: str | None = None, device: int = 0, catalog=None,
                 timing: str | None = None) -> Backend:
    """Create a backend by its command-line name.

    ``timing`` (:data:`perfml.measure.kernel_timing.TIMINGS`): how ``cupy`` times a launch
    (default CUDA events); a replay serves its recording's timing, and a ``timing`` other
    than the recording's is refused.

    Raises
    ------
    PerfmlError
        Unknown name, or ``replay`` without a recording directory.
    DeviceUnavailableError
        ``cupy`` on a machine without a usable GPU.
    """
    from perfml.errors import PerfmlError

    if name == "cupy":
        return CupyBackend(device=device, catalog=catalog, timing=timing or DEFAULT_TIMING)
    if name == "replay":
        if not replay:
            raise PerfmlError(
                "--backend replay needs --replay DIR: a result set recorded by `perfml sweep run`"
            )
        backend = ReplayBackend(replay)
        if timing is not None and check_timing(timing) != backend.timing:
            raise PerfmlError(f"--timing {timing}: the replayed set {replay} was timed with {backend.timing}, and a "
                              f"replay serves its recorded times; drop --timing, or pass --timing {backend.timing}")
        return backend
    raise PerfmlError(f"unknown backend {name!r}; expected one of {', '.join(BACKENDS)}")
