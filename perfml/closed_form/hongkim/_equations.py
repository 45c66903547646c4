"""Equations of the Hong & Kim MWP/CWP model: pure functions, one per equation.

Every function takes floats or NumPy arrays (they broadcast) and names the slide line of
seed 002 and the paper's quantity it computes. No hardware number is written here: the
parameters come in as arguments (see :mod:`._hardware`).

References
----------
.. [1] S. Hong and H. Kim, "An analytical model for a GPU architecture with memory-level
   and thread-level parallelism awareness", Proc. 36th International Symposium on Computer
   Architecture (ISCA), pp. 152-163, 2009.
.. [2] H. Kim, "Performance Analysis Models and Tools" (slides), seed 002 of perfml
   (``../shared/seeds/002_018e9370bc0d26c6.txt``).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "CASES",
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
    "resident_blocks_per_sm",
    "exec_cycles_app",
    "synch_cost",
    "cycles_per_instruction",
]

#: ``not_enough_warps``: MWP = N and CWP = N (slide 'Case 3', line 215, formula line 272);
#: ``memory_bound``: CWP >= MWP or Comp_cycles > Mem_cycles (slide 'Case 1', line 276);
#: ``compute_bound``: MWP > CWP otherwise (slide 'Case 2', line 280).
CASES: tuple[str, ...] = ("not_enough_warps", "memory_bound", "compute_bound")

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


def resident_blocks_per_sm(blocks, active_blocks_per_sm, n_active_sms):
    """``#Active_blocks_per_SM`` of a launch: the occupancy limit, or fewer where the grid has
    fewer blocks than one full round of the active SMs holds (``ceil(#Blocks / #Active_SMs)``).

    Seed 002 defines N as the active warps per SM (line 266) and ``#Rep`` as the rounds of
    active blocks (line 268); a grid of 32 blocks on the H100's 132 SMs has one block on each
    of 32 SMs, not the 16 its occupancy would allow (which gave N = 64 warps where 4 run, and
    #Rep = 0.0625, a sixteenth of a round: helper probe, 2026-11-28).
    """
    return np.minimum(active_blocks_per_sm, np.ceil(np.asarray(blocks, dtype=float) / n_active_sms))


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

    MWP grows with the board's bandwidth (``MWP_peak_BW``), and so does this term: for a
    kernel with barriers the model's total can rise with bandwidth (dotProd, H100 -> H200,
    the same processor with more bandwidth). That is the paper's model, kept as written; the
    direction tests of ``tests/test_characterized_models.py`` hold barrier-free kernels.
    """
    return departure_delay_ * (mwp - 1.0) * synch_insts * active_blocks_per_sm * rep


def cycles_per_instruction(exec_cycles, total_insts, threads_per_block, threads_per_warp,
                           blocks, n_active_sms):
    """``CPI = Exec_cycles_app / (#Total_insts x #Threads_per_block / #Threads_per_warp
    x #Blocks / #Active_SMs)`` (seed 002 line 306): cycles per warp instruction per SM."""
    return exec_cycles / (total_insts * (threads_per_block / threads_per_warp)
                          * (blocks / n_active_sms))

