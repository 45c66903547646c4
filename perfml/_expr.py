"""A small, safe evaluator for the arithmetic expressions found in data files.

Kernel descriptions and the upstream BSP tables write work counts as expressions of
the input size (``"N*2"``, ``"ceil(N/16)^2"``, ``"100*N/threads"``). They are parsed
with :mod:`ast` and only numbers, named variables, ``+ - * / // % **`` (``^`` is read
as a power with R's precedence), unary minus and a few functions are accepted; anything else is
rejected, so a data file can never run code. Variables may be NumPy arrays.
"""

from __future__ import annotations

import ast
import functools
import math
from collections.abc import Mapping

import numpy as np

_FUNCS = {
    "ceil": np.ceil,
    "floor": np.floor,
    "log2": np.log2,
    "sqrt": np.sqrt,
    "min": np.minimum,
    "max": np.maximum,
    "abs": np.abs,
}
_BINOPS = {
    ast.Add: np.add,
    ast.Sub: np.subtract,
    ast.Mult: np.multiply,
    ast.Div: np.true_divide,
    ast.FloorDiv: np.floor_divide,
    ast.Mod: np.mod,
    ast.Pow: np.power,
}


class ExpressionError(ValueError):
    """An expression is malformed or uses something that is not allowed."""


@functools.lru_cache(maxsize=512)
def _parse(text: str) -> ast.Expression:
    try:
        # "^" is a power in R (and binds tighter than "*"): rewrite it before parsing.
        tree = ast.parse(text.strip().replace("^", "**"), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse expression {text!r}: {exc.msg}") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCS or node.keywords:
                raise ExpressionError(
                    f"expression {text!r} calls something other than {', '.join(sorted(_FUNCS))}"
                )
        elif not isinstance(
            node,
            (ast.Expression, ast.BinOp, ast.UnaryOp, ast.USub, ast.UAdd, ast.Constant, ast.Name, ast.Load)
            + tuple(_BINOPS),
        ):
            raise ExpressionError(f"expression {text!r} uses {type(node).__name__}, which is not allowed")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
            raise ExpressionError(f"expression {text!r} has a non-numeric constant {node.value!r}")
    return tree


def variables(text: str) -> set[str]:
    """Names an expression refers to (function names excluded)."""
    tree = _parse(str(text))
    funcs = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - funcs


def evaluate(text: str | int | float, env: Mapping[str, object] | None = None):
    """Evaluate ``text`` with the variables of ``env`` (numbers or NumPy arrays).

    Raises
    ------
    ExpressionError
        On a syntax error, a forbidden construct or an unknown variable.
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return text
    env = dict(env or {})
    tree = _parse(str(text))

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in env:
                raise ExpressionError(
                    f"expression {text!r} uses unknown variable {node.id!r}; known: {', '.join(sorted(env)) or 'none'}"
                )
            return env[node.id]
        if isinstance(node, ast.UnaryOp):
            value = ev(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp):
            return _BINOPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.Call):
            return _FUNCS[node.func.id](*[ev(a) for a in node.args])
        raise ExpressionError(f"unsupported node in {text!r}")  # pragma: no cover - _parse rejects

    result = ev(tree)
    if np.ndim(result) == 0:
        value = float(result)
        return int(value) if value.is_integer() and math.isfinite(value) and abs(value) < 2**53 else value
    return np.asarray(result, dtype=float)
