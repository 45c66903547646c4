"""Figures derived from board fields: peak FLOP/s, peak bandwidth, resident warps, occupancy.

Every formula takes a :class:`~perfml.boards.Board` and reads its fields; no
specification number is written here. A missing input raises
:class:`~perfml.errors.MissingBoardParameterError` naming the board and field.

References
----------
.. [1] NVIDIA, CUDA C Programming Guide, "Arithmetic Instructions" (throughput per
   clock per multiprocessor; an FMA counts as two floating-point operations).
.. [3] NVIDIA, CUDA C Programming Guide, "Maximize Utilization", "Multiprocessor Level"
   (warp instructions an SM issues per clock) and appendix "Compute Capabilities",
   sections "Architecture" (warp schedulers per SM, dual issue on 2.1 and 3.x).
.. [4] N. Ding and S. Williams, "An Instruction Roofline Model for GPUs", PMBS workshop
   at SC 2019: the instruction ceiling is the warp instructions the SMs' schedulers can
   issue per second, SMs x warp schedulers x one instruction per clock x clock.
.. [2] NVIDIA, CUDA Occupancy Calculator (CUDA_Occupancy_Calculator.xls), sheet
   "Calculator": warps, registers and shared memory per block rounded to the
   allocation units of the compute capability; active blocks per SM are the minimum
   of the four limits.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from perfml.boards._board import BOARD_FILES, Board
from perfml.errors import MissingBoardParameterError, InvalidValueError

__all__ = [
    "Occupancy",
    "peak_flops",
    "peak_bandwidth",
    "issue_limited_flops",
    "l2_resident_roofline_ms",
    "max_resident_warps",
    "occupancy",
    "wave_size",
]

Precision = Literal["fp32", "fp64", "fp16"]
Clock = Literal["boost", "base"]

_UNITS_FIELD = {"fp32": "fp32_cores_per_sm", "fp64": "fp64_units_per_sm", "fp16": "fp16_units_per_sm"}
_CLOCK_FIELD = {"boost": "boost_clock_mhz", "base": "base_clock_mhz"}

#: order in which limits are reported when several give the same (minimum) block count
LIMITERS = ("warps", "blocks", "registers", "shared_memory")


def _as_board(board) -> Board:
    """``board`` as a :class:`Board`: a board name (or alias) is looked up in the registry."""
    if isinstance(board, Board):
        return board
    if isinstance(board, str):
        from perfml.boards._registry import get_board

        return get_board(board)
    raise InvalidValueError(f"expected a Board (perfml.boards.get_board(name)) or a board name, got {type(board).__name__}")


def _whole(value, name: str, low: int) -> int:
    """``value`` as an int: a whole number >= ``low`` (a launch or a resource count), never a bool."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__index__"):
        raise InvalidValueError(f"{name} must be a whole number >= {low}, got {value!r}")
    number = float(value)
    if not (math.isfinite(number) and number == math.floor(number) and number >= low):
        raise InvalidValueError(f"{name} must be a whole number >= {low}, got {value!r}")
    return int(number)


def _per_sm_figures(board: Board, clock: str, purpose: str, *fields: str) -> tuple[float, ...]:
    """``(sms, *fields, clock in Hz)`` of ``board``, each required for ``purpose`` (the clock checked first)."""
    if clock not in _CLOCK_FIELD:
        raise InvalidValueError(f"clock must be one of {sorted(_CLOCK_FIELD)}, got {clock!r}")
    values = [board.require(name, needed_for=purpose) for name in ("sms", *fields, _CLOCK_FIELD[clock])]
    return (*(float(v) for v in values[:-1]), float(values[-1]) * 1e6)


def peak_flops(board: Board, precision: Precision = "fp32", clock: Clock = "boost") -> float:
    """Peak floating-point rate of the board in FLOP/s (an FMA counts as 2 FLOP).

    ``sms * units_per_sm * clock * 2``, with the FP32/FP64/FP16 FMA results per clock
    per SM of the CUDA Programming Guide throughput table [1]_.

    Parameters
    ----------
    board : Board or str
        The board, or its name or alias (looked up in the registry).
    precision : {"fp32", "fp64", "fp16"}
        fp16 is the non-tensor half-precision rate.
    clock : {"boost", "base"}
        Which clock to use.

    Raises
    ------
    ValueError
        For an unknown precision or clock name.
    MissingBoardParameterError
        If the SM count, the unit count of that precision or the clock is unknown.
    """
    board = _as_board(board)
    if precision not in _UNITS_FIELD:
        raise InvalidValueError(f"precision must be one of {sorted(_UNITS_FIELD)}, got {precision!r}")
    sms, units, hz = _per_sm_figures(board, clock, f"peak {precision} FLOP/s", _UNITS_FIELD[precision])
    return sms * units * hz * 2


def peak_warp_instructions(board: Board, clock: Clock = "boost") -> float:
    """Warp instructions the board can issue per second: ``sms * warp_issue_per_clock * clock``.

    The instruction ceiling of the Instruction Roofline Model [4]_ (one instruction per
    warp scheduler per clock, no dual issue [3]_); a kernel that executes ``I`` warp
    instructions takes at least ``I`` over this rate.

    Raises
    ------
    MissingBoardParameterError
        If the SM count, the issue rate (from the compute capability table) or the clock
        is unknown.
    """
    sms, issue, hz = _per_sm_figures(_as_board(board), clock, "peak warp instructions per second", "warp_issue_per_clock")
    return sms * issue * hz


def issue_limited_flops(board: Board, clock: Clock = "boost") -> float:
    """FP32 rate the SM can issue without instruction-level parallelism, in FLOP/s.

    ``2 * sms * min(fp32_cores_per_sm, warp_size * warp_issue_per_clock) * clock``: a
    warp instruction drives 32 lanes, and without two independent instructions per warp
    an SM issues ``warp_issue_per_clock`` of them per clock [3]_. It equals
    :func:`peak_flops` where the schedulers can feed every core (Maxwell and later), and
    is below it where they cannot: a Kepler SMX issues 4 x 32 lanes per clock to its 192
    cores (2/3 of the datasheet rate without dual issue), a compute capability 2.1 SM
    2 x 16 lanes to its 48. So simple kernels (one dependent chain per thread, like the
    nine applications of the BSP paper) scale across generations with this rate, not
    with the core count.

    Raises
    ------
    MissingBoardParameterError
        If the SM count, cores per SM, warp size, issue rate or clock is unknown (the
        issue rate comes from the board's compute capability table).
    """
    sms, cores, warp, issue, hz = _per_sm_figures(_as_board(board), clock, "issue-limited FP32 FLOP/s",
                                                  "fp32_cores_per_sm", "warp_size", "warp_issue_per_clock")
    return 2.0 * sms * min(cores, warp * issue) * hz


def peak_bandwidth(board: Board) -> float:
    """Peak DRAM bandwidth in bytes/s.

    The bandwidth a source states (``memory_bandwidth_gbs``) when there is one;
    otherwise ``2 * memory_clock_mhz * bus_width_bits / 8`` (double data rate on the
    deviceQuery memory clock, which is half the effective transfer rate for every
    memory type).

    Raises
    ------
    MissingBoardParameterError
        If neither the stated bandwidth nor both memory clock and bus width are known.
    """
    board = _as_board(board)
    if board.memory_bandwidth_gbs is not None:
        return float(board.memory_bandwidth_gbs) * 1e9
    if board.memory_clock_mhz is None or board.bus_width_bits is None:
        missing = "memory_clock_mhz" if board.memory_clock_mhz is None else "bus_width_bits"
        raise MissingBoardParameterError(
            f"board {board.name!r} has no memory_bandwidth_gbs and no {missing!r} to derive it "
            "from (needed for peak bandwidth); add memory_bandwidth_gbs, or memory_clock_mhz and "
            f"bus_width_bits, with their sources to the board's entry ({BOARD_FILES})"
        )
    return 2.0 * board.memory_clock_mhz * 1e6 * board.bus_width_bits / 8.0


def l2_resident_roofline_ms(flops, moved_bytes, *, peak_flops_per_s, peak_bytes_per_s, l2_bytes=0.0):
    """The roofline lower bound of a work, in ms, with up to ``l2_bytes`` served by a warm L2.

    ``max(flops / peak_flops_per_s, max(moved_bytes - l2_bytes, 0) / peak_bytes_per_s)``:
    the roofline of Williams, Waterman and Patterson (CACM 52(4), 2009, eq. 1) with the
    board's peaks, less the bytes the L2 can hold, which a repeated call (or a kernel whose
    input an earlier one left there) reads without DRAM. No faster time is physical, so the
    query path clamps predictions to it and the calibration files refuse times beyond it.
    Arguments broadcast (NumPy); ``l2_bytes = 0`` gives the plain roofline; a term that is
    NaN (work unknown) leaves the other one.
    """
    import numpy as np

    flops = np.asarray(flops, dtype=float)
    moved = np.asarray(moved_bytes, dtype=float)
    dram = np.clip(moved - np.asarray(l2_bytes, dtype=float), 0.0, None)
    return np.fmax(flops / np.asarray(peak_flops_per_s, dtype=float),
                   dram / np.asarray(peak_bytes_per_s, dtype=float)) * 1e3


def max_resident_warps(board: Board) -> int:
    """Warps the whole board can hold at once: ``max_warps_per_sm * sms``.

    Raises
    ------
    MissingBoardParameterError
        If the SM count or the per-SM warp limit is unknown.
    """
    board = _as_board(board)
    sms = board.require("sms", needed_for="max resident warps")
    warps = board.require("max_warps_per_sm", needed_for="max resident warps")
    return int(sms * warps)


@dataclass(frozen=True)
class Occupancy:
    """Theoretical occupancy of one launch configuration on one SM.

    Attributes
    ----------
    active_blocks_per_sm : int
        Blocks resident per SM.
    active_warps_per_sm : int
        Warps resident per SM (``active_blocks_per_sm * warps_per_block``).
    occupancy : float
        ``active_warps_per_sm / max_warps_per_sm``, in [0, 1].
    limited_by : str
        The limit that sets the block count: ``"warps"``, ``"blocks"``,
        ``"registers"`` or ``"shared_memory"`` (first of these on a tie).
    warps_per_block : int
        Warps of one block.
    limits : Mapping[str, int]
        Blocks per SM allowed by each limit.
    """

    active_blocks_per_sm: int
    active_warps_per_sm: int
    occupancy: float
    limited_by: str
    warps_per_block: int
    limits: Mapping[str, int] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.limits, MappingProxyType):
            object.__setattr__(self, "limits", MappingProxyType(dict(self.limits)))


def _ceil_to(x: float, unit: int) -> int:
    return int(math.ceil(x / unit) * unit)


def _floor_to(x: float, unit: int) -> int:
    return int(math.floor(x / unit) * unit)


def occupancy(
    board: Board,
    threads_per_block: int,
    registers_per_thread: int = 0,
    shared_bytes_per_block: int = 0,
) -> Occupancy:
    """Theoretical occupancy of a launch configuration, by the CUDA occupancy calculator rules [2]_.

    Blocks per SM are the minimum of four limits:

    * warps: ``floor(max_warps_per_sm / warps_per_block)``;
    * blocks: ``max_blocks_per_sm``;
    * registers: with warp granularity, registers per warp =
      ``ceil(regs * warp_size, register_alloc_unit)``, warps that fit in one block-sized
      register partition = ``floor(floor(registers_per_block / regs_per_warp),
      warp_alloc_granularity)``, blocks = ``floor(warps / warps_per_block) *
      floor(registers_per_sm / registers_per_block)``; with block granularity (CC 1.x), registers
      per block = ``ceil(ceil(warps_per_block, warp_alloc_granularity) * warp_size * regs,
      register_alloc_unit)``, blocks = ``floor(registers_per_sm / regs_per_block)``;
    * shared memory: ``floor(shared_mem_per_sm / ceil(bytes + reserved, alloc_unit))``.

    Parameters
    ----------
    board : Board or str
        The board, or its name or alias (looked up in the registry).
    threads_per_block : int
        Threads of one block (at least 1, at most ``max_threads_per_block``).
    registers_per_thread : int, default 0
        Registers per thread (0 = not limiting), e.g. from ``kernel.attributes``.
    shared_bytes_per_block : int, default 0
        Static plus dynamic shared memory per block.

    Returns
    -------
    Occupancy

    Raises
    ------
    ValueError
        If the configuration cannot launch on this board (too many threads, registers
        or shared bytes per block).
    MissingBoardParameterError
        If a residency limit or allocation rule of the board is unknown.
    """
    board = _as_board(board)
    threads_per_block = _whole(threads_per_block, "threads_per_block", 1)
    registers_per_thread = _whole(registers_per_thread, "registers_per_thread", 0)
    shared_bytes_per_block = _whole(shared_bytes_per_block, "shared_bytes_per_block", 0)
    need = "occupancy"
    warp_size = board.require("warp_size", needed_for=need)
    max_warps = board.require("max_warps_per_sm", needed_for=need)
    max_blocks = board.require("max_blocks_per_sm", needed_for=need)
    max_threads_block = board.require("max_threads_per_block", needed_for=need)
    if threads_per_block > max_threads_block:
        raise InvalidValueError(
            f"{threads_per_block} threads per block exceed the {max_threads_block} that board "
            f"{board.name!r} allows; use smaller blocks"
        )
    warps_per_block = math.ceil(threads_per_block / warp_size)
    limits: dict[str, int] = {
        "warps": max_warps // warps_per_block,
        "blocks": int(max_blocks),
    }

    if registers_per_thread > 0:
        max_regs_thread = board.max_registers_per_thread
        if max_regs_thread is not None and registers_per_thread > max_regs_thread:
            raise InvalidValueError(
                f"{registers_per_thread} registers per thread exceed the {max_regs_thread} of "
                f"board {board.name!r}; the compiler would spill instead"
            )
        regs_sm = board.require("registers_per_sm", needed_for=need)
        unit = board.require("register_alloc_unit", needed_for=need)
        granularity = board.require("register_alloc_granularity", needed_for=need)
        warp_gran = board.require("warp_alloc_granularity", needed_for=need)
        if granularity == "warp":
            # The calculator fills one block-sized register partition
            # (max registers per block) and counts how many partitions the SM has.
            partition = min(board.registers_per_block or regs_sm, regs_sm)
            regs_per_warp = _ceil_to(registers_per_thread * warp_size, unit)
            warps_fit = _floor_to(partition // regs_per_warp, warp_gran)
            limits["registers"] = (warps_fit // warps_per_block) * (regs_sm // partition)
        elif granularity == "block":
            regs_per_block = _ceil_to(
                _ceil_to(warps_per_block, warp_gran) * warp_size * registers_per_thread, unit
            )
            limits["registers"] = regs_sm // regs_per_block
        else:
            raise MissingBoardParameterError(
                f"board {board.name!r} has register_alloc_granularity {granularity!r}; expected "
                f"'warp' or 'block' in the board's entry ({BOARD_FILES})"
            )
    else:
        limits["registers"] = limits["blocks"]

    if shared_bytes_per_block > 0:
        smem_sm = board.require("shared_mem_per_sm_kb", needed_for=need) * 1024
        smem_block_max = board.require("shared_mem_per_block_kb", needed_for=need) * 1024
        if shared_bytes_per_block > smem_block_max:
            raise InvalidValueError(
                f"{shared_bytes_per_block} shared bytes per block exceed the {smem_block_max} of "
                f"board {board.name!r}"
            )
        unit = board.require("shared_mem_alloc_unit_bytes", needed_for=need)
        reserved = board.reserved_shared_mem_per_block_bytes or 0
        per_block = _ceil_to(shared_bytes_per_block + reserved, unit)
        limits["shared_memory"] = smem_sm // per_block
    else:
        limits["shared_memory"] = limits["blocks"]

    blocks = min(limits.values())
    limited_by = next(name for name in LIMITERS if limits[name] == blocks)
    active_warps = blocks * warps_per_block
    return Occupancy(
        active_blocks_per_sm=blocks,
        active_warps_per_sm=active_warps,
        occupancy=active_warps / max_warps,
        limited_by=limited_by,
        warps_per_block=warps_per_block,
        limits=limits,
    )


def wave_size(board: Board, threads_per_block: int, shared_bytes_per_block: int = 0,
              registers_per_thread: int = 0) -> int:
    """Thread blocks the whole board runs at once (one *wave*): ``sms * active_blocks_per_sm``.

    The blocks of a launch run in ``ceil(blocks / wave_size)`` waves [4]_; resident blocks
    per SM come from :func:`occupancy` (the occupancy calculator rules [2]_). A launch with
    fewer blocks than one wave leaves SMs idle, so its time does not shrink with more SMs.

    Parameters
    ----------
    board : Board or str
        The board, or its name or alias (looked up in the registry).
    threads_per_block : int
    shared_bytes_per_block : int, default 0
        Shared memory of one block (static shared memory is fixed by the source code).
    registers_per_thread : int, default 0
        0 = not limiting (the count depends on the compilation for the board).

    Raises
    ------
    MissingBoardParameterError
        If the SM count or a residency limit of the board is unknown.
    InvalidValueError
        If the configuration cannot launch on this board.
    """
    board = _as_board(board)
    sms = board.require("sms", needed_for="wave size")
    occ = occupancy(board, threads_per_block, registers_per_thread, shared_bytes_per_block)
    return int(sms) * occ.active_blocks_per_sm
