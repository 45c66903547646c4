"""Evaluation protocols as scikit-learn splitters, and cross-validated predictions.

* ``leave-one-board-out`` (the headline): :class:`sklearn.model_selection.LeaveOneGroupOut`
  over boards: every board is predicted by a model that never saw one of its runtimes.
* ``leave-one-app-out``: the same over app ids.
* ``size-extrapolation``: :class:`SizeExtrapolationSplit`: per app, train on the
  smaller input sizes and test on the larger ones.
* ``grouped-kfold``: :class:`sklearn.model_selection.GroupKFold` over (board, app).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.model_selection import BaseCrossValidator, GroupKFold, LeaveOneGroupOut

from perfml.errors import ExperimentSpecError

PROTOCOLS = ("leave-one-board-out", "leave-one-app-out", "size-extrapolation", "grouped-kfold")


class SizeExtrapolationSplit(BaseCrossValidator):
    """One split: for each app, the sizes up to the ``train_fraction`` quantile train, the rest test.

    ``groups`` must be the app ids and X a DataFrame with an ``input_size`` column.
    """

    def __init__(self, train_fraction: float = 0.7):
        self.train_fraction = train_fraction

    def get_n_splits(self, X=None, y=None, groups=None):
        return 1

    def _iter_test_masks(self, X, y=None, groups=None):
        sizes = np.asarray(X["input_size"], dtype=float)
        apps = np.asarray(groups if groups is not None else X["app_id"])
        test = np.zeros(len(sizes), dtype=bool)
        for app in np.unique(apps):
            mask = apps == app
            distinct = np.unique(sizes[mask])
            if len(distinct) < 2:
                continue
            cut = distinct[max(0, int(np.ceil(self.train_fraction * len(distinct))) - 1)]
            test |= mask & (sizes > cut)
        yield test


def make_splitter(protocol: str, X: pd.DataFrame, n_splits: int = 5):
    """(splitter, groups) for a protocol name."""
    if protocol == "leave-one-board-out":
        return LeaveOneGroupOut(), X["board"].to_numpy()
    if protocol == "leave-one-app-out":
        return LeaveOneGroupOut(), X["app_id"].to_numpy()
    if protocol == "size-extrapolation":
        return SizeExtrapolationSplit(), X["app_id"].to_numpy()
    if protocol == "grouped-kfold":
        groups = (X["board"].astype(str) + "|" + X["app_id"].astype(str)).to_numpy()
        return GroupKFold(n_splits=min(n_splits, len(np.unique(groups)))), groups
    raise ExperimentSpecError(f"unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")


def cross_val_predictions(estimator, X: pd.DataFrame, y, protocol: str, n_splits: int = 5) -> pd.DataFrame:
    """Out-of-fold predictions of ``estimator`` under ``protocol``.

    Returns X's identifying columns plus ``measured_ms``, ``predicted_ms`` and ``fold``
    for every test row (rows never in a test fold are left out, e.g. the smaller sizes
    of size extrapolation).
    """
    y = np.asarray(y, dtype=float)
    splitter, groups = make_splitter(protocol, X, n_splits)
    pieces = []
    for fold, (train, test) in enumerate(splitter.split(X, y, groups)):
        model = clone(estimator).fit(X.iloc[train], y[train])
        pred = model.predict(X.iloc[test])
        piece = X.iloc[test][["board", "app_id", "input_size"]].copy()
        piece["measured_ms"] = y[test]
        piece["predicted_ms"] = pred
        piece["fold"] = fold
        pieces.append(piece)
    return pd.concat(pieces).sort_index()
