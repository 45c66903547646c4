"""Scoring of runtime predictions: protocols (splitters), the one harness, metrics."""

from perfml.evaluation.harness import cross_val_predictions
from perfml.evaluation.metrics import BAND, ape, mape, median_ape, score_table, spearman, summarize, within_band
from perfml.evaluation.protocols import (
    PROTOCOLS,
    GroupedKFold,
    InSampleSplit,
    LeaveOneAppOut,
    LeaveOneArchitectureOut,
    LeaveOneBoardOut,
    NewestArchitectureSplit,
    ReferenceBoardSplit,
    SizeCV,
    SizeExtrapolationSplit,
    get_protocol,
    make_splitter,
)

__all__ = [
    "BAND",
    "GroupedKFold",
    "InSampleSplit",
    "LeaveOneAppOut",
    "LeaveOneArchitectureOut",
    "LeaveOneBoardOut",
    "NewestArchitectureSplit",
    "PROTOCOLS",
    "ReferenceBoardSplit",
    "SizeCV",
    "SizeExtrapolationSplit",
    "ape",
    "cross_val_predictions",
    "get_protocol",
    "make_splitter",
    "mape",
    "median_ape",
    "score_table",
    "spearman",
    "summarize",
    "within_band",
]
