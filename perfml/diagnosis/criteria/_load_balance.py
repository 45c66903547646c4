"""Load-balancing criteria: LOADBALANC_WARP (seed 000 Sec. IV-D) and LOADBALANC_SM (IV-E)."""

from __future__ import annotations

from collections.abc import Sequence

from perfml.diagnosis.criteria._common import Criterion, ProfileContext, clip01

__all__ = [
    "loadbalanc_sm",
    "loadbalanc_sm_criterion",
    "loadbalanc_sm_from_totals",
    "loadbalanc_warp",
    "loadbalanc_warp_criterion",
]


def loadbalanc_warp(
    active_warps: float, active_cycles: float, warps_per_block: int, blocks_per_sm: int
) -> float:
    """LOADBALANC_WARP, Sec. IV-D.

    ``(TotActiveWarps / TotActiveCycles) / ((BLOCKSIZE/32) x #Blocks_per_SM)``: the
    average number of warps active per active SM cycle over the theoretical resident
    warps of the launch.
    """
    if active_cycles <= 0:
        raise ValueError("active_cycles must be positive")
    return clip01((active_warps / active_cycles) / (warps_per_block * blocks_per_sm))


def loadbalanc_sm(active_cycles_per_sm: Sequence[float]) -> float:
    """LOADBALANC_SM = 1 - (max_SM TotActiveCycles - AvgCycles) / max_SM TotActiveCycles, Sec. IV-E."""
    if len(active_cycles_per_sm) == 0 or max(active_cycles_per_sm) <= 0:
        raise ValueError("need per-SM active cycles, at least one positive")
    peak = max(active_cycles_per_sm)
    avg = sum(active_cycles_per_sm) / len(active_cycles_per_sm)
    return clip01(1.0 - (peak - avg) / peak)


def loadbalanc_sm_from_totals(active_cycles_total: float, elapsed_cycles_total: float) -> float:
    """LOADBALANC_SM of Sec. IV-E when only SM-summed events exist (an approximation).

    Sec. IV-E simplifies to ``AvgCycles / max_SM(TotActiveCycles)``. Profiles sum
    ``active_cycles`` and ``elapsed_cycles_sm`` over SMs, so ``AvgCycles =
    active_cycles / |SM|`` is exact, while ``max_SM(TotActiveCycles)`` is replaced by its
    upper bound, the elapsed cycles of one SM ``elapsed_cycles_sm / |SM|`` (the busiest SM
    is active at most for the whole kernel). The result, ``active_cycles /
    elapsed_cycles_sm`` (nvprof's sm_efficiency), is a lower bound of LOADBALANC_SM.
    """
    if elapsed_cycles_total <= 0:
        raise ValueError("elapsed cycles must be positive")
    return clip01(active_cycles_total / elapsed_cycles_total)


def loadbalanc_warp_criterion(ctx: ProfileContext) -> Criterion:
    """LOADBALANC_WARP of a profile row against the launch's theoretical residency."""
    res = ctx.residency
    return ctx.guarded(
        "LOADBALANC_WARP",
        lambda: Criterion(
            "LOADBALANC_WARP",
            loadbalanc_warp(
                ctx.term("active_warps"), ctx.term("active_cycles"), res.warps_per_block, res.blocks_per_sm
            ),
            note=f"theoretical {res.warps_per_sm} warps/SM ({res.blocks_per_sm} blocks, "
            f"limited by {res.limited_by})",
        ),
    )


def loadbalanc_sm_criterion(ctx: ProfileContext) -> Criterion:
    """LOADBALANC_SM of a profile row (lower bound: per-SM cycles are not in the profiles)."""
    return ctx.guarded(
        "LOADBALANC_SM",
        lambda: Criterion(
            "LOADBALANC_SM",
            loadbalanc_sm_from_totals(ctx.term("active_cycles"), ctx.term("elapsed_cycles_sm")),
            note="lower bound: events are summed over SMs, so max_SM(TotActiveCycles) is replaced "
            "by the elapsed cycles of one SM",
            approximate=True,
        ),
    )
