"""Everything perfml knows about one board, in one characterization (issue 11 §1).

:func:`board_characterization` assembles the tiers a model can use for a board:

* ``spec`` from the registry (:func:`~perfml.characterize.spec.spec_values`);
* ``published`` from the papers (:func:`~perfml.characterize.reference.reference_characterization`),
  with the reference's per-class summary;
* ``calibrated`` from the characterization committed under
  ``perfml/data/characterizations/<board>.json`` (:func:`packaged_characterization`,
  built by ``perfml characterize --from-runtimes``; see its provenance);
* any ``extra`` characterization the caller passes (a ``measured`` sweep, a user's own
  calibration), whose functions F_* then replace the identity.

Every part must be of the requested board (:class:`~perfml.errors.CharacterizationBoardError`
otherwise), and the union is checked against the physical limits again.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from perfml.characterize.characterization import Characterization
from perfml.characterize.load import check_board, load_characterization
from perfml.characterize.values import CharacterizedValue
from perfml.errors import UnknownBoardError

__all__ = ["board_characterization", "packaged_boards", "packaged_characterization"]


def _folder() -> Path:
    return Path(str(resources.files("perfml").joinpath("data", "characterizations")))


def packaged_boards() -> tuple[str, ...]:
    """Boards with a committed (calibrated) characterization."""
    return tuple(sorted(p.stem for p in _folder().glob("*.json")))


def packaged_characterization(board: str) -> Characterization | None:
    """The committed characterization of ``board`` (``None`` when there is none).

    Raises
    ------
    CharacterizationBoardError
        The file found for ``board`` characterizes another board.
    """
    from perfml.boards import same_board

    for name in packaged_boards():
        if same_board(name, board):
            return load_characterization(_folder() / f"{name}.json", board=board)
    return None


def _registry_board(board: str) -> Any:
    from perfml.boards import get_board

    try:
        return get_board(board)
    except UnknownBoardError:
        return None


def board_characterization(board: str, *, extra: tuple[Characterization, ...] = ()) -> Characterization:
    """The spec, published and calibrated tiers of ``board`` (plus ``extra``) in one object.

    The streaming curve (:mod:`perfml.characterize.stream_curve`) is that of a measured
    tier where a part has one, else the latest part's (an ``extra`` before the committed file).

    Parameters
    ----------
    board : str
        Registry name or alias; a board only in the DL-operator corpus (not registered)
        gets the tiers that exist for it.
    extra : tuple of Characterization
        More characterizations of the same board (e.g. ``perfml characterize RESULTS``
        of a sweep); the first one with a built F_* function supplies the functions.

    Raises
    ------
    UnknownBoardError
        The board is not in the registry and nothing characterizes it.
    CharacterizationBoardError
        An ``extra`` (or a committed file) characterizes another board.
    PhysicalLimitError
        A value of the union is above 1.5x the specification.
    """
    from perfml.characterize.reference import REFERENCE_FILES, reference_characterization
    from perfml.characterize.spec import spec_values
    from perfml.boards import get_board, same_board

    registry_board = _registry_board(board)
    name = registry_board.name if registry_board is not None else board
    values: list[CharacterizedValue] = list(spec_values(registry_board)) if registry_board is not None else []
    parts: list[Characterization] = []
    for ref in REFERENCE_FILES:
        if same_board(ref, board):
            parts.append(reference_characterization(ref))
    packaged = packaged_characterization(board)
    if packaged is not None:
        parts.append(packaged)
    for part in extra:
        check_board(part, board, "the extra characterization")
        parts.append(part)
    if registry_board is None and not parts:
        get_board(board)  # nothing at all is known of it: UnknownBoardError, with the closest names
    warnings: list[str] = []
    summary = ()
    functions = {}
    sources = []
    for part in parts:
        values += [v for v in part.values if v.tier != "spec"]  # the registry's spec, once
        warnings += list(part.warnings)
        summary = summary or part.summary
        if not functions and any(part.has_function(f) for f in part.functions):
            functions = {n: f for n, f in part.functions.items() if part.has_function(n)}
        sources.append(part.source)
    # the streaming curve: a measured one before a calibrated one, a later part (extra) before an earlier one
    curves = [part.stream_curve for part in reversed(parts) if part.stream_curve is not None]
    curve = next((c for c in curves if c.tier == "measured"), curves[0] if curves else None)
    if registry_board is None and not any("not in the registry" in w for w in warnings):
        warnings.append(f"board {board!r} is not in the registry: no spec tier")
    return Characterization(
        board=name,
        functions=functions,
        summary=tuple(summary),
        source="; ".join(["registry"] * (registry_board is not None) + sources),
        values=tuple(values),
        warnings=tuple(dict.fromkeys(warnings)),
        provenance={"assembled_from": ["registry"] * (registry_board is not None) + sources},
        stream_curve=curve,
    )
