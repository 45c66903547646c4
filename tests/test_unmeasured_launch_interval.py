"""The interval of a launch no training board measured: calibrated by the protocol that asks it, not doubled.

The doubling of the log half-width (the extrapolation rule) covered 74.01 % of the nine
apps' held-out rows at an unmeasured block size at the nominal 90 %
(experiments/results/unseen_launch_coverage.txt, the recording at 70b8960). ``perfml
train`` now calibrates those rows from out-of-fold predictions with the board and the
block size held out (:func:`perfml.learned.intervals.launch_oof_predictions`).

Scores of the unit tests are synthetic (a seeded normal), labeled so; the end-to-end test
trains on a subset of shared/datasets/runtimes.csv.gz.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, RegressorMixin

from perfml.errors import ModelFormatError
from perfml.learned.intervals import (
    LEVELS,
    calibrate,
    calibrate_unmeasured_launch,
    check_calibration,
    conformal_quantile,
    interval_bounds,
    launch_oof_predictions,
)

from conftest import needs_data_home, shared_data_home, vectoradd_at_a_measured_and_an_unmeasured_block

I90 = LEVELS.index(0.90)


def _synthetic_calibration(launch_scale: float | None):
    """A calibration of synthetic scores (group ``described``), with an unmeasured-launch entry of wider synthetic scores."""
    rng = np.random.default_rng(0)
    scores = np.abs(rng.normal(0, 0.1, 400))  # synthetic |log(pred / measured)|
    cal = calibrate(scores, np.array(["described"] * 400, dtype=object), np.array(list("ABCD") * 100))
    if launch_scale is not None:
        measured = np.ones(300)
        pred = np.exp(rng.normal(0, launch_scale, 300))  # synthetic predictions of those rows
        cal["unmeasured_launch"] = calibrate_unmeasured_launch(pred, measured, np.array(list("ABC") * 100))
    return cal


def test_the_entry_holds_the_conformal_quantiles_and_the_held_out_board_evidence():
    rng = np.random.default_rng(1)
    measured = np.exp(rng.normal(0, 1, 200))
    pred = measured * np.exp(rng.normal(0, 0.3, 200))  # synthetic
    pred[:20] = np.nan  # rows no fold tested
    boards = np.array(list("ABCD") * 50)
    entry = calibrate_unmeasured_launch(pred, measured, boards)
    scores = np.abs(np.log(pred[20:] / measured[20:]))
    assert entry["n"] == 180 and entry["protocol"] == "leave-one-board-and-block-size-out"
    assert entry["log_halfwidth"][I90] == conformal_quantile(scores, 0.90)
    assert entry["mape"] == pytest.approx(100 * np.mean(np.abs(pred[20:] / measured[20:] - 1)))
    # held-out evidence: board b's rows against the quantile of the other boards' rows
    b = boards[20:]
    covered = [np.mean(scores[b == x] <= conformal_quantile(scores[b != x], 0.90)) for x in "ABCD"]
    weights = [np.sum(b == x) for x in "ABCD"]
    assert entry["held_out_board"]["coverage"] == pytest.approx(np.average(covered, weights=weights))
    assert calibrate_unmeasured_launch(np.full(3, np.nan), np.ones(3), np.array(list("ABC"))) is None
    check_calibration({**_synthetic_calibration(None), "unmeasured_launch": entry}, "test")


def test_an_unmeasured_launch_takes_the_launch_calibration_not_the_doubling():
    cal = _synthetic_calibration(0.5)
    q_group = cal["groups"]["described"]["log_halfwidth"][I90]
    q_launch = cal["unmeasured_launch"]["log_halfwidth"][I90]
    assert q_launch > 2 * q_group  # the synthetic launch errors are wider than the doubling
    pred = np.ones(4)
    lower, upper = interval_bounds(pred, ["vectorAdd"] * 4, [False, True, False, True], cal, 0.90,
                                   unmeasured_launch=[False, False, True, True])
    half = np.log(upper)
    assert half[0] == pytest.approx(q_group)  # measured launch, size in range
    assert half[1] == pytest.approx(2 * q_group)  # size beyond the range: the extrapolation rule
    assert half[2] == pytest.approx(q_launch)  # unmeasured launch: its own calibration
    assert half[3] == pytest.approx(2 * q_launch)  # both: the larger, widened
    assert np.allclose(np.log(lower), -half)


def test_the_launch_half_width_never_narrows_a_groups_interval():
    cal = _synthetic_calibration(0.01)  # synthetic: launch errors narrower than the group's
    q_group = cal["groups"]["described"]["log_halfwidth"][I90]
    assert cal["unmeasured_launch"]["log_halfwidth"][I90] < q_group
    upper = interval_bounds(np.ones(1), ["vectorAdd"], [False], cal, 0.90, unmeasured_launch=[True])[1]
    assert math.log(upper[0]) == pytest.approx(q_group)


def test_without_the_entry_an_unmeasured_launch_keeps_the_extrapolation_rule():
    """A model saved before the entry existed, or one whose kernels ran at one block size each."""
    cal = _synthetic_calibration(None)
    q_group = cal["groups"]["described"]["log_halfwidth"][I90]
    upper = interval_bounds(np.ones(2), ["vectorAdd"] * 2, [False, False], cal, 0.90, unmeasured_launch=[False, True])[1]
    assert np.log(upper) == pytest.approx([q_group, 2 * q_group])
    # an entry too small for the level: the rule too
    small = _synthetic_calibration(0.5)
    small["unmeasured_launch"]["log_halfwidth"][I90:] = [None] * (len(LEVELS) - I90)
    upper = interval_bounds(np.ones(1), ["vectorAdd"], [False], small, 0.90, unmeasured_launch=[True])[1]
    assert math.log(upper[0]) == pytest.approx(2 * q_group)


def test_a_kernel_with_its_own_launch_half_width_takes_it_and_any_other_the_pooled_one():
    """Synthetic: kernel k1 misses by 10 %, k2 by 100 %; a pooled interval over-covers k1 and under-covers k2."""
    boards = np.tile(list("ABCDE"), 40)
    kernels = np.repeat(["k1", "k2"], 100)
    rng = np.random.default_rng(2)
    pred = np.where(kernels == "k1", 1.1, 2.0) * np.exp(rng.normal(0, 0.01, 200))  # synthetic
    entry = calibrate_unmeasured_launch(pred, np.ones(200), boards, kernels)
    scores = np.abs(np.log(pred))
    k1 = entry["kernels"]["k1"]["log_halfwidth"][I90]
    assert k1 == conformal_quantile(scores[kernels == "k1"], 0.90)
    assert entry["kernels"]["k2"]["n"] == 100
    # held out, each kernel's interval covers its own rows (the pooled one misses k2's or overshoots k1's)
    assert entry["held_out_board"]["per_kernel"]["k1"] >= 0.85 and entry["held_out_board"]["per_kernel"]["k2"] >= 0.85
    cal = {**_synthetic_calibration(None), "unmeasured_launch": entry}
    upper = interval_bounds(np.ones(3), ["k1", "k2", "k3"], [False] * 3, cal, 0.90, unmeasured_launch=[True] * 3)[1]
    q_group = cal["groups"]["all"]["log_halfwidth"][I90]
    assert np.log(upper) == pytest.approx([max(q_group, k1), max(q_group, entry["kernels"]["k2"]["log_halfwidth"][I90]),
                                           max(q_group, entry["log_halfwidth"][I90])])  # k3: no own, the pooled one
    # a kernel's entry too small for the level falls back to the pooled one
    entry["kernels"]["k1"]["log_halfwidth"][I90:] = [None] * (len(LEVELS) - I90)
    upper = interval_bounds(np.ones(1), ["k1"], [False], cal, 0.90, unmeasured_launch=[True])[1]
    assert math.log(upper[0]) == pytest.approx(max(q_group, entry["log_halfwidth"][I90]))


@pytest.mark.parametrize("edit", [
    lambda hw: hw.__setitem__(3, -0.1),  # negative
    lambda hw: hw.__setitem__(3, hw[4] + 1.0),  # decreasing with the level
    lambda hw: hw.pop(),  # one level short
    lambda hw: hw.__setitem__(3, float("nan")),
])
def test_a_malformed_launch_entry_is_refused(edit):
    cal = _synthetic_calibration(0.5)
    edit(cal["unmeasured_launch"]["log_halfwidth"])
    with pytest.raises(ModelFormatError, match=r"unmeasured_launch \(and each of its kernels\) must hold 50 non-negative"):
        check_calibration(cal, "model manifest")


def test_a_malformed_kernel_of_the_launch_entry_is_refused():
    cal = _synthetic_calibration(0.5)
    cal["unmeasured_launch"]["kernels"] = {"vectorAdd": {"n": 3, "log_halfwidth": [0.1] * (len(LEVELS) - 1)}}
    with pytest.raises(ModelFormatError, match=r"unmeasured_launch \(and each of its kernels\)"):
        check_calibration(cal, "model manifest")


class _RecordsItsTraining(RegressorMixin, BaseEstimator):
    """A stand-in that predicts, per row, whether its (board, threads per block) was in its training rows."""

    def fit(self, X, y):
        self.seen_ = set(zip(X["board"], X["block_x"])) | {("board", b) for b in X["block_x"]}
        self.boards_ = set(X["board"])
        return self

    def predict(self, X):
        return np.array([1.0 + (b in self.boards_) + 2 * (("board", t) in self.seen_)
                         for b, t in zip(X["board"], X["block_x"])])


def test_each_launch_fold_predicts_a_board_and_a_block_size_its_fit_never_saw():
    """Synthetic rows: three boards, two apps at block sizes 64/256 and one app at 128 only."""
    rows = [{"board": b, "app_id": a, "block_x": t, "input_size": 1}
            for b in ("A", "B", "C") for a, sizes in (("k1", (64, 256)), ("k2", (64, 256)), ("k3", (128,)))
            for t in sizes]
    X = pd.DataFrame(rows)
    oof = launch_oof_predictions(_RecordsItsTraining(), X, np.ones(len(X)))
    tested = np.isfinite(oof)
    assert (oof[tested] == 1.0).all()  # neither the row's board nor its block size was trained on
    assert not tested[X["app_id"].eq("k3").to_numpy()].any()  # one block size: no launch to hold out
    assert tested[X["app_id"].ne("k3").to_numpy()].all()


@needs_data_home()
def test_a_trained_model_calibrates_the_unmeasured_launch_and_predict_uses_it(tmp_path, monkeypatch):
    """End to end on real runs: fit_corpus records the entry; a flagged row's interval is max(launch, group)."""
    from perfml.learned import regressors
    from perfml.learned.persistence import load_model, save_model
    from perfml.learned.queries import predict_queries
    from perfml.learned.training import fit_corpus, launch_fold_count, training_runtimes

    home = shared_data_home()
    monkeypatch.setitem(regressors._DEFAULTS, "xgboost",
                        {**regressors._DEFAULTS["xgboost"], "n_estimators": 20, "max_depth": 3})
    rt = training_runtimes(data_home=home)
    rows = rt[rt.board.isin(["GTX-680", "GTX-970", "Tesla-K20", "Tesla-K40"]) & rt.app_id.isin(["vectorAdd", "dotProd"])
              & rt.source.eq("gpuperfpredict-nca")]
    rows = rows[rows.groupby(["board", "app_id"]).input_size.rank(method="dense") % 4 == 0].reset_index(drop=True)
    folds = []
    model, cal, oof = fit_corpus("described", rows, data_home=home, launch_progress=folds.append)
    entry = cal["unmeasured_launch"]
    assert len(folds) == launch_fold_count("described", rows) > 0
    assert entry["n"] > 0 and set(entry["boards"]) <= set(rows.board)
    path = save_model(model, tmp_path / "m", training_rows=rows, extra={"intervals": cal})
    model = load_model(path, data_home=home)
    q = vectoradd_at_a_measured_and_an_unmeasured_block(rows)
    out = predict_queries(model, q, "q.csv")
    assert out["extrapolated"].tolist() == [False, True]
    assert "convention" not in out["extrapolation"].iloc[1]  # this model's launch interval is calibrated
    half = np.log(out["upper_ms"] / out["predicted_ms"]).to_numpy()
    q_group = cal["groups"]["described"]["log_halfwidth"][I90]
    assert half[0] == pytest.approx(q_group, rel=1e-9)
    q_launch = entry["kernels"]["vectorAdd"]["log_halfwidth"][I90]  # the kernel's own
    assert q_launch is not None and q_launch != entry["log_halfwidth"][I90]
    assert half[1] == pytest.approx(max(q_group, q_launch), rel=1e-9)


@needs_data_home()
def test_the_cheaper_launch_estimator_predicts_as_the_model_at_an_unmeasured_launch(monkeypatch):
    """unmeasured_launch_estimator skips the residual's share search: the residual is not added there anyway."""
    from perfml.learned import regressors
    from perfml.learned.training import make_corpus_model, training_runtimes

    home = shared_data_home()
    monkeypatch.setitem(regressors._DEFAULTS, "xgboost",
                        {**regressors._DEFAULTS["xgboost"], "n_estimators": 20, "max_depth": 3})
    rt = training_runtimes(data_home=home)
    rows = rt[rt.board.isin(["GTX-680", "GTX-970", "Tesla-K20", "Tesla-K40"]) & rt.app_id.isin(["vectorAdd", "dotProd"])
              & rt.source.eq("gpuperfpredict-nca")].reset_index(drop=True)
    y = rows["measured_ms"].to_numpy(dtype=float)
    model = make_corpus_model("described", data_home=home).fit(rows, y)
    cheap = model.unmeasured_launch_estimator()
    assert cheap.get_params()["shrinkage"] == 0.0 and not hasattr(cheap, "model_")
    cheap.fit(rows, y)
    n = float(rows.loc[(rows.app_id == "vectorAdd") & (rows.block_x == 256), "input_size"].iloc[0])
    q = pd.DataFrame([{"board": "GTX-980", "app_id": "vectorAdd", "input_size": n, "block_x": bx, "block_y": 1.0,
                       "grid_x": n / bx, "grid_y": 1.0} for bx in (128.0, 512.0)])
    assert cheap.predict(q) == pytest.approx(model.predict(q), rel=1e-12)


@needs_data_home()
def test_perfml_train_records_and_prints_the_unmeasured_launch_calibration(three_board_train):
    """`perfml train` on the nine apps' NCA runs of three boards: the entry is in the bundle, its evidence printed."""
    import re

    from perfml.learned.bundle import load_predictor

    path, out = three_board_train
    entry = load_predictor(path, data_home=shared_data_home()).models["described"].metadata_["intervals"]["unmeasured_launch"]
    assert entry["boards"] == ["GTX-680", "GTX-970", "Tesla-K20"]
    m = re.search(r"described unmeasured launch: (\d+) rows held out with their block size "
                  r"\(leave-one-board-and-block-size-out\), MAPE ([\d.]+)%, ([\d.]+)% within 0.8-1.2; their 90% "
                  r"interval, calibrated on the other boards' such rows, covers ([\d.]+)%", out)
    assert m, out
    assert int(m.group(1)) == entry["n"] and float(m.group(2)) == pytest.approx(entry["mape"], abs=0.005)
    assert float(m.group(4)) == pytest.approx(100 * entry["held_out_board"]["coverage"], abs=0.05)


def test_the_measured_shapes_of_a_table_are_built_once_and_never_served_for_another_table():
    """The shapes are cached per training table (a one-row query rebuilt them every call); a table that
    replaced a collected one, even at the same address, gets its own."""
    import gc

    from perfml.learned import launches

    def table(blocks):
        return pd.DataFrame({"app_id": "k", "block_x": blocks, "block_y": 1.0})

    q = pd.DataFrame({"app_id": ["k", "k"], "block_x": [64.0, 128.0], "block_y": [1.0, 1.0]})
    runs = table([64.0, 256.0])
    assert launches.unmeasured_launch_mask(q, runs).tolist() == [False, True]
    first = launches._measured_shapes(runs)
    assert launches._measured_shapes(runs) is not None and launches._measured_shapes(runs)[1] is first[1]
    key = id(runs)
    del runs, first
    gc.collect()
    assert key not in launches._MEASURED  # the entry went with its table
    for _ in range(50):  # new tables, some at a freed address: each answers from its own shapes
        other = table([128.0])
        assert launches.unmeasured_launch_mask(q, other).tolist() == [True, False]
        del other
        gc.collect()
