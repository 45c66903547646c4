"""Board characterizations handed to a model: how one is looked up and checked.

A model that can use achieved figures (issue 11 §2) takes ``characterizations``: None
(each board's :func:`~perfml.characterize.board_characterization`: registry spec,
published tables and the committed calibrated file), a mapping board ->
:class:`~perfml.characterize.Characterization` (a board missing from it gets the same
default), or a callable ``board -> Characterization``. Nothing is read from the
environment. A characterization of another board than the row's is refused with
:class:`~perfml.errors.CharacterizationBoardError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from perfml.errors import EstimatorParameterError

__all__ = ["ACHIEVED_TIERS", "achieved_or_spec", "characterization_for", "check_characterizations"]

#: tiers that are observed on the board, in order of preference (the datasheet is the fallback)
ACHIEVED_TIERS = ("measured", "calibrated", "published")


def check_characterizations(who: str, value) -> None:
    """``characterizations`` must be None, a mapping of board -> Characterization, or a callable."""
    from perfml.characterize import Characterization

    if value is None or (callable(value) and not isinstance(value, Mapping)):
        return
    if isinstance(value, Mapping) and all(isinstance(k, str) and isinstance(v, Characterization) for k, v in value.items()):
        return
    raise EstimatorParameterError(
        f"{who}: characterizations must be None, a mapping of board name -> Characterization, or a "
        f"callable board -> Characterization, got {type(value).__name__}"
    )


def characterization_for(board: str, characterizations=None):
    """The characterization of ``board`` from ``characterizations`` (see the module docstring).

    Raises
    ------
    CharacterizationBoardError
        The characterization found for ``board`` is of another board.
    """
    from perfml.characterize import board_characterization, check_board, same_board

    if characterizations is None:
        found = None
    elif isinstance(characterizations, Mapping):
        found = next((ch for key, ch in characterizations.items() if same_board(key, board)), None)
    else:
        found = characterizations(board)
    if found is None:
        return board_characterization(board)
    check_board(found, board, f"the characterization passed for {board!r}")
    return found


def achieved_or_spec(characterization, quantity: str, unit: str, spec_value: float) -> tuple[float, str]:
    """The achieved ``quantity`` (an ``estimate`` of a measured, calibrated or published tier), else ``spec_value``.

    A ``lower`` bound (e.g. the FP32 rate a hand-written matMul reached) is not taken as
    the board's peak: it would inflate compute times. Returns (value in ``unit``, tier).
    """
    chosen = characterization.best(quantity, unit, tiers=ACHIEVED_TIERS, bounds=("estimate",))
    if chosen is None:
        return float(spec_value), "spec"
    return float(chosen.to_unit(unit)), chosen.tier
