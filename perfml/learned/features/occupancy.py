"""The occupancy group: ``occ_*`` from the registry's occupancy calculator.

The registers per thread of a row's app and launch are the median observed on the
*other* training boards (a test board's own compilation is never seen).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from perfml.learned.features._common import other_boards_median


class OccupancyFeatures(TransformerMixin, BaseEstimator):
    """``occ_fraction`` (resident warps / maximum) and ``occ_registers`` of every row.

    Parameters
    ----------
    registry : perfml.boards.Registry, optional

    Attributes
    ----------
    registers_ : pandas.DataFrame
        Registers per thread per (board, app, block) of the training rows.
    """

    def __init__(self, *, registry=None):
        self.registry = registry

    def fit(self, X, y=None, *, launch: pd.DataFrame):
        regs = X.get("registers_per_thread")
        self.registers_ = pd.DataFrame(
            {
                "board": X["board"].to_numpy(),
                "app_id": X["app_id"].to_numpy(),
                "block_x": launch["block_x"].to_numpy(),
                "block_y": launch["block_y"].to_numpy(),
                "registers": (regs.to_numpy(dtype=float) if regs is not None else np.full(len(X), np.nan)),
            }
        ).dropna().groupby(["board", "app_id", "block_x", "block_y"], as_index=False)["registers"].median()
        return self

    def transform(self, X, *, launch: pd.DataFrame) -> pd.DataFrame:
        from perfml.boards import get_board, occupancy
        from perfml.errors import MissingBoardParameterError

        check_is_fitted(self, "registers_")
        rows = pd.concat([X[["board", "app_id", "input_size"]], launch], axis=1)
        regs = other_boards_median(self.registers_, ["app_id", "block_x", "block_y"], ["registers"], rows)["registers"]
        block = (launch["block_x"] * launch["block_y"].fillna(1)).to_numpy()
        keys = pd.DataFrame({"board": X["board"].to_numpy(), "threads": block, "regs": regs.to_numpy()})
        cache: dict[tuple, float] = {}
        for board, threads, r in keys.drop_duplicates().itertuples(index=False):
            try:
                value = occupancy(get_board(board, registry=self.registry), int(threads), int(r) if np.isfinite(r) else 0).occupancy
            except (MissingBoardParameterError, ValueError):
                value = np.nan
            cache[(board, threads, r)] = value
        occ = np.array([cache.get(k, np.nan) for k in keys.itertuples(index=False, name=None)])
        out = pd.DataFrame(index=X.index, dtype=float)
        out["occ_fraction"] = occ
        out["occ_registers"] = regs.to_numpy()
        return out
