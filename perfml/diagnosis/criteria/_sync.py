"""Synchronization criteria: HOSTSYNC (seed 000 Sec. IV-A) and DEVICESYNC (Sec. IV-B)."""

from __future__ import annotations

from collections.abc import Sequence

from perfml.diagnosis.criteria._common import Criterion, ProfileContext, clip01

__all__ = ["devicesync", "devicesync_criterion", "hostsync", "hostsync_criterion"]


def hostsync(kernel_starts: Sequence[float], kernel_times: Sequence[float]) -> float:
    """HOSTSYNC, seed 000 Eq. in Sec. IV-A.

    ``sum_i KernelExeTime_i / (KernelStart_N + KernelExeTime_N - KernelStart_1)`` with
    kernels ordered by start time. Needs a host-side timeline, which no profile table
    holds; provided for callers that have one (e.g. an nvprof ``--print-gpu-trace``).
    """
    if len(kernel_starts) == 0 or len(kernel_starts) != len(kernel_times):
        raise ValueError("need one start time per kernel execution time, at least one kernel")
    order = sorted(range(len(kernel_starts)), key=lambda i: kernel_starts[i])
    first, last = order[0], order[-1]
    span = kernel_starts[last] + kernel_times[last] - kernel_starts[first]
    return clip01(sum(kernel_times) / span)


def devicesync(stall_sync: float) -> float:
    """DEVICESYNC = 1 - StallSync, seed 000 Sec. IV-B (StallSync as a fraction 0-1)."""
    return clip01(1.0 - stall_sync)


def hostsync_criterion(ctx: ProfileContext) -> Criterion:
    """HOSTSYNC of a profile row: always unsupported (no host timeline in a profile)."""
    return Criterion(
        "HOSTSYNC",
        None,
        "unsupported",
        "needs host-side kernel start times of every kernel call (Sec. IV-A); profile tables hold "
        "none (use perfml.diagnosis.criteria.hostsync with an nvprof --print-gpu-trace timeline)",
    )


def devicesync_criterion(ctx: ProfileContext) -> Criterion:
    """DEVICESYNC of a profile row, from the stall-on-synchronization percentage."""

    def compute() -> Criterion:
        if not ctx.supported("stall_sync_pct"):
            return ctx.unsupported("DEVICESYNC", "stall_sync_pct")
        return Criterion("DEVICESYNC", devicesync(ctx.term("stall_sync_pct") / 100.0))

    return ctx.guarded("DEVICESYNC", compute)
