"""The profiled roofline: the work a profiler counted on a run, against each board's three ceilings.

Truth: Williams et al. (CACM 2009) roofline, time = max over the roofs of work / peak; the
instruction ceiling of Ding & Williams' Instruction Roofline Model (PMBS 2019): SMs x warp
schedulers (one warp instruction per clock each) x clock; the registry's fields.
"""

from __future__ import annotations

import numpy as np
import pytest

from perfml.boards import get_board, peak_bandwidth, peak_flops, peak_warp_instructions
from perfml.closed_form.roofline import profiled_roofline_ms
from perfml.errors import MissingBoardParameterError


@pytest.mark.parametrize("name", ["GTX-680", "GTX-980", "Tesla-V100-PCIe-32GB", "H100-SXM"])
def test_peak_warp_instructions_is_sms_times_schedulers_times_clock(name):
    board = get_board(name)
    assert peak_warp_instructions(board) == pytest.approx(board.sms * board.warp_issue_per_clock * board.boost_clock_mhz * 1e6)
    if board.base_clock_mhz:
        assert peak_warp_instructions(board, "base") <= peak_warp_instructions(board)


def test_a_board_without_an_issue_rate_says_what_is_missing():
    with pytest.raises(MissingBoardParameterError, match="warp instructions"):
        peak_warp_instructions(get_board("Tesla-P4"))  # the registry gives it no compute capability


def test_the_longest_roof_sets_the_time_and_a_missing_term_is_left_out():
    h100 = get_board("H100-SXM")
    flops, dram, warps = 1e12, 1e9, 1e6
    got = profiled_roofline_ms(["H100-SXM"] * 4, [flops, np.nan, np.nan, np.nan], [dram, dram, np.nan, np.nan],
                               [warps, warps, warps, np.nan])
    terms = [flops / peak_flops(h100), dram / peak_bandwidth(h100), warps / peak_warp_instructions(h100)]
    np.testing.assert_allclose(got[:3], [1e3 * max(terms), 1e3 * max(terms[1:]), 1e3 * terms[2]])
    assert np.isnan(got[3])


def test_a_board_without_a_ceiling_keeps_the_others():
    """The Tesla-P4 has no issue rate in the registry: its instruction term is left out, not the row."""
    p4 = get_board("Tesla-P4")
    got = profiled_roofline_ms(["Tesla-P4"], [np.nan], [1e9], [1e12])
    np.testing.assert_allclose(got, [1e3 * 1e9 / peak_bandwidth(p4)])


def test_more_bandwidth_never_makes_a_streaming_run_slower():
    """The H200 has the H100's processor and more bandwidth: every profiled run is no slower on it,
    and a streaming one (DRAM bytes its longest roof) is faster by the bandwidth ratio."""
    rng = np.random.default_rng(0)
    work = [10 ** rng.uniform(6, 12, 200) for _ in range(3)]
    h100 = profiled_roofline_ms(["H100-SXM"] * 200, *work)
    h200 = profiled_roofline_ms(["H200"] * 200, *work)
    assert (h200 <= h100 * (1 + 1e-12)).all()
    streaming = profiled_roofline_ms(["H200", "H100-SXM"], [1.0, 1.0], [1e10, 1e10], [1.0, 1.0])
    assert streaming[0] / streaming[1] == pytest.approx(peak_bandwidth(get_board("H100-SXM")) / peak_bandwidth(get_board("H200")))


def test_the_ratio_compares_only_the_roofs_both_boards_have():
    """From the Tesla-P4 (no issue rate in the registry) to the Tesla-T4: an instruction-heavy run
    is carried by the FLOP and bandwidth roofs alone, on both sides; per board, the T4's time
    would have taken its instruction roof and the P4's could not, a ratio of unlike ceilings."""
    from perfml.closed_form.roofline import profiled_roofline_ratio

    p4, t4 = get_board("Tesla-P4"), get_board("Tesla-T4")
    flops, dram, warps = 1e9, 1e8, 1e12
    got = profiled_roofline_ratio(["Tesla-T4"], ["Tesla-P4"], [flops], [dram], [warps])
    expected = max(flops / peak_flops(t4), dram / peak_bandwidth(t4)) / max(flops / peak_flops(p4), dram / peak_bandwidth(p4))
    np.testing.assert_allclose(got, [expected])
    unlike = profiled_roofline_ms(["Tesla-T4"], [flops], [dram], [warps]) / profiled_roofline_ms(["Tesla-P4"], [flops], [dram], [warps])
    assert not np.allclose(got, unlike)
    # no roof on both sides, or no work: no ratio
    assert np.isnan(profiled_roofline_ratio(["Tesla-T4"], ["Tesla-P4"], [np.nan], [np.nan], [warps])).all()
    assert np.isnan(profiled_roofline_ratio(["Tesla-T4"], ["Tesla-P4"], [0.0], [0.0], [0.0])).all()


def test_a_double_precision_run_is_carried_by_the_fp64_peaks():
    """FP64 work has its own ceiling: the V100 runs it at half its FP32 rate, the T4 at 1/32, so a
    run that only does FP64 arithmetic is carried between them by the FP64 peaks, not the FP32."""
    from perfml.closed_form.roofline import profiled_roofline_ratio

    v100, t4 = get_board("Tesla-V100-PCIe-32GB"), get_board("Tesla-T4")
    dp = 1e12
    got = profiled_roofline_ratio(["Tesla-T4"], ["Tesla-V100-PCIe-32GB"], [np.nan], [1e6], [np.nan], [dp])
    np.testing.assert_allclose(got, [peak_flops(v100, "fp64") / peak_flops(t4, "fp64")])
    sp = profiled_roofline_ratio(["Tesla-T4"], ["Tesla-V100-PCIe-32GB"], [dp], [1e6], [np.nan], [np.nan])
    np.testing.assert_allclose(sp, [peak_flops(v100) / peak_flops(t4)])
    assert got[0] > 3 * sp[0]
