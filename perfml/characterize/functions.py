"""Characterization functions: sampling, quantization and interpolation.

Seed 000 (../shared/seeds/000_eb653a1647da19a0.txt, Section III-B, lines 102-111) derives
four *characterization functions* of a device from dynamic microbenchmarks, "through a
sampling, quantization, and interpolation process": F_Divergence, F_SHMEM, F_DRAMThr and
F_ARITHThr. They weight the optimization criteria of Section IV (DIVERGENCE line 144,
SHMEMEFFICIENCY line 182, MEMTHR line 194).

Convention (used by :mod:`perfml.diagnosis`)
--------------------------------------------
``f(x)`` takes the criterion's *intensity* ``x`` in [0, 1], in the paper's orientation
(line 117: 0 is the worst, 1 the best value of the criterion), and returns the expected
*relative performance* of the device at that intensity: the performance measured by the
microbenchmark at ``x`` divided by the best performance measured over the whole sweep.
So ``f`` lies in [0, 1], is normally largest at ``x = 1``, and the identity
characterization is 1 everywhere. Outside the sampled range ``f`` is flat (clamped to
the nearest sampled level).

Intensities per function:

* ``divergence``: share of a warp's threads that take the same path (32-thread groups
  give 1, one thread per path gives 1/32): #ExeInstructions / #PotExeInstructions.
* ``shmem``: shared-memory transactions per access, i.e. 1 / (bank-conflict ways), the
  ratio in SHMEMEFFICIENCY (no conflicts give 1).
* ``dram_thr``: the DRAM traffic in flight (warps per SM x share of SMs streaming) as a
  share of the largest swept (the "different amount of exchanged data" of line 107);
  performance is the achieved bytes/s.
* ``arith_thr``: arithmetic parallelism (warps per SM x share of SMs running FFMA chains)
  as a share of the largest swept; performance is the achieved instructions/s.

Both throughput functions take occupancy-like intensities, so the THROUGHPUT/OCCUPANCY
and MEMTHR criteria (lines 190-196) can pass their achieved occupancy directly.
"""

from __future__ import annotations

import math

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perfml.errors import InvalidValueError

__all__ = [
    "FUNCTION_NAMES",
    "CharacterizationFunction",
    "sample_quantize_interpolate",
]

#: the four functions of seed 000 Section III-B, by the name used in files and the API
FUNCTION_NAMES = ("divergence", "shmem", "dram_thr", "arith_thr")

#: default number of quantization levels on [0, 1]: 33 gives steps of 1/32, one per
#: thread of a warp and one per shared-memory bank
DEFAULT_LEVELS = 33


@dataclass(frozen=True)
class CharacterizationFunction:
    """A piecewise-linear function on [0, 1] given by its knots.

    Parameters
    ----------
    name : str
        One of :data:`FUNCTION_NAMES`.
    x, y : sequence of float
        Knots, ``x`` strictly increasing in [0, 1], ``y`` the relative performance.
    n_samples : int
        Measurements the knots were built from (0 for the identity).
    source : str
        Where the samples came from (family and parameter, or a paper table).
    tier : str
        ``"identity"`` (not known: 1 everywhere) or the tier of the samples
        (:data:`perfml.characterize.values.TIERS`); by default ``"measured"`` when
        built from samples, ``"identity"`` otherwise.
    """

    name: str
    x: tuple[float, ...] = (0.0, 1.0)
    y: tuple[float, ...] = (1.0, 1.0)
    n_samples: int = 0
    source: str = "identity"
    metadata: Mapping[str, Any] = field(default_factory=dict)
    tier: str = ""

    def __post_init__(self) -> None:
        from perfml.characterize.values import TIERS

        tier = self.tier or ("measured" if self.n_samples > 0 else "identity")
        if tier not in ("identity", *TIERS):
            raise InvalidValueError(
                f"{self.name}: unknown tier {self.tier!r}; expected 'identity' or one of {list(TIERS)}"
            )
        object.__setattr__(self, "tier", tier)
        x = tuple(float(v) for v in self.x)
        y = tuple(float(v) for v in self.y)
        if len(x) != len(y) or not x:
            raise InvalidValueError(f"{self.name}: x and y need the same, non-zero length")
        if any(b <= a for a, b in zip(x, x[1:])):
            raise InvalidValueError(f"{self.name}: knots must be strictly increasing, found {x}")
        if x[0] < 0 or x[-1] > 1:
            raise InvalidValueError(f"{self.name}: knots must lie in [0, 1], found {x}")
        # y is a performance relative to the best swept point (seed 000, Sec. IV: each
        # characterization function maps an intensity in [0, 1] to a share of the peak in
        # [0, 1]); NaN, a negative share or one above the peak would silently flip or
        # inflate a criterion, and a share of 0 (a point that never ran: the sampling drops
        # non-positive performances) gives an infinite potential speedup.
        if not all(math.isfinite(v) and 0.0 < v <= 1.0 + 1e-9 for v in y):
            raise InvalidValueError(
                f"{self.name}: relative performances must be finite and in (0, 1], found {y}; "
                "rebuild the file with `perfml characterize RESULTS --out FILE`"
            )
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "y", y)

    @classmethod
    def identity(cls, name: str) -> CharacterizationFunction:
        """1 everywhere: the device is assumed insensitive to this criterion."""
        return cls(name=name)

    @property
    def is_identity(self) -> bool:
        return all(v == 1.0 for v in self.y)

    def __call__(self, x: float | Sequence[float] | np.ndarray) -> float | np.ndarray:
        """Relative performance at intensity ``x`` (scalar in, float out)."""
        arr = np.asarray(x, dtype=float)
        if np.any(np.isnan(arr)):
            raise InvalidValueError(f"{self.name}: intensity is NaN")
        out = np.interp(np.clip(arr, 0.0, 1.0), self.x, self.y)
        return float(out) if out.ndim == 0 else out

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "x": list(self.x),
            "y": list(self.y),
            "n_samples": self.n_samples,
            "source": self.source,
            "tier": self.tier,
            "metadata": dict(self.metadata),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CharacterizationFunction:
        return cls(
            name=data["name"],
            x=tuple(data["x"]),
            y=tuple(data["y"]),
            n_samples=int(data.get("n_samples", 0)),
            source=str(data.get("source", "")),
            metadata=dict(data.get("metadata", {})),
            tier=str(data.get("tier", "")),
        )


def sample_quantize_interpolate(
    name: str,
    intensity: Sequence[float] | np.ndarray,
    performance: Sequence[float] | np.ndarray,
    *,
    levels: int = DEFAULT_LEVELS,
    source: str = "",
) -> CharacterizationFunction:
    """Build a characterization function from microbenchmark samples.

    1. *Sampling*: the pairs (intensity, performance) measured by a dynamic
       microbenchmark sweep; non-finite or non-positive performances are dropped.
    2. *Quantization*: intensities are snapped to ``levels`` uniform levels of [0, 1]
       and the performances at one level are summarized by their median (robust to a
       noisy repetition).
    3. *Interpolation*: the per-level medians, divided by the largest of them, are the
       knots of a piecewise-linear function, flat beyond the first and last level.

    Raises
    ------
    ValueError
        Fewer than two distinct levels were sampled (one level cannot show an effect).
    """
    if levels < 2:
        raise InvalidValueError(f"levels must be >= 2, found {levels}")
    x = np.asarray(intensity, dtype=float)
    y = np.asarray(performance, dtype=float)
    if x.shape != y.shape:
        raise InvalidValueError(f"{name}: {x.size} intensities but {y.size} performances")
    keep = np.isfinite(x) & np.isfinite(y) & (y > 0)
    x, y = np.clip(x[keep], 0.0, 1.0), y[keep]
    q = np.rint(x * (levels - 1)).astype(int)
    qs = np.unique(q)
    if qs.size < 2:
        raise InvalidValueError(
            f"{name}: samples cover {qs.size} quantization level(s); a characterization "
            "function needs the microbenchmark swept over at least two intensities"
        )
    med = np.array([np.median(y[q == level]) for level in qs])
    rel = med / med.max()
    return CharacterizationFunction(
        name=name,
        x=tuple(qs / (levels - 1)),
        y=tuple(rel),
        n_samples=int(keep.sum()),
        source=source,
        metadata={"levels": levels, "best": float(med.max())},
    )
