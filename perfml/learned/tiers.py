"""The sub-models of the calibrated tier (issue 11 §3): which corpus trains them and which runs calibrate a board.

Shared by training (:mod:`perfml.learned.training`), the bundle's routing
(:mod:`perfml.learned.bundle`) and the target's calibration at prediction time
(:mod:`perfml.learned.target_characterization`).
"""

from __future__ import annotations

__all__ = ["CALIBRATED_TIER", "data_corpus"]

#: sub-models of the calibrated tier: name -> (data corpus whose rows train it, kernel column,
#: the kernels whose runs calibrate a board).
#:
#: * ``dlops-calibrated``: the deep-learning operators, calibrated by the board's element-wise
#:   ``add`` calls, as in ``experiments/dlops_unseen_boards_calibrated.toml`` (leave-one-board-out
#:   MAPE 17.85 % against 25.31 % spec-only,
#:   ``experiments/results/dlops_unseen_boards_calibrated_row_char.txt``);
#: * ``described-calibrated``: the nine described apps, calibrated by the board's
#:   ``vectorAdd`` runs, as in ``experiments/unseen_boards_calibrated.toml`` (10.52 % against
#:   10.94 % for the spec-only transfer on the same rows,
#:   ``experiments/results/unseen_boards_calibrated_stream_curve.txt``). Only boards with
#:   such runs train it (the two BSPGPU boards have none).
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
