"""Backends: the seam between perfml and the thing that runs kernels.

One protocol, :class:`Backend` (``run(launch) -> Measurement``), with two
implementations:

* :class:`CupyBackend`: compiles with ``cupy.RawModule``, validates the output, times
  with ``cupyx.profiler.benchmark``, reads clocks and energy through NVML;
* :class:`ReplayBackend`: serves a recorded result set, so everything above the seam is
  tested and usable without a GPU.

``tests/backend_conformance.py`` is the suite every backend passes. CuPy is imported
only when a :class:`CupyBackend` is created.
"""

from __future__ import annotations

from perfml.backends._base import (
    Backend,
    DeviceInfo,
    KernelValidationError,
    Launch,
    Measurement,
    canonical_json,
)
from perfml.backends._cupy import CupyBackend, cupy_device_available
from perfml.backends._replay import ReplayBackend, ReplayMissError

__all__ = [
    "BACKENDS",
    "Backend",
    "CupyBackend",
    "DeviceInfo",
    "KernelValidationError",
    "Launch",
    "Measurement",
    "ReplayBackend",
    "ReplayMissError",
    "canonical_json",
    "cupy_device_available",
    "make_backend",
]

#: backend names accepted on the command line
BACKENDS = ("cupy", "replay")


def make_backend(name: str, *, replay: str | None = None, device: int = 0, catalog=None) -> Backend:
    """Create a backend by its command-line name.

    Raises
    ------
    PerfmlError
        Unknown name, or ``replay`` without a recording directory.
    DeviceUnavailableError
        ``cupy`` on a machine without a usable GPU.
    """
    from perfml.errors import PerfmlError

    if name == "cupy":
        return CupyBackend(device=device, catalog=catalog)
    if name == "replay":
        if not replay:
            raise PerfmlError(
                "--backend replay needs --replay DIR: a result set recorded by `perfml sweep run`"
            )
        return ReplayBackend(replay)
    raise PerfmlError(f"unknown backend {name!r}; expected one of {', '.join(BACKENDS)}")
