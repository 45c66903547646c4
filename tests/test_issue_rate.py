"""The issue-limited FP32 rate (CUDA C Programming Guide, 'Multiprocessor Level') and its use.

What is checked: the registry gives the warp-issue rate of every compute capability with its
source; Kepler's 192-core SMX issues only 4 x 32 lanes per clock without dual issue (2/3 of
the datasheet rate) while Maxwell and later feed every core; the closed-form times with
``compute_rate="issue"`` grow on Kepler by exactly that factor and nowhere else; a board
without the figure keeps the core rate; bad parameter values are refused.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfml.boards import get_board, issue_limited_flops, load_registry, peak_flops
from perfml.errors import EstimatorParameterError, MissingBoardParameterError
from perfml.learned.features.closed_form import closed_form_logs, issue_rate_log_factor
from perfml.learned.regressors import RuntimeRegressor


def test_every_compute_capability_table_gives_the_issue_rate_with_its_source():
    registry = load_registry()
    for cc in registry.compute_capabilities():
        facts = registry.cc_defaults(cc)
        assert "warp_issue_per_clock" in facts, cc
        value, source = facts["warp_issue_per_clock"]
        assert 0 < value <= 4, (cc, value)
        assert source and ("Programming Guide" in source or "Whitepaper" in source), (cc, source)


@pytest.mark.parametrize(("board", "share"), [
    ("GTX-680", 2 / 3), ("GTX-Titan", 2 / 3), ("Tesla-K40", 2 / 3),  # Kepler: 128 of 192 lanes
    ("GT-630", 2 / 3),  # compute capability 2.1: 32 of 48 lanes without dual issue
    ("GTX-980", 1.0), ("GTX-750", 1.0), ("Tesla-P100-PCIe", 1.0), ("Tesla-V100-PCIe-32GB", 1.0),
    ("A100-PCIe-40GB", 1.0), ("H100-SXM", 1.0),
])
def test_issue_limited_rate_is_the_datasheet_rate_where_the_schedulers_feed_every_core(board, share):
    b = get_board(board)
    assert issue_limited_flops(b) / peak_flops(b) == pytest.approx(share)
    assert issue_limited_flops(b) <= peak_flops(b)


def test_a_board_without_compute_capability_has_no_issue_rate_and_says_what_is_missing():
    board = get_board("Tesla-P4")  # the registry gives it no compute capability
    with pytest.raises(MissingBoardParameterError, match="issue-limited"):
        issue_limited_flops(board)
    # the features then keep the core rate for it
    assert issue_rate_log_factor(pd.Series(["Tesla-P4"])) == pytest.approx([0.0])


def test_issue_rate_moves_only_the_compute_times_of_boards_that_cannot_feed_every_core(data_home):
    rows = pd.DataFrame({"board": ["GTX-680", "GTX-980", "GTX-680", "GTX-980"],
                         "app_id": ["matMul_gpu", "matMul_gpu", "not_a_described_kernel", "not_a_described_kernel"],
                         "input_size": [512.0, 512.0, 100.0, 100.0],
                         "block_x": 16, "block_y": 16, "grid_x": 32, "grid_y": 32})
    cores = closed_form_logs(rows, data_home=data_home)
    issue = closed_form_logs(rows, data_home=data_home, compute_rate="issue")
    kepler = (rows["board"] == "GTX-680").to_numpy()
    for column in ("bsp", "roof_compute"):
        diff = (issue[column] - cores[column]).to_numpy()
        np.testing.assert_allclose(diff[kepler], np.log(1.5), atol=1e-12)
        np.testing.assert_allclose(diff[~kepler], 0.0, atol=1e-12)
    np.testing.assert_allclose(issue["roof_memory"], cores["roof_memory"])


def test_bad_compute_rate_is_refused():
    X = pd.DataFrame({"board": ["GTX-980"], "app_id": ["vectorAdd"], "input_size": [1e6]})
    with pytest.raises(EstimatorParameterError, match="compute_rate"):
        RuntimeRegressor(compute_rate="dual-issue", analytical=False, profiles=False, target="log").fit(X, [1.0])


def test_an_achieved_fp32_rate_is_not_lowered_again_by_the_issue_limit(data_home):
    """With characterized peaks, a board whose characterization gives an achieved FP32 rate keeps it."""
    from perfml.characterize import Characterization, CharacterizedValue, spec_values

    synthetic = "synthetic test value (not a measurement)"

    def characterization(board):
        values = tuple(spec_values(get_board(board)))
        if board == "GTX-680":
            values += (CharacterizedValue("fp32_throughput", 2.0e12, "FLOP/s", "calibrated", synthetic),)
        return Characterization(board=board, source=synthetic, synthetic=True, values=values)

    rows = pd.DataFrame({"board": ["GTX-680", "GTX-Titan"], "app_id": "not_a_described_kernel", "input_size": 100.0,
                         "block_x": 256, "block_y": 1, "grid_x": 40, "grid_y": 1})
    cores = closed_form_logs(rows, data_home=data_home, peaks="characterized", characterizations=characterization)
    issue = closed_form_logs(rows, data_home=data_home, peaks="characterized", characterizations=characterization,
                             compute_rate="issue")
    diff = (issue["roof_compute"] - cores["roof_compute"]).to_numpy()
    np.testing.assert_allclose(diff, [0.0, np.log(1.5)], atol=1e-12)  # GTX-680 achieved; Titan spec
    np.testing.assert_allclose(issue["bsp"] - cores["bsp"], np.log(1.5), atol=1e-12)  # BSP: cores x clock
