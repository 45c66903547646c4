"""Hand a target board's characterization to a fitted predictor (issue 11 §3, calibrated tier).

``perfml predict --characterization FILE`` (a file of ``perfml characterize``) or
``--calibration FILE`` (runtime rows of any kernel on the target board with their times,
turned into the calibrated tier by :func:`perfml.characterize.calibrate_from_rows`):
nothing else of the target board enters the prediction.
"""

from __future__ import annotations

from collections.abc import Iterable

from perfml.errors import InvalidValueError

__all__ = ["calibrate_target", "use_target_characterization"]


def calibrate_target(path, boards: Iterable[str]):
    """The calibrated characterization of the one board of ``boards``, from the rows of ``path``.

    Raises
    ------
    InvalidValueError
        The queries name more than one board (a calibration file is of one target board).
    CalibrationDataError
        The file has no usable rows of that board (:mod:`perfml.characterize.calibrate`).
    """
    from perfml.characterize import calibrate_from_runtimes

    boards = sorted(set(boards))
    if len(boards) != 1:
        raise InvalidValueError(
            f"--calibration calibrates one target board, but the queries name {len(boards)} boards "
            f"({', '.join(boards[:5])}); split the queries per board"
        )
    return calibrate_from_runtimes(path, boards[0], command=f"perfml predict --calibration {path}")


def use_target_characterization(model, characterization, boards: Iterable[str], where: object) -> list[str]:
    """Make ``model`` (a fitted :class:`~perfml.learned.regressors.RuntimeRegressor` or
    :class:`~perfml.learned.operators.OperatorRegressor`) use ``characterization``.

    Returns the warnings to show: the characterization's own, and one when the model was
    trained without the characterization features (then the file changes no prediction).

    Raises
    ------
    CharacterizationBoardError
        A query's board is not the characterization's board.
    """
    from perfml.characterize import check_board

    for board in sorted(set(boards)):
        check_board(characterization, board, where)
    given = {characterization.board: characterization}
    # an operator model fitted with transfer="auto" may hold a second model for some op classes
    for part in (model, getattr(model, "no_transfer_model_", None)):
        if part is None:
            continue
        part.set_params(characterizations=given)
        if hasattr(part, "features_"):  # RuntimeRegressor: its fitted feature builder holds them too
            part.features_.characterizations = given
    warnings = [w for v in characterization.values for w in v.warnings] + list(characterization.warnings)
    if not (getattr(model, "characterization", False) or getattr(model, "closed_form_peaks", "spec") == "characterized"):
        warnings.append(
            f"the model was trained without the characterization features, so {where} changes no prediction; "
            "train one with characterization features to use it"
        )
    return warnings
