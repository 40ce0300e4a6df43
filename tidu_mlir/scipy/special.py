"""Special functions (`td.scipy.special`, as `jax.scipy.special`).

Each is a composite of `tidu_mlir.numpy`, `td.lax` and `td.nn` functions, no
primitive of its own, so it traces, differentiates and batches like any tnp
code (`gammaln`'s derivative is `digamma` by composition), and on concrete
arrays runs numpy and returns numpy results (integer and boolean inputs
computed as float64, no floating-point warnings: poles give inf or nan as in
SciPy, silently).

`gammaln` and `digamma` move their argument up to at least 8 with the
recurrence (`Γ(z+1) = z Γ(z)`) and sum the asymptotic (Stirling) series there
(below 5e-16 relative from 8 up); below 1/2 they use the reflection formula,
with the sine taken of `x - rint(x)` (exact), so large negative arguments keep
full precision. Between 0 and 8 the recurrence subtracts numbers near 10: the
error there is absolute, up to about 5e-15 (JAX's is alike), which is relative
except near the zeros (`gammaln` at 1 and 2, `digamma` at 1.4616...). Every
branch selected by a `where` sees harmless values where it is not taken, so no
inf or nan reaches a gradient from the branch not taken.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import numpy as np

import tidu_mlir.numpy as tnp
from tidu_mlir import lax, nn
from tidu_mlir.nn import Axis, _array, _max_shift
from tidu_mlir.tracing import Tracer

__all__ = [
    "digamma", "erf", "expit", "gammaln", "logit", "logsumexp", "multigammaln", "xlog1py",
    "xlogy",
]  # fmt: skip

P = ParamSpec("P")
R = TypeVar("R")

_SHIFT = 8
"""Arguments below this are moved up by `_SHIFT` with the recurrence before the
asymptotic series (whose terms at 8 fall below 1e-17 by the ninth)."""

# B_2k / (2k (2k-1)), k = 1..9: lgamma(w) - Stirling's leading terms = Σ c_k w^(1-2k).
_LGAMMA_SERIES = (
    1.0 / 12.0, -1.0 / 360.0, 1.0 / 1260.0, -1.0 / 1680.0, 1.0 / 1188.0, -691.0 / 360360.0,
    1.0 / 156.0, -3617.0 / 122400.0, 43867.0 / 244188.0,
)  # fmt: skip
# B_2k / 2k, k = 1..9: digamma(w) = log w - 1/(2w) - Σ d_k w^(-2k).
_DIGAMMA_SERIES = (
    1.0 / 12.0, -1.0 / 120.0, 1.0 / 252.0, -1.0 / 240.0, 1.0 / 132.0, -691.0 / 32760.0,
    1.0 / 12.0, -3617.0 / 8160.0, 43867.0 / 14364.0,
)  # fmt: skip
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_LOG_PI = math.log(math.pi)


def _quiet_when_concrete(fn: Callable[P, R]) -> Callable[P, R]:
    """Run `fn` with numpy's floating-point warnings off when no argument is
    traced: poles and logs of 0 give inf or nan silently, as SciPy's do."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        if any(isinstance(arg, Tracer) for arg in (*args, *kwargs.values())):
            return fn(*args, **kwargs)
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)

    return wrapper


def _horner(coefficients: tuple[float, ...], r: Any) -> Any:
    """`c0 + c1 r + c2 r² + ...`."""
    acc: Any = coefficients[-1]
    for c in coefficients[-2::-1]:
        acc = acc * r + c
    return acc


def _shifted(z: Any) -> tuple[Any, Any, Any]:
    """For `z >= 1/2`: `(w, small, zs)` with `w = z + 8` where `z < 8` (`small`),
    else `z`, and `zs` = `z` where small, 1 elsewhere (safe for the recurrence's
    factors `zs, zs + 1, ..., zs + 7`, which never overflow there)."""
    small = tnp.less(z, float(_SHIFT))
    return tnp.where(small, z + float(_SHIFT), z), small, tnp.where(small, z, 1.0)


def _gammaln_at_least_half(z: Any) -> Any:
    """log Γ(z) for `z >= 1/2` (or nan)."""
    w, small, zs = _shifted(z)
    inverse = 1.0 / w
    series = inverse * _horner(_LGAMMA_SERIES, inverse * inverse)
    # (w - 1/2)(log w - 1) - 1/2 is (w - 1/2) log w - w, written so w = inf gives inf.
    stirling = (w - 0.5) * (tnp.log(w) - 1.0) + (_HALF_LOG_2PI - 0.5) + series
    product = zs
    for k in range(1, _SHIFT):
        product = product * (zs + float(k))
    return stirling - tnp.where(small, tnp.log(product), 0.0)


def _digamma_at_least_half(z: Any) -> Any:
    """ψ(z) for `z >= 1/2` (or nan)."""
    w, small, zs = _shifted(z)
    inverse = 1.0 / w
    r = inverse * inverse
    asymptotic = tnp.log(w) - 0.5 * inverse - r * _horner(_DIGAMMA_SERIES, r)
    reciprocals = 1.0 / zs
    for k in range(1, _SHIFT):
        reciprocals = reciprocals + 1.0 / (zs + float(k))
    return asymptotic - tnp.where(small, reciprocals, 0.0)


def _reflected(x: Any) -> tuple[Any, Any, Any]:
    """`(reflect, z, r)`: `reflect = x < 1/2`; `z = 1 - x` there, else `x` (so
    `z >= 1/2`); `r = x - rint(x)` (exact, `|r| <= 1/2`, `sin(πx) = ±sin(πr)`)
    where reflected, 1/4 elsewhere (no pole in the branch not taken)."""
    reflect = tnp.less(x, 0.5)
    z = tnp.where(reflect, 1.0 - x, x)
    xs = tnp.where(reflect, x, 0.25)
    return reflect, z, xs - tnp.rint(xs)


@_quiet_when_concrete
def gammaln(x: Any) -> Any:
    """`log|Γ(x)|` for real `x`: inf at the poles (0, -1, -2, ...) and at ±inf
    (as JAX; SciPy gives -inf at -inf).

    For `x < 1/2` by reflection, `log(π / |sin(πx)|) - gammaln(1 - x)`. The
    derivative is `digamma(x)` (by composition).

    Examples
    --------
    >>> td.scipy.special.gammaln(np.array([0.5, 1.0, 10.0, -2.5, 0.0]))
    array([ 0.57236494,  0.        , 12.80182748, -0.05624372,         inf])
    >>> td.grad(td.scipy.special.gammaln)(np.array(1.0))  # -γ (Euler's constant)
    array(-0.57721566)
    """
    x = _array(x)
    reflect, z, r = _reflected(x)
    positive = _gammaln_at_least_half(z)
    reflected = (_LOG_PI - tnp.log(tnp.abs(tnp.sin(math.pi * r)))) - positive
    result = tnp.where(reflect, reflected, positive)
    return tnp.where(tnp.equal(x, -math.inf), math.inf, result)


@_quiet_when_concrete
def digamma(x: Any) -> Any:
    """ψ(x), the derivative of `gammaln`, for real `x`.

    For `x < 1/2` by reflection, `ψ(1 - x) - π / tan(πx)`. As SciPy: -inf at
    +0, inf at -0, nan at the other poles (-1, -2, ...) and at -inf.

    Examples
    --------
    >>> td.scipy.special.digamma(np.array([1.0, 0.5, 10.0, -2.5]))
    array([-0.57721566, -1.96351003,  2.25175259,  1.10315664])
    >>> td.grad(td.scipy.special.digamma)(np.array(1.0))  # π²/6
    array(1.64493407)
    """
    x = _array(x)
    reflect, z, r = _reflected(x)
    positive = _digamma_at_least_half(z)
    pir = math.pi * r
    reflected = positive - math.pi * tnp.cos(pir) / tnp.sin(pir)
    result = tnp.where(reflect, reflected, positive)
    # Poles: -1/x is ∓inf at ±0 and finite wherever it is not selected.
    pole = tnp.where(tnp.less_equal(x, 0.0), tnp.equal(x, tnp.rint(x)), False)
    zero = tnp.equal(x, 0.0)
    at_pole = tnp.where(zero, -1.0 / tnp.where(zero, x, 1.0), math.nan)
    return tnp.where(pole, at_pole, result)


def multigammaln(a: Any, d: int) -> Any:
    """The log of the multivariate gamma function of dimension `d`:
    `d(d-1)/4 · log(π) + Σ_{j<d} gammaln(a - j/2)`.

    Parameters
    ----------
    a : array_like
        The argument (traced or not); defined for `a > (d - 1)/2`.
    d : int
        The dimension, a static positive integer.

    Examples
    --------
    >>> td.scipy.special.multigammaln(np.array([3.0, 5.0]), 2)
    array([1.55019499, 6.20415534])
    >>> td.grad(lambda a: td.scipy.special.multigammaln(a, 3))(np.array(4.0))
    array(3.28205864)
    """
    if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 1:
        raise ValueError(f"multigammaln needs a positive integer d, got {d!r}")
    a = _array(a)
    halves = np.arange(int(d), dtype=a.dtype) / np.asarray(2.0, a.dtype)
    terms = gammaln(tnp.expand_dims(a, -1) - halves)
    return tnp.sum(terms, axis=-1) + (d * (d - 1) / 4.0) * _LOG_PI


@_quiet_when_concrete
def logsumexp(
    a: Any,
    axis: Axis = None,
    b: Any = None,
    keepdims: bool = False,
    return_sign: bool = False,
) -> Any:
    """`log(Σ b · exp(a))` over `axis`, the maximum subtracted first.

    Without `b` and `return_sign` this is `td.nn.logsumexp`. `-inf` entries
    and entries whose weight `b` is 0 add nothing and get gradient 0. JAX's
    `where` argument is not supported.

    Parameters
    ----------
    a : array_like
        The input.
    axis : int, tuple of ints or None
        The axes to reduce; None (the default) reduces all of them.
    b : array_like, optional
        Weights, broadcast against `a`; they may be negative.
    keepdims : bool
        Keep the reduced axes with size 1.
    return_sign : bool
        Return `(log|Σ b · exp(a)|, sign(Σ b · exp(a)))`. Without it a negative
        sum gives nan, as in JAX and SciPy.

    Examples
    --------
    >>> td.scipy.special.logsumexp(np.array([1000.0, 1000.0]), b=np.array([0.5, 0.5]))
    np.float64(1000.0)
    >>> td.scipy.special.logsumexp(np.zeros(2), b=np.array([1.0, -3.0]), return_sign=True)
    (np.float64(0.6931471805599453), np.float64(-1.0))
    >>> td.grad(lambda a: td.scipy.special.logsumexp(a, b=np.array([2.0, 0.0])))(
    ...     np.array([0.0, 5.0]))
    array([1., 0.])
    """
    a = _array(a)
    if b is None and not return_sign:
        return nn.logsumexp(a, axis, keepdims=keepdims)
    if b is not None:
        b = _array(b)
        a = tnp.where(tnp.not_equal(b, 0.0), a, -math.inf)
    m = _max_shift(a, axis)
    exponentials = tnp.exp(a - m)
    if b is not None:
        exponentials = exponentials * b
    total = tnp.sum(exponentials, axis=axis, keepdims=keepdims)
    sign = tnp.sign(total)
    out = tnp.log(tnp.abs(total)) + tnp.reshape(m, tnp.shape(total))
    if return_sign:
        return out, sign
    out = tnp.where(tnp.less(sign, 0.0), math.nan, out)
    return out[()] if isinstance(out, np.ndarray) else out  # a scalar, as numpy's sum


def erf(x: Any) -> Any:
    """The error function, `2/√π ∫_0^x exp(-t²) dt` (`td.lax.erf`).

    Examples
    --------
    >>> td.scipy.special.erf(np.array([0.0, 1.0]))
    array([0.        , 0.84270079])
    >>> td.grad(td.scipy.special.erf)(np.array(0.0))  # 2/√π
    array(1.12837917)
    """
    return lax.erf(_array(x))


def expit(x: Any) -> Any:
    """The logistic sigmoid `1 / (1 + exp(-x))` (`td.nn.sigmoid`).

    Examples
    --------
    >>> td.scipy.special.expit(np.array([-1000.0, 0.0, 1000.0]))
    array([0. , 0.5, 1. ])
    """
    return nn.sigmoid(x)


@_quiet_when_concrete
def logit(p: Any) -> Any:
    """`log(p / (1 - p))`, the inverse of `expit`, computed as `log(p) - log1p(-p)`:
    -inf at 0, inf at 1, nan outside [0, 1].

    Examples
    --------
    >>> td.scipy.special.logit(np.array([0.0, 0.5, 0.75, 1.0]))
    array([      -inf, 0.        , 1.09861229,        inf])
    >>> td.grad(td.scipy.special.logit)(np.array(0.5))
    array(4.)
    """
    p = _array(p)
    return tnp.log(p) - tnp.log1p(tnp.negative(p))


def _zero_where_x_is(x: Any, y: Any, outside: Callable[[Any], Any], log: Callable[[Any], Any],
                     neutral: float) -> Any:  # fmt: skip
    """`x · log(y)`, 0 where `x == 0` (unless y is nan). There `y` is replaced
    by `neutral` (`log(neutral) = 0`) when `outside(y)` (the log is not
    finite), so neither the value nor a gradient sees `0 · inf`; where y is
    fine the product is left alone, so ∂/∂x at x = 0 is still `log(y)`."""
    x, y = _array(x), _array(y)
    safe = tnp.where(outside(y), neutral, y)
    return x * log(tnp.where(tnp.equal(x, 0.0), safe, y))


@_quiet_when_concrete
def xlogy(x: Any, y: Any) -> Any:
    """`x · log(y)`, 0 where `x == 0` (even where `y` is 0 or negative).

    The gradient is finite at `x == 0`: ∂/∂y is 0 there, ∂/∂x is `log(y)`
    (0 where `y <= 0`; JAX has -inf and nan at `y == 0`).

    Examples
    --------
    >>> td.scipy.special.xlogy(np.array([0.0, 0.0, 2.0]), np.array([0.0, 3.0, np.e]))
    array([0., 0., 2.])
    >>> td.grad(td.scipy.special.xlogy, argnums=(0, 1))(np.array(0.0), np.array(0.0))
    (array(0.), array(0.))
    """
    return _zero_where_x_is(
        x, y, lambda v: tnp.where(tnp.less_equal(v, 0.0), True, tnp.equal(v, math.inf)),
        tnp.log, 1.0,
    )  # fmt: skip


@_quiet_when_concrete
def xlog1py(x: Any, y: Any) -> Any:
    """`x · log1p(y)`, 0 where `x == 0` (even where `y <= -1`).

    The gradient is finite at `x == 0`, as `xlogy`'s.

    Examples
    --------
    >>> td.scipy.special.xlog1py(np.array([0.0, 2.0]), np.array([-1.0, np.e - 1.0]))
    array([0., 2.])
    >>> td.grad(td.scipy.special.xlog1py, argnums=(0, 1))(np.array(0.0), np.array(-1.0))
    (array(0.), array(0.))
    """
    return _zero_where_x_is(
        x, y, lambda v: tnp.where(tnp.less_equal(v, -1.0), True, tnp.equal(v, math.inf)),
        tnp.log1p, 0.0,
    )  # fmt: skip
