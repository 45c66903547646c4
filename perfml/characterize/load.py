"""Read a board characterization: a JSON file, or a result set characterized on the fly."""

from __future__ import annotations

import os
from pathlib import Path

from perfml._files import not_a_file, parse_table
from perfml.boards import check_board_is_device, same_board  # same_board re-exported: perfml.characterize.same_board
from perfml.characterize.build import characterize_results
from perfml.characterize.characterization import Characterization
from perfml.errors import CharacterizationBoardError, PerfmlError, ResultSchemaError


def load_characterization(path: str | os.PathLike[str], *, board: str | None = None) -> Characterization:
    """Read a characterization written by ``perfml characterize RESULTS --out FILE``.

    A result set directory is also accepted: it is characterized on the fly. With
    ``board``, a characterization of another board (names resolved through the
    registry) is refused rather than silently applied.
    """
    path = Path(path)
    if path.is_dir():
        characterization = characterize_results(path)
        if board is not None:  # a result set of another board is refused as its JSON file is
            check_board(characterization, board, path)
        return characterization
    why = not_a_file(path)
    if why is not None and why != "does not exist":
        raise ResultSchemaError(f"{path} {why}; give a characterization JSON file or a sweep result-set folder")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultSchemaError(
            f"{path} does not exist; write it with `perfml characterize RESULTS --out {path}`"
        ) from None
    except UnicodeDecodeError as exc:
        raise ResultSchemaError(f"{path} is not valid JSON (not UTF-8 text: {exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ResultSchemaError(f"cannot read characterization {path}: {exc.strerror or exc}") from None
    data = parse_table(text, path, "json", "perfml characterization", ResultSchemaError,
                       non_finite=True)  # Characterization.from_dict names the field
    if board is not None and isinstance(data.get("board"), str):
        # first: the values are checked against the board's specification, another board's misleads
        check_board_name(data["board"], board, path)
    device = data.get("device")
    device_name = device.get("name") if isinstance(device, dict) else None
    if isinstance(data.get("board"), str) and isinstance(device_name, str) and device_name:
        # the values were measured on that device: a "board" edited to another board's name applied them there
        # (before the values are checked against the named board's specification, for the same reason)
        check_board_is_device(data["board"], device_name, path,
                              fix=f"the file's board was edited, or the sweep was characterized with the wrong "
                                  f"--board: characterize the results again (`perfml characterize RESULTS --out {path}`)")
    try:
        characterization = Characterization.from_dict(data)
    except PerfmlError as exc:  # name the file: the value's own message cannot
        if str(path) in str(exc):
            raise
        raise type(exc)(f"{path}: {exc}") from None
    if board is not None:
        check_board(characterization, board, path)
    return characterization


def check_board(characterization: Characterization, board: str, where: object = "the characterization") -> None:
    """Refuse a characterization of another board than the one it is applied to.

    Raises
    ------
    CharacterizationBoardError
        ``characterization.board`` and ``board`` are different boards.
    """
    check_board_name(characterization.board, board, where)


def check_board_name(characterized: str, board: str, where: object = "the characterization") -> None:
    """:func:`check_board` on the characterized board's name."""
    if not same_board(characterized, board):
        raise CharacterizationBoardError(
            f"{where} characterizes board {characterized!r}, but it is applied to "
            f"{board!r}; characterize {board} (`perfml characterize RESULTS --board {board}`) "
            "or pass the file of that board"
        )
