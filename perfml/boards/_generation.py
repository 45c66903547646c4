"""Which architecture generation a board belongs to, read from the registry.

A board's generation is its compute capability (``major.minor``); a board whose
registry entry names only its architecture gets the oldest compute capability the
registry's ``[cc."X.Y"]`` tables give that architecture. Newer generation = larger
tuple. No architecture list is written here: the order is the registry's.
"""

from __future__ import annotations

from perfml.boards._board import BOARD_FILES
from perfml.boards._registry import Registry, default_registry, get_board
from perfml.errors import MissingBoardParameterError

__all__ = ["board_architecture", "board_generation"]


def _cc_tuple(cc: str) -> tuple[int, int]:
    major, minor = (int(p) for p in str(cc).split(".")[:2])
    return major, minor


def board_architecture(name: str, *, registry: Registry | None = None) -> str:
    """The architecture name of a board (its own field, else its compute capability's table).

    Raises
    ------
    UnknownBoardError
        The board is not in the registry.
    MissingBoardParameterError
        The registry gives the board neither an architecture nor a compute capability.
    """
    registry = registry or default_registry()
    board = get_board(name, registry=registry)
    if board.architecture:
        return str(board.architecture)
    if board.compute_capability:
        found = registry.cc_defaults(str(board.compute_capability)).get("architecture")
        if found and found[0]:
            return str(found[0])
    raise MissingBoardParameterError(
        f"board {board.name!r} has no architecture and no compute capability in the registry; add "
        f"`architecture` or `compute_capability` to its entry ({BOARD_FILES})"
    )


def board_generation(name: str, *, registry: Registry | None = None) -> tuple[int, int]:
    """(major, minor) compute capability of a board, or of the oldest one of its architecture.

    Raises
    ------
    UnknownBoardError, MissingBoardParameterError
        As :func:`board_architecture`.
    """
    registry = registry or default_registry()
    board = get_board(name, registry=registry)
    if board.compute_capability:
        return _cc_tuple(board.compute_capability)
    architecture = board_architecture(name, registry=registry)
    for cc in registry.compute_capabilities():
        found = registry.cc_defaults(cc).get("architecture")
        if found and found[0] == architecture:
            return _cc_tuple(cc)
    raise MissingBoardParameterError(
        f"board {board.name!r}: architecture {architecture!r} has no [cc] table in the registry, so its "
        f"generation is unknown; add its compute_capability to its entry ({BOARD_FILES})"
    )
