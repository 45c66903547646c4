"""Experiments on the deep-learning operator corpus (issue 10 §1, §3; issue 11 §3).

Truth: the board registry (architectures and compute capabilities, perfml/data/boards.toml),
the rows of dlops_runtimes.csv.gz, the operator work formulas of perfml.operators. The
experiment runs here are tiny (a few ops, a few rows per group, few trees) so they stay
quick; the figures of the full experiments are printed by the commands in the closing note.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfml.boards import board_architecture, board_generation
from perfml.closed_form.operator_roofline import OperatorRooflineModel
from perfml.errors import EstimatorParameterError, ExperimentSpecError
from perfml.evaluation.protocols import (
    CappedTrainSplit,
    LeaveOneArchitectureOut,
    LeaveOneBoardOut,
    NewestBoardSplit,
    TrainOnBoardsSplit,
)
from perfml.operators import roofline_lower_bound_ms

from conftest import shared_data_home

HOME = shared_data_home()
DLOPS_BOARDS = ("Tesla-P4", "Tesla-P100-PCIe", "Tesla-V100-PCIe-32GB", "Tesla-T4", "A100-PCIe-40GB")


def frame_of(boards) -> pd.DataFrame:
    return pd.DataFrame({"board": list(boards), "op": "add", "B": 8, "H": 64})


# -- generations and protocols -----------------------------------------------------------------
def test_generations_come_from_the_registry():
    # registry: P100 cc 6.0 (Pascal), V100 7.0 (Volta), T4 7.5 (Turing), A100 8.0 (Ampere);
    # the P4 names only its architecture (Pascal, GP104), so it gets Pascal's oldest cc table
    assert board_architecture("Tesla-P4") == "Pascal"
    assert board_generation("Tesla-P4") == (6, 0)
    assert sorted(DLOPS_BOARDS, key=board_generation)[-1] == "A100-PCIe-40GB"
    assert board_architecture("GTX-980") == board_architecture("GTX-750") == "Maxwell"


def test_newest_board_trains_on_older_architectures_only():
    X = frame_of([b for b in DLOPS_BOARDS for _ in range(3)])
    (train, test), = NewestBoardSplit().split(X)
    assert set(X["board"].iloc[test]) == {"A100-PCIe-40GB"}
    assert set(X["board"].iloc[train]) == {"Tesla-P4", "Tesla-P100-PCIe", "Tesla-V100-PCIe-32GB", "Tesla-T4"}
    # nine-app boards: the newest is GTX-980 (cc 5.2); the other Maxwell (GTX-750, cc 5.0) trains nothing
    X = frame_of(["GTX-680", "GTX-750", "GTX-980", "Tesla-K40"])
    (train, test), = NewestBoardSplit().split(X)
    assert list(X["board"].iloc[test]) == ["GTX-980"]
    assert set(X["board"].iloc[train]) == {"GTX-680", "Tesla-K40"}


def test_leave_one_architecture_out_groups_by_architecture():
    X = frame_of(DLOPS_BOARDS)
    splitter = LeaveOneArchitectureOut()
    assert splitter.get_n_splits(X) == 4
    tests = [set(X["board"].iloc[t]) for _, t in splitter.split(X)]
    assert {"Tesla-P4", "Tesla-P100-PCIe"} in tests
    for train, test in splitter.split(X):
        archs_train = {board_architecture(b) for b in X["board"].iloc[train]}
        archs_test = {board_architecture(b) for b in X["board"].iloc[test]}
        assert not archs_train & archs_test


def test_train_on_boards_refuses_overlap_and_missing_boards():
    X = frame_of(DLOPS_BOARDS)
    with pytest.raises(ExperimentSpecError):
        list(TrainOnBoardsSplit(("Tesla-T4",), ("Tesla-T4",)).split(X))
    with pytest.raises(ExperimentSpecError):
        list(TrainOnBoardsSplit(("GTX-680",), ("Tesla-T4",)).split(X))


def test_capped_training_keeps_at_most_n_rows_per_group_and_every_test_row():
    X = pd.DataFrame({"board": np.repeat(["a", "b", "c"], 50), "op": np.tile(["add", "mul"], 75)})
    capped = CappedTrainSplit(LeaveOneBoardOut(), 7, ("board", "op"), random_state=1)
    for (train, test), (_, full_test) in zip(capped.split(X), LeaveOneBoardOut().split(X)):
        np.testing.assert_array_equal(test, full_test)
        counts = X.iloc[train].groupby(["board", "op"]).size()
        assert counts.max() == 7
    again = CappedTrainSplit(LeaveOneBoardOut(), 7, ("board", "op"), random_state=1)
    np.testing.assert_array_equal(capped.kept(X), again.kept(X))


# -- roofline of operator rows -----------------------------------------------------------------
def test_operator_roofline_spec_is_the_lower_bound_and_characterized_uses_achieved_peaks():
    from perfml.characterize import board_characterization

    X = pd.DataFrame({"board": ["Tesla-T4", "Tesla-T4"], "op": ["add", "bmm"], "B": [8192, 4],
                      "H": [65536, np.nan], "M": [np.nan, 1024], "N": [np.nan, 1024], "K": [np.nan, 1024]})
    spec = OperatorRooflineModel().fit(X).predict(X)
    np.testing.assert_allclose(spec, roofline_lower_bound_ms(X).to_numpy())
    from dataclasses import replace

    char = board_characterization("Tesla-T4")
    no_curve = replace(char, stream_curve=None)
    achieved = OperatorRooflineModel(peaks="characterized", characterizations={"Tesla-T4": no_curve}).fit(X).predict(X)
    bw = char.value("dram_bandwidth", "B/s", tiers=("calibrated",))
    # add: 3 tensors of B*H floats at the calibrated bandwidth (committed T4 file, its curve left out)
    assert achieved[0] == pytest.approx(1e3 * 3 * 4 * 8192 * 65536 / bw)
    assert np.all(achieved >= spec)
    # with the committed streaming curve: the time the T4's add took for as many bytes
    curved = OperatorRooflineModel(peaks="characterized", characterizations={"Tesla-T4": char}).fit(X).predict(X)
    assert curved[0] == pytest.approx(1e3 * char.stream_curve.time_s(3 * 4 * 8192 * 65536))
    with pytest.raises(EstimatorParameterError):
        OperatorRooflineModel(peaks="characterized").fit(X)


# -- experiment files -------------------------------------------------------------------------
TINY = """
format = "perfml-experiment"
version = 1
name = "dlops_tiny"
description = "tiny dlops experiment (test)"
protocol = "{protocol}"
[data]
corpus = "dlops"
ops = ["bmm", "add", "relu", "softmax"]
max_train_rows_per_group = 60
{characterization}
[[models]]
name = "op_xgb"
kind = "learned"
learner = "xgboost"
params = {{ n_estimators = 20, max_depth = 3 }}
{char_model}
[[models]]
name = "transfer"
kind = "learned"
learner = "xgboost"
shrinkage = 0.0
[[models]]
name = "roofline"
kind = "closed_form"
model = "roofline"
[published]
suite = "NeuSight"
methods = ["neusight"]
"""

CALIBRATED = '[characterization]\ntier = "calibrated"\ncalibration_ops = ["add"]'
CHAR_MODEL = ('[[models]]\nname = "op_xgb_char"\nkind = "learned"\nlearner = "xgboost"\n'
              'params = { n_estimators = 20, max_depth = 3 }\nfeatures = { characterization = true }')


def write(tmp_path, protocol="newest-board", characterization="", char_model="", extra=""):
    path = tmp_path / "x.toml"
    path.write_text(TINY.format(protocol=protocol, characterization=characterization, char_model=char_model) + extra)
    return path


@pytest.mark.slow
def test_newest_board_experiment_scores_per_op_class_and_keeps_the_calibration_rows_out(tmp_path):
    from perfml.experiments.runner import run_experiment
    from perfml.experiments.spec import load_experiment

    spec = load_experiment(write(tmp_path, characterization=CALIBRATED, char_model=CHAR_MODEL))
    result = run_experiment(spec, data_home=HOME, track=False)
    preds = result.predictions
    assert set(preds["board"]) == {"A100-PCIe-40GB"}
    per_class = result.tables["per_class"]
    # add rows calibrate the target, so they are not scored; relu (EW) rows are
    scored_ops = set(preds["op"])
    assert "add" in scored_ops  # predicted...
    assert set(per_class["op_class"]) == {"BMM", "EW", "Softmax"}
    n_ew = per_class[(per_class["model"] == "roofline") & (per_class["op_class"] == "EW")]["n"].item()
    relu = ((preds["op"] == "relu") & (preds["model"] == "roofline")).sum()
    assert n_ew == relu  # ...but only relu counts in EW
    comparison = result.tables["neusight_comparison"]
    assert {"published:neusight (out)", "op_xgb", "op_xgb_char"} <= set(comparison["model"])
    assert np.isfinite(comparison["sum_ape"]).all()


@pytest.mark.parametrize(
    "extra_data,match",
    [('source = "gpuperfpredict-nca"', "runtimes.csv"), ('ops = ["matmul42"]', "matmul42")],
)
def test_bad_dlops_experiment_files_are_typed_errors(tmp_path, extra_data, match):
    from perfml.experiments.spec import load_experiment

    text = TINY.format(protocol="newest-board", characterization="", char_model="")
    text = text.replace('ops = ["bmm", "add", "relu", "softmax"]', extra_data)
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ExperimentSpecError, match=match):
        load_experiment(path)


def test_a_dlops_model_with_runtimes_features_is_refused(tmp_path):
    from perfml.experiments.spec import load_experiment

    path = write(tmp_path, extra='[[models]]\nname = "x"\nkind = "learned"\nlearner = "xgboost"\nfeatures = { profiles = true }\n')
    with pytest.raises(ExperimentSpecError, match="profiles"):
        load_experiment(path)
    path = write(tmp_path, extra='[[models]]\nname = "x"\nkind = "closed_form"\nmodel = "bsp"\n')
    with pytest.raises(ExperimentSpecError, match="roofline"):
        load_experiment(path)


def test_shipped_dlops_experiment_files_parse():
    from pathlib import Path

    from perfml.experiments.spec import load_experiment

    files = sorted(Path(__file__).resolve().parents[1].joinpath("experiments").glob("dlops_*.toml"))
    assert files
    for path in files:
        spec = load_experiment(path)
        assert spec.corpus == "dlops"


@pytest.mark.parametrize("features", ["{ tiles = true }", "{ transfer = \"auto\" }", "{ board_identity = true }",
                                      "{ launch_floor = false }"])
def test_operator_model_features_are_refused_on_the_runtimes_corpus(tmp_path, features):
    from pathlib import Path

    from perfml.experiments.spec import load_experiment

    text = (Path(__file__).resolve().parents[1] / "experiments" / "unseen_boards.toml").read_text()
    text += f'\n[[models]]\nname = "x_dlops_only"\nkind = "learned"\nlearner = "xgboost"\nfeatures = {features}\n'
    path = tmp_path / "runtimes.toml"
    path.write_text(text)
    with pytest.raises(ExperimentSpecError, match="dlops"):
        load_experiment(path)


def test_a_dlops_model_entry_passes_the_operator_options_to_the_estimator(tmp_path):
    from perfml.experiments.dlops import build_operator_estimator
    from perfml.experiments.spec import load_experiment

    path = write(tmp_path, extra='[[models]]\nname = "x"\nkind = "learned"\nlearner = "xgboost"\n'
                 'features = { transfer = "auto", tiles = false, board_identity = true, launch_floor = false }\n'
                 '[[models]]\nname = "y"\nkind = "learned"\nlearner = "xgboost"\n')
    model = [m for m in load_experiment(path).models if m.name == "x"][0]
    est = build_operator_estimator(model)
    assert (est.transfer, est.tiles, est.board_identity, est.wave_base, est.launch_floor) == ("auto", False, True, False, False)
    # an entry without them gets the estimator's defaults
    plain = [m for m in load_experiment(path).models if m.name == "y"][0]
    from perfml.learned.operators import OperatorRegressor

    defaults = OperatorRegressor().get_params()
    est = build_operator_estimator(plain)
    assert all(est.get_params()[k] == defaults[k] for k in ("transfer", "tiles", "board_identity", "wave_base", "launch_floor"))


def test_an_xgboost_objective_reaches_the_operator_model_and_a_bad_one_is_refused(tmp_path):
    from perfml.experiments.dlops import build_operator_estimator
    from perfml.experiments.spec import load_experiment

    path = write(tmp_path, extra='[[models]]\nname = "x"\nkind = "learned"\nlearner = "xgboost"\n'
                 'params = { objective = "reg:absoluteerror" }\n')
    model = [m for m in load_experiment(path).models if m.name == "x"][0]
    assert build_operator_estimator(model).learner_params["objective"] == "reg:absoluteerror"
    path = write(tmp_path, extra='[[models]]\nname = "x"\nkind = "learned"\nlearner = "xgboost"\n'
                 'params = { objective = "reg:gamma" }\n')
    with pytest.raises(ExperimentSpecError, match="objective"):
        load_experiment(path)


@pytest.mark.slow
def test_a_tracked_run_records_what_an_auto_feature_group_resolved_to(tmp_path, monkeypatch):
    """transfer = "auto" decides per op class by an inner cross-validation; the run says what it chose."""
    import json

    import mlflow

    from perfml.experiments.runner import run_experiment
    from perfml.experiments.spec import load_experiment

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    path = write(tmp_path, extra='[[models]]\nname = "op_auto"\nkind = "learned"\nlearner = "xgboost"\n'
                 'params = { n_estimators = 20, max_depth = 3 }\nfeatures = { transfer = "auto" }\n')
    run_experiment(load_experiment(path), data_home=HOME, track=True)
    client = mlflow.tracking.MlflowClient()
    runs = client.search_runs([client.get_experiment_by_name("dlops_tiny").experiment_id])
    by_model = {r.data.tags.get("perfml.model"): r for r in runs}
    auto = by_model["op_auto"]
    chosen = client.download_artifacts(auto.info.run_id, "auto_selection.json", str(tmp_path))
    selection = json.loads(open(chosen).read())["transfer"]
    assert set(selection["use_transfer"]) == {"BMM", "EW", "Softmax"}
    kept = sorted(c for c, used in selection["use_transfer"].items() if used)
    assert auto.data.tags["perfml.transfer_classes"] == (",".join(kept) or "none")
    # a model without an "auto" group records no selection
    assert "perfml.transfer_classes" not in by_model["op_xgb"].data.tags
    assert "auto_selection.json" not in {a.path for a in client.list_artifacts(by_model["op_xgb"].info.run_id)}
