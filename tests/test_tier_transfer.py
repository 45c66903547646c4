"""The calibrated tier's transfer: baseline chosen by inner leave-one-board-out, achieved peaks for undescribed kernels (issue 11 §3)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfml.boards import get_board
from perfml.characterize import Characterization, CharacterizedValue, spec_values
from perfml.errors import EstimatorParameterError
from perfml.learned.features._common import RUN_KEY
from perfml.learned.features.closed_form import baseline_choice, closed_form_logs, transfer_cv_choice
from perfml.learned.regressors import RuntimeRegressor

SYNTHETIC = "synthetic test value (not a measurement)"
ARCH = {"K1": "Kepler", "K2": "Kepler", "K3": "Kepler", "M1": "Maxwell", "M2": "Maxwell", "M3": "Maxwell"}


def _tables():
    """Synthetic per-run offsets (log T_measured / T_model) of one app on six boards of two architectures.

    ``roof_memory``: identical within an architecture, 1.0 apart between them (a large
    spread across all boards, but a perfect same-architecture transfer). ``bsp``: a small
    spread, but scattered board to board, so its transfer misses by ~0.1-0.2 in log.
    """
    rng = np.random.default_rng(0)
    rows = []
    for board, arch in ARCH.items():
        for size in (1, 2, 3, 4):
            rows.append({"board": board, "architecture": arch, "app_id": "a", "input_size": float(size),
                         "input_size_2": 0.0, "block_x": 256, "block_y": 1, "grid_x": size, "grid_y": 1,
                         "roof_memory": 0.0 if arch == "Kepler" else 1.0,
                         "bsp": {"K1": 0.1, "K2": -0.1, "K3": 0.2, "M1": -0.2, "M2": 0.15, "M3": -0.15}[board],
                         "roof_compute": rng.normal(0, 2.0)})
    transfer = pd.DataFrame(rows)
    offsets = transfer.groupby(["board", "app_id"], as_index=False)[["bsp", "roof_memory", "roof_compute"]].median()
    offsets["architecture"] = offsets["board"].map(ARCH)
    return transfer[["board", *RUN_KEY, "bsp", "roof_memory", "roof_compute", "architecture"]], offsets


def test_transfer_cv_picks_the_baseline_that_transfers_not_the_one_that_varies_least():
    transfer, offsets = _tables()
    assert baseline_choice(offsets)["a"] == "bsp"  # least spread across all boards
    assert transfer_cv_choice(transfer, offsets, ARCH.get)["a"] == "roof_memory"  # exact same-architecture transfer


def test_transfer_cv_falls_back_to_spread_with_one_board():
    transfer, offsets = _tables()
    one = transfer[transfer.board == "K1"]
    assert transfer_cv_choice(one, offsets[offsets.board == "K1"], ARCH.get) == baseline_choice(offsets[offsets.board == "K1"])


def _synthetic(board: str, share: float) -> Characterization:
    spec = get_board(board).memory_bandwidth_gbs * 1e9
    values = (*spec_values(get_board(board)),
              CharacterizedValue("dram_bandwidth", share * spec, "B/s", "calibrated", SYNTHETIC))
    return Characterization(board=board, source=SYNTHETIC, synthetic=True, values=values)


def test_undescribed_kernels_take_the_achieved_bandwidth_at_the_calibrated_tier():
    rows = pd.DataFrame({"board": ["GTX-980", "GTX-680"], "app_id": "not_a_described_kernel", "input_size": 100.0,
                         "block_x": 256, "block_y": 1, "grid_x": 40, "grid_y": 1})
    chs = {"GTX-980": _synthetic("GTX-980", 0.5), "GTX-680": _synthetic("GTX-680", 1.0)}
    spec = closed_form_logs(rows)
    achieved = closed_form_logs(rows, peaks="characterized", characterizations=lambda b: chs[b])
    # half the bandwidth: the memory term doubles; the compute term (no achieved FP32) is unchanged
    np.testing.assert_allclose(achieved["roof_memory"] - spec["roof_memory"], [np.log(2.0), 0.0], atol=1e-12)
    np.testing.assert_allclose(achieved["roof_compute"], spec["roof_compute"])
    # more bandwidth never slows the memory term
    faster = closed_form_logs(rows, peaks="characterized", characterizations=lambda b: _synthetic(b, 0.9))
    assert (faster["roof_memory"] <= achieved["roof_memory"].where(rows.board == "GTX-980", np.inf)).all()


def test_bad_baseline_selection_is_refused():
    X = pd.DataFrame({"board": ["GTX-980"], "app_id": ["vectorAdd"], "input_size": [1e6]})
    with pytest.raises(EstimatorParameterError, match="baseline_selection"):
        RuntimeRegressor(baseline_selection="best-guess", analytical=False, profiles=False, target="log").fit(X, [1.0])
