"""`td.scipy.special`: values against Python's `math` and closed forms (always)
and SciPy (when installed), float64 under `td.jit` and on numpy arrays;
gradients against central differences, closed forms and `jax.grad` of
`jax.scipy.special` (when installed); `vmap`; the special points (poles,
`xlogy` at x = 0, `logit` at 0 and 1) with finite gradients where promised."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import tidu_mlir as td
import tidu_mlir.numpy as tnp
from tidu_mlir.scipy import special
from tidu_mlir.tracing import Tracer

EULER_GAMMA = 0.57721566490153286061
RNG = np.random.default_rng(20240611)

# Where gammaln and digamma are checked: tiny, around 1/2, 1 and 2, large,
# negative non-integers (near and far from the poles), random spans of each.
POINTS = np.array([
    1e-300, 1e-100, 1e-10, 1e-3, 0.1, 0.3, 0.49, 0.5, 0.51, 0.9, 1.0, 1.0 + 1e-8, 1.25, 1.5,
    1.9, 2.0, 2.5, 3.0, 4.5, 7.5, 7.999, 8.0, 8.001, 8.5, 10.0, 33.3, 100.0, 1e5, 1e10, 1e100,
    1e300, -1e-10, -0.1, -0.5, -0.999, -1.001, -1.5, -2.5, -3.3, -7.7, -10.7, -100.25,
    -1e5 + 0.3, -1e9 + 0.25,
])  # fmt: skip
GRID = np.concatenate([
    POINTS,
    10.0 ** RNG.uniform(-300, 0, 40),
    RNG.uniform(0.0, 8.0, 200),
    RNG.uniform(8.0, 1000.0, 60),
    10.0 ** RNG.uniform(3, 300, 40),
    -RNG.uniform(0.0, 50.0, 200),
    -(10.0 ** RNG.uniform(2, 10, 40)),
])  # fmt: skip
GRID = GRID[~((GRID <= 0) & (np.rint(GRID) == GRID))]  # no poles
# Ordinary points for derivatives (away from poles; JAX's polygamma is only
# right for positive arguments).
SMOOTH = np.array([1e-3, 0.2, 0.5, 0.7, 1.0, 1.3, 2.0, 2.5, 5.0, 7.9, 8.0, 8.1, 30.0, 1e3, 1e5,
                   -0.3, -0.7, -1.5, -2.5, -7.7, -100.25])  # fmt: skip
SMOOTH_POSITIVE = SMOOTH[SMOOTH > 0]


def _mixed_error(actual: Any, expected: Any) -> float:
    """max |actual - expected| / max(1, |expected|): relative, absolute near 0."""
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    return float(np.max(np.abs(actual - expected) / np.maximum(1.0, np.abs(expected))))


def _relative_error(actual: Any, expected: Any) -> float:
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    return float(np.max(np.abs(actual - expected) / np.abs(expected)))


def _central_differences(f: Any, x: np.ndarray) -> np.ndarray:
    h = 1e-6 * np.maximum(1.0, np.abs(x))
    return (f(x + h) - f(x - h)) / (2.0 * h)


def _quietly(f: Any, *args: Any) -> Any:
    """`f(*args)`, failing on any warning (the concrete path must be silent)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return f(*args)


@pytest.fixture
def interp_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gradient loops evaluated by the reference interpreter (no LLVM compile
    per case); every function is also compiled in a values test."""
    monkeypatch.setenv("TIDU_BACKEND", "interp")


@pytest.fixture(scope="module")
def scipy_special() -> ModuleType:
    return pytest.importorskip("scipy.special")


@pytest.fixture(scope="module")
def jax_special() -> ModuleType:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.scipy.special

    return jax.scipy.special


def _jax_grad(fn: Any, *args: np.ndarray, argnums: int | tuple[int, ...] = 0) -> Any:
    import jax

    return jax.vmap(jax.grad(fn, argnums=argnums))(*args)


# --------------------------------------------------------------------------
# Wiring
# --------------------------------------------------------------------------


def test_names_are_reachable_both_ways() -> None:
    from tidu_mlir.scipy.special import logsumexp

    assert td.scipy.special.gammaln is special.gammaln
    assert logsumexp is td.scipy.special.logsumexp
    assert "scipy" in td.__all__ and "special" in td.scipy.__all__


# --------------------------------------------------------------------------
# gammaln
# --------------------------------------------------------------------------


def test_gammaln_matches_math_lgamma_compiled() -> None:
    expected = np.array([math.lgamma(v) for v in GRID])
    actual = td.jit(special.gammaln)(GRID)
    assert actual.dtype == np.float64
    assert _mixed_error(actual, expected) < 1e-14
    large = GRID >= 8.0  # the series without the recurrence: full relative precision
    assert _relative_error(actual[large], expected[large]) < 1e-15
    far_negative = GRID < -1e3
    assert _relative_error(actual[far_negative], expected[far_negative]) < 2e-15


def test_gammaln_concrete_matches_math_and_is_silent_at_poles() -> None:
    expected = np.array([math.lgamma(v) for v in GRID])
    actual = _quietly(special.gammaln, GRID)
    assert isinstance(actual, np.ndarray) and not isinstance(actual, Tracer)
    assert _mixed_error(actual, expected) < 1e-14
    poles = np.array([0.0, -0.0, -1.0, -2.0, -17.0, -1e20, np.inf, -np.inf])
    np.testing.assert_array_equal(_quietly(special.gammaln, poles), np.full(8, np.inf))
    assert np.isnan(special.gammaln(np.nan))
    assert special.gammaln(3) == pytest.approx(math.log(2.0), rel=1e-15)  # an int: float64
    np.testing.assert_array_equal(td.jit(special.gammaln)(poles), np.full(8, np.inf))


def test_gammaln_matches_scipy(scipy_special: ModuleType) -> None:
    special_values = np.array([0.0, -0.0, -1.0, -3.0, np.inf, np.nan])
    x = np.concatenate([GRID, special_values])
    expected = scipy_special.gammaln(x)
    for actual in (td.jit(special.gammaln)(x), _quietly(special.gammaln, x)):
        np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected))
        np.testing.assert_array_equal(np.isinf(actual), np.isinf(expected))
        finite = np.isfinite(expected)
        assert _mixed_error(actual[finite], expected[finite]) < 1e-14


def test_gammaln_float32_stays_float32() -> None:
    x = np.array([0.5, 3.0, 20.0, -2.5], np.float32)
    actual = td.jit(special.gammaln)(x)
    assert actual.dtype == np.float32
    expected = [math.lgamma(float(v)) for v in x]
    np.testing.assert_allclose(actual, expected, rtol=2e-6, atol=2e-6)


# --------------------------------------------------------------------------
# digamma
# --------------------------------------------------------------------------


def _harmonic(n: int) -> float:
    return float(sum(Fraction(1, k) for k in range(1, n + 1)))


def test_digamma_closed_forms_compiled() -> None:
    n = np.arange(1, 30)
    # ψ(n) = -γ + H_{n-1};  ψ(n + 1/2) = -γ - 2 log 2 + Σ_{k<=n} 2/(2k-1)
    at_integers = [-EULER_GAMMA + _harmonic(int(k) - 1) for k in n]
    at_halves = [
        -EULER_GAMMA
        - 2 * math.log(2.0)
        + float(sum(Fraction(2, 2 * j - 1) for j in range(1, k + 1)))
        for k in range(0, 29)
    ]
    # Reflection at half-integers: ψ(1/2 - n) = ψ(1/2 + n) (π cot(π/2 ...) = 0).
    x = np.concatenate([n, np.arange(29) + 0.5, 0.5 - np.arange(1, 29)]).astype(np.float64)
    expected = np.array(at_integers + at_halves + at_halves[1:])
    actual = td.jit(special.digamma)(x)
    assert _mixed_error(actual, expected) < 1e-15


def test_digamma_recurrence_and_reflection() -> None:
    x = GRID[np.abs(GRID) < 1e6]
    psi = special.digamma(x)
    # ψ(x + 1) - ψ(x) = 1/x (x + 1 rounds for large |x|: compare where exact)
    exact = (x + 1.0) - x == 1.0
    step = special.digamma(x[exact] + 1.0) - psi[exact]
    scale = np.maximum(np.abs(psi[exact]), np.abs(1.0 / x[exact]))
    assert float(np.max(np.abs(step - 1.0 / x[exact]) / np.maximum(1.0, scale))) < 1e-14
    # ψ(1 - x) - ψ(x) = π cot(πx)
    y = RNG.uniform(-20.0, 20.0, 200)
    cot = 1.0 / np.tan(math.pi * (y - np.rint(y)))
    lhs = special.digamma(1.0 - y) - special.digamma(y)
    assert _mixed_error(lhs / math.pi, cot) < 1e-13


def test_digamma_poles_as_scipy() -> None:
    x = np.array([0.0, -0.0, -1.0, -2.0, -50.0, np.inf, -np.inf, np.nan])
    expected = np.array([-np.inf, np.inf, np.nan, np.nan, np.nan, np.inf, np.nan, np.nan])
    np.testing.assert_array_equal(_quietly(special.digamma, x), expected)
    np.testing.assert_array_equal(td.jit(special.digamma)(x), expected)


def test_digamma_matches_scipy(scipy_special: ModuleType) -> None:
    actual = td.jit(special.digamma)(GRID)
    expected = scipy_special.digamma(GRID)
    positive = GRID > 0
    assert _mixed_error(actual[positive], expected[positive]) < 5e-15
    # For x < 0 SciPy's own error is larger: 2.4e-14 at -0.999, ~1e-13 at
    # |x| ~ 1e9 (tidu is right there by the recurrence, and agrees with JAX).
    moderate = np.abs(GRID) < 1e3
    assert _mixed_error(actual[moderate], expected[moderate]) < 5e-14
    assert _mixed_error(actual, expected) < 5e-13


# --------------------------------------------------------------------------
# Derivatives of gammaln and digamma
# --------------------------------------------------------------------------


@pytest.mark.usefixtures("interp_backend")
def test_gammaln_gradient_is_digamma_and_central_differences() -> None:
    grad = td.vmap(td.grad(special.gammaln))(SMOOTH)
    assert _mixed_error(grad, special.digamma(SMOOTH)) < 1e-14
    lgamma = np.vectorize(math.lgamma)
    np.testing.assert_allclose(grad, _central_differences(lgamma, SMOOTH), rtol=1e-6, atol=1e-6)


def test_digamma_gradient_closed_forms_compiled() -> None:
    # ψ'(n) = π²/6 - Σ_{k<n} 1/k², ψ'(1/2) = π²/2; reflection: ψ'(1-x) + ψ'(x) = π²/sin²(πx).
    n = np.arange(1.0, 12.0)
    x = np.concatenate([n, [0.5], [-0.3, -2.5, -7.7]])
    trigamma = td.jit(td.vmap(td.grad(special.digamma)))(x)
    expected = [
        math.pi**2 / 6 - float(sum(Fraction(1, k * k) for k in range(1, int(v)))) for v in n
    ]
    assert _relative_error(trigamma[: len(n)], expected) < 1e-14
    assert trigamma[len(n)] == pytest.approx(math.pi**2 / 2, rel=1e-14)
    y = x[-3:]
    reflected = td.vmap(td.grad(special.digamma))(1.0 - y)
    assert _relative_error(reflected + trigamma[-3:], math.pi**2 / np.sin(math.pi * y) ** 2) < 1e-13


@pytest.mark.usefixtures("interp_backend")
def test_gradients_match_jax(jax_special: ModuleType, scipy_special: ModuleType) -> None:
    digamma = td.vmap(td.grad(special.gammaln))(SMOOTH)
    assert _relative_error(digamma, _jax_grad(jax_special.gammaln, SMOOTH)) < 1e-12
    trigamma = td.vmap(td.grad(special.digamma))(SMOOTH)
    positive = _jax_grad(jax_special.digamma, SMOOTH_POSITIVE)
    assert _relative_error(trigamma[SMOOTH > 0], positive) < 1e-12
    # jax.scipy.special.polygamma is wrong for x < 0: all of them against SciPy.
    assert _relative_error(trigamma, scipy_special.polygamma(1, SMOOTH)) < 1e-12
    # Second derivative of gammaln (grad of grad through the composite).
    second = td.vmap(td.grad(td.grad(special.gammaln)))(SMOOTH)
    assert _relative_error(second, scipy_special.polygamma(1, SMOOTH)) < 1e-12


# --------------------------------------------------------------------------
# multigammaln
# --------------------------------------------------------------------------


def test_multigammaln_closed_forms_and_vmap() -> None:
    a = np.array([0.75, 1.0, 2.5, 10.0, 1e4])
    np.testing.assert_allclose(special.multigammaln(a, 1), special.gammaln(a), rtol=0, atol=0)
    # Γ_2(a) = √π Γ(a) Γ(a - 1/2)
    expected = [0.5 * math.log(math.pi) + math.lgamma(v) + math.lgamma(v - 0.5) for v in a]
    assert _mixed_error(td.jit(lambda a: special.multigammaln(a, 2))(a), expected) < 1e-14
    batched = td.vmap(lambda v: special.multigammaln(v, 3))(a + 1.0)
    assert _mixed_error(batched, special.multigammaln(a + 1.0, 3)) < 1e-14
    with pytest.raises(ValueError, match="positive integer"):
        special.multigammaln(a, 0)


@pytest.mark.usefixtures("interp_backend")
def test_multigammaln_matches_scipy_and_jax(
    scipy_special: ModuleType, jax_special: ModuleType
) -> None:
    a = np.array([2.25, 3.7, 12.0, 150.0])  # SciPy needs a > (d - 1)/2
    for d in (1, 2, 5):
        expected = [scipy_special.multigammaln(v, d) for v in a]
        assert _mixed_error(special.multigammaln(a, d), expected) < 1e-14
    # GradBench's gmm differentiates it with respect to a traced a.
    grad = td.vmap(td.grad(lambda v: special.multigammaln(v, 4)))(a)
    jax_grad = _jax_grad(lambda v: jax_special.multigammaln(v, 4), a)
    assert _relative_error(grad, jax_grad) < 1e-12


# --------------------------------------------------------------------------
# erf, expit, logit
# --------------------------------------------------------------------------


def test_erf_expit_logit_values_compiled() -> None:
    x = np.array([-30.0, -3.0, -0.5, -1e-8, 0.0, 1e-8, 0.5, 1.0, 3.0, 30.0])
    np.testing.assert_allclose(td.jit(special.erf)(x), [math.erf(v) for v in x], rtol=1e-15)
    np.testing.assert_allclose(special.erf(x), [math.erf(v) for v in x], rtol=1e-15)
    expit = [1.0 / (1.0 + math.exp(-v)) for v in x]
    np.testing.assert_allclose(td.jit(special.expit)(x), expit, rtol=1e-15)
    p = np.array([0.0, 1e-300, 1e-8, 0.25, 0.5, 0.75, 1.0 - 1e-8, 1.0])
    expected = np.array([-np.inf] + [math.log(v / (1.0 - v)) for v in p[1:-1]] + [np.inf])
    np.testing.assert_allclose(td.jit(special.logit)(p), expected, rtol=1e-8)
    np.testing.assert_allclose(_quietly(special.logit, p), expected, rtol=1e-8)
    assert special.logit(0.5) == 0.0
    assert np.isnan(_quietly(special.logit, 1.5))
    inverse = td.jit(lambda q: special.expit(special.logit(q)))(p[2:-1])
    np.testing.assert_allclose(inverse, p[2:-1], rtol=1e-15)


@pytest.mark.usefixtures("interp_backend")
def test_erf_expit_logit_gradients() -> None:
    x = np.array([-3.0, -0.5, 0.0, 0.5, 3.0])
    np.testing.assert_allclose(
        td.vmap(td.grad(special.erf))(x), 2.0 / math.sqrt(math.pi) * np.exp(-x * x), rtol=1e-14
    )
    s = 1.0 / (1.0 + np.exp(-x))
    np.testing.assert_allclose(td.vmap(td.grad(special.expit))(x), s * (1.0 - s), rtol=1e-14)
    p = np.array([1e-9, 0.1, 0.5, 0.9, 1.0 - 1e-9])
    np.testing.assert_allclose(td.vmap(td.grad(special.logit))(p), 1.0 / (p * (1.0 - p)), rtol=1e-7)


@pytest.mark.usefixtures("interp_backend")
def test_erf_expit_logit_gradients_match_jax(jax_special: ModuleType) -> None:
    x = np.array([-3.0, -0.5, 0.0, 0.5, 3.0])
    p = np.array([1e-9, 0.1, 0.5, 0.9])
    for name, args in (("erf", x), ("expit", x), ("logit", p)):
        actual = td.vmap(td.grad(getattr(special, name)))(args)
        assert _relative_error(actual, _jax_grad(getattr(jax_special, name), args)) < 1e-12, name


# --------------------------------------------------------------------------
# xlogy, xlog1py
# --------------------------------------------------------------------------

XLOGY_X = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0, -1.5, 3.0, 1.0])
XLOGY_Y = np.array([0.0, -1.0, 2.0, np.inf, np.nan, 0.0, 3.0, 0.25, np.inf, -1.0])


def test_xlogy_values_compiled_and_concrete() -> None:
    with np.errstate(divide="ignore", invalid="ignore"):
        product = XLOGY_X * np.log(XLOGY_Y)
    expected = np.where((XLOGY_X == 0) & ~np.isnan(XLOGY_Y), 0.0, product)
    # Compiled: the vector log may differ from numpy's by an ulp; the special
    # points (0, nan, inf) are exact.
    np.testing.assert_allclose(td.jit(special.xlogy)(XLOGY_X, XLOGY_Y), expected, rtol=1e-15)
    np.testing.assert_array_equal(_quietly(special.xlogy, XLOGY_X, XLOGY_Y), expected)
    y1 = XLOGY_Y - 1.0  # the same points for log1p
    with np.errstate(divide="ignore", invalid="ignore"):
        product1 = XLOGY_X * np.log1p(y1)
    expected1 = np.where((XLOGY_X == 0) & ~np.isnan(y1), 0.0, product1)
    np.testing.assert_allclose(td.jit(special.xlog1py)(XLOGY_X, y1), expected1, rtol=1e-15)
    np.testing.assert_array_equal(_quietly(special.xlog1py, XLOGY_X, y1), expected1)
    assert special.xlog1py(2.0, 1e-20) == pytest.approx(2e-20, rel=1e-15)  # log1p accuracy


def test_xlogy_matches_scipy(scipy_special: ModuleType) -> None:
    for name, y in (("xlogy", XLOGY_Y), ("xlog1py", XLOGY_Y - 1.0)):
        np.testing.assert_allclose(
            getattr(special, name)(XLOGY_X, y), getattr(scipy_special, name)(XLOGY_X, y),
            rtol=1e-15, err_msg=name,
        )  # fmt: skip


def test_xlogy_gradients_are_finite_at_x_zero() -> None:
    x = np.array([0.0, 0.0, 0.0, 2.0, -1.5])
    y = np.array([0.0, -1.0, 2.0, 3.0, 0.25])
    gx, gy = td.jit(td.vmap(td.grad(special.xlogy, argnums=(0, 1))))(x, y)
    np.testing.assert_allclose(gx, [0.0, 0.0, math.log(2.0), math.log(3.0), math.log(0.25)])
    np.testing.assert_allclose(gy, [0.0, 0.0, 0.0, 2.0 / 3.0, -6.0])
    gx1, gy1 = td.vmap(td.grad(special.xlog1py, argnums=(0, 1)))(x, y - 1.0)
    np.testing.assert_allclose(gx1, gx, rtol=1e-15)
    np.testing.assert_allclose(gy1, gy, rtol=1e-15)
    # Summed over a vector with a zero weight: no nan leaks into the other entries.
    total = td.grad(lambda w: tnp.sum(special.xlogy(w, w)))(np.array([0.0, 1.0, 2.0]))
    np.testing.assert_allclose(total, [0.0, 1.0, math.log(2.0) + 1.0])


@pytest.mark.usefixtures("interp_backend")
def test_xlogy_gradients_match_jax(jax_special: ModuleType) -> None:
    x = np.array([0.0, 2.0, -1.5, 0.5])
    y = np.array([2.0, 3.0, 0.25, 7.0])  # where JAX's gradient is finite
    for name, shift in (("xlogy", 0.0), ("xlog1py", 1.0)):
        ours = td.vmap(td.grad(getattr(special, name), argnums=(0, 1)))(x, y - shift)
        theirs = _jax_grad(getattr(jax_special, name), x, y - shift, argnums=(0, 1))
        for a, b in zip(ours, theirs, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-300, err_msg=name)


# --------------------------------------------------------------------------
# logsumexp
# --------------------------------------------------------------------------

LSE_A = np.array([[0.0, 1.0, -np.inf, 700.0], [2.0, 3.0, 4.0, -1000.0], [5.0, -2.0, 0.5, 1.0]])
LSE_B = np.array([[1.0, -2.0, 3.0, 0.5], [0.5, 0.0, -0.1, 2.0], [1.0, 1.0, 1.0, -1.0]])
LSE_CASES: list[dict[str, Any]] = [
    {},
    {"axis": 1},
    {"axis": 0, "keepdims": True},
    {"axis": 1, "b": LSE_B},
    {"axis": None, "b": np.abs(LSE_B)},
    {"axis": 0, "b": LSE_B, "return_sign": True},
    {"axis": 1, "b": LSE_B, "return_sign": True, "keepdims": True},
    {"axis": (0, 1), "return_sign": True},
    {"axis": 1, "b": np.array([1.0, 0.0, 2.0, 1.0])},  # broadcast weights
]


def _lse(module: Any, a: Any, case: dict[str, Any]) -> Any:
    return module.logsumexp(a, **case)


def test_logsumexp_matches_numpy_formula_compiled() -> None:
    for case in LSE_CASES:
        ours = td.jit(lambda a, case=case: _lse(special, a, case))(LSE_A)
        concrete = _quietly(_lse, special, LSE_A, case)
        # Reference: the same sum in extended precision (no overflow at 700).
        b = case.get("b", np.ones_like(LSE_A))
        axis = case.get("axis")
        total = np.sum(
            np.exp(np.longdouble(LSE_A)) * b, axis=axis, keepdims=case.get("keepdims", False)
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            log_abs = np.log(np.abs(total)).astype(np.float64)
        if case.get("return_sign"):
            expected: Any = (log_abs, np.sign(total).astype(np.float64))
        else:
            expected = (np.where(total < 0, np.nan, log_abs),)
            ours, concrete = (ours,), (concrete,)
        for got in (ours, concrete):
            for g, e in zip(got, expected, strict=True):
                np.testing.assert_allclose(g, e, rtol=1e-15, err_msg=str(case))
    np.testing.assert_array_equal(special.logsumexp(LSE_A, axis=1), td.nn.logsumexp(LSE_A, axis=1))


def test_logsumexp_matches_scipy(scipy_special: ModuleType) -> None:
    for case in LSE_CASES:
        with np.errstate(all="ignore"):
            expected = _lse(scipy_special, LSE_A, case)
        np.testing.assert_allclose(_lse(special, LSE_A, case), expected, rtol=1e-15,
                                   err_msg=str(case))  # fmt: skip


@pytest.mark.usefixtures("interp_backend")
def test_logsumexp_gradients_match_jax(jax_special: ModuleType) -> None:
    import jax
    import jax.numpy as jnp

    a = LSE_A  # with a -inf entry and one far above the rest
    b = np.abs(LSE_B)  # with a zero weight
    signs = np.where(LSE_B < 0, -1.0, 1.0)
    w = np.array([0.3, -1.2, 2.0])

    def ours(a: Any, b: Any) -> Any:
        out, _ = special.logsumexp(a, axis=1, b=b * signs, return_sign=True)
        return tnp.sum(out * w) + tnp.sum(special.logsumexp(a, axis=0, b=b))

    def theirs(a: Any, b: Any) -> Any:
        out, _ = jax_special.logsumexp(a, axis=1, b=b * signs, return_sign=True)
        return jnp.sum(out * w) + jnp.sum(jax_special.logsumexp(a, axis=0, b=b))

    got = td.grad(ours, argnums=(0, 1))(a, b)
    want = jax.grad(theirs, argnums=(0, 1))(a, b)
    for g, e in zip(got, want, strict=True):
        assert np.all(np.isfinite(g))
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-300)
    # The plain form (td.nn.logsumexp): -inf entries get gradient 0.
    plain = td.grad(lambda a: special.logsumexp(a))(np.array([0.0, 0.0, -np.inf]))
    np.testing.assert_array_equal(plain, [0.5, 0.5, 0.0])
