"""The MWP/CWP model as a scikit-learn regressor on kernel-input rows (time in ms)."""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from perfml.closed_form.hongkim._evaluate import evaluate_columns
from perfml.closed_form.hongkim._hardware import HongKimHardware
from perfml.closed_form.hongkim._kernel import (
    FEATURE_COLUMNS,
    OPTIONAL_FEATURE_COLUMNS,
    check_kernel_columns,
)
from perfml.errors import DatasetSchemaError

__all__ = ["HongKimModel"]

class HongKimModel(RegressorMixin, BaseEstimator):
    """Hong & Kim MWP/CWP model as a scikit-learn regressor (kernel time in ms).

    The model is closed form: given the hardware parameters it predicts without
    training. ``fit`` validates the table, records the feature names and, only when
    ``calibrate=True``, fits one global time scale ``scale_`` (the geometric mean of
    measured / modelled time, i.e. the least-squares fit in log time). With the default
    ``calibrate=False``, ``scale_ = 1`` and the predictions are the paper's.

    Parameters
    ----------
    hardware : HongKimHardware or dict of str to HongKimHardware, default None
        One board for every row, or one per board name, in which case each row of ``X``
        names its board in column ``board_column``. None means the paper's GTX 280
        (:meth:`HongKimHardware.gtx280`).
    board_column : str, default "board"
        Column of ``X`` holding the board name when ``hardware`` is a dict.
    calibrate : bool, default False
        Fit the global time scale ``scale_`` to ``y``.

    Attributes
    ----------
    scale_ : float
        Multiplier applied to the modelled time (1.0 unless ``calibrate``).
    n_features_in_ : int
        Columns of ``X`` seen in ``fit``.
    feature_names_in_ : ndarray of str
        Their names, when ``X`` is a DataFrame.
    hardware_ : HongKimHardware or dict
        The hardware used (``hardware`` or the GTX 280 default).

    Notes
    -----
    ``X`` is a DataFrame with the columns of :data:`FEATURE_COLUMNS` (all counts per
    warp), optionally ``synch_insts``, and ``board_column`` when ``hardware`` is a dict;
    other columns are ignored. A bare 2-D array is read as :data:`FEATURE_COLUMNS`
    followed, if there is an eighth column, by ``synch_insts`` (single board only).
    ``y`` is the measured kernel time in milliseconds.

    References
    ----------
    .. [1] S. Hong and H. Kim, "An analytical model for a GPU architecture with
       memory-level and thread-level parallelism awareness", ISCA 2009, Sec. 3.

    Examples
    --------
    >>> import pandas as pd
    >>> X = pd.DataFrame({"comp_insts": [64_000], "coal_mem_insts": [4],
    ...     "uncoal_mem_insts": [14_260], "uncoal_per_mw": [2], "threads_per_block": [256],
    ...     "blocks": [585], "active_blocks_per_sm": [1]})
    >>> HongKimModel().fit(X).predict(X).round(1)  # GTX 280 of the paper
    array([136.9])
    """

    def __init__(self, *, hardware=None, board_column="board", calibrate=False):
        self.hardware = hardware
        self.board_column = board_column
        self.calibrate = calibrate

    # -- helpers

    def _resolve_hardware(self):
        from perfml.closed_form._params import check_bool
        from perfml.errors import EstimatorParameterError

        check_bool("HongKimModel", "calibrate", self.calibrate)  # "yes" calibrated, 1 did too
        hw = HongKimHardware.gtx280() if self.hardware is None else self.hardware
        if isinstance(hw, HongKimHardware):
            return hw
        if isinstance(hw, Mapping) and hw and all(
                isinstance(v, HongKimHardware) for v in hw.values()):
            return dict(hw)
        raise EstimatorParameterError(
            "HongKimModel: hardware must be None, a HongKimHardware or a non-empty dict of "
            f"board name -> HongKimHardware, found {type(hw).__name__}."
        )

    def _columns(self, X, hw) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
        """Kernel columns as float arrays, plus board names when ``hw`` is a dict."""
        if isinstance(X, pd.DataFrame):
            missing = [c for c in FEATURE_COLUMNS if c not in X.columns]
            if isinstance(hw, dict) and self.board_column not in X.columns:
                missing.append(self.board_column)
            if missing:
                raise DatasetSchemaError(
                    f"HongKimModel: X lacks columns {missing}; expected {list(FEATURE_COLUMNS)}"
                    f" (optional {list(OPTIONAL_FEATURE_COLUMNS)}), counts per warp."
                )
            cols = {}
            for c in FEATURE_COLUMNS + OPTIONAL_FEATURE_COLUMNS:
                if c not in X.columns:
                    cols[c] = np.zeros(len(X))
                    continue
                try:
                    cols[c] = X[c].to_numpy(dtype=float)
                except (TypeError, ValueError) as exc:
                    raise DatasetSchemaError(
                        f"HongKimModel: column {c!r} must be numeric ({exc})."
                    ) from None
            boards = X[self.board_column].astype(str).to_numpy() if isinstance(hw, dict) else None
        else:
            if isinstance(hw, dict):
                raise DatasetSchemaError(
                    "HongKimModel: with one hardware per board, X must be a DataFrame with "
                    f"a {self.board_column!r} column."
                )
            arr = np.asarray(X, dtype=float)
            width = len(FEATURE_COLUMNS)
            if arr.ndim != 2 or arr.shape[1] not in (width, width + 1):
                raise DatasetSchemaError(
                    f"HongKimModel: a bare array X must be 2-D with {width} or {width + 1} "
                    f"columns {list(FEATURE_COLUMNS + OPTIONAL_FEATURE_COLUMNS)}, found "
                    f"shape {arr.shape}; pass a DataFrame to name the columns."
                )
            cols = {c: arr[:, i] for i, c in enumerate(FEATURE_COLUMNS)}
            cols["synch_insts"] = arr[:, width] if arr.shape[1] > width else np.zeros(len(arr))
            boards = None
        if len(cols["blocks"]) == 0:
            raise DatasetSchemaError("HongKimModel: X has no rows.")
        check_kernel_columns(cols, error=DatasetSchemaError, where="HongKimModel")
        return cols, boards

    def _evaluate(self, X, hw) -> dict[str, np.ndarray]:
        cols, boards = self._columns(X, hw)
        if boards is None:
            return evaluate_columns(cols, hw)
        unknown = sorted(set(boards) - set(hw))
        if unknown:
            raise DatasetSchemaError(
                f"HongKimModel: boards {unknown} in column {self.board_column!r} have no "
                f"hardware; known: {sorted(hw)}. Add them to the hardware dict."
            )
        out: dict[str, np.ndarray] = {}
        for name in np.unique(boards):
            rows = np.flatnonzero(boards == name)
            part = evaluate_columns({k: v[rows] for k, v in cols.items()}, hw[name])
            for key, values in part.items():
                if key not in out:
                    out[key] = np.empty(len(boards), dtype=values.dtype if key != "case"
                                        else object)
                out[key][rows] = values
        return out

    # -- estimator API

    def fit(self, X, y=None):
        """Validate ``X`` (and ``y``) and, if ``calibrate``, fit ``scale_``.

        Parameters
        ----------
        X : DataFrame of shape (n_kernels, n_columns)
            Kernel inputs, see the class Notes.
        y : array-like of shape (n_kernels,), default None
            Measured times in ms; required when ``calibrate=True``.

        Returns
        -------
        self
        """
        hw = self._resolve_hardware()
        if isinstance(X, pd.DataFrame):
            self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.n_features_in_ = int(np.shape(X)[1]) if np.ndim(X) == 2 else 0
        out = self._evaluate(X, hw)
        scale = 1.0
        if y is not None:
            y = np.asarray(y, dtype=float).ravel()
            if len(y) != len(out["time_ms"]):
                raise DatasetSchemaError(
                    f"HongKimModel: y has {len(y)} values for {len(out['time_ms'])} rows of X."
                )
            if not np.all(np.isfinite(y)) or np.any(y <= 0):
                raise DatasetSchemaError(
                    "HongKimModel: y must be measured times in ms, finite and > 0."
                )
        if self.calibrate:
            if y is None:
                raise DatasetSchemaError(
                    "HongKimModel: calibrate=True needs measured times y (ms) in fit."
                )
            scale = float(np.exp(np.mean(np.log(y) - np.log(out["time_ms"]))))
        self.scale_ = scale
        self.hardware_ = hw
        return self

    def predict(self, X):
        """Predicted kernel time in milliseconds.

        Parameters
        ----------
        X : DataFrame of shape (n_kernels, n_columns)

        Returns
        -------
        ndarray of shape (n_kernels,)
        """
        check_is_fitted(self, "scale_")
        return self._evaluate(X, self.hardware_)["time_ms"] * self.scale_

    def decompose(self, X) -> pd.DataFrame:
        """Every intermediate of the model (MWP, CWP, case, cycles...) per row of ``X``.

        The columns are the fields of :class:`HongKimResult`; ``time_ms`` is before
        ``scale_``. The index is that of ``X`` when it is a DataFrame.
        """
        check_is_fitted(self, "scale_")
        out = self._evaluate(X, self.hardware_)
        index = X.index if isinstance(X, pd.DataFrame) else None
        return pd.DataFrame(out, index=index)

