"""Learned runtime model of deep-learning operator calls: the public home of :class:`OperatorRegressor`.

See :mod:`perfml.learned.operator_model` for the features, the transfer table and the
formulas.
"""

from perfml.learned.operator_model import (
    DEFAULT_LEARNER_PARAMS,
    OperatorRegressor,
    OperatorTransferBaseline,
    check_operator_rows,
)

__all__ = ["DEFAULT_LEARNER_PARAMS", "OperatorRegressor", "OperatorTransferBaseline", "check_operator_rows"]
