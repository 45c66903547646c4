"""Throughput criteria: MEMTHR and THROUGHPUT/OCCUPANCY (seed 000 Sec. IV-H), ARITHTHR (Sec. V)."""

from __future__ import annotations

from perfml.diagnosis.criteria._common import Criterion, ProfileContext, clip01

__all__ = [
    "DRAM_TRANSACTION_BYTES",
    "FLOPS_PER_CORE_CYCLE",
    "MEMTHR_SATURATED",
    "ariththr",
    "ariththr_criterion",
    "memthr",
    "memthr_criterion",
    "throughput_occupancy",
    "throughput_occupancy_criterion",
]

#: "MemThr ~ 1" of Sec. IV-H, read as MEMTHR >= this value (the paper gives no number)
MEMTHR_SATURATED = 0.95
#: DRAM transactions are 32-byte sectors
DRAM_TRANSACTION_BYTES = 32
#: single-precision FMA = 2 flops per core per cycle (peak FP32 = cores x clock x 2)
FLOPS_PER_CORE_CYCLE = 2


def memthr(
    dram_bytes: float,
    elapsed_cycles_sm: float,
    *,
    sms: int,
    clock_mhz: float,
    peak_bandwidth_gbs: float,
    f_dram_thr: float = 1.0,
) -> float:
    """MEMTHR = AchievedThroughput / (TheoreticalPeakThroughput x F_DRAMThr), Sec. IV-H.

    Achieved throughput = DRAM bytes / kernel time, with kernel time =
    ``elapsed_cycles_sm / (|SM| x clock)`` (``elapsed_cycles_sm`` is summed over SMs).
    """
    seconds = elapsed_cycles_sm / (sms * clock_mhz * 1e6)
    if seconds <= 0:
        raise ValueError("elapsed cycles must be positive")
    achieved_gbs = dram_bytes / seconds / 1e9
    return clip01(achieved_gbs / (peak_bandwidth_gbs * f_dram_thr))


def throughput_occupancy(memthr_value: float, occupancy: float) -> float:
    """THROUGHPUT/OCCUPANCY, Sec. IV-H: 1 if MemThr ~ 1 else 1 - (1 - occ) x MEMTHR.

    ``MemThr ~ 1`` is read as ``MEMTHR >= MEMTHR_SATURATED`` (0.95).
    """
    if memthr_value >= MEMTHR_SATURATED:
        return 1.0
    return clip01(1.0 - (1.0 - occupancy) * memthr_value)


def ariththr(
    flops: float, elapsed_cycles_sm: float, *, fp32_cores_per_sm: int, f_arith_thr: float = 1.0
) -> float:
    """ARITHTHR = AchievedThroughput / (TheoreticalPeakThroughput x F_ARITHThr), Sec. V.

    Achieved = flops / t with t = ``elapsed_cycles_sm / (|SM| x clock)``; peak =
    ``|SM| x fp32_cores_per_sm x 2 x clock``; the clock and |SM| cancel:
    ``flops / (elapsed_cycles_sm x fp32_cores_per_sm x 2)``. Single precision only.
    """
    if elapsed_cycles_sm <= 0:
        raise ValueError("elapsed cycles must be positive")
    return clip01(flops / (elapsed_cycles_sm * fp32_cores_per_sm * FLOPS_PER_CORE_CYCLE) / f_arith_thr)


def memthr_criterion(ctx: ProfileContext) -> Criterion:
    """MEMTHR of a profile row, weighted by F_DRAMThr of the achieved share of the peak."""

    def compute() -> Criterion:
        dram_bytes = ctx.term("dram_transactions") * DRAM_TRANSACTION_BYTES
        elapsed = ctx.term("elapsed_cycles_sm")
        seconds = elapsed / (ctx.sms * ctx.clock_mhz * 1e6)
        achieved = dram_bytes / seconds / 1e9
        value = memthr(
            dram_bytes,
            elapsed,
            sms=ctx.sms,
            clock_mhz=ctx.clock_mhz,
            peak_bandwidth_gbs=ctx.peak_bw_gbs,
            f_dram_thr=float(ctx.char.f_dram_thr(achieved / ctx.peak_bw_gbs)),
        )
        return Criterion("MEMTHR", value, note=f"{achieved:.1f} GB/s of {ctx.peak_bw_gbs:g} GB/s peak")

    return ctx.guarded("MEMTHR", compute)


def throughput_occupancy_criterion(ctx: ProfileContext, mem: Criterion) -> Criterion:
    """THROUGHPUT_OCCUPANCY from the row's MEMTHR criterion and theoretical occupancy."""
    if mem.ok and mem.value is not None:
        return Criterion(
            "THROUGHPUT_OCCUPANCY",
            throughput_occupancy(mem.value, ctx.residency.occupancy),
            note=f"theoretical occupancy {ctx.residency.occupancy:.2f}",
        )
    return Criterion("THROUGHPUT_OCCUPANCY", None, mem.status, mem.note)


def ariththr_criterion(ctx: ProfileContext) -> Criterion:
    """ARITHTHR of a profile row, weighted by F_ARITHThr of the raw ratio."""

    def compute() -> Criterion:
        flops, elapsed = ctx.term("flop_sp"), ctx.term("elapsed_cycles_sm")
        cores = ctx.fp32_cores_per_sm
        raw = flops / (elapsed * cores * FLOPS_PER_CORE_CYCLE)
        return Criterion(
            "ARITHTHR",
            ariththr(flops, elapsed, fp32_cores_per_sm=cores, f_arith_thr=float(ctx.char.f_arith_thr(raw))),
            note="single-precision flops over the FP32 peak (cores x 2 x clock)",
        )

    return ctx.guarded("ARITHTHR", compute)
