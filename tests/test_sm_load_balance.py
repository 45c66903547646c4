"""experiments/sm_load_balance.py: seed 000's static SM load balance, the data it reads, and a patch that leaves nothing behind.

Truth: seed 000 Sec. IV-E (LOADBALANC_SM = AvgCycles / max_SM cycles; with equal blocks dealt
round-robin, (B / S) / ceil(B / S)); the registry's SM counts; the measured subSeqMax
runtimes of shared/datasets.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import experiment_script, needs_data_home

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def script():
    return experiment_script("sm_load_balance")


def test_static_load_balance_is_the_average_over_the_busiest_sm(script):
    # 32 blocks: 8 per SM on 4 SMs (even); on 13 SMs the busiest runs 3 where the average is 32/13
    got = script.static_load_balance([32, 32, 26, 1, 0, 5], [4, 13, 13, 16, 8, np.nan])
    np.testing.assert_allclose(got[:4], [1.0, (32 / 13) / 3, 1.0, 1 / 16])
    assert np.isnan(got[4]) and np.isnan(got[5])


def test_row_load_balance_reads_the_sm_count_of_each_rows_board(script):
    from perfml.boards import get_board

    rows = pd.DataFrame({"board": ["GTX-750", "GTX-970"], "grid_x": [32.0, 32.0], "grid_y": [1.0, np.nan]})
    sms = [get_board(b).sms for b in rows["board"]]
    expected = [(32 / s) / np.ceil(32 / s) for s in sms]
    np.testing.assert_allclose(script.row_load_balance(rows), expected)


@pytest.mark.parametrize("config", ["balanced_bsp", "candidate"])
def test_the_patch_is_undone_after_its_block(script, config):
    from perfml.learned.features import builder, closed_form

    logs, baselines = closed_form.closed_form_logs, closed_form.BASELINES
    with script.load_balance(config):
        assert closed_form.closed_form_logs is not logs and builder.closed_form_logs is not logs
    assert closed_form.closed_form_logs is logs and builder.closed_form_logs is logs
    assert closed_form.BASELINES == baselines


def test_the_correction_slows_only_the_unevenly_dealt_launches(script):
    """Under the patch the BSP time of 32 blocks grows by ceil(32/S) S / 32 on an S-SM board and
    not at all where the blocks divide evenly (4 SMs)."""
    from perfml.boards import get_board
    from perfml.learned.features import closed_form

    rows = pd.DataFrame({"board": ["GTX-750", "GTX-970"], "app_id": ["subSeqMax"] * 2, "input_size": [1 << 20] * 2,
                         "block_x": [128.0] * 2, "block_y": [1.0] * 2, "grid_x": [32.0] * 2, "grid_y": [1.0] * 2})
    before = closed_form.closed_form_logs(rows, data_home=None, waves=False)["bsp"].to_numpy()
    with script.load_balance("balanced_bsp"):
        after = closed_form.closed_form_logs(rows, data_home=None, waves=False)["bsp"].to_numpy()
    s = get_board("GTX-970").sms
    np.testing.assert_allclose(np.exp(after - before), [1.0, np.ceil(32 / s) * s / 32])


@needs_data_home()
def test_subseqmax_cycles_grow_with_the_blocks_each_sm_runs_on_maxwell(script):
    """Part 1's reading of the data: the GTX-750 (8 blocks per SM) takes over 2.5x the boost
    cycles of the GTX-980 (2 per SM) for the same 32-block launch."""
    from perfml.experiments.runner import experiment_data
    from perfml.experiments.spec import load_experiment

    from conftest import shared_data_home

    rt = experiment_data(load_experiment(ROOT / "experiments" / "unseen_boards.toml"), shared_data_home())
    table = script.subseqmax_cycles(rt)
    assert table.loc["GTX-750", "blocks_per_sm"] == 8 and table.loc["GTX-980", "blocks_per_sm"] == 2
    assert table.loc["GTX-750", "mcycles"] > 2.5 * table.loc["GTX-980", "mcycles"]
