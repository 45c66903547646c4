"""Leave-one-board-out out-of-fold predictions: every data-driven choice is made without the held-out board."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin

from perfml.learned.intervals import board_oof_predictions


class _ChoosesFromItsRows(RegressorMixin, BaseEstimator):
    """A stand-in whose ``shrinkage="auto"`` is chosen from its training rows (here: their mean target)."""

    def __init__(self, shrinkage="auto"):
        self.shrinkage = shrinkage

    def fit(self, X, y):
        self.shrinkage_ = float(np.mean(y)) if self.shrinkage == "auto" else float(self.shrinkage)
        return self

    def predict(self, X):
        return np.full(len(X), self.shrinkage_)


def test_each_fold_chooses_its_own_shrinkage_without_the_held_out_board():
    """The full fit's choice (here 2.0, made with every board) must not serve the folds.

    Reusing it let a held-out board's rows choose how much of the residual to trust
    (perfml train's described apps: 10.84 % reported, 11.41 % nested).
    """
    X = pd.DataFrame({"board": ["a", "a", "b", "b", "c", "c"]})
    y = np.array([1.0, 1.0, 2.0, 2.0, 3.0, 3.0])
    model = _ChoosesFromItsRows().fit(X, y)
    assert model.shrinkage_ == 2.0
    oof = board_oof_predictions(model, X, y)
    # board a held out: chosen from b and c only (mean 2.5); b: from a and c (2.0); c: from a and b (1.5)
    np.testing.assert_allclose(oof, [2.5, 2.5, 2.0, 2.0, 1.5, 1.5])
    assert model.shrinkage == "auto" and model.shrinkage_ == 2.0  # the fitted model itself is untouched


def test_a_fixed_shrinkage_stays_fixed_in_every_fold():
    X = pd.DataFrame({"board": ["a", "b", "c"]})
    y = np.array([1.0, 2.0, 3.0])
    oof = board_oof_predictions(_ChoosesFromItsRows(shrinkage=0.4).fit(X, y), X, y)
    np.testing.assert_allclose(oof, [0.4, 0.4, 0.4])


def test_a_shrinkage_reaches_the_amaris_sub_models_and_is_refused_for_the_operators():
    import pytest

    from perfml.errors import InvalidValueError
    from perfml.learned.training import make_corpus_model

    assert make_corpus_model("described").shrinkage == "auto"
    assert make_corpus_model("undescribed", shrinkage=0.0).shrinkage == 0.0
    with pytest.raises(InvalidValueError, match="no residual shrinkage"):
        make_corpus_model("dlops", shrinkage=0.0)


def _calibration(n_all: int, n_group: int):
    """A calibration of synthetic scores: ``n_group`` rows of group BMM, the rest EW."""
    from perfml.learned.intervals import calibrate

    rng = np.random.default_rng(0)
    scores = np.abs(rng.normal(0, 0.2, n_all))  # synthetic |log(pred / measured)|
    groups = np.array(["BMM"] * n_group + ["EW"] * (n_all - n_group), dtype=object)
    return calibrate(scores, groups, boards=np.array(["A", "B"] * (n_all // 2) + ["A"] * (n_all % 2)))


def test_a_group_too_small_for_the_level_takes_the_pooled_half_width():
    import math

    from perfml.learned.intervals import interval_bounds

    cal = _calibration(120, 5)  # BMM: 5 rows, no 90 % quantile of its own
    assert cal["groups"]["BMM"]["log_halfwidth"][40] is None
    lower, upper = interval_bounds(np.array([1.0]), None, [False], cal, 0.90, groups=["BMM"])
    q = cal["groups"]["all"]["log_halfwidth"][40]
    assert upper[0] == math.exp(q) and lower[0] == math.exp(-q)  # finite: was inf, written as upper_ms


def test_a_level_the_whole_calibration_cannot_give_is_a_typed_error():
    import pytest

    from perfml.errors import IntervalLevelError
    from perfml.learned.intervals import interval_bounds

    cal = _calibration(50, 5)  # 50 rows: a 99 % split-conformal interval needs 99
    with pytest.raises(IntervalLevelError, match=r"--level 0.99: .* 50 held-out rows, too few .* at least 99"):
        interval_bounds(np.array([1.0]), None, [False], cal, 0.99, groups=["EW"])
    assert np.isfinite(interval_bounds(np.array([1.0]), None, [False], cal, 0.90, groups=["EW"])[1]).all()


def test_an_unbounded_held_out_interval_has_no_width_figure():
    from perfml.learned.intervals import held_out_board_coverage

    pred = np.ones(6)
    measured = np.array([1.0, 1.1, 0.9, 1.2, 1.0, 0.8])
    figures = held_out_board_coverage(pred, measured, np.array(list("AABBCC")), 0.90)  # 4 other rows: no 90 % quantile
    assert figures["mean_relative_width"] is None  # was inf: the model manifest could not be written
