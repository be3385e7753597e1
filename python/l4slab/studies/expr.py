"""The claim language: small arithmetic and comparisons over measures, evaluated safely.

A claim's ``expr`` is a Python-syntax expression, parsed with :mod:`ast` and
evaluated by walking the tree; nothing is ever passed to ``eval``. It may use

* numbers (``3``, ``0.5``, ``1e-3``) and ``True`` / ``False``;
* measure values, written ``measure.run`` (e.g. ``time.cubic_3``);
* ``+ - * /``, unary ``-``, parentheses;
* comparisons ``< <= > >= == !=`` (chained: ``a < b < c``), ``and``, ``or``, ``not``;
* the functions ``min(...)``, ``max(...)``, ``mean(...)``, ``abs(x)``.

Anything else — attribute access on anything but a measure, subscripts, strings,
lambdas, comprehensions, keyword arguments, ``**``, other names or functions — is
refused with an :class:`ExprError` that says what is allowed. Expressions are at
most :data:`MAX_LENGTH` characters and :data:`MAX_NODES` syntax nodes.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ALLOWED",
    "FUNCTIONS",
    "MAX_LENGTH",
    "MAX_NODES",
    "Expr",
    "ExprError",
    "MissingValue",
    "Ref",
    "compile_expr",
]

#: Longest expression accepted, in characters.
MAX_LENGTH = 1000
#: Most syntax nodes accepted in one expression.
MAX_NODES = 400

#: One line that says what an expression may contain (ends every refusal).
ALLOWED = (
    "an expression may use numbers, measure.run references, + - * /, comparisons, "
    "and/or/not, and the functions min, max, mean, abs"
)


class ExprError(ValueError):
    """An expression is not in the claim language, or cannot be evaluated."""


class MissingValue(ExprError):
    """A measure referenced by the expression has no value (e.g. a flow never finished)."""


@dataclass(frozen=True, order=True)
class Ref:
    """A reference ``measure.run`` in an expression."""

    measure: str
    run: str

    def __str__(self) -> str:
        return f"{self.measure}.{self.run}"


Number = float | bool


def _mean(*values: float) -> float:
    return math.fsum(values) / len(values)


#: The functions an expression may call: name -> (function, minimum number of arguments).
FUNCTIONS: dict[str, tuple[Callable[..., float], int]] = {
    "min": (min, 2),
    "max": (max, 2),
    "mean": (_mean, 1),
    "abs": (abs, 1),
}
_ONE_ARG = {"abs"}
#: Largest number literal accepted (so that every literal converts to a float).
_LARGEST = 1e300

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
_COMPARE: dict[type[ast.cmpop], Callable[[float, float], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_SYMBOL: dict[type[ast.AST], str] = {
    ast.Pow: "**",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.MatMult: "@",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.Invert: "~",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}


@dataclass(frozen=True)
class Expr:
    """A checked expression: its text, its tree and the measure references it uses."""

    text: str
    tree: ast.Expression
    refs: tuple[Ref, ...]

    def evaluate(self, values: Mapping[Ref, float | None]) -> Number:
        """The value of the expression given every referenced measure value.

        Raises :class:`MissingValue` if a referenced value is ``None`` (or absent),
        and :class:`ExprError` for a division by zero or a non-finite result.
        """
        result: Number = _Evaluator(values).visit(self.tree.body)
        if isinstance(result, float) and not math.isfinite(result):
            raise ExprError(f"{self.text!r} is not a finite number ({result})")
        return result


def compile_expr(
    text: str,
    *,
    measures: Mapping[str, Sequence[str]] | None = None,
) -> Expr:
    """Parse and check ``text``; return an :class:`Expr`.

    ``measures`` maps each measure name to the runs it has values for; when given,
    every ``measure.run`` reference is checked against it (unknown names are
    errors that list the valid ones). Raises :class:`ExprError`.
    """
    if not isinstance(text, str) or not text.strip():
        raise ExprError(f"an empty expression; {ALLOWED}")
    if len(text) > MAX_LENGTH:
        raise ExprError(f"the expression is {len(text)} characters long; at most {MAX_LENGTH}")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"{text!r} is not a valid expression ({exc.msg}); {ALLOWED}") from None
    nodes = sum(1 for _ in ast.walk(tree))
    if nodes > MAX_NODES:
        raise ExprError(f"the expression has {nodes} syntax nodes; at most {MAX_NODES}")
    refs: list[Ref] = []
    _Checker(refs, measures).visit(tree.body)
    return Expr(text.strip(), tree, tuple(dict.fromkeys(refs)))


# --------------------------------------------------------------------------- checking


class _Checker:
    """Walks a tree and refuses every node outside the language."""

    def __init__(self, refs: list[Ref], measures: Mapping[str, Sequence[str]] | None):
        self.refs = refs
        self.measures = measures

    def visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bool):
                return
            if isinstance(value, int | float):
                if abs(value) > _LARGEST:
                    raise ExprError(f"{_show(node)}: the number is too large")
                return
            raise ExprError(f"{_show(node)}: only numbers and True/False are allowed; {ALLOWED}")
        if isinstance(node, ast.Attribute):
            self._reference(node)
            return
        if isinstance(node, ast.Name):
            if node.id in FUNCTIONS:
                raise ExprError(f"{node.id} is a function; call it, e.g. {node.id}(a, b)")
            if self.measures is not None and node.id in self.measures:
                runs = list(self.measures[node.id])
                example = f"{node.id}.{runs[0]}" if runs else f"{node.id}.RUN"
                raise ExprError(
                    f"{node.id} is a measure with a value per run; name the run, e.g. {example}"
                )
            raise ExprError(f"unknown name {node.id!r}; {ALLOWED}")
        if isinstance(node, ast.BinOp):
            if type(node.op) not in _BINARY:
                raise ExprError(f"operator {_op(node.op)} is not allowed; {ALLOWED}")
            self.visit(node.left)
            self.visit(node.right)
            return
        if isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, ast.USub | ast.UAdd | ast.Not):
                raise ExprError(f"operator {_op(node.op)} is not allowed; {ALLOWED}")
            self.visit(node.operand)
            return
        if isinstance(node, ast.BoolOp):
            for operand in node.values:
                self.visit(operand)
            return
        if isinstance(node, ast.Compare):
            for op in node.ops:
                if type(op) not in _COMPARE:
                    raise ExprError(f"comparison {_op(op)} is not allowed; {ALLOWED}")
            self.visit(node.left)
            for comparator in node.comparators:
                self.visit(comparator)
            return
        if isinstance(node, ast.Call):
            self._call(node)
            return
        raise ExprError(f"{_describe(node)} is not allowed: {_show(node)}; {ALLOWED}")

    def _reference(self, node: ast.Attribute) -> None:
        if not isinstance(node.value, ast.Name):
            raise ExprError(f"{_show(node)}: write measure.run, e.g. time.cubic_3; {ALLOWED}")
        ref = Ref(node.value.id, node.attr)
        if self.measures is not None:
            if ref.measure not in self.measures:
                known = ", ".join(sorted(self.measures)) or "none"
                raise ExprError(f"unknown measure {ref.measure!r}; measures here: {known}")
            runs = self.measures[ref.measure]
            if ref.run not in runs:
                known = ", ".join(runs) or "none"
                raise ExprError(
                    f"measure {ref.measure!r} has no run {ref.run!r}; its runs: {known}"
                )
        self.refs.append(ref)

    def _call(self, node: ast.Call) -> None:
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            name = node.func.id if isinstance(node.func, ast.Name) else _show(node.func)
            raise ExprError(
                f"function {name!r} is not allowed; the functions are "
                f"{', '.join(sorted(FUNCTIONS))}"
            )
        name = node.func.id
        if node.keywords:
            raise ExprError(f"{name}(): keyword arguments are not allowed")
        if any(isinstance(arg, ast.Starred) for arg in node.args):
            raise ExprError(f"{name}(): *arguments are not allowed")
        least = FUNCTIONS[name][1]
        if len(node.args) < least or (name in _ONE_ARG and len(node.args) != 1):
            wanted = "one argument" if name in _ONE_ARG else f"at least {least} arguments"
            raise ExprError(f"{name}() takes {wanted}; it got {len(node.args)}")
        for arg in node.args:
            self.visit(arg)


# --------------------------------------------------------------------------- evaluation


class _Evaluator:
    def __init__(self, values: Mapping[Ref, float | None]):
        self.values = values

    def visit(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Attribute):
            assert isinstance(node.value, ast.Name)
            ref = Ref(node.value.id, node.attr)
            value = self.values.get(ref)
            if value is None:
                raise MissingValue(f"{ref} has no value")
            return float(value)
        if isinstance(node, ast.BinOp):
            left, right = self.number(node.left), self.number(node.right)
            if isinstance(node.op, ast.Div) and right == 0:
                raise ExprError(f"division by zero in {ast.unparse(node)}")
            return _BINARY[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                return not self.truth(node.operand)
            value = self.number(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BoolOp):
            if isinstance(node.op, ast.And):
                return all(self.truth(value) for value in node.values)
            return any(self.truth(value) for value in node.values)
        if isinstance(node, ast.Compare):
            left = self.number(node.left)
            for op, comparator in zip(node.ops, node.comparators, strict=True):
                right = self.number(comparator)
                if not _COMPARE[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.Call):
            assert isinstance(node.func, ast.Name)
            function = FUNCTIONS[node.func.id][0]
            return float(function(*(self.number(arg) for arg in node.args)))
        raise ExprError(f"cannot evaluate {_show(node)}")  # pragma: no cover - checked first

    def number(self, node: ast.AST) -> float:
        value = self.visit(node)
        if isinstance(value, bool):
            raise ExprError(f"{ast.unparse(node)} is a truth value where a number is needed")
        return float(value)

    def truth(self, node: ast.AST) -> bool:
        value = self.visit(node)
        if not isinstance(value, bool):
            raise ExprError(f"{ast.unparse(node)} is a number where a truth value is needed")
        return value


def _show(node: ast.AST) -> str:
    try:
        text = ast.unparse(node)
    except Exception:  # pragma: no cover - unparse handles every parsed node
        text = type(node).__name__
    return text if len(text) <= 60 else text[:57] + "..."


def _op(op: ast.AST) -> str:
    return repr(_SYMBOL.get(type(op), type(op).__name__))


def _describe(node: ast.AST) -> str:
    names = {
        ast.Subscript: "indexing",
        ast.Lambda: "a lambda",
        ast.IfExp: "a conditional expression",
        ast.ListComp: "a comprehension",
        ast.SetComp: "a comprehension",
        ast.DictComp: "a comprehension",
        ast.GeneratorExp: "a generator",
        ast.List: "a list",
        ast.Tuple: "a tuple",
        ast.Dict: "a dict",
        ast.Set: "a set",
        ast.JoinedStr: "an f-string",
        ast.NamedExpr: "an assignment expression",
        ast.Await: "await",
        ast.Yield: "yield",
        ast.Starred: "a starred expression",
    }
    return names.get(type(node), type(node).__name__)
