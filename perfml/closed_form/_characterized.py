"""Board characterizations handed to a model: how one is looked up and checked.

A closed-form model that can use achieved figures (issue 11 §2) takes
``characterizations``: a mapping board -> :class:`~perfml.characterize.Characterization`
(a board missing from it gets its datasheet values: the spec-only tier), or a callable
``board -> Characterization`` such as :func:`perfml.characterize.board_characterization`
(registry spec, published tables and the committed calibrated file). It is required when
the model is asked to use characterizations; nothing is read from the environment or
from files behind the caller's back. A characterization of another board than the
row's is refused with :class:`~perfml.errors.CharacterizationBoardError`.

:mod:`perfml.closed_form` sits below :mod:`perfml.characterize` (whose sweeps use the
roofline), so this module never imports it: a characterization is used through its
``board`` and ``best(quantity, unit, tiers=..., bounds=...)``.
"""

from __future__ import annotations

from collections.abc import Mapping

from perfml.boards import same_board
from perfml.errors import CharacterizationBoardError, EstimatorParameterError

__all__ = ["ACHIEVED_TIERS", "achieved_or_spec", "characterization_for", "check_characterizations", "stream_time_s"]

#: tiers that are observed on the board, in order of preference (the datasheet is the fallback)
ACHIEVED_TIERS = ("measured", "calibrated", "published")


def _is_characterization(value) -> bool:
    return hasattr(value, "board") and callable(getattr(value, "best", None))


def check_characterizations(who: str, value, *, required: bool = False) -> None:
    """``characterizations`` must be a mapping of board -> Characterization or a callable (or None when not ``required``)."""
    if value is None and not required:
        return
    if value is not None and callable(value) and not isinstance(value, Mapping):
        return
    if isinstance(value, Mapping) and all(isinstance(k, str) and _is_characterization(v) for k, v in value.items()):
        return
    hint = ("; pass characterizations=perfml.characterize.board_characterization (the committed ones) or a mapping "
            "board -> Characterization") if value is None else ""
    raise EstimatorParameterError(
        f"{who}: characterizations must be a mapping of board name -> Characterization or a callable "
        f"board -> Characterization, got {type(value).__name__}{hint}"
    )


def characterization_for(board: str, characterizations):
    """The characterization of ``board`` from ``characterizations`` (None: none for this board).

    Raises
    ------
    EstimatorParameterError
        ``characterizations`` is neither a mapping nor a callable.
    CharacterizationBoardError
        The characterization found for ``board`` is of another board.
    """
    check_characterizations("characterization_for", characterizations, required=True)
    if isinstance(characterizations, Mapping):
        found = next((ch for key, ch in characterizations.items() if same_board(key, board)), None)
    else:
        found = characterizations(board)
    if found is not None and not same_board(str(found.board), board):
        raise CharacterizationBoardError(
            f"the characterization passed for {board!r} characterizes board {found.board!r}; characterize "
            f"{board} (`perfml characterize RESULTS --board {board}`) or pass the file of that board"
        )
    return found


def achieved_or_spec(characterization, quantity: str, unit: str, spec_value: float) -> tuple[float, str]:
    """The achieved ``quantity`` (an ``estimate`` of a measured, calibrated or published tier), else ``spec_value``.

    A ``lower`` bound (e.g. the FP32 rate a hand-written matMul reached) is not taken as
    the board's peak: it would inflate compute times. ``characterization`` None (a board
    the caller has no characterization of) gives the spec. Returns (value in ``unit``, tier).
    """
    if characterization is None:
        return float(spec_value), "spec"
    chosen = characterization.best(quantity, unit, tiers=ACHIEVED_TIERS, bounds=("estimate",))
    if chosen is None:
        return float(spec_value), "spec"
    return float(chosen.to_unit(unit)), chosen.tier


def stream_time_s(boards, nbytes, lookup, registry=None):
    """Per row, the time (s) its board's streaming curve takes for ``nbytes``; NaN where the board has none.

    ``lookup``: board name -> characterization or None. The curve is the characterization's
    ``stream_curve`` (:mod:`perfml.characterize.stream_curve`; used through its ``time_s``,
    given the board's L2 and its DRAM bandwidth, achieved where the characterization has it
    (:func:`achieved_or_spec`), for the sizes above a curve that does not reach DRAM).
    """
    import numpy as np
    import pandas as pd

    from perfml.boards import get_board, peak_bandwidth
    from perfml.errors import MissingBoardParameterError, UnknownBoardError

    nbytes = np.asarray(nbytes, dtype=float)
    out = np.full(len(nbytes), np.nan)
    codes, names = pd.factorize(pd.Series(boards).astype(str))
    for j, name in enumerate(names):
        characterization = lookup(name)
        curve = getattr(characterization, "stream_curve", None)
        if curve is None:
            continue
        try:
            board = get_board(name, registry=registry)
            l2 = float(board.l2_bytes or 0.0)
            bandwidth = achieved_or_spec(characterization, "dram_bandwidth", "B/s", peak_bandwidth(board))[0]
        except (UnknownBoardError, MissingBoardParameterError):  # no figures: the curve taken as reaching DRAM
            l2 = bandwidth = None
        rows = codes == j
        out[rows] = curve.time_s(nbytes[rows], l2_bytes=l2, bandwidth=bandwidth)
    return out
