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
        # numpy, not pandas: a single query's row passes here, and a pandas operation costs more than its arithmetic
        columns = list(absolute.columns)
        at = {c: i for i, c in enumerate(columns)}
        with np.errstate(divide="ignore", invalid="ignore"):
            figures = absolute.to_numpy(dtype=float)
            own = np.log(np.where(figures > 0, figures, np.nan))
        for ratio, (numerator, denominator) in RATIO_FEATURES.items():
            if {ratio, numerator, denominator} <= at.keys():
                if ("range", ratio) not in cache:  # the training boards' range of each capacity (NaN skipped)
                    pair = logs[[numerator, denominator]]
                    cache[("range", ratio)] = (pair.min().to_numpy(dtype=float), pair.max().to_numpy(dtype=float))
                low, high = cache[("range", ratio)]
                held = [_held(own[:, at[c]], low[k], high[k]) for k, c in enumerate((numerator, denominator))]
                own[:, at[ratio]] = held[0] - held[1]
        names = [f"rel_{c[6:]}" for c in columns]
        values = np.full((len(X), len(names)), np.nan)
        same = np.full(len(X), np.nan)
        boards = X["board"].to_numpy(dtype=object)
        for board in pd.unique(boards):
            if board not in others_by_board:
                others = logs.drop(index=board, errors="ignore").mean()
                n_same = sum(arch(t) == arch(board) for t in self.train_boards_ if t != board)
                others_by_board[board] = (others, float(n_same))
            others, n_same = others_by_board[board]
            if (board, tuple(columns)) not in cache:
                cache[(board, tuple(columns))] = others.reindex(columns).to_numpy(dtype=float)
            pick = np.flatnonzero(boards == board)
            values[pick] = own[pick] - cache[(board, tuple(columns))]
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


def _held(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """``values`` held to [low, high] as ``Series.clip`` holds them: NaN stays NaN, a NaN bound is no bound."""
    held = np.fmin(np.fmax(values, low), high)  # fmax / fmin ignore a NaN bound ...
    return np.where(np.isnan(values), np.nan, held)  # ... and would replace a NaN value by it
