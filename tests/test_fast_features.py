"""Fast feature lookups, the blended transfer and the one-reference-board splitter.

Truth: :class:`OtherBoardsMedian` is checked against the plain groupby-and-merge it
replaces (written out here); the blend against synthetic runs whose times scale exactly
with one closed-form model (labelled synthetic); the regressor against xgboost's own
``predict``. Real rows: a small subset of the gpuperfpredict-nca runtimes of shared/datasets.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfml.evaluation.one_reference import OneReferenceBoardSplit
from perfml.errors import PerfmlError
from perfml.learned import RuntimeRegressor
from perfml.learned.features._common import OtherBoardsMedian
from perfml.learned.features.closed_form import ClosedFormFeatures

from conftest import nca_every_third_size, shared_data_home

HOME = shared_data_home()
BOARDS = ["GTX-680", "GTX-970", "GTX-980", "GTX-Titan", "Tesla-K20"]
APPS = ["matMul_gpu", "vectorAdd", "dotProd"]
FAST = {"n_estimators": 40, "max_depth": 3}


def _merge_reference(table, keys, value_cols, rows):
    """The former implementation: per board, a groupby median of the other boards merged on the keys."""
    out = pd.DataFrame(np.nan, index=rows.index, columns=value_cols)
    for board, part in rows.groupby("board", sort=False):
        pool = table[table["board"] != board]
        if pool.empty:
            continue
        med = pool.groupby(keys)[value_cols].median()
        joined = part[keys].merge(med, left_on=keys, right_index=True, how="left")
        out.loc[part.index, value_cols] = joined[value_cols].to_numpy()
    return out


def test_other_boards_median_equals_groupby_and_merge():
    rng = np.random.default_rng(0)
    n = 400
    table = pd.DataFrame({
        "board": rng.choice(["a", "b", "c"], n),
        "app_id": rng.choice(["x", "y", "z"], n),
        "size": rng.choice([1, 2, 4, 8], n).astype(float),
        "v": rng.normal(size=n),
        "w": rng.normal(size=n),
    })
    table.loc[::17, "size"] = np.nan  # missing keys match nothing
    rows = pd.DataFrame({
        "board": rng.choice(["a", "b", "c", "unseen"], 300),
        "app_id": rng.choice(["x", "y", "z", "new"], 300),
        "size": rng.choice([1, 2, 4, 8, 16], 300),  # integers against float keys
    }, index=np.arange(300) * 3 + 5)
    expected = _merge_reference(table, ["app_id", "size"], ["v", "w"], rows)
    lookup = OtherBoardsMedian(table, ["app_id", "size"], ["v", "w"])
    got = lookup(rows)
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)
    pd.testing.assert_frame_equal(lookup(rows.iloc[:1]), expected.iloc[:1], check_dtype=False)  # cached medians reused


def test_other_boards_median_one_board_table_gives_nan_for_that_board():
    table = pd.DataFrame({"board": ["a", "a"], "app_id": ["x", "x"], "v": [1.0, 3.0]})
    rows = pd.DataFrame({"board": ["a", "b"], "app_id": ["x", "x"]})
    got = OtherBoardsMedian(table, ["app_id"], ["v"])(rows)["v"].to_numpy()
    assert np.isnan(got[0]) and got[1] == 2.0


def _synthetic_runs(scale_with: str):
    """Synthetic runs of one app on five boards whose times scale exactly with one closed-form model."""
    rng = np.random.default_rng(1)
    boards = BOARDS
    sizes = [2**k for k in range(10, 16)]
    X = pd.DataFrame([(b, "vectorAdd", n) for b in boards for n in sizes], columns=["board", "app_id", "input_size"])
    launch = pd.DataFrame({"block_x": 256.0, "block_y": 1.0, "grid_x": X["input_size"] / 256.0, "grid_y": 1.0}, index=X.index)
    per_board = {b: rng.normal(size=3) for b in boards}  # unrelated log times of each model per board
    logs = pd.DataFrame([per_board[b] for b in X["board"]], columns=["bsp", "roof_memory", "roof_compute"], index=X.index)
    logs = logs.add(np.log(X["input_size"].to_numpy(dtype=float)), axis=0)
    y = np.exp(logs[scale_with].to_numpy() + 0.3)
    return X, y, launch, logs


@pytest.mark.parametrize("scale_with, weight", [("roof_memory", 0.0), ("bsp", 1.0)])
def test_blend_weight_follows_the_model_the_times_scale_with(scale_with, weight):
    X, y, launch, logs = _synthetic_runs(scale_with)
    closed = ClosedFormFeatures(blend=True).fit(X, y, launch=launch, logs=logs)
    assert set(closed.blend_weights_["weight"]) == {weight}
    out = closed.transform(X, launch=launch, logs=logs)
    np.testing.assert_allclose(np.exp(out["xfer_log_t_blend"].to_numpy()), y, rtol=1e-9)


def test_blend_weight_of_a_board_is_chosen_without_its_rows():
    X, y, launch, logs = _synthetic_runs("roof_memory")
    closed = ClosedFormFeatures(blend=True).fit(X, y, launch=launch, logs=logs)
    table = closed.blend_weights_
    assert set(table["board"]) == set(BOARDS) | {""}
    assert set(table["app_id"]) == {"vectorAdd", ""}
    assert table["weight"].between(0, 1).all()


@pytest.fixture(scope="module")
def data():
    return nca_every_third_size(BOARDS, APPS)


def test_predictions_equal_xgboost_predict_for_one_row_and_a_batch(data):
    y = data["measured_ms"].to_numpy()
    model = RuntimeRegressor(learner_params=FAST, shrinkage=1.0, data_home=HOME).fit(data, y)
    features = model.features_.transform(data).reindex(columns=model.feature_names_).to_numpy(dtype=float)
    base = model._baseline(model.features_.transform(data))
    expected = np.exp(model.model_.predict(features) + base)
    np.testing.assert_allclose(model.predict(data), expected, rtol=1e-12)
    np.testing.assert_allclose(model.predict(data.iloc[[3]]), expected[[3]], rtol=1e-12)


def test_second_prediction_reuses_lookups_and_refit_forgets_them(data):
    y = data["measured_ms"].to_numpy()
    model = RuntimeRegressor(learner_params=FAST, shrinkage=0.0, data_home=HOME).fit(data, y)
    first = model.predict(data)
    np.testing.assert_array_equal(model.predict(data), first)
    part = data[data.board != "GTX-980"]
    refit = model.fit(part, part["measured_ms"].to_numpy()).predict(data)
    fresh = RuntimeRegressor(learner_params=FAST, shrinkage=0.0, data_home=HOME).fit(part, part["measured_ms"].to_numpy())
    np.testing.assert_array_equal(refit, fresh.predict(data))


def test_a_query_about_one_board_builds_only_that_boards_baseline_choice(data):
    """The first query after loading paid for every training board's choice table (63 -> 52 ms
    for one application row, experiments/results/bench_predictor.txt); the tables built per
    board give the same choice as all at once."""
    y = data["measured_ms"].to_numpy()
    model = RuntimeRegressor(learner_params=FAST, shrinkage=0.0, data_home=HOME).fit(data, y)
    every = model.predict(data)
    model.features_._group_caches = {}  # as freshly loaded
    one = data[data.board == "GTX-970"]
    np.testing.assert_array_equal(model.predict(one), every[(data.board == "GTX-970").to_numpy()])
    assert set(model.features_._cache("closed_form")["choice"]) == {"GTX-970"}
    np.testing.assert_array_equal(model.predict(data), every)


def test_blend_baseline_regressor_predicts_an_unseen_board(data):
    train = data[data.board != "GTX-980"]
    model = RuntimeRegressor(baseline="blend", shrinkage=0.0, learner_params=FAST, data_home=HOME)
    model.fit(train, train["measured_ms"].to_numpy())
    assert "xfer_log_t_blend" in model.features_.transform(train.head(2)).columns
    pred = model.predict(data[data.board == "GTX-980"])
    assert np.all(np.isfinite(pred) & (pred > 0))
    default = RuntimeRegressor(shrinkage=0.0, learner_params=FAST, data_home=HOME).fit(train, train["measured_ms"].to_numpy())
    assert "xfer_log_t_blend" not in default.feature_names_  # the default features are unchanged


def test_one_reference_board_split_sees_test_kernels_on_the_reference_only(data):
    splitter = OneReferenceBoardSplit("GTX-970", n_kernel_folds=2)
    tested = []
    for train, test in splitter.split(data):
        tr, te = data.iloc[train], data.iloc[test]
        assert not (te["board"] == "GTX-970").any()
        held = set(te["app_id"])
        assert set(tr.loc[tr["app_id"].isin(held), "board"]) == {"GTX-970"}
        assert not set(train) & set(test)
        tested.extend(test)
    assert sorted(tested) == sorted(np.flatnonzero((data["board"] != "GTX-970").to_numpy()))


def test_one_reference_board_split_refuses_an_absent_board(data):
    with pytest.raises(PerfmlError, match="no runtimes of the reference board"):
        list(OneReferenceBoardSplit("GTX-750").split(data))


def test_board_ratio_hold_is_series_clip():
    """The relative board group holds each capacity to the training range with numpy
    (:func:`perfml.learned.features.boards._held`), as ``Series.clip`` did: NaN stays NaN, a
    NaN bound is no bound."""
    from perfml.learned.features.boards import _held

    values = np.array([-np.inf, -3.0, 0.0, 1.5, 2.0, 7.0, np.inf, np.nan])
    for low, high in [(0.0, 2.0), (np.nan, 2.0), (0.0, np.nan), (np.nan, np.nan), (1.5, 1.5)]:
        expected = pd.Series(values).clip(lower=None if np.isnan(low) else low,
                                          upper=None if np.isnan(high) else high).to_numpy()
        np.testing.assert_array_equal(_held(values, low, high), expected)


def test_relative_board_features_of_one_row_equal_those_of_a_batch(data):
    """A one-row query takes the same numpy path as a batch: its ``rel_*`` equal its row of the batch."""
    model = RuntimeRegressor(learner_params=FAST, shrinkage=1.0, data_home=HOME).fit(data, data["measured_ms"].to_numpy())
    batch = data.drop(columns=["measured_ms"]).assign(board="GTX-780").head(50)
    whole = model.features_.transform(batch)
    rel = [c for c in whole.columns if c.startswith("rel_")]
    assert rel and np.isfinite(whole[rel].to_numpy()).any()
    for i in (0, 17, 49):
        one = model.features_.transform(batch.iloc[[i]])
        np.testing.assert_array_equal(one[rel].to_numpy(), whole[rel].iloc[[i]].to_numpy())
