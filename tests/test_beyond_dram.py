"""A described kernel predicted faster than its board's DRAM streams a working set its L2 cannot hold.

``perfml.learned.queries.beyond_dram_flags``: the roofline bound lets up to an L2 of the bytes
come from cache (physics allows it), so matrix_sum_normal on the L4 passed at 102 % of the
datasheet bandwidth. The flag's threshold (a share of 1 at working sets of L2_FACTOR x the L2
and more) is held here against every measured run perfml has.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfml.apps import list_apps
from perfml.boards import get_board, peak_bandwidth
from perfml.characterize.limits import L2_FACTOR
from perfml.closed_form.roofline import RooflineModel, roofline_bound_and_bytes
from perfml.learned.queries import beyond_dram_flags

from conftest import needs_data_home

ROOT = Path(__file__).resolve().parents[1]


def _dram_ms(q: pd.DataFrame) -> np.ndarray:
    """Each row's compulsory bytes at its board's peak bandwidth (ms)."""
    moved = RooflineModel().roofline_terms(q)["bytes"].to_numpy(dtype=float)
    return moved / np.array([peak_bandwidth(get_board(b)) for b in q["board"]]) * 1e3


def _rows(*rows) -> pd.DataFrame:
    return pd.DataFrame([{"board": b, "app_id": a, "input_size": float(n)} for b, a, n in rows])


def test_a_row_faster_than_the_dram_streams_its_working_set_is_flagged_with_the_figures():
    q = _rows(("L4", "matrix_sum_normal", 8192), ("L4", "matrix_sum_normal", 8192), ("L4", "matrix_sum_normal", 8192),
              ("L4", "matrix_sum_normal", 1024), ("Tesla-T4", "vectorAdd", 2**26))
    full = _dram_ms(q)
    assert RooflineModel().roofline_terms(q.iloc[[0]])["bytes"].iloc[0] >= L2_FACTOR * get_board("L4").l2_bytes
    assert RooflineModel().roofline_terms(q.iloc[[3]])["bytes"].iloc[0] < L2_FACTOR * get_board("L4").l2_bytes
    pred = np.array([full[0] / 1.02, full[1] / 0.9, full[2] / 1.02, full[3] / 3, full[4] / 1.5])
    measured = np.array([False, False, True, False, False])
    moved = roofline_bound_and_bytes(q)[1]
    assert np.isfinite(moved).all() and moved.tolist() == RooflineModel().roofline_terms(q)["bytes"].tolist()
    flags, reasons = beyond_dram_flags(q, moved, pred, np.zeros(len(q)), measured)
    # above the full bandwidth: flagged; under it, a measurement of the row, or a working set
    # the L2 may partly hold: not
    assert flags.tolist() == [True, False, False, False, True]
    assert reasons[0].startswith("predicted at 102% of board L4's peak DRAM bandwidth (300 GB/s) for the 805.3 MB")
    assert f"expect it slower than {full[0]:.4g} ms, its time at the full bandwidth" in reasons[0]
    assert reasons[1] == reasons[2] == reasons[3] == ""
    # the written time is the prediction raised to the bound
    flags, _ = beyond_dram_flags(q.iloc[[0]], moved[:1], np.array([full[0] / 2]), np.array([full[0]]),
                                 np.array([False]))
    assert not flags[0]
    # a kernel of unknown work (NaN bytes) is never flagged
    assert not beyond_dram_flags(q.iloc[[0]], np.array([np.nan]), np.array([1e-9]), np.zeros(1), np.array([False]))[0][0]


def _measured_shares(rows: pd.DataFrame) -> np.ndarray:
    """The share of the peak DRAM bandwidth of each measured run of working set >= L2_FACTOR x L2."""
    rows = rows[rows["app_id"].isin(list_apps())].reset_index(drop=True)
    l2 = np.array([float(get_board(b).l2_bytes or 0.0) for b in rows["board"]])
    moved = RooflineModel().roofline_terms(rows)["bytes"].to_numpy(dtype=float)
    big = (l2 > 0) & (moved >= L2_FACTOR * l2)
    flags, _ = beyond_dram_flags(rows, moved, rows["measured_ms"].to_numpy(dtype=float), np.zeros(len(rows)),
                                 np.zeros(len(rows), dtype=bool))
    shares = _dram_ms(rows) / rows["measured_ms"].to_numpy(dtype=float)
    assert flags.tolist() == (big & (shares > 1.0)).tolist()
    return shares[big]


@needs_data_home()
def test_no_measured_run_of_the_data_home_would_be_flagged(data_home):
    from perfml.learned.training import training_runtimes

    shares = _measured_shares(training_runtimes(data_home=data_home))
    assert len(shares) > 1000 and np.nanmax(shares) < 1.0


@pytest.mark.parametrize("board", ["H100-SXM", "H200"])
def test_no_run_this_project_measured_on_hopper_would_be_flagged(board):
    from perfml.learned.training import measured_board_rows

    shares = _measured_shares(measured_board_rows(ROOT / "sweeps" / "results" / board)["described"])
    assert len(shares) >= 5 and np.nanmax(shares) < 1.0
