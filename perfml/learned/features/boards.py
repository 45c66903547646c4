"""The board group: ``board_*`` specifications and ``rel_*`` differences from the training boards."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from perfml.learned.board_features import board_features
from perfml.learned.features._common import architecture

MODES = ("both", "absolute", "relative")


class BoardFeatures(TransformerMixin, BaseEstimator):
    """Board specifications from the registry, absolute and/or relative to the training boards.

    ``board_*``: registry fields and derived peaks (:mod:`perfml.learned.board_features`).
    ``rel_*``: log of each board figure minus its mean log over the *other* training
    boards, and the number of other training boards of the same architecture: how the
    board differs from the boards its transfer features come from, the same quantity
    for a training row and a test row.

    Parameters
    ----------
    mode : {"both", "absolute", "relative"}
    registry : perfml.boards.Registry, optional
        Where boards are looked up (the default registry when None).

    Attributes
    ----------
    train_boards_ : list of str
    """

    def __init__(self, *, mode: str = "both", registry=None):
        self.mode = mode
        self.registry = registry

    def fit(self, X, y=None):
        self.train_boards_ = sorted(X["board"].unique())
        return self

    def absolute(self, X: pd.DataFrame) -> pd.DataFrame:
        """``board_*`` of every row (nothing learned)."""
        return board_features(X["board"], registry=self.registry).set_index(X.index)

    def relative(self, X: pd.DataFrame, absolute: pd.DataFrame) -> pd.DataFrame:
        """``rel_*`` of every row, from its ``board_*`` values and the training boards'."""
        check_is_fitted(self, "train_boards_")
        train = board_features(self.train_boards_, registry=self.registry)
        train.index = self.train_boards_
        logs = np.log(train.where(train > 0))
        out = pd.DataFrame(index=X.index, dtype=float)
        own = np.log(absolute.where(absolute > 0))
        for board, part in X.groupby("board", sort=False):
            others = logs.drop(index=board, errors="ignore").mean()
            delta = own.loc[part.index] - others
            out.loc[part.index, [f"rel_{c[6:]}" for c in delta.columns]] = delta.to_numpy()
        arch = lambda b: architecture(b, self.registry)  # noqa: E731
        out["rel_same_architecture_boards"] = X["board"].map(
            lambda b: sum(arch(t) == arch(b) for t in self.train_boards_ if t != b)
        ).astype(float)
        return out

    def transform(self, X, absolute: pd.DataFrame | None = None) -> list[pd.DataFrame]:
        """The absolute and/or relative blocks, as the ``mode`` asks."""
        absolute = self.absolute(X) if absolute is None else absolute
        parts = []
        if self.mode in ("absolute", "both"):
            parts.append(absolute)
        if self.mode in ("relative", "both"):
            parts.append(self.relative(X, absolute))
        return parts
