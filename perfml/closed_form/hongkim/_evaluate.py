"""Run the MWP/CWP model: every intermediate for a table of kernels on one board.

:func:`evaluate_columns` chains the equations of :mod:`._equations` over columns of
kernel inputs; :func:`evaluate` runs it for one :class:`~._kernel.HongKimKernel` and
returns a :class:`HongKimResult`.

References
----------
.. [1] S. Hong and H. Kim, "An analytical model for a GPU architecture with memory-level
   and thread-level parallelism awareness", ISCA 2009, Sec. 3.
.. [2] Seed 002 (``../shared/seeds/002_018e9370bc0d26c6.txt``), the model's slides.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Mapping

import numpy as np

from perfml.closed_form.hongkim._equations import (
    active_sms,
    bw_per_warp,
    comp_cycles,
    computation_warp_parallelism,
    cycles_per_instruction,
    departure_delay,
    exec_cycles_app,
    mem_cycles,
    mem_latency,
    mem_latency_uncoal,
    mem_weights,
    memory_warp_parallelism,
    mwp_peak_bw,
    mwp_without_bw,
    repetitions,
    resident_blocks_per_sm,
    synch_cost,
)
from perfml.closed_form.hongkim._hardware import HongKimHardware
from perfml.closed_form.hongkim._kernel import HongKimKernel

__all__ = ["HongKimResult", "evaluate", "evaluate_columns"]

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


def evaluate_columns(cols: Mapping[str, np.ndarray], hw: HongKimHardware) -> dict[str, np.ndarray]:
    """Vectorized model: kernel input columns (float arrays) -> every intermediate."""
    coal, uncoal = cols["coal_mem_insts"], cols["uncoal_mem_insts"]
    mem_insts = coal + uncoal
    total_insts = cols["comp_insts"] + mem_insts
    warps_per_block = np.ceil(cols["threads_per_block"] / hw.threads_per_warp)
    sms = active_sms(hw.n_sm, cols["blocks"])
    blocks_per_sm = resident_blocks_per_sm(cols["blocks"], cols["active_blocks_per_sm"], sms)
    n = blocks_per_sm * warps_per_block  # N = #Active_warps_per_SM

    w_u, w_c = mem_weights(coal, uncoal)
    l_u = mem_latency_uncoal(hw.mem_ld, cols["uncoal_per_mw"], hw.departure_del_uncoal)
    l_c = np.full_like(l_u, hw.mem_ld)  # Mem_L_Coal = Mem_LD (line 248)
    m_l = mem_latency(l_u, l_c, w_u, w_c)
    dep = departure_delay(hw.departure_del_uncoal, hw.departure_del_coal,
                          cols["uncoal_per_mw"], w_u, w_c)
    mwp_wo, mwp_wo_full = mwp_without_bw(m_l, dep, n)
    bw_w = bw_per_warp(hw.freq_ghz, hw.load_bytes_per_warp, m_l)
    peak = mwp_peak_bw(hw.mem_bandwidth_gbs, bw_w, sms)
    mwp = memory_warp_parallelism(mwp_wo, peak, n)
    c_cyc = comp_cycles(hw.issue_cycles, total_insts)
    m_cyc = mem_cycles(l_u, uncoal, l_c, coal)
    cwp, cwp_full = computation_warp_parallelism(m_cyc, c_cyc, n)
    rep = repetitions(cols["blocks"], blocks_per_sm, sms)
    app, case = exec_cycles_app(m_cyc, c_cyc, mem_insts, m_l, mwp, cwp, n, rep)
    sync = synch_cost(dep, mwp, cols["synch_insts"], blocks_per_sm, rep)
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
    out = evaluate_columns(cols, hardware)
    return HongKimResult(**{k: (str(v[0]) if k == "case" else float(v[0]))
                            for k, v in out.items()})

