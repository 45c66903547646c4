"""A safe evaluator for the arithmetic expressions written in kernel sidecars.

Sidecars say things like ``elements = "threads * ITERS"`` or
``blocks = "ceil(N/16)**2"``. Those strings are parsed with :mod:`ast` and only a
whitelist of nodes is evaluated: numbers, names bound in the namespace, ``+ - * /
// % **``, unary ``+ -``, comparisons and a few functions (``ceil``, ``floor``,
``min``, ``max``, ``int``, ``abs``, ``log2``). Nothing else (attributes,
subscripts, lambdas, arbitrary calls) is ever executed.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Mapping

__all__ = ["ExpressionError", "evaluate", "names_in"]


class ExpressionError(ValueError):
    """An expression is not in the allowed subset or refers to an unknown name."""


_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_COMPARE = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_FUNCTIONS = {
    "ceil": math.ceil,
    "floor": math.floor,
    "min": min,
    "max": max,
    "int": int,
    "abs": abs,
    "log2": math.log2,
}
_MAX_EXPONENT = 64


def _eval(node: ast.AST, names: Mapping[str, float], text: str) -> float:
    if isinstance(node, ast.Expression):
        return _eval(node.body, names, text)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(
        node.value, bool
    ):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in names:
            return names[node.id]
        known = ", ".join(sorted(names)) or "none"
        raise ExpressionError(f"unknown name {node.id!r} in {text!r} (known names: {known})")
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left = _eval(node.left, names, text)
        right = _eval(node.right, names, text)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_EXPONENT:
            raise ExpressionError(f"exponent {right} too large in {text!r}")
        try:
            return _BINOPS[type(node.op)](left, right)
        except ZeroDivisionError as exc:
            raise ExpressionError(f"division by zero in {text!r}") from exc
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand, names, text))
    if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        left = _eval(node.left, names, text)
        for op, comparator in zip(node.ops, node.comparators):
            right = _eval(comparator, names, text)
            if not _COMPARE[type(op)](left, right):
                return 0
            left = right
        return 1
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        args = [_eval(a, names, text) for a in node.args]
        return _FUNCTIONS[node.func.id](*args)
    raise ExpressionError(
        f"{type(node).__name__} is not allowed in {text!r}; use numbers, parameter names, "
        f"+ - * / // % **, comparisons and {', '.join(sorted(_FUNCTIONS))}()"
    )


def evaluate(expression: str | int | float, names: Mapping[str, float]) -> float:
    """Evaluate a sidecar expression (or pass a number through).

    Parameters
    ----------
    expression : str, int or float
        The expression, e.g. ``"ceil(N/16)**2"``.
    names : mapping
        Values of the names the expression may use.

    Raises
    ------
    ExpressionError
        If the expression uses anything outside the whitelist or an unknown name.
    """
    if isinstance(expression, bool):
        raise ExpressionError(f"expected a number or an expression string, found {expression!r}")
    if isinstance(expression, (int, float)):
        return expression
    if not isinstance(expression, str):
        raise ExpressionError(
            f"expected a number or an expression string, found {type(expression).__name__}"
        )
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse {expression!r}: {exc.msg}") from exc
    return _eval(tree, names, expression)


def names_in(expression: str | int | float) -> set[str]:
    """Names an expression refers to (empty for a number); functions excluded."""
    if not isinstance(expression, str):
        return set()
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse {expression!r}: {exc.msg}") from exc
    return {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id not in _FUNCTIONS
    }
