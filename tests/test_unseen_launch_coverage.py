"""experiments/unseen_launch_coverage.py: the interval of models/default's described sub-model, as
calibrated, widened and launch-calibrated on the other boards, scored on out-of-fold predictions. The predictions below are synthetic
(made-up times with chosen ratios); the calibration is a made-up table of the manifest's layout."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from perfml.learned.intervals import LEVELS

from conftest import experiment_script

script = experiment_script("unseen_launch_coverage")


def _calibration(half: float) -> dict:
    return {"levels": list(LEVELS), "extrapolation_widening": 2.0,
            "groups": {"all": {"n": 100, "log_halfwidth": [half] * len(LEVELS)}}}


def test_a_row_is_covered_by_the_widened_interval_only_when_its_error_is_between_the_two_widths():
    half = math.log(1.2)  # calibrated: predicted / 1.2 to predicted x 1.2; widened: / 1.44 to x 1.44
    measured = np.array([1.0, 1.0, 1.0, 1.0])
    predicted = np.array([1.1, 1.3, 1.0 / 1.3, 1.6])  # inside both, widened only (twice), outside both
    rows = script.scored(pd.DataFrame({"app_id": "vectorAdd", "board": "A", "measured_ms": measured, "predicted_ms": predicted}),
                         _calibration(half), 0.9)
    assert rows["calibrated_covers"].tolist() == [True, False, False, False]
    assert rows["widened_covers"].tolist() == [True, True, True, False]
    assert rows["calibrated_width"].to_numpy() == pytest.approx(1.2 - 1 / 1.2)
    assert rows["widened_width"].to_numpy() == pytest.approx(1.44 - 1 / 1.44)
    table = script.summary(rows)
    assert table.loc["all", "covered % (widened)"] == pytest.approx(75.0)
    assert table.loc["all", "covered % (calibrated)"] == pytest.approx(25.0)
    assert table.loc["all", "MAPE %"] == pytest.approx(np.mean(np.abs(predicted - 1)) * 100)


def test_the_launch_calibrated_interval_of_a_board_comes_from_the_other_boards_rows():
    """Synthetic: boards A and B miss by a factor 1.1, board C by 2. C's interval is calibrated on A and B
    (q = log 1.1, raised to the group's log 1.2) and misses; A's on B and C (q = log 2) and holds."""
    boards = np.repeat(["A", "B", "C"], 10)
    predicted = np.where(boards == "C", 2.0, 1.1)
    rows = script.scored(pd.DataFrame({"app_id": "vectorAdd", "board": boards, "measured_ms": 1.0,
                                       "predicted_ms": predicted}), _calibration(math.log(1.2)), 0.9)
    assert rows["launch_covers"].tolist() == [True] * 20 + [False] * 10
    assert rows["launch_width"].to_numpy()[:10] == pytest.approx(2.0 - 0.5)
    assert rows["launch_width"].to_numpy()[20:] == pytest.approx(1.2 - 1 / 1.2)
    assert script.summary(rows).loc["all", "covered % (launch, held out)"] == pytest.approx(200 / 3)
    assert rows["pooled_covers"].tolist() == rows["launch_covers"].tolist()  # one kernel: its own is the pooled one


def test_the_launch_interval_of_a_kernel_is_its_own_and_the_pooled_one_is_the_same_for_all():
    """Synthetic: on every board k1 misses by a factor 1.1 and k2 by 2. Per kernel, each board's rows are
    covered by the other boards' rows of their kernel; pooled (half of the rows at 2), by q = log 2 for both."""
    boards = np.tile(np.repeat(["A", "B", "C"], 10), 2)
    apps = np.repeat(["k1", "k2"], 30)
    predicted = np.where(apps == "k1", 1.1, 2.0)
    rows = script.scored(pd.DataFrame({"app_id": apps, "board": boards, "measured_ms": 1.0, "predicted_ms": predicted}),
                         _calibration(math.log(1.05)), 0.9)
    assert rows["launch_covers"].all() and rows["pooled_covers"].all()
    assert rows["launch_width"].to_numpy()[:30] == pytest.approx(1.1 - 1 / 1.1)  # k1: its own, narrow
    assert rows["pooled_width"].to_numpy()[:30] == pytest.approx(2.0 - 0.5)  # k1 pooled with k2: wide
