"""Tests of the one expression module, :mod:`perfml._expr`, over its three dialects.

Expected values are worked by hand from the dialect semantics written in the module
docstring (R's ``^`` for ``arith``; Python scalars with comparisons as 0/1 for
``sidecar``; CUDA C integer division for ``cumapz``). The limits are the ones the
module documents (issue 14, section 4: bounded cost of expressions).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfml import _expr
from perfml._expr import (
    ARITH,
    CUMAPZ,
    DIALECTS,
    MAX_DEPTH,
    MAX_LENGTH,
    MAX_NODES,
    SIDECAR,
    compile_expr,
    evaluate,
    names_in,
    parse,
)
from perfml.errors import ExpressionError, PerfmlError

ALL = sorted(DIALECTS)


# --------------------------------------------------------------------------- one error class


def test_expression_error_is_a_perfml_value_error():
    assert issubclass(ExpressionError, PerfmlError)
    assert issubclass(ExpressionError, ValueError)


def test_the_old_modules_are_gone():
    import importlib

    for old in ("perfml.kernels._expr", "perfml.cumapz._expr"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(old)


# --------------------------------------------------------------------------- whitelist


@pytest.mark.parametrize("dialect", ALL)
@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('true')",
        "N.__class__",
        "(lambda: 1)()",
        "[1][0]",
        "open('x')",
        "'a'",
        "N[0]",
        "{N: 1}",
        "f'{N}'",
        "N if N else N[1]",
        "ceil(N, key=1)",
        "N @ N",
        "N in (1, 2)",
        "N is N",
        "(N := 3)",
    ],
)
def test_every_dialect_rejects_code(dialect, text):
    with pytest.raises(ExpressionError):
        evaluate(text, {"N": 4}, dialect=dialect)


@pytest.mark.parametrize("dialect", ALL)
def test_unknown_name_is_named(dialect):
    with pytest.raises(ExpressionError, match="'M'"):
        evaluate("M + 1", {"N": 1}, dialect=dialect)


def test_unknown_dialect_is_a_typed_error():
    with pytest.raises(ExpressionError, match="dialect"):
        evaluate("1", {}, dialect="fortran")


@pytest.mark.parametrize("dialect", ALL)
@pytest.mark.parametrize("value", [True, None, [1], {"a": 1}])
def test_non_expressions_are_refused(dialect, value):
    with pytest.raises(ExpressionError):
        evaluate(value, {}, dialect=dialect)


@pytest.mark.parametrize("dialect", ALL)
def test_numbers_pass_through(dialect):
    assert evaluate(7, {}, dialect=dialect) == 7
    assert evaluate(2.5, {}, dialect=dialect) == 2.5


@pytest.mark.parametrize("dialect", ALL)
def test_names_exclude_functions(dialect):
    assert names_in("max(N, TILE) + abs(M)", dialect) == {"N", "TILE", "M"}
    assert names_in(12, dialect) == set()


@pytest.mark.parametrize(("dialect", "text"), [
    ("arith", "N < 3"), ("arith", "N if N else 1"), ("arith", "N & 1"), ("arith", "int(N)"),
    ("sidecar", "N ^ 2"), ("sidecar", "N and 1"), ("sidecar", "sqrt(N)"), ("sidecar", "N << 1"),
    ("cumapz", "ceil(N)"), ("cumapz", "log2(N)"),
])
def test_each_dialect_has_its_own_whitelist(dialect, text):
    with pytest.raises(ExpressionError, match="allow|calls"):
        parse(text, dialect)


@pytest.mark.parametrize("dialect", ALL)
@pytest.mark.parametrize("text", ["abs(1, 2)", "min(1)", "max()"])
def test_function_arity_is_checked_at_parse_time(dialect, text):
    with pytest.raises(ExpressionError, match="argument"):
        parse(text, dialect)


# --------------------------------------------------------------------------- semantics


def test_arith_reads_caret_as_an_r_power_and_vectorizes():
    assert evaluate("ceil(N/16)^2", {"N": 1000}) == math.ceil(1000 / 16) ** 2
    assert evaluate("2^3^2", {}) == 2 ** 9  # right-associative, as in R
    assert ARITH.evaluate("N^2", {"N": 3}) == evaluate("N**2", {"N": 3}, dialect="arith") == 9
    assert evaluate("-2^2", {}) == -4  # power binds tighter than unary minus, as in R
    assert evaluate("100*N/threads", {"N": 10, "threads": 4}) == 250
    assert isinstance(evaluate("N/4", {"N": 10}), float)
    n = np.array([1.0, 4.0, 16.0])
    np.testing.assert_allclose(evaluate("sqrt(N) + log2(N)", {"N": n}), [1.0, 4.0, 8.0])
    np.testing.assert_allclose(evaluate("max(N, 2, 3)", {"N": n}), [3.0, 4.0, 16.0])


def test_arith_powers_are_real_not_wrapped_int64():
    # np.power(2, 64) on int64 wraps to 0; the arith dialect is real arithmetic
    assert evaluate("2^64", {}) == pytest.approx(2.0**64)
    assert evaluate("N^2", {"N": np.array([2**40])})[0] == pytest.approx(2.0**80)
    assert evaluate("2^-1", {}) == 0.5


def test_sidecar_comparisons_give_one_or_zero():
    names = {"N": 1000, "TILE": 16, "OP": 1}
    assert SIDECAR.evaluate("ceil(N/TILE)**2", names) == math.ceil(1000 / 16) ** 2
    assert SIDECAR.evaluate("max(1, N // 3) + (N == 1000)", names) == 334
    assert SIDECAR.evaluate("2*(OP == 0) + 6*(OP == 1)", names) == 6
    assert SIDECAR.evaluate("0 < OP < 3", names) == 1
    assert SIDECAR.evaluate("1 < OP < 3", names) == 0
    assert SIDECAR.evaluate("int(N / 3)", names) == 333
    assert SIDECAR.evaluate("N", {"N": np.int64(5)}) == 5


def test_cumapz_is_vectorized_c_integer_arithmetic():
    tx = np.arange(6)
    ev = lambda text: CUMAPZ.evaluate(text, {"tx": tx}).tolist()  # noqa: E731
    assert ev("tx / 4") == [0, 0, 0, 0, 1, 1]
    assert ev("(tx + 1) % 3") == [1, 2, 0, 1, 2, 0]
    assert ev("tx if tx < 3 and not tx == 1 else -1") == [0, -1, 2, -1, -1, -1]
    assert ev("min(tx, 2) + max(1, 0)") == [1, 2, 3, 3, 3, 3]
    assert ev("1 <= tx < 3") == [0, 1, 1, 0, 0, 0]
    assert ev("(tx << 2) | 1") == [1, 5, 9, 13, 17, 21]
    assert ev("tx ^ 1") == [1, 0, 3, 2, 5, 4]


def test_compile_expr_prefixes_where_it_was_written():
    expr = compile_expr("tx + 1", "file.toml: [let] row")
    assert expr.names == {"tx"}
    with pytest.raises(ExpressionError, match=r"^file.toml: \[let\] row: .*undefined name\(s\) tx"):
        expr.check_names({"ty"})
    with pytest.raises(ExpressionError, match=r"^file.toml: \[let\] row: "):
        compile_expr("tx.real", "file.toml: [let] row")


# --------------------------------------------------------------------------- bounded cost


@pytest.mark.parametrize("dialect", ALL)
@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("1+" * (MAX_LENGTH // 2) + "1", "MAX_LENGTH"),
        ("+".join(["N"] * (MAX_NODES // 2)), "MAX_NODES"),
        ("(" * (MAX_DEPTH + 1) + "N" + "+1)" * (MAX_DEPTH + 1), "MAX_DEPTH"),
        ("-" * (MAX_DEPTH + 5) + "N", "MAX_DEPTH"),
    ],
)
def test_size_limits_are_named(dialect, text, limit):
    with pytest.raises(ExpressionError, match=limit):
        parse(text, dialect)


@pytest.mark.parametrize("dialect", ALL)
@pytest.mark.parametrize(
    "text",
    [
        "9**9**9",
        "((((9**64)**64)**64)**64)**64",
        "N**N**N**N",
        "2**(2**62)",
        "(N*N*N*N*N*N*N*N)**(N*N*N*N*N*N)",
    ],
)
def test_huge_powers_fail_at_once(dialect, text):
    with pytest.raises(ExpressionError, match="overflow|exceed|non-finite"):
        evaluate(text, {"N": 9}, dialect=dialect)


def test_r_power_tower_in_arith():
    with pytest.raises(ExpressionError, match="9\\^9\\^9"):
        evaluate("9^9^9", {})


@pytest.mark.parametrize("text", ["1/0", "N % 0", "log2(N - N)", "sqrt(-N)", "10.0**400"])
def test_arith_non_finite_results_are_errors(text):
    with pytest.raises(ExpressionError):
        evaluate(text, {"N": np.array([1.0, 2.0])})


@pytest.mark.parametrize("text", ["1/0", "N % 0", "log2(0)", "(-8)**0.5", "2**63", "N*N*N*N*N",
                                  "int(1e300)", "10.0**400", "ceil(1e300)**2"])
def test_sidecar_overflow_and_domain_errors_are_typed(text):
    with pytest.raises(ExpressionError):
        SIDECAR.evaluate(text, {"N": 2**20})


@pytest.mark.parametrize(
    "text",
    ["tx * 2**40 * 2**30", "tx << 70", "tx << 62", "(tx + 2**62) + 2**62", "-tx - 2**62 - 2**62",
     "tx ** 64", "2 ** 63", "9223372036854775807 + tx"],
)
def test_cumapz_integer_overflow_is_an_error_not_a_wrap(text):
    tx = np.arange(1, 9, dtype=np.int64)
    with pytest.raises(ExpressionError, match="overflow"):
        CUMAPZ.evaluate(text, {"tx": tx})


def test_cumapz_loose_bounds_still_compute_exactly():
    # max|a| * max|b| overflows the bound, but no element does: computed exactly
    a = np.array([2**40, 1], dtype=np.int64)
    b = np.array([1, 2**40], dtype=np.int64)
    assert CUMAPZ.evaluate("a * b", {"a": a, "b": b}).tolist() == [2**40, 2**40]
    assert CUMAPZ.evaluate("a ** b", {"a": np.array([2**40, 1]), "b": np.array([1, 2**40])}).tolist() \
        == [2**40, 1]


def test_cumapz_negative_powers_and_shifts_are_typed():
    for text in ("tx ** -1", "tx << -1", "tx >> -1"):
        with pytest.raises(ExpressionError):
            CUMAPZ.evaluate(text, {"tx": np.arange(3)})


def test_integer_literals_beyond_int64_are_refused():
    for d in ALL:
        with pytest.raises(ExpressionError, match="2\\*\\*63 - 1"):
            parse("99999999999999999999 + 1", d)


# --------------------------------------------------------------------------- property


_LEAVES = st.one_of(
    st.integers(min_value=0, max_value=10**6).map(str),
    st.floats(min_value=0, max_value=1e6, allow_nan=False).map(lambda f: repr(round(f, 3))),
    st.sampled_from(["N", "M"]),
)
_OPS = {
    "arith": ["+", "-", "*", "/", "//", "%", "**", "^"],
    "sidecar": ["+", "-", "*", "/", "//", "%", "**", "<", "=="],
    "cumapz": ["+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^", "<"],
}
_FUNCS = {"arith": ["ceil", "floor", "abs", "sqrt", "log2"],
          "sidecar": ["ceil", "floor", "abs", "int", "log2"],
          "cumapz": ["abs"]}


def _trees(dialect: str):
    def extend(children):
        binary = st.tuples(children, st.sampled_from(_OPS[dialect]), children).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})")
        unary = st.tuples(st.sampled_from(_FUNCS[dialect] + ["-"]), children).map(
            lambda t: f"-({t[1]})" if t[0] == "-" else f"{t[0]}({t[1]})")
        pair = st.tuples(st.sampled_from(["min", "max"]), children, children).map(
            lambda t: f"{t[0]}({t[1]}, {t[2]})")
        return st.one_of(binary, unary, pair)

    return st.recursive(_LEAVES, extend, max_leaves=40)


def _env(dialect: str, n: int, m: int):
    if dialect == "sidecar":
        return {"N": n, "M": m}
    if dialect == "cumapz":
        return {"N": np.arange(n % 97, n % 97 + 8, dtype=np.int64), "M": m}
    return {"N": np.array([n, n + 1.5]), "M": m}


def _finite(value) -> bool:
    arr = np.asarray(value)
    return arr.dtype.kind in "iub" or bool(np.all(np.isfinite(arr)))


@pytest.mark.parametrize("dialect", ALL)
@settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), n=st.integers(0, 2**31), m=st.integers(-(2**31), 2**31))
def test_random_expressions_evaluate_to_a_finite_value_or_raise_expression_error(
        dialect, data, n, m):
    text = data.draw(_trees(dialect))
    try:
        value = evaluate(text, _env(dialect, n, m), dialect=dialect)
    except ExpressionError:
        return
    assert _finite(value), (text, value)
    if np.asarray(value).dtype.kind in "iu":
        assert np.all(np.abs(np.asarray(value, dtype=object)) <= _expr.INT_MAX)


@pytest.mark.parametrize("dialect", ALL)
@settings(max_examples=100, deadline=2000)
@given(text=st.text(max_size=60))
def test_random_text_never_raises_anything_but_expression_error(dialect, text):
    try:
        evaluate(text, {"N": 3}, dialect=dialect)
    except ExpressionError:
        pass


@pytest.mark.parametrize("dialect", ALL)
@settings(max_examples=100, deadline=2000)
@given(base=st.integers(-(2**62), 2**62), exp=st.integers(0, 2**62))
def test_powers_are_bounded_before_they_are_computed(dialect, base, exp):
    try:
        value = evaluate(f"({base}) ** {exp}", {}, dialect=dialect)
    except ExpressionError:
        assert exp * math.log2(max(abs(base), 1)) > 62
        return
    if dialect != "arith":
        assert value == base**exp  # exact: no wrap-around


# --------------------------------------------------------------------------- a sidecar in use

_SIDECAR = """
name = "k"
kind = "static"
source = "k.cu"
entry = "k"
component = "FPU"
target = "FFMA"
description = "d"
archs = ["sm_90"]
[params]
ITERS = { default = 4 }
[launch]
threads_per_block = 32
blocks_per_sm = 1
[[args]]
name = "out"
kind = "buffer"
dtype = "float32"
elements = "ELEMENTS"
[validation]
kind = "untouched"
buffer = "out"
"""


@pytest.mark.parametrize("expr", ["((((9**64)**64)**64)**64)**64", "ITERS**ITERS**ITERS**ITERS",
                                  "2**62 * 4", "threads * 10**18"])
def test_a_sidecar_expression_of_unbounded_cost_is_a_typed_sidecar_error(tmp_path, expr):
    """Issue 14 section 4: a sidecar expression `((((9**64)**64)**64)**64)**64` ran forever."""
    from perfml.kernels.catalog import load_family

    (tmp_path / "k.cu").write_text('extern "C" __global__ void k(float* out) {}\n')
    (tmp_path / "k.toml").write_text(_SIDECAR.replace('"ELEMENTS"', repr(expr).replace("'", '"')))
    with pytest.raises(PerfmlError, match="overflow"):  # evaluated at the defaults when loaded
        load_family(tmp_path / "k.toml")


def test_cumapz_integer_division_and_remainder_are_cs():
    """CuMAPz index expressions model CUDA C: the quotient truncates toward zero and the remainder takes
    the dividend's sign. In C, ((tx - 32) / 32) * 64 + tx + 64 reads element 0 for thread 0 and 65-95
    for threads 1-31; floor division read 1-31, and the analysis found a coalesced access."""
    import numpy as np

    from perfml._expr import evaluate

    tx = np.arange(64)
    got = evaluate("((tx - 32) / 32) * 64 + tx + 64", {"tx": tx}, dialect="cumapz")
    want = np.array([(int((t - 32) / 32)) * 64 + t + 64 for t in tx])  # int() truncates, as C does
    np.testing.assert_array_equal(got, want)
    assert [evaluate(e, {}, dialect="cumapz") for e in ("-7 / 2", "7 / -2", "-7 // 2", "-7 % 2", "7 % -2", "7 / 2")] == \
        [-3, -3, -3, -1, 1, 3]
    np.testing.assert_array_equal(evaluate("(tx - 33) % 32", {"tx": tx[:3]}, dialect="cumapz"), [-1, 0, -31])


_ZERO_DIVISOR = {"x": np.array([4, -7, 9]), "y": np.array([0, 2, 3])}


@pytest.mark.parametrize("text", ["x / y", "x % y", "(x / y) * 0 + 1", "x / (y - y)", "x / y if x else 0",
                                  "x / y if y else x / y", "x > 0 and x / y > 1", "x < 0 or x % y == 0"])
def test_cumapz_refuses_a_division_by_zero_where_its_value_is_used(text):
    """numpy's integer division gives 0 where the divisor is 0 and C has no value: a CuMAPz
    index ``row*MAX + col / 0`` was analyzed as ``row*MAX`` (exit 0, another MPE)."""
    with pytest.raises(ExpressionError, match="divides by zero"):
        _expr.evaluate(text, _ZERO_DIVISOR, dialect="cumapz")


@pytest.mark.parametrize("text, expected", [
    ("x / y if y else 0", [0, -3, 3]),  # C truncates toward zero: -7 / 2 == -3
    ("x % y if y != 0 else -1", [-1, -1, 0]),
    ("y and x / y", [0, 1, 1]),
    ("y == 0 or x % y == 0", [1, 0, 1]),
    ("(x / y if y else 0) if x else x / 0", [0, -3, 3]),
])
def test_cumapz_computes_a_division_guarded_as_c_would_skip_it(text, expected):
    """C evaluates only the branch taken and the operands ``&&`` / ``||`` reach."""
    value = _expr.evaluate(text, _ZERO_DIVISOR, dialect="cumapz")
    assert np.asarray(value, dtype=np.int64).tolist() == expected
