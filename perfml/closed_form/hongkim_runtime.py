"""Hong & Kim's MWP-CWP model (seed 002) as a scikit-learn regressor on runtime rows.

References
----------
S. Hong, H. Kim, "An analytical model for a GPU architecture with memory-level and
thread-level parallelism awareness", ISCA 2009 (``shared/seeds/002_*.txt``),
equations 1-25; the inputs of a runtime row are built by
:func:`perfml.closed_form.hongkim_inputs.hongkim_inputs`.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from perfml.closed_form._inputs import check_frame, check_target

_REQUIRED = ("board", "app_id", "input_size")
INSTRUCTION_SOURCES = ("description", "profiles")
HARDWARE = ("paper", "characterized")


class HongKimRuntimeModel(RegressorMixin, BaseEstimator):
    """Hong & Kim (seed 002) kernel time of runtime rows: closed form, nothing learned from y.

    Parameters
    ----------
    instruction_source : {"description", "profiles"}, default="description"
        Where the instruction counts come from: the kernel description, or the
        profiles of the same kernel on other boards.
    issue_cycles : float, optional
        Cycles to issue one instruction (default: the board's).
    data_home : DataHome or path-like, optional
        Where profiles are read from; required by ``fit`` when
        ``instruction_source="profiles"`` (None then raises :class:`perfml.errors.DataHomeError`).
    hardware : {"paper", "characterized"}, default="paper"
        ``"paper"``: the registry's clock, SMs and bandwidth with the paper's GTX 280
        Mem_LD and departure delays on every board. ``"characterized"``: Mem_LD, the
        bandwidth and the departure delays derived from the board's characterization
        (:mod:`perfml.closed_form.hongkim._characterized_hardware`, which documents the
        formulas), each kept where the characterization lacks the quantity.
    characterizations : None, mapping or callable, optional
        Board -> :class:`~perfml.characterize.Characterization` or a callable
        such as :func:`perfml.characterize.board_characterization` (see
        :mod:`perfml.closed_form._characterized`); required with ``hardware="characterized"``.

    Attributes
    ----------
    n_features_in_ : int
        Number of columns of the X given to ``fit``.
    feature_names_in_ : ndarray of str
        Those columns.

    Notes
    -----
    ``predict`` returns NaN for rows the model cannot describe (see
    :func:`~perfml.closed_form.hongkim_inputs.predict_hongkim_for_runtimes`).
    """

    def __init__(self, *, instruction_source: str = "description", issue_cycles=None, data_home=None,
                 hardware: str = "paper", characterizations=None):
        self.hardware = hardware
        self.characterizations = characterizations
        self.instruction_source = instruction_source
        self.issue_cycles = issue_cycles
        self.data_home = data_home

    def fit(self, X, y=None):
        """Validate the parameters, X and (when given) y; nothing is fitted."""
        from perfml.closed_form._params import check_choice, check_optional_positive
        from perfml.datasets import check_data_home

        if self.instruction_source == "profiles":
            check_data_home(self.data_home, "HongKimRuntimeModel.fit (instruction_source='profiles')")
        check_choice("HongKimRuntimeModel", "instruction_source", self.instruction_source, INSTRUCTION_SOURCES)
        check_optional_positive("HongKimRuntimeModel", "issue_cycles", self.issue_cycles)
        check_choice("HongKimRuntimeModel", "hardware", self.hardware, HARDWARE)
        from perfml.closed_form._characterized import check_characterizations

        check_characterizations("HongKimRuntimeModel", self.characterizations, required=self.hardware == "characterized")
        X = check_frame(X, _REQUIRED, "HongKimRuntimeModel")
        if y is not None:
            check_target(y, len(X), "HongKimRuntimeModel")
        self.n_features_in_ = X.shape[1]
        self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        return self

    def predict(self, X) -> np.ndarray:
        """Kernel time in ms per row (NaN where the model cannot describe the row)."""
        from perfml.closed_form.hongkim_inputs import predict_hongkim_for_runtimes

        check_is_fitted(self, "n_features_in_")
        X = check_frame(X, _REQUIRED, "HongKimRuntimeModel")
        return predict_hongkim_for_runtimes(X, data_home=self.data_home, instruction_source=self.instruction_source,
                                            issue_cycles=self.issue_cycles, hardware_source=self.hardware,
                                            characterizations=self.characterizations)
