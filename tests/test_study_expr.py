"""The claim language: what it computes, and everything it refuses."""

from __future__ import annotations

import pytest

from l4slab.studies.expr import MAX_LENGTH, ExprError, MissingValue, Ref, compile_expr

MEASURES = {"time": ["cubic_0", "cubic_3", "bbr_0"], "lost": ["fifo", "codel"]}
VALUES = {
    Ref("time", "cubic_0"): 4.5,
    Ref("time", "cubic_3"): 18.0,
    Ref("time", "bbr_0"): 4.5,
    Ref("lost", "fifo"): 370.0,
    Ref("lost", "codel"): 0.0,
}


def value(text: str) -> float | bool:
    return compile_expr(text, measures=MEASURES).evaluate(VALUES)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("time.cubic_3 / time.cubic_0", 4.0),
        ("(time.cubic_3 - time.cubic_0) * 2 + 1", 28.0),
        ("-time.cubic_0 + +1", -3.5),
        ("max(time.cubic_0, time.cubic_3, 7) / min(time.bbr_0, 9)", 4.0),
        ("mean(time.cubic_0, time.cubic_3)", 11.25),
        ("abs(time.bbr_0 - time.cubic_3)", 13.5),
        ("1e-3 * 2000", 2.0),
        ("time.cubic_0 < time.cubic_3", True),
        ("time.cubic_0 <= time.bbr_0 < time.cubic_3", True),
        ("time.cubic_0 < time.bbr_0 < time.cubic_3", False),
        ("lost.codel == 0 and lost.fifo > 0", True),
        ("lost.codel != 0 or not lost.fifo > 0", False),
        ("True", True),
    ],
)
def test_expressions_evaluate(text, expected):
    assert value(text) == expected


def test_an_expression_lists_its_references_once():
    expr = compile_expr("time.cubic_3 / time.cubic_0 + time.cubic_3", measures=MEASURES)

    assert expr.refs == (Ref("time", "cubic_3"), Ref("time", "cubic_0"))
    assert str(expr.refs[0]) == "time.cubic_3"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("__import__('os').system('true')", "is not allowed; the functions are abs, max"),
        ("__import__('os')", "function '__import__' is not allowed"),
        ("open('/etc/passwd')", "function 'open' is not allowed"),
        ("eval('1')", "function 'eval' is not allowed"),
        ("time.cubic_0.__class__", "write measure.run"),
        ("().__class__.__bases__", "write measure.run"),
        ("time.cubic_0.real(1)", "is not allowed"),
        ("(1).__class__", "write measure.run"),
        ("'text'", "only numbers"),
        ("b'bytes'", "only numbers"),
        ("None", "only numbers"),
        ("time['cubic_0']", "indexing is not allowed"),
        ("[1, 2]", "a list is not allowed"),
        ("(1, 2)", "a tuple is not allowed"),
        ("{1: 2}", "a dict is not allowed"),
        ("lambda: 1", "a lambda is not allowed"),
        ("[x for x in (1, 2)]", "a comprehension is not allowed"),
        ("1 if True else 2", "a conditional expression is not allowed"),
        ("f'{time.cubic_0}'", "an f-string is not allowed"),
        ("(x := 1)", "an assignment expression is not allowed"),
        ("2 ** 1000", "operator '**' is not allowed"),
        ("7 // 2", "operator '//' is not allowed"),
        ("7 % 2", "operator '%' is not allowed"),
        ("~1", "operator '~' is not allowed"),
        ("1 in (1,)", "comparison 'in' is not allowed"),
        ("time.cubic_0 is time.bbr_0", "comparison 'is' is not allowed"),
        ("max(a=1, b=2)", "keyword arguments are not allowed"),
        ("max(*time.cubic_0)", "*arguments are not allowed"),
        ("max(1)", "max() takes at least 2 arguments"),
        ("abs(1, 2)", "abs() takes one argument"),
        ("max", "max is a function"),
        ("x + 1", "unknown name 'x'"),
        ("time + 1", "time is a measure with a value per run; name the run, e.g. time.cubic_0"),
        ("tme.cubic_0", "unknown measure 'tme'; measures here: lost, time"),
        ("time.fifo", "measure 'time' has no run 'fifo'; its runs: cubic_0, cubic_3, bbr_0"),
        ("1" * 400, "the number is too large"),
        ("1 +", "is not a valid expression"),
        ("", "an empty expression"),
        ("import os", "is not a valid expression"),
    ],
)
def test_unsafe_or_unknown_expressions_are_refused(text, message):
    with pytest.raises(ExprError) as info:
        compile_expr(text, measures=MEASURES)

    assert message in str(info.value)


def test_length_and_size_limits():
    with pytest.raises(ExprError, match=f"at most {MAX_LENGTH}"):
        compile_expr("1+" * MAX_LENGTH + "1")
    with pytest.raises(ExprError, match="syntax nodes"):
        compile_expr("+".join(["time.cubic_0"] * 70), measures=MEASURES)


def test_refusals_never_run_anything(tmp_path):
    marker = tmp_path / "ran"
    for text in (
        f"__import__('pathlib').Path({str(marker)!r}).touch()",
        f"open({str(marker)!r}, 'w')",
    ):
        with pytest.raises(ExprError):
            compile_expr(text, measures=MEASURES)
    assert not marker.exists()


def test_evaluation_errors_are_expression_errors():
    zero = {**VALUES, Ref("time", "bbr_0"): 0.0}
    with pytest.raises(ExprError, match="division by zero"):
        compile_expr("time.cubic_0 / time.bbr_0", measures=MEASURES).evaluate(zero)
    missing = {**VALUES, Ref("time", "cubic_3"): None}
    with pytest.raises(MissingValue, match=r"time\.cubic_3 has no value"):
        compile_expr("time.cubic_3 / 2", measures=MEASURES).evaluate(missing)
    with pytest.raises(ExprError, match="is a truth value where a number is needed"):
        value("(time.cubic_0 < 1) + 1")
    with pytest.raises(ExprError, match="is a number where a truth value is needed"):
        value("time.cubic_0 and True")


def test_without_measures_references_are_not_checked():
    expr = compile_expr("anything.goes * 2")

    assert expr.evaluate({Ref("anything", "goes"): 1.5}) == 3.0
