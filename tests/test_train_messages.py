"""`perfml train` says what it could not do: no interval below 3 boards, no calibrated tier below 2.

Truth: the NeuSight rows of the data home (one board left after --exclude-board), a
2,000-row seeded subsample; what is asserted is the printed account and the saved model.
"""

from __future__ import annotations

import json

from perfml.cli import main

from conftest import shared_data_home

OTHERS = ["Tesla-P4", "Tesla-T4", "Tesla-V100-PCIe-32GB", "A100-PCIe-40GB"]  # leaves the P100


def test_one_board_gives_a_model_without_interval_and_says_so(tmp_path, capsys):
    out = tmp_path / "m"
    args = ["train", "--out", str(out), "--corpus", "dlops", "--source", "neusight-2025", "--dlops-rows", "2000",
            "--data-home", str(shared_data_home().path)]
    for board in OTHERS:
        args += ["--exclude-board", board]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "dlops: trained on" in printed and "of 1 boards" in printed
    assert "fit only: an interval is calibrated by leave-one-board-out over at least 3 boards" in printed
    assert "leave-one-board-out calibration" not in printed  # it did not happen, so it is not claimed
    assert "dlops-calibrated: not trained" in printed and "at least 2, and the rows have 1" in printed
    meta = json.loads((out / "dlops" / "perfml-model.json").read_text())
    assert "intervals" not in meta and not (out / "dlops-calibrated").exists()


def test_too_few_rows_for_a_90_percent_interval_is_said_and_the_model_saved(tmp_path, capsys):
    # 100 rows leave layer norm and softmax with 5 each: their held-out 90 % interval is unbounded.
    # The width figure was inf, and the model could not be written ("free space or choose another --out")
    out = tmp_path / "m"
    assert main(["train", "--out", str(out), "--corpus", "dlops", "--no-calibrated-tier", "--dlops-rows", "100",
                 "--data-home", str(shared_data_home().path)]) == 0
    printed = capsys.readouterr().out
    assert "mean relative width unbounded (too few rows for a 90% interval on some board)" in printed
    meta = json.loads((out / "perfml-model.json").read_text())
    assert meta["figures"]["dlops"][0]["mean_relative_width"] is None
