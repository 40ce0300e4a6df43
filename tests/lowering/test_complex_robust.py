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
    with np.errstate(over="ignore"):
        return parts[:, 0].astype(real) + 1j * parts[:, 1].astype(real)


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
    (`componentwise`: of the part itself), equal where that overflows."""
    want = _rounded(exact, dtype)
    got = np.asarray(got).astype(want.dtype)
    real = _real_dtype(dtype)
    bad = np.zeros(want.shape, bool)
    larger = np.maximum(np.abs(np.real(want)), np.abs(np.imag(want))).astype(real)
    for part in (np.real, np.imag):
        scale = np.abs(part(want)).astype(real) if componentwise else larger
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
