"""A board beyond the training boards' datasheet figures is flagged, with the figures named (issue 10 §2).

Where the truth comes from: the registry figures of the boards named here
(``perfml/data/boards.toml``, each value sourced there); the expected flags follow from
comparing them by hand (noted beside each case).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfml.boards import get_board, peak_bandwidth, peak_flops
from perfml.learned.board_range import (
    BOARD_RANGE_FIGURES,
    board_figures,
    board_range_flags,
    boards_beyond_the_others,
    outside_training_boards,
)

KEPLER_MAXWELL = ["GTX-680", "GTX-980", "Tesla-K40"]


def test_the_figures_are_the_registry_peaks():
    fig = board_figures("Tesla-T4")
    board = get_board("Tesla-T4")
    assert fig["DRAM bandwidth"] == peak_bandwidth(board)
    assert fig["FP32 rate"] == peak_flops(board)
    assert fig["SM count"] == board.sms and fig["L2 size"] == board.l2_bytes
    assert set(fig) == set(BOARD_RANGE_FIGURES)


def test_a_board_between_the_training_boards_is_not_flagged():
    # GTX-970: 224 GB/s in [192, 288]; 4.26 TFLOP/s in [2.17, 4.98]; 13 SMs in [8, 16]; 1.75 MiB L2 in [0.5, 2]
    assert outside_training_boards("GTX-970", KEPLER_MAXWELL) == ""
    # a training board itself is within the range
    assert outside_training_boards("GTX-980", KEPLER_MAXWELL) == ""


def test_a_newer_board_is_flagged_naming_each_figure_beyond_the_range():
    why = outside_training_boards("H100-SXM", KEPLER_MAXWELL)
    assert why.startswith("board H100-SXM: ")
    for figure in BOARD_RANGE_FIGURES:
        assert figure in why
    assert "above the training boards' range" in why and "below" not in why


def test_a_smaller_board_is_flagged_below_the_range():
    # GTX-750: 80 GB/s below 192; 4 SMs below 8; its L2 (2 MiB) equals the GTX-980's, within
    why = outside_training_boards("GTX-750", KEPLER_MAXWELL)
    assert "DRAM bandwidth 80.16 GB/s below" in why and "SM count 4 SMs below" in why
    assert "L2 size" not in why


def test_flags_per_row_follow_their_board_and_aliases_resolve():
    flags, reasons = board_range_flags(pd.Series(["GTX-970", "H100 SXM", "GTX-970"]), KEPLER_MAXWELL)
    assert flags.tolist() == [False, True, False]
    assert reasons[0] == "" and reasons[1].startswith("board H100-SXM")


def test_no_training_boards_flags_nothing():
    flags, reasons = board_range_flags(["H100-SXM"], None)
    assert flags.tolist() == [False] and reasons == [""]


def test_boards_beyond_the_others_are_the_extremes_of_a_training_set():
    # GTX-680: the lowest of all four figures; GTX-980: the highest FP32 rate, SM count and L2;
    # GTX-970 lies between them (its 224 GB/s equals the GTX-980's)
    assert boards_beyond_the_others(["GTX-680", "GTX-970", "GTX-980"]) == ["GTX-680", "GTX-980"]


@pytest.mark.parametrize("board, flagged, new_architecture", [
    ("GTX-Titan", False, False),
    ("GTX-Titan-X", True, False),  # Maxwell, as training boards are; its bandwidth and FP32 rate beyond theirs
    ("H100-SXM", True, True),
])
def test_predict_flags_the_board_and_keeps_the_calibrated_interval(board, flagged, new_architecture):
    """A board beyond the training boards' figures is flagged, its interval not widened for that; a board of
    an architecture none of them has takes the unseen-architecture half-width where it is wider."""
    from perfml.learned.bundle import load_predictor, predict_any
    from perfml.learned.intervals import LEVELS

    from conftest import shared_data_home

    home = shared_data_home()
    bundle = load_predictor(Path(__file__).resolve().parents[1] / "models" / "default", data_home=home)
    q = pd.DataFrame([{"board": board, "app_id": "vectorAdd", "input_size": 4194304}])
    out = predict_any(bundle, q, "q.csv", level=0.9)
    assert bool(out["extrapolated"].iat[0]) is flagged
    assert ("board " + board in str(out["extrapolation"].iat[0])) is flagged
    assert ("architecture" in str(out["extrapolation"].iat[0])) is new_architecture
    intervals = bundle.model_for("described").metadata_["intervals"]
    q90 = intervals["groups"]["described"]["log_halfwidth"][LEVELS.index(0.9)]
    if new_architecture:
        q90 = max(q90, intervals["unseen_architecture"]["groups"]["described"]["log_halfwidth"][LEVELS.index(0.9)])
    half = np.log(out["upper_ms"].iat[0] / out["predicted_ms"].iat[0])
    assert half == pytest.approx(q90)  # the figures flag, not widened (perfml.learned.board_range says why)


def test_the_module_docstring_names_the_default_models_boards_beyond_the_others():
    """board_range's docstring: the nine apps' GT-630, GTX-295, GTX-Titan-Black; the operators' P4 and A100."""
    import json

    root = Path(__file__).resolve().parents[1] / "models" / "default"
    boards = {name: json.loads((root / name / "perfml-model.json").read_text())["training"]["boards"]
              for name in ("described", "dlops")}
    assert boards_beyond_the_others(boards["described"]) == ["GT-630", "GTX-295", "GTX-Titan-Black"]
    assert boards_beyond_the_others(boards["dlops"]) == ["A100-PCIe-40GB", "Tesla-P4"]
