"""The learned model of deep-learning operator calls (NeuSight corpus): features, transfer, regressor.

Public home: :mod:`perfml.learned.operators`.
"""

from perfml.learned.operator_model._features import MONOTONE, operator_feature_frame
from perfml.learned.operator_model._regressor import (
    DEFAULT_LEARNER_PARAMS,
    OperatorRegressor,
    OperatorTransferBaseline,
    check_operator_rows,
)
from perfml.learned.operator_model._transfer import KEY_COLUMNS, TRANSFER_COLUMNS, TransferTable, call_keys

__all__ = [
    "DEFAULT_LEARNER_PARAMS",
    "KEY_COLUMNS",
    "MONOTONE",
    "OperatorRegressor",
    "OperatorTransferBaseline",
    "TRANSFER_COLUMNS",
    "TransferTable",
    "call_keys",
    "check_operator_rows",
    "operator_feature_frame",
]
