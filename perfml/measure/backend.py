"""The backend seam: ``Backend.run(launch) -> Measurement``.

A backend turns one fully specified kernel launch (:class:`Launch`) into one
:class:`Measurement`: repeated GPU times, ``clock64`` cycles where the kernel
reports them, clocks and energy where NVML gives them, and the compiled kernel's
attributes. Two implementations exist: :class:`~perfml.measure.CupyBackend`
(a real GPU) and :class:`~perfml.measure.ReplayBackend` (recorded results), and
:mod:`perfml.testing.backend_conformance` holds the checks every backend must pass.

The data model is small and immutable, in the manner of pyperf's ``Run``:
measurements are never edited, only recorded.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from perfml.errors import KernelValidationError

__all__ = [
    "Backend",
    "DeviceInfo",
    "KernelValidationError",
    "Launch",
    "Measurement",
    "canonical_json",
]


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: the stable text form of parameters."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=_json_default)


def _json_default(value: Any) -> Any:
    # numpy scalars and the like
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


def _dim3(value: int | tuple[int, ...] | list[int]) -> tuple[int, int, int]:
    if isinstance(value, int):
        dims: tuple[int, ...] = (value,)
    else:
        dims = tuple(int(v) for v in value)
    if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims):
        raise ValueError(f"expected 1 to 3 positive dimensions, found {value!r}")
    return dims + (1,) * (3 - len(dims))  # type: ignore[return-value]


def _frozen_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(sorted((value or {}).items())))


@dataclass(frozen=True)
class Launch:
    """One kernel launch to measure: a family, its compile-time parameters, a launch config.

    Parameters
    ----------
    family : str
        Kernel family name in the catalog (``perfml.kernels.catalog``).
    params : mapping
        Compile-time parameters (``-D`` constants) of the family.
    grid, block : int or tuple
        CUDA grid and block dimensions; stored as 3-tuples.
    shared_mem : int
        Dynamic shared memory per block, in bytes.
    repetitions : int
        Timed repetitions (warm-up excluded).
    warmup : int
        Untimed launches before timing.
    max_duration_s : float
        Upper bound on the time spent timing this launch (``cupyx.profiler.benchmark``'s
        ``max_duration``, and the same cap with kernel-duration timing); fewer repetitions
        may then be recorded.
    """

    family: str
    params: Mapping[str, Any] = field(default_factory=dict)
    grid: tuple[int, int, int] = (1, 1, 1)
    block: tuple[int, int, int] = (1, 1, 1)
    shared_mem: int = 0
    repetitions: int = 20
    warmup: int = 3
    max_duration_s: float = math.inf

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", _frozen_mapping(self.params))
        object.__setattr__(self, "grid", _dim3(self.grid))
        object.__setattr__(self, "block", _dim3(self.block))
        if self.repetitions < 1:
            raise ValueError(f"repetitions must be >= 1, found {self.repetitions}")
        if self.warmup < 0:
            raise ValueError(f"warmup must be >= 0, found {self.warmup}")

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Launch):
            return NotImplemented
        return self.key == other.key and (self.repetitions, self.warmup) == (
            other.repetitions,
            other.warmup,
        )

    @property
    def params_json(self) -> str:
        """Parameters as canonical JSON (the form stored in result rows)."""
        return canonical_json(dict(self.params))

    @property
    def key(self) -> str:
        """What identifies the launch: family, parameters and launch config.

        Repetitions and warm-up are deliberately left out: they change how well a point is
        measured, not which point it is, so a recording serves a launch whatever its count.
        """
        return canonical_json(
            {
                "family": self.family,
                "params": dict(self.params),
                "grid": list(self.grid),
                "block": list(self.block),
                "shared_mem": self.shared_mem,
            }
        )

    @property
    def digest(self) -> str:
        """A short stable hash of :attr:`key`."""
        return hashlib.sha256(self.key.encode()).hexdigest()[:16]

    @property
    def threads(self) -> int:
        """Total threads launched."""
        return math.prod(self.grid) * math.prod(self.block)

    @property
    def blocks(self) -> int:
        return math.prod(self.grid)

    @property
    def threads_per_block(self) -> int:
        return math.prod(self.block)


@dataclass(frozen=True)
class DeviceInfo:
    """What a result set was measured on.

    :attr:`fingerprint` is what must match for two measurements to share a result set:
    the board model (name, compute capability, SM count, memory size). Clocks, driver and
    library versions are recorded on every row but may differ between resumed runs; the
    fingerprint deliberately excludes the device UUID so a sweep resumed on another card of
    the same model continues the same result set.
    """

    name: str
    compute_capability: str
    sms: int
    total_memory_bytes: int = 0
    max_sm_clock_mhz: float | None = None
    max_mem_clock_mhz: float | None = None
    driver_version: str = ""
    cuda_runtime_version: str = ""
    cupy_version: str = ""
    uuid: str = ""
    backend: str = ""
    #: the L2 size the device reports (cudaDevAttrL2CacheSize); ``None`` in result sets
    #: recorded before it was kept. The registry's figure can be wrong for a board
    #: inferred from its sibling (the H200's was: 50 MB "as the H100", the device says 60 MiB)
    l2_cache_bytes: int | None = None

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "compute_capability": self.compute_capability,
            "sms": int(self.sms),
            "total_memory_bytes": int(self.total_memory_bytes),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "compute_capability": self.compute_capability,
            "sms": int(self.sms),
            "total_memory_bytes": int(self.total_memory_bytes),
            "max_sm_clock_mhz": self.max_sm_clock_mhz,
            "max_mem_clock_mhz": self.max_mem_clock_mhz,
            "driver_version": self.driver_version,
            "cuda_runtime_version": self.cuda_runtime_version,
            "cupy_version": self.cupy_version,
            "uuid": self.uuid,
            "backend": self.backend,
            "l2_cache_bytes": self.l2_cache_bytes,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DeviceInfo:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class Measurement:
    """The outcome of running one :class:`Launch`.

    ``times_s`` holds one GPU time per timed repetition, warm-up excluded, timed as the
    backend's ``timing`` says (:mod:`perfml.measure.kernel_timing`: CUDA events around the
    launch, or the kernel's own duration).
    ``cycles`` is the in-kernel ``clock64`` span (largest over blocks) when the kernel
    reports it, else ``None``. ``sm_clock_mhz`` and ``energy_j`` come from NVML where
    available; ``energy_j`` covers all timed repetitions together.
    """

    launch: Launch
    times_s: tuple[float, ...]
    cycles: int | None = None
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    energy_j: float | None = None
    kernel_attributes: Mapping[str, int] = field(default_factory=dict)
    validated: bool = False

    def __post_init__(self) -> None:
        times = tuple(float(t) for t in self.times_s)
        if not times:
            raise ValueError("a measurement needs at least one timed repetition")
        if any(not math.isfinite(t) or t <= 0 for t in times):
            raise ValueError(f"times must be finite and positive, found {times}")
        object.__setattr__(self, "times_s", times)
        object.__setattr__(self, "kernel_attributes", _frozen_mapping(self.kernel_attributes))

    @property
    def n(self) -> int:
        return len(self.times_s)

    @property
    def min_s(self) -> float:
        return min(self.times_s)

    @property
    def median_s(self) -> float:
        return statistics.median(self.times_s)

    @property
    def mean_s(self) -> float:
        return statistics.fmean(self.times_s)

    @property
    def std_s(self) -> float:
        """Sample standard deviation (0 for a single repetition)."""
        return statistics.stdev(self.times_s) if self.n > 1 else 0.0

    @property
    def cv(self) -> float:
        """Coefficient of variation: standard deviation over mean."""
        return self.std_s / self.mean_s

    @property
    def power_w(self) -> float | None:
        """Average board power over the timed repetitions, where energy is known."""
        if self.energy_j is None:
            return None
        return self.energy_j / sum(self.times_s)


class Backend(ABC):
    """Runs kernel launches on one device.

    Subclasses implement :meth:`device_info` and :meth:`run`. A backend may hold device
    resources; use it as a context manager or call :meth:`close`.
    """

    #: short name used on the command line and in result rows
    name: str = "base"

    @abstractmethod
    def device_info(self) -> DeviceInfo:
        """The device this backend measures on."""

    @abstractmethod
    def run(self, launch: Launch) -> Measurement:
        """Validate, then time one launch.

        Raises
        ------
        KernelValidationError
            The kernel's output is wrong; nothing is timed.
        """

    def close(self) -> None:
        """Release device resources (compiled modules, buffers, NVML)."""

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
