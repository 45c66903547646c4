"""The optimization criteria of the fine-grained model, each a value in [0, 1].

Reference: seed 000, "A Fine-grained Performance Model for GPU Architectures",
Section IV (criteria A-H) and Section V (ARITHTHR). 1 is the best value, 0 the worst.

The module has two layers:

* pure formulas (``hostsync``, ``devicesync``, ``divergence``, ...), one per equation,
  taking plain numbers, so each can be checked by hand;
* :func:`evaluate_criteria`, which reads the terms of one ``profiles_nca`` row through
  :mod:`perfml.diagnosis.metrics` and returns every criterion with its status:
  ``ok``, ``unsupported`` (the profiles of this compute capability do not hold a needed
  term; never reported as 0 or 1), ``missing`` (the row has an empty value where the
  compute capability should have one; only with ``strict=False``) or ``not_applicable`` (e.g. SHMEMEFFICIENCY of a
  kernel that does not use shared memory).

Interpretations where the printed equation cannot be used literally are stated in the
docstring of the function concerned (L1/L2 granularity and shared-memory efficiency are
written as a ratio >= 1 in the paper although the criteria are defined in [0, 1]).

Characterization functions F_Divergence, F_SHMEM, F_DRAMThr, F_ARITHThr (Sec. III-B)
come from an object with methods ``f_divergence(x)``, ``f_shmem(x)``, ``f_dram_thr(x)``,
``f_arith_thr(x)`` (e.g. :class:`perfml.characterize.Characterization`); without one the
identity (F = 1) is used and :func:`characterization_label` says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import pandas as pd

from perfml.diagnosis import metrics as M
from perfml.diagnosis._occupancy import Residency, theoretical_residency
from perfml.errors import MissingMetricError

__all__ = [
    "CRITERIA",
    "BoardLike",
    "CharacterizationLike",
    "Criterion",
    "CriteriaReport",
    "IdentityCharacterization",
    "MEMTHR_SATURATED",
    "ariththr",
    "characterization_label",
    "default_characterization",
    "devicesync",
    "divergence",
    "evaluate_criteria",
    "hostsync",
    "l1_granularity",
    "l2_granularity",
    "loadbalanc_sm",
    "loadbalanc_sm_from_totals",
    "loadbalanc_warp",
    "memthr",
    "shmem_efficiency",
    "throughput_occupancy",
]

#: criteria in the order of Section IV, plus MEMTHR (IV-H) and ARITHTHR (Sec. V)
CRITERIA = (
    "HOSTSYNC",
    "DEVICESYNC",
    "DIVERGENCE",
    "LOADBALANC_WARP",
    "LOADBALANC_SM",
    "L1_GRANULARITY",
    "L2_GRANULARITY",
    "SHMEMEFFICIENCY",
    "THROUGHPUT_OCCUPANCY",
    "MEMTHR",
    "ARITHTHR",
)

#: "MemThr ~ 1" of Sec. IV-H, read as MEMTHR >= this value (the paper gives no number)
MEMTHR_SATURATED = 0.95

#: cache line / sector sizes of Sec. IV-F (bytes); DRAM transactions are 32-byte sectors
L1_LINE_BYTES = 128
L2_SECTOR_BYTES = 32
DRAM_TRANSACTION_BYTES = 32
#: single-precision FMA = 2 flops per core per cycle (peak FP32 = cores x clock x 2)
FLOPS_PER_CORE_CYCLE = 2


# --------------------------------------------------------------------------- seams


@runtime_checkable
class CharacterizationLike(Protocol):
    """Characterization functions of Sec. III-B (device-specific weights)."""

    def f_divergence(self, x: float) -> float: ...
    def f_shmem(self, x: float) -> float: ...
    def f_dram_thr(self, x: float) -> float: ...
    def f_arith_thr(self, x: float) -> float: ...


class BoardLike(Protocol):
    """What the criteria need of a board: a :class:`perfml.boards.Board` satisfies it.

    Fields used: ``sms``, ``warp_size``, ``max_warps_per_sm``, ``fp32_cores_per_sm``,
    ``boost_clock_mhz``, ``memory_bandwidth_gbs`` and the occupancy-calculator limits
    read by :func:`perfml.boards.occupancy`.
    """

    name: str

    def require(self, field_name: str, *, needed_for: str | None = None) -> Any: ...


class IdentityCharacterization:
    """F = 1 everywhere: no microbenchmark characterization applied."""

    is_identity = True

    def f_divergence(self, x: float) -> float:  # noqa: D102
        return 1.0

    def f_shmem(self, x: float) -> float:  # noqa: D102
        return 1.0

    def f_dram_thr(self, x: float) -> float:  # noqa: D102
        return 1.0

    def f_arith_thr(self, x: float) -> float:  # noqa: D102
        return 1.0


def default_characterization() -> CharacterizationLike:
    """``perfml.characterize.Characterization.identity()`` if present, else F = 1."""
    try:
        from perfml.characterize import Characterization  # type: ignore[import-not-found]

        return Characterization.identity()
    except (ImportError, AttributeError):
        return IdentityCharacterization()


def characterization_label(char: CharacterizationLike) -> str:
    """Plain words saying which characterization weights the criteria.

    The identity is recognised by ``is_identity`` or by all four functions returning 1
    on a few probe points.
    """
    probes = (0.1, 0.5, 1.0)
    is_identity = bool(getattr(char, "is_identity", False)) or all(
        math.isclose(float(f(x)), 1.0)
        for f in (char.f_divergence, char.f_shmem, char.f_dram_thr, char.f_arith_thr)
        for x in probes
    )
    if is_identity:
        return (
            "identity (F_Divergence = F_SHMEM = F_DRAMThr = F_ARITHThr = 1): no microbenchmark "
            "characterization of this board applied"
        )
    name = getattr(char, "board", None) or getattr(char, "name", None) or type(char).__name__
    source = getattr(char, "source", None)
    return f"characterization functions of {name}" + (f" ({source})" if source else "")


# --------------------------------------------------------------------------- formulas


def _clip01(x: float) -> float:
    return min(1.0, max(0.0, x))


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
    return _clip01(sum(kernel_times) / span)


def devicesync(stall_sync: float) -> float:
    """DEVICESYNC = 1 - StallSync, seed 000 Sec. IV-B (StallSync as a fraction 0-1)."""
    return _clip01(1.0 - stall_sync)


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
    return _clip01(thread_inst_executed / (inst_executed * warp_size) * f_divergence)


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
    return _clip01((active_warps / active_cycles) / (warps_per_block * blocks_per_sm))


def loadbalanc_sm(active_cycles_per_sm: Sequence[float]) -> float:
    """LOADBALANC_SM = 1 - (max_SM TotActiveCycles - AvgCycles) / max_SM TotActiveCycles, Sec. IV-E."""
    if len(active_cycles_per_sm) == 0 or max(active_cycles_per_sm) <= 0:
        raise ValueError("need per-SM active cycles, at least one positive")
    peak = max(active_cycles_per_sm)
    avg = sum(active_cycles_per_sm) / len(active_cycles_per_sm)
    return _clip01(1.0 - (peak - avg) / peak)


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
    return _clip01(active_cycles_total / elapsed_cycles_total)


def _granularity(requested_bytes: float, transactions: float, size: int) -> tuple[float, bool]:
    if transactions <= 0:
        raise ValueError("no transactions")
    raw = requested_bytes / (transactions * size)
    return _clip01(raw), raw > 1.0


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
    return _clip01(requests / transactions * f_shmem)


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
    return _clip01(achieved_gbs / (peak_bandwidth_gbs * f_dram_thr))


def throughput_occupancy(memthr_value: float, occupancy: float) -> float:
    """THROUGHPUT/OCCUPANCY, Sec. IV-H: 1 if MemThr ~ 1 else 1 - (1 - occ) x MEMTHR.

    ``MemThr ~ 1`` is read as ``MEMTHR >= MEMTHR_SATURATED`` (0.95).
    """
    if memthr_value >= MEMTHR_SATURATED:
        return 1.0
    return _clip01(1.0 - (1.0 - occupancy) * memthr_value)


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
    return _clip01(flops / (elapsed_cycles_sm * fp32_cores_per_sm * FLOPS_PER_CORE_CYCLE) / f_arith_thr)


# --------------------------------------------------------------------------- evaluation


@dataclass(frozen=True)
class Criterion:
    """One criterion of one kernel profile.

    ``value`` is in [0, 1] when ``status == "ok"``, else ``None``; ``note`` says why a
    criterion is unsupported / not applicable, or how an approximation was made.
    """

    name: str
    value: float | None
    status: str = "ok"
    note: str = ""
    approximate: bool = False

    @property
    def ok(self) -> bool:
        """Whether the criterion has a value."""
        return self.status == "ok"


@dataclass(frozen=True)
class CriteriaReport:
    """All criteria of one profile row, plus the shares the potential speedups need."""

    board: str
    compute_capability: str
    criteria: Mapping[str, Criterion]
    #: L1%, L2%, ShMem% of Sec. V (nvprof utilization level / 10), None if unsupported
    shares: Mapping[str, float | None] = field(default_factory=dict)
    #: StallSync (fraction) and the average fraction of warp slots active, Sec. V
    stall_sync: float | None = None
    warp_activity: float | None = None
    residency: Residency | None = None
    characterization: str = ""

    def value(self, name: str) -> float | None:
        """Value of a criterion, ``None`` when it has none."""
        return self.criteria[name].value


def _board_attr(board: BoardLike, attr: str) -> Any:
    return board.require(attr, needed_for="the fine-grained criteria model")


def _launch(row: Mapping[str, object], key: str, default: float = 1.0) -> float:
    value = row.get(key)
    if value is None or pd.isna(value):
        return default
    return float(value)


def _check_columns(row: pd.Series | Mapping[str, object], cc: str, board: str) -> None:
    """Raise if the *table* lacks a column that compute capability ``cc`` should hold."""
    index = row.index if isinstance(row, pd.Series) else row.keys()
    absent = [
        (col, spec)
        for spec in M.TERMS.values()
        for col in spec.columns.get(cc, ())
        if col not in index
    ]
    if absent:
        col, spec = absent[0]
        more = f" (and {len(absent) - 1} more: {', '.join(c for c, _ in absent[1:4])}...)" if len(absent) > 1 else ""
        raise MissingMetricError(
            f"the profile table of board {board} (compute capability {cc}) has no column {col!r}{more}, "
            f"needed for {spec.description}; re-profile with `{spec.nvprof_hint}` or load a "
            "profiles_nca-shaped table that holds it"
        )


def evaluate_criteria(
    row: pd.Series | Mapping[str, object],
    board: BoardLike,
    characterization: CharacterizationLike | None = None,
    *,
    strict: bool = True,
) -> CriteriaReport:
    """Every criterion of Sec. IV (and ARITHTHR, Sec. V) for one profile row.

    Parameters
    ----------
    row : pandas.Series or mapping
        One row of a ``profiles_nca``-shaped table (``compute_capability``, launch
        columns, ``m.*``/``e.*`` metrics).
    board : BoardLike
        The board the row was measured on (``perfml.boards.get_board``).
    characterization : CharacterizationLike, optional
        Characterization functions; identity (F = 1) when omitted.
    strict : bool, default True
        When a needed column exists but is empty in this row (nvprof did not record it,
        as for the largest matMul sizes), raise. With ``strict=False`` the criteria that
        need it get status ``missing`` (with the error message as note) and the others
        are still computed.

    Raises
    ------
    MissingMetricError
        If the table lacks a column needed on this compute capability (always), or a
        needed value is empty (``strict=True``).
    MissingBoardParameterError
        If the board lacks an attribute a criterion needs.
    """
    char = characterization if characterization is not None else default_characterization()
    bname = str(getattr(board, "name", "?"))
    cc = M.cc_key(row.get("compute_capability"))
    _check_columns(row, cc, bname)

    def term(name: str) -> float:
        return M.term_value(row, name, cc, board=bname)

    def unsupported(name: str, *terms: str) -> Criterion:
        missing = [t for t in terms if not M.TERMS[t].supported(cc)]
        return Criterion(
            name,
            None,
            "unsupported",
            f"compute-capability {cc} profiles hold no {', '.join(M.TERMS[t].description for t in missing)}",
        )

    def guarded(name: str, fn: Callable[[], Criterion]) -> Criterion:
        try:
            return fn()
        except MissingMetricError as exc:
            if strict:
                raise
            return Criterion(name, None, "missing", str(exc))

    warp_size = int(_board_attr(board, "warp_size"))
    sms = int(_board_attr(board, "sms"))
    clock = float(_board_attr(board, "boost_clock_mhz"))
    peak_bw = float(_board_attr(board, "memory_bandwidth_gbs"))
    cores = int(_board_attr(board, "fp32_cores_per_sm"))
    out: dict[str, Criterion] = {}

    out["HOSTSYNC"] = Criterion(
        "HOSTSYNC",
        None,
        "unsupported",
        "needs host-side kernel start times of every kernel call (Sec. IV-A); profile tables hold "
        "none (use perfml.diagnosis.criteria.hostsync with an nvprof --print-gpu-trace timeline)",
    )

    # B. device synchronization
    def _devicesync() -> Criterion:
        if not M.TERMS["stall_sync_pct"].supported(cc):
            return unsupported("DEVICESYNC", "stall_sync_pct")
        return Criterion("DEVICESYNC", devicesync(term("stall_sync_pct") / 100.0))

    out["DEVICESYNC"] = guarded("DEVICESYNC", _devicesync)
    stall_sync = 1.0 - out["DEVICESYNC"].value if out["DEVICESYNC"].value is not None else None

    # C. divergence
    def _divergence() -> Criterion:
        if not M.TERMS["thread_inst_executed"].supported(cc):
            return unsupported("DIVERGENCE", "thread_inst_executed")
        inst = term("inst_executed")
        thr = term("thread_inst_executed")
        if inst <= 0:
            return Criterion("DIVERGENCE", None, "not_applicable", "no instruction executed")
        raw = thr / (inst * warp_size)
        return Criterion("DIVERGENCE", divergence(thr, inst, warp_size, float(char.f_divergence(raw))))

    out["DIVERGENCE"] = guarded("DIVERGENCE", _divergence)

    # D. warp load balancing (theoretical residency from the launch configuration)
    threads = _launch(row, "block_x") * _launch(row, "block_y") * _launch(row, "block_z")
    grid = _launch(row, "grid_x") * _launch(row, "grid_y") * _launch(row, "grid_z")
    residency = theoretical_residency(
        board,
        threads_per_block=int(threads),
        grid_blocks=int(grid),
        registers_per_thread=int(_launch(row, "registers_per_thread", 0.0)),
        static_smem_bytes=int(_launch(row, "static_smem_bytes", 0.0)),
    )
    out["LOADBALANC_WARP"] = guarded(
        "LOADBALANC_WARP",
        lambda: Criterion(
            "LOADBALANC_WARP",
            loadbalanc_warp(
                term("active_warps"), term("active_cycles"), residency.warps_per_block, residency.blocks_per_sm
            ),
            note=f"theoretical {residency.warps_per_sm} warps/SM ({residency.blocks_per_sm} blocks, "
            f"limited by {residency.limited_by})",
        ),
    )

    # E. SM load balancing (approximation, per-SM cycles not in the profiles)
    out["LOADBALANC_SM"] = guarded(
        "LOADBALANC_SM",
        lambda: Criterion(
            "LOADBALANC_SM",
            loadbalanc_sm_from_totals(term("active_cycles"), term("elapsed_cycles_sm")),
            note="lower bound: events are summed over SMs, so max_SM(TotActiveCycles) is replaced "
            "by the elapsed cycles of one SM",
            approximate=True,
        ),
    )

    # F. L1 / L2 granularity
    def _l1() -> Criterion:
        if not M.TERMS["l1_transactions"].supported(cc):
            return Criterion(
                "L1_GRANULARITY",
                None,
                "unsupported",
                f"compute-capability {cc} profiles count global transactions in 32-byte sectors "
                "only; no 128-byte L1 line count",
            )
        return _granularity_criterion(
            "L1_GRANULARITY", term("requested_global_bytes"), term("l1_transactions"), L1_LINE_BYTES
        )

    out["L1_GRANULARITY"] = guarded("L1_GRANULARITY", _l1)
    out["L2_GRANULARITY"] = guarded(
        "L2_GRANULARITY",
        lambda: _granularity_criterion(
            "L2_GRANULARITY", term("requested_global_bytes"), term("l2_transactions"), L2_SECTOR_BYTES
        ),
    )

    # G. shared-memory efficiency
    def _shmem() -> Criterion:
        sh_req, sh_tr = term("shared_requests"), term("shared_transactions")
        if sh_req <= 0 or sh_tr <= 0:
            return Criterion(
                "SHMEMEFFICIENCY", None, "not_applicable", "the kernel issues no shared-memory access"
            )
        raw = sh_req / sh_tr
        return Criterion("SHMEMEFFICIENCY", shmem_efficiency(sh_req, sh_tr, float(char.f_shmem(raw))))

    out["SHMEMEFFICIENCY"] = guarded("SHMEMEFFICIENCY", _shmem)

    # H. memory throughput and throughput / occupancy
    def _memthr() -> Criterion:
        dram_bytes = term("dram_transactions") * DRAM_TRANSACTION_BYTES
        elapsed = term("elapsed_cycles_sm")
        seconds = elapsed / (sms * clock * 1e6)
        achieved = dram_bytes / seconds / 1e9
        value = memthr(
            dram_bytes,
            elapsed,
            sms=sms,
            clock_mhz=clock,
            peak_bandwidth_gbs=peak_bw,
            f_dram_thr=float(char.f_dram_thr(achieved / peak_bw)),
        )
        return Criterion("MEMTHR", value, note=f"{achieved:.1f} GB/s of {peak_bw:g} GB/s peak")

    out["MEMTHR"] = guarded("MEMTHR", _memthr)
    mem = out["MEMTHR"]
    if mem.ok and mem.value is not None:
        out["THROUGHPUT_OCCUPANCY"] = Criterion(
            "THROUGHPUT_OCCUPANCY",
            throughput_occupancy(mem.value, residency.occupancy),
            note=f"theoretical occupancy {residency.occupancy:.2f}",
        )
    else:
        out["THROUGHPUT_OCCUPANCY"] = Criterion("THROUGHPUT_OCCUPANCY", None, mem.status, mem.note)

    # ARITHTHR (Sec. V)
    def _arith() -> Criterion:
        flops, elapsed = term("flop_sp"), term("elapsed_cycles_sm")
        raw = flops / (elapsed * cores * FLOPS_PER_CORE_CYCLE)
        return Criterion(
            "ARITHTHR",
            ariththr(flops, elapsed, fp32_cores_per_sm=cores, f_arith_thr=float(char.f_arith_thr(raw))),
            note="single-precision flops over the FP32 peak (cores x 2 x clock)",
        )

    out["ARITHTHR"] = guarded("ARITHTHR", _arith)

    def share(name: str) -> float | None:
        if not M.TERMS[name].supported(cc):
            return None
        try:
            return term(name) / 10.0
        except MissingMetricError:
            if strict:
                raise
            return None

    shares = {"L1": share("l1_utilization"), "L2": share("l2_utilization"), "ShMem": share("shmem_utilization")}
    try:
        warp_activity: float | None = _clip01(
            term("active_warps") / (residency.max_warps_per_sm * term("elapsed_cycles_sm"))
        )
    except MissingMetricError:
        if strict:
            raise
        warp_activity = None

    return CriteriaReport(
        board=bname,
        compute_capability=cc,
        criteria={name: out[name] for name in CRITERIA},
        shares=shares,
        stall_sync=stall_sync,
        warp_activity=warp_activity,
        residency=residency,
        characterization=characterization_label(char),
    )


def _granularity_criterion(name: str, requested: float, transactions: float, size: int) -> Criterion:
    if transactions <= 0 or requested <= 0:
        return Criterion(name, None, "not_applicable", "the kernel issues no global-memory access")
    value, clipped = _granularity(requested, transactions, size)
    note = f"{requested / 1e6:.3g} MB requested, {transactions * size / 1e6:.3g} MB moved"
    if clipped:
        note += " (clipped to 1: several threads read the same address)"
    return Criterion(name, value, note=note)

