"""Conformance checks every perfml regressor on runtime rows must pass.

In the spirit of :func:`sklearn.utils.estimator_checks.parametrize_with_checks`, but on
perfml's inputs (a DataFrame of runtime rows and measured milliseconds, which the
generic scikit-learn checks cannot produce). Each check takes an unfitted estimator
and runtime rows ``X``, ``y`` and raises ``AssertionError`` on a violation:

* :func:`check_params_stored_unmodified`: ``__init__`` stores its arguments as given;
* :func:`check_get_set_params_round_trip`;
* :func:`check_clone`: :func:`sklearn.base.clone` gives an equal, unfitted estimator;
* :func:`check_not_fitted_error`: ``predict`` before ``fit`` raises scikit-learn's
  :class:`~sklearn.exceptions.NotFittedError`;
* :func:`check_fit_returns_self`;
* :func:`check_fitted_attributes_end_in_underscore`: ``fit`` only adds attributes that
  end in ``_`` (and changes no parameter);
* :func:`check_input_not_mutated`: ``fit`` and ``predict`` leave X and y as they were;
* :func:`check_predictions_shape`: one finite-or-NaN float per row.

Use :func:`run_estimator_checks` to run all of them, or :data:`CHECKS` to parametrize a
test.
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

__all__ = [
    "CHECKS",
    "check_clone",
    "check_fit_returns_self",
    "check_fitted_attributes_end_in_underscore",
    "check_get_set_params_round_trip",
    "check_input_not_mutated",
    "check_not_fitted_error",
    "check_params_stored_unmodified",
    "check_predictions_shape",
    "run_estimator_checks",
]


def _name(estimator) -> str:
    return type(estimator).__name__


def _same(a, b) -> bool:
    if a is b:
        return True
    try:
        equal = a == b
        return bool(equal) if not isinstance(equal, (np.ndarray, pd.DataFrame, pd.Series)) else bool(np.all(equal))
    except Exception:  # noqa: BLE001 - objects that cannot be compared are not the same
        return False


def check_params_stored_unmodified(estimator, X=None, y=None) -> None:
    """Every ``__init__`` argument is stored under its own name, unmodified (the same object)."""
    params = estimator.get_params(deep=False)
    rebuilt = type(estimator)(**params)
    for key, value in params.items():
        stored = getattr(rebuilt, key)
        assert stored is value, (
            f"{_name(estimator)}.__init__ changed parameter {key!r}: given {value!r}, stored {stored!r}"
        )


def check_get_set_params_round_trip(estimator, X=None, y=None) -> None:
    """``set_params(**get_params())`` changes nothing, and a set value reads back."""
    params = estimator.get_params(deep=False)
    other = clone(estimator).set_params(**params)
    for key, value in params.items():
        got = other.get_params(deep=False)[key]
        assert _same(got, value) or (hasattr(value, "get_params") and type(got) is type(value)), (
            f"{_name(estimator)}: get/set_params round trip changed {key!r}: {value!r} -> {got!r}"
        )


def check_clone(estimator, X=None, y=None) -> None:
    """``clone`` gives an unfitted estimator of the same type and parameters."""
    twin = clone(estimator)
    assert type(twin) is type(estimator)
    fitted = [k for k in vars(twin) if k.endswith("_") and not k.startswith("_")]
    assert not fitted, f"{_name(estimator)}: a clone carries fitted attributes {fitted}"
    for key, value in estimator.get_params(deep=False).items():
        got = twin.get_params(deep=False)[key]
        assert _same(got, value) or (hasattr(value, "get_params") and type(got) is type(value)), (
            f"{_name(estimator)}: clone changed parameter {key!r}: {value!r} -> {got!r}"
        )


def check_not_fitted_error(estimator, X, y=None) -> None:
    """``predict`` of an unfitted estimator raises scikit-learn's ``NotFittedError``."""
    try:
        clone(estimator).predict(X)
    except NotFittedError:
        return
    except Exception as exc:  # noqa: BLE001 - any other exception is the violation
        raise AssertionError(f"{_name(estimator)}.predict before fit raised {type(exc).__name__}: {exc}, not NotFittedError") from exc
    raise AssertionError(f"{_name(estimator)}.predict before fit did not raise NotFittedError")


def check_fit_returns_self(estimator, X, y) -> None:
    """``fit`` returns the estimator itself."""
    est = clone(estimator)
    assert est.fit(X, y) is est, f"{_name(estimator)}.fit does not return self"


def check_fitted_attributes_end_in_underscore(estimator, X, y) -> None:
    """``fit`` adds only public attributes ending in ``_`` and leaves the parameters as they were."""
    est = clone(estimator)
    before = dict(vars(est))
    params = {k: copy.copy(v) if not hasattr(v, "get_params") else v for k, v in est.get_params(deep=False).items()}
    est.fit(X, y)
    added = [k for k in vars(est) if k not in before and not k.startswith("_")]
    bad = [k for k in added if not k.endswith("_")]
    assert not bad, f"{_name(estimator)}.fit set attributes {bad} that do not end in '_'"
    assert added, f"{_name(estimator)}.fit set no fitted attribute (nothing ending in '_')"
    for key, value in params.items():
        got = est.get_params(deep=False)[key]
        assert _same(got, value) or (hasattr(value, "get_params") and got is before[key]), (
            f"{_name(estimator)}.fit changed parameter {key!r}: {value!r} -> {got!r}"
        )


def check_input_not_mutated(estimator, X, y) -> None:
    """``fit`` and ``predict`` leave X (values, index, columns, dtypes) and y unchanged."""
    X_before, y_before = X.copy(deep=True), np.array(y, dtype=float, copy=True)
    est = clone(estimator).fit(X, y)
    est.predict(X)
    pd.testing.assert_frame_equal(X, X_before, check_exact=True, obj=f"X after {_name(estimator)}.fit/predict")
    np.testing.assert_array_equal(np.asarray(y, dtype=float), y_before, err_msg=f"y after {_name(estimator)}.fit")


def check_predictions_shape(estimator, X, y) -> None:
    """``predict`` returns one float per row, positive where finite."""
    pred = np.asarray(clone(estimator).fit(X, y).predict(X))
    assert pred.shape == (len(X),), f"{_name(estimator)}.predict returned shape {pred.shape} for {len(X)} rows"
    assert np.issubdtype(pred.dtype, np.floating), f"{_name(estimator)}.predict returned dtype {pred.dtype}"
    finite = np.isfinite(pred)
    assert np.all(pred[finite] > 0), f"{_name(estimator)}.predict returned a time <= 0"


CHECKS = (
    check_params_stored_unmodified,
    check_get_set_params_round_trip,
    check_clone,
    check_not_fitted_error,
    check_fit_returns_self,
    check_fitted_attributes_end_in_underscore,
    check_input_not_mutated,
    check_predictions_shape,
)


def run_estimator_checks(estimator, X: pd.DataFrame, y) -> None:
    """Run every check of :data:`CHECKS` on ``estimator`` with runtime rows ``X`` and times ``y`` (ms)."""
    for check in CHECKS:
        check(estimator, X, y)
