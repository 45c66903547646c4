"""The fine-grained criteria model: criteria, potential speedups and hints of a kernel.

Reference: seed 000, "A Fine-grained Performance Model for GPU Architectures",
Sections IV (criteria), V (potential speedups) and VI (hints, validation by tuning).

* :mod:`~perfml.diagnosis.metrics` -- which nvprof metric/event gives each formula term,
  per compute capability;
* :mod:`~perfml.diagnosis.criteria` -- the criteria in [0, 1];
* :mod:`~perfml.diagnosis.speedup` -- potential speedups and the overall PotentialSpeedup;
* :mod:`~perfml.diagnosis.hints` -- plain-language hints ranked by potential gain;
* :mod:`~perfml.diagnosis.twins` -- the check on kernel twins that differ by one optimization.

Example::

    from perfml.diagnosis import diagnose
    d = diagnose("Tesla-K40", "matrix_sum_normal", 4096)
    for hint in d.hints:
        print(hint.text)
"""

from perfml.diagnosis._report import DEFAULT_BLOCK_DIR, Diagnosis, diagnose, diagnose_row, select_profile
from perfml.diagnosis.criteria import (
    CRITERIA,
    CriteriaReport,
    Criterion,
    IdentityCharacterization,
    characterization_label,
    evaluate_criteria,
)
from perfml.diagnosis.hints import Hint, rank_hints
from perfml.diagnosis.metrics import TERMS, MetricTerm
from perfml.diagnosis.speedup import OverallSpeedup, Speedup, potential_speedups
from perfml.diagnosis.twins import TWIN_PAIRS, TwinPair, twin_cases, twin_check, twin_summary, twin_table

__all__ = [
    "CRITERIA",
    "DEFAULT_BLOCK_DIR",
    "TERMS",
    "TWIN_PAIRS",
    "CriteriaReport",
    "Criterion",
    "Diagnosis",
    "Hint",
    "IdentityCharacterization",
    "MetricTerm",
    "OverallSpeedup",
    "Speedup",
    "TwinPair",
    "characterization_label",
    "diagnose",
    "diagnose_row",
    "evaluate_criteria",
    "potential_speedups",
    "rank_hints",
    "select_profile",
    "twin_cases",
    "twin_check",
    "twin_summary",
    "twin_table",
]
