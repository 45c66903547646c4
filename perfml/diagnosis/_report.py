"""One diagnosis: criteria, potential speedups and hints of a (board, kernel, size).

Ties :mod:`perfml.diagnosis.criteria`, :mod:`~perfml.diagnosis.speedup` and
:mod:`~perfml.diagnosis.hints` together for one row of a ``profiles_nca``-shaped table
and selects that row with errors that list what exists.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from perfml.diagnosis.criteria import (
    BoardLike,
    CharacterizationLike,
    CriteriaReport,
    evaluate_criteria,
)
from perfml.diagnosis.hints import DEFAULT_MIN_GAIN, Hint, rank_hints
from perfml.diagnosis.speedup import OverallSpeedup, Speedup, potential_speedups
from perfml.errors import UnknownAppError, UnknownBoardError

__all__ = ["DEFAULT_BLOCK_DIR", "Diagnosis", "diagnose", "diagnose_row", "resolve_board", "select_profile"]

#: 16x16 threads (2-D apps) / 256 threads (1-D apps), the launch of the NCA measurements
DEFAULT_BLOCK_DIR = "block_16"


@dataclass(frozen=True)
class Diagnosis:
    """Criteria, potential speedups and ranked hints of one measured kernel."""

    board: str
    app_id: str
    kernel: str
    input_size: int
    block_dir: str
    report: CriteriaReport
    speedups: dict[str, Speedup]
    overall: OverallSpeedup
    hints: list[Hint]

    @property
    def explained_by_criteria(self) -> float | None:
        """The most the criteria's potential speedups give together (their product, finite ones),
        to set beside the overall PotentialSpeedup: that one is the distance to the DRAM or FP32
        roof (Sec. V), and a kernel far below both for a reason no criterion measures (latency,
        cache bandwidth, integer work that ARITHTHR, counting FP32 flops, does not see) has an
        overall potential that no criterion, and so no hint, accounts for. None without any."""
        values = [sp.value for sp in self.speedups.values() if sp.value is not None and math.isfinite(sp.value)]
        return float(math.prod(values)) if values else None

    @property
    def unsupported(self) -> list[str]:
        """Criteria the profile cannot support."""
        return [c.name for c in self.report.criteria.values() if c.status == "unsupported"]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary (infinite speedups become the string ``"inf"``)."""
        crit = {}
        for name, c in self.report.criteria.items():
            sp = self.speedups.get(name)
            crit[name] = {
                "value": _num(c.value),
                "status": c.status,
                "potential_speedup": _num(sp.value) if sp else None,
                "speedup_rule": sp.rule if sp else None,
                "approximate": c.approximate,
                "note": "; ".join(dict.fromkeys(x for x in (c.note, sp.note if sp else "") if x)),
            }
        return {
            "board": self.board,
            "compute_capability": self.report.compute_capability,
            "app_id": self.app_id,
            "kernel": self.kernel,
            "input_size": self.input_size,
            "block_dir": self.block_dir,
            "characterization": self.report.characterization,
            "criteria": crit,
            "shares": {k: _num(v) for k, v in self.report.shares.items()},
            "potential_speedup": {
                "value": _num(self.overall.value),
                "bound": self.overall.bound,
                "memthr": _num(self.overall.memthr),
                "ariththr": _num(self.overall.ariththr),
                "explained_by_criteria": _num(self.explained_by_criteria),
            },
            "unsupported": self.unsupported,
            "hints": [
                {"criterion": h.criterion, "value": h.value, "potential_speedup": _num(h.speedup), "text": h.text}
                for h in self.hints
            ],
        }


def _num(x: float | None) -> float | str | None:
    if x is None:
        return None
    if math.isinf(x):
        return "inf"
    return float(x)


def resolve_board(board: BoardLike | str) -> BoardLike:
    """A board object: passed through, or looked up by name in :mod:`perfml.boards`."""
    if not isinstance(board, str):
        return board
    from perfml.boards import get_board  # lazy: the registry loads a TOML file

    return get_board(board)


def diagnose_row(
    row: pd.Series,
    board: BoardLike | str,
    characterization: CharacterizationLike | None = None,
    *,
    min_gain: float = DEFAULT_MIN_GAIN,
    strict: bool = True,
) -> Diagnosis:
    """Diagnose one profile row (criteria, potential speedups, hints).

    ``strict`` is passed to :func:`~perfml.diagnosis.criteria.evaluate_criteria`.
    """
    board_obj = resolve_board(board)
    report = evaluate_criteria(row, board_obj, characterization, strict=strict)
    speedups, overall = potential_speedups(report)
    hints = rank_hints(report, speedups, min_gain=min_gain)
    return Diagnosis(
        board=str(row.get("board", getattr(board_obj, "name", ""))),
        app_id=str(row.get("app_id", "")),
        kernel=str(row.get("kernel", "")),
        input_size=int(row.get("input_size", 0)),
        block_dir=str(row.get("block_dir", "")),
        report=report,
        speedups=speedups,
        overall=overall,
        hints=hints,
    )


def select_profile(
    profiles: pd.DataFrame,
    *,
    board: str,
    app_id: str,
    input_size: int | None = None,
    block_dir: str = DEFAULT_BLOCK_DIR,
) -> pd.Series:
    """The profile row of (board, app, size, block_dir); the largest size when omitted.

    When two kernel versions of an app were profiled at one size (see the README,
    "Two matMul code versions"), the version with more profiled sizes is taken.

    Raises
    ------
    UnknownBoardError, UnknownAppError
        With the boards, apps, block directories or sizes that exist.
    """
    boards = sorted(profiles["board"].dropna().unique())
    board = _profiled_name(board, boards)
    if board not in boards:
        raise UnknownBoardError(f"no profiles for board {board!r}; boards with profiles: {', '.join(boards)}")
    on_board = profiles[profiles["board"] == board]
    apps = sorted(on_board["app_id"].dropna().unique())
    if app_id not in apps:
        raise UnknownAppError(f"no profiles of app {app_id!r} on {board}; apps profiled there: {', '.join(apps)}")
    rows = on_board[on_board["app_id"] == app_id]
    dirs = sorted(rows["block_dir"].dropna().unique())
    if block_dir not in dirs:
        raise UnknownAppError(
            f"no {block_dir} profiles of {app_id} on {board}; block directories: {', '.join(dirs)}"
        )
    rows = rows[rows["block_dir"] == block_dir]
    sizes = sorted(int(s) for s in rows["input_size"].dropna().unique())
    if input_size is None:
        input_size = sizes[-1]
    elif int(input_size) not in sizes:
        raise UnknownAppError(
            f"{app_id} on {board} ({block_dir}) was not profiled at size {input_size}; sizes: "
            f"{', '.join(map(str, sizes))}"
        )
    kernel_counts = rows["kernel"].value_counts()
    rows = rows[rows["input_size"] == int(input_size)]
    if len(rows) > 1:
        rows = rows.assign(_n=rows["kernel"].map(kernel_counts)).sort_values("_n", ascending=False)
    return rows.iloc[0]


def _profiled_name(board: str, profiled) -> str:
    """``board`` as the profiles name it: an alias or another spelling of a profiled board resolves to it."""
    from perfml.boards import same_board

    return next((b for b in profiled if b == board), None) or next(
        (b for b in profiled if same_board(str(b), board)), board)


def diagnose(
    board: str,
    app_id: str,
    input_size: int | None = None,
    *,
    data_home: str | None = None,
    block_dir: str = DEFAULT_BLOCK_DIR,
    characterization: CharacterizationLike | None = None,
    strict: bool = True,
    min_gain: float = DEFAULT_MIN_GAIN,
) -> Diagnosis:
    """Diagnose one measured kernel of ``profiles_nca`` (largest size when omitted).

    Loads the profiles with :func:`perfml.datasets.load_profiles_nca` and the board with
    :func:`perfml.boards.get_board`.
    """
    from perfml.datasets import load_profiles_nca
    from perfml.errors import MissingMetricError

    profiles = load_profiles_nca(data_home)
    row = select_profile(profiles, board=board, app_id=app_id, input_size=input_size, block_dir=block_dir)
    board = str(row["board"])
    if input_size is not None or not strict:
        return diagnose_row(row, board, characterization, strict=strict, min_gain=min_gain)
    # no size asked: the largest size whose profile has every counter the criteria need (37 of
    # 97 (board, app) pairs lack one at their largest size, and the default failed on them)
    same = profiles[(profiles["board"] == board) & (profiles["app_id"] == app_id) & (profiles["block_dir"] == block_dir)]
    sizes = sorted((int(n) for n in same["input_size"].dropna().unique()), reverse=True)
    first_error = None
    for n in sizes:
        try:
            return diagnose_row(select_profile(profiles, board=board, app_id=app_id, input_size=n, block_dir=block_dir),
                                board, characterization, strict=strict, min_gain=min_gain)
        except MissingMetricError as exc:
            first_error = first_error or exc
    raise MissingMetricError(f"{first_error} (no profiled size of {app_id} on {board} has every counter: "
                             f"{len(sizes)} sizes tried)") from None
