"""Branch divergence criterion: DIVERGENCE (seed 000 Sec. IV-C)."""

from __future__ import annotations

from perfml.diagnosis.criteria._common import Criterion, ProfileContext, clip01

__all__ = ["divergence", "divergence_criterion"]


def divergence(
    thread_inst_executed: float, inst_executed: float, warp_size: int, f_divergence: float = 1.0
) -> float:
    """DIVERGENCE = #ExeInstructions / #PotExeInstructions x F_Divergence, Sec. IV-C.

    #ExeInstructions = instructions executed by the threads (``thread_inst_executed``);
    #PotExeInstructions = ``inst_executed x warp_size`` (every lane of every issued warp
    instruction). The ratio of the sums is the instruction-weighted average over warps.
    """
    if inst_executed <= 0:
        raise ValueError("inst_executed must be positive")
    return clip01(thread_inst_executed / (inst_executed * warp_size) * f_divergence)


def divergence_criterion(ctx: ProfileContext) -> Criterion:
    """DIVERGENCE of a profile row, weighted by F_Divergence of the raw ratio."""

    def compute() -> Criterion:
        if not ctx.supported("thread_inst_executed"):
            return ctx.unsupported("DIVERGENCE", "thread_inst_executed")
        inst = ctx.term("inst_executed")
        thr = ctx.term("thread_inst_executed")
        if inst <= 0:
            return Criterion("DIVERGENCE", None, "not_applicable", "no instruction executed")
        raw = thr / (inst * ctx.warp_size)
        weight = float(ctx.char.f_divergence(raw))
        return Criterion("DIVERGENCE", divergence(thr, inst, ctx.warp_size, weight))

    return ctx.guarded("DIVERGENCE", compute)
