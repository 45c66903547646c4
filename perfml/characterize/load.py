"""Read a board characterization: a JSON file, or a result set characterized on the fly."""

from __future__ import annotations

import json
import os
from pathlib import Path

from perfml.characterize.build import characterize_results
from perfml.characterize.characterization import Characterization
from perfml.errors import CharacterizationBoardError, ResultSchemaError, UnknownBoardError


def load_characterization(path: str | os.PathLike[str], *, board: str | None = None) -> Characterization:
    """Read a characterization written by ``perfml characterize RESULTS --out FILE``.

    A result set directory is also accepted: it is characterized on the fly. With
    ``board``, a characterization of another board (names resolved through the
    registry) is refused rather than silently applied.
    """
    path = Path(path)
    if path.is_dir():
        return characterize_results(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultSchemaError(
            f"{path} does not exist; write it with `perfml characterize RESULTS --out {path}`"
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ResultSchemaError(f"{path} is not valid JSON ({exc})") from None
    except OSError as exc:
        raise ResultSchemaError(f"cannot read characterization {path}: {exc.strerror or exc}") from None
    characterization = Characterization.from_dict(data)
    if board is not None:
        check_board(characterization, board, path)
    return characterization


def same_board(a: str, b: str) -> bool:
    """Whether two board names denote the same board.

    Registry names and aliases resolve to the canonical name; a name the registry does
    not know (e.g. a board of the DL-operator corpus not yet registered) is compared
    after normalization (case, spaces, ``-`` and ``_`` ignored).
    """
    from perfml.boards import resolve_board_name
    from perfml.boards._registry import normalize_board_name

    def canonical(name: str) -> str:
        try:
            return resolve_board_name(name)
        except UnknownBoardError:
            return normalize_board_name(name)

    return canonical(a) == canonical(b) or normalize_board_name(a) == normalize_board_name(b)


def check_board(characterization: Characterization, board: str, where: object = "the characterization") -> None:
    """Refuse a characterization of another board than the one it is applied to.

    Raises
    ------
    CharacterizationBoardError
        ``characterization.board`` and ``board`` are different boards.
    """
    if not same_board(characterization.board, board):
        path = where
        raise CharacterizationBoardError(
            f"{path} characterizes board {characterization.board!r}, but it is applied to "
            f"{board!r}; characterize {board} (`perfml characterize RESULTS --board {board}`) "
            "or pass the file of that board"
        )
