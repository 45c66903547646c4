"""The one cross-validation harness: out-of-fold predictions of any regressor under any protocol.

``perfml evaluate``, ``perfml experiment run`` and the tests all call
:func:`cross_val_predictions`; a protocol is a name of
:data:`perfml.evaluation.protocols.PROTOCOLS` or any splitter with ``split(X, y, groups)``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import clone

from perfml.evaluation.protocols import get_protocol

#: Identifying columns copied from X into every prediction row (those X has: runtime rows
#: have app_id and input_size, operator rows op, op_class and NeuSight's split).
ID_COLUMNS = ("board", "app_id", "input_size", "op", "op_class", "split")


def _fit_predict_fold(estimator, X: pd.DataFrame, y: np.ndarray, train, test, fold: int) -> pd.DataFrame:
    """One fold: a clone of ``estimator`` fitted on the training rows predicts the test rows."""
    model = clone(estimator).fit(X.iloc[train], y[train])
    pred = model.predict(X.iloc[test])
    piece = X.iloc[test][[c for c in ID_COLUMNS if c in X.columns]].copy()
    piece["measured_ms"] = y[test]
    piece["predicted_ms"] = pred
    piece["fold"] = fold
    return piece


def cross_val_predictions(estimator, X: pd.DataFrame, y, protocol, n_splits: int = 5, *,
                          reference_board: str = "GTX-680", n_jobs: int | None = None) -> pd.DataFrame:
    """Out-of-fold predictions of ``estimator`` under ``protocol``.

    For every fold of the protocol's splitter a clone of ``estimator`` is fitted on the
    training rows and predicts the test rows.

    Parameters
    ----------
    estimator : scikit-learn regressor on runtime rows
    X : pandas.DataFrame
        Runtime rows (``board``, ``app_id``, ``input_size``, launch columns, ...).
    y : array-like
        Measured times (ms), one per row of X.
    protocol : str or splitter
        A name of :data:`~perfml.evaluation.protocols.PROTOCOLS` or a splitter.
    n_splits : int, default=5
        Folds of the k-fold protocols (``grouped-kfold``, ``size-cv``).
    reference_board : str, default="GTX-680"
        Training board of ``reference-board``.
    n_jobs : int, optional
        Folds run through :class:`joblib.Parallel`: None runs them one after the other in
        this process, unless a :func:`joblib.parallel_config` is active (``perfml
        experiment run --dask`` activates joblib's Dask backend, so the folds run on a
        Dask cluster). Every fold fits a clone of the same estimator with the same
        parameters, so where a fold runs does not change its predictions.

    Returns
    -------
    pandas.DataFrame
        X's identifying columns plus ``measured_ms``, ``predicted_ms`` and ``fold`` for
        every test row, in X's row order (rows never in a test fold are left out, e.g.
        the smaller sizes of size extrapolation).
    """
    y = np.asarray(y, dtype=float)
    splitter = get_protocol(protocol, n_splits=n_splits, reference_board=reference_board)
    groups = splitter.groups_of(X) if hasattr(splitter, "groups_of") else None
    from joblib import Parallel, delayed

    folds = list(splitter.split(X, y, groups))
    pieces = Parallel(n_jobs=n_jobs)(delayed(_fit_predict_fold)(estimator, X, y, train, test, fold)
                                     for fold, (train, test) in enumerate(folds))
    return pd.concat(pieces).sort_index()
