"""An xgboost ``learner_params`` entry xgboost refuses or ignores is a typed error at the start of ``fit``.

Before, a refused value raised xgboost's own ``XGBoostError`` from inside the fit (after the
features were built), and an unknown name (a misspelling) trained with xgboost's default and
a warning. The frames given to ``fit`` here are never read: the parameters are checked first.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfml.errors import EstimatorParameterError
from perfml.learned.operators import OperatorRegressor
from perfml.learned.regressors import RuntimeRegressor
from perfml.learned.xgboost_params import check_xgboost_params

ESTIMATORS = [RuntimeRegressor, OperatorRegressor]


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize(("params", "names"), [
    ({"max_depth": -1}, ["max_depth"]),
    ({"subsample": 2.0}, ["subsample"]),
    ({"learning_rate": "fast"}, ["learning_rate"]),
    ({"objective": "reg:nonsense"}, ["objective"]),
    ({"n_estimators": "many"}, ["n_estimators", "non-negative integer"]),
    ({"n_estimators": -5}, ["n_estimators"]),
    ({"max_dept": 3}, ["max_dept", "not an xgboost parameter", "xgboost.readthedocs.io"]),
    ({"tree_method": "exact"}, ["tree_method", "the model sets"]),
    ({"monotone_constraints": (1,)}, ["monotone_constraints"]),
])
def test_a_refused_or_unknown_xgboost_parameter_fails_at_the_start_of_fit(estimator, params, names):
    never_read = pd.DataFrame({"board": ["GTX-680"]})
    with pytest.raises(EstimatorParameterError) as info:
        estimator(learner_params=params).fit(never_read, [1.0])
    message = str(info.value)
    for name in names:
        assert name in message, message
    assert "Stack trace" not in message and "[" not in message.split(":")[0]


@pytest.mark.parametrize("params", [
    {"n_estimators": 30, "max_depth": 4, "learning_rate": 0.1},
    {"eta": 0.05, "lambda": 2.0, "subsample": 0.8},          # xgboost's aliases are its parameters
    {"objective": "reg:absoluteerror", "min_child_weight": 5},
    {"n_estimators": 0},
    {"n_estimators": np.int64(20)},                          # an integer of numpy's (Optuna, a grid)
])
def test_parameters_xgboost_takes_pass(params):
    check_xgboost_params("RuntimeRegressor", params)


def test_two_unknown_names_are_both_named():
    with pytest.raises(EstimatorParameterError, match=r"max_dept, sub_sample are not xgboost parameters"):
        check_xgboost_params("RuntimeRegressor", {"max_dept": 3, "sub_sample": 0.5})
