"""Hong & Kim MWP/CWP analytical model of GPU kernel execution time.

The model of S. Hong and H. Kim (ISCA 2009) estimates the cycles a kernel takes from two
kinds of parallelism in a streaming multiprocessor (SM):

* MWP, *memory warp parallelism*: how many warps can have a memory request in flight at
  once, limited by the memory latency over the departure delay between requests, by the
  share of the peak bandwidth one SM gets, and by the number of active warps N;
* CWP, *computation warp parallelism*: how many warps can compute while one warp waits
  for memory.

Comparing the two picks one of three cases (memory bound, compute bound, not enough
warps), each with its own closed form for the execution cycles.

The equations are those of the slides of seed 002
(``../shared/seeds/002_018e9370bc0d26c6.txt``, lines 189-306), which restate the paper;
the docstring of every function names the slide line and the paper's quantity. CWP and the
synchronization cost are not on the slides and come from the paper (Section 3).
The repository holds the slides only: the paper's values quoted here (GTX 280, 8800 GT)
are to be checked against the paper before they are cited elsewhere.

All equation functions accept floats or NumPy arrays (they broadcast), so one code path
serves a single kernel (:func:`evaluate`) and a table of kernels (:class:`HongKimModel`).

References
----------
.. [1] S. Hong and H. Kim, "An analytical model for a GPU architecture with memory-level
   and thread-level parallelism awareness", Proc. 36th International Symposium on Computer
   Architecture (ISCA), pp. 152-163, 2009.
.. [2] H. Kim, "Performance Analysis Models and Tools" (slides), seed 002 of perfml.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from perfml.errors import DatasetSchemaError, MissingBoardParameterError

__all__ = [
    "FEATURE_COLUMNS",
    "OPTIONAL_FEATURE_COLUMNS",
    "CASES",
    "HongKimHardware",
    "HongKimKernel",
    "HongKimResult",
    "HongKimModel",
    "evaluate",
    "mem_weights",
    "mem_latency_uncoal",
    "mem_latency",
    "departure_delay",
    "mwp_without_bw",
    "bw_per_warp",
    "mwp_peak_bw",
    "memory_warp_parallelism",
    "comp_cycles",
    "mem_cycles",
    "computation_warp_parallelism",
    "active_sms",
    "repetitions",
    "exec_cycles_app",
    "synch_cost",
    "cycles_per_instruction",
]

#: Columns :class:`HongKimModel` reads from ``X``, in the order used for a bare 2-D array.
#: All counts are per warp (= per thread: the dynamic instruction counts of one thread).
FEATURE_COLUMNS: tuple[str, ...] = (
    "comp_insts",  # #Comp_insts: non-memory instructions per warp
    "coal_mem_insts",  # #Coal_Mem_insts: coalesced global memory instructions per warp
    "uncoal_mem_insts",  # #Uncoal_Mem_insts: uncoalesced global memory instructions per warp
    "uncoal_per_mw",  # #Uncoal_per_mw: memory transactions per uncoalesced warp instruction
    "threads_per_block",  # #Threads_per_block
    "blocks",  # #Blocks in the grid
    "active_blocks_per_sm",  # #Active_blocks_per_SM (occupancy, in blocks)
)
#: Optional columns (default 0 when absent); appended after FEATURE_COLUMNS in an array.
OPTIONAL_FEATURE_COLUMNS: tuple[str, ...] = (
    "synch_insts",  # #Synch_insts: __syncthreads() per warp
)

#: The three cases of the model, named after what limits the kernel.
#: ``not_enough_warps``: MWP = N and CWP = N (slide 'Case 3', line 215, formula line 272);
#: ``memory_bound``: CWP >= MWP or Comp_cycles > Mem_cycles (slide 'Case 1', line 276);
#: ``compute_bound``: MWP > CWP otherwise (slide 'Case 2', line 280).
CASES: tuple[str, ...] = ("not_enough_warps", "memory_bound", "compute_bound")


# --------------------------------------------------------------------------- hardware


@dataclass(frozen=True)
class HongKimHardware:
    """Hardware parameters of the MWP/CWP model for one board.

    Parameters
    ----------
    mem_ld : float
        ``Mem_LD``: DRAM access latency of one memory warp instruction, in SM cycles.
    departure_del_uncoal : float
        ``Departure_del_uncoal``: cycles between two memory transactions of an uncoalesced
        warp instruction.
    departure_del_coal : float
        ``Departure_del_coal``: cycles between two coalesced warp memory requests.
    mem_bandwidth_gbs : float
        ``Mem_Bandwidth``: peak DRAM bandwidth, GB/s.
    freq_ghz : float
        ``Freq``: SM (shader) clock in GHz; also converts cycles to time.
    n_sm : int
        ``#SM``: streaming multiprocessors.
    issue_cycles : float, default 4
        ``#Issue_cycles``: cycles to issue one warp instruction (32 threads on 8 SPs of a
        GT200/G80 SM = 4 cycles, as in the paper).
    load_bytes_per_warp : float, default 128
        ``Load_bytes_per_warp``: bytes one warp memory instruction moves (32 threads x 4 B).
    threads_per_warp : int, default 32
        ``#Threads_per_warp``.
    name : str, default ""
        Board name, for messages.
    source : str, default ""
        Where the numbers came from.

    Notes
    -----
    Only ``mem_bandwidth_gbs``, ``freq_ghz``, ``n_sm`` and ``threads_per_warp`` are board
    specifications (see :meth:`from_board`); the latencies and departure delays are
    measured with microbenchmarks (as the paper did) and must be given for each board.
    :meth:`gtx280` and :meth:`geforce_8800gt` hold the values the paper used.
    """

    mem_ld: float
    departure_del_uncoal: float
    departure_del_coal: float
    mem_bandwidth_gbs: float
    freq_ghz: float
    n_sm: int
    issue_cycles: float = 4.0
    load_bytes_per_warp: float = 128.0
    threads_per_warp: int = 32
    name: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.name in ("name", "source"):
                continue
            value = getattr(self, f.name)
            if value is None or isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise MissingBoardParameterError(
                    f"HongKimHardware{self._label()}: {f.name} must be a number, found "
                    f"{value!r}; pass {f.name}=... explicitly."
                )
            if not math.isfinite(value) or value <= 0:
                raise ValueError(
                    f"HongKimHardware{self._label()}: {f.name} must be finite and > 0, "
                    f"found {value!r}."
                )

    def _label(self) -> str:
        return f" ({self.name})" if self.name else ""

    @classmethod
    def gtx280(cls, **overrides: Any) -> "HongKimHardware":
        """GeForce GTX 280 as parameterized in the paper.

        30 SMs, 1.3 GHz processor clock, 141.7 GB/s (the paper's GPU specification
        table); Mem_LD = 450 cycles, Departure_del_uncoal = 40, Departure_del_coal = 4
        cycles (the paper's model parameter table, from microbenchmarks). Keyword
        arguments override fields.
        """
        values = dict(
            mem_ld=450.0,
            departure_del_uncoal=40.0,
            departure_del_coal=4.0,
            mem_bandwidth_gbs=141.7,
            freq_ghz=1.3,
            n_sm=30,
            name="GTX-280",
            source="Hong & Kim, ISCA 2009 (GPU specification and model parameter tables)",
        )
        values.update(overrides)
        return cls(**values)

    @classmethod
    def geforce_8800gt(cls, **overrides: Any) -> "HongKimHardware":
        """GeForce 8800 GT as parameterized in the paper.

        14 SMs, 1.5 GHz processor clock, 57.6 GB/s (the paper's GPU specification
        table); Mem_LD = 420 cycles, Departure_del_uncoal = 10, Departure_del_coal = 4
        cycles (the paper's model parameter table).
        Keyword arguments override fields.
        """
        values = dict(
            mem_ld=420.0,
            departure_del_uncoal=10.0,
            departure_del_coal=4.0,
            mem_bandwidth_gbs=57.6,
            freq_ghz=1.5,
            n_sm=14,
            name="8800GT",
            source="Hong & Kim, ISCA 2009 (GPU specification and model parameter tables)",
        )
        values.update(overrides)
        return cls(**values)

    @classmethod
    def from_board(
        cls,
        board: Any,
        *,
        mem_ld: float = 450.0,
        departure_del_uncoal: float = 40.0,
        departure_del_coal: float = 4.0,
        **overrides: Any,
    ) -> "HongKimHardware":
        """Build the parameters of a perfml board.

        Takes ``n_sm`` from ``board.sms``, ``freq_ghz`` from ``board.boost_clock_mhz`` (or
        ``board.base_clock_mhz`` when no boost clock is known), ``mem_bandwidth_gbs`` from
        ``board.memory_bandwidth_gbs`` and ``threads_per_warp`` from ``board.warp_size``.
        Any object with these attributes works (e.g. a ``perfml.boards`` board).

        Parameters
        ----------
        board : object
            Board with the attributes above.
        mem_ld, departure_del_uncoal, departure_del_coal : float
            Latency parameters, which no spec sheet gives. The defaults are the paper's
            GTX 280 values (450, 40, 4 cycles; Hong & Kim 2009, see :meth:`gtx280`): measure the
            board's own values for anything newer.
        **overrides
            Any other :class:`HongKimHardware` field; an override also fills a board
            attribute that is missing.

        Raises
        ------
        MissingBoardParameterError
            If the board leaves a needed attribute empty (None) and no override is given.
        """
        name = str(getattr(board, "name", "") or overrides.get("name", "") or "")
        taken: dict[str, Any] = {}
        clock = getattr(board, "boost_clock_mhz", None)
        if clock is None:
            clock = getattr(board, "base_clock_mhz", None)
        from_spec = {
            "n_sm": (getattr(board, "sms", None), "sms"),
            "freq_ghz": (None if clock is None else clock / 1000.0,
                         "boost_clock_mhz or base_clock_mhz"),
            "mem_bandwidth_gbs": (getattr(board, "memory_bandwidth_gbs", None),
                                  "memory_bandwidth_gbs"),
            "threads_per_warp": (getattr(board, "warp_size", None), "warp_size"),
        }
        for field_name, (value, attribute) in from_spec.items():
            if field_name in overrides:
                continue
            if value is None:
                raise MissingBoardParameterError(
                    f"board {name or board!r}: the Hong & Kim model needs {attribute}, which "
                    f"the board leaves empty; fill it in the board registry or pass "
                    f"{field_name}=... to HongKimHardware.from_board."
                )
            taken[field_name] = value
        for integer in ("n_sm", "threads_per_warp"):
            if integer in taken:
                taken[integer] = int(taken[integer])
        values = dict(
            mem_ld=mem_ld,
            departure_del_uncoal=departure_del_uncoal,
            departure_del_coal=departure_del_coal,
            name=name,
            source=f"board registry ({name}); latencies passed to from_board",
        )
        values.update(taken)
        values.update(overrides)
        return cls(**values)


# ----------------------------------------------------------------------------- kernel


@dataclass(frozen=True)
class HongKimKernel:
    """Per-kernel inputs of the MWP/CWP model (counts per warp, i.e. per thread).

    Parameters
    ----------
    comp_insts : float
        ``#Comp_insts``: non-memory instructions.
    coal_mem_insts, uncoal_mem_insts : float
        ``#Coal_Mem_insts`` / ``#Uncoal_Mem_insts``: global memory instructions.
        Their sum ``#Mem_insts`` must be > 0: the model is built on memory periods.
    uncoal_per_mw : float
        ``#Uncoal_per_mw``: transactions an uncoalesced warp instruction generates (>= 1).
    threads_per_block, blocks, active_blocks_per_sm : int
        ``#Threads_per_block``, ``#Blocks``, ``#Active_blocks_per_SM``.
    synch_insts : float, default 0
        ``#Synch_insts``: barriers per warp.
    """

    comp_insts: float
    coal_mem_insts: float
    uncoal_mem_insts: float
    uncoal_per_mw: float
    threads_per_block: int
    blocks: int
    active_blocks_per_sm: int
    synch_insts: float = 0.0

    def __post_init__(self) -> None:
        _check_kernel_columns({f.name: np.asarray(getattr(self, f.name), dtype=float)
                               for f in fields(self)}, error=ValueError, where="HongKimKernel")

    @classmethod
    def from_total_insts(cls, *, total_insts: float, coal_mem_insts: float,
                         uncoal_mem_insts: float, **kwargs: Any) -> "HongKimKernel":
        """Build from ``#Total_insts`` (= #Comp_insts + #Mem_insts), as profilers count."""
        comp = total_insts - coal_mem_insts - uncoal_mem_insts
        return cls(comp_insts=comp, coal_mem_insts=coal_mem_insts,
                   uncoal_mem_insts=uncoal_mem_insts, **kwargs)

    @property
    def mem_insts(self) -> float:
        """``#Mem_insts = #Coal_Mem_insts + #Uncoal_Mem_insts``."""
        return self.coal_mem_insts + self.uncoal_mem_insts

    @property
    def total_insts(self) -> float:
        """``#Total_insts = #Comp_insts + #Mem_insts``."""
        return self.comp_insts + self.mem_insts


def _check_kernel_columns(cols: Mapping[str, np.ndarray], *, error: type[Exception],
                          where: str) -> None:
    """Raise ``error`` unless the kernel inputs are finite and inside the model's domain."""
    rules = {
        "comp_insts": (0.0, ">= 0"),
        "coal_mem_insts": (0.0, ">= 0"),
        "uncoal_mem_insts": (0.0, ">= 0"),
        "synch_insts": (0.0, ">= 0"),
        "uncoal_per_mw": (1.0, ">= 1"),
        "threads_per_block": (1.0, ">= 1"),
        "blocks": (1.0, ">= 1"),
        "active_blocks_per_sm": (1.0, ">= 1"),
    }
    for name, (low, text) in rules.items():
        if name not in cols:
            continue
        v = cols[name]
        bad = ~np.isfinite(v) | (v < low)
        if np.any(bad):
            first = np.flatnonzero(np.atleast_1d(bad))[0]
            raise error(f"{where}: {name} must be finite and {text}, found "
                        f"{np.atleast_1d(v)[first]!r} (row {first}).")
    mem = cols["coal_mem_insts"] + cols["uncoal_mem_insts"]
    if np.any(mem <= 0):
        first = np.flatnonzero(np.atleast_1d(mem <= 0))[0]
        raise error(f"{where}: coal_mem_insts + uncoal_mem_insts must be > 0 (row {first}); "
                    "the MWP/CWP model needs at least one global memory instruction per warp.")


# ------------------------------------------------------------------------- equations


def mem_weights(coal_mem_insts, uncoal_mem_insts):
    """Share of uncoalesced and coalesced memory instructions.

    ``Weight_uncoal = #Uncoal_Mem_insts / (#Uncoal_Mem_insts + #Coal_Mem_insts)`` and
    ``Weight_coal = #Coal_Mem_insts / (#Coal_Mem_insts + #Uncoal_Mem_insts)``
    (seed 002 lines 252-254; paper Sec. 3).

    Returns
    -------
    (weight_uncoal, weight_coal)
    """
    total = np.asarray(coal_mem_insts, dtype=float) + np.asarray(uncoal_mem_insts, dtype=float)
    return uncoal_mem_insts / total, coal_mem_insts / total


def mem_latency_uncoal(mem_ld, uncoal_per_mw, departure_del_uncoal):
    """``Mem_L_Uncoal = Mem_LD + (#Uncoal_per_mw - 1) x Departure_del_uncoal``.

    Latency of an uncoalesced warp instruction, whose transactions leave one every
    ``Departure_del_uncoal`` cycles (seed 002 line 246; paper Sec. 3). The latency of
    a coalesced one is ``Mem_L_Coal = Mem_LD`` (line 248).
    """
    return mem_ld + (uncoal_per_mw - 1.0) * departure_del_uncoal


def mem_latency(mem_l_uncoal, mem_l_coal, weight_uncoal, weight_coal):
    """``Mem_L = Mem_L_Uncoal x Weight_uncoal + Mem_L_Coal x Weight_coal``.

    Average memory latency of the kernel's memory instructions (seed 002 line 250).
    """
    return mem_l_uncoal * weight_uncoal + mem_l_coal * weight_coal


def departure_delay(departure_del_uncoal, departure_del_coal, uncoal_per_mw,
                    weight_uncoal, weight_coal):
    """Average delay between two warps' memory requests leaving an SM.

    ``Departure_delay = (Departure_del_uncoal x #Uncoal_per_mw) x Weight_uncoal
    + Departure_del_coal x Weight_coal`` (seed 002 line 256; paper Sec. 3).
    """
    return (departure_del_uncoal * uncoal_per_mw) * weight_uncoal \
        + departure_del_coal * weight_coal


def mwp_without_bw(mem_l, departure_delay_, n):
    """MWP when bandwidth is not the limit.

    ``MWP_Without_BW_full = Mem_L / Departure_delay`` and
    ``MWP_Without_BW = MIN(MWP_Without_BW_full, #Active_warps_per_SM)``
    (seed 002 lines 240-242 and 258-260; paper Sec. 3).

    Returns
    -------
    (mwp_without_bw, mwp_without_bw_full)
    """
    full = mem_l / departure_delay_
    return np.minimum(full, n), full


def bw_per_warp(freq_ghz, load_bytes_per_warp, mem_l):
    """``BW_per_warp = Freq x Load_bytes_per_warp / Mem_L`` in GB/s (seed 002 line 238).

    The bandwidth one warp consumes while it has a request in flight.
    """
    return freq_ghz * load_bytes_per_warp / mem_l


def mwp_peak_bw(mem_bandwidth_gbs, bw_per_warp_, n_active_sms):
    """``MWP_peak_BW = Mem_Bandwidth / (BW_per_warp x #ActiveSM)`` (seed 002 line 236).

    Warps per SM that saturate the peak bandwidth when every active SM takes an equal
    share of it (slide 'Memory System Model', line 173).
    """
    return mem_bandwidth_gbs / (bw_per_warp_ * n_active_sms)


def memory_warp_parallelism(mwp_without_bw_, mwp_peak_bw_, n):
    """``MWP = MAX(1, MIN(MWP_Without_BW, MWP_peak_BW, N))`` (seed 002 line 234, clamped).

    The slide (line 234; paper Sec. 3) writes ``MWP = MIN(MWP_Without_BW, MWP_peak_BW, N)``
    and defines MWP as the "maximum number of warps that can overlap memory accesses"
    (seed 002 line 164): a count of warps, at least the one warp whose request is in
    flight. The model's domain is therefore ``1 <= MWP <= N`` (N >= 1 always). The
    ``MIN`` alone can leave it: ``MWP_peak_BW = Mem_Bandwidth / (BW_per_warp x
    #ActiveSM)`` (line 236) drops below 1 when one warp per SM already asks for more
    than its share of the bandwidth, and ``MWP_Without_BW_full = Mem_L /
    Departure_delay`` (line 240) can too. Below 1 the equations stop meaning anything:
    the ``(MWP - 1)`` factor of Exec_cycles_app (lines 272, 276) and of the
    synchronization cost (paper Sec. 3) turns negative and subtracts computation, and a
    kernel could take a negative time (MWP = 0.64 gave -1.65e-07 ms, found by the
    Hypothesis test). The model clamps rather than raises: ``MWP = 1`` is one warp's
    requests at a time, the serial memory execution the model starts from; a kernel
    whose bandwidth share is below one warp is then modelled as latency bound (its
    bandwidth limit is underestimated, not made negative). With the clamp, ``Synch_cost
    = Departure_delay x (MWP - 1) x ... >= 0`` and every case's Exec_cycles_app is > 0.
    ``MWP_peak_BW`` and ``MWP_Without_BW`` themselves are reported unclamped.
    """
    return np.maximum(np.minimum(np.minimum(mwp_without_bw_, mwp_peak_bw_), n), 1.0)


def comp_cycles(issue_cycles, total_insts):
    """``Comp_cycles = #Issue_cycles x (#total_insts)`` (seed 002 line 264).

    Cycles one warp spends issuing all its instructions, memory ones included.
    """
    return issue_cycles * total_insts


def mem_cycles(mem_l_uncoal, uncoal_mem_insts, mem_l_coal, coal_mem_insts):
    """``Mem_cycles = Mem_L_Uncoal x #Uncoal_Mem_insts + Mem_L_Coal x #Coal_Mem_insts``.

    Cycles one warp waits on memory when nothing overlaps (seed 002 line 262).
    """
    return mem_l_uncoal * uncoal_mem_insts + mem_l_coal * coal_mem_insts


def computation_warp_parallelism(mem_cycles_, comp_cycles_, n):
    """CWP: warps that can compute during one warp's memory waiting period.

    ``CWP_full = (Mem_cycles + Comp_cycles) / Comp_cycles`` and
    ``CWP = MIN(CWP_full, N)`` (paper Sec. 3; the slides define CWP in words only,
    seed 002 line 184).

    Returns
    -------
    (cwp, cwp_full)
    """
    full = (mem_cycles_ + comp_cycles_) / comp_cycles_
    return np.minimum(full, n), full


def active_sms(n_sm, blocks):
    """``#Active_SMs = MIN(#SM, #Blocks)``: an SM without a block is idle.

    The paper uses #Active_SMs without a formula; a grid with fewer blocks than SMs
    leaves the rest idle.
    """
    return np.minimum(n_sm, blocks)


def repetitions(blocks, active_blocks_per_sm, n_active_sms):
    """``#Rep = #Blocks / (#Active_blocks_per_SM x #Active_SMs)`` (seed 002 line 268).

    How many times each SM runs a full set of active blocks; a ratio, not rounded up,
    as on the slide.
    """
    return blocks / (active_blocks_per_sm * n_active_sms)


def exec_cycles_app(mem_cycles_, comp_cycles_, mem_insts, mem_l, mwp, cwp, n, rep):
    """Cycles of the whole kernel on one SM, by the case the MWP/CWP relation selects.

    With ``Comp_p = Comp_cycles / #Mem_insts`` (computation between two memory requests):

    * MWP = N and CWP = N (not enough warps, slide line 270)::

        (Mem_cycles + Comp_cycles + Comp_p x (MWP - 1)) x #Rep        (line 272)

    * else CWP >= MWP or Comp_cycles > Mem_cycles (memory bound, line 274)::

        (Mem_cycles x N / MWP + Comp_p x (MWP - 1)) x #Rep            (line 276)

    * else MWP > CWP (compute bound, line 278)::

        (Mem_L + Comp_cycles x N) x #Rep                              (line 280)

    The conditions are tested in this order, as in the paper (Sec. 3).

    Returns
    -------
    (cycles, case)
        ``case`` is a string (array) from :data:`CASES`.

    Notes
    -----
    The model is not continuous across cases: at the compute-to-memory-bound boundary
    (CWP = MWP < N) the memory-bound formula gives about ``(MWP - 1) / MWP`` of the
    compute-bound one. The branch ``Comp_cycles > Mem_cycles`` follows the slide and the
    paper as written.
    """
    comp_p = comp_cycles_ / mem_insts
    not_enough = (mwp == n) & (cwp == n)
    memory = ~not_enough & ((cwp >= mwp) | (comp_cycles_ > mem_cycles_))
    cycles = np.where(
        not_enough,
        mem_cycles_ + comp_cycles_ + comp_p * (mwp - 1.0),
        np.where(memory,
                 mem_cycles_ * n / mwp + comp_p * (mwp - 1.0),
                 mem_l + comp_cycles_ * n),
    ) * rep
    case = np.where(not_enough, CASES[0], np.where(memory, CASES[1], CASES[2]))
    return cycles, case


def synch_cost(departure_delay_, mwp, synch_insts, active_blocks_per_sm, rep):
    """``Synch_cost = Departure_delay x (MWP - 1) x #Synch_insts x #Active_blocks_per_SM
    x #Rep`` (paper Sec. 3, synchronization effects; not on
    the slides).

    A barrier makes the last of MWP overlapping memory requests wait behind the others.
    Non-negative because :func:`memory_warp_parallelism` keeps ``MWP >= 1``.
    """
    return departure_delay_ * (mwp - 1.0) * synch_insts * active_blocks_per_sm * rep


def cycles_per_instruction(exec_cycles, total_insts, threads_per_block, threads_per_warp,
                           blocks, n_active_sms):
    """``CPI = Exec_cycles_app / (#Total_insts x #Threads_per_block / #Threads_per_warp
    x #Blocks / #Active_SMs)`` (seed 002 line 306): cycles per warp instruction per SM."""
    return exec_cycles / (total_insts * (threads_per_block / threads_per_warp)
                          * (blocks / n_active_sms))


# -------------------------------------------------------------------------- evaluate


@dataclass(frozen=True)
class HongKimResult:
    """Every intermediate of the model for one kernel (see :func:`evaluate`).

    Cycle counts are SM cycles; ``exec_cycles`` adds the synchronization cost to
    ``exec_cycles_app``; ``time_ms = exec_cycles / Freq``. ``cpi`` is computed from
    ``exec_cycles_app`` as on the slide (line 306).
    """

    n: float
    weight_uncoal: float
    weight_coal: float
    mem_l_uncoal: float
    mem_l_coal: float
    mem_l: float
    departure_delay: float
    mwp_without_bw_full: float
    mwp_without_bw: float
    bw_per_warp: float
    mwp_peak_bw: float
    mwp: float
    comp_cycles: float
    mem_cycles: float
    cwp_full: float
    cwp: float
    active_sms: float
    rep: float
    exec_cycles_app: float
    synch_cost: float
    exec_cycles: float
    cpi: float
    time_ms: float
    case: str


def _evaluate_columns(cols: Mapping[str, np.ndarray], hw: HongKimHardware) -> dict[str, np.ndarray]:
    """Vectorized model: kernel input columns (float arrays) -> every intermediate."""
    coal, uncoal = cols["coal_mem_insts"], cols["uncoal_mem_insts"]
    mem_insts = coal + uncoal
    total_insts = cols["comp_insts"] + mem_insts
    warps_per_block = np.ceil(cols["threads_per_block"] / hw.threads_per_warp)
    n = cols["active_blocks_per_sm"] * warps_per_block  # N = #Active_warps_per_SM

    w_u, w_c = mem_weights(coal, uncoal)
    l_u = mem_latency_uncoal(hw.mem_ld, cols["uncoal_per_mw"], hw.departure_del_uncoal)
    l_c = np.full_like(l_u, hw.mem_ld)  # Mem_L_Coal = Mem_LD (line 248)
    m_l = mem_latency(l_u, l_c, w_u, w_c)
    dep = departure_delay(hw.departure_del_uncoal, hw.departure_del_coal,
                          cols["uncoal_per_mw"], w_u, w_c)
    mwp_wo, mwp_wo_full = mwp_without_bw(m_l, dep, n)
    sms = active_sms(hw.n_sm, cols["blocks"])
    bw_w = bw_per_warp(hw.freq_ghz, hw.load_bytes_per_warp, m_l)
    peak = mwp_peak_bw(hw.mem_bandwidth_gbs, bw_w, sms)
    mwp = memory_warp_parallelism(mwp_wo, peak, n)
    c_cyc = comp_cycles(hw.issue_cycles, total_insts)
    m_cyc = mem_cycles(l_u, uncoal, l_c, coal)
    cwp, cwp_full = computation_warp_parallelism(m_cyc, c_cyc, n)
    rep = repetitions(cols["blocks"], cols["active_blocks_per_sm"], sms)
    app, case = exec_cycles_app(m_cyc, c_cyc, mem_insts, m_l, mwp, cwp, n, rep)
    sync = synch_cost(dep, mwp, cols["synch_insts"], cols["active_blocks_per_sm"], rep)
    total = app + sync
    return {
        "n": n, "weight_uncoal": w_u, "weight_coal": w_c, "mem_l_uncoal": l_u,
        "mem_l_coal": l_c, "mem_l": m_l, "departure_delay": dep,
        "mwp_without_bw_full": mwp_wo_full, "mwp_without_bw": mwp_wo, "bw_per_warp": bw_w,
        "mwp_peak_bw": peak, "mwp": mwp, "comp_cycles": c_cyc, "mem_cycles": m_cyc,
        "cwp_full": cwp_full, "cwp": cwp, "active_sms": sms, "rep": rep,
        "exec_cycles_app": app, "synch_cost": sync, "exec_cycles": total,
        "cpi": cycles_per_instruction(app, total_insts, cols["threads_per_block"],
                                      hw.threads_per_warp, cols["blocks"], sms),
        "time_ms": total / (hw.freq_ghz * 1e6),
        "case": case,
    }


def evaluate(kernel: HongKimKernel, hardware: HongKimHardware) -> HongKimResult:
    """Run the MWP/CWP model for one kernel on one board.

    Parameters
    ----------
    kernel : HongKimKernel
    hardware : HongKimHardware

    Returns
    -------
    HongKimResult
        Mem_L, MWP_Without_BW, BW_per_warp, MWP_peak_BW, MWP, CWP, Comp_cycles,
        Mem_cycles, #Rep, Exec_cycles_app, CPI, the time in ms and which case applied.

    References
    ----------
    Hong & Kim, ISCA 2009, Sec. 3; seed 002 lines 232-306.
    """
    cols = {k: np.atleast_1d(np.asarray(v, dtype=float)) for k, v in asdict(kernel).items()}
    out = _evaluate_columns(cols, hardware)
    return HongKimResult(**{k: (str(v[0]) if k == "case" else float(v[0]))
                            for k, v in out.items()})


# ----------------------------------------------------------------------------- model


class HongKimModel(RegressorMixin, BaseEstimator):
    """Hong & Kim MWP/CWP model as a scikit-learn regressor (kernel time in ms).

    The model is closed form: given the hardware parameters it predicts without
    training. ``fit`` validates the table, records the feature names and, only when
    ``calibrate=True``, fits one global time scale ``scale_`` (the geometric mean of
    measured / modelled time, i.e. the least-squares fit in log time). With the default
    ``calibrate=False``, ``scale_ = 1`` and the predictions are the paper's.

    Parameters
    ----------
    hardware : HongKimHardware or dict of str to HongKimHardware, default None
        One board for every row, or one per board name, in which case each row of ``X``
        names its board in column ``board_column``. None means the paper's GTX 280
        (:meth:`HongKimHardware.gtx280`).
    board_column : str, default "board"
        Column of ``X`` holding the board name when ``hardware`` is a dict.
    calibrate : bool, default False
        Fit the global time scale ``scale_`` to ``y``.

    Attributes
    ----------
    scale_ : float
        Multiplier applied to the modelled time (1.0 unless ``calibrate``).
    n_features_in_ : int
        Columns of ``X`` seen in ``fit``.
    feature_names_in_ : ndarray of str
        Their names, when ``X`` is a DataFrame.
    hardware_ : HongKimHardware or dict
        The hardware used (``hardware`` or the GTX 280 default).

    Notes
    -----
    ``X`` is a DataFrame with the columns of :data:`FEATURE_COLUMNS` (all counts per
    warp), optionally ``synch_insts``, and ``board_column`` when ``hardware`` is a dict;
    other columns are ignored. A bare 2-D array is read as :data:`FEATURE_COLUMNS`
    followed, if there is an eighth column, by ``synch_insts`` (single board only).
    ``y`` is the measured kernel time in milliseconds.

    References
    ----------
    .. [1] S. Hong and H. Kim, "An analytical model for a GPU architecture with
       memory-level and thread-level parallelism awareness", ISCA 2009, Sec. 3.

    Examples
    --------
    >>> import pandas as pd
    >>> X = pd.DataFrame({"comp_insts": [64_000], "coal_mem_insts": [4],
    ...     "uncoal_mem_insts": [14_260], "uncoal_per_mw": [2], "threads_per_block": [256],
    ...     "blocks": [585], "active_blocks_per_sm": [1]})
    >>> HongKimModel().fit(X).predict(X).round(1)  # GTX 280 of the paper
    array([136.9])
    """

    def __init__(self, *, hardware=None, board_column="board", calibrate=False):
        self.hardware = hardware
        self.board_column = board_column
        self.calibrate = calibrate

    # -- helpers

    def _resolve_hardware(self):
        hw = HongKimHardware.gtx280() if self.hardware is None else self.hardware
        if isinstance(hw, HongKimHardware):
            return hw
        if isinstance(hw, Mapping) and hw and all(
                isinstance(v, HongKimHardware) for v in hw.values()):
            return dict(hw)
        raise TypeError(
            "HongKimModel: hardware must be None, a HongKimHardware or a non-empty dict of "
            f"board name -> HongKimHardware, found {type(hw).__name__}."
        )

    def _columns(self, X, hw) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
        """Kernel columns as float arrays, plus board names when ``hw`` is a dict."""
        if isinstance(X, pd.DataFrame):
            missing = [c for c in FEATURE_COLUMNS if c not in X.columns]
            if isinstance(hw, dict) and self.board_column not in X.columns:
                missing.append(self.board_column)
            if missing:
                raise DatasetSchemaError(
                    f"HongKimModel: X lacks columns {missing}; expected {list(FEATURE_COLUMNS)}"
                    f" (optional {list(OPTIONAL_FEATURE_COLUMNS)}), counts per warp."
                )
            cols = {}
            for c in FEATURE_COLUMNS + OPTIONAL_FEATURE_COLUMNS:
                if c not in X.columns:
                    cols[c] = np.zeros(len(X))
                    continue
                try:
                    cols[c] = X[c].to_numpy(dtype=float)
                except (TypeError, ValueError) as exc:
                    raise DatasetSchemaError(
                        f"HongKimModel: column {c!r} must be numeric ({exc})."
                    ) from None
            boards = X[self.board_column].astype(str).to_numpy() if isinstance(hw, dict) else None
        else:
            if isinstance(hw, dict):
                raise DatasetSchemaError(
                    "HongKimModel: with one hardware per board, X must be a DataFrame with "
                    f"a {self.board_column!r} column."
                )
            arr = np.asarray(X, dtype=float)
            width = len(FEATURE_COLUMNS)
            if arr.ndim != 2 or arr.shape[1] not in (width, width + 1):
                raise DatasetSchemaError(
                    f"HongKimModel: a bare array X must be 2-D with {width} or {width + 1} "
                    f"columns {list(FEATURE_COLUMNS + OPTIONAL_FEATURE_COLUMNS)}, found "
                    f"shape {arr.shape}; pass a DataFrame to name the columns."
                )
            cols = {c: arr[:, i] for i, c in enumerate(FEATURE_COLUMNS)}
            cols["synch_insts"] = arr[:, width] if arr.shape[1] > width else np.zeros(len(arr))
            boards = None
        if len(cols["blocks"]) == 0:
            raise DatasetSchemaError("HongKimModel: X has no rows.")
        _check_kernel_columns(cols, error=DatasetSchemaError, where="HongKimModel")
        return cols, boards

    def _evaluate(self, X, hw) -> dict[str, np.ndarray]:
        cols, boards = self._columns(X, hw)
        if boards is None:
            return _evaluate_columns(cols, hw)
        unknown = sorted(set(boards) - set(hw))
        if unknown:
            raise DatasetSchemaError(
                f"HongKimModel: boards {unknown} in column {self.board_column!r} have no "
                f"hardware; known: {sorted(hw)}. Add them to the hardware dict."
            )
        out: dict[str, np.ndarray] = {}
        for name in np.unique(boards):
            rows = np.flatnonzero(boards == name)
            part = _evaluate_columns({k: v[rows] for k, v in cols.items()}, hw[name])
            for key, values in part.items():
                if key not in out:
                    out[key] = np.empty(len(boards), dtype=values.dtype if key != "case"
                                        else object)
                out[key][rows] = values
        return out

    # -- estimator API

    def fit(self, X, y=None):
        """Validate ``X`` (and ``y``) and, if ``calibrate``, fit ``scale_``.

        Parameters
        ----------
        X : DataFrame of shape (n_kernels, n_columns)
            Kernel inputs, see the class Notes.
        y : array-like of shape (n_kernels,), default None
            Measured times in ms; required when ``calibrate=True``.

        Returns
        -------
        self
        """
        hw = self._resolve_hardware()
        if isinstance(X, pd.DataFrame):
            self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.n_features_in_ = int(np.shape(X)[1]) if np.ndim(X) == 2 else 0
        out = self._evaluate(X, hw)
        scale = 1.0
        if y is not None:
            y = np.asarray(y, dtype=float).ravel()
            if len(y) != len(out["time_ms"]):
                raise DatasetSchemaError(
                    f"HongKimModel: y has {len(y)} values for {len(out['time_ms'])} rows of X."
                )
            if not np.all(np.isfinite(y)) or np.any(y <= 0):
                raise DatasetSchemaError(
                    "HongKimModel: y must be measured times in ms, finite and > 0."
                )
        if self.calibrate:
            if y is None:
                raise DatasetSchemaError(
                    "HongKimModel: calibrate=True needs measured times y (ms) in fit."
                )
            scale = float(np.exp(np.mean(np.log(y) - np.log(out["time_ms"]))))
        self.scale_ = scale
        self.hardware_ = hw
        return self

    def predict(self, X):
        """Predicted kernel time in milliseconds.

        Parameters
        ----------
        X : DataFrame of shape (n_kernels, n_columns)

        Returns
        -------
        ndarray of shape (n_kernels,)
        """
        check_is_fitted(self, "scale_")
        return self._evaluate(X, self.hardware_)["time_ms"] * self.scale_

    def decompose(self, X) -> pd.DataFrame:
        """Every intermediate of the model (MWP, CWP, case, cycles...) per row of ``X``.

        The columns are the fields of :class:`HongKimResult`; ``time_ms`` is before
        ``scale_``. The index is that of ``X`` when it is a DataFrame.
        """
        check_is_fitted(self, "scale_")
        out = self._evaluate(X, self.hardware_)
        index = X.index if isinstance(X, pd.DataFrame) else None
        return pd.DataFrame(out, index=index)
