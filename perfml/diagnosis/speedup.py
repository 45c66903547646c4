"""Potential speedups of the criteria and the overall PotentialSpeedup (seed 000, Sec. V).

Rules, one per group of criteria of Sec. V:

* ``1 / criterion`` for HOSTSYNC, DIVERGENCE, LOADBALANC_WARP, LOADBALANC_SM and
  THROUGHPUT/OCCUPANCY (Sec. V, first display).
* DEVICESYNC: the paper gives the share of kernel time lost in synchronization stalls,
  ``f = (1 - (TotActiveWarps / |Warps|) / CLK_cycles) x StallSync`` (the bracket is "the
  overall percentage of inactivity of the GPU warps"). Removing a share ``f`` of the time
  gives the speedup ``1 / (1 - f)`` (Amdahl), which is what we report; the printed
  expression itself is a fraction <= 1, not a speedup.
* L1/L2 granularity and shared-memory efficiency: the paper writes
  ``1/criterion x share`` with share = L1%, L2%, ShMem% ("the percentage of time the
  application uses" that memory). Read literally this is < 1 for small shares; we use
  the Amdahl form it abbreviates: the share of time spent in that memory shrinks by the
  criterion, ``1 / ((1 - share) + share x criterion)``. Shares are nvprof's utilization
  levels (0-10) / 10, the profiler's "percentage of use of each functional component".
* Overall: ``1 / MEMTHR`` if memory-bound, ``1 / ARITHTHR`` if compute-bound (Sec. V,
  last display). The kernel is called memory-bound when MEMTHR >= ARITHTHR, i.e. when
  the DRAM is the more utilized of the two resources.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from perfml.diagnosis.criteria import CriteriaReport

__all__ = [
    "OverallSpeedup",
    "Speedup",
    "devicesync_speedup",
    "inverse_speedup",
    "overall_speedup",
    "potential_speedups",
    "share_speedup",
]

_INVERSE = ("HOSTSYNC", "DIVERGENCE", "LOADBALANC_WARP", "LOADBALANC_SM", "THROUGHPUT_OCCUPANCY")
_SHARED = {"L1_GRANULARITY": "L1", "L2_GRANULARITY": "L2", "SHMEMEFFICIENCY": "ShMem"}


@dataclass(frozen=True)
class Speedup:
    """Potential speedup of improving one criterion to 1 (``None``: not computable)."""

    criterion: str
    value: float | None
    rule: str
    note: str = ""


@dataclass(frozen=True)
class OverallSpeedup:
    """PotentialSpeedup of Sec. V and whether the kernel is memory- or compute-bound."""

    value: float | None
    bound: str  # "memory" | "compute" | "unknown"
    memthr: float | None
    ariththr: float | None


def inverse_speedup(criterion: float) -> float:
    """``1 / criterion`` (Sec. V); ``inf`` for a criterion of 0."""
    if criterion < 0 or criterion > 1:
        raise ValueError(f"criterion must be in [0, 1], got {criterion}")
    return math.inf if criterion == 0 else 1.0 / criterion


def devicesync_speedup(stall_sync: float, warp_activity: float) -> float:
    """DEVICESYNC^SP: ``1 / (1 - f)`` with ``f = (1 - warp_activity) x StallSync`` (Sec. V).

    ``warp_activity = (TotActiveWarps / |Warps|) / CLK_cycles`` is the average fraction of
    the device's warp slots that hold an active warp.
    """
    f = (1.0 - warp_activity) * stall_sync
    if not 0.0 <= f < 1.0:
        raise ValueError(f"stalled share must be in [0, 1), got {f}")
    return 1.0 / (1.0 - f)


def share_speedup(criterion: float, share: float) -> float:
    """``1 / ((1 - share) + share x criterion)``: Amdahl reading of ``1/criterion x share`` (Sec. V)."""
    if not (0.0 <= share <= 1.0 and 0.0 <= criterion <= 1.0):
        raise ValueError("criterion and share must be in [0, 1]")
    denom = (1.0 - share) + share * criterion
    return math.inf if denom == 0 else 1.0 / denom


def overall_speedup(memthr: float | None, ariththr: float | None) -> OverallSpeedup:
    """PotentialSpeedup = 1/MEMTHR (memory-bound) or 1/ARITHTHR (compute-bound), Sec. V."""
    if memthr is None or ariththr is None:
        return OverallSpeedup(None, "unknown", memthr, ariththr)
    if memthr >= ariththr:
        return OverallSpeedup(inverse_speedup(memthr), "memory", memthr, ariththr)
    return OverallSpeedup(inverse_speedup(ariththr), "compute", memthr, ariththr)


def potential_speedups(report: CriteriaReport) -> tuple[dict[str, Speedup], OverallSpeedup]:
    """Potential speedup of every criterion of ``report`` and the overall one."""
    crit = report.criteria
    out: dict[str, Speedup] = {}
    for name in _INVERSE:
        c = crit[name]
        if c.ok and c.value is not None:
            out[name] = Speedup(name, inverse_speedup(c.value), "1/criterion (Sec. V)")
        else:
            out[name] = Speedup(
                name, 1.0 if c.status == "not_applicable" else None, "1/criterion (Sec. V)", c.note
            )

    c = crit["DEVICESYNC"]
    if c.ok and report.stall_sync is not None and report.warp_activity is not None:
        out["DEVICESYNC"] = Speedup(
            "DEVICESYNC",
            devicesync_speedup(report.stall_sync, report.warp_activity),
            "1/(1 - (1 - warp activity) x StallSync) (Sec. V)",
            f"StallSync {report.stall_sync:.0%}, warp slots active {report.warp_activity:.0%}",
        )
    else:
        out["DEVICESYNC"] = Speedup("DEVICESYNC", None, "Sec. V", c.note)

    for name, share_key in _SHARED.items():
        c = crit[name]
        share = report.shares.get(share_key)
        rule = f"1/((1 - {share_key}%) + {share_key}% x criterion) (Sec. V)"
        if c.status == "not_applicable":
            out[name] = Speedup(name, 1.0, rule, c.note)
        elif not c.ok or c.value is None:
            out[name] = Speedup(name, None, rule, c.note)
        elif share is None:
            out[name] = Speedup(name, None, rule, f"{share_key}% not in the profile")
        else:
            out[name] = Speedup(name, share_speedup(c.value, share), rule, f"{share_key}% = {share:.0%}")

    overall = overall_speedup(crit["MEMTHR"].value, crit["ARITHTHR"].value)
    return out, overall

