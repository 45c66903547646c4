"""Check the ``learner_params`` given to an xgboost learner before any work is done.

xgboost checks its parameters only when it trains: a value it refuses (``max_depth=-1``,
``subsample=2``, ``objective="nonsense"``) raised ``XGBoostError`` from deep inside a fit,
after the features were built, or in the last fold of a leave-one-board-out; and a name it
does not know it ignores with a warning, so a misspelt ``max_dept=3`` trained the default
depth. :func:`check_xgboost_params` trains one tree on a tiny synthetic frame with the
parameters first and turns either into an
:class:`~perfml.errors.EstimatorParameterError` that names the parameter and the fix.
"""

from __future__ import annotations

import numbers
import re
import warnings
from typing import Any

from perfml.errors import EstimatorParameterError

#: parameters the estimators set themselves (a ``learner_params`` entry would clash with them)
RESERVED = ("monotone_constraints", "tree_method", "random_state", "n_jobs")

_DOCS = "https://xgboost.readthedocs.io/en/stable/parameter.html"
_UNUSED = re.compile(r"Parameters:\s*\{(?P<names>[^}]*)\}\s*(?:are|is) not used")


def check_xgboost_params(who: str, params: dict[str, Any]) -> None:
    """Raise :class:`~perfml.errors.EstimatorParameterError` for an entry of ``params`` xgboost refuses or ignores.

    ``who``: the estimator, for the message. Checks, in order: an entry of :data:`RESERVED`;
    ``n_estimators`` not a non-negative integer; then one boosting round on 4 synthetic rows
    (made up here, never data) with the other parameters, where xgboost raises for a value
    it refuses and warns for a name it does not use.
    """
    if not params:
        return
    reserved = sorted(set(params) & set(RESERVED))
    if reserved:
        raise EstimatorParameterError(f"{who}: learner_params may not set {', '.join(reserved)} (the model sets "
                                      "them); use the estimator's own parameters")
    rounds = params.get("n_estimators", 1)
    if isinstance(rounds, bool) or not isinstance(rounds, numbers.Integral) or rounds < 0:
        raise EstimatorParameterError(f"{who}: learner_params n_estimators must be a non-negative integer (the "
                                      f"number of boosting rounds), got {rounds!r}")
    import numpy as np
    from xgboost import XGBRegressor
    from xgboost.core import XGBoostError

    # synthetic: 4 rows, 2 features, targets in (0, 1) (any objective xgboost accepts for them)
    X = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 3.0], [3.0, 2.0]])
    y = np.array([0.2, 0.4, 0.6, 0.8])
    trial = {**params, "n_estimators": 1}
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            XGBRegressor(**trial, tree_method="hist", n_jobs=1, random_state=0).fit(X, y)
    except (XGBoostError, TypeError, ValueError) as exc:
        which = (f"learner_params {next(iter(params))}" if len(params) == 1
                 else f"one of learner_params {', '.join(sorted(params))}")
        raise EstimatorParameterError(f"{who}: xgboost refuses {which}: {_message(exc)}; see {_DOCS} for each "
                                      "parameter's range") from None
    for warning in caught:
        found = _UNUSED.search(str(warning.message))
        if found:
            names = [n.strip().strip('"') for n in found.group("names").split(",") if n.strip()]
            raise EstimatorParameterError(
                f"{who}: learner_params {', '.join(names)} {'is' if len(names) == 1 else 'are'} not "
                f"{'an xgboost parameter' if len(names) == 1 else 'xgboost parameters'} (xgboost would train "
                f"without {'it' if len(names) == 1 else 'them'}); remove or respell as {_DOCS} names them")


def _message(exc: BaseException) -> str:
    """xgboost's message without its timestamp and source location, on one line."""
    text = re.sub(r"\[\d\d:\d\d:\d\d\]\s*\S+:\d+:\s*", "", str(exc))
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("Stack trace")]
    return " ".join(lines[:3])[:400]
