"""The transfer group: the same operator call measured on the other training boards.

Habitat's idea [1]_ (scale a kernel's time measured on one GPU to another by ratios of
the two GPUs' hardware figures), written on the roofline: the
residual of a call, ``r = log(T / T_bound)`` (its distance above the board's roofline
lower bound, :func:`perfml.operators.roofline_lower_bound_ms`), is carried from the boards
where the same call (same ``op`` and dimensions) was measured. Transferring ``r`` is the
same as scaling each measured time by the ratio of the two boards' roofline bounds:
``T_target = T_b * T_bound,target / T_bound,b``. (A model whose base time is the roofline
of the boards' *achieved* peaks transfers ``log(T / T_base)`` the same way.)

Columns (NaN where no other training board measured the call):

``xfer_resid_mean``, ``xfer_resid_min``, ``xfer_resid_max``
    mean, smallest and largest residual of the call over the other training boards.
``xfer_n_boards``
    how many other training boards measured it.

A training row's features come from the *other* training boards only (its own board is
left out), so a training row sees what a row of an unseen board sees.

References
----------
.. [1] G. X. Yu, Y. Gao, P. Golikov, G. Pekhimenko, "Habitat: A Runtime-Based
   Computational Performance Predictor for Deep Neural Network Training", USENIX ATC 2021.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["KEY_COLUMNS", "TRANSFER_COLUMNS", "MeasuredCalls", "TransferTable", "call_keys"]

TRANSFER_COLUMNS = ("xfer_resid_mean", "xfer_resid_min", "xfer_resid_max", "xfer_n_boards")
#: the columns naming an operator call (its operator and every dimension)
KEY_COLUMNS = ("op", "B", "M", "N", "K", "H", "in_channels", "out_channels", "kernel_size", "input_size", "stride", "padding")


def call_keys(X: pd.DataFrame) -> pd.Series:
    """One string per row naming the call: the operator and every dimension it has."""
    parts = []
    missing = np.zeros(len(X), dtype=bool)
    for column in KEY_COLUMNS:
        if column not in X.columns:
            parts.append(np.full(len(X), "", dtype=object))
            continue
        if column == "op":
            op = X[column].astype(str)
            missing = op.isna().to_numpy()  # no operator: no key (NaN), as string concatenation gives
            parts.append(op.fillna("").to_numpy(dtype=object))
            continue
        # each distinct value formatted once ("" for a missing one: factorize codes it -1,
        # which picks the last entry); the same strings as formatting row by row
        numeric = pd.to_numeric(X[column], errors="coerce").to_numpy(dtype=float)
        codes, uniques = pd.factorize(numeric)
        text = np.array([f"{float(v):.0f}" for v in uniques] + [""], dtype=object)
        parts.append(text[codes])
    key = pd.Series(["|".join(row) for row in zip(*parts)], index=X.index, dtype=object).astype(str)
    key[missing] = np.nan
    return key


class TransferTable:
    """Mean residual ``log T - log base`` of every (call, training board); built in ``fit``, read in ``features``."""

    def fit(self, keys: pd.Series, boards: pd.Series, log_time: np.ndarray, log_base: np.ndarray) -> "TransferTable":
        frame = pd.DataFrame({"key": keys.to_numpy(), "board": boards.astype(str).to_numpy(),
                              "r": np.asarray(log_time, dtype=float) - np.asarray(log_base, dtype=float)})
        self.table_ = frame.groupby(["key", "board"], sort=False)["r"].mean().unstack("board")
        return self

    def features(self, keys: pd.Series, boards: pd.Series) -> pd.DataFrame:
        """The transfer columns of rows (``keys``, ``boards``), each without its own board."""
        table = self.table_
        out = pd.DataFrame(np.nan, index=keys.index, columns=list(TRANSFER_COLUMNS))
        position = table.index.get_indexer(keys.to_numpy())
        found = position >= 0
        if not found.any():
            out["xfer_n_boards"] = 0.0
            return out
        values = table.to_numpy(dtype=float)[position[found]]  # rows x boards
        own = boards.astype(str).to_numpy()[found]
        columns = np.asarray(table.columns, dtype=object)
        values = np.where(columns[None, :] == own[:, None], np.nan, values)
        count = np.isfinite(values).sum(axis=1).astype(float)
        import warnings

        with warnings.catch_warnings():  # a call seen on no other board: all-NaN rows give NaN
            warnings.simplefilter("ignore", RuntimeWarning)
            mean = np.nanmean(values, axis=1)
            low = np.nanmin(values, axis=1)
            high = np.nanmax(values, axis=1)
        out.loc[found, "xfer_resid_mean"] = mean
        out.loc[found, "xfer_resid_min"] = low
        out.loc[found, "xfer_resid_max"] = high
        out.loc[found, "xfer_n_boards"] = count
        out["xfer_n_boards"] = out["xfer_n_boards"].fillna(0.0)
        return out


class MeasuredCalls:
    """Median log time (ms) of every (call, training board) of the training rows: what a query
    of that call on that board is answered with (``basis`` ``measured``,
    :func:`perfml.learned.queries.measured_on_board`). Built in ``fit``; ``table_`` is calls x boards."""

    def fit(self, keys: pd.Series, boards: pd.Series, log_time: np.ndarray) -> "MeasuredCalls":
        frame = pd.DataFrame({"key": keys.to_numpy(), "board": boards.astype(str).to_numpy(),
                              "t": np.asarray(log_time, dtype=float)})
        self.table_ = frame.groupby(["key", "board"], sort=False)["t"].median().unstack("board")
        return self

    def measured_ms(self, keys: pd.Series, boards: pd.Series) -> np.ndarray:
        """The measured time of each row's call on the row's board (ms), NaN where it has none."""
        table = self.table_
        row = table.index.get_indexer(keys.to_numpy())
        column = pd.Index(table.columns.astype(str)).get_indexer(boards.astype(str).to_numpy())
        found = (row >= 0) & (column >= 0)
        out = np.full(len(row), np.nan)
        out[found] = table.to_numpy(dtype=float)[row[found], column[found]]
        return np.exp(out)
