"""The sub-models of the calibrated tier (issue 11 §3): which corpus trains them and which runs calibrate a board.

Shared by training (:mod:`perfml.learned.training`), the bundle's routing
(:mod:`perfml.learned.bundle`) and the target's calibration at prediction time
(:mod:`perfml.learned.target_characterization`).
"""

from __future__ import annotations

__all__ = ["CALIBRATED_TIER", "data_corpus"]

#: sub-models of the calibrated tier: name -> (data corpus whose rows train it, kernel column,
#: the kernels whose runs calibrate a board). The deep-learning operators' calibration is the
#: board's element-wise ``add`` calls, as in ``experiments/dlops_unseen_boards_calibrated.toml``
#: (leave-one-board-out MAPE 17.85 % against 25.31 % spec-only,
#: ``experiments/results/dlops_unseen_boards_calibrated_row_char.txt``). The application
#: corpora have none: their calibrated tier gains little (nine apps 10.76 % -> 10.52 %,
#: ``experiments/results/unseen_boards_calibrated_stream_curve.txt``) and a characterized
#: application model's transfer would need every training board's characterization at
#: prediction time.
CALIBRATED_TIER = {"dlops-calibrated": ("dlops", "op", ("add",))}


def data_corpus(name: str) -> str:
    """The data corpus of a sub-model name (``dlops-calibrated`` -> ``dlops``)."""
    return CALIBRATED_TIER[name][0] if name in CALIBRATED_TIER else name
