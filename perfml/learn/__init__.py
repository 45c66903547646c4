"""The learned predictor: leakage-free features, regressors, protocols, tuning, tracking."""

from perfml.learn.features import FeatureBuilder
from perfml.learn.protocols import PROTOCOLS, SizeExtrapolationSplit, cross_val_predictions, make_splitter
from perfml.learn.regressors import LEARNERS, RuntimeRegressor

__all__ = [
    "FeatureBuilder",
    "LEARNERS",
    "PROTOCOLS",
    "RuntimeRegressor",
    "SizeExtrapolationSplit",
    "cross_val_predictions",
    "make_splitter",
]
