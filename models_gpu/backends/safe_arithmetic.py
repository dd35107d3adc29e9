"""Evaluate integer arithmetic from untrusted text without ``eval``.

Only integer literals, ``+ - * / // %``, unary minus/plus and parentheses are accepted. There is
no ``**`` at all, and with at most ``MAX_EXPRESSION_CHARS`` characters no value can exceed about
10**200, so every expression is cheap. ``/`` is exact (``7 / 2`` is the fraction 7/2).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from fractions import Fraction

MAX_EXPRESSION_CHARS = 200

_BINARY: Mapping[type[ast.operator], Callable[[Fraction, Fraction], Fraction | int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}


class UnsupportedExpression(ValueError):
    pass


def evaluate(expression: str) -> Fraction:
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise UnsupportedExpression(f"longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        raise UnsupportedExpression(f"not an expression: {expression!r}") from error
    return _evaluate_node(tree.body)


def _evaluate_node(node: ast.expr) -> Fraction:
    if isinstance(node, ast.Constant) and type(node.value) is int:  # not bool, float, str
        return Fraction(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _evaluate_node(node.operand)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate_node(node.left), _evaluate_node(node.right)
        if right == 0 and isinstance(node.op, ast.Div | ast.FloorDiv | ast.Mod):
            raise UnsupportedExpression("division by zero")
        return Fraction(_BINARY[type(node.op)](left, right))
    raise UnsupportedExpression(f"{type(node).__name__} is not allowed in arithmetic")
