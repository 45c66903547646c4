"""Work model of deep-learning operators: FLOPs, bytes moved, op classes, roofline lower bound.

The operators are those of the NeuSight corpus (``perfml.datasets.load_dlops_runtimes``):
batched matmul, linear, eleven element-wise ops, softmax, layer norm and conv2d, FP32.

Examples
--------
>>> import pandas as pd
>>> from perfml.operators import operator_work
>>> rows = pd.DataFrame({"op": ["bmm", "add"], "B": [2, 8], "M": [3, None], "N": [4, None],
...                      "K": [5, None], "H": [None, 16]})
>>> work = operator_work(rows)
>>> work["op_class"].tolist(), work["flops"].tolist(), work["bytes"].tolist()
(['BMM', 'EW'], [240.0, 128.0], [376.0, 1536.0])
"""

from perfml.operators._roofline import roofline_lower_bound_ms
from perfml.operators._work import (
    BYTES_PER_ELEMENT,
    OP_CLASS,
    OP_CLASSES,
    WORK_COLUMNS,
    operator_work,
)

__all__ = [
    "BYTES_PER_ELEMENT",
    "OP_CLASS",
    "OP_CLASSES",
    "WORK_COLUMNS",
    "operator_work",
    "roofline_lower_bound_ms",
]
