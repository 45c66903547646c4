"""Validation of the X / y that the closed-form regressors take."""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfml.errors import DatasetSchemaError

#: Optional launch-configuration columns of X (as in runtimes.csv).
LAUNCH_COLUMNS = ("block_x", "block_y", "grid_x", "grid_y")


def check_frame(X, required, who: str) -> pd.DataFrame:
    """X must be a DataFrame with the ``required`` columns and positive input sizes."""
    if not isinstance(X, pd.DataFrame):
        raise DatasetSchemaError(
            f"{who} takes a pandas DataFrame with columns {', '.join(dict.fromkeys(required))} "
            f"(one row per kernel run), got {type(X).__name__}"
        )
    missing = [c for c in dict.fromkeys(required) if c not in X.columns]
    if missing:
        raise DatasetSchemaError(f"{who}: X lacks column(s) {', '.join(missing)}; add them (see runtimes.csv)")
    if "input_size" in X.columns:
        n = pd.to_numeric(X["input_size"], errors="coerce").to_numpy(dtype=float)
        if not np.all(np.isfinite(n) & (n > 0)):
            raise DatasetSchemaError(f"{who}: input_size must be a positive number in every row")
    return X


def check_target(y, n_rows: int, who: str) -> np.ndarray:
    """y must be finite, strictly positive times (ms), one per row of X."""
    y = np.asarray(y, dtype=float).ravel()
    if y.shape[0] != n_rows:
        raise DatasetSchemaError(f"{who}: y has {y.shape[0]} values for {n_rows} rows of X")
    if not np.all(np.isfinite(y) & (y > 0)):
        raise DatasetSchemaError(f"{who}: measured times must be positive, finite milliseconds (found NaN, 0 or < 0)")
    return y
