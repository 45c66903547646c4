"""Device characterization: seed 000's characterization functions and per-board peaks.

The API the fine-grained criteria model (:mod:`perfml.diagnosis`) uses:

* :func:`load_characterization` ``(path) -> Characterization`` (a JSON file written by
  ``perfml characterize RESULTS --out FILE``, or a result set directory);
* :meth:`Characterization.f_divergence`, :meth:`~Characterization.f_shmem`,
  :meth:`~Characterization.f_dram_thr`, :meth:`~Characterization.f_arith_thr`: intensity
  in [0, 1] (1 = the criterion's best value) to relative performance in [0, 1];
* :meth:`Characterization.identity` (1 everywhere) and
  :func:`reference_characterization` ``("GTX-980")`` (seed 001 Tables 3 and 4).

The board characterization of issue 11 (:class:`BoardCharacterization`, the same class)
also holds tiered values (:class:`CharacterizedValue`: ``spec``, ``published``,
``measured``, ``calibrated``), checked against physical limits
(:func:`check_physical_limits`).
"""

from __future__ import annotations

from perfml.characterize.build import (
    DEFAULT_SOURCES,
    FunctionSource,
    characterize_frame,
    characterize_results,
)
from perfml.characterize.board import board_characterization, packaged_boards, packaged_characterization
from perfml.characterize.calibrate import calibrate_from_rows, calibrate_from_runtimes
from perfml.characterize.characterization import BoardCharacterization, Characterization
from perfml.characterize.limits import MAX_OVER_SPEC, WARN_OVER_SPEC, check_physical_limits
from perfml.characterize.load import check_board, load_characterization, same_board
from perfml.characterize.functions import (
    FUNCTION_NAMES,
    CharacterizationFunction,
    sample_quantize_interpolate,
)
from perfml.characterize.reference import reference_boards, reference_characterization
from perfml.characterize.measured import measured_values
from perfml.characterize.spec import spec_values
from perfml.characterize.stream_curve import StreamCurve
from perfml.characterize.summary import ClassSummary, summarize_results
from perfml.characterize.values import (
    QUANTITIES,
    TIER_PREFERENCE,
    TIERS,
    UNITS,
    CharacterizedValue,
    Quantity,
)

__all__ = [
    "DEFAULT_SOURCES",
    "FUNCTION_NAMES",
    "MAX_OVER_SPEC",
    "QUANTITIES",
    "TIERS",
    "TIER_PREFERENCE",
    "UNITS",
    "WARN_OVER_SPEC",
    "BoardCharacterization",
    "Characterization",
    "CharacterizationFunction",
    "CharacterizedValue",
    "ClassSummary",
    "FunctionSource",
    "Quantity",
    "StreamCurve",
    "board_characterization",
    "calibrate_from_rows",
    "calibrate_from_runtimes",
    "characterize_frame",
    "characterize_results",
    "check_board",
    "check_physical_limits",
    "load_characterization",
    "measured_values",
    "packaged_boards",
    "packaged_characterization",
    "same_board",
    "spec_values",
    "reference_boards",
    "reference_characterization",
    "sample_quantize_interpolate",
    "summarize_results",
]
