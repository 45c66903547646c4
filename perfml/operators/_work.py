"""Work of one deep-learning operator call: FLOPs, bytes moved, reduction structure.

Vectorised over a DataFrame of operator rows (the columns of ``dlops_runtimes``: ``op``
and the dimensions ``B, M, N, K, H, in_channels, out_channels, kernel_size, input_size,
stride, padding``). Every tensor is FP32 (4 bytes per element): the corpus is FP32
throughout (shared/datasets/README.md, NeuSight section, "Units and measurement").

Formulas, per operator (operator semantics: README, NeuSight section, "Operator
semantics (from neusight/Dataset/collect.py)"; op classes as NeuSight groups them [1]_):

* ``bmm`` (class BMM): ``torch.bmm`` of x (B,M,N) and y (B,N,K) -> (B,M,K).
  FLOPs ``2 B M N K`` (one multiply and one add per term of each dot product);
  bytes ``4 (B M N + B N K + B M K)`` (both inputs read, the output written once).
* ``linear`` (class FC): ``nn.Linear(N, K, bias=True)`` on x (B,M,N) -> (B,M,K).
  FLOPs ``2 B M N K + B M K`` (matmul plus the bias add);
  bytes ``4 (B M N + K N + K + B M K)`` (input, weight (K,N), bias (K), output).
* element-wise (class EW), a (B,H) tensor: binary ``add, mul, pow, div`` move 3 tensors,
  bytes ``3 * 4 B H``; unary / scalar ``addu, mulu, powu, divu, relu, gelu, tanh`` move
  2 tensors, bytes ``2 * 4 B H``. FLOPs ``B H``: one operation per output element (a lower
  bound: ``pow``, ``gelu`` and ``tanh`` take several instructions per element).
* ``softmax`` (class Softmax) over H of x (B,H): two passes per row, two reductions per
  row (the row maximum, then the sum of ``exp(x - max)``), then the normalisation.
  FLOPs ``5 B H`` (compare; subtract, exp, add; divide); bytes ``2 * 4 B H``.
* ``ln`` (class LN): ``nn.LayerNorm(H)`` over x (B,H): two reductions per row (mean and
  variance), then ``(x - mean) * rstd * weight + bias``. FLOPs ``7 B H`` (add; multiply and
  add for the variance; subtract, two multiplies and an add); bytes
  ``4 (2 B H + 2 H + 2 B)`` (x read, y written, weight and bias of H floats, mean and rstd
  of B floats saved).
* ``conv`` (class Conv): ``nn.Conv2d(C_in, C_out, k, stride, padding, bias=False)`` on
  x (B, C_in, S, S): output side ``S_out = floor((S + 2 padding - k) / stride) + 1``;
  FLOPs ``2 B C_out S_out^2 C_in k^2`` (direct convolution; Winograd and FFT algorithms,
  which cuDNN picks for some shapes, need fewer multiplications); bytes
  ``4 (B C_in S^2 + C_out C_in k^2 + B C_out S_out^2)`` (input, weight, output).

The byte counts are the compulsory traffic: every operand read once, every result
written once; the FLOP counts are the arithmetic of the direct algorithm.

References
----------
.. [1] S. Lee, A. Phanishayee, D. Mahajan, "Forecasting GPU Performance for Deep Learning
   Training and Inference" (NeuSight), ASPLOS 2025, doi:10.1145/3669940.3707265: operators
   grouped as BMM, FC (linear), EW (element-wise), Softmax and LN.
.. [2] S. Williams, A. Waterman, D. Patterson, "Roofline: An Insightful Visual Performance
   Model for Multicore Architectures", CACM 52(4), 2009 (arithmetic intensity = FLOPs / bytes).
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np
import pandas as pd

from perfml.datasets import DLOPS_OP_DIMS
from perfml.errors import OperatorWorkError

__all__ = ["BYTES_PER_ELEMENT", "OP_CLASS", "OP_CLASSES", "WORK_COLUMNS", "operator_work"]

#: FP32 operands (README, NeuSight section: "FP32 everywhere")
BYTES_PER_ELEMENT = 4

_EW_BINARY = ("add", "mul", "pow", "div")
_EW_UNARY = ("addu", "mulu", "powu", "divu", "relu", "gelu", "tanh")

#: operator -> op class as NeuSight groups them (BMM, FC = linear, EW, Softmax, LN) [1]_;
#: conv2d, for which NeuSight has no predictor, is its own class
OP_CLASS = MappingProxyType(
    {
        "bmm": "BMM",
        "linear": "FC",
        **{op: "EW" for op in (*_EW_BINARY, *_EW_UNARY)},
        "softmax": "Softmax",
        "ln": "LN",
        "conv": "Conv",
    }
)
OP_CLASSES: tuple[str, ...] = tuple(dict.fromkeys(OP_CLASS.values()))

#: columns of :func:`operator_work`
WORK_COLUMNS: tuple[str, ...] = (
    "op_class",
    "flops",
    "bytes",
    "arithmetic_intensity",
    "reductions_per_row",
    "reduction_length",
)

_FLOPS_PER_ELEMENT = {"softmax": 5.0, "ln": 7.0}
_REDUCTIONS_PER_ROW = {"softmax": 2, "ln": 2}


def _row_label(frame: pd.DataFrame, position: int) -> str:
    return f"row {frame.index[position]!r}"


class _Ops:
    """The rows' operators as codes into their distinct names (``pandas.factorize``).

    ``operator_work`` asks a dozen questions of the operators per call; answering them on
    the distinct names and indexing by code keeps a one-row query cheap (its latency is
    mostly such fixed costs) and a corpus of 10^5 rows vectorized.
    """

    def __init__(self, codes: np.ndarray, names: np.ndarray):
        self.codes, self.names = codes, names

    def __getitem__(self, position: int) -> str:
        return str(self.names[self.codes[position]])

    def isin(self, wanted) -> np.ndarray:
        """Rows whose operator is one of ``wanted`` (a boolean array)."""
        wanted = set(wanted)
        return np.array([name in wanted for name in self.names], dtype=bool)[self.codes]

    def lookup(self, table: dict, default, dtype=object) -> np.ndarray:
        """``table[op]`` per row (``default`` for an op not in it)."""
        return np.array([table.get(name, default) for name in self.names], dtype=dtype)[self.codes]


def _ops(frame: pd.DataFrame) -> _Ops:
    if "op" not in frame.columns:
        raise OperatorWorkError(
            "operator rows need an 'op' column naming the operator; add it (one of "
            f"{', '.join(OP_CLASS)})"
        )
    codes, names = pd.factorize(frame["op"].astype("string").fillna("").to_numpy(dtype=object))
    ops = _Ops(codes, np.asarray(names, dtype=object))
    known = ops.isin(OP_CLASS)
    if not known.all():
        position = int(np.flatnonzero(~known)[0])
        raise OperatorWorkError(
            f"{_row_label(frame, position)}: column 'op' holds unknown operator {ops[position]!r}; "
            f"expected one of {', '.join(OP_CLASS)}"
        )
    return ops


#: the largest dimension taken: 2**53, the last whole number every float64 below it holds
MAX_DIMENSION = 2.0**53


def _dimension(frame: pd.DataFrame, ops: _Ops, column: str, needed: np.ndarray, minimum: float) -> np.ndarray:
    """Float values of ``column``, checked on the rows that need it (whole numbers >= minimum)."""
    if not needed.any():
        return np.zeros(len(frame))
    if column not in frame.columns:
        position = int(np.flatnonzero(needed)[0])
        op = ops[position]
        raise OperatorWorkError(
            f"{_row_label(frame, position)}: column {column!r} is missing; operator {op!r} needs "
            f"{', '.join(_needs(op))}; add the column"
        )
    given = frame[column]
    if given.dtype == bool or pd.api.types.is_complex_dtype(given):
        values = np.full(len(frame), np.nan)  # True is no dimension; a complex one has no size
    else:
        values = pd.to_numeric(given, errors="coerce")
        values = np.full(len(frame), np.nan) if pd.api.types.is_complex_dtype(values) else \
            values.to_numpy(dtype=float, na_value=np.nan)
        if given.dtype == object:
            odd = given.map(lambda v: isinstance(v, (bool, np.bool_, complex))).to_numpy(dtype=bool)
            values = np.where(odd, np.nan, values)
    finite = np.isfinite(values)
    # a dimension beyond 2**53 is no whole number a float holds (its work would be rounded or overflow)
    good = finite & (values >= minimum) & (values <= MAX_DIMENSION) & (np.mod(np.where(finite, values, 0.0), 1) == 0)
    bad = needed & ~good
    if bad.any():
        position = int(np.flatnonzero(bad)[0])
        op = ops[position]
        kind = "a positive whole number" if minimum > 0 else "a whole number >= 0"
        shown = given.iloc[position]
        shown = shown.item() if hasattr(shown, "item") else shown
        raise OperatorWorkError(
            f"{_row_label(frame, position)}: column {column!r} must be {kind} for operator {op!r} "
            f"(it needs {', '.join(_needs(op))}; at most 2**53), found {shown!r}; "
            "fill in the dimension"
        )
    return np.where(needed, values, 0.0)


def _needs(op: str) -> tuple[str, ...]:
    dims = DLOPS_OP_DIMS[op]
    return (*dims, "padding") if op == "conv" else dims


def operator_work(frame: pd.DataFrame) -> pd.DataFrame:
    """FLOPs, bytes moved and reduction structure of every operator row (formulas: module docstring).

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per operator call with an ``op`` column and the dimensions the operator
        needs (``B, M, N, K`` for bmm/linear; ``B, H`` for element-wise, softmax and ln;
        ``B, in_channels, out_channels, kernel_size, input_size, stride, padding`` for conv).
        Other columns are ignored.

    Returns
    -------
    pandas.DataFrame
        Indexed like ``frame``, columns :data:`WORK_COLUMNS`: ``op_class``; ``flops``
        (FLOP); ``bytes`` (bytes moved to or from memory, FP32 operands);
        ``arithmetic_intensity`` (FLOP per byte); ``reductions_per_row`` (2 for softmax and
        ln, else 0) and ``reduction_length`` (H for softmax and ln, else 0).

    Raises
    ------
    OperatorWorkError
        If ``op`` is missing or unknown, or a dimension the row's operator needs is missing,
        not a whole number or not positive (padding: negative); the message names the row
        (index label) and the column.
    """
    ops = _ops(frame)
    n = len(frame)
    is_matmul = ops.isin(["bmm", "linear"])
    is_vector = ops.isin([*_EW_BINARY, *_EW_UNARY, "softmax", "ln"])
    is_conv = ops.isin(["conv"])

    b = _dimension(frame, ops, "B", np.ones(n, dtype=bool), 1)
    m, nn, k = (_dimension(frame, ops, c, is_matmul, 1) for c in ("M", "N", "K"))
    h = _dimension(frame, ops, "H", is_vector, 1)
    c_in, c_out, ksize, size, stride = (
        _dimension(frame, ops, c, is_conv, 1)
        for c in ("in_channels", "out_channels", "kernel_size", "input_size", "stride")
    )
    padding = _dimension(frame, ops, "padding", is_conv, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out_size = np.where(is_conv, np.floor((size + 2 * padding - ksize) / np.where(is_conv, stride, 1)) + 1, 0.0)
    too_small = is_conv & (out_size < 1)
    if too_small.any():
        position = int(np.flatnonzero(too_small)[0])
        raise OperatorWorkError(
            f"{_row_label(frame, position)}: columns 'kernel_size', 'input_size', 'padding' give an empty "
            f"conv output (input_size + 2 padding < kernel_size); fix the dimensions"
        )

    flops = np.zeros(n)
    elements = np.zeros(n)  # FP32 elements moved
    # bmm / linear
    matmul = 2.0 * b * m * nn * k
    is_bmm = ops.isin(["bmm"])
    is_linear = ops.isin(["linear"])
    flops = np.where(is_bmm, matmul, flops)
    elements = np.where(is_bmm, b * m * nn + b * nn * k + b * m * k, elements)
    flops = np.where(is_linear, matmul + b * m * k, flops)
    elements = np.where(is_linear, b * m * nn + k * nn + k + b * m * k, elements)
    # element-wise
    bh = b * h
    binary = ops.isin(_EW_BINARY)
    unary = ops.isin(_EW_UNARY)
    flops = np.where(binary | unary, bh, flops)
    elements = np.where(binary, 3 * bh, elements)
    elements = np.where(unary, 2 * bh, elements)
    # softmax / layer norm: two reductions over H per row
    for op, per_element in _FLOPS_PER_ELEMENT.items():
        flops = np.where(ops.isin([op]), per_element * bh, flops)
    elements = np.where(ops.isin(["softmax"]), 2 * bh, elements)
    elements = np.where(ops.isin(["ln"]), 2 * bh + 2 * h + 2 * b, elements)
    # conv2d (direct algorithm)
    flops = np.where(is_conv, 2.0 * b * c_out * out_size**2 * c_in * ksize**2, flops)
    elements = np.where(is_conv, b * c_in * size**2 + c_out * c_in * ksize**2 + b * c_out * out_size**2, elements)

    nbytes = BYTES_PER_ELEMENT * elements  # finite: seven dimensions of at most 2**53 multiply to under 2**372
    reductions = ops.lookup(_REDUCTIONS_PER_ROW, 0, dtype=np.int64)
    return pd.DataFrame(
        {
            "op_class": pd.array(ops.lookup(dict(OP_CLASS), ""), dtype="string"),
            "flops": flops,
            "bytes": nbytes,
            "arithmetic_intensity": flops / nbytes,
            "reductions_per_row": reductions,
            "reduction_length": np.where(reductions > 0, h, 0.0),
        },
        index=frame.index,
    )
