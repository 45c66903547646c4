"""The characterization group: ``char_*`` achieved figures of each row's board (issue 11 §2).

Beside the registry's specifications (``board_*``), what the board was *observed* to
do: its achieved DRAM bandwidth, FP32 throughput and launch floor, from the board's
characterization (:func:`perfml.closed_form._characterized.characterization_for`), and
their ratios to the datasheet peaks. Off by default (``FeatureBuilder(characterization=True)``
turns it on); nothing is learned from the training rows.

Columns (natural logs, as every other time and rate of the builder):

``char_log_dram_bandwidth``, ``char_log_fp32_throughput``
    log of the preferred value (measured, calibrated, published, then spec tier; an
    estimate before a bound) in B/s and FLOP/s.
``char_dram_over_spec``, ``char_fp32_over_spec``
    that value over the datasheet peak (1 when only the spec is known).
``char_log_launch_floor_ms``
    log of the launch floor (ms), NaN where the characterization has none.

Which tier a calibrated value comes from is the caller's business: under
leave-one-board-out, pass characterizations whose target board's values come only from
its calibration kernels (see ``experiments/unseen_boards_characterized.toml``).
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin

from perfml.characterize.values import TIER_PREFERENCE

__all__ = ["CHARACTERIZATION_COLUMNS", "CharacterizationFeatures", "resolve_characterization"]

CHARACTERIZATION_COLUMNS = (
    "char_log_dram_bandwidth",
    "char_log_fp32_throughput",
    "char_dram_over_spec",
    "char_fp32_over_spec",
    "char_log_launch_floor_ms",
)


def _figures(characterization) -> dict[str, float]:
    """The ``char_*`` values of one characterization."""
    out = dict.fromkeys(CHARACTERIZATION_COLUMNS, np.nan)
    for quantity, unit, name, ratio in (
        ("dram_bandwidth", "B/s", "char_log_dram_bandwidth", "char_dram_over_spec"),
        ("fp32_throughput", "FLOP/s", "char_log_fp32_throughput", "char_fp32_over_spec"),
    ):
        value = characterization.value(quantity, unit, tiers=TIER_PREFERENCE)
        spec = characterization.value(quantity, unit, tiers=("spec",))
        if value is not None:
            out[name] = float(np.log(value))
            out[ratio] = float(value / spec) if spec else np.nan
    floor = characterization.value("launch_overhead", "ms")
    if floor is not None:
        out["char_log_launch_floor_ms"] = float(np.log(floor))
    return out


def resolve_characterization(board: str, characterizations):
    """The characterization of ``board``: from ``characterizations`` (mapping or callable), else the committed one.

    Raises
    ------
    CharacterizationBoardError
        The characterization given for ``board`` is of another board.
    """
    from perfml.characterize import board_characterization
    from perfml.closed_form._characterized import characterization_for

    given = board_characterization if characterizations is None else characterizations
    found = characterization_for(board, given)
    return board_characterization(board) if found is None else found


class CharacterizationFeatures(TransformerMixin, BaseEstimator):
    """``char_*`` achieved figures of each row's board (see the module docstring).

    Parameters
    ----------
    characterizations : None, mapping or callable, optional
        Board -> :class:`~perfml.characterize.Characterization`; None: each board's
        committed one (:func:`~perfml.characterize.board_characterization`).

    Raises
    ------
    CharacterizationBoardError
        (in ``transform``) a characterization of another board than the row's.
    """

    def __init__(self, *, characterizations=None):
        self.characterizations = characterizations

    def fit(self, X, y=None):
        from perfml.closed_form._characterized import check_characterizations

        check_characterizations("CharacterizationFeatures", self.characterizations)
        return self

    def transform(self, X) -> pd.DataFrame:
        @functools.lru_cache(maxsize=None)
        def figures(board: str) -> tuple[float, ...]:
            found = _figures(resolve_characterization(board, self.characterizations))
            return tuple(found[c] for c in CHARACTERIZATION_COLUMNS)

        values = [figures(str(b)) for b in X["board"].to_numpy()]
        return pd.DataFrame(values, index=X.index, columns=list(CHARACTERIZATION_COLUMNS), dtype=float)
