"""Memory-access efficiency criteria: L1/L2 granularity (seed 000 Sec. IV-F) and
shared-memory efficiency SHMEMEFFICIENCY (Sec. IV-G).

The paper writes granularity and shared-memory efficiency as ratios >= 1 although the
criteria are defined in [0, 1] with 1 best; the docstrings say how they are read.
"""

from __future__ import annotations

from perfml.diagnosis.criteria._common import Criterion, ProfileContext, clip01

__all__ = [
    "L1_LINE_BYTES",
    "L2_SECTOR_BYTES",
    "l1_granularity",
    "l1_granularity_criterion",
    "l2_granularity",
    "l2_granularity_criterion",
    "shmem_efficiency",
    "shmem_efficiency_criterion",
]

#: cache line / sector sizes of Sec. IV-F (bytes)
L1_LINE_BYTES = 128
L2_SECTOR_BYTES = 32


def _granularity(requested_bytes: float, transactions: float, size: int) -> tuple[float, bool]:
    if transactions <= 0:
        raise ValueError("no transactions")
    raw = requested_bytes / (transactions * size)
    return clip01(raw), raw > 1.0


def l1_granularity(requested_bytes: float, l1_transactions: float) -> float:
    """L1_GRANULARITY, Sec. IV-F, as requested bytes / (128-byte transactions x 128).

    The paper prints ``|#L1_transactions| x 128 / sum_T |Mem_instr_T| size_T``, which
    is >= 1 and grows as coalescing gets worse, while the criteria are defined in [0, 1]
    with 1 best; we use its reciprocal (the share of moved bytes that were requested).
    Values above 1 (broadcast loads: several threads read one address) are clipped to 1.
    """
    return _granularity(requested_bytes, l1_transactions, L1_LINE_BYTES)[0]


def l2_granularity(requested_bytes: float, l2_transactions: float) -> float:
    """L2_GRANULARITY, Sec. IV-F, requested bytes / (32-byte L2 transactions x 32).

    Same reading as :func:`l1_granularity`, with the 32-byte L2 sector.
    """
    return _granularity(requested_bytes, l2_transactions, L2_SECTOR_BYTES)[0]


def shmem_efficiency(requests: float, transactions: float, f_shmem: float = 1.0) -> float:
    """SHMEMEFFICIENCY, Sec. IV-G: needed over performed shared-memory transactions x F_SHMEM.

    The numerator counts the shared load/store instructions (one transaction each when
    conflict-free), the denominator the transactions actually performed, which
    "includes the re-executed memory instructions due to bank conflicts"; so the
    ratio is 1 without bank conflicts and 1/k with k-way conflicts.
    """
    if transactions <= 0:
        raise ValueError("no shared-memory transactions")
    return clip01(requests / transactions * f_shmem)


def _granularity_criterion(name: str, requested: float, transactions: float, size: int) -> Criterion:
    if transactions <= 0 or requested <= 0:
        return Criterion(name, None, "not_applicable", "the kernel issues no global-memory access")
    value, clipped = _granularity(requested, transactions, size)
    note = f"{requested / 1e6:.3g} MB requested, {transactions * size / 1e6:.3g} MB moved"
    if clipped:
        note += " (clipped to 1: several threads read the same address)"
    return Criterion(name, value, note=note)


def l1_granularity_criterion(ctx: ProfileContext) -> Criterion:
    """L1_GRANULARITY of a profile row; unsupported where profiles count 32-byte sectors only."""

    def compute() -> Criterion:
        if not ctx.supported("l1_transactions"):
            return Criterion(
                "L1_GRANULARITY",
                None,
                "unsupported",
                f"compute-capability {ctx.cc} profiles count global transactions in 32-byte sectors "
                "only; no 128-byte L1 line count",
            )
        return _granularity_criterion(
            "L1_GRANULARITY", ctx.term("requested_global_bytes"), ctx.term("l1_transactions"), L1_LINE_BYTES
        )

    return ctx.guarded("L1_GRANULARITY", compute)


def l2_granularity_criterion(ctx: ProfileContext) -> Criterion:
    """L2_GRANULARITY of a profile row."""
    return ctx.guarded(
        "L2_GRANULARITY",
        lambda: _granularity_criterion(
            "L2_GRANULARITY", ctx.term("requested_global_bytes"), ctx.term("l2_transactions"), L2_SECTOR_BYTES
        ),
    )


def shmem_efficiency_criterion(ctx: ProfileContext) -> Criterion:
    """SHMEMEFFICIENCY of a profile row; not applicable without shared-memory accesses."""

    def compute() -> Criterion:
        sh_req, sh_tr = ctx.term("shared_requests"), ctx.term("shared_transactions")
        if sh_req <= 0 or sh_tr <= 0:
            return Criterion(
                "SHMEMEFFICIENCY", None, "not_applicable", "the kernel issues no shared-memory access"
            )
        raw = sh_req / sh_tr
        return Criterion("SHMEMEFFICIENCY", shmem_efficiency(sh_req, sh_tr, float(ctx.char.f_shmem(raw))))

    return ctx.guarded("SHMEMEFFICIENCY", compute)
