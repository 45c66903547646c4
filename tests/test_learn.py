"""Learned predictor: splitters, no leakage, save/load round trip, bad input.

Data: the gpuperfpredict-nca runtimes of shared/datasets (a subset, to keep tests fast).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from perfml.errors import DatasetSchemaError, EstimatorParameterError, ModelFormatError, ResultFileExistsError, UnknownAppError
from perfml.evaluation.closed_form import describable_runtimes
from perfml.learned import FeatureBuilder, RuntimeRegressor, SizeExtrapolationSplit, cross_val_predictions, make_splitter
from perfml.learned.persistence import load_model, save_model

from conftest import nca_every_third_size, shared_data_home

HOME = shared_data_home()  # the shared datasets, resolved here as the CLI would (tests are entry points)

BOARDS = ["GTX-680", "GTX-970", "GTX-Titan", "Tesla-K20"]
APPS = ["matMul_gpu", "vectorAdd", "matrix_sum_normal"]
FAST = {"n_estimators": 60, "max_depth": 4}


@pytest.fixture(scope="module")
def data():
    return nca_every_third_size(BOARDS, APPS)


def test_leave_one_board_out_holds_out_each_board_once(data):
    splitter, groups = make_splitter("leave-one-board-out", data)
    seen = []
    for train, test in splitter.split(data, groups=groups):
        test_boards = set(data.board.iloc[test])
        assert len(test_boards) == 1 and test_boards.isdisjoint(set(data.board.iloc[train]))
        seen.extend(test_boards)
    assert sorted(seen) == sorted(BOARDS)


def test_leave_one_app_out_and_grouped_kfold_keep_groups_apart(data):
    for protocol, key in (("leave-one-app-out", "app_id"), ("grouped-kfold", None)):
        splitter, groups = make_splitter(protocol, data)
        for train, test in splitter.split(data, groups=groups):
            assert set(groups[train]).isdisjoint(set(groups[test]))


def test_size_extrapolation_tests_only_larger_sizes(data):
    (train, test), = SizeExtrapolationSplit(0.7).split(data, groups=data.app_id.to_numpy())
    for app in APPS:
        tr = data.input_size.iloc[train][data.app_id.iloc[train] == app]
        te = data.input_size.iloc[test][data.app_id.iloc[test] == app]
        assert len(te) and tr.max() < te.min()


def test_target_board_runtimes_never_reach_its_features(data):
    """Fit on all boards: a board's own runtimes must not change its own (cross-fitted) features."""
    y = data.measured_ms.to_numpy()
    base = FeatureBuilder(data_home=HOME).fit(data, y).transform(data)
    perturbed_y = np.where(data.board == "GTX-Titan", y * 1000.0, y)
    again = FeatureBuilder(data_home=HOME).fit(data, perturbed_y).transform(data)
    own = (data.board == "GTX-Titan").to_numpy()
    pd.testing.assert_frame_equal(base[own], again[own])
    # ...while the other Kepler boards' features do depend on GTX-Titan (the test can fail).
    assert not np.allclose(base.loc[~own, "bsp_log_lambda"], again.loc[~own, "bsp_log_lambda"])


def test_target_board_profiles_never_reach_its_features(data, data_home):
    real = data_home.table("profiles_nca")
    y = data.measured_ms.to_numpy()
    base = FeatureBuilder(data_home=data_home).fit(data, y).transform(data)
    fake = real.copy()
    cols = [c for c in fake.columns if c.startswith(("m.", "e."))]
    fake.loc[fake.board == "GTX-970", cols] = fake.loc[fake.board == "GTX-970", cols] * 7
    again = FeatureBuilder(data_home=data_home.with_tables(profiles_nca=fake)).fit(data, y).transform(data)
    own = (data.board == "GTX-970").to_numpy()
    prof = [c for c in base.columns if c.startswith("prof_")]
    pd.testing.assert_frame_equal(base.loc[own, prof], again.loc[own, prof])
    assert not base.loc[~own, prof].equals(again.loc[~own, prof])


def test_lobo_prediction_is_invariant_to_the_held_out_boards_runtimes(data):
    model = RuntimeRegressor(learner="xgboost", learner_params=FAST, data_home=HOME)  # shrinkage="auto": inner CV too
    y = data.measured_ms.to_numpy()
    p1 = cross_val_predictions(model, data, y, "leave-one-board-out")
    y2 = np.where(data.board == "Tesla-K20", y * 3.0, y)
    p2 = cross_val_predictions(model, data, y2, "leave-one-board-out")
    k20 = p1.board == "Tesla-K20"
    assert np.allclose(p1.predicted_ms[k20], p2.predicted_ms[k20])
    assert not np.allclose(p1.predicted_ms[~k20], p2.predicted_ms[~k20])


@pytest.mark.parametrize("learner", ["xgboost", "hgb", "linear", "svr", "random_forest"])
def test_every_learner_fits_and_predicts_positive_times(data, learner):
    params = FAST if learner == "xgboost" else ({"max_iter": 60} if learner == "hgb" else None)
    if learner == "random_forest":
        params = {"n_estimators": 20}
    model = RuntimeRegressor(learner=learner, target="log" if learner in ("linear", "svr") else "residual",
                             learner_params=params, shrinkage=1.0, data_home=HOME).fit(data, data.measured_ms)
    pred = model.predict(data)
    assert np.all(np.isfinite(pred) & (pred > 0))


def test_auto_shrinkage_is_chosen_on_the_grid_and_fixed_values_are_used(data):
    auto = RuntimeRegressor(learner="xgboost", learner_params=FAST, data_home=HOME).fit(data, data.measured_ms)
    assert auto.shrinkage_ in set(np.round(np.linspace(0, 1, 11), 10))
    zero = RuntimeRegressor(learner="xgboost", learner_params=FAST, shrinkage=0.0, data_home=HOME).fit(data, data.measured_ms)
    F = zero.features_.transform(data)
    assert np.allclose(np.log(zero.predict(data)), F["xfer_log_t"])  # shrinkage 0 = the transfer baseline
    with pytest.raises(EstimatorParameterError, match="shrinkage"):
        RuntimeRegressor(learner_params=FAST, shrinkage=2, data_home=HOME).fit(data, data.measured_ms)


def test_monotone_in_input_size(data):
    """More work never means less time: predictions rise with N for a fixed board/app/launch."""
    model = RuntimeRegressor(learner="xgboost", learner_params=FAST, shrinkage=1.0, data_home=HOME).fit(data, data.measured_ms)
    # whole sizes (a size counts elements: the estimators refuse 1048576.5)
    q = pd.DataFrame({"board": "GTX-980", "app_id": "vectorAdd", "input_size": np.unique(np.round(np.geomspace(2**12, 2**26, 40))),
                      "block_x": 256, "block_y": 1})
    q["grid_x"] = np.ceil(q.input_size / 256)
    q["grid_y"] = 1
    pred = model.predict(q)
    assert np.all(np.diff(pred) >= -1e-9 * pred[:-1])


def test_more_bandwidth_beyond_the_training_boards_never_slows_a_memory_bound_kernel(data):
    """The H200 is the H100 with more DRAM bandwidth (same SMs and clocks), both beyond every
    training board. Their FP32-per-byte ratios fell into different leaves (the H200 up to 1.5x
    slower on small grids); taken of the capacities held to the training range, they are one."""
    model = RuntimeRegressor(learner="xgboost", learner_params=FAST, shrinkage=1.0, data_home=HOME).fit(data, data.measured_ms)
    rows = data.drop(columns="measured_ms").drop_duplicates(subset=["app_id", "input_size", "block_x", "grid_x"])
    memory_bound = rows[rows.app_id.isin(["vectorAdd", "matrix_sum_normal"])]
    h100, h200 = (model.predict(memory_bound.assign(board=b)) for b in ("H100-SXM", "H200"))
    assert np.all(h200 <= h100 * (1 + 1e-9))
    F = model.features_.transform(pd.concat([rows.assign(board=b) for b in ("H100-SXM", "H200")]))
    assert F["rel_flop_per_byte"].nunique() == 1  # every row of both boards: one held ratio
    assert (F["rel_peak_bw_gbs"].iloc[len(rows):].to_numpy() > F["rel_peak_bw_gbs"].iloc[:len(rows)].to_numpy()).all()


def test_save_load_round_trip(data, tmp_path):
    model = RuntimeRegressor(learner="xgboost", learner_params=FAST, shrinkage=0.7, data_home=HOME).fit(data, data.measured_ms)
    path = save_model(model, tmp_path / "model")
    loaded = load_model(path, data_home=HOME)
    q = data.sample(50, random_state=1)
    assert np.allclose(model.predict(q), loaded.predict(q))
    assert loaded.shrinkage_ == 0.7
    meta = json.loads((path / "perfml-model.json").read_text())
    assert meta["format"] == "perfml-model" and meta["version"] == 2
    assert not list(path.rglob("*.pkl")) and not list(path.rglob("*.pickle"))
    with pytest.raises(ResultFileExistsError, match="exists"):
        save_model(model, path)


def test_load_rejects_unknown_version_and_missing_files(data, tmp_path):
    model = RuntimeRegressor(learner="xgboost", learner_params=FAST, shrinkage=1.0, data_home=HOME).fit(data, data.measured_ms)
    path = save_model(model, tmp_path / "model")
    meta = json.loads((path / "perfml-model.json").read_text())
    (path / "perfml-model.json").write_text(json.dumps(meta | {"version": 99}))
    with pytest.raises(ModelFormatError, match="version 99 is not supported"):
        load_model(path, data_home=HOME)
    with pytest.raises(ModelFormatError, match="nothing does not exist"):
        load_model(tmp_path / "nothing", data_home=HOME)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelFormatError, match="not a perfml model directory"):
        load_model(tmp_path / "empty", data_home=HOME)
    with pytest.raises(ModelFormatError, match="only xgboost"):
        save_model(RuntimeRegressor(learner="hgb", learner_params={"max_iter": 10}, data_home=HOME).fit(data, data.measured_ms), tmp_path / "h")


def test_bad_inputs(data):
    with pytest.raises(EstimatorParameterError, match="learner must be one of"):
        RuntimeRegressor(learner="nope", data_home=HOME).fit(data, data.measured_ms)
    with pytest.raises(DatasetSchemaError, match="positive, finite"):
        RuntimeRegressor(data_home=HOME).fit(data, -data.measured_ms)
    with pytest.raises(UnknownAppError, match="no kernel description"):
        RuntimeRegressor(learner_params=FAST, data_home=HOME).fit(data.assign(app_id="nope").drop(columns=["grid_x"]), data.measured_ms)


def test_cli_train_predict_on_unseen_board(tmp_path, monkeypatch, capsys):
    from perfml.cli import main

    monkeypatch.chdir(tmp_path)
    q = pd.DataFrame({"board": ["H100-SXM", "Tesla K20c"], "app_id": ["vectorAdd", "matMul_gpu"], "input_size": [2**24, 1024]})
    q.to_csv("q.csv", index=False)
    # A small model keeps the test fast; `perfml train` itself uses the defaults.
    from perfml.learned.persistence import save_model as _save

    rt = describable_runtimes(source="gpuperfpredict-nca", data_home=HOME)
    rt = rt[rt.board.isin(BOARDS)]
    _save(RuntimeRegressor(learner="xgboost", learner_params=FAST, shrinkage=1.0, data_home=HOME).fit(rt, rt.measured_ms), tmp_path / "m")
    assert main(["predict", "--model", "m", "--queries", "q.csv", "--output", "p.csv"]) == 0
    out = pd.read_csv("p.csv")
    assert list(out.columns) == ["board", "app_id", "input_size", "predicted_ms", "lower_ms", "upper_ms", "basis",
                                 "clamped_to_bound", "extrapolated", "extrapolation", "tier"]
    assert (out.tier == "spec").all()  # no --calibration: the spec tier answered
    assert (out.predicted_ms > 0).all()
    assert out.board.tolist() == ["H100-SXM", "Tesla K20c"]  # row for row, as given
    assert main(["predict", "--model", "m", "--queries", "q.csv", "--output", "p.csv"]) == 2  # never overwrite silently
    pd.DataFrame({"board": ["RTX-9090"], "app_id": ["vectorAdd"], "input_size": [10]}).to_csv("bad.csv", index=False)
    assert main(["predict", "--model", "m", "--queries", "bad.csv", "--output", "b.csv"]) == 2
    err = capsys.readouterr().err
    assert "RTX-9090" in err and "Traceback" not in err


def test_predict_lambda_for_unseen_board_uses_only_other_boards():
    """lambda(GTX-980, app) for GTX-980 treated as unseen = median over the other Maxwell boards."""
    from perfml.learned.lambda_unseen import predict_lambda
    from perfml.closed_form.bsp import BSPModel

    out = predict_lambda("GTX-980", ["matMul_gpu", "vectorAdd"], [1024], data_home=HOME)
    rt = describable_runtimes(data_home=HOME)
    maxwell = rt[rt.board.isin(["GTX-750", "GTX-970"])]
    t1 = BSPModel(constants_sources=(), data_home=HOME).model_terms(maxwell)["t1_ms"]
    # Per board: median over its runs of log(T_1 / T_measured); then the median over boards.
    per_board = np.log(t1 / maxwell.measured_ms).groupby([maxwell.board, maxwell.app_id]).median()
    for app in ("matMul_gpu", "vectorAdd"):
        expected = np.exp(np.median(per_board.xs(app, level=1)))
        assert out.loc[out.app_id == app, "lambda"].item() == pytest.approx(expected)
    assert (out.lambda_from == "GTX-750,GTX-970").all()
    from perfml.datasets import MIN_KERNEL_MS

    model_tk = out.bsp_t1_ms / out["lambda"]  # raised to the floor where below it, and flagged
    floor = np.maximum(out.roofline_bound_ms, MIN_KERNEL_MS)
    assert np.allclose(out.bsp_tk_ms, np.maximum(model_tk, floor))
    assert (out.clamped_to_bound == (model_tk < floor)).all()


@pytest.mark.parametrize("board", ["L4", "H100-SXM", "Tesla-T4", "GTX-980"])
def test_predict_lambda_is_never_faster_than_the_boards_roofline_bound(board):
    """Seed 003 eq. 3 charges cores x clock; carried by the other boards' lambda to the L4 (300 GB/s,
    30 TFLOP/s) a 1.36 GB vectorAdd came out at 1.16 ms, 3.9x faster than its DRAM streams it."""
    from perfml.closed_form.roofline import roofline_bound_ms
    from perfml.learned.lambda_unseen import predict_lambda

    out = predict_lambda(board, None, None, data_home=HOME)  # every described app at its median measured size
    bound = roofline_bound_ms(out[["board", "app_id", "input_size"]])
    np.testing.assert_allclose(out.roofline_bound_ms, bound)
    assert (out.bsp_tk_ms >= bound * (1 - 1e-12)).all()
    raised = out.bsp_t1_ms / out["lambda"] < bound
    assert (out.clamped_to_bound[raised]).all()
    if board == "L4":  # memory-bound apps carried by a compute-rich board's lambda: raised to the bound
        assert out.loc[out.app_id == "vectorAdd", "clamped_to_bound"].all()


def test_predict_lambda_names_only_the_boards_that_ran_the_app_and_refuses_an_app_with_none():
    """lambda_from listed every board, GTX-295 too, which never ran dotProd; an app without runtimes in the
    chosen source was an internal error (a NaN median size turned into an int)."""
    from perfml.errors import InvalidValueError
    from perfml.learned.lambda_unseen import predict_lambda

    out = predict_lambda("GT-630", ["dotProd"], [1048576], data_home=HOME)
    named = out["lambda_from"].item()
    rt = describable_runtimes(data_home=HOME)
    ran = sorted(set(rt.loc[(rt.app_id == "dotProd") & (rt.board != "GT-630"), "board"]))
    assert named == "all measured boards (" + ",".join(ran) + ")" and "GTX-295" not in named
    with pytest.raises(InvalidValueError, match="no runtimes of app 'vectorAdd' on boards other than GTX-980 in source"):
        predict_lambda("GTX-980", ["vectorAdd"], None, data_home=HOME, source="BSPGPU")


def test_kernels_without_description_use_their_launch_and_the_transfer():
    """Rodinia kernels (no kernel description): features come from the launch and the other boards' runs."""
    from perfml.datasets import load_runtimes

    rt = load_runtimes(source="gpuperfpredict-rodinia", data_home=HOME)
    rt = rt[rt.app_id.isin(["calculate_temp", "lud_diagonal"]) & rt.board.isin(["GTX-680", "Tesla-K20", "Tesla-K40"])]
    rt = rt.assign(measured_ms=rt.time_ms_mean).reset_index(drop=True)
    y = rt.measured_ms.to_numpy()
    F = FeatureBuilder(profiles=False, data_home=HOME).fit(rt, y).transform(rt)
    assert "desc_log_flops" not in F.columns and F["xfer_log_t"].notna().all()  # no work counts without a description
    perturbed = FeatureBuilder(profiles=False, data_home=HOME).fit(rt, np.where(rt.board == "Tesla-K40", y * 50, y)).transform(rt)
    own = (rt.board == "Tesla-K40").to_numpy()
    pd.testing.assert_frame_equal(F[own], perturbed[own])
    pred = RuntimeRegressor(learner="xgboost", learner_params=FAST, profiles=False, data_home=HOME).fit(rt, y).predict(rt)
    assert np.all(np.isfinite(pred) & (pred > 0))


def test_nested_tuning_stores_a_resumable_study(data, tmp_path):
    """Optuna (TPE, fixed seed) in an SQLite storage; a second fit resumes the same study."""
    import optuna

    from perfml.learned.tuned import TunedRegressor

    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    base = RuntimeRegressor(learner="xgboost", shrinkage=1.0, data_home=HOME)
    tuned = TunedRegressor(base, n_trials=2, n_splits=2, storage=storage, study_prefix="t").fit(data, data.measured_ms)
    assert set(tuned.best_params_) >= {"n_estimators", "max_depth", "learning_rate"}
    assert np.all(tuned.predict(data) > 0)
    (summary,) = optuna.get_all_study_summaries(storage)
    assert summary.study_name.startswith("t-") and summary.n_trials == 2
    again = TunedRegressor(base, n_trials=2, n_splits=2, storage=storage, study_prefix="t").fit(data, data.measured_ms)
    (summary,) = optuna.get_all_study_summaries(storage)
    assert summary.n_trials == 2  # the study has its trials: none more, and the first fit's choice
    assert again.best_params_ == tuned.best_params_
    np.testing.assert_array_equal(again.predict(data), tuned.predict(data))
    TunedRegressor(base, n_trials=3, n_splits=2, storage=storage, study_prefix="t").fit(data, data.measured_ms)
    (summary,) = optuna.get_all_study_summaries(storage)
    assert summary.n_trials == 3  # resumed to its n_trials, not restarted
    # as many rows on the same boards, but other times (another app's, say): a study of its own;
    # the name hashed only the boards and the row count, and one's best parameters came from the other
    TunedRegressor(base, n_trials=1, n_splits=2, storage=storage, study_prefix="t").fit(data, data.measured_ms * 3)
    # another configuration of the estimator (its baseline) on the same rows: a study of its own too
    TunedRegressor(base.set_params(baseline="bsp"), n_trials=1, n_splits=2, storage=storage,
                   study_prefix="t").fit(data, data.measured_ms)
    assert sorted(s.n_trials for s in optuna.get_all_study_summaries(storage)) == [1, 1, 3]


# -- features as groups ----------------------------------------------------------------------
# The column list of FeatureBuilder() (board_features="both") on the `data` rows. Recorded from
# the single-class builder of commit ef7502c, whose output the group builder reproduced
# column for column and value for value (check_exact) before that class was removed.
_BOARD = ["sms", "fp32_cores_per_sm", "fp64_units_per_sm", "sfu_per_sm", "ldst_units_per_sm", "boost_clock_mhz",
          "memory_clock_mhz", "bus_width_bits", "memory_bandwidth_gbs", "shared_mem_per_sm_kb", "l2_bytes",
          "registers_per_sm", "max_threads_per_sm", "max_warps_per_sm", "max_blocks_per_sm", "cc", "total_cores",
          "peak_fp32_gflops", "peak_fp64_gflops", "peak_bw_gbs", "resident_warps", "flop_per_byte"]
PINNED_COLUMNS = (
    [f"board_{c}" for c in _BOARD]
    + ["desc_log_n2", "desc_log_n", "desc_log_threads", "desc_log_blocks", "desc_block_size", "desc_log_flops",
       "desc_log_gld", "desc_log_gst", "desc_log_sld", "desc_log_sst", "desc_log_dram_bytes", "desc_work_per_thread",
       "desc_coalesced", "desc_shared"]
    + [f"rel_{c}" for c in _BOARD] + ["rel_same_architecture_boards"]
    + ["bsp_log_t1", "bsp_log_lambda", "bsp_log_tk", "roof_log_compute", "roof_log_memory", "roof_log_bound",
       "roof_log_memory_eff", "roof_log_compute_eff", "base_log_t", "xfer_log_t_bsp", "xfer_log_t_roof_memory",
       "xfer_log_t_roof_compute", "xfer_log_t", "occ_fraction", "occ_registers"]
    + ["prof_inst_executed", "prof_gld_inst", "prof_gst_inst", "prof_shared_load", "prof_shared_store",
       "prof_gld_transactions", "prof_gst_transactions", "prof_gld_tpr", "prof_gst_tpr", "prof_shm_ld_tpr",
       "prof_dram_read_tx", "prof_dram_write_tx", "prof_l2_read_tx", "prof_gld_efficiency", "prof_ldst_executed",
       "prof_memthr", "prof_ariththr"]
    + [f"app={a}" for a in sorted(APPS)]
)


def test_feature_columns_are_pinned(data, data_home):
    F = FeatureBuilder(board_features="both", data_home=data_home).fit(data, data.measured_ms).transform(data)
    assert list(F.columns) == PINNED_COLUMNS


def test_the_builder_is_the_concatenation_of_its_groups(data, data_home):
    from perfml.learned.features import BoardFeatures, ClosedFormFeatures, OccupancyFeatures, ProfileFeatures
    from perfml.learned.features import closed_form_logs, descriptor_features, launch_frame

    y = data.measured_ms.to_numpy()
    train, test = data[data.board != "GTX-970"], data[data.board == "GTX-970"]
    F = FeatureBuilder(board_features="both", data_home=data_home).fit(train, train.measured_ms).transform(test)
    launch = launch_frame(test)
    boards = BoardFeatures(mode="both").fit(train)
    absolute = boards.absolute(test)
    rows = pd.concat([test[["board", "app_id", "input_size"]], launch], axis=1)
    logs = closed_form_logs(rows, data_home=data_home)
    tr_launch = launch_frame(train)
    tr_logs = closed_form_logs(pd.concat([train[["board", "app_id", "input_size"]], tr_launch], axis=1), data_home=data_home)
    parts = [
        absolute, descriptor_features(test, launch), boards.relative(test, absolute),
        ClosedFormFeatures().fit(train, y[train.index], launch=tr_launch, logs=tr_logs).transform(test, launch=launch, logs=logs),
        OccupancyFeatures().fit(train, launch=tr_launch).transform(test, launch=launch),
        ProfileFeatures(data_home=data_home).fit(train).transform(test, launch=launch),
    ]
    groups = pd.concat(parts, axis=1).astype(float)
    pd.testing.assert_frame_equal(F.drop(columns=[c for c in F.columns if c.startswith("app=")]), groups, check_exact=True)


def test_row_wise_features_are_built_once_per_fit(data, data_home, monkeypatch):
    """RuntimeRegressor.fit builds the closed-form times of its rows once, not again per inner fold."""
    import perfml.learned.features.builder as builder

    sizes = []
    real = builder.closed_form_logs

    def counting(rows, **kw):
        sizes.append(len(rows))
        return real(rows, **kw)

    monkeypatch.setattr(builder, "closed_form_logs", counting)
    RuntimeRegressor(learner_params=FAST, data_home=data_home).fit(data, data.measured_ms)  # shrinkage="auto": inner CV
    assert [n for n in sizes if n > 1] == [len(data)]


def test_a_users_own_registry_reaches_the_features(data, data_home):
    """The registry= parameter is what features and closed-form times are built from."""
    from dataclasses import replace

    from perfml.boards import load_registry

    registry = load_registry()
    name = registry.resolve("GTX-970")
    board = registry.boards[name]
    bigger = replace(registry, boards={**registry.boards, name: replace(board, sms=2 * board.sms)})
    y = data.measured_ms.to_numpy()
    train, q = data[data.board != "GTX-970"], data[data.board == "GTX-970"]
    preds = {}
    for label, reg in (("none", None), ("same", registry), ("bigger", bigger)):
        model = RuntimeRegressor(learner_params=FAST, shrinkage=1.0, data_home=data_home, registry=reg)
        preds[label] = model.fit(train, y[train.index]).predict(q)
    np.testing.assert_array_equal(preds["none"], preds["same"])
    assert not np.allclose(preds["same"], preds["bigger"])


def test_the_estimator_never_predicts_below_the_roofline_bound():
    """A model fitted on one 2012 board and asked about an H100 put 62 of 105 runs below the
    H100's physical lower bound (down to 0.09x); ``perfml predict`` raised them, the estimator
    (what experiments and Python users call) did not."""
    from perfml.closed_form.roofline import roofline_bound_ms

    rt = nca_every_third_size(["GTX-680"], ["vectorAdd", "matMul_gpu", "matrix_sum_coalesced"])
    model = RuntimeRegressor(learner_params={"n_estimators": 30, "max_depth": 3}, shrinkage=1.0,
                             data_home=HOME).fit(rt, rt["measured_ms"].to_numpy())
    queries = rt.drop_duplicates(["app_id", "input_size", "block_x", "block_y"]).assign(board="H100-SXM")
    bound = roofline_bound_ms(queries.reset_index(drop=True))
    pred = model.predict(queries)
    assert np.isfinite(bound).all()
    assert (pred >= bound).all()
    raw = model.predict_transfer(queries)  # the unfloored model, for the ratio a reference is carried by
    assert (raw < bound).sum() > len(queries) // 4
    np.testing.assert_array_equal(pred, np.maximum(raw, bound))
