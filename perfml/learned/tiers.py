"""The sub-models of the calibrated tier (issue 11 §3): which corpus trains them and which runs calibrate a board.

Shared by training (:mod:`perfml.learned.training`), the bundle's routing
(:mod:`perfml.learned.bundle`) and the target's calibration at prediction time
(:mod:`perfml.learned.target_characterization`).
"""

from __future__ import annotations

__all__ = ["CALIBRATED_TIER", "calibration_entry", "calibration_runs", "data_corpus", "is_calibration_run"]

#: sub-models of the calibrated tier: name -> (data corpus whose rows train it, kernel column,
#: the kernels whose runs calibrate a board).
#:
#: * ``dlops-calibrated``: the deep-learning operators, calibrated by the board's element-wise
#:   ``add`` calls, as in ``experiments/dlops_unseen_boards_calibrated.toml`` (leave-one-board-out
#:   MAPE 17.85 % against 25.31 % spec-only,
#:   ``experiments/results/dlops_unseen_boards_calibrated_row_char.txt``);
#: * ``described-calibrated``: the nine described apps, calibrated by the board's
#:   ``vectorAdd`` runs, with the blended transfer, as ``hybrid_xgboost_characterized_issue_blend``
#:   of ``experiments/unseen_boards_calibrated.toml`` (10.18 % against 10.94 % for the
#:   spec-only transfer on the same rows, ``experiments/results/unseen_boards_calibrated_blend.txt``;
#:   ``perfml train``'s own spec-only ``described`` scored on the same rows under nested
#:   leave-one-board-out: 11.15 % against 10.14 %,
#:   ``experiments/results/gtx750_training_boards.txt``). Only boards with such runs train
#:   it (the two BSPGPU boards have none).
#:
#: The undescribed kernels (Rodinia) have none: their rows hold no kernel of known work
#: to calibrate a board with.
CALIBRATED_TIER = {
    "described-calibrated": ("described", "app_id", ("vectorAdd",)),
    "dlops-calibrated": ("dlops", "op", ("add",)),
}


def data_corpus(name: str) -> str:
    """The data corpus of a sub-model name (``dlops-calibrated`` -> ``dlops``)."""
    return CALIBRATED_TIER[name][0] if name in CALIBRATED_TIER else name


def calibration_entry(name: str) -> dict:
    """The manifest's ``calibration`` entry of a calibrated-tier sub-model: the runs a target's file must hold."""
    _, column, kernels = CALIBRATED_TIER[name]
    return {"column": column, "kernels": list(kernels)}


def is_calibration_run(rows, column: str, kernels) -> "np.ndarray":
    """Per row of ``rows``: is it a run of one of ``kernels`` (in ``column``)? All False without that column."""
    import numpy as np

    if column not in rows.columns:
        return np.zeros(len(rows), dtype=bool)
    return rows[column].astype(str).isin(list(kernels)).to_numpy()


def calibration_runs(rows, column: str, kernels):
    """The rows of ``rows`` that are runs of ``kernels``, ready for :func:`perfml.characterize.calibrate_from_rows`.

    For operator runs (``column == "op"``) an ``app_id`` column is dropped:
    ``calibrate_from_rows`` reads the kernel from ``app_id`` whenever that column exists.
    """
    runs = rows[is_calibration_run(rows, column, kernels)]
    if column == "op":
        runs = runs.drop(columns=[c for c in ("app_id",) if c in runs.columns])
    return runs
