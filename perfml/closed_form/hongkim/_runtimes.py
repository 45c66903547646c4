"""Uncalibrated Hong & Kim times for rows of the measured runtimes."""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfml.closed_form._characterized import characterization_for
from perfml.closed_form.hongkim._board_hardware import hongkim_hardware_for
from perfml.closed_form.hongkim._characterized_hardware import characterized_hardware
from perfml.closed_form.hongkim._estimator import HongKimModel
from perfml.closed_form.hongkim._kernel import FEATURE_COLUMNS
from perfml.closed_form.hongkim._runtime_inputs import hongkim_inputs
from perfml.errors import PerfmlError

__all__ = ["predict_hongkim_for_runtimes"]


def predict_hongkim_for_runtimes(runtimes: pd.DataFrame, data_home=None, *, instruction_source: str = "description", issue_cycles: float | None = None,
                                 hardware_source: str = "paper", characterizations=None) -> np.ndarray:
    """Uncalibrated Hong & Kim kernel time (ms) for each row of ``runtimes``.

    Builds the inputs with :func:`hongkim_inputs` and the hardware of every board with
    :func:`hongkim_hardware_for`, then runs :class:`~perfml.closed_form.hongkim.HongKimModel`
    (``calibrate=False``: nothing is fitted to the measured times). With
    ``hardware_source="characterized"`` each board's hardware is passed through
    :func:`~perfml.closed_form.hongkim._characterized_hardware.characterized_hardware`
    with the characterization ``characterizations`` gives for it (see
    :mod:`perfml.closed_form._characterized`).

    Returns
    -------
    ndarray of shape (n_rows,)
        NaN where the model cannot describe a row: no kernel description, a board
        missing from the registry or leaving a needed field empty, a launch the board
        cannot run, a kernel with no global memory instruction, or (profiles) no
        profile of the kernel on another board.
    """
    inputs = hongkim_inputs(runtimes, data_home=data_home, instruction_source=instruction_source)
    inputs["board"] = runtimes["board"].astype(str).to_numpy()
    hardware = {}
    for board in pd.unique(inputs["board"]):
        try:
            hardware[board] = hongkim_hardware_for(board, issue_cycles=issue_cycles)
        except (PerfmlError, ValueError):
            continue
        if hardware_source == "characterized":
            hardware[board] = characterized_hardware(hardware[board], characterization_for(board, characterizations))[0]
    features = inputs[list(FEATURE_COLUMNS)].to_numpy(dtype=float)
    ok = (np.isfinite(features).all(axis=1)
          & ((inputs["coal_mem_insts"] + inputs["uncoal_mem_insts"]) > 0).to_numpy()
          & inputs["board"].isin(hardware).to_numpy())
    pred = np.full(len(inputs), np.nan)
    if ok.any():
        rows = inputs[ok]
        used = {b: hardware[b] for b in pd.unique(rows["board"])}
        model = HongKimModel(hardware=used).fit(rows)
        pred[ok] = model.predict(rows)
    return pred

