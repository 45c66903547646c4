"""The one-reference-board protocol (the Habitat setting): a kernel measured on one board only.

Geoffrey X. Yu et al., "Habitat: A Runtime-Based Computational Performance Predictor for
Deep Neural Network Training", USENIX ATC 2021: the user has run a kernel on the GPU they
own (the *reference* board) and asks for its runtime on the others. Here, for a reference
board R, the kernels are split into ``n_kernel_folds`` groups; for each group K:

* training rows: every row of the kernels not in K (all boards), plus the rows of the
  kernels in K on R only (the user's own measurements);
* test rows: the rows of the kernels in K on every board other than R.

So no runtime of a test kernel on any board but R is seen. (Holding out one kernel at a
time would be the exact setting; folds of kernels cost fewer fits and see fewer other
kernels, so they are the harder variant.)
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfml.errors import PerfmlError

__all__ = ["OneReferenceBoardSplit"]


class OneReferenceBoardSplit:
    """Splitter: test kernels measured on ``reference_board`` only, predicted on every other board.

    Parameters
    ----------
    reference_board : str
        The board whose runtimes of the test kernels are in training.
    n_kernel_folds : int, default=3
        Groups of kernels (``app_id``) held out together (at most the number of kernels
        measured on the reference board).
    """

    def __init__(self, reference_board: str, n_kernel_folds: int = 3):
        self.reference_board = reference_board
        self.n_kernel_folds = n_kernel_folds

    def _kernels(self, X: pd.DataFrame) -> np.ndarray:
        if not isinstance(X, pd.DataFrame) or not {"board", "app_id"} <= set(X.columns):
            raise PerfmlError("OneReferenceBoardSplit needs X as a DataFrame with 'board' and 'app_id' columns (runtime rows)")
        on_reference = X.loc[X["board"] == self.reference_board, "app_id"].unique()
        if len(on_reference) == 0:
            raise PerfmlError(f"no runtimes of the reference board {self.reference_board!r} in the selection; "
                              f"choose one of {', '.join(sorted(X['board'].unique()))}")
        if not isinstance(self.n_kernel_folds, (int, np.integer)) or self.n_kernel_folds < 1:
            raise PerfmlError(f"n_kernel_folds must be a positive integer, got {self.n_kernel_folds!r}")
        return np.sort(on_reference)

    def get_n_splits(self, X=None, y=None, groups=None) -> int:
        if X is None:
            return self.n_kernel_folds
        return min(self.n_kernel_folds, len(self._kernels(X)))

    def split(self, X, y=None, groups=None):
        """Yield (train, test) row positions, one pair per group of kernels."""
        kernels = self._kernels(X)
        n = min(self.n_kernel_folds, len(kernels))
        boards = X["board"].to_numpy()
        apps = X["app_id"].to_numpy()
        on_reference = boards == self.reference_board
        for fold in range(n):
            held = np.isin(apps, kernels[fold::n])  # kernels dealt round-robin in name order
            test = held & ~on_reference
            if not test.any():
                continue
            yield np.flatnonzero(~test), np.flatnonzero(test)
