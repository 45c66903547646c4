"""The learned model of deep-learning operator calls (issue 10 §1, §2; issue 11 §2).

Truth: the measured rows of dlops_runtimes.csv.gz (NeuSight, shared/datasets README), a
small fixed-seed subsample per (board, op) so the tests stay quick on 2 cores; the
roofline bound of :mod:`perfml.operators`. Characterizations changed in the direction
tests are synthetic (``synthetic=True``; their sources say so).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from perfml.boards import get_board
from perfml.characterize import Characterization, CharacterizedValue, spec_values
from perfml.datasets import load_dlops_runtimes
from perfml.errors import (
    DatasetSchemaError,
    EstimatorParameterError,
    OperatorWorkError,
    PerfmlError,
    UnknownBoardError,
)
from perfml.learned.operators import OperatorRegressor, OperatorTransferBaseline
from perfml.operators import OP_CLASS, roofline_lower_bound_ms

from conftest import shared_data_home

HOME = shared_data_home()  # tests are entry points: the data home is passed down
TARGET = "Tesla-T4"
SYNTHETIC = "synthetic test value (not a measurement)"
FAST = {"n_estimators": 40, "max_depth": 4}


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    """At most 40 rows per (board, op, split), fixed seed."""
    rt = load_dlops_runtimes(HOME).sample(frac=1.0, random_state=0)
    return rt[rt.groupby(["board", "op", "split"]).cumcount() < 40].reset_index(drop=True)


@pytest.fixture(scope="module")
def split(rows):
    train = rows[rows["board"] != TARGET].reset_index(drop=True)
    test = rows[rows["board"] == TARGET].reset_index(drop=True)
    return train, test


@pytest.fixture(scope="module")
def fitted(split):
    train, _ = split
    return OperatorRegressor(n_jobs=1, learner_params=FAST).fit(train, train["time_ms"])


def test_predictions_are_milliseconds_never_below_the_roofline_bound(fitted, split):
    _, test = split
    pred = fitted.predict(test)
    bound = roofline_lower_bound_ms(test).to_numpy()
    assert pred.shape == (len(test),)
    assert np.all(np.isfinite(pred))
    assert np.all(pred >= bound * (1 - 1e-12))
    # a model, not the bound: the held-out board's median error is far below the bound's
    ape_model = np.median(np.abs(pred / test["time_ms"] - 1))
    ape_bound = np.median(np.abs(bound / test["time_ms"] - 1))
    assert ape_model < 0.5 * ape_bound


def test_the_characterized_model_never_predicts_below_the_spec_bound_either(split):
    from perfml.characterize import board_characterization

    train, test = split
    given = {b: board_characterization(b) for b in sorted(set(train["board"]) | {TARGET})}
    est = OperatorRegressor(n_jobs=1, learner_params=FAST, characterization=True, characterizations=given)
    pred = est.fit(train, train["time_ms"]).predict(test)
    assert np.all(pred >= roofline_lower_bound_ms(test).to_numpy() * (1 - 1e-12))


def test_unseen_board_beats_the_roofline_on_every_op_class(fitted, split):
    from perfml.operators import operator_work

    _, test = split
    pred, bound = fitted.predict(test), roofline_lower_bound_ms(test).to_numpy()
    frame = pd.DataFrame({"cls": operator_work(test)["op_class"], "m": np.abs(pred / test["time_ms"] - 1),
                          "b": np.abs(bound / test["time_ms"] - 1)})
    means = frame.groupby("cls")[["m", "b"]].mean()
    assert (means["m"] < means["b"]).all(), means


def test_sklearn_clone_keeps_the_parameters_and_refits_the_same(split):
    train, test = split
    est = OperatorRegressor(n_jobs=1, random_state=3, learner_params=FAST, transfer=False)
    twin = clone(est)
    assert twin.get_params() == est.get_params()
    a = est.fit(train, train["time_ms"]).predict(test)
    b = twin.fit(train, train["time_ms"]).predict(test)
    np.testing.assert_allclose(a, b)


def test_optional_columns_are_ignored(fitted, split):
    _, test = split
    slim = test[["board", "op", "B", "M", "N", "K", "H", "in_channels", "out_channels", "kernel_size",
                 "input_size", "stride", "padding"]]
    np.testing.assert_allclose(fitted.predict(slim), fitted.predict(test))


def test_the_transfer_group_sees_the_same_call_on_other_boards(split):
    train, test = split
    est = OperatorRegressor(n_jobs=1, learner_params=FAST).fit(train, train["time_ms"])
    from perfml.learned.operator_model import call_keys

    F, _, _ = est._features(test)
    shared = call_keys(test).isin(set(call_keys(train)))
    assert shared.any()
    assert F.loc[shared.to_numpy(), "xfer_n_boards"].min() >= 1
    assert F.loc[~shared.to_numpy(), "xfer_n_boards"].eq(0).all()
    # a training row never sees its own board's measurement
    Ftr, _, _ = est._features(train)
    assert Ftr["xfer_n_boards"].max() <= train["board"].nunique() - 1


def test_transfer_baseline_scales_by_the_roofline_ratio():
    # one call measured on P100 only; on T4 it is predicted as T_P100 * bound_T4 / bound_P100
    call = {"op": "add", "B": 8192, "H": 8192}
    train = pd.DataFrame([{**call, "board": "Tesla-P100-PCIe"}])
    query = pd.DataFrame([{**call, "board": TARGET}])
    bound_p100 = roofline_lower_bound_ms(train).iloc[0]
    bound_t4 = roofline_lower_bound_ms(query).iloc[0]
    t_p100 = 3.0 * bound_p100
    pred = OperatorTransferBaseline().fit(train, [t_p100]).predict(query)
    assert pred[0] == pytest.approx(t_p100 * bound_t4 / bound_p100)


# -- characterization: direction (issue 11 §2) ---------------------------------------------------
def _synthetic(board: str, bandwidth: float, floor_ms: float) -> Characterization:
    values = list(spec_values(get_board(board)))
    values += [
        CharacterizedValue("dram_bandwidth", bandwidth, "B/s", "measured", SYNTHETIC),
        CharacterizedValue("launch_overhead", floor_ms, "ms", "measured", SYNTHETIC),
    ]
    return Characterization(board=board, source=SYNTHETIC, synthetic=True, values=tuple(values))


def test_more_achieved_bandwidth_never_slows_a_call_and_a_higher_floor_never_speeds_one(split):
    train, test = split
    boards = sorted(train["board"].unique())
    spec_bw = {b: get_board(b).memory_bandwidth_gbs * 1e9 for b in [*boards, TARGET]}
    # training boards: the committed characterizations' spread stands in for real boards'
    from perfml.characterize import board_characterization

    given = {b: board_characterization(b) for b in boards}
    est = OperatorRegressor(n_jobs=1, characterization=True, characterizations=given)  # default learner
    est.fit(train, train["time_ms"])
    memory = test[test["op"].isin(["add", "relu", "softmax", "ln"])]
    preds = []
    for share in (0.4, 0.6, 0.8, 0.95):
        est.set_params(characterizations={**given, TARGET: _synthetic(TARGET, share * spec_bw[TARGET], 0.03)})
        preds.append(est.predict(memory))
    preds = np.array(preds)
    assert np.all(np.diff(preds, axis=0) <= 1e-12 * preds[:-1])  # more bandwidth: never slower
    assert np.any(np.diff(preds, axis=0) < 0)  # and the characterization is used
    floors = []
    for floor in (0.01, 0.02, 0.04):
        est.set_params(characterizations={**given, TARGET: _synthetic(TARGET, 0.7 * spec_bw[TARGET], floor)})
        floors.append(est.predict(memory))
    floors = np.array(floors)
    assert np.all(np.diff(floors, axis=0) >= -1e-12 * floors[:-1])  # a higher floor: never faster


def test_a_target_characterization_without_a_floor_is_charged_the_training_boards_floor(split, tmp_path):
    """A characterization with neither a streaming curve nor a launch overhead (a microbenchmark
    sweep's) must not put small calls at their nanosecond roofline: the training boards' median
    launch overhead stands in for the board's own; a saved model, which keeps the training
    boards' characterizations, predicts the same."""
    from perfml.characterize import board_characterization
    from perfml.learned.operator_persistence import load_operator_model, write_operator_model_files

    train, test = split
    given = {b: board_characterization(b) for b in sorted(train["board"].unique())}
    no_floor = Characterization(board=TARGET, source=SYNTHETIC, synthetic=True, values=(
        *spec_values(get_board(TARGET)),
        CharacterizedValue("dram_bandwidth", 0.8 * get_board(TARGET).memory_bandwidth_gbs * 1e9, "B/s", "measured",
                           SYNTHETIC),
    ))
    est = OperatorRegressor(n_jobs=1, learner_params=FAST, characterization=True,
                            characterizations={**given, TARGET: no_floor}).fit(train, train["time_ms"])
    small = test[test["time_ms"] < 0.05]
    assert len(small) > 20
    ratio = est.predict(small) / small["time_ms"].to_numpy()
    # measured (NeuSight's T4): the small calls sit at the host's floor, 0.025-0.05 ms
    assert 0.5 < np.median(ratio) < 2.0, np.median(ratio)
    assert np.quantile(ratio, 0.05) > 0.25
    overheads = [given[b].value("launch_overhead", "ms") for b in given]
    assert est._training_launch_overhead_ms() == pytest.approx(np.median(overheads))  # the training boards' median
    (tmp_path / "m").mkdir()
    write_operator_model_files(est, tmp_path / "m")
    loaded = load_operator_model(tmp_path / "m", data_home=HOME)
    loaded.set_params(characterizations={**given, TARGET: no_floor})
    np.testing.assert_allclose(loaded.predict(small), est.predict(small), rtol=1e-6)


# -- bad input: typed errors ---------------------------------------------------------------------
def test_unknown_op_is_a_typed_error(fitted, split):
    _, test = split
    bad = test.head(3).assign(op=["bmm", "matmul42", "add"])
    with pytest.raises(OperatorWorkError, match="matmul42"):
        fitted.predict(bad)


def test_unknown_board_is_a_typed_error(fitted, split):
    _, test = split
    with pytest.raises(UnknownBoardError):
        fitted.predict(test.head(2).assign(board="GeForce-Imaginary-9000"))


@pytest.mark.parametrize("column,value", [("B", np.nan), ("H", 0), ("K", -4)])
def test_missing_or_non_positive_dims_are_typed_errors(fitted, column, value):
    row = {"board": TARGET, "op": "bmm", "B": 2, "M": 8, "N": 8, "K": 8}
    if column == "H":
        row = {"board": TARGET, "op": "add", "B": 2, "H": 8}
    row[column] = value
    with pytest.raises(OperatorWorkError, match=repr(column)):
        fitted.predict(pd.DataFrame([row]))


def test_missing_columns_and_bad_targets_are_typed_errors(split):
    train, _ = split
    with pytest.raises(DatasetSchemaError, match="op"):
        OperatorRegressor(learner_params=FAST).fit(train.drop(columns=["op"]), train["time_ms"])
    with pytest.raises(DatasetSchemaError):
        OperatorRegressor(learner_params=FAST).fit(train, -train["time_ms"])
    with pytest.raises(DatasetSchemaError):
        OperatorRegressor(learner_params=FAST).fit(train.to_numpy(), train["time_ms"])


@pytest.mark.parametrize(
    "params",
    [{"n_jobs": 0}, {"transfer": "yes"}, {"characterization": 1}, {"tiles": "no"}, {"learner_params": [1]},
     {"learner_params": {"monotone_constraints": ()}}, {"characterizations": 3}, {"random_state": "a"}],
)
def test_bad_parameters_are_refused_in_fit_not_init(split, params):
    train, _ = split
    est = OperatorRegressor(**params)  # storing is fine (scikit-learn convention)
    with pytest.raises(EstimatorParameterError):
        est.fit(train.head(50), train["time_ms"].head(50))


def test_every_error_is_a_perfml_error():
    for cls in (OperatorWorkError, UnknownBoardError, DatasetSchemaError, EstimatorParameterError):
        assert issubclass(cls, PerfmlError)


# -- the estimator conformance suite (perfml.testing.estimator_checks) -------------------------------
def _operator_estimators():
    from perfml.closed_form.operator_roofline import OperatorRooflineModel

    return {
        "OperatorRegressor": OperatorRegressor(n_jobs=1, learner_params=FAST),
        "OperatorRegressor-characterized": OperatorRegressor(n_jobs=1, learner_params=FAST, characterization=True),
        "OperatorRegressor-auto-transfer": OperatorRegressor(n_jobs=1, learner_params=FAST, transfer="auto"),
        "OperatorRegressor-auto-board-identity": OperatorRegressor(n_jobs=1, learner_params=FAST, board_identity="auto"),
        "OperatorTransferBaseline": OperatorTransferBaseline(),
        "OperatorRooflineModel": OperatorRooflineModel(),
    }


@pytest.mark.parametrize("name", list(_operator_estimators()))
def test_operator_estimators_conform(rows, name):
    from perfml.testing.estimator_checks import CHECKS

    small = rows[rows["op"].isin(["bmm", "add", "ln"])].groupby(["board", "op"]).head(8).reset_index(drop=True)
    for check in CHECKS:
        check(_operator_estimators()[name], small, small["time_ms"].to_numpy())


# -- the tile / wave group (NeuSight Section 4) ----------------------------------------------------
def test_tiles_and_waves_are_counted_from_the_dims_and_the_boards_sm_count():
    from perfml.learned.operator_model import operator_feature_frame
    from perfml.learned.operator_model._tiles import tile_block

    board = "Tesla-T4"
    sms = get_board(board).sms
    # bmm: 2 batches of a 130 x 64 output -> 2 * 2 * 1 tiles of 128 x 128 (one edge tile row)
    # linear: (B*M = 3 * 100) x 200 output -> ceil(300/64) * ceil(200/64) = 5 * 4 tiles of 64 x 64
    # softmax: B = 5 rows of H = 1500 (> 1024: the block-per-row kernel)
    X = pd.DataFrame([
        {"board": board, "op": "bmm", "B": 2, "M": 130, "N": 7, "K": 64},
        {"board": board, "op": "linear", "B": 3, "M": 100, "N": 9, "K": 200},
        {"board": board, "op": "softmax", "B": 5 * sms, "H": 1500},
    ])
    frame, _ = operator_feature_frame(X)
    T = tile_block(X, frame)
    assert np.exp(T.loc[0, "tile128x128_log_tiles"]) == pytest.approx(4)
    assert np.exp(T.loc[0, "tile128x128_log_waves"]) == pytest.approx(np.ceil(4 / sms))
    assert T.loc[0, "tile128x128_last_wave_fill"] == pytest.approx(4 / sms)
    # paid work over useful work: one wave of every SM's 128 x 128 tile over 2 * 130 * 64 outputs
    assert np.exp(T.loc[0, "tile128x128_log_quantization"]) == pytest.approx(sms * 128 * 128 / (2 * 130 * 64))
    assert np.exp(T.loc[1, "tile64x64_log_tiles"]) == pytest.approx(20)
    assert np.exp(T.loc[0, "gemm_log_tile_depth"]) == pytest.approx(7)
    assert np.isnan(T.loc[2, "tile64x64_log_tiles"]) and np.isnan(T.loc[0, "vec_block_kernel"])
    assert T.loc[2, "vec_block_kernel"] == 1.0
    assert np.exp(T.loc[2, "vec_log_rows_per_sm"]) == pytest.approx(5)
    assert T.loc[2, "vec_row_wave_fill"] == pytest.approx(1.0)
    assert T.loc[2, "vec_h_pow2_fill"] == pytest.approx(1500 / 2048)


def test_the_tile_group_needs_no_launch_configuration_and_can_be_switched_off(split):
    train, test = split
    with_tiles = OperatorRegressor(n_jobs=1, learner_params=FAST).fit(train, train["time_ms"])
    assert any(c.startswith("tile128x128_") for c in with_tiles.feature_names_)
    slim = test[["board", "op", "B", "M", "N", "K", "H", "in_channels", "out_channels", "kernel_size",
                 "input_size", "stride", "padding"]]
    assert np.isfinite(with_tiles.predict(slim)).all()
    without = OperatorRegressor(n_jobs=1, learner_params=FAST, tiles=False).fit(train, train["time_ms"])
    assert not any(c.startswith(("tile", "gemm_", "vec_")) for c in without.feature_names_)


def test_transfer_auto_is_chosen_by_inner_cross_validation_over_the_training_boards(split):
    train, test = split
    est = OperatorRegressor(n_jobs=1, learner_params=FAST, transfer="auto").fit(train, train["time_ms"])
    sel = est.transfer_selection_
    assert set(sel["use_transfer"]) == set(train["op"].map(OP_CLASS))
    for cls, use in sel["use_transfer"].items():
        assert np.isfinite(sel["mape_with"][cls]) and np.isfinite(sel["mape_without"][cls])
        assert use == (sel["mape_with"][cls] <= sel["mape_without"][cls])
    assert est.transfer_classes_ == sorted(c for c, use in sel["use_transfer"].items() if use)
    assert (est.transfer_ is not None) == bool(est.transfer_classes_)
    mixed = 0 < len(est.transfer_classes_) < len(sel["use_transfer"])
    assert (est.no_transfer_model_ is not None) == mixed
    if mixed:  # the classes kept without the group are predicted by the model without it
        other = ~test["op"].map(OP_CLASS).isin(est.transfer_classes_).to_numpy()
        np.testing.assert_allclose(est.predict(test)[other], est.no_transfer_model_.predict(test[other]))
    assert TARGET not in est.train_boards_
    # the choice depends on the training rows only: the same whatever is predicted afterwards
    again = clone(est).fit(train, train["time_ms"])
    assert again.transfer_selection_ == sel
    np.testing.assert_allclose(again.predict(test), est.predict(test))


def _call_keys_row_by_row(X):
    """The call key as defined: op, then every dimension as an integer string ('' when missing), joined by '|'."""
    from perfml.learned.operator_model._transfer import KEY_COLUMNS

    keys = []
    for _, row in X.iterrows():
        if "op" in X.columns and pd.isna(row["op"]):
            keys.append(np.nan)
            continue
        parts = []
        for column in KEY_COLUMNS:
            if column not in X.columns:
                parts.append("")
            elif column == "op":
                parts.append(str(row[column]))
            else:
                v = pd.to_numeric(pd.Series([row[column]]), errors="coerce").iloc[0]
                parts.append("" if pd.isna(v) else f"{float(v):.0f}")
        keys.append("|".join(parts))
    return keys


def test_call_keys_are_the_row_by_row_keys_on_odd_values():
    from perfml.learned.operator_model._transfer import call_keys

    X = pd.DataFrame({"op": ["bmm", None, "add", "softmax", "conv"], "B": [1, np.nan, -0.0, 1e20, 3],
                      "M": ["3", "x", 2.5, 7.0, None], "H": [np.nan, 4, 5.5, 0, 2], "kernel_size": [3, 3, 3, 3, 3]})
    got = call_keys(X)
    assert got.index.equals(X.index)
    assert [k if isinstance(k, str) else None for k in got] == [k if isinstance(k, str) else None for k in _call_keys_row_by_row(X)]
    assert call_keys(X.iloc[:0]).tolist() == []


def test_board_identity_auto_is_chosen_by_inner_cross_validation_and_saved_as_decided(split, tmp_path):
    from perfml.learned.operator_persistence import load_operator_model, write_operator_model_files

    train, test = split
    est = OperatorRegressor(n_jobs=1, learner_params=FAST, board_identity="auto").fit(train, train["time_ms"])
    sel = est.board_identity_selection_
    assert np.isfinite(sel["mape_with"]) and np.isfinite(sel["mape_without"])
    assert est.board_identity_ is (sel["mape_with"] < sel["mape_without"])
    assert any(c.startswith("board_") for c in est.feature_names_) == est.board_identity_
    # the same as fitting with the decided value
    fixed = OperatorRegressor(n_jobs=1, learner_params=FAST, board_identity=est.board_identity_).fit(train, train["time_ms"])
    np.testing.assert_allclose(est.predict(test), fixed.predict(test))
    # saved with the decision, reloaded to the same predictions
    directory = tmp_path / "model"
    directory.mkdir()
    write_operator_model_files(est, directory)
    loaded = load_operator_model(directory, data_home=HOME)
    assert loaded.board_identity is est.board_identity_ and loaded.board_identity_ is est.board_identity_
    np.testing.assert_allclose(loaded.predict(test), est.predict(test), rtol=1e-6)


@pytest.mark.parametrize("value", ["sometimes", 1, None])
def test_bad_board_identity_is_refused(split, value):
    train, _ = split
    with pytest.raises(EstimatorParameterError, match="board_identity"):
        OperatorRegressor(n_jobs=1, learner_params=FAST, board_identity=value).fit(train, train["time_ms"])


@pytest.mark.parametrize("board_identity", [False, True])
def test_the_board_level_characterization_figures_follow_board_identity(split, board_identity):
    from perfml.learned.operator_model._features import BOARD_LEVEL_CHAR

    train, test = split
    est = OperatorRegressor(n_jobs=1, learner_params=FAST, characterization=True,
                            board_identity=board_identity).fit(train, train["time_ms"])
    names = set(est.feature_names_)
    assert {"char_log_bound_ms", "char_log_floor_over_bound"} <= names  # what the board does to this row
    assert (set(BOARD_LEVEL_CHAR) <= names) is board_identity  # one value per board: identities
    assert not (set(BOARD_LEVEL_CHAR) & names) or board_identity
    assert np.all(np.isfinite(est.predict(test)))


def test_a_characterized_model_fitted_with_board_level_figures_still_predicts_with_them(split, monkeypatch):
    """A model fitted (and saved) before the board-level char_* figures followed board_identity
    has them among its feature names: predict still computes them and feeds them."""
    import perfml.learned.operator_model._regressor as regressor
    from perfml.learned.operator_model._features import BOARD_LEVEL_CHAR

    train, test = split
    with monkeypatch.context() as m:
        m.setattr(regressor, "BOARD_LEVEL_CHAR", ())  # the fit of before: nothing dropped
        old = OperatorRegressor(n_jobs=1, learner_params=FAST, characterization=True).fit(train, train["time_ms"])
    assert set(BOARD_LEVEL_CHAR) <= set(old.feature_names_) and not old.board_identity_
    F, _, _ = old._features(test)
    assert set(old.feature_names_) <= set(F.columns)  # nothing the fitted booster expects is missing
    assert np.all(np.isfinite(old.predict(test)))


def test_the_ridge_point_of_a_board_beyond_the_training_boards_is_held_to_their_range(fitted, split):
    """The H200 is the H100 with more bandwidth, both beyond every training board. The ratio of
    their peaks (the ridge point) fell inside the training range, where the trees split on it:
    element-wise calls came out up to 1.2x slower on the H200 (models/default). Held, both have
    one ridge; a training board's own value is unchanged (so is everything fitted)."""
    from perfml.learned.operator_model._features import operator_feature_frame

    train, test = split
    calls = test[test["op"].isin(["add", "mul", "relu", "gelu"])].drop(columns="board").reset_index(drop=True)
    features = {b: fitted._features(calls.assign(board=b))[0] for b in ("H100-SXM", "H200")}
    held = {b: f["fit_log_intensity_over_ridge"].to_numpy() for b, f in features.items()}
    assert np.allclose(held["H100-SXM"], held["H200"])
    raw = {b: operator_feature_frame(calls.assign(board=b))[0]["fit_log_intensity_over_ridge"].to_numpy()
           for b in ("H100-SXM", "H200")}
    assert not np.allclose(raw["H100-SXM"], raw["H200"])  # unheld, they differ by log(4800 / 3350)
    own = train[train["board"] == train["board"].iloc[0]].reset_index(drop=True)  # a training board: unchanged
    assert np.allclose(fitted._features(own)[0]["fit_log_intensity_over_ridge"],
                       operator_feature_frame(own)[0]["fit_log_intensity_over_ridge"])
