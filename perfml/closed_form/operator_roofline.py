"""The roofline of a deep-learning operator call, as a scikit-learn regressor.

``time = max(FLOPs / peak FP32, bytes / peak bandwidth)`` [1]_ with the work of
:func:`perfml.operators.operator_work` (FP32, compulsory traffic; the conv FLOP term is
left out, as in :func:`perfml.operators.roofline_lower_bound_ms`: Winograd and FFT need
fewer multiplications than the direct count).

* ``peaks="spec"``: the registry's datasheet peaks: the physical lower bound, the
  "roofline" baseline of NeuSight's Table of per-operator errors [2]_.
* ``peaks="characterized"``: each board's achieved DRAM bandwidth and FP32 rate (an
  ``estimate`` of its measured, calibrated or published tier, else the datasheet), so the
  roofline of what the board was observed to sustain (issue 11 §2); where the board's
  characterization has a streaming curve (:mod:`perfml.characterize.stream_curve`), the
  memory time is the curve's time for the call's bytes. Not a lower bound.

Learns nothing: ``fit`` only validates.

References
----------
.. [1] S. Williams, A. Waterman, D. Patterson, "Roofline: An Insightful Visual Performance
   Model for Multicore Architectures", CACM 52(4), 2009, Section 2.
.. [2] S. Lee, A. Phanishayee, D. Mahajan, "Forecasting GPU Performance for Deep Learning
   Training and Inference" (NeuSight), ASPLOS 2025, doi:10.1145/3669940.3707265.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from perfml.errors import DatasetSchemaError

__all__ = ["OperatorRooflineModel"]

PEAKS = ("spec", "characterized")


class OperatorRooflineModel(RegressorMixin, BaseEstimator):
    """Roofline time (ms) of operator rows (``board``, ``op`` and the dims of the operator).

    Parameters
    ----------
    peaks : {"spec", "characterized"}, default="spec"
    characterizations : None, mapping or callable, optional
        Board -> :class:`~perfml.characterize.Characterization`; required with
        ``peaks="characterized"`` (see :mod:`perfml.closed_form._characterized`).
    registry : perfml.boards.Registry, optional

    Raises
    ------
    EstimatorParameterError
        (in ``fit``) an unknown ``peaks``, or ``characterized`` without characterizations.
    OperatorWorkError, UnknownBoardError
        An unknown operator, missing dims, or an unknown board.
    """

    def __init__(self, *, peaks: str = "spec", characterizations=None, registry=None):
        self.peaks = peaks
        self.characterizations = characterizations
        self.registry = registry

    def fit(self, X, y=None):
        from perfml.closed_form._characterized import check_characterizations
        from perfml.closed_form._params import check_choice

        check_choice("OperatorRooflineModel", "peaks", self.peaks, PEAKS)
        check_characterizations("OperatorRooflineModel", self.characterizations,
                                required=self.peaks == "characterized")
        self._check(X)
        self.fitted_ = True
        return self

    @staticmethod
    def _check(X) -> pd.DataFrame:
        if not isinstance(X, pd.DataFrame) or not {"board", "op"} <= set(X.columns):
            raise DatasetSchemaError(
                "OperatorRooflineModel takes a DataFrame of operator rows with columns board, op and the "
                "operator's dims (see dlops_runtimes.csv)"
            )
        return X

    def peaks_of(self, board: str) -> tuple[float, float, str, str]:
        """(FP32 FLOP/s, bandwidth B/s, compute tier, bandwidth tier) of a board."""
        from perfml.boards import get_board, peak_bandwidth, peak_flops

        b = get_board(board, registry=self.registry)
        fp32, bw = float(peak_flops(b)), float(peak_bandwidth(b))
        if self.peaks != "characterized":
            return fp32, bw, "spec", "spec"
        from perfml.closed_form._characterized import achieved_or_spec, characterization_for

        ch = characterization_for(board, self.characterizations)
        bw, bw_tier = achieved_or_spec(ch, "dram_bandwidth", "B/s", bw)
        fp32, fp_tier = achieved_or_spec(ch, "fp32_throughput", "FLOP/s", fp32)
        return fp32, bw, fp_tier, bw_tier

    def predict(self, X) -> np.ndarray:
        from perfml.operators import operator_work

        check_is_fitted(self, "fitted_")
        X = self._check(X)
        work = operator_work(X)
        boards = X["board"].astype(str).to_numpy()
        peaks = {b: self.peaks_of(b) for b in pd.unique(boards)}
        fp32 = np.array([peaks[b][0] for b in boards])
        bw = np.array([peaks[b][1] for b in boards])
        compute = np.where(work["op_class"].to_numpy() == "Conv", 0.0, work["flops"].to_numpy() / fp32)
        memory = work["bytes"].to_numpy() / bw
        if self.peaks == "characterized":  # the board's streaming curve, where it has one
            from perfml.closed_form._characterized import characterization_for, stream_time_s

            stream = stream_time_s(X["board"], work["bytes"].to_numpy(),
                                   lambda board: characterization_for(board, self.characterizations))
            memory = np.where(np.isfinite(stream), stream, memory)
        return 1e3 * np.maximum(compute, memory)
