"""Experiments at two tiers (issue 11 §3): calibration runs from another source, tier tags in MLflow, report side by side."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfml.errors import CalibrationDataError
from perfml.experiments.runner import calibrated_characterizations, calibration_rows, experiment_data, scored_mask
from perfml.experiments.spec import load_experiment

from conftest import needs_data_home

ROOT = Path(__file__).resolve().parents[1]


def test_rodinia_boards_are_calibrated_by_their_vectorAdd_runs_of_the_nine_app_source(data_home):
    spec = load_experiment(ROOT / "experiments" / "architectures_rodinia.toml")
    rt = experiment_data(spec, data_home)
    assert "vectorAdd" not in set(rt.app_id)  # Rodinia has no vectorAdd of its own
    calib = calibration_rows(spec, rt, data_home)
    assert set(calib.app_id) == {"vectorAdd"} and set(calib.source) == {"gpuperfpredict-nca"}
    assert set(calib.board) == set(rt.board)  # every Rodinia board has them
    assert scored_mask(spec, rt).all()  # none of the scored rows fed a characterization
    chs = calibrated_characterizations(spec, rt.drop_duplicates("board"), data_home)
    for board, ch in chs.items():
        assert ch.board == board
        assert ch.best("dram_bandwidth", "B/s", tiers=("calibrated",)) is not None


def test_same_source_calibration_runs_are_not_scored(data_home):
    spec = load_experiment(ROOT / "experiments" / "architectures_nine_apps.toml")
    rt = experiment_data(spec, data_home)
    mask = scored_mask(spec, rt)
    assert not mask[rt.app_id.to_numpy() == "vectorAdd"].any() and mask[rt.app_id.to_numpy() != "vectorAdd"].all()


def test_a_board_without_calibration_runs_is_named(data_home):
    spec = load_experiment(ROOT / "experiments" / "architectures_rodinia.toml")
    rt = pd.DataFrame({"board": ["GTX-680", "GT-630"], "app_id": "lud_diagonal", "input_size": 16.0})
    with pytest.raises(CalibrationDataError, match="GT-630") as err:
        calibration_rows(spec, rt, data_home)
    assert "GTX-680" not in str(err.value).split("board(s)")[1].split(" in ")[0]


def _small_spec(tmp_path) -> Path:
    path = tmp_path / "small_tiers.toml"
    path.write_text(
        'name = "small_tiers"\ndescription = "three boards, two apps, both tiers"\nprotocol = "leave-one-board-out"\n'
        '[data]\nsource = "gpuperfpredict-nca"\nboards = ["GTX-680", "GTX-980", "Tesla-K40"]\n'
        'apps = ["vectorAdd", "matrix_sum_coalesced"]\n'
        '[characterization]\ntier = "calibrated"\ncalibration_apps = ["vectorAdd"]\n'
        '[[models]]\nname = "transfer_only_characterized"\nkind = "learned"\nlearner = "xgboost"\nshrinkage = 0.0\n'
        'params = { n_estimators = 5 }\nfeatures = { closed_form_peaks = "characterized", profiles = false }\n'
        '[[models]]\nname = "transfer_only"\nkind = "learned"\nlearner = "xgboost"\nshrinkage = 0.0\n'
        'params = { n_estimators = 5 }\nfeatures = { profiles = false }\n'
        '[[models]]\nname = "roofline"\nkind = "closed_form"\nmodel = "roofline"\n'
    )
    return path


@needs_data_home()
@pytest.mark.slow
def test_each_model_run_is_tagged_with_its_tier_and_report_sets_the_tiers_side_by_side(tmp_path, monkeypatch, capsys):
    from perfml.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert main(["experiment", "run", str(_small_spec(tmp_path)), "--json"]) == 0
    summary = pd.DataFrame(json.loads(capsys.readouterr().out)["summary"])
    assert dict(zip(summary.model, summary.tier)) == {
        "transfer_only_characterized": "calibrated", "transfer_only": "spec", "roofline": "spec"}
    import mlflow

    client = mlflow.tracking.MlflowClient()
    runs = client.search_runs([client.get_experiment_by_name("small_tiers").experiment_id])
    tags = {r.data.tags.get("perfml.model"): r.data.tags.get("perfml.tier") for r in runs if "perfml.model" in r.data.tags}
    assert tags == {"transfer_only_characterized": "calibrated", "transfer_only": "spec", "roofline": "spec"}

    assert main(["report", "--experiment", "small_tiers", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    tiers = pd.DataFrame(out["small_tiers:tiers"]).set_index("family")
    # one row per model family, its spec-only and calibrated figures side by side, as the summary has them
    row = tiers.loc["transfer_only"]
    by_model = summary.set_index("model")
    assert np.isclose(row["mape_spec"], by_model.loc["transfer_only", "mape"])
    assert np.isclose(row["mape_calibrated"], by_model.loc["transfer_only_characterized", "mape"])
    assert np.isnan(tiers.loc["roofline", "mape_calibrated"])
    per_board = pd.DataFrame(out["small_tiers:per_board_tiers"])
    assert set(per_board.board) == {"GTX-680", "GTX-980", "Tesla-K40"}
    assert {"transfer_only/spec", "transfer_only/calibrated"} <= set(per_board.columns)
    assert main(["report", "--experiment", "small_tiers"]) == 0
    text = capsys.readouterr().out
    assert "spec-only and calibrated side by side" in text


def test_the_tiers_table_needs_models_of_both_tiers():
    """An experiment of spec-only models has no tiers table (report printed one with empty calibrated
    columns: helper probe); with a calibrated model it has one, and per board too."""
    from perfml.experiments.tiers import per_board_tiers, tier_table

    spec_only = pd.DataFrame({"model": ["xgb", "bsp"], "family": ["xgb", "bsp"], "tier": ["spec", "spec"],
                              "mape": [10.0, 40.0], "within_band": [0.9, 0.3]})
    per_board = pd.DataFrame({"model": ["xgb", "bsp"], "board": ["GTX-980", "GTX-980"], "mape": [10.0, 40.0]})
    assert tier_table(spec_only) is None and per_board_tiers(per_board, spec_only) is None
    calibrated_only = spec_only.assign(tier="calibrated")
    assert tier_table(calibrated_only) is None
    both = pd.concat([spec_only, pd.DataFrame({"model": ["xgb_characterized"], "family": ["xgb"],
                                               "tier": ["calibrated"], "mape": [8.0], "within_band": [0.95]})])
    table = tier_table(both).set_index("family")
    assert table.loc["xgb", "mape_spec"] == 10.0 and table.loc["xgb", "mape_calibrated"] == 8.0
    assert np.isnan(table.loc["bsp", "mape_calibrated"])
    assert per_board_tiers(per_board, both) is not None
