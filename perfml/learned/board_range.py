"""Whether a query's board lies within the training boards' datasheet figures (issue 10 §2).

The interval of a prediction (:mod:`perfml.learned.intervals`) is calibrated on boards held
out one at a time, each predicted from the others. A board whose DRAM bandwidth, FP32
rate, SM count or L2 size is beyond every training board's (an H100 for a model trained on
2012-2016 boards, an A100 for one trained on the P4 to the V100) asks the model to
extrapolate. Such rows are flagged ``extrapolated``, like a size outside the training
range, with the reason in ``extrapolation`` ("board H100-SXM: DRAM bandwidth 3350 GB/s above
the training boards' range [21.34, 336] GB/s; ..."), also when a reference measured on
another board is carried there (the model's board ratio is what extrapolates). A figure the
registry does not know for the query's board, or for no training board, is not compared.

Their interval is *not* widened, because no widening measured better: the held-out boards
of the calibration already include boards beyond the others (the nine apps: GT-630,
GTX-295, GTX-Titan-Black; the operators: P4 and A100), so the calibrated quantile carries
some of their larger errors. Doubling such a held-out board's log half-width (the size
rule) raised ``perfml train``'s held-out coverage from 88-89 % to 93-99 % with intervals up
to 50 % wider (``perfml train`` at commit e40360d, which did so); a widening measured on
the boards beyond the others (Mondrian split conformal, a scratch run on the nine apps) was
set by the board with most rows. The flag is the warning: on the A100
left out of the operators' training the calibrated tier's 90 % interval covered 83.3 % of
its rows (``experiments/results/calibrated_cli_unseen_board_A100-PCIe-40GB.txt``, the
recording at 0dfd1ab; 85.9 % in the one at bdb52d8, where the A100's architecture, none of
the training boards', also takes the unseen-architecture interval).
A board of an architecture none of the training boards has is another matter, with a
calibration of its own (:func:`unseen_architecture_flags`; :mod:`perfml.learned.intervals`).

The figures are the registry's (:mod:`perfml.boards`): :func:`~perfml.boards.peak_bandwidth`,
:func:`~perfml.boards.peak_flops` (FP32, boost clock), ``sms`` and ``l2_bytes``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd

from perfml.boards import peak_bandwidth, peak_flops

__all__ = ["BOARD_RANGE_FIGURES", "board_figures", "board_range_flags", "boards_beyond_the_others",
           "outside_training_boards", "unseen_architecture_flags", "carried_within_architecture", "architectures_of"]


#: figure name -> (how to read it from a registry board, unit divisor, unit label)
BOARD_RANGE_FIGURES: dict[str, tuple[Callable, float, str]] = {
    "DRAM bandwidth": (peak_bandwidth, 1e9, "GB/s"),
    "FP32 rate": (peak_flops, 1e12, "TFLOP/s"),
    "SM count": (lambda b: b.sms, 1.0, "SMs"),
    "L2 size": (lambda b: b.l2_bytes, 2.0**20, "MiB"),
}


def board_figures(name: str, registry=None) -> dict[str, float]:
    """The :data:`BOARD_RANGE_FIGURES` of a registry board; NaN where the registry lacks one."""
    from perfml.boards import get_board
    from perfml.errors import PerfmlError

    board = get_board(name, registry=registry)
    out = {}
    for figure, (read, _, _) in BOARD_RANGE_FIGURES.items():
        try:
            value = read(board)
        except (PerfmlError, TypeError, ValueError):  # a figure the registry does not give
            value = None
        out[figure] = float(value) if value is not None and np.isfinite(float(value)) else float("nan")
    return out


def outside_training_boards(name: str, training_boards: Iterable[str], registry=None) -> str:
    """Why board ``name`` is beyond the training boards' figures, or ``""`` when it is within them."""
    from perfml.boards import resolve_board_name

    training = [board_figures(b, registry) for b in training_boards]
    if not training:
        return ""
    mine = board_figures(name, registry)
    canonical = resolve_board_name(name, registry=registry)
    reasons = []
    for figure, (_, unit, label) in BOARD_RANGE_FIGURES.items():
        known = [t[figure] for t in training if np.isfinite(t[figure])]
        value = mine[figure]
        if not known or not np.isfinite(value):
            continue
        lo, hi = min(known), max(known)
        side = "above" if value > hi * (1 + 1e-9) else "below" if value < lo * (1 - 1e-9) else ""
        if side:
            reasons.append(f"{figure} {value / unit:.4g} {label} {side} the training boards' range "
                           f"[{lo / unit:.4g}, {hi / unit:.4g}] {label}")
    return f"board {canonical}: " + "; ".join(reasons) if reasons else ""


def board_range_flags(boards, training_boards, registry=None) -> tuple[np.ndarray, list[str]]:
    """Per row, whether its board is beyond the training boards' figures, and why (``""`` if not).

    ``training_boards`` empty or None (a model that records none): no row is flagged here.
    """
    boards = pd.Series(np.asarray(boards, dtype=object)).astype(str)
    training = list(training_boards or ())
    codes, names = pd.factorize(boards)
    why = [outside_training_boards(str(n), training, registry) if training else "" for n in names]
    reasons = [why[c] for c in codes]
    return np.array([bool(r) for r in reasons], dtype=bool), reasons


def boards_beyond_the_others(boards, registry=None) -> list[str]:
    """The boards of a training set that lie beyond all the *other* boards' figures.

    Held out in turn under leave-one-board-out, these are the boards that ask the model to
    extrapolate, as a new board beyond every training board does (the module docstring
    names them for the default corpora).
    """
    names = sorted(set(map(str, boards)))
    return [b for b in names if outside_training_boards(b, [o for o in names if o != b], registry)]


def architectures_of(boards, registry=None) -> np.ndarray:
    """The registry architecture of each board (None where the registry gives neither it nor a compute capability)."""
    from perfml.boards import board_architecture
    from perfml.errors import PerfmlError

    def arch(name: str) -> str | None:
        try:
            return board_architecture(name, registry=registry)
        except PerfmlError:
            return None

    codes, names = pd.factorize(pd.Series(np.asarray(boards, dtype=object)).astype(str))
    table = np.empty(len(names), dtype=object)
    table[:] = [arch(str(n)) for n in names]
    return table[codes]


def unseen_architecture_flags(boards, training_boards, registry=None, *, carried_within=None) -> tuple[np.ndarray, list[str]]:
    """Per row, whether its board's architecture is none of the training boards', and why (``""`` if not).

    Such a row's interval is the model's unseen-architecture one where it has it
    (:func:`perfml.learned.intervals.interval_bounds`). ``carried_within``: per row, whether
    it was carried from the user's reference measured on a board of its own architecture
    (:func:`carried_within_architecture`): a transfer within that architecture, which the
    leave-one-board-out calibration describes, so it is not flagged. A board whose
    architecture the registry does not give (neither the field nor a compute capability),
    and a model that records no training boards, flag nothing: there is nothing to compare.
    """
    mine = architectures_of(boards, registry)
    trained = {a for a in architectures_of(list(training_boards or ()), registry) if a}
    within = np.zeros(len(mine), dtype=bool) if carried_within is None else np.asarray(carried_within, dtype=bool)
    listed = ", ".join(sorted(trained))
    reasons = [f"board {b}: architecture {a}, none of the training boards' ({listed})"
               if trained and a and a not in trained and not w else ""
               for b, a, w in zip(np.asarray(boards, dtype=object).astype(str), mine, within)]
    return np.array([bool(r) for r in reasons], dtype=bool), reasons


def carried_within_architecture(n: int, owners, query_boards, reference_boards, registry=None) -> np.ndarray:
    """Per query row (``n`` of them), whether one of its reference pairs (``owners[k]``: the row of pair ``k``,
    measured on ``reference_boards[k]``) is on a board of the row's own architecture (``query_boards``)."""
    out = np.zeros(n, dtype=bool)
    owners = np.asarray(owners, dtype=int)
    if not len(owners):
        return out
    at_query = architectures_of(np.asarray(query_boards, dtype=object)[owners], registry)
    at_reference = architectures_of(reference_boards, registry)
    same = np.array([a is not None and a == b for a, b in zip(at_query, at_reference)], dtype=bool)
    out[owners[same]] = True
    return out
