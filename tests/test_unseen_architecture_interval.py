"""The interval on a board of an architecture the model never saw: calibrated with each architecture held out.

Leave-one-board-out scores come from boards whose architecture other training boards share;
``models/default``'s 90 % interval covered 21.4 % of an H100's application kernels
(experiments/results/kernel_duration_check.txt, the recording at 2f50b75). ``perfml train``
now also calibrates such rows from out-of-fold predictions with each architecture held out
(:func:`perfml.learned.intervals.architecture_oof_predictions`).

Scores of the unit tests are synthetic (seeded normals), labeled so; the end-to-end tests
train on a subset of shared/datasets/runtimes.csv.gz.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, RegressorMixin

from perfml.errors import ModelFormatError
from perfml.learned.board_range import unseen_architecture_flags
from perfml.learned.intervals import (
    LEVELS,
    architecture_oof_predictions,
    calibrate,
    calibrate_unseen_architecture,
    check_calibration,
    conformal_quantile,
    interval_bounds,
)

from conftest import needs_data_home, shared_data_home

I90 = LEVELS.index(0.90)


def _synthetic_entry(scale_described: float, scale_undescribed: float | None = None):
    """An unseen-architecture entry of synthetic predictions (log errors ~ N(0, scale)) over architectures X, Y, Z."""
    rng = np.random.default_rng(3)
    n = 300
    groups = np.array(["described"] * n + (["undescribed"] * n if scale_undescribed is not None else []), dtype=object)
    scales = np.where(groups == "described", scale_described, scale_undescribed or 0.0)
    measured = np.ones(len(groups))
    pred = np.exp(rng.normal(0, 1, len(groups)) * scales)  # synthetic
    arch = np.array(list("XYZ") * (len(groups) // 3), dtype=object)
    return calibrate_unseen_architecture(pred, measured, arch, groups, np.array(["b"] * len(groups))), pred, arch, groups


def _synthetic_calibration():
    rng = np.random.default_rng(0)
    scores = np.abs(rng.normal(0, 0.1, 400))  # synthetic |log(pred / measured)|
    return calibrate(scores, np.array(["described"] * 200 + ["undescribed"] * 200, dtype=object),
                     np.array(list("ABCD") * 100))


def test_the_entry_holds_per_group_quantiles_and_the_held_out_architecture_evidence():
    entry, pred, arch, groups = _synthetic_entry(0.5, 0.2)
    scores = np.abs(np.log(pred))
    assert entry["protocol"] == "leave-one-architecture-out" and entry["architectures"] == ["X", "Y", "Z"]
    assert entry["groups"]["all"]["log_halfwidth"][I90] == conformal_quantile(scores, 0.90)
    for g in ("described", "undescribed"):
        assert entry["groups"][g]["log_halfwidth"][I90] == conformal_quantile(scores[groups == g], 0.90)
    # held-out evidence: architecture a's rows of group g against the other architectures' rows of g
    covered = np.zeros(len(scores), dtype=bool)
    for a in "XYZ":
        for g in ("described", "undescribed"):
            m = (arch == a) & (groups == g)
            covered[m] = scores[m] <= conformal_quantile(scores[(arch != a) & (groups == g)], 0.90)
    assert entry["held_out_architecture"]["coverage"] == pytest.approx(covered.mean())
    assert entry["held_out_architecture"]["per_architecture"]["Y"] == pytest.approx(covered[arch == "Y"].mean())
    assert calibrate_unseen_architecture(np.full(3, np.nan), np.ones(3), list("XYZ"), ["described"] * 3, list("abc")) is None
    check_calibration({**_synthetic_calibration(), "unseen_architecture": entry}, "test")


def test_a_row_on_an_unseen_architecture_takes_the_larger_half_width_of_its_group():
    cal = _synthetic_calibration()
    entry = _synthetic_entry(0.5)[0]  # described only: an undescribed row takes the pooled one
    cal["unseen_architecture"] = entry
    q_group = {g: cal["groups"][g]["log_halfwidth"][I90] for g in ("described", "undescribed")}
    q_arch = entry["groups"]["described"]["log_halfwidth"][I90]
    q_pooled = entry["groups"]["all"]["log_halfwidth"][I90]
    assert q_arch > 2 * q_group["described"]  # the synthetic architecture errors are the wider
    apps = ["vectorAdd", "vectorAdd", "bitonic", "vectorAdd"]  # bitonic: undescribed (no kernel description)
    lower, upper = interval_bounds(np.ones(4), apps, [False, False, False, True], cal, 0.90,
                                   unseen_architecture=[False, True, True, True])
    half = np.log(upper)
    assert half[0] == pytest.approx(q_group["described"])  # a seen architecture: the group's
    assert half[1] == pytest.approx(q_arch)
    assert half[2] == pytest.approx(max(q_group["undescribed"], q_pooled))
    assert half[3] == pytest.approx(2 * q_arch)  # a size beyond the range on top: the extrapolation rule
    assert np.log(1 / lower) == pytest.approx(half)


def test_without_the_entry_a_row_on_an_unseen_architecture_keeps_its_groups_interval():
    cal = _synthetic_calibration()
    _, upper = interval_bounds(np.ones(2), ["vectorAdd"] * 2, [False, False], cal, 0.90, unseen_architecture=[False, True])
    assert upper[0] == upper[1] == pytest.approx(np.exp(cal["groups"]["described"]["log_halfwidth"][I90]))


def test_the_architecture_half_width_never_narrows_a_groups_interval():
    cal = _synthetic_calibration()
    cal["unseen_architecture"] = _synthetic_entry(0.001)[0]  # synthetic: architectures predicted almost exactly
    _, upper = interval_bounds(np.ones(2), ["vectorAdd"] * 2, [False, False], cal, 0.90, unseen_architecture=[False, True])
    assert upper[1] == pytest.approx(upper[0])


@pytest.mark.parametrize("edit", [
    lambda e: e["groups"].pop("all"),
    lambda e: e["groups"]["described"]["log_halfwidth"].reverse(),
    lambda e: e["groups"].__setitem__("Tensor", e["groups"]["all"]),
    lambda e: e.pop("groups"),
])
def test_a_malformed_architecture_entry_is_refused(edit):
    entry = _synthetic_entry(0.5)[0]
    edit(entry)
    with pytest.raises(ModelFormatError, match="unseen_architecture"):
        check_calibration({**_synthetic_calibration(), "unseen_architecture": entry}, "test")


def test_a_board_of_an_architecture_no_training_board_has_is_flagged_naming_both():
    flags, why = unseen_architecture_flags(["H100-SXM", "GTX-980", "H100-SXM"], ["GTX-680", "GTX-970", "Tesla-K20"])
    assert flags.tolist() == [True, False, True]
    assert why[0] == "board H100-SXM: architecture Hopper, none of the training boards' (Kepler, Maxwell)"
    assert why[1] == ""
    assert unseen_architecture_flags(["H100-SXM"], None)[0].tolist() == [False]  # no training boards recorded


class _RecordsItsArchitectures(RegressorMixin, BaseEstimator):
    """A stand-in predicting, per row, 2 if its board's architecture was among its training rows' and 1 if not."""

    def fit(self, X, y):
        from perfml.boards import board_architecture

        self.seen_ = {board_architecture(b) for b in set(X["board"])}
        return self

    def predict(self, X):
        from perfml.boards import board_architecture

        return np.array([2.0 if board_architecture(b) in self.seen_ else 1.0 for b in X["board"]])


def test_each_architecture_fold_predicts_boards_of_an_architecture_its_fit_never_saw():
    X = pd.DataFrame({"board": ["GTX-680", "Tesla-K20", "GTX-970", "GTX-980", "GT-630"], "app_id": "k", "input_size": 1})
    seen = []
    oof = architecture_oof_predictions(_RecordsItsArchitectures(), X, np.ones(len(X)), progress=seen.append)
    assert (oof == 1.0).all()
    assert sorted(seen) == ["Fermi", "Kepler", "Maxwell"]


def _small_rows(home):
    from perfml.learned.training import training_runtimes

    rt = training_runtimes(data_home=home)
    rows = rt[rt.board.isin(["GTX-680", "GTX-970", "Tesla-K20", "Tesla-K40"]) & rt.app_id.isin(["vectorAdd", "dotProd"])
              & rt.source.eq("gpuperfpredict-nca")]
    return rows[rows.groupby(["board", "app_id"]).input_size.rank(method="dense") % 4 == 0].reset_index(drop=True)


@needs_data_home()
def test_a_trained_model_calibrates_the_unseen_architecture_and_predict_uses_it(tmp_path, monkeypatch):
    """End to end on real runs (Kepler and Maxwell boards): fit_corpus records the entry; an H100 row's interval
    is at least its half-width, a GTX-980 row's (Maxwell, seen) its group's."""
    from perfml.learned import regressors
    from perfml.learned.persistence import load_model, save_model
    from perfml.learned.queries import predict_queries
    from perfml.learned.training import architecture_fold_count, fit_corpus

    home = shared_data_home()
    monkeypatch.setitem(regressors._DEFAULTS, "xgboost",
                        {**regressors._DEFAULTS["xgboost"], "n_estimators": 20, "max_depth": 3})
    rows = _small_rows(home)
    folds = []
    model, cal, _ = fit_corpus("described", rows, data_home=home, architecture_progress=folds.append)
    entry = cal["unseen_architecture"]
    assert sorted(folds) == entry["architectures"] == ["Kepler", "Maxwell"] and architecture_fold_count(rows) == 2
    assert entry["n"] == len(rows) and entry["boards"] == sorted(set(rows.board))
    path = save_model(model, tmp_path / "m", training_rows=rows, extra={"intervals": cal})
    model = load_model(path, data_home=home)
    n = float(rows.loc[rows.app_id.eq("vectorAdd") & rows.block_x.eq(256), "input_size"].iloc[0])
    q = pd.DataFrame([{"board": b, "app_id": "vectorAdd", "input_size": n, "block_x": 256.0, "block_y": 1.0,
                       "grid_x": n / 256, "grid_y": 1.0} for b in ("GTX-980", "H100-SXM")])
    out = predict_queries(model, q, "q.csv")
    half = np.log(out["upper_ms"] / out["predicted_ms"]).to_numpy()
    q_group = cal["groups"]["described"]["log_halfwidth"][I90]
    q_arch = entry["groups"]["described"]["log_halfwidth"][I90]
    assert half[0] == pytest.approx(q_group, rel=1e-9)
    assert half[1] == pytest.approx(max(q_group, q_arch), rel=1e-9) and q_arch != q_group
    assert out["extrapolated"].iloc[1] and "architecture" not in out["extrapolation"].iloc[0]  # (its L2 is beyond)
    assert "architecture Hopper, none of the training boards' (Kepler, Maxwell)" in out["extrapolation"].iloc[1]
    # the user's reference of the run: measured on an H200 (Hopper too), the H100 row is a transfer within one
    # architecture (the board-grouped interval); measured on a GTX-980, it is carried across architectures
    for ref_board, widened in (("H200", False), ("GTX-980", True)):
        ref = q.iloc[[1]].assign(board=ref_board, time_ms=0.01)  # a synthetic reference time
        out = predict_queries(model, q.iloc[[1]], "q.csv", reference=ref)
        assert out["basis"].iloc[0] == "reference"
        lo, hi = (out[c].iloc[0] / out["predicted_ms"].iloc[0] for c in ("lower_ms", "upper_ms"))
        assert ("architecture Hopper" in out["extrapolation"].iloc[0]) is widened
        assert np.log(hi) == pytest.approx(max(q_group, q_arch) if widened else q_group, rel=1e-6)


@needs_data_home()
def test_perfml_train_prints_the_held_out_architecture_evidence(three_board_train):
    """`perfml train` on the nine apps' NCA runs of three boards (Kepler, Maxwell): the entry and its evidence."""
    import re

    from perfml.learned.bundle import load_predictor

    path, out = three_board_train
    entry = load_predictor(path, data_home=shared_data_home()).models["described"].metadata_["intervals"]["unseen_architecture"]
    m = re.search(r"described unseen architecture: (\d+) rows, each architecture held out \(leave-one-architecture-out\), "
                  r"MAPE ([\d.]+)%, [\d.]+% within 0.8-1.2; their 90% interval, calibrated on the other architectures' "
                  r"rows, covers ([\d.]+)% \(Kepler ([\d.]+)%, Maxwell ([\d.]+)%\)", out)
    assert m, out
    assert int(m.group(1)) == entry["n"] and float(m.group(2)) == pytest.approx(entry["mape"], abs=0.005)
    held = entry["held_out_architecture"]
    assert float(m.group(3)) == pytest.approx(100 * held["coverage"], abs=0.05)
    assert float(m.group(5)) == pytest.approx(100 * held["per_architecture"]["Maxwell"], abs=0.05)
