"""Safe, vectorized evaluation of the index expressions in a CuMAPz description.

A description writes global and shared-memory indices, guards and launch sizes as
C-like integer expressions of the block index, the thread index and loop variables
(``"(by*16 + ty)*MAX + bx*16 + tx + 1"``, ``"tx < BLKDIM - 1"``). They are parsed once
with :mod:`ast`; only the node types listed below are accepted, so a description file
can never run code. Evaluation is vectorized: a name may be bound to a NumPy array
(one element per emulated thread) and the whole expression is computed at once.

Semantics follow CUDA C on non-negative integers: ``/`` and ``//`` are integer
(floor) division, ``%`` is the remainder, comparisons give booleans, ``and``/``or``/
``not`` are element-wise, ``a if c else b`` is :func:`numpy.where`, and ``min``,
``max``, ``abs`` are element-wise.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from perfml.errors import KernelDescriptionError

__all__ = ["Expr", "compile_expr"]

_BINOPS = {
    ast.Add: np.add,
    ast.Sub: np.subtract,
    ast.Mult: np.multiply,
    ast.Div: np.floor_divide,  # integer division, as in CUDA C on non-negative ints
    ast.FloorDiv: np.floor_divide,
    ast.Mod: np.mod,
    ast.Pow: np.power,
    ast.LShift: np.left_shift,
    ast.RShift: np.right_shift,
    ast.BitAnd: np.bitwise_and,
    ast.BitOr: np.bitwise_or,
    ast.BitXor: np.bitwise_xor,
}
_CMPOPS = {
    ast.Lt: np.less,
    ast.LtE: np.less_equal,
    ast.Gt: np.greater,
    ast.GtE: np.greater_equal,
    ast.Eq: np.equal,
    ast.NotEq: np.not_equal,
}
_FUNCS = {"min": np.minimum, "max": np.maximum, "abs": np.abs}
_ALLOWED = (
    ast.Expression,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.IfExp,
    ast.Call,
    ast.Name,
    ast.Constant,
    ast.Load,
    ast.USub,
    ast.UAdd,
    ast.Not,
    ast.Invert,
    ast.And,
    ast.Or,
    *_BINOPS,
    *_CMPOPS,
)


class Expr:
    """A parsed, validated expression; call :meth:`evaluate` with a name binding."""

    __slots__ = ("text", "names", "_tree", "where")

    def __init__(self, text: str, where: str) -> None:
        self.text = text
        self.where = where
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError as exc:
            raise KernelDescriptionError(
                f"{where}: cannot parse expression {text!r} ({exc.msg}); "
                "write a C-like integer expression such as 'by*16 + ty'"
            ) from None
        names: set[str] = set()
        for node in ast.walk(tree):
            if not isinstance(node, _ALLOWED):
                raise KernelDescriptionError(
                    f"{where}: expression {text!r} uses {type(node).__name__}, which is not "
                    "allowed; only arithmetic, comparisons, and/or/not, 'a if c else b' "
                    "and min/max/abs are accepted"
                )
            if isinstance(node, ast.Call):
                if (
                    not isinstance(node.func, ast.Name)
                    or node.func.id not in _FUNCS
                    or node.keywords
                ):
                    raise KernelDescriptionError(
                        f"{where}: expression {text!r} calls something other than "
                        f"{', '.join(sorted(_FUNCS))}"
                    )
            elif isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, bool)):
                raise KernelDescriptionError(
                    f"{where}: expression {text!r} contains the constant {node.value!r}; "
                    "only numbers are allowed"
                )
        # function names are not variables
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                names.discard(node.func.id)
        self.names = frozenset(names)
        self._tree = tree

    def check_names(self, known: set[str] | frozenset[str]) -> None:
        """Raise :class:`KernelDescriptionError` if the expression uses an unknown name."""
        unknown = sorted(self.names - set(known))
        if unknown:
            raise KernelDescriptionError(
                f"{self.where}: expression {self.text!r} uses undefined name(s) "
                f"{', '.join(unknown)}; known names are {', '.join(sorted(known))}"
            )

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        """Evaluate over ``env`` (scalars or NumPy arrays, broadcast together)."""
        return _eval(self._tree.body, env, self)

    def __repr__(self) -> str:
        return f"Expr({self.text!r})"


def _eval(node: ast.AST, env: Mapping[str, Any], expr: Expr) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        try:
            return env[node.id]
        except KeyError:
            raise KernelDescriptionError(
                f"{expr.where}: expression {expr.text!r} uses undefined name {node.id!r}"
            ) from None
    if isinstance(node, ast.BinOp):
        left = _eval(node.left, env, expr)
        right = _eval(node.right, env, expr)
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        val = _eval(node.operand, env, expr)
        if isinstance(node.op, ast.USub):
            return np.negative(val)
        if isinstance(node.op, ast.UAdd):
            return val
        if isinstance(node.op, ast.Not):
            return np.logical_not(val)
        return np.invert(val)
    if isinstance(node, ast.BoolOp):
        op = np.logical_and if isinstance(node.op, ast.And) else np.logical_or
        vals = [_eval(v, env, expr) for v in node.values]
        return functools.reduce(op, vals)
    if isinstance(node, ast.Compare):
        result = None
        left = _eval(node.left, env, expr)
        for op, comp in zip(node.ops, node.comparators):
            right = _eval(comp, env, expr)
            part = _CMPOPS[type(op)](left, right)
            result = part if result is None else np.logical_and(result, part)
            left = right
        return result
    if isinstance(node, ast.IfExp):
        cond = _eval(node.test, env, expr)
        return np.where(cond, _eval(node.body, env, expr), _eval(node.orelse, env, expr))
    if isinstance(node, ast.Call):
        args = [_eval(a, env, expr) for a in node.args]
        fname = node.func.id  # type: ignore[union-attr]
        fn = _FUNCS[fname]
        if fn is np.abs:
            if len(args) != 1:
                raise KernelDescriptionError(
                    f"{expr.where}: abs() takes one argument in {expr.text!r}"
                )
            return fn(args[0])
        if len(args) < 2:
            raise KernelDescriptionError(
                f"{expr.where}: {fname}() needs at least two arguments in {expr.text!r}"
            )
        return functools.reduce(fn, args)
    raise KernelDescriptionError(  # pragma: no cover - rejected at parse time
        f"{expr.where}: unsupported syntax in {expr.text!r}"
    )


def compile_expr(text: str | int | float, where: str) -> Expr:
    """Parse ``text`` (a number is accepted and turned into its literal)."""
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise KernelDescriptionError(
            f"{where}: expected an expression string or a number, found {text!r}"
        )
    return Expr(str(text), where)
