"""The calibrated-tier operator sub-model of a bundle (``dlops-calibrated``, issue 11 §3).

Data: operator rows of ``dlops_runtimes.csv.gz`` (shared/datasets), a stratified subsample of
four training boards; the target Tesla-T4 is not among them and enters only through its
own element-wise ``add`` calls (``--calibration``). Files whose times are scaled by this
test are synthetic and named so. Small xgboost models (the mechanism, not an accuracy claim:
the accuracy figures come from ``perfml train`` and ``experiments/``).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from perfml.cli import main
from perfml.errors import CalibrationDataError, ModelFormatError
from perfml.learned.bundle import load_predictor, save_bundle
from perfml.learned.operator_model import _regressor
from perfml.learned.training import corpus_figures, fit_corpus, operator_training_rows, \
    training_characterizations
from conftest import shared_data_home

HOME = shared_data_home()
TARGET = "Tesla-T4"
FAST = {"n_estimators": 30, "max_depth": 4}


@pytest.fixture(scope="module")
def corpus():
    return operator_training_rows(HOME, max_rows=8000, random_state=0)


@pytest.fixture(scope="module")
def trained(corpus, tmp_path_factory):
    rows = corpus[corpus.board != TARGET].reset_index(drop=True)
    mp = pytest.MonkeyPatch()
    mp.setattr(_regressor, "DEFAULT_LEARNER_PARAMS", {**_regressor.DEFAULT_LEARNER_PARAMS, **FAST})
    try:
        parts = {}
        for name in ("dlops", "dlops-calibrated"):
            model, calibration, oof = fit_corpus(name, rows, data_home=HOME, n_jobs=1)
            parts[name] = (model, rows, {"intervals": calibration})  # save_bundle adds the calibration entry
            parts[name + "/oof"] = oof
    finally:
        mp.undo()
    path = save_bundle({k: v for k, v in parts.items() if "/" not in k}, tmp_path_factory.mktemp("b") / "model")
    return path, rows, parts


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from perfml.datasets import load_dlops_runtimes

    folder = tmp_path_factory.mktemp("target")
    rt = load_dlops_runtimes(HOME)
    target = rt[rt.board == TARGET]
    queries = target[target.op.isin(["relu", "mul", "softmax", "bmm"])].sample(60, random_state=0)
    queries.drop(columns=["time_ms"]).to_csv(folder / "queries.csv", index=False)
    adds = target[target.op == "add"][["board", "op", "B", "H", "time_ms"]]
    adds.to_csv(folder / "adds.csv", index=False)
    adds.assign(time_ms=1.5 * adds.time_ms).to_csv(folder / "synthetic_slower_adds.csv", index=False)
    target[target.op == "mul"][["board", "op", "B", "H", "time_ms"]].to_csv(folder / "muls.csv", index=False)
    return folder


def _predict(model, folder, tmp_path, *extra):
    out = tmp_path / f"out{len(list(tmp_path.iterdir()))}.csv"
    status = main(["predict", "--model", str(model), "--queries", str(folder / "queries.csv"), "--output", str(out),
                   "--data-home", str(HOME.path), *extra])
    return status, out


def test_the_training_boards_are_characterized_from_their_add_calls_only(trained):
    path, rows, _ = trained
    bundle = load_predictor(path, data_home=HOME)
    assert set(bundle.models) == {"dlops", "dlops-calibrated"}
    model = bundle.models["dlops-calibrated"]
    assert model.characterization and model.metadata_["calibration"] == {"column": "op", "kernels": ["add"]}
    # what was saved is what training_characterizations builds from the add rows, and nothing of other ops
    expected = training_characterizations("dlops-calibrated", rows)
    assert sorted(model.characterizations) == sorted(expected) == sorted(rows.board.unique())
    for board, ch in model.characterizations.items():
        assert ch.to_dict()["values"] == expected[board].to_dict()["values"]
        calibrated = [v for v in ch.values if v.tier == "calibrated"]
        assert calibrated
        for v in calibrated:  # each names the kernels it came from
            kernels = v.provenance.get("kernels") or [v.provenance.get("kernel")]
            assert kernels == ["add"], (board, v.quantity, kernels)
    # the spec-only sub-model has no characterization at all
    assert bundle.models["dlops"].characterizations is None and not bundle.models["dlops"].characterization


def test_the_add_runs_that_characterize_a_board_are_not_scored(trained):
    _, rows, parts = trained
    oof = parts["dlops-calibrated/oof"]
    is_add = rows.op.to_numpy() == "add"
    assert np.isnan(oof[is_add]).all() and np.isfinite(oof[~is_add]).all()
    figures = corpus_figures("dlops-calibrated", rows, oof)
    assert figures[0]["rows"] == int((~is_add).sum())
    assert np.isfinite(parts["dlops/oof"]).all()  # the spec-only tier scores every row


def test_without_a_calibration_the_spec_only_sub_model_answers(trained, files, tmp_path, capsys):
    path, _, _ = trained
    status, out = _predict(path, files, tmp_path)
    assert status == 0, capsys.readouterr().err
    bundle = load_predictor(path, data_home=HOME)
    queries = pd.read_csv(files / "queries.csv")
    np.testing.assert_allclose(pd.read_csv(out)["predicted_ms"], bundle.models["dlops"].predict(queries), rtol=1e-6)
    assert set(pd.read_csv(out)["tier"]) == {"spec"}


def test_each_row_says_which_tier_answered_it(trained, files, tmp_path, capsys):
    path, _, _ = trained
    status, out = _predict(path, files, tmp_path, "--calibration", str(files / "adds.csv"))
    assert status == 0 and set(pd.read_csv(out)["tier"]) == {"calibrated"}
    queries = pd.read_csv(files / "queries.csv").assign(tier="x")
    queries.to_csv(tmp_path / "with_tier.csv", index=False)
    bad = tmp_path / "bad.csv"
    status = main(["predict", "--model", str(path), "--queries", str(tmp_path / "with_tier.csv"), "--output", str(bad),
                   "--data-home", str(HOME.path)])
    assert status == 2 and not bad.exists() and "column 'tier' is an output column" in capsys.readouterr().err


def test_a_calibration_of_add_calls_is_answered_by_the_calibrated_sub_model(trained, files, tmp_path, capsys):
    from perfml.learned.target_characterization import calibrate_target

    path, _, _ = trained
    status, out = _predict(path, files, tmp_path, "--calibration", str(files / "adds.csv"))
    err = capsys.readouterr().err
    assert status == 0, err
    assert "changes none of its predictions" not in err and "fp32_throughput not calibrated" not in err
    bundle = load_predictor(path, data_home=HOME)
    model = bundle.models["dlops-calibrated"]
    queries = pd.read_csv(files / "queries.csv")
    target = calibrate_target(files / "adds.csv", [TARGET], kernels=("op", ("add",)))
    model.set_params(characterizations={**model.characterizations, TARGET: target})
    np.testing.assert_allclose(pd.read_csv(out)["predicted_ms"], model.predict(queries), rtol=1e-6)
    spec = bundle.models["dlops"].predict(queries)
    assert not np.allclose(model.predict(queries), spec)


def test_slower_add_calls_never_speed_a_call_up(trained, files, tmp_path):
    path, _, _ = trained
    predicted = {}
    for name in ("adds", "synthetic_slower_adds"):
        status, out = _predict(path, files, tmp_path, "--calibration", str(files / f"{name}.csv"))
        assert status == 0
        predicted[name] = pd.read_csv(out)
    ew = predicted["adds"].op.isin(["relu", "mul"]).to_numpy()  # memory-bound element-wise calls
    slow, base = predicted["synthetic_slower_adds"].predicted_ms.to_numpy(), predicted["adds"].predicted_ms.to_numpy()
    assert np.all(slow[ew] >= base[ew] * (1 - 1e-9))
    assert np.median(slow[ew] / base[ew]) > 1.2


def test_a_calibration_without_add_calls_is_refused_and_nothing_written(trained, files, tmp_path, capsys):
    path, _, _ = trained
    status, out = _predict(path, files, tmp_path, "--calibration", str(files / "muls.csv"))
    err = capsys.readouterr().err
    assert status == 2 and not out.exists()
    assert "no run of add" in err and "Tesla-T4" in err and "Traceback" not in err


def test_a_characterization_with_values_the_training_boards_lacked_is_flagged(trained, files, tmp_path, capsys):
    """The committed Tesla-T4 characterization was calibrated from every op (its FP32 rate from bmm):
    a rate the model's training boards (calibrated from add calls only) never had is named and
    not used."""
    from perfml.characterize import board_characterization

    path, _, _ = trained
    board_characterization(TARGET).save(tmp_path / "t4.json")
    status, out = _predict(path, files, tmp_path, "--characterization", str(tmp_path / "t4.json"))
    err = capsys.readouterr().err
    assert status == 0 and out.exists()
    assert "fp32_throughput (calibrated)" in err and "which no training board of the model had" in err
    assert "not used" in err


def test_a_changed_or_misnamed_characterization_file_is_refused(trained, tmp_path):
    import shutil

    path, _, _ = trained
    copy = tmp_path / "copy"
    shutil.copytree(path, copy)
    first = sorted((copy / "dlops-calibrated" / "characterizations").iterdir())[0]
    data = json.loads(first.read_text())
    data["warnings"] = data["warnings"] + ["edited"]
    first.write_text(json.dumps(data))
    with pytest.raises(ModelFormatError, match="changed after saving"):
        load_predictor(copy, data_home=HOME)


def test_a_board_without_add_runs_is_left_out_and_one_with_too_few_stops_training(corpus):
    from perfml.errors import InvalidValueError
    from perfml.learned.training import calibrated_tier_rows

    rows = corpus[corpus.board != TARGET]
    p4_add = (rows.board == "Tesla-P4") & (rows.op == "add")
    without = rows[~p4_add].reset_index(drop=True)
    kept, left_out = calibrated_tier_rows("dlops-calibrated", without)
    assert left_out == ["Tesla-P4"] and "Tesla-P4" not in set(kept.board)
    with pytest.raises(InvalidValueError, match="Tesla-P4"):  # not silently trained with a committed characterization
        fit_corpus("dlops-calibrated", without, data_home=HOME, calibrate=False)
    too_few = rows[~p4_add | (p4_add & (rows.groupby(p4_add).cumcount() < 2))].reset_index(drop=True)
    with pytest.raises(CalibrationDataError, match=r"Tesla-P4.*--no-calibrated-tier"):
        training_characterizations("dlops-calibrated", too_few)


def test_a_bundle_without_a_calibrated_sub_model_keeps_the_spec_one_and_says_so(trained, files, tmp_path, capsys):
    path, rows, parts = trained
    only_spec = save_bundle({"dlops": parts["dlops"]}, tmp_path / "spec_only")
    status, out = _predict(only_spec, files, tmp_path, "--calibration", str(files / "adds.csv"))
    assert status == 0 and "changes none of its predictions" in capsys.readouterr().err


def test_a_calibration_that_skips_the_l2_step_or_never_leaves_the_l2_is_flagged(trained, files, tmp_path, capsys):
    """Sizes of the target's real add calls chosen to leave a gap around its L2, or to stay inside it."""
    from perfml.boards import get_board

    path, _, _ = trained
    l2 = get_board(TARGET).l2_bytes
    adds = pd.read_csv(files / "adds.csv")
    nbytes = 3 * 4 * adds.B * adds.H  # add: two inputs and one output of B*H float32
    gapped, small = tmp_path / "gapped.csv", tmp_path / "small.csv"
    adds[(nbytes < l2 / 8) | (nbytes > 8 * l2)].to_csv(gapped, index=False)
    adds[nbytes < l2].to_csv(small, index=False)
    for name, expected in ((gapped, "interpolated across the step from L2 to DRAM"), (small, "under 4 x the L2")):
        status, _ = _predict(path, files, tmp_path, "--calibration", str(name))
        err = capsys.readouterr().err
        assert status == 0 and expected in err, err
    status, _ = _predict(path, files, tmp_path, "--calibration", str(files / "adds.csv"))
    err = capsys.readouterr().err
    assert status == 0 and "step from L2" not in err and "x the L2" not in err


def test_a_second_target_replaces_the_first_and_keeps_the_training_characterizations(trained, files):
    from perfml.learned.target_characterization import TargetFirst, use_target

    path, _, _ = trained
    bundle = load_predictor(path, data_home=HOME)
    queries = pd.read_csv(files / "queries.csv")
    trained_with = bundle.models["dlops-calibrated"].characterizations
    first = None
    for name in ("synthetic_slower_adds", "adds"):
        use_target(bundle, queries, "q", calibration=files / f"{name}.csv")
        given = bundle.models["dlops-calibrated"].characterizations
        assert isinstance(given, TargetFirst) and given.others is trained_with
        first = first if first is not None else predict_any_ms(bundle, queries)
    # the second call's target (the measured adds) replaced the first (1.5x slower) one
    assert np.median(first / predict_any_ms(bundle, queries)) > 1.2


def test_a_bundle_calibrated_for_one_board_refuses_rows_of_another(trained, files):
    """After use_target the sub-models hold the target's characterization: another board's row is refused, not mispredicted."""
    from perfml.errors import QueryValidationError
    from perfml.learned.bundle import predict_any
    from perfml.learned.target_characterization import use_target

    path, _, _ = trained
    bundle = load_predictor(path, data_home=HOME)
    queries = pd.read_csv(files / "queries.csv")
    other = queries.head(3).assign(board="A100-PCIe-40GB")
    spec_answer = predict_any(bundle, other, "q")  # before: the spec-only sub-model answers any board
    assert (spec_answer["tier"] == "spec").all()
    use_target(bundle, queries, "q", calibration=files / "adds.csv")
    assert bundle.target_board == TARGET
    assert (predict_any(bundle, queries.assign(board="Tesla T4"), "q")["tier"] == "calibrated").all()  # an alias
    mixed = pd.concat([queries.head(2), other], ignore_index=True)
    with pytest.raises(QueryValidationError, match=r"row 3 \(line 4\), column board: this model was calibrated for Tesla-T4.*"
                                                   r"'A100-PCIe-40GB'"):
        predict_any(bundle, mixed, "q")


def predict_any_ms(bundle, queries):
    from perfml.learned.bundle import predict_any

    return predict_any(bundle, queries, "q")["predicted_ms"].to_numpy()


# -- the nine described apps: calibrated by the target's vectorAdd runs -------------------------

APP_BOARDS = ["GTX-680", "GTX-970", "GTX-980", "Tesla-K20"]
APP_TARGET = "GTX-750"


@pytest.fixture(scope="module")
def apps_trained(tmp_path_factory):
    from perfml.learned import regressors
    from perfml.learned.training import calibrated_tier_rows, corpus_rows

    rows = corpus_rows(HOME, corpora=["described"])["described"]
    target = rows[rows.board == APP_TARGET]
    rows = rows[rows.board.isin(APP_BOARDS + ["GT-630"])].reset_index(drop=True)  # GT-630: no vectorAdd runs
    mp = pytest.MonkeyPatch()
    mp.setitem(regressors._DEFAULTS, "xgboost", {**regressors._DEFAULTS["xgboost"], **FAST})
    try:
        spec_model, spec_cal, _ = fit_corpus("described", rows, data_home=HOME)
        kept, left_out = calibrated_tier_rows("described-calibrated", rows)
        cal_model, cal_cal, oof = fit_corpus("described-calibrated", kept, data_home=HOME)
    finally:
        mp.undo()
    path = save_bundle({"described": (spec_model, rows, {"intervals": spec_cal}),
                        "described-calibrated": (cal_model, kept, {"intervals": cal_cal})},
                       tmp_path_factory.mktemp("a") / "model")
    folder = tmp_path_factory.mktemp("apps")
    # matrix_sum_coalesced: carried by the memory roofline, where the achieved bandwidth enters
    queries = target[target.app_id.isin(["matrix_sum_coalesced", "dotProd"])].groupby("app_id").head(20)
    queries[["board", "app_id", "input_size", "block_x", "block_y", "grid_x", "grid_y"]].to_csv(folder / "q.csv", index=False)
    vadd = target[target.app_id == "vectorAdd"].rename(columns={"measured_ms": "time_ms"})
    vadd[["board", "app_id", "input_size", "block_x", "block_y", "grid_x", "grid_y", "time_ms"]].to_csv(
        folder / "vadd.csv", index=False)
    queries.rename(columns={"measured_ms": "time_ms"})[["board", "app_id", "input_size", "time_ms"]].to_csv(
        folder / "no_vadd.csv", index=False)
    return path, kept, left_out, oof, folder


def test_the_described_calibrated_tier_trains_on_boards_with_vectoradd_runs_only(apps_trained):
    path, kept, left_out, oof, _ = apps_trained
    assert left_out == ["GT-630"] and sorted(kept.board.unique()) == sorted(APP_BOARDS)
    assert np.isnan(oof[kept.app_id.to_numpy() == "vectorAdd"]).all()
    model = load_predictor(path, data_home=HOME).models["described-calibrated"]
    assert model.characterization and model.closed_form_peaks == "characterized"
    assert sorted(model.characterizations) == sorted(APP_BOARDS)  # saved as files, read back


def test_a_vectoradd_calibration_moves_the_nine_apps_and_a_file_without_it_is_refused(apps_trained, tmp_path, capsys):
    path, _, _, _, folder = apps_trained
    outs = {}
    for name, extra in (("spec", []), ("cal", ["--calibration", str(folder / "vadd.csv")])):
        out = tmp_path / f"{name}.csv"
        status = main(["predict", "--model", str(path), "--queries", str(folder / "q.csv"), "--output", str(out),
                       "--data-home", str(HOME.path), *extra])
        assert status == 0, capsys.readouterr().err
        outs[name] = pd.read_csv(out)["predicted_ms"].to_numpy()
    assert "changes none of its predictions" not in capsys.readouterr().err
    bundle = load_predictor(path, data_home=HOME)
    queries = pd.read_csv(folder / "q.csv")
    np.testing.assert_allclose(outs["spec"], bundle.models["described"].predict(queries), rtol=1e-6)
    memory_bound = (queries.app_id == "matrix_sum_coalesced").to_numpy()
    assert not np.allclose(outs["cal"][memory_bound], outs["spec"][memory_bound])
    out = tmp_path / "refused.csv"
    status = main(["predict", "--model", str(path), "--queries", str(folder / "q.csv"), "--output", str(out),
                   "--data-home", str(HOME.path), "--calibration", str(folder / "no_vadd.csv")])
    assert status == 2 and not out.exists() and "no run of vectorAdd" in capsys.readouterr().err


def test_a_calibration_whose_repeats_disagree_is_told(trained, files, tmp_path, capsys):
    path, _, _ = trained
    adds = pd.read_csv(files / "adds.csv")
    pd.concat([adds, adds.assign(time_ms=adds.time_ms * 2.5)]).to_csv(tmp_path / "pasted.csv", index=False)
    status, out = _predict(path, files, tmp_path, "--calibration", str(tmp_path / "pasted.csv"))
    err = capsys.readouterr().err
    assert status == 0, err
    assert "measured more than once are more than 2x apart" in err
    status, out = _predict(path, files, tmp_path, "--calibration", str(files / "adds.csv"))
    assert status == 0 and "more than 2x apart" not in capsys.readouterr().err


def test_rows_of_other_boards_in_a_calibration_are_named_not_dropped_silently(trained, files, tmp_path, capsys):
    """A calibration uses the target's rows only; rows of another board (a mixed-up file, an
    unregistered or misspelt name, bad values) were left out without a word. They are still
    left out (the prediction is the one of the target's rows alone), and the warning says so."""
    path, _, _ = trained
    adds = pd.read_csv(files / "adds.csv")
    extra = pd.DataFrame([{"board": "Bogus-GPU🚀", "op": "add", "B": 15892, "H": 2645, "time_ms": 1e-7},
                          {"board": "L4", "op": "add", "B": -5, "H": float("nan"), "time_ms": -1.0}])
    pd.concat([adds, extra]).to_csv(tmp_path / "mixed.csv", index=False)
    status, mixed = _predict(path, files, tmp_path, "--calibration", str(tmp_path / "mixed.csv"))
    err = capsys.readouterr().err
    assert status == 0, err
    assert f"2 of its {len(adds) + 2} rows are of other boards (Bogus-GPU🚀, L4) and were left out" in err
    status, alone = _predict(path, files, tmp_path, "--calibration", str(files / "adds.csv"))
    assert status == 0 and "other boards" not in capsys.readouterr().err
    pd.testing.assert_frame_equal(pd.read_csv(mixed), pd.read_csv(alone))
