"""Every perfml regressor passes the estimator conformance suite and validates its parameters in fit."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from perfml.errors import EstimatorParameterError
from perfml.evaluation.closed_form import describable_runtimes
from perfml.testing.estimator_checks import CHECKS

from conftest import shared_data_home

HOME = shared_data_home()  # the shared datasets, resolved here as the CLI would (tests are entry points)

BOARDS = ["GTX-680", "GTX-970", "Tesla-K20"]
APPS = ["vectorAdd", "matMul_gpu"]
TINY_XGB = {"n_estimators": 10, "max_depth": 2}


@pytest.fixture(scope="module")
def rows(data_home):
    rt = describable_runtimes(data_home, source="gpuperfpredict-nca")
    rt = rt[rt.board.isin(BOARDS) & rt.app_id.isin(APPS)]
    keep = rt.groupby(["board", "app_id"]).input_size.rank(method="dense") % 6 == 0
    return rt[keep].reset_index(drop=True)


def _runtime_estimators(data_home):
    from perfml.closed_form.bsp import BSPModel
    from perfml.closed_form.hongkim_runtime import HongKimRuntimeModel
    from perfml.closed_form.roofline import RooflineModel
    from perfml.learned.regressors import RuntimeRegressor
    from perfml.learned.tuned import TunedRegressor

    small = {"xgboost": TINY_XGB, "hgb": {"max_iter": 10}, "random_forest": {"n_estimators": 10}}
    ests = {
        "BSPModel": BSPModel(data_home=data_home),
        "BSPModel-per-app": BSPModel(group_by=("app_id",), aggregate="geomean", data_home=data_home),
        "RooflineModel": RooflineModel(),
        "RooflineModel-calibrated": RooflineModel(calibrate=True, traffic="requested"),
        "HongKimRuntimeModel": HongKimRuntimeModel(data_home=data_home),
    }
    # The default hybrid (profiles, inner board-grouped CV for the shrinkage) once; every
    # learner with the cheaper settings (the checks are about the API, not the figures).
    ests["RuntimeRegressor-default"] = RuntimeRegressor(learner_params=TINY_XGB, data_home=data_home)
    for learner in ("xgboost", "hgb", "linear", "svr", "random_forest"):
        ests[f"RuntimeRegressor-{learner}"] = RuntimeRegressor(learner=learner, learner_params=small.get(learner),
                                                                shrinkage=1.0, profiles=False, data_home=data_home)
    ests["RuntimeRegressor-log"] = RuntimeRegressor(target="log", learner_params=TINY_XGB, profiles=False, data_home=data_home)
    ests["TunedRegressor"] = TunedRegressor(RuntimeRegressor(learner_params=TINY_XGB, shrinkage=1.0, profiles=False,
                                                             data_home=data_home),
                                            n_trials=1, n_splits=2)
    return ests


_NAMES = list(_runtime_estimators(None))


@pytest.fixture(scope="module")
def estimators(data_home):
    return _runtime_estimators(data_home)


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("name", _NAMES)
def test_runtime_regressor_conforms(estimators, rows, name, check):
    check(estimators[name], rows, rows.measured_ms.to_numpy())


def _hongkim_table():
    # The worked example of the HongKimModel docstring, three launches of it (seed 002 Sec. 3).
    X = pd.DataFrame({"comp_insts": [64_000, 32_000, 16_000], "coal_mem_insts": [4, 4, 8],
                      "uncoal_mem_insts": [14_260, 7_000, 3_000], "uncoal_per_mw": [2, 2, 2],
                      "threads_per_block": [256, 256, 128], "blocks": [585, 585, 300],
                      "active_blocks_per_sm": [1, 1, 2]})
    return X, np.array([130.0, 70.0, 20.0])


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_hongkim_model_conforms(check):
    from perfml.closed_form.hongkim import HongKimModel

    X, y = _hongkim_table()
    check(HongKimModel(calibrate=True), X, y)


def test_the_checks_can_fail():
    """A regressor breaking the conventions is caught (so the suite is not vacuous)."""
    from sklearn.base import BaseEstimator, RegressorMixin

    from perfml.testing.estimator_checks import (
        check_fitted_attributes_end_in_underscore,
        check_input_not_mutated,
        check_not_fitted_error,
        check_params_stored_unmodified,
    )

    class ChangesParams(RegressorMixin, BaseEstimator):
        def __init__(self, *, scale=(1, 2)):
            self.scale = list(scale)

    class BadFit(RegressorMixin, BaseEstimator):
        def __init__(self, *, scale=1.0):
            self.scale = scale

        def fit(self, X, y):
            self.mean = float(np.mean(y))  # no trailing underscore
            X["touched"] = 1  # mutates the caller's X
            return self

        def predict(self, X):
            return np.full(len(X), getattr(self, "mean", 1.0))  # no NotFittedError

    X = pd.DataFrame({"a": [1.0, 2.0, 3.0]})
    y = np.array([1.0, 2.0, 3.0])
    with pytest.raises(AssertionError):
        check_params_stored_unmodified(ChangesParams(), X.copy(), y)
    for check in (check_not_fitted_error, check_fitted_attributes_end_in_underscore, check_input_not_mutated):
        with pytest.raises(AssertionError):
            check(BadFit(), X.copy(), y)


# -- parameters are validated in fit, with a typed error ------------------------------------
def _bad_params():
    from perfml.closed_form.bsp import BSPModel
    from perfml.closed_form.hongkim_runtime import HongKimRuntimeModel
    from perfml.closed_form.roofline import RooflineModel
    from perfml.learned.regressors import RuntimeRegressor

    return [
        (RuntimeRegressor(learner="gpt", data_home=HOME), "learner"),
        (RuntimeRegressor(target="linear-time", data_home=HOME), "target"),
        (RuntimeRegressor(baseline="oracle", data_home=HOME), "baseline"),
        (RuntimeRegressor(board_features="some", data_home=HOME), "board_features"),
        (RuntimeRegressor(shrinkage=-0.1, data_home=HOME), "shrinkage"),
        (RuntimeRegressor(shrinkage=math.nan, data_home=HOME), "shrinkage"),
        (RuntimeRegressor(shrinkage=1.5, data_home=HOME), "shrinkage"),
        (RuntimeRegressor(shrinkage="half", data_home=HOME), "shrinkage"),
        (RuntimeRegressor(feature_subset="prof_", data_home=HOME), "feature_subset"),
        (RuntimeRegressor(target="residual", analytical=False, data_home=HOME), "analytical"),
        (BSPModel(aggregate="mean", data_home=HOME), "aggregate"),
        (BSPModel(unseen="guess", data_home=HOME), "unseen"),
        (BSPModel(group_by="board", data_home=HOME), "group_by"),
        (RooflineModel(traffic="cached"), "traffic"),
        (RooflineModel(precision="fp8"), "precision"),
        (RooflineModel(clock="turbo"), "clock"),
        (HongKimRuntimeModel(instruction_source="oracle", data_home=HOME), "instruction_source"),
        (HongKimRuntimeModel(issue_cycles=-4.0, data_home=HOME), "issue_cycles"),
    ]


@pytest.mark.parametrize("case", range(len(_bad_params())))
def test_bad_parameters_are_a_typed_error_in_fit(rows, case):
    est, param = _bad_params()[case]
    with pytest.raises(EstimatorParameterError, match=param):
        est.fit(rows, rows.measured_ms)


def test_estimator_parameter_error_is_a_value_error_and_a_perfml_error():
    from perfml.errors import PerfmlError

    assert issubclass(EstimatorParameterError, PerfmlError) and issubclass(EstimatorParameterError, ValueError)
