"""Scoring of runtime predictions: protocols (splitters), the one harness, metrics."""

from perfml.evaluation.harness import cross_val_predictions
from perfml.evaluation.metrics import BAND, ape, mape, median_ape, score_table, spearman, summarize, within_band
from perfml.evaluation.protocols import (
    PROTOCOLS,
    CappedTrainSplit,
    GroupedKFold,
    InSampleSplit,
    LeaveOneAppOut,
    LeaveOneArchitectureOut,
    LeaveOneBoardOut,
    NewestBoardSplit,
    NewestArchitectureSplit,
    ReferenceBoardSplit,
    SizeCV,
    SizeExtrapolationSplit,
    TrainOnBoardsSplit,
    get_protocol,
    make_splitter,
)

__all__ = [
    "BAND",
    "CappedTrainSplit",
    "GroupedKFold",
    "InSampleSplit",
    "LeaveOneAppOut",
    "LeaveOneArchitectureOut",
    "LeaveOneBoardOut",
    "NewestBoardSplit",
    "NewestArchitectureSplit",
    "PROTOCOLS",
    "ReferenceBoardSplit",
    "SizeCV",
    "SizeExtrapolationSplit",
    "TrainOnBoardsSplit",
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
