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
