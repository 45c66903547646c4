"""Tests of the Hong & Kim MWP/CWP model (perfml.closed_form.hongkim).

Where the expected numbers come from:

* The worked table of seed 002 (../shared/seeds/002_018e9370bc0d26c6.txt, slide "Previous
  Performance Tuning Example", header line 311, rows lines 312-322), transcribed into
  perfml/data/hongkim_worked_table.toml with each row's line number.
* Hand computations from the equations of the slides (lines 232-306) for small kernels;
  the arithmetic is written next to each expected value.

The seed gives no hardware parameters for the table. They are determined from ONE row,
line 312 (cuda.cu), in ``test_table_parameters_determined_from_row_312`` (see the comment
block "Parameters of the worked table"); the other ten rows are then checked with those
parameters unchanged. The two cuda_vecpack rows (lines 315, 316) are not reproducible from
the table's inputs; their MWP_peak_BW, CWP and CPI checks are strict expected failures,
with the reason.
"""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GroupKFold, cross_val_score

from perfml.errors import DatasetSchemaError, MissingBoardParameterError
from perfml.closed_form._hongkim_worked_table import load_hongkim_worked_table
from perfml.closed_form.hongkim import (
    CASES,
    FEATURE_COLUMNS,
    HongKimHardware,
    HongKimKernel,
    HongKimModel,
    evaluate,
)

ROWS = {row.line: row for row in load_hongkim_worked_table()}

# --------------------------------------------------------------------------------------
# Parameters of the worked table, determined from row 312 (cuda.cu) only.
#
# 1. N. The CWP column reads 8 in every row whose CWP_full exceeds 8 (row 312: 22.75),
#    also where the Occupancy column reads 0.5 or 0.75 (16 or 24 of the 32 warp slots of
#    a GT200 SM). The table was therefore computed with N = 8 active warps per SM: one
#    256-thread block (#Active_blocks_per_SM = 1). The Occupancy column is not used. In
#    the memory-bound case CPI does not depend on this (N/MWP x #Rep is independent of
#    #Active_blocks_per_SM), which is why rows with different occupancy share a CPI.
# 2. Mem_L. With N = 8 and one block per SM, CPI = (Mem_cycles/MWP + Comp_p (MWP-1)/8) /
#    #Total_insts (line 276 over line 306). CPI 14.5 (3 digits) and MWP 6 give
#    Mem_L in [478.2, 481.5] cycles (#Issue_cycles = 4, the GT200 value). MWP_peak_BW
#    13.62 with the paper's GTX 280 (141.7 GB/s, 1.3 GHz, 30 SMs) and 128 B per warp
#    gives Mem_L in [479.6, 480.0]. Both hold 480: Mem_L = 480 cycles.
# 3. Departure_delay. MWP = 6 is below MWP_peak_BW (13.62) and N (8), so it is
#    MWP_Without_BW = Mem_L / Departure_delay: Departure_delay = 80 cycles.
# 4. Split. Only Mem_L = Mem_LD + (#Uncoal_per_mw - 1) Departure_del_uncoal = 480 and
#    Departure_delay ~ Departure_del_uncoal x #Uncoal_per_mw = 80 are identifiable (row
#    312 has 4 coalesced of 14264 memory instructions). Keeping the paper's GTX 280
#    Departure_del_uncoal = 40 and Departure_del_coal = 4 gives #Uncoal_per_mw = 2 and
#    Mem_LD = 440 (the paper's GTX 280 value is 450).
# Everything else is the paper's GTX 280: HongKimHardware.gtx280().
# --------------------------------------------------------------------------------------
FIT_LINE = 312
TABLE_HARDWARE = HongKimHardware.gtx280(mem_ld=440.0)
TABLE_UNCOAL_PER_MW = 2
TABLE_ACTIVE_BLOCKS_PER_SM = 1

# The table prints MWP_peak_BW, MWP and CWP with at most 2 decimals: equal means within
# half a unit of the second decimal (inclusive: 141.7 x 480 / 4992 = 13.625 exactly sits
# on the rounding boundary of the printed 13.62). CPI: the requirement is 10%; the rows
# reproduced agree to 0.1%, so 1% is asserted.
PRINT_TOL = 0.005 * (1 + 1e-9)
CPI_REL = 0.01

VECPACK_REASON = (
    "cuda_vecpack rows (lines 315-316) are not reproducible from the table's inputs: with "
    "the hardware of row 312 (all-uncoalesced, Mem_L = 480) the equations give "
    "MWP_peak_BW = 13.62, CWP = 8 (CWP_full = 9.64) and the memory-bound CPI 5.76, while "
    "the table prints 6, {cwp} and {cpi}. The printed CWP implies Comp_cycles of "
    "{issue:.1f} cycles per instruction instead of 4 (an instruction mix the table does "
    "not give), and 6 for MWP_peak_BW would need Load_bytes_per_warp ~ 291 B, no access "
    "size; see test_vecpack_rows_are_consistent_with_their_own_cwp."
)


def _implied_issue_cycles(row) -> float:
    """#Issue_cycles that makes CWP_full equal the row's printed CWP (Mem_L = 480)."""
    mem = 480.0 * (row.uncoal_mem_insts + row.coal_mem_insts)
    return mem / ((row.cwp - 1.0) * row.total_insts)


def _table_kernel(row, **overrides) -> HongKimKernel:
    values = dict(
        total_insts=row.total_insts,
        coal_mem_insts=row.coal_mem_insts,
        uncoal_mem_insts=row.uncoal_mem_insts,
        uncoal_per_mw=TABLE_UNCOAL_PER_MW,
        threads_per_block=row.threads_per_block,
        blocks=row.blocks,
        active_blocks_per_sm=TABLE_ACTIVE_BLOCKS_PER_SM,
    )
    values.update(overrides)
    return HongKimKernel.from_total_insts(**values)


def test_worked_table_matches_seed_lines():
    """Every transcribed row's numbers appear, in order, on its line of seed 002."""
    from pathlib import Path

    seed = Path(__file__).resolve().parents[2] / "shared" / "seeds" / "002_018e9370bc0d26c6.txt"
    if not seed.exists():
        pytest.skip(f"seed file not found at {seed}")
    lines = seed.read_text(encoding="utf-8").splitlines()
    assert lines[310].startswith("Name of program\tThreads/Block")  # header, line 311
    assert len(ROWS) == 11
    for row in ROWS.values():
        cells = lines[row.line - 1].split("\t")
        assert cells[0] == row.name
        printed = [float(c) for c in cells[1:]]
        ours = [row.threads_per_block, row.blocks, row.total_insts, row.coal_mem_insts,
                row.uncoal_mem_insts, row.occupancy, row.mwp_peak_bw, row.mwp, row.cwp,
                row.model_cpi, row.estimated_gflops]
        assert printed == ours, f"line {row.line}"


def test_table_parameters_determined_from_row_312():
    """Re-derive Mem_L, Departure_delay and N from row 312 (see the comment block)."""
    row = ROWS[FIT_LINE]
    mem_insts = row.coal_mem_insts + row.uncoal_mem_insts
    warps_per_block = row.threads_per_block // 32
    n = warps_per_block * TABLE_ACTIVE_BLOCKS_PER_SM
    comp_p = 4 * row.total_insts / mem_insts

    def mem_l_from_cpi(cpi: float) -> float:
        return (cpi * row.total_insts - comp_p * (row.mwp - 1) / n) * row.mwp / mem_insts

    lo_cpi, hi_cpi = mem_l_from_cpi(14.45), mem_l_from_cpi(14.55)
    assert 478 < lo_cpi < 480 < hi_cpi < 482

    hw = HongKimHardware.gtx280()
    per_mem_l = hw.mem_bandwidth_gbs / (hw.freq_ghz * hw.load_bytes_per_warp * hw.n_sm)
    lo_bw, hi_bw = 13.615 / per_mem_l, 13.625 / per_mem_l
    assert lo_bw < 480 <= hi_bw + 1e-9

    assert 480 / row.mwp == 80  # Departure_delay
    # CWP_full of row 312 with Mem_L = 480 is far above 8, so CWP = 8 = N.
    cwp_full = (480 * mem_insts + 4 * row.total_insts) / (4 * row.total_insts)
    assert cwp_full == pytest.approx(22.75, abs=0.01)
    assert row.cwp == n == 8

    res = evaluate(_table_kernel(row), TABLE_HARDWARE)
    assert res.mem_l == pytest.approx(480, abs=0.02)
    assert res.departure_delay == pytest.approx(80, abs=0.03)
    assert res.n == 8
    assert res.case == "memory_bound"
    assert res.mwp_peak_bw == pytest.approx(row.mwp_peak_bw, abs=PRINT_TOL)
    assert res.mwp == pytest.approx(row.mwp, abs=PRINT_TOL)
    assert res.cwp == pytest.approx(row.cwp, abs=PRINT_TOL)
    assert res.cpi == pytest.approx(row.model_cpi, rel=CPI_REL)


def _check_cases():
    for line, row in ROWS.items():
        if line == FIT_LINE:
            continue
        for quantity in ("mwp_peak_bw", "mwp", "cwp", "model_cpi"):
            marks = ()
            if row.name.startswith("cuda_vecpack") and row.cwp != 8 and quantity != "mwp":
                reason = VECPACK_REASON.format(cwp=row.cwp, cpi=row.model_cpi,
                                               issue=_implied_issue_cycles(row))
                marks = (pytest.mark.xfail(strict=True, reason=reason),)
            yield pytest.param(line, quantity, marks=marks, id=f"line{line}-{quantity}")


@pytest.mark.parametrize(("line", "quantity"), list(_check_cases()))
def test_worked_table_rows(line, quantity):
    """Rows other than 312 with the parameters of row 312, unchanged."""
    row = ROWS[line]
    res = evaluate(_table_kernel(row), TABLE_HARDWARE)
    expected = getattr(row, quantity)
    if quantity == "model_cpi":
        assert res.cpi == pytest.approx(expected, rel=CPI_REL)
    else:
        assert getattr(res, quantity) == pytest.approx(expected, abs=PRINT_TOL)


@pytest.mark.parametrize("line", [315, 316])
def test_vecpack_rows_are_consistent_with_their_own_cwp(line):
    """Not a reproduction: evidence for the expected failures above.

    Taking #Issue_cycles from the row's own printed CWP (10.6 and 13.4 cycles instead of
    4), the same equations put the row in the compute-bound case (MWP 6 > CWP) and give
    its printed CPI to 0.5%. So the table's CWP and CPI agree with each other and with the
    model; what the table lacks is the instruction mix behind Comp_cycles.
    """
    row = ROWS[line]
    issue = _implied_issue_cycles(row)
    res = evaluate(_table_kernel(row), replace(TABLE_HARDWARE, issue_cycles=issue))
    assert res.cwp == pytest.approx(row.cwp, abs=PRINT_TOL)
    assert res.mwp == pytest.approx(row.mwp, abs=PRINT_TOL)
    assert res.case == "compute_bound"
    assert res.cpi == pytest.approx(row.model_cpi, rel=0.005)


# --------------------------------------------------------------------------------------
# Hand-computed cases. Hardware: Mem_LD 100, Departure_del_uncoal 20, Departure_del_coal
# 10, 12.8 GB/s, 1 GHz, 1 SM, 4 issue cycles, 128 B per warp. Then for a coalesced kernel
# Mem_L = 100, BW_per_warp = 1 x 128 / 100 = 1.28 GB/s, MWP_peak_BW = 12.8 / 1.28 = 10.
# Kernels: 256 threads per block (8 warps), 2 blocks, 1 active block per SM: N = 8,
# #Active_SMs = 1, #Rep = 2 / (1 x 1) = 2.
# --------------------------------------------------------------------------------------
HAND = HongKimHardware(mem_ld=100.0, departure_del_uncoal=20.0, departure_del_coal=10.0,
                       mem_bandwidth_gbs=12.8, freq_ghz=1.0, n_sm=1, issue_cycles=4.0,
                       load_bytes_per_warp=128.0, name="hand")


def _hand_kernel(**kw) -> HongKimKernel:
    values = dict(comp_insts=10, coal_mem_insts=10, uncoal_mem_insts=0, uncoal_per_mw=1,
                  threads_per_block=256, blocks=2, active_blocks_per_sm=1)
    values.update(kw)
    return HongKimKernel(**values)


def test_hand_memory_bound_cwp_above_mwp():
    # Departure_del_coal 25: MWP_Without_BW = 100 / 25 = 4; MWP = min(4, 10, 8) = 4.
    # Comp_cycles = 4 x 20 = 80; Mem_cycles = 100 x 10 = 1000;
    # CWP_full = 1080 / 80 = 13.5, CWP = 8 > MWP: memory bound (line 276).
    # Exec = (1000 x 8/4 + 80/10 x (4-1)) x 2 = (2000 + 24) x 2 = 4048 cycles.
    # CPI = 4048 / (20 x 256/32 x 2/1) = 4048 / 320 = 12.65; time = 4048 cycles / 1 GHz.
    hw = replace(HAND, departure_del_coal=25.0)
    res = evaluate(_hand_kernel(), hw)
    assert (res.n, res.mwp_without_bw, res.mwp, res.cwp) == (8, 4, 4, 8)
    assert res.mwp_peak_bw == pytest.approx(10)
    assert (res.comp_cycles, res.mem_cycles, res.cwp_full) == (80, 1000, 13.5)
    assert res.case == "memory_bound"
    assert res.exec_cycles_app == pytest.approx(4048)
    assert res.cpi == pytest.approx(12.65)
    assert res.time_ms == pytest.approx(4048e-6)


def test_hand_mwp_equal_cwp_takes_memory_formula():
    # Departure_del_coal 25: MWP = 4 (as above). 88 comp + 12 coalesced insts:
    # Comp_cycles = 4 x 100 = 400, Mem_cycles = 1200, CWP_full = 1600/400 = 4 = MWP < N.
    # CWP >= MWP: memory bound. Exec = (1200 x 8/4 + 400/12 x 3) x 2 = (2400 + 100) x 2
    # = 5000; CPI = 5000 / (100 x 8 x 2) = 3.125.
    hw = replace(HAND, departure_del_coal=25.0)
    res = evaluate(_hand_kernel(comp_insts=88, coal_mem_insts=12), hw)
    assert res.mwp == res.cwp == 4
    assert res.case == "memory_bound"
    assert res.exec_cycles_app == pytest.approx(5000)
    assert res.cpi == pytest.approx(3.125)


def test_hand_compute_bound():
    # MWP_Without_BW = 100/10 = 10 -> min(10, N) = 8; MWP = min(8, 10, 8) = 8 = N.
    # 90 comp + 10 coalesced: Comp_cycles = 400, Mem_cycles = 1000, CWP = 1400/400 = 3.5.
    # Not 'not enough warps' (CWP != N); CWP < MWP and Comp < Mem: compute bound (line 280)
    # Exec = (Mem_L + Comp_cycles x N) x #Rep = (100 + 400 x 8) x 2 = 6600;
    # CPI = 6600 / (100 x 8 x 2) = 4.125.
    res = evaluate(_hand_kernel(comp_insts=90), HAND)
    assert (res.mwp, res.cwp) == (8, 3.5)
    assert res.case == "compute_bound"
    assert res.exec_cycles_app == pytest.approx(6600)
    assert res.cpi == pytest.approx(4.125)


def test_hand_not_enough_warps():
    # 64 threads per block: N = 2. MWP = min(min(10, 2), 10, 2) = 2;
    # CWP_full = (1000 + 80)/80 = 13.5 -> CWP = 2. MWP = CWP = N: line 272.
    # Exec = (1000 + 80 + 80/10 x (2-1)) x 2 = 2176; CPI = 2176 / (20 x 2 x 2) = 27.2.
    res = evaluate(_hand_kernel(threads_per_block=64), HAND)
    assert res.n == res.mwp == res.cwp == 2
    assert res.case == "not_enough_warps"
    assert res.exec_cycles_app == pytest.approx(2176)
    assert res.cpi == pytest.approx(27.2)


def test_hand_comp_gt_mem_branch_follows_the_slide():
    # 990 comp + 10 coalesced: Comp_cycles = 4000 > Mem_cycles = 1000, CWP = 1.25 < MWP = 8.
    # Line 274 sends Comp_cycles > Mem_cycles to the memory formula:
    # Exec = (1000 x 8/8 + 4000/10 x 7) x 2 = (1000 + 2800) x 2 = 7600.
    res = evaluate(_hand_kernel(comp_insts=990), HAND)
    assert res.cwp == pytest.approx(1.25)
    assert res.case == "memory_bound"
    assert res.exec_cycles_app == pytest.approx(7600)


def test_hand_uncoalesced_weights_and_departure_delay():
    # 10 coalesced + 10 uncoalesced with 4 transactions each:
    # Weight_uncoal = Weight_coal = 0.5; Mem_L_Uncoal = 100 + 3 x 20 = 160 (line 246);
    # Mem_L = 0.5 x 160 + 0.5 x 100 = 130 (line 250);
    # Departure_delay = 20 x 4 x 0.5 + 10 x 0.5 = 45 (line 256);
    # MWP_Without_BW_full = 130/45; Mem_cycles = 160 x 10 + 100 x 10 = 2600 (line 262);
    # BW_per_warp = 128/130 GB/s; MWP_peak_BW = 12.8 x 130/128 = 13 (lines 236-238).
    res = evaluate(_hand_kernel(uncoal_mem_insts=10, uncoal_per_mw=4), HAND)
    assert (res.weight_uncoal, res.weight_coal) == (0.5, 0.5)
    assert (res.mem_l_uncoal, res.mem_l_coal, res.mem_l) == (160, 100, 130)
    assert res.departure_delay == pytest.approx(45)
    assert res.mwp_without_bw_full == pytest.approx(130 / 45)
    assert res.mwp == pytest.approx(130 / 45)
    assert res.mem_cycles == 2600
    assert res.bw_per_warp == pytest.approx(128 / 130)
    assert res.mwp_peak_bw == pytest.approx(13)


def test_hand_bandwidth_limits_mwp():
    # 3.2 GB/s: MWP_peak_BW = 3.2 x 100 / 128 = 2.5 < MWP_Without_BW (8): MWP = 2.5.
    hw = replace(HAND, mem_bandwidth_gbs=3.2)
    res = evaluate(_hand_kernel(), hw)
    assert res.mwp == pytest.approx(2.5)


def test_hand_synchronization_cost_and_active_sms():
    # As test_hand_memory_bound_cwp_above_mwp plus 3 barriers: Synch_cost =
    # Departure_delay x (MWP-1) x #Synch_insts x #Active_blocks_per_SM x #Rep
    # = 25 x 3 x 3 x 1 x 2 = 450 (paper Sec. 3.7); CPI stays that of Exec_cycles_app.
    hw = replace(HAND, departure_del_coal=25.0)
    res = evaluate(_hand_kernel(synch_insts=3), hw)
    assert res.synch_cost == pytest.approx(450)
    assert res.exec_cycles == pytest.approx(4048 + 450)
    assert res.cpi == pytest.approx(12.65)
    # 10 blocks on 30 SMs: 10 active SMs, #Rep = 10 / (1 x 10) = 1.
    res = evaluate(_hand_kernel(blocks=10), replace(HAND, n_sm=30))
    assert (res.active_sms, res.rep) == (10, 1)


def test_a_grid_smaller_than_one_round_holds_its_own_blocks_per_sm():
    """32 blocks on 132 SMs with room for 16 per SM: one block on each of 32 SMs, so N is one
    block's warps and #Rep one round (seed 002 lines 266, 268), not N = 16 blocks' warps and a
    sixteenth of a round."""
    hw = replace(HAND, n_sm=132)
    res = evaluate(_hand_kernel(blocks=32, active_blocks_per_sm=16), hw)
    assert (res.active_sms, res.n, res.rep) == (32, 8, 1)
    # 300 blocks: ceil(300 / 132) = 3 per SM, under the occupancy limit of 16
    res = evaluate(_hand_kernel(blocks=300, active_blocks_per_sm=16), hw)
    assert (res.active_sms, res.n) == (132, 24) and res.rep == pytest.approx(300 / (3 * 132))
    # a full grid keeps the occupancy limit
    res = evaluate(_hand_kernel(blocks=132 * 16 * 4, active_blocks_per_sm=16), hw)
    assert (res.n, res.rep) == (128, 4)


def test_kernel_without_memory_instructions_is_rejected():
    with pytest.raises(ValueError, match="at least one global memory instruction"):
        _hand_kernel(coal_mem_insts=0)


# --------------------------------------------------------------------------------------
# Properties (hypothesis)
# --------------------------------------------------------------------------------------
hardware_st = st.builds(
    HongKimHardware,
    mem_ld=st.floats(50, 1000),
    departure_del_uncoal=st.floats(1, 100),
    departure_del_coal=st.floats(1, 40),
    mem_bandwidth_gbs=st.floats(5, 3000),
    freq_ghz=st.floats(0.5, 2.5),
    n_sm=st.integers(1, 150),
    issue_cycles=st.floats(1, 8),
)


@st.composite
def kernel_st(draw):
    coal = draw(st.integers(0, 20_000))
    uncoal = draw(st.integers(0 if coal else 1, 20_000))
    return HongKimKernel(
        comp_insts=draw(st.integers(0, 1_000_000)),
        coal_mem_insts=coal,
        uncoal_mem_insts=uncoal,
        uncoal_per_mw=draw(st.integers(1, 32)),
        threads_per_block=draw(st.integers(1, 1024)),
        blocks=draw(st.integers(1, 100_000)),
        active_blocks_per_sm=draw(st.integers(1, 16)),
        synch_insts=draw(st.integers(0, 100)),
    )


# MWP below 1 (issue 9): Mem_L / Departure_delay = 64 / 100 = 0.64 warps with one warp
# per SM (N = 1). Before the clamp of memory_warp_parallelism this gave
# Exec_cycles_app = 64 x 1/0.64 + 1 x (0.64 - 1) = 99.64 and Synch_cost = 100 x (0.64 - 1)
# x 3 = -108 cycles: -8.36 cycles, a time of -8.36e-06 ms.
MWP_064_KERNEL = HongKimKernel(comp_insts=0, coal_mem_insts=0, uncoal_mem_insts=1,
                               uncoal_per_mw=1, threads_per_block=1, blocks=1,
                               active_blocks_per_sm=1, synch_insts=3)
MWP_064_HARDWARE = HongKimHardware(mem_ld=64.0, departure_del_uncoal=100.0,
                                   departure_del_coal=1.0, mem_bandwidth_gbs=5.0,
                                   freq_ghz=1.0, n_sm=1, issue_cycles=1.0)
# The example Hypothesis shrank to on the old code (MWP = 50/67 = 0.746, -1.25e-06 ms).
SHRUNK_KERNEL = replace(MWP_064_KERNEL, synch_insts=4)
SHRUNK_HARDWARE = HongKimHardware(mem_ld=50.0, departure_del_uncoal=67.0,
                                  departure_del_coal=1.0, mem_bandwidth_gbs=5.0,
                                  freq_ghz=1.0, n_sm=1, issue_cycles=1.0)


@settings(max_examples=300, deadline=None)
@given(kernel=kernel_st(), hw=hardware_st)
@example(kernel=MWP_064_KERNEL, hw=MWP_064_HARDWARE)
@example(kernel=SHRUNK_KERNEL, hw=SHRUNK_HARDWARE)
def test_property_bounds(kernel, hw):
    res = evaluate(kernel, hw)
    assert 1 <= res.mwp <= res.n  # MWP is a number of warps (seed 002 line 164)
    assert 1 <= res.cwp <= res.n  # CWP_full = (Mem + Comp) / Comp >= 1
    assert res.synch_cost >= 0
    assert res.cpi > 0 and res.exec_cycles_app > 0 and res.time_ms > 0
    assert res.case in CASES


def test_mwp_below_one_is_clamped_to_one():
    # Mem_L / Departure_delay = 64 / 100 = 0.64 = MWP_Without_BW_full; MWP_peak_BW =
    # 5 x 64 / (1 x 128 x 1) = 2.5; N = 1. Clamped MWP = 1 = N and CWP = min(65/1, 1) = 1
    # = N: not enough warps (line 272): Mem_cycles + Comp_cycles + Comp_p x 0 = 64 + 1 = 65
    # cycles; Synch_cost = 100 x (1 - 1) x 3 = 0; time = 65 cycles / 1 GHz = 6.5e-05 ms.
    res = evaluate(MWP_064_KERNEL, MWP_064_HARDWARE)
    assert res.mwp_without_bw_full == pytest.approx(0.64)
    assert res.mwp_without_bw == pytest.approx(0.64)  # reported unclamped
    assert res.mwp == 1.0
    assert res.synch_cost == 0.0
    assert res.case == "not_enough_warps"
    assert res.exec_cycles == pytest.approx(65)
    assert res.time_ms == pytest.approx(6.5e-05)
    assert res.time_ms >= 0


def test_bandwidth_share_below_one_warp_is_clamped():
    # MWP_peak_BW below 1: 0.1 GB/s (outside the property strategy) on the hand board:
    # MWP_peak_BW = 0.1 x 100 / 128 = 0.078 warps; MWP = 1, not 0.078.
    hw = replace(HAND, mem_bandwidth_gbs=0.1)
    res = evaluate(_hand_kernel(synch_insts=2), hw)
    assert res.mwp_peak_bw == pytest.approx(0.1 * 100 / 128)
    assert res.mwp == 1.0 and res.synch_cost == 0.0 and res.time_ms > 0


def test_suite_hypothesis_profile_is_derandomized():
    """tests/conftest.py loads the "ci" profile unless HYPOTHESIS_PROFILE names another."""
    import os

    current = settings()
    if os.environ.get("HYPOTHESIS_PROFILE", "ci") == "ci":
        assert current.derandomize is True
        assert current.deadline is None and current.print_blob is True
    # An explicit @settings(...) of a property test keeps the profile's derandomize.
    assert settings(max_examples=3).derandomize is current.derandomize
    assert settings.get_profile("dev").derandomize is False


def _regime(res) -> str:
    """The case, with the 'Comp_cycles > Mem_cycles' part of line 274 kept apart."""
    if res.case == "memory_bound" and res.cwp < res.mwp:
        return "comp_gt_mem"
    return res.case


@settings(max_examples=300, deadline=None)
@given(kernel=kernel_st(), hw=hardware_st, factor=st.integers(2, 8))
def test_property_more_memory_insts_never_reduce_cycles_within_a_case(kernel, hw, factor):
    """Scaling both memory instruction counts by ``factor`` (same access mix, so the same
    Mem_L, Departure_delay and MWP) never lowers the cycles while the case is unchanged.

    The unrestricted statement is false for the model as specified: the memory-bound
    formula is below the compute-bound one at their boundary, and the
    'Comp_cycles > Mem_cycles' branch of line 274 divides computation by #Mem_insts
    (see the two tests below). Those regimes are excluded here.
    """
    more = replace(kernel, coal_mem_insts=kernel.coal_mem_insts * factor,
                   uncoal_mem_insts=kernel.uncoal_mem_insts * factor)
    a, b = evaluate(kernel, hw), evaluate(more, hw)
    assume(_regime(a) == _regime(b) != "comp_gt_mem")
    assert b.exec_cycles >= a.exec_cycles * (1 - 1e-12)


def test_more_memory_insts_can_reduce_cycles_in_the_comp_gt_mem_branch():
    # Documents the model as specified (lines 274-276): 10 -> 20 coalesced instructions
    # next to 100000 compute ones. MWP = N = 8, CWP ~ 1: both kernels take the memory
    # formula only because Comp_cycles > Mem_cycles, and Comp_p shrinks with #Mem_insts:
    # 10: (1000 x 8/8 + 4 x 100010/10 x 7) x 2 = (1000 + 280028) x 2 = 562056
    # 20: (2000 x 8/8 + 4 x 100020/20 x 7) x 2 = (2000 + 140028) x 2 = 284056
    a = evaluate(_hand_kernel(comp_insts=100_000), HAND)
    b = evaluate(_hand_kernel(comp_insts=100_000, coal_mem_insts=20), HAND)
    assert a.case == b.case == "memory_bound"
    assert a.exec_cycles_app == pytest.approx(562_056)
    assert b.exec_cycles_app == pytest.approx(284_056)


def test_cycles_drop_at_the_compute_to_memory_boundary():
    # Documents the discontinuity. Departure_del_coal 25: MWP = 4 < N = 8. With c compute
    # and m coalesced instructions CWP_full = 1 + 100 m / (4 (c + m)); c = 2200:
    # m = 280: CWP = 1 + 28000/9920 = 3.82 < MWP, Comp < Mem: compute bound,
    #          (100 + 9920 x 8) x 2 = 158920 cycles;
    # m = 320: CWP = 1 + 32000/10080 = 4.17 >= MWP: memory bound,
    #          (32000 x 8/4 + 10080/320 x 3) x 2 = 128189 cycles: fewer, with more loads.
    hw = replace(HAND, departure_del_coal=25.0)
    below = evaluate(_hand_kernel(comp_insts=2200, coal_mem_insts=280), hw)
    above = evaluate(_hand_kernel(comp_insts=2200, coal_mem_insts=320), hw)
    assert below.case == "compute_bound" and above.case == "memory_bound"
    assert below.exec_cycles_app == pytest.approx(158_920)
    assert above.exec_cycles_app == pytest.approx(128_189)


# --------------------------------------------------------------------------------------
# Hardware construction
# --------------------------------------------------------------------------------------
def test_from_board_takes_specs_and_explicit_latencies():
    board = SimpleNamespace(name="X", sms=30, boost_clock_mhz=None, base_clock_mhz=1296.0,
                            memory_bandwidth_gbs=141.7, warp_size=32)
    hw = HongKimHardware.from_board(board, mem_ld=440.0)
    assert (hw.n_sm, hw.freq_ghz, hw.mem_bandwidth_gbs, hw.threads_per_warp) == (
        30, 1.296, 141.7, 32)
    assert (hw.mem_ld, hw.departure_del_uncoal, hw.departure_del_coal) == (440, 40, 4)
    board.boost_clock_mhz = 1500.0
    assert HongKimHardware.from_board(board).freq_ghz == 1.5


def test_from_board_missing_parameter():
    board = SimpleNamespace(name="Y", sms=None, boost_clock_mhz=1500.0, base_clock_mhz=None,
                            memory_bandwidth_gbs=100.0, warp_size=32)
    with pytest.raises(MissingBoardParameterError, match="sms"):
        HongKimHardware.from_board(board)
    assert HongKimHardware.from_board(board, n_sm=20).n_sm == 20  # an override fills it


def test_paper_hardware_is_data_with_a_source_per_value():
    """GTX 280 / 8800 GT parameters come from perfml/data/hongkim_hardware.toml.

    Expected numbers: the ones hongkim.py held as code before they moved to the data file
    (main commit 8756062), attributed there to Hong & Kim 2009's GPU specification and
    model parameter tables. Seed 002 (the slides) prints none of them, so the file must
    mark them unverified.
    """
    from dataclasses import asdict

    from perfml.closed_form.hongkim._hardware import HARDWARE_FIELDS, paper_board, paper_boards

    assert set(paper_boards()) == {"GTX-280", "8800GT"}
    before_the_move = {
        "GTX-280": (450.0, 40.0, 4.0, 141.7, 1.3, 30, 4.0, 128.0, 32),
        "8800GT": (420.0, 10.0, 4.0, 57.6, 1.5, 14, 4.0, 128.0, 32),
    }
    built = {"GTX-280": HongKimHardware.gtx280(), "8800GT": HongKimHardware.geforce_8800gt()}
    for name, hw in built.items():
        data = paper_board(name)
        assert tuple(asdict(hw)[f] for f in HARDWARE_FIELDS) == before_the_move[name]
        assert tuple(data.values[f] for f in HARDWARE_FIELDS) == before_the_move[name]
        assert all(data.sources[f].strip() for f in HARDWARE_FIELDS)
        assert not any(data.verified.values())  # not printed in ../shared/seeds
        assert isinstance(hw.n_sm, int) and isinstance(hw.threads_per_warp, int)
    assert HongKimHardware.gtx280(mem_ld=440.0).mem_ld == 440.0  # overrides still win


def test_from_board_default_latencies_come_from_the_data_file():
    from perfml.closed_form.hongkim._hardware import paper_board

    board = SimpleNamespace(name="Z", sms=10, boost_clock_mhz=1000.0, base_clock_mhz=None,
                            memory_bandwidth_gbs=100.0, warp_size=32)
    hw = HongKimHardware.from_board(board)
    gtx = paper_board("GTX-280").values  # [latency_defaults] board = "GTX-280"
    assert (hw.mem_ld, hw.departure_del_uncoal, hw.departure_del_coal) == (
        gtx["mem_ld"], gtx["departure_del_uncoal"], gtx["departure_del_coal"]) == (450, 40, 4)
    hw = HongKimHardware.from_board(board, departure_del_coal=8.0)
    assert (hw.mem_ld, hw.departure_del_coal) == (450, 8)


def test_unknown_paper_board_is_a_typed_error():
    from perfml.closed_form.hongkim._hardware import paper_board

    with pytest.raises(DatasetSchemaError, match="GTX-480"):
        paper_board("GTX-480")


def test_hardware_rejects_bad_values():
    with pytest.raises(MissingBoardParameterError):
        HongKimHardware.gtx280(mem_ld=None)
    with pytest.raises(ValueError, match="freq_ghz"):
        HongKimHardware.gtx280(freq_ghz=0.0)


# --------------------------------------------------------------------------------------
# scikit-learn estimator
# --------------------------------------------------------------------------------------
def _table_frame() -> tuple[pd.DataFrame, np.ndarray]:
    rows = list(ROWS.values())
    X = pd.DataFrame({
        "comp_insts": [r.total_insts - r.coal_mem_insts - r.uncoal_mem_insts for r in rows],
        "coal_mem_insts": [r.coal_mem_insts for r in rows],
        "uncoal_mem_insts": [r.uncoal_mem_insts for r in rows],
        "uncoal_per_mw": TABLE_UNCOAL_PER_MW,
        "threads_per_block": [r.threads_per_block for r in rows],
        "blocks": [r.blocks for r in rows],
        "active_blocks_per_sm": TABLE_ACTIVE_BLOCKS_PER_SM,
    })
    # Groups for GroupKFold: the optimization family of each variant.
    groups = np.array(["vecpack" if "vecpack" in r.name else "shmem" if "shmem" in r.name
                       else "naive" for r in rows])
    return X, groups


def test_model_predicts_table_time():
    X, _ = _table_frame()
    model = HongKimModel(hardware=TABLE_HARDWARE).fit(X)
    assert model.scale_ == 1.0
    assert list(model.feature_names_in_) == list(FEATURE_COLUMNS)
    assert model.n_features_in_ == len(FEATURE_COLUMNS)
    parts = model.decompose(X)
    # time = Exec_cycles_app / 1.3 GHz; CPI x denominator of line 306 = Exec_cycles_app.
    r = ROWS[FIT_LINE]
    cycles = r.model_cpi * r.total_insts * 8 * (585 / 30)
    assert model.predict(X)[0] == pytest.approx(cycles / 1.3e6, rel=CPI_REL)
    assert parts["case"].iloc[0] == "memory_bound"


def test_model_calibrated_scale():
    X, _ = _table_frame()
    base = HongKimModel(hardware=TABLE_HARDWARE).fit(X).predict(X)
    model = HongKimModel(hardware=TABLE_HARDWARE, calibrate=True).fit(X, 2.5 * base)
    assert model.scale_ == pytest.approx(2.5)
    np.testing.assert_allclose(model.predict(X), 2.5 * base)
    with pytest.raises(DatasetSchemaError, match="calibrate=True"):
        HongKimModel(calibrate=True).fit(X)


def test_model_clone_and_group_cross_validation():
    X, groups = _table_frame()
    model = HongKimModel(hardware=TABLE_HARDWARE, calibrate=True)
    cloned = clone(model)
    assert cloned.get_params() == model.get_params()
    assert not hasattr(cloned, "scale_")
    # Synthetic "measured" times: the model's own times with multiplicative noise.
    y = HongKimModel(hardware=TABLE_HARDWARE).fit(X).predict(X)
    y = y * np.random.default_rng(0).uniform(0.9, 1.1, size=len(y))
    scores = cross_val_score(model, X, y, groups=groups, cv=GroupKFold(n_splits=3),
                             scoring="neg_mean_absolute_percentage_error")
    assert scores.shape == (3,)
    assert np.all(np.isfinite(scores)) and np.all(scores > -0.2)


def test_model_one_hardware_per_board():
    X, _ = _table_frame()
    X = pd.concat([X.assign(board="A"), X.assign(board="B")], ignore_index=True)
    fast = replace(TABLE_HARDWARE, freq_ghz=2.6)
    model = HongKimModel(hardware={"A": TABLE_HARDWARE, "B": fast}).fit(X)
    t = model.predict(X)
    n = len(X) // 2
    # Doubling Freq doubles BW_per_warp (halves MWP_peak_BW, still >= MWP 6) and halves time.
    np.testing.assert_allclose(t[n:], t[:n] / 2)
    with pytest.raises(DatasetSchemaError, match="no hardware"):
        model.predict(X.assign(board="C"))


def test_model_accepts_bare_array():
    X, _ = _table_frame()
    model = HongKimModel(hardware=TABLE_HARDWARE).fit(X.to_numpy())
    assert not hasattr(model, "feature_names_in_")
    np.testing.assert_allclose(model.predict(X.to_numpy()),
                               HongKimModel(hardware=TABLE_HARDWARE).fit(X).predict(X))


def test_model_input_errors():
    X, _ = _table_frame()
    with pytest.raises(NotFittedError):
        HongKimModel().predict(X)
    with pytest.raises(DatasetSchemaError, match="uncoal_per_mw"):
        HongKimModel().fit(X.drop(columns="uncoal_per_mw"))
    with pytest.raises(DatasetSchemaError, match="blocks must be finite"):
        HongKimModel().fit(X.assign(blocks=0))
    with pytest.raises(DatasetSchemaError, match="y has"):
        HongKimModel().fit(X, np.ones(3))
    from perfml.errors import EstimatorParameterError

    with pytest.raises(EstimatorParameterError, match="hardware must be"):  # a typed error (a bare TypeError before)
        HongKimModel(hardware="GTX-280").fit(X)
    with pytest.raises(EstimatorParameterError, match="calibrate must be True or False"):  # "yes" calibrated
        HongKimModel(calibrate="yes").fit(X, np.ones(len(X)))
    for column, value in (("threads_per_block", 4096), ("blocks", 2.5), ("active_blocks_per_sm", 1000)):
        with pytest.raises(DatasetSchemaError, match=rf"{column} must be finite and a whole number >= 1"):
            HongKimModel().fit(X.assign(**{column: value}))
    assert math.isfinite(HongKimModel().fit(X).predict(X).sum())  # GTX 280 default
