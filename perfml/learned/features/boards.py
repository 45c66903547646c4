"""The board group: ``board_*`` specifications and ``rel_*`` differences from the training boards."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from perfml.learned.board_features import RATIO_FEATURES, board_features
from perfml.learned.features._common import architecture

MODES = ("both", "absolute", "relative")


class BoardFeatures(TransformerMixin, BaseEstimator):
    """Board specifications from the registry, absolute and/or relative to the training boards.

    ``board_*``: registry fields and derived peaks (:mod:`perfml.learned.board_features`).
    ``rel_*``: log of each board figure minus its mean log over the *other* training
    boards, and the number of other training boards of the same architecture: how the
    board differs from the boards its transfer features come from, the same quantity
    for a training row and a test row.

    A ratio of two capacities (:data:`~perfml.learned.board_features.RATIO_FEATURES`, the
    FP32 FLOP per DRAM byte) is taken of the two capacities held to the training boards'
    range. A tree is flat beyond the training range in each capacity, but a ratio of two
    capacities beyond it lands inside it: the H200 (4.8 TB/s) beside the H100 (3.35 TB/s),
    same SMs and clocks, both above every training board, fell into another leaf of the
    ratio and was predicted up to 1.5x slower. Held to the range, both have the same ratio,
    and the transfer baseline, which scales with every capacity, decides which is faster.

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
        cache = self.__dict__.get("_lookup_cache")
        if cache is None:
            cache = self._lookup_cache = {}
        if "train_logs" not in cache:
            train = board_features(self.train_boards_, registry=self.registry)
            train.index = self.train_boards_
            cache["train_logs"] = np.log(train.where(train > 0))
            cache["others"] = {}
        logs, others_by_board = cache["train_logs"], cache["others"]
        arch = lambda b: architecture(b, self.registry)  # noqa: E731
        own = np.log(absolute.where(absolute > 0))
        for ratio, (numerator, denominator) in RATIO_FEATURES.items():
            if {ratio, numerator, denominator} <= set(own.columns):
                low, high = logs[[numerator, denominator]].min(), logs[[numerator, denominator]].max()
                held = own[[numerator, denominator]].clip(lower=low, upper=high, axis=1)
                own[ratio] = held[numerator] - held[denominator]
        names = [f"rel_{c[6:]}" for c in own.columns]
        values = np.full((len(X), len(names)), np.nan)
        same = np.full(len(X), np.nan)
        boards = X["board"].to_numpy(dtype=object)
        for board in pd.unique(boards):
            if board not in others_by_board:
                others = logs.drop(index=board, errors="ignore").mean()
                n_same = sum(arch(t) == arch(board) for t in self.train_boards_ if t != board)
                others_by_board[board] = (others, float(n_same))
            others, n_same = others_by_board[board]
            pick = np.flatnonzero(boards == board)
            values[pick] = own.iloc[pick].to_numpy(dtype=float) - others.reindex(own.columns).to_numpy(dtype=float)
            same[pick] = n_same
        out = pd.DataFrame(values, index=X.index, columns=names)
        out["rel_same_architecture_boards"] = same
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
