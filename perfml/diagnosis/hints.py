"""Plain-language hints, ranked by potential gain, the way seed 000 Sec. VI reads them.

Sec. VI turns low criteria with high potential contribution into advice, e.g. "the
memory accesses do not match the granularity of the respective caches" with a
potential contribution of about 2.5x (case study 2). A hint is issued for every
criterion whose potential speedup exceeds ``min_gain`` (default 1.05, i.e. 5 %); hints
are sorted by potential speedup, largest first, ties in the order of Section IV.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from perfml.diagnosis.criteria import CRITERIA, CriteriaReport
from perfml.diagnosis.speedup import Speedup

__all__ = ["DEFAULT_MIN_GAIN", "Hint", "rank_hints"]

DEFAULT_MIN_GAIN = 1.05

_TEMPLATES: dict[str, str] = {
    "HOSTSYNC": "time is lost between kernel calls (host synchronization {value:.2f}); merge kernels "
    "or use inter-block synchronization",
    "DEVICESYNC": "warps stall at thread-block barriers (device synchronization {value:.2f}); reduce "
    "the number of __syncthreads() points",
    "DIVERGENCE": "threads of a warp follow different paths (divergence {value:.2f}: that share of "
    "the lanes does useful work); restructure branches or give each thread more elements",
    "LOADBALANC_WARP": "SMs hold fewer active warps than the launch allows (warp load balancing "
    "{value:.2f}); balance the work of the warps inside a block",
    "LOADBALANC_SM": "SMs are idle for part of the kernel (SM load balancing {value:.2f}); use more or "
    "evenly sized blocks",
    "L1_GRANULARITY": "global memory accesses do not match the L1 granularity (128-byte lines, "
    "{value:.0%} of the moved bytes are used); coalesce the accesses of a warp",
    "L2_GRANULARITY": "memory accesses do not match the L2 granularity (32-byte sectors, "
    "{value:.0%} of the moved bytes are used); coalesce or realign the accesses",
    "SHMEMEFFICIENCY": "shared-memory bank conflicts replay accesses (shared memory efficiency "
    "{value:.2f}); pad or re-index the shared arrays",
    "THROUGHPUT_OCCUPANCY": "low occupancy keeps the memory throughput below peak "
    "(throughput/occupancy {value:.2f}); re-configure the launch to raise occupancy",
}


@dataclass(frozen=True)
class Hint:
    """One piece of advice: the criterion, its value, its potential speedup and the text."""

    criterion: str
    value: float
    speedup: float
    text: str


def rank_hints(
    report: CriteriaReport,
    speedups: Mapping[str, Speedup],
    *,
    min_gain: float = DEFAULT_MIN_GAIN,
) -> list[Hint]:
    """Hints for the criteria whose potential speedup exceeds ``min_gain``, best gain first."""
    order = {name: i for i, name in enumerate(CRITERIA)}
    hints: list[Hint] = []
    for name, sp in speedups.items():
        crit = report.criteria.get(name)
        if crit is None or not crit.ok or crit.value is None or sp.value is None:
            continue
        if sp.value <= min_gain or name not in _TEMPLATES:
            continue
        text = f"{_TEMPLATES[name].format(value=crit.value)}: potential {_fmt(sp.value)}"
        if crit.approximate:
            text += " (approximate)"
        hints.append(Hint(name, crit.value, sp.value, text))
    hints.sort(key=lambda h: (-h.speedup, order.get(h.criterion, len(order))))
    return hints


def _fmt(x: float) -> str:
    return "unbounded" if x == float("inf") else f"{x:.1f}x" if x >= 1.95 else f"{x:.2f}x"
