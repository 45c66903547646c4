"""One safe evaluator for the expressions found in data files, with three dialects.

Data files write counts, sizes and indices as small expressions: the BSP tables and
kernel descriptions (``"N*2"``, ``"ceil(N/16)^2"``), kernel sidecars
(``"REPS*ITERS*(OP == 1)"``) and CuMAPz descriptions
(``"(by*16 + ty)*MAX + bx*16 + tx"``, ``"tx < BLKDIM - 1"``). They are parsed with
:mod:`ast`, checked against a dialect's whitelist, and evaluated by walking the tree;
nothing else (attributes, subscripts, lambdas, arbitrary calls) is ever executed, so
a data file can never run code.

Dialects
--------
``arith``
    Real arithmetic, vectorized: names may be NumPy arrays, every value is a float64.
    ``+ - * / // % **``, unary ``+ -``, and ``^`` read as a power with R's
    precedence (the upstream R scripts write ``N^2``); functions ``ceil floor log2
    sqrt min max abs``. A scalar result that is a whole number below 2**53 comes back
    as an ``int``, another scalar as a ``float``, an array result as a float array.
``sidecar``
    Scalar Python arithmetic on the parameters of one launch: ``+ - * / // % **``,
    unary ``+ -``, comparisons (giving 1 or 0, so ``REPS*(OP == 1)`` selects a term);
    functions ``ceil floor min max int abs log2``. ``^`` is not accepted (write ``**``).
``cumapz``
    CUDA C integer semantics, vectorized over emulated threads: ``/`` and ``//`` on
    integers divide truncating toward zero and ``%`` takes the sign of the dividend, as
    in C (``(tx - 32) / 32`` is 0 for thread 1, not -1); a division by zero gives 0,
    because both branches of ``a if c else b`` are evaluated and a guarded divisor is
    zero in the branch not taken), ``** << >> & | ^``, comparisons give
    booleans, ``and or not`` are element-wise, ``a if c else b`` is
    :func:`numpy.where`, ``~``; functions ``min max abs``.

Bounded cost
------------
Every expression is checked before it is evaluated: at most :data:`MAX_LENGTH`
characters, :data:`MAX_NODES` syntax-tree nodes and :data:`MAX_DEPTH` levels of
nesting. While it is evaluated, an integer value must stay within int64
(``|x| <= 2**63 - 1``; an overflow is an error, never a wrap-around) and a real
value must be finite. The operands of ``**`` and ``<<`` are checked *before* the
power is computed, so ``9^9^9`` or ``((9**64)**64)**64`` fail at once instead of
building a number with billions of digits. Every violation raises
:class:`~perfml.errors.ExpressionError` naming the expression and the limit.
"""

from __future__ import annotations

import ast
import functools
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from perfml.errors import ExpressionError

__all__ = [
    "ARITH",
    "CUMAPZ",
    "DIALECTS",
    "SIDECAR",
    "Dialect",
    "Expression",
    "ExpressionError",
    "MAX_DEPTH",
    "MAX_LENGTH",
    "MAX_NODES",
    "compile_expr",
    "evaluate",
    "evaluate_sidecar",
    "names_in",
    "names_in_sidecar",
    "parse",
    "variables",
]

#: longest accepted expression, in characters
MAX_LENGTH = 1000
#: most syntax-tree nodes (operators and names included) in one expression
MAX_NODES = 256
#: deepest nesting of the syntax tree
MAX_DEPTH = 32
#: largest integer magnitude (int64)
INT_MAX = 2**63 - 1
_INT_LIMIT_F = float(2**63)


# --------------------------------------------------------------------------- dialects


@dataclass(frozen=True, eq=False)
class Dialect:
    """What one family of data files may write, and how it is evaluated.

    Attributes
    ----------
    name : str
        ``"arith"``, ``"sidecar"`` or ``"cumapz"``.
    kind : {"real", "scalar", "integer"}
        ``real``: vectorized float64; ``scalar``: Python numbers; ``integer``:
        vectorized with C integer semantics.
    binops : frozenset of type
        Accepted :mod:`ast` binary operators.
    unary : frozenset of type
        Accepted :mod:`ast` unary operators.
    functions : mapping
        Function name -> (minimum, maximum) number of arguments (``None``: no maximum).
    comparisons, logic : bool
        Whether comparisons, and ``and/or/not`` with ``a if c else b``, are accepted.
    caret_is_power : bool
        Read ``^`` as ``**`` (R style) before parsing.
    """

    name: str
    kind: str
    binops: frozenset
    unary: frozenset
    functions: Mapping[str, tuple[int, int | None]]
    comparisons: bool = False
    logic: bool = False
    caret_is_power: bool = False

    def parse(self, text: str | int | float) -> Expression:
        """Parse and validate ``text`` in this dialect (see :func:`parse`)."""
        return parse(text, self)

    def evaluate(self, text: str | int | float, env: Mapping[str, Any] | None = None) -> Any:
        """Evaluate ``text`` in this dialect (see :func:`evaluate`)."""
        return evaluate(text, env, dialect=self)

    def names_in(self, text: str | int | float) -> set[str]:
        """Names ``text`` refers to (see :func:`names_in`)."""
        return names_in(text, dialect=self)


_ARITH_OPS = frozenset({ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow})
_BIT_OPS = frozenset({ast.LShift, ast.RShift, ast.BitAnd, ast.BitOr, ast.BitXor})
_SIGN = frozenset({ast.USub, ast.UAdd})

ARITH = Dialect(
    "arith", "real", _ARITH_OPS, _SIGN,
    {"ceil": (1, 1), "floor": (1, 1), "log2": (1, 1), "sqrt": (1, 1), "abs": (1, 1),
     "min": (2, None), "max": (2, None)},
    caret_is_power=True,
)
SIDECAR = Dialect(
    "sidecar", "scalar", _ARITH_OPS, _SIGN,
    {"ceil": (1, 1), "floor": (1, 1), "int": (1, 1), "abs": (1, 1), "log2": (1, 1),
     "min": (2, None), "max": (2, None)},
    comparisons=True,
)
CUMAPZ = Dialect(
    "cumapz", "integer", _ARITH_OPS | _BIT_OPS, _SIGN | {ast.Not, ast.Invert},
    {"min": (2, None), "max": (2, None), "abs": (1, 1)},
    comparisons=True, logic=True,
)
DIALECTS = {d.name: d for d in (ARITH, SIDECAR, CUMAPZ)}

_CMP = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
_SYMBOL = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
    ast.Mod: "%", ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&",
    ast.BitOr: "|", ast.BitXor: "^",
}


def _dialect(dialect: str | Dialect) -> Dialect:
    if isinstance(dialect, Dialect):
        return dialect
    try:
        return DIALECTS[dialect]
    except KeyError:
        raise ExpressionError(
            f"unknown expression dialect {dialect!r}; expected one of {', '.join(DIALECTS)}"
        ) from None


def _show(text: str) -> str:
    return repr(text if len(text) <= 80 else text[:77] + "...")


# --------------------------------------------------------------------------- parsing


@dataclass(frozen=True)
class Expression:
    """A parsed, validated expression of one dialect.

    Attributes
    ----------
    text : str
        The source text.
    dialect : Dialect
    names : frozenset of str
        The variables it refers to (function names excluded).
    where : str or None
        Where it was written (``"file.toml: [let] row"``); prefixes every error message.
    """

    text: str
    dialect: Dialect
    names: frozenset
    tree: ast.Expression
    where: str | None = None

    def at(self, where: str | None) -> Expression:
        """The same expression, with errors prefixed by ``where``."""
        return replace(self, where=where)

    def error(self, problem: str) -> ExpressionError:
        """An :class:`ExpressionError` naming this expression (and where it was written)."""
        prefix = f"{self.where}: " if self.where else ""
        return ExpressionError(f"{prefix}expression {_show(self.text)} {problem}")

    def check_names(self, known) -> None:
        """Raise :class:`ExpressionError` if the expression uses a name not in ``known``."""
        unknown = sorted(self.names - set(known))
        if unknown:
            raise self.error(
                f"uses undefined name(s) {', '.join(unknown)}; known names are "
                f"{', '.join(sorted(known)) or 'none'}"
            )

    def evaluate(self, env: Mapping[str, Any] | None = None) -> Any:
        """Evaluate over ``env`` (see the module docstring for each dialect's semantics)."""
        return _Evaluator(self, env or {}).run()

    def __repr__(self) -> str:
        return f"Expression({self.text!r}, dialect={self.dialect.name!r})"


def _depth(node: ast.AST) -> int:
    children = list(ast.iter_child_nodes(node))
    return 1 + max((_depth(c) for c in children), default=0)


@functools.lru_cache(maxsize=2048)
def _parse_cached(text: str, dialect: Dialect) -> Expression:
    probe = Expression(text, dialect, frozenset(), ast.Expression(body=ast.Constant(0)))
    if len(text) > MAX_LENGTH:
        raise probe.error(
            f"is {len(text)} characters long; the limit is MAX_LENGTH = {MAX_LENGTH}; "
            "split it into named sub-expressions"
        )
    source = text.strip()
    if dialect.caret_is_power:
        source = source.replace("^", "**")
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise probe.error(f"cannot be parsed ({exc.msg}); write an arithmetic expression "
                          "such as 'ceil(N/16)*2'") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise probe.error(f"cannot be parsed ({type(exc).__name__}); write a short "
                          "arithmetic expression") from None
    nodes = list(ast.walk(tree))
    if len(nodes) > MAX_NODES:
        raise probe.error(
            f"has {len(nodes)} syntax nodes; the limit is MAX_NODES = {MAX_NODES}; "
            "split it into named sub-expressions"
        )
    depth = _depth(tree)
    if depth > MAX_DEPTH:
        raise probe.error(
            f"is nested {depth} levels deep; the limit is MAX_DEPTH = {MAX_DEPTH}; "
            "split it into named sub-expressions"
        )
    names: set[str] = set()
    funcs: set[str] = set()
    for node in nodes:
        _validate(node, dialect, probe)
        if isinstance(node, ast.Call):
            funcs.add(node.func.id)  # type: ignore[union-attr]
        elif isinstance(node, ast.Name):
            names.add(node.id)
    return Expression(text, dialect, frozenset(names - funcs), tree)


def _allowed_text(d: Dialect) -> str:
    ops = " ".join(_SYMBOL[o] for o in _SYMBOL if o in d.binops)
    parts = [f"numbers, names, {ops}"]
    if d.caret_is_power:
        parts.append("^ (power)")
    if d.comparisons:
        parts.append("comparisons")
    if d.logic:
        parts.append("and/or/not, 'a if c else b'")
    parts.append(f"{', '.join(sorted(d.functions))}()")
    return "; ".join(parts)


def _validate(node: ast.AST, d: Dialect, probe: Expression) -> None:
    def refuse(what: str) -> ExpressionError:
        return probe.error(f"uses {what}, which the {d.name} dialect does not allow; "
                           f"allowed: {_allowed_text(d)}")

    if isinstance(node, (ast.Expression, ast.Name, ast.Load)):
        return
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) and d.logic:
            return
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise probe.error(f"has the constant {node.value!r}; only numbers are allowed")
        if isinstance(node.value, float) and not math.isfinite(node.value):
            raise probe.error(f"has the non-finite constant {node.value!r}")
        if isinstance(node.value, int) and abs(node.value) > INT_MAX:
            raise probe.error(f"has the constant {node.value}, beyond the integer limit 2**63 - 1")
        return
    if isinstance(node, ast.BinOp):
        if type(node.op) not in d.binops:
            raise refuse(f"the operator {_SYMBOL.get(type(node.op), type(node.op).__name__)!r}")
        return
    if isinstance(node, tuple(d.binops)) or isinstance(node, tuple(d.unary)):
        return
    if isinstance(node, ast.UnaryOp):
        if type(node.op) not in d.unary:
            raise refuse(type(node.op).__name__)
        return
    if isinstance(node, ast.Compare) and d.comparisons:
        for op in node.ops:
            if not isinstance(op, _CMP):
                raise refuse(type(op).__name__)
        return
    if isinstance(node, _CMP) and d.comparisons:
        return
    if isinstance(node, (ast.BoolOp, ast.IfExp, ast.And, ast.Or)) and d.logic:
        return
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in d.functions or node.keywords:
            raise probe.error(f"calls something other than {', '.join(sorted(d.functions))}")
        lo, hi = d.functions[node.func.id]
        if len(node.args) < lo or (hi is not None and len(node.args) > hi):
            want = str(lo) if lo == hi else f"at least {lo}"
            raise probe.error(f"calls {node.func.id}() with {len(node.args)} argument(s); "
                              f"it takes {want}")
        return
    raise refuse(type(node).__name__)


def parse(text: str | int | float, dialect: str | Dialect = "arith") -> Expression:
    """Parse and validate ``text`` (a number is turned into its literal).

    Raises
    ------
    ExpressionError
        On a syntax error, a construct the dialect does not allow, or an expression
        over the size limits.
    """
    d = _dialect(dialect)
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ExpressionError(
            f"expected a number or an expression string, found {type(text).__name__} {text!r}"
        )
    if isinstance(text, float) and not math.isfinite(text):
        raise ExpressionError(f"expected a finite number, found {text!r}")
    return _parse_cached(str(text), d)


def compile_expr(text: str | int | float, where: str | None = None,
                 dialect: str | Dialect = "cumapz") -> Expression:
    """Parse ``text`` and remember ``where`` it was written (for error messages)."""
    try:
        return parse(text, dialect).at(where)
    except ExpressionError as exc:
        if where is None:
            raise
        raise ExpressionError(f"{where}: {exc}") from None


def names_in(text: str | int | float, dialect: str | Dialect = "arith") -> set[str]:
    """Names ``text`` refers to (empty for a number); function names excluded."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return set()
    return set(parse(text, dialect).names)


def variables(text: str) -> set[str]:
    """Names an ``arith`` expression refers to (function names excluded)."""
    return names_in(str(text), ARITH)


def names_in_sidecar(text: str | int | float) -> set[str]:
    """:func:`names_in` in the ``sidecar`` dialect."""
    return names_in(text, SIDECAR)


def evaluate(text: str | int | float, env: Mapping[str, Any] | None = None,
             dialect: str | Dialect = "arith") -> Any:
    """Evaluate ``text`` with the variables of ``env`` in one dialect.

    A number (not a bool) is passed through unchanged.

    Parameters
    ----------
    text : str, int or float
        The expression, e.g. ``"ceil(N/16)^2"``.
    env : mapping, optional
        Values of the names (numbers, or NumPy arrays in the vectorized dialects).
    dialect : {"arith", "sidecar", "cumapz"} or Dialect
        See the module docstring.

    Raises
    ------
    ExpressionError
        On a syntax error, a forbidden construct, an unknown variable, a size or
        magnitude limit exceeded, a division by zero or a non-finite result.
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        if isinstance(text, float) and not math.isfinite(text):
            raise ExpressionError(f"expected a finite number, found {text!r}")
        return text
    return parse(text, dialect).evaluate(env)


def evaluate_sidecar(text: str | int | float, env: Mapping[str, Any] | None = None) -> Any:
    """:func:`evaluate` in the ``sidecar`` dialect."""
    return evaluate(text, env, SIDECAR)


# --------------------------------------------------------------------------- evaluation


def _max_abs(value: Any) -> float:
    """Largest magnitude of a number or array (0 for an empty array)."""
    arr = np.asarray(value)
    if arr.size == 0:
        return 0.0
    if arr.dtype.kind in "iub":
        return float(max(abs(int(arr.max())), abs(int(arr.min()))))
    return float(np.max(np.abs(arr)))


def _is_int(value: Any) -> bool:
    if isinstance(value, (bool, int)):
        return True
    return isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind in "iub"


_NP = {
    ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.true_divide,
    ast.FloorDiv: np.floor_divide, ast.Mod: np.mod, ast.Pow: np.power,
    ast.LShift: np.left_shift, ast.RShift: np.right_shift, ast.BitAnd: np.bitwise_and,
    ast.BitOr: np.bitwise_or, ast.BitXor: np.bitwise_xor,
}
_PY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_NP_CMP = {ast.Lt: np.less, ast.LtE: np.less_equal, ast.Gt: np.greater,
           ast.GtE: np.greater_equal, ast.Eq: np.equal, ast.NotEq: np.not_equal}
_PY_CMP = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
           ast.GtE: operator.ge, ast.Eq: operator.eq, ast.NotEq: operator.ne}


def _reduce(fn: Callable) -> Callable:
    return lambda *args: functools.reduce(fn, args)


_NP_FUNCS: dict[str, Callable] = {
    "ceil": np.ceil, "floor": np.floor, "log2": np.log2, "sqrt": np.sqrt, "abs": np.abs,
    "min": _reduce(np.minimum), "max": _reduce(np.maximum),
}
_PY_FUNCS: dict[str, Callable] = {
    "ceil": math.ceil, "floor": math.floor, "int": int, "abs": abs, "log2": math.log2,
    "min": min, "max": max,
}


class _Evaluator:
    """Walks one expression's tree over one environment, checking every value."""

    def __init__(self, expr: Expression, env: Mapping[str, Any]) -> None:
        self.expr = expr
        self.env = env
        self.kind = expr.dialect.kind
        # where the value being computed is used (None: everywhere): a vectorized
        # ``a if c else b`` computes both branches on every element, and ``c and x`` computes
        # x where c is false, but C evaluates only the branch taken, so a division by zero
        # counts only where its value is used
        self.live = None

    def run(self) -> Any:
        result = self.node(self.expr.tree.body)
        if self.kind == "real":
            if np.ndim(result) == 0:
                value = float(result)
                return int(value) if value.is_integer() and abs(value) < 2**53 else value
            return np.asarray(result, dtype=float)
        if self.kind == "scalar" and isinstance(result, bool):
            return int(result)
        return result

    # -- checks
    def fail(self, problem: str) -> ExpressionError:
        return self.expr.error(problem)

    def checked(self, value: Any, what: str) -> Any:
        """``value`` if it is within the magnitude limits, else an ExpressionError."""
        if isinstance(value, bool):
            return value
        if isinstance(value, int):
            if abs(value) > INT_MAX:
                raise self.fail(f"overflows: {what} exceeds the integer limit 2**63 - 1")
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise self.fail(f"gives a non-finite value ({value}) at {what}; "
                                "real values must stay finite")
            return value
        if isinstance(value, (np.ndarray, np.generic)):
            kind = value.dtype.kind
            if kind == "f":
                if not np.all(np.isfinite(value)):
                    raise self.fail(f"gives a non-finite value at {what}; real values must "
                                    "stay finite (check for a division by zero or an overflow)")
                return value
            if kind in "iub":
                return value
        raise self.fail(f"gives a {type(value).__name__} at {what}; only numbers are allowed")

    # -- nodes
    def node(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return float(node.value) if self.kind == "real" else node.value
        if isinstance(node, ast.Name):
            return self.name(node.id)
        if isinstance(node, ast.BinOp):
            return self.binop(node)
        if isinstance(node, ast.UnaryOp):
            return self.unary(node)
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.BoolOp):
            return self.bool_op(node)
        if isinstance(node, ast.IfExp):
            cond = self.node(node.test)
            body = self.where_live(cond, node.body)
            orelse = self.where_live(np.logical_not(cond), node.orelse)
            return np.where(cond, body, orelse)
        if isinstance(node, ast.Call):
            return self.call(node)
        raise self.fail(f"has an unsupported node {type(node).__name__}")  # pragma: no cover

    def where_live(self, mask: Any, node: ast.AST) -> Any:
        """``node``'s value, computed with only the elements of ``mask`` (within the live ones) live."""
        outer = self.live
        self.live = mask if outer is None else np.logical_and(outer, mask)
        try:
            return self.node(node)
        finally:
            self.live = outer

    def bool_op(self, node: ast.BoolOp) -> Any:
        """``a and b`` / ``a or b`` element by element, each operand live only where C would evaluate it."""
        conjunction = isinstance(node.op, ast.And)
        op = np.logical_and if conjunction else np.logical_or
        result = self.node(node.values[0])
        for value in node.values[1:]:
            reached = np.asarray(result, dtype=bool) if conjunction else np.logical_not(result)
            result = op(result, self.where_live(reached, value))
        return result

    def name(self, name: str) -> Any:
        if name not in self.env:
            known = ", ".join(sorted(self.env)) or "none"
            raise self.fail(f"uses undefined name {name!r}; known names are {known}")
        value = self.env[name]
        if self.kind == "real":
            try:
                value = np.asarray(value, dtype=float)
            except (TypeError, ValueError):
                raise self.fail(f"binds {name!r} to {type(value).__name__}, not a number") from None
            return self.checked(value if value.ndim else np.float64(value), repr(name))
        if self.kind == "scalar":
            if isinstance(value, np.generic):
                value = value.item()
            if not isinstance(value, (int, float)):
                raise self.fail(f"binds {name!r} to {type(value).__name__}, not a number")
            return self.checked(value, repr(name))
        return value

    def unary(self, node: ast.UnaryOp) -> Any:
        value = self.node(node.operand)
        if isinstance(node.op, ast.UAdd):
            return value
        if isinstance(node.op, ast.USub):
            if self.kind == "scalar":
                return -value
            if np.asarray(value).dtype.kind == "b":  # C promotes a bool to int first
                value = np.asarray(value, dtype=np.int64)
            return np.negative(value)
        if isinstance(node.op, ast.Not):
            return np.logical_not(value)
        if not _is_int(value):
            raise self.fail("applies ~ to a non-integer value")
        return np.invert(value)

    def compare(self, node: ast.Compare) -> Any:
        table = _PY_CMP if self.kind == "scalar" else _NP_CMP
        left = self.node(node.left)
        result = None
        for op, comp in zip(node.ops, node.comparators):
            right = self.node(comp)
            part = table[type(op)](left, right)
            if self.kind == "scalar":
                if not part:
                    return 0
            else:
                result = part if result is None else np.logical_and(result, part)
            left = right
        return 1 if self.kind == "scalar" else result

    def call(self, node: ast.Call) -> Any:
        fname = node.func.id  # type: ignore[union-attr]
        args = [self.node(a) for a in node.args]
        fn = (_PY_FUNCS if self.kind == "scalar" else _NP_FUNCS)[fname]
        try:
            with np.errstate(all="ignore"):
                value = fn(*args)
        except (ArithmeticError, ValueError, TypeError) as exc:
            raise self.fail(f"cannot compute {fname}(): {exc}") from None
        return self.checked(value, f"{fname}()")

    def binop(self, node: ast.BinOp) -> Any:
        op = type(node.op)
        left = self.node(node.left)
        right = self.node(node.right)
        what = f"'{_SYMBOL[op]}'"
        if self.kind == "scalar":
            return self.checked(self.py_binop(op, left, right, what), what)
        if op is ast.Pow:
            return self.checked(self.np_power(left, right), what)
        if op is ast.Div and self.kind == "integer":
            op = ast.FloorDiv
        if self.kind == "integer" and _is_int(left) and _is_int(right):
            return self.np_int_binop(op, left, right, what)
        try:
            with np.errstate(all="ignore"):
                value = _NP[op](left, right)
        except (ArithmeticError, ValueError, TypeError) as exc:
            raise self.fail(f"cannot compute {what}: {exc}") from None
        return self.checked(value, what)

    # -- guarded operations
    def pow_bits(self, base: Any, exponent: Any) -> float:
        """Upper bound of log2 |base ** exponent| (positive exponents only)."""
        b = _max_abs(base)
        e = float(np.max(exponent)) if np.size(exponent) else 0.0
        if b <= 1.0 or e <= 0.0:
            return 0.0
        return e * math.log2(b)

    def too_big(self, what: str, limit: str) -> ExpressionError:
        return self.fail(f"overflows: {what} would exceed {limit}; "
                         "keep the values of the expression smaller")

    def py_binop(self, op: type, left: Any, right: Any, what: str) -> Any:
        if op is ast.Pow:
            bits = self.pow_bits(left, right)
            both_int = isinstance(left, int) and isinstance(right, int)
            limit = 63 if both_int else 1024
            if bits > limit + 1:  # checked before computing
                raise self.too_big(f"{left!r} ** {right!r} (about 2**{bits:.0f})",
                                   "the integer limit 2**63 - 1" if both_int
                                   else "the largest finite real (about 1.8e308)")
        try:
            value = _PY[op](left, right)
        except ZeroDivisionError:
            raise self.fail(f"divides by zero at {what}") from None
        except (OverflowError, ValueError, TypeError) as exc:
            raise self.fail(f"cannot compute {what}: {exc}") from None
        if isinstance(value, complex):
            raise self.fail(f"gives a complex number at {what} (a negative base to a "
                            "fractional power)")
        return value

    def np_power(self, base: Any, exponent: Any) -> Any:
        ints = self.kind == "integer" and _is_int(base) and _is_int(exponent)
        if ints and np.size(exponent) and np.min(exponent) < 0:
            raise self.fail("raises an integer to a negative power; integer powers need "
                            "exponents >= 0")
        bits = self.pow_bits(base, exponent)
        limit = 62 if ints else 1022
        if bits > limit:
            # The crude bound may be loose for arrays: decide element by element in
            # float64, which costs one pass and never builds a huge number.
            with np.errstate(all="ignore"):
                approx = np.power(np.asarray(base, dtype=float), np.asarray(exponent, dtype=float))
            cap = _INT_LIMIT_F if ints else np.inf
            if not np.all(np.abs(approx) < cap):
                raise self.too_big(f"a power (base up to {_max_abs(base):g}, exponent up to "
                                   f"{float(np.max(exponent)):g})",
                                   "the integer limit 2**63 - 1" if ints
                                   else "the largest finite real (about 1.8e308)")
            if not ints:
                return approx
        try:
            with np.errstate(all="ignore"):
                return np.power(base, exponent)
        except (ArithmeticError, ValueError, TypeError) as exc:
            raise self.fail(f"cannot compute '**': {exc}") from None

    def np_int_binop(self, op: type, left: Any, right: Any, what: str) -> Any:
        fn = _NP[op]
        if op in (ast.Add, ast.Sub, ast.Mult, ast.LShift):
            a, b = _max_abs(left), _max_abs(right)
            if op is ast.LShift:
                if np.size(right) and np.min(right) < 0:
                    raise self.fail("shifts by a negative amount at '<<'")
                bound = a * 2.0 ** min(b, 64.0)
            else:
                bound = a * b if op is ast.Mult else a + b
            if bound >= _INT_LIMIT_F:
                float_fn = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply,
                            ast.LShift: lambda x, y: x * np.exp2(y)}[op]
                with np.errstate(all="ignore"):
                    approx = float_fn(np.asarray(left, dtype=float), np.asarray(right, dtype=float))
                if not np.all(np.abs(approx) < _INT_LIMIT_F):
                    raise self.too_big(f"{what} (operands up to {a:g} and {b:g})",
                                       "the integer limit 2**63 - 1")
        elif op is ast.RShift and np.size(right) and np.min(right) < 0:
            raise self.fail("shifts by a negative amount at '>>'")
        if op in (ast.FloorDiv, ast.Mod):  # C: the quotient truncates toward zero, the remainder follows
            zero = np.asarray(right) == 0
            if self.live is not None:
                zero = np.logical_and(zero, self.live)
            if np.any(zero):  # numpy gives 0 there, C has no value: a CuMAPz index would silently read address 0
                raise self.fail(f"divides by zero at {what} (guard it: 'a / b if b else 0')")
            with np.errstate(all="ignore"):
                remainder = np.fmod(left, right)
                if op is ast.Mod:
                    return remainder
                quotient = np.floor_divide(left, right)
                # floor and truncation differ where the division is inexact and the signs differ
                return quotient + ((remainder != 0) & ((np.asarray(left) < 0) != (np.asarray(right) < 0)))
        with np.errstate(all="ignore"):
            return fn(left, right)
