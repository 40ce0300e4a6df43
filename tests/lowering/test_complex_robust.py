"""Complex `|z|`, division and `sqrt` as robust as numpy's (docs/complex.md).

Compiled (`td.jit`) results at extreme magnitudes are checked against exact
values (`decimal`, 60 digits) to a few ulp of the larger part, special values
(signed zeros, infinities, NaNs) against numpy bit for bit, and gradients of
real losses against their analytic formulas (docs/complex.md's convention:
`grad L = dL/dx + i dL/dy`) on the compiled, evaluator and eager paths, and
against finite differences.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import numpy as np
import pytest
from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import f64
from xdsl.ir import Block, SSAValue
from xdsl.rewriter import InsertPoint

import tidu_mlir as td
import tidu_mlir.numpy as tnp
from tidu_mlir.eager import tensor
from tidu_mlir.eager.functions import FUNCTIONS as EAGER
from tidu_mlir.lowering.scalar import ScalarBuilder

DTYPES = (np.complex128, np.complex64)
MAGNITUDES: dict[type, tuple[float, ...]] = {
    np.complex128: (1e-320, 1e-300, 1e-160, 1e-20, 1.0, 1e20, 1e160, 1e300, 1e308),
    np.complex64: (1e-44, 1e-37, 1e-30, 1e-19, 1.0, 1e19, 1e30, 3e38),
}
"""Moduli from subnormal to near the largest finite value."""
GRAD_MAGNITUDES: dict[type, tuple[float, ...]] = {
    np.complex128: (1e-300, 1e-160, 1e-20, 1.0, 1e20, 1e160, 1e300),
    np.complex64: (1e-37, 1e-30, 1e-19, 1.0, 1e19, 1e30),
}
"""Normal moduli away from overflow, where the gradients are representable and
numpy (the evaluator) does not overflow either."""
DIRECTIONS = (1 + 1j, -0.6 + 0.8j, 0.8 - 0.6j, -1 - 1e-3j, 1e-3 + 1j)
SPECIAL = (0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan)
ULPS = 4
"""Tolerance of a compiled result: ulps of the larger part of the exact value."""
GRAD_ULPS = 8
"""Tolerance of a gradient (a chain of rounded ops)."""

e_sum, e_abs, e_sqrt, e_real, e_imag = (EAGER[n] for n in ("sum", "abs", "sqrt", "real", "imag"))
"""The eager `Tensor` functions (generated from `tnp`)."""

_EXACT = decimal.Context(prec=60, Emax=10**6, Emin=-(10**6))

ExactPair = tuple[Decimal, Decimal]


# ----- exact reference values --------------------------------------------


def _dec(x: float) -> Decimal:
    return Decimal(float(x))


def _parts(z: complex) -> ExactPair:
    return _dec(z.real), _dec(z.imag)


def _exact_abs(z: complex) -> ExactPair:
    re, im = _dec(z.real), _dec(z.imag)
    return _EXACT.sqrt(_EXACT.add(_EXACT.multiply(re, re), _EXACT.multiply(im, im))), Decimal(0)


def _exact_div(z: complex, w: complex) -> ExactPair:
    a, b, c, d = _dec(z.real), _dec(z.imag), _dec(w.real), _dec(w.imag)
    m = _EXACT.multiply
    den = _EXACT.add(m(c, c), m(d, d))
    re = _EXACT.divide(_EXACT.add(m(a, c), m(b, d)), den)
    return re, _EXACT.divide(_EXACT.subtract(m(b, c), m(a, d)), den)


def _exact_sqrt(z: complex) -> ExactPair:
    a, b = _dec(z.real), _dec(z.imag)
    modulus = _exact_abs(z)[0]
    t = _EXACT.sqrt(_EXACT.divide(_EXACT.add(abs(a), modulus), 2))
    v = _EXACT.divide(abs(b), _EXACT.multiply(2, t))
    re, im = (t, v) if a >= 0 else (v, t)
    return re, im.copy_sign(Decimal(math.copysign(1.0, z.imag)))


def _inv(p: ExactPair) -> ExactPair:
    """1/p."""
    re, im = p
    den = _EXACT.add(_EXACT.multiply(re, re), _EXACT.multiply(im, im))
    return _EXACT.divide(re, den), _EXACT.divide(-im, den)


def _conj(p: ExactPair) -> ExactPair:
    return p[0], -p[1]


def _mul(p: ExactPair, q: ExactPair) -> ExactPair:
    m = _EXACT.multiply
    return (
        _EXACT.subtract(m(p[0], q[0]), m(p[1], q[1])),
        _EXACT.add(m(p[0], q[1]), m(p[1], q[0])),
    )


# ----- comparisons ---------------------------------------------------------


def _real_dtype(dtype: Any) -> np.dtype:
    return np.empty(0, dtype).real.dtype


def _rounded(values: Sequence[ExactPair], dtype: Any) -> np.ndarray:
    """The exact values rounded to `dtype` (complex; beyond its range: inf)."""
    parts = np.array([[float(re), float(im)] for re, im in values], dtype=np.float64)
    real = _real_dtype(dtype)
    rounded = np.empty(len(values), dtype)
    with np.errstate(over="ignore"):
        rounded.real, rounded.imag = parts[:, 0].astype(real), parts[:, 1].astype(real)
    return rounded


def _representable(values: Sequence[ExactPair], dtype: Any) -> np.ndarray:
    """Which exact values have a larger part inside the finite normal range."""
    info = np.finfo(_real_dtype(dtype))
    larger = [max(abs(re), abs(im)) for re, im in values]
    return np.array([Decimal(float(info.tiny)) <= m <= Decimal(float(info.max)) for m in larger])


def assert_ulps(
    got: np.ndarray,
    exact: Sequence[ExactPair],
    dtype: Any,
    ulps: int,
    componentwise: bool = False,
) -> None:
    """Both parts of `got` within `ulps` ulp of the larger part of the exact value
    (`componentwise` or where the larger part overflows: of the part itself),
    equal where that overflows."""
    want = _rounded(exact, dtype)
    got = np.asarray(got).astype(want.dtype)
    real = _real_dtype(dtype)
    bad = np.zeros(want.shape, bool)
    larger = np.maximum(np.abs(np.real(want)), np.abs(np.imag(want))).astype(real)
    for part in (np.real, np.imag):
        own = np.abs(part(want)).astype(real)
        scale = own if componentwise else np.where(np.isinf(larger), own, larger)
        with np.errstate(invalid="ignore"):
            error = np.abs(part(got) - part(want))
        bad |= ~((error <= ulps * np.spacing(scale)) | (part(got) == part(want)))
    assert not bad.any(), f"{bad.sum()} off, e.g. got {got[bad][:4]}, want {want[bad][:4]}"


def _same_bits(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Equal, NaN where NaN, and zeros of the same sign; finite nonzero values
    within `ULPS` ulp (numpy multiplies by a reciprocal where we divide)."""
    with np.errstate(invalid="ignore"):
        nan = np.isnan(got) & np.isnan(want)
        equal = (got == want) & ((got != 0) | (np.signbit(got) == np.signbit(want)))
        close = (
            np.isfinite(want)
            & (want != 0)
            & (np.abs(got - want) <= ULPS * np.spacing(np.abs(want)))
        )
    return nan | equal | close


def assert_like_numpy(got: np.ndarray, want: np.ndarray, inputs: Sequence[np.ndarray]) -> None:
    got, want = np.asarray(got), np.asarray(want)
    parts = [(np.real(got), np.real(want)), (np.imag(got), np.imag(want))]
    parts = parts if want.dtype.kind == "c" else [(got, want)]
    ok = np.all([_same_bits(g, w) for g, w in parts], axis=0)
    rows = [tuple(x[~ok][:4]) for x in inputs]
    assert ok.all(), (
        f"{(~ok).sum()} differ from numpy: inputs {rows}, got {got[~ok][:4]}, want {want[~ok][:4]}"
    )


# ----- inputs ----------------------------------------------------------------


def moduli(dtype: Any, magnitudes: dict[type, tuple[float, ...]] = MAGNITUDES) -> np.ndarray:
    """`m·d` for every magnitude `m` and direction `d` (|d| about 1)."""
    values = [m * d for m in magnitudes[dtype] for d in DIRECTIONS]
    return np.array(values, dtype=np.complex128).astype(dtype)


def mixed_parts(dtype: Any) -> np.ndarray:
    """Every pair of magnitudes as the two parts, with the four sign patterns,
    and each magnitude alone in either part."""
    ms = MAGNITUDES[dtype]
    values = [complex(sa * x, sb * y) for x in ms for y in ms for sa in (1, -1) for sb in (1, -1)]
    values += [complex(m, 0.0) for m in ms] + [complex(0.0, -m) for m in ms]
    return np.array(values, dtype=np.complex128).astype(dtype)


def special(dtype: Any) -> np.ndarray:
    return np.array([complex(a, b) for a in SPECIAL for b in SPECIAL], dtype=dtype)


def quotient_pairs(
    dtype: Any, magnitudes: dict[type, tuple[float, ...]] = MAGNITUDES
) -> tuple[np.ndarray, np.ndarray]:
    """Every (numerator, divisor) from `moduli` with a representable quotient,
    subnormal ones left out (Smith's products lose their digits there, as
    numpy's do)."""
    values = moduli(dtype, magnitudes)
    tiny = np.finfo(_real_dtype(dtype)).tiny
    values = values[np.maximum(np.abs(values.real), np.abs(values.imag)) >= tiny]
    z, w = np.repeat(values, len(values)), np.tile(values, len(values))
    keep = _representable(
        [_exact_div(complex(a), complex(b)) for a, b in zip(z, w, strict=True)], dtype
    )
    return z[keep], w[keep]


# ----- forward values -----------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_abs_at_extreme_magnitudes(dtype: Any) -> None:
    z = np.concatenate([moduli(dtype), mixed_parts(dtype)])
    got = td.jit(lambda z: tnp.abs(z))(z)
    assert got.dtype == _real_dtype(dtype)
    assert_ulps(got, [_exact_abs(complex(v)) for v in z], dtype, ULPS)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sqrt_at_extreme_magnitudes(dtype: Any) -> None:
    z = np.concatenate([moduli(dtype), mixed_parts(dtype)])
    got = td.jit(lambda z: tnp.sqrt(z))(z)
    assert_ulps(got, [_exact_sqrt(complex(v)) for v in z], dtype, ULPS, componentwise=True)
    assert_like_numpy(got, np.sqrt(z), [z])


@pytest.mark.parametrize("dtype", DTYPES)
def test_division_at_extreme_magnitudes(dtype: Any) -> None:
    z, w = quotient_pairs(dtype)
    got = td.jit(lambda z, w: z / w)(z, w)
    assert_ulps(
        got, [_exact_div(complex(a), complex(b)) for a, b in zip(z, w, strict=True)], dtype, ULPS
    )
    ones = td.jit(lambda z: z / z)(moduli(dtype))
    assert (ones.real == 1).all()
    assert (np.abs(ones.imag) <= np.finfo(ones.real.dtype).eps).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_division_by_a_real_at_extreme_magnitudes(dtype: Any) -> None:
    """A converted real divisor takes the cheaper path (`c_div_real`)."""
    z = mixed_parts(dtype)
    real = _real_dtype(dtype).type
    for x in (real(MAGNITUDES[dtype][1]), real(-1.0), real(MAGNITUDES[dtype][-2])):
        divisor = np.full(z.shape, x)
        got = td.jit(lambda z, x: z / x)(z, divisor)
        exact = [_exact_div(complex(a), complex(float(x))) for a in z]
        keep = _representable(exact, dtype)
        assert_ulps(got[keep], [e for e, k in zip(exact, keep, strict=True) if k], dtype, ULPS)


@pytest.mark.parametrize("dtype", DTYPES)
def test_log_at_extreme_magnitudes(dtype: Any) -> None:
    """`log z` takes `log |z|` from the robust modulus."""
    z = moduli(dtype)
    got = td.jit(lambda z: tnp.log(z))(z)
    np.testing.assert_allclose(got, np.log(z), rtol=5 * np.finfo(_real_dtype(dtype)).eps)


def _exact_log_modulus(z: complex) -> ExactPair:
    """`(log |z|, 0)`."""
    re, im = _parts(z)
    with decimal.localcontext(_EXACT):
        return (re * re + im * im).ln() / 2, Decimal(0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_log_near_the_unit_circle(dtype: Any) -> None:
    """`Re log z = log |z|` keeps its digits where it is tiny (`log1p` of the
    exactly computed `a² + b² - 1`): `log|1 + 1e-10i| = 5e-21`, not 0."""
    radii = (1.0, 1 - 1e-7, 1 + 1e-10, 1 - 1e-3, 0.75, 1.3)
    angles = np.linspace(0, 2 * np.pi, 13)
    on_circle = np.array([r * np.exp(1j * t) for r in radii for t in angles])
    z = np.concatenate([on_circle, [1 + 1e-10j, 1e-9 - 1j, -1 + 1e-20j]]).astype(dtype)
    got = td.jit(lambda z: tnp.log(z))(z)
    exact = [_exact_log_modulus(complex(v)) for v in z]
    assert_ulps(np.real(got), exact, dtype, ULPS, componentwise=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_special_values_like_numpy(dtype: Any) -> None:
    """Signed zeros, infinities and NaNs in either part, as numpy gives them
    (`|inf + nan i| = inf`, `sqrt(-inf + nan i) = nan + inf i`, `z/0` by parts)."""
    z = special(dtype)
    with np.errstate(all="ignore"):
        assert_like_numpy(td.jit(lambda z: tnp.abs(z))(z), np.abs(z), [z])
        assert_like_numpy(td.jit(lambda z: tnp.sqrt(z))(z), np.sqrt(z), [z])
        num, den = np.repeat(z, len(z)), np.tile(z, len(z))
        assert_like_numpy(td.jit(lambda z, w: z / w)(num, den), num / den, [num, den])
        real = np.array(SPECIAL, dtype=_real_dtype(dtype))
        num, x = np.repeat(z, len(real)), np.tile(real, len(z))
        want = num / x.astype(dtype)
        assert_like_numpy(td.jit(lambda z, x: z / x)(num, x), want, [num, x])


# ----- gradients -------------------------------------------------------------


def _abs_case(dtype: Any) -> tuple[tuple[np.ndarray, ...], list[list[ExactPair]]]:
    """L = sum |z|: grad z/|z|."""
    z = moduli(dtype, GRAD_MAGNITUDES)
    return (z,), [[_mul(_parts(v), _inv(_exact_abs(complex(v)))) for v in z]]


def _sqrt_case(dtype: Any) -> tuple[tuple[np.ndarray, ...], list[list[ExactPair]]]:
    """L = sum Re((1 - i) sqrt z): grad conj((1 - i)/(2 sqrt z))."""
    z = moduli(dtype, GRAD_MAGNITUDES)
    factor = (Decimal("0.5"), Decimal("-0.5"))
    return (z,), [[_conj(_mul(factor, _inv(_exact_sqrt(complex(v))))) for v in z]]


def _div_case(dtype: Any) -> tuple[tuple[np.ndarray, ...], list[list[ExactPair]]]:
    """L = sum Re(z/w): grads conj(1/w) and conj(-z/w²), representable ones."""
    z, w = quotient_pairs(dtype, GRAD_MAGNITUDES)
    quotients = [_exact_div(complex(a), complex(b)) for a, b in zip(z, w, strict=True)]
    grad_z = [_conj(_inv(_parts(b))) for b in w]
    grad_w = [
        _conj(_mul((-q[0], -q[1]), _inv(_parts(b)))) for q, b in zip(quotients, w, strict=True)
    ]
    keep = _representable(grad_z, dtype) & _representable(grad_w, dtype)
    pick = lambda values: [v for v, k in zip(values, keep, strict=True) if k]  # noqa: E731
    return (z[keep], w[keep]), [pick(grad_z), pick(grad_w)]


CASES: dict[str, tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]] = {
    # name: (traced loss, eager loss, (inputs, exact gradients))
    "abs": (lambda z: tnp.sum(tnp.abs(z)), lambda z: e_sum(e_abs(z)), _abs_case),
    "sqrt": (
        lambda z: tnp.sum(tnp.real(tnp.sqrt(z)) + tnp.imag(tnp.sqrt(z))),
        lambda z: e_sum(e_real(e_sqrt(z)) + e_imag(e_sqrt(z))),
        _sqrt_case,
    ),
    "div": (lambda z, w: tnp.sum(tnp.real(z / w)), lambda z, w: e_sum(e_real(z / w)), _div_case),
}


def _traced_gradients(loss: Callable[..., Any], args: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    argnums = tuple(range(len(args)))
    fresh = lambda *a: loss(*a)  # noqa: E731 (a new function: no cached stage)
    return list(td.grad(fresh, argnums=argnums)(*args))


def _eager_gradients(loss: Callable[..., Any], args: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    tensors = [tensor(a, requires_grad=True) for a in args]
    loss(*tensors).backward()
    return [np.asarray(t.grad) for t in tensors]


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("path", ["llvm", "interp", "eager"])
def test_gradients_at_extreme_magnitudes(
    path: str, dtype: Any, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finite and within a few ulp of the analytic gradient on every path
    (eager backward runs compiled code, forward numpy)."""
    traced, eager, case = CASES[name]
    args, exact = case(dtype)
    if path == "interp":
        monkeypatch.setenv("TIDU_BACKEND", "interp")
    grads = _eager_gradients(eager, args) if path == "eager" else _traced_gradients(traced, args)
    for got, want in zip(grads, exact, strict=True):
        assert got.dtype == dtype
        assert_ulps(got, want, dtype, GRAD_ULPS)


@pytest.mark.parametrize("name", CASES)
def test_gradients_match_finite_differences(name: str) -> None:
    """The compiled gradients at 1e±160 and 1e±300 against central differences
    of the numpy loss (a check of the convention and of the formulas above)."""
    traced, _, case = CASES[name]
    args, _ = case(np.complex128)
    keep = np.ones(args[0].shape, bool)
    for a in args:
        keep &= np.isin(np.round(np.log10(np.abs(a))), [-300, -160, 160, 300])
    args = tuple(a[keep] for a in args)
    grads = _traced_gradients(traced, args)
    losses = {
        "abs": lambda z: np.abs(z),
        "sqrt": lambda z: np.sqrt(z).real + np.sqrt(z).imag,
        "div": lambda z, w: (z / w).real,
    }
    for i, got in enumerate(grads):
        h = 1e-7 * np.abs(args[i])

        def loss_at(step: np.ndarray, i: int = i) -> np.ndarray:
            shifted = [a + step if j == i else a for j, a in enumerate(args)]
            return losses[name](*shifted)

        d_re = (loss_at(h) - loss_at(-h)) / (2 * h)
        d_im = (loss_at(1j * h) - loss_at(-1j * h)) / (2 * h)
        np.testing.assert_allclose(got, d_re + 1j * d_im, rtol=1e-6, atol=0)


def _divisions(divisor_im: Callable[[ScalarBuilder, SSAValue], SSAValue]) -> int:
    """How many `arith.divf` one complex division emits."""
    block = Block(arg_types=[f64] * 4)
    sb = ScalarBuilder(Builder(InsertPoint.at_end(block)))
    a, b, c, d = block.args
    sb.c_div((a, b), (c, divisor_im(sb, d)))
    return sum(isinstance(op, arith.DivfOp) for op in block.ops)


def test_a_converted_real_divisor_skips_the_ratio() -> None:
    """`(c, +0)` divides twice, a general or `(c, -0)` divisor three times
    (`-0.0` is its own constant, not the cached `+0.0`)."""
    assert _divisions(lambda _, d: d) == 3
    assert _divisions(lambda sb, _: sb.const(0.0, f64)) == 2
    assert _divisions(lambda sb, _: (sb.const(0.0, f64), sb.const(-0.0, f64))[1]) == 3


# ----- exp, sin, cos, tanh and pow -------------------------------------------

GROWTH: dict[type, tuple[tuple[float, ...], tuple[float, ...]]] = {
    np.complex128: (
        (0.0, 1e-300, 1e-20, 0.5, 3.0, 30.0, 300.0, 709.5, 720.0, 745.0),
        (0.0, 1e-300, 1e-20, 0.5, 1.5707963267948966, 3.0, 100.0),
    ),
    np.complex64: (
        (0.0, 1e-37, 1e-10, 0.5, 3.0, 12.0, 60.0, 88.5, 95.0, 103.0),
        (0.0, 1e-37, 1e-10, 0.5, 1.5707964, 3.0, 100.0),
    ),
}
"""(growing, periodic): magnitudes of the part that `exp`, `tanh` (the real part)
and `sin`, `cos` (the imaginary part) grow or decay with, up to where the result
overflows or underflows, and of the other part (near `π/2`: near a pole of `tanh`)."""
TRANSCENDENTAL_SPECIAL = (*SPECIAL, 30.0, -800.0, 1e30)
"""Special parts and finite ones beyond the overflow threshold of `e^x`."""


def _taylor(x: Decimal, start: int, alternating: bool) -> Decimal:
    """The sum of `±x^n/n!` over `n = start, start + 2, ...` (`start` 0 or 1):
    `sin` (1, True), `cos` (0, True), `sinh` (1, False), `cosh` (0, False)."""
    with decimal.localcontext(_EXACT):
        term = x if start else Decimal(1)
        total, n = Decimal(0), start
        while term and abs(term) >= abs(total) * Decimal("1e-70"):
            total += term
            term = term * x * x / ((n + 1) * (n + 2))
            term, n = (-term if alternating else term), n + 2
        return total


def _atan_of_inverse(n: int) -> Decimal:
    """`atan(1/n)` by its series (Machin's terms, n >= 5)."""
    with decimal.localcontext(_EXACT):
        terms = (Decimal(-1) ** k / ((2 * k + 1) * Decimal(n) ** (2 * k + 1)) for k in range(60))
        return sum(terms, Decimal(0))


with decimal.localcontext(_EXACT):
    _PI = 16 * _atan_of_inverse(5) - 4 * _atan_of_inverse(239)
    """π by Machin's formula."""


def _sin_cos(x: Decimal) -> ExactPair:
    """`(sin x, cos x)`, `x` reduced modulo 2π first."""
    with decimal.localcontext(_EXACT):
        turns = (x / (2 * _PI)).to_integral_value()
        r = x - turns * 2 * _PI
    return _taylor(r, 1, True), _taylor(r, 0, True)


def _sinh_cosh(x: Decimal) -> ExactPair:
    """`(sinh x, cosh x)`: the series below 1, from `e^x` above."""
    if abs(x) < 1:
        return _taylor(x, 1, False), _taylor(x, 0, False)
    with decimal.localcontext(_EXACT):
        e = x.exp()
        return (e - 1 / e) / 2, (e + 1 / e) / 2


def _exact_exp(z: complex) -> ExactPair:
    a, b = _parts(z)
    sin_b, cos_b = _sin_cos(b)
    with decimal.localcontext(_EXACT):
        e = a.exp()
        return e * cos_b, e * sin_b


def _exact_sin(z: complex) -> ExactPair:
    a, b = _parts(z)
    (sin_a, cos_a), (sinh_b, cosh_b) = _sin_cos(a), _sinh_cosh(b)
    with decimal.localcontext(_EXACT):
        return sin_a * cosh_b, cos_a * sinh_b


def _exact_cos(z: complex) -> ExactPair:
    a, b = _parts(z)
    (sin_a, cos_a), (sinh_b, cosh_b) = _sin_cos(a), _sinh_cosh(b)
    with decimal.localcontext(_EXACT):
        return cos_a * cosh_b, -sin_a * sinh_b


def _exact_tanh(z: complex) -> ExactPair:
    a, b = _parts(z)
    (sinh_a, cosh_a), (sin_b, cos_b) = _sinh_cosh(a), _sin_cos(b)
    with decimal.localcontext(_EXACT):
        denominator = sinh_a * sinh_a + cos_b * cos_b
        return sinh_a * cosh_a / denominator, sin_b * cos_b / denominator


TRANSCENDENTAL: dict[str, tuple[Callable[[Any], Any], Callable[[complex], ExactPair], bool]] = {
    # name: (traced function, exact value, whether the real part is the growing one)
    "exp": (tnp.exp, _exact_exp, True),
    "tanh": (tnp.tanh, _exact_tanh, True),
    "sin": (tnp.sin, _exact_sin, False),
    "cos": (tnp.cos, _exact_cos, False),
}


def growing(dtype: Any, real_grows: bool) -> np.ndarray:
    """Every (growing, periodic) pair of `GROWTH` with the four sign patterns,
    the growing part real or imaginary."""
    grows, periodic = GROWTH[dtype]
    pairs = [(sa * g, sb * p) for g in grows for p in periodic for sa in (1, -1) for sb in (1, -1)]
    values = [complex(g, p) if real_grows else complex(p, g) for g, p in pairs]
    return np.array(values, dtype=np.complex128).astype(dtype)


@pytest.mark.parametrize("name", TRANSCENDENTAL)
@pytest.mark.parametrize("dtype", DTYPES)
def test_transcendental_at_extreme_magnitudes(dtype: Any, name: str) -> None:
    """Finite wherever the exact value is (`tanh(400) = 1`, `exp(710 + i)` has a
    finite real part) and within a few ulp of it, down to underflow."""
    function, exact, real_grows = TRANSCENDENTAL[name]
    z = growing(dtype, real_grows)
    got = td.jit(lambda z: function(z))(z)
    assert_ulps(got, [exact(complex(v)) for v in z], dtype, ULPS)


@pytest.mark.parametrize("dtype", DTYPES)
def test_transcendental_special_values_like_numpy(dtype: Any) -> None:
    """C99's special values as numpy (glibc) gives them, e.g. `exp(inf + nan i) =
    inf + nan i`, `tanh(inf + inf i) = 1 + 0i`, `cos(inf + inf i) = inf + nan i`;
    `z**p` for a zero, infinite or NaN part (`0**2.5 = 0`, `0**-0.5 = nan`) except
    an infinite part with a NaN one (glibc's complex product recovers the
    infinity there)."""
    values = TRANSCENDENTAL_SPECIAL
    z = np.array([complex(a, b) for a in values for b in values], dtype=dtype)
    with np.errstate(all="ignore"):
        for function in (tnp.exp, tnp.log, tnp.sin, tnp.cos, tnp.tanh):
            want = getattr(np, function.__name__)(z)
            assert_like_numpy(td.jit(lambda z, f=function: f(z))(z), want, [z])
        z = special(dtype)
        parts = np.stack([np.real(z), np.imag(z)])
        edge = ~np.all(np.isfinite(parts) & (parts != 0), axis=0)
        recovered = np.any(np.isinf(parts), axis=0) & np.any(np.isnan(parts), axis=0)
        z = z[edge & ~recovered]
        for p in (2.5, -0.5):
            assert_like_numpy(td.jit(lambda z, p=p: z**p)(z), z**p, [z])


def test_power_near_overflow() -> None:
    """`z**p` (exp of `p log z`) is finite where one part of the result is,
    although `|z|**p` overflows."""
    angles = np.array([0.1, 0.6, -1.2, 3.0])
    z = (10.0**123.4) * np.exp(1j * angles)
    got = td.jit(lambda z: z**2.5)(z)
    with np.errstate(over="ignore"):
        want = z**2.5
    assert np.isfinite(want.real).any()
    for part in (np.real, np.imag):
        np.testing.assert_allclose(part(got), part(want), rtol=1e-12)


DERIVATIVES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "exp": np.exp,
    "sin": np.cos,
    "cos": lambda z: -np.sin(z),
    "tanh": lambda z: 1 - np.tanh(z) ** 2,
}
GRADIENT_POINTS = {
    np.complex128: (709.9 + 0.785j, -745 + 1j, 400 + 0.1j, -30 + 2j, 1 + 710.55j, -1.2 - 710.52j),
    np.complex64: (88.9 + 0.785j, -103 + 1j, 60 + 0.1j, -12 + 2j, 1 + 89.3j, 0.3 - 89.3j),
}
"""Where `e^x` or `cosh y` overflows but the function and its derivative do not
(an infinite part would make the product with the cotangent NaN)."""


@pytest.mark.parametrize("name", DERIVATIVES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_transcendental_gradients_where_exp_overflows(dtype: Any, name: str) -> None:
    """`grad sum(Re f(z)) = conj(f'(z))`, finite where numpy's `f'` is (the
    derivative rules reuse the robust ops), and `grad |tanh z|²` finite. The
    rule of `tanh` is `1 - y²` on the rounded `y`: off by about `eps`."""
    function = TRANSCENDENTAL[name][0]
    z = np.array(GRADIENT_POINTS[dtype], dtype=dtype)
    (got,) = _traced_gradients(lambda z: tnp.sum(tnp.real(function(z))), (z,))
    want = np.conj(DERIVATIVES[name](z.astype(np.complex128)))
    eps = np.finfo(_real_dtype(dtype)).eps
    atol = 4 * eps if name == "tanh" else 0
    np.testing.assert_allclose(got, want.astype(dtype), rtol=8 * eps, atol=atol)
    squared = _traced_gradients(lambda z: tnp.sum(tnp.abs(tnp.tanh(z)) ** 2), (z,))
    assert np.isfinite(squared[0]).all()
