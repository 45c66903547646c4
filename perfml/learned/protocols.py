"""Former home of the evaluation protocols; kept as an alias of :mod:`perfml.evaluation`.

Every protocol is a splitter of :mod:`perfml.evaluation.protocols` and
:func:`cross_val_predictions` is the one harness of :mod:`perfml.evaluation.harness`.
"""

from __future__ import annotations

from perfml.evaluation.harness import cross_val_predictions
from perfml.evaluation.protocols import PROTOCOLS, SizeExtrapolationSplit, make_splitter

__all__ = ["PROTOCOLS", "SizeExtrapolationSplit", "cross_val_predictions", "make_splitter"]
