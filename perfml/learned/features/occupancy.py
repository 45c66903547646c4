"""The occupancy group: ``occ_*`` from the registry's occupancy calculator.

The registers per thread of a row's app and launch are the median observed on the
*other* training boards (a test board's own compilation is never seen).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from perfml.learned.features._common import OtherBoardsMedian


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

    def _lookups(self) -> dict:
        """The registers lookup and the occupancy per (board, threads, registers), built once per fitted state."""
        cache = self.__dict__.get("_lookup_cache")
        if cache is None:
            cache = self._lookup_cache = {}
        if "registers" not in cache:
            cache["registers"] = OtherBoardsMedian(self.registers_, ["app_id", "block_x", "block_y"], ["registers"])
            cache["occupancy"] = {}
        return cache

    def _occupancy(self, board: str, threads: float, registers: float) -> float:
        from perfml.boards import get_board, occupancy
        from perfml.errors import MissingBoardParameterError

        try:
            return occupancy(get_board(board, registry=self.registry), int(threads), int(registers)).occupancy
        except (MissingBoardParameterError, ValueError):
            return np.nan

    def transform(self, X, *, launch: pd.DataFrame) -> pd.DataFrame:
        check_is_fitted(self, "registers_")
        cache = self._lookups()
        rows = pd.concat([X[["board", "app_id", "input_size"]], launch], axis=1)
        regs = cache["registers"].values(rows)[:, 0]
        block = (launch["block_x"] * launch["block_y"].fillna(1)).to_numpy()
        all_board_codes, board_names = pd.factorize(X["board"].to_numpy(dtype=object))
        # A row whose registers are unknown (NaN) gets no occupancy (NaN), as before.
        occ = np.full(len(X), np.nan)
        known = np.isfinite(regs)
        if known.any():
            # one code per distinct (board, threads, registers); factorize codes shifted by one (NaN -> 0)
            board_codes = all_board_codes[known]
            threads_codes, threads_values = pd.factorize(block[known])
            regs_codes, regs_values = pd.factorize(regs[known])
            combined = ((board_codes.astype(np.int64) * (len(threads_values) + 1) + threads_codes + 1)
                        * (len(regs_values) + 1) + regs_codes + 1)
            _, first, codes = np.unique(combined, return_index=True, return_inverse=True)
            memo = cache["occupancy"]
            values = np.empty(len(first))
            uniques = [(board_names[board_codes[i]], threads_values[threads_codes[i]] if threads_codes[i] >= 0 else np.nan,
                        regs_values[regs_codes[i]]) for i in first]
            for j, key in enumerate(uniques):
                if key not in memo:
                    memo[key] = self._occupancy(*key)
                values[j] = memo[key]
            occ[known] = values[codes]
        return pd.DataFrame({"occ_fraction": occ, "occ_registers": regs}, index=X.index, dtype=float)
