"""The learned predictor: leakage-free features, regressors, protocols, tuning, tracking."""

from perfml.learned.features import FeatureBuilder
from perfml.learned.protocols import PROTOCOLS, SizeExtrapolationSplit, cross_val_predictions, make_splitter
from perfml.learned.regressors import LEARNERS, RuntimeRegressor

__all__ = [
    "FeatureBuilder",
    "LEARNERS",
    "PROTOCOLS",
    "RuntimeRegressor",
    "SizeExtrapolationSplit",
    "cross_val_predictions",
    "make_splitter",
]
