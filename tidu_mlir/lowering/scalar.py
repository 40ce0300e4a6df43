"""Scalar element arithmetic for the prim lowering: one prim op applied to one element.

`ScalarBuilder` inserts `arith`/`math` ops at a builder's insertion point. A real
element is one SSA value (f32, f64, i32, i64 or i1); a complex element is a
`(re, im)` pair of real values, so complex arithmetic is expanded to real
arithmetic here (the `llvm` dialect has no complex type) with the usual real
formulas:

* `exp(a+bi) = e^a (cos b + i sin b)`, `log z = log|z| + i atan2(b, a)`
* `sin`, `cos` through `sinh`/`cosh` of the imaginary part
* `tanh(a+bi) = (sinh a cosh a + i sin b cos b) / (sinh² a + cos² b)`
* `z**p` for a constant `p`: repeated multiplication for small integer `p`,
  `exp((p + 0i) log z)` otherwise.

`exp`, `sin`, `cos` and `tanh` do not overflow where the result is finite:
beyond `e^709` (f32: `e^88`) the exponential is reduced by `e^709` and the
factor `cos b` (or `sin b`) multiplied in before it (`reduced_exp`), and
`tanh` clamps `a` to `±20` (f32: `±10`) and multiplies the imaginary part by
the decay `e^(-2(|a| - 20))`. Special values (zeros, infinities, NaNs) are
C99's, as numpy (glibc) gives them.

`|z|`, `/` and `sqrt` are at least as robust as numpy's (docs/complex.md):
`|z|` (and `log |z|`) scales both parts by a power of two when `max(|a|, |b|)`
is outside `[2^-500, 2^500]` (f32: `2^±50`), so nothing overflows or
underflows in between, and is `inf` when a part is (`|inf + nan i| = inf`);
near `|z| = 1`, `log |z|` is `log1p` of an exactly computed `a² + b² - 1`;
division is Smith's algorithm with numpy's expressions (operands halved near
overflow); `sqrt` is the stable `t = sqrt((|a| + |z|)/2)` (scaled),
`|b|/(2t)` (swapped for `a < 0`), with C99's special values. All are
branch-free (selects), so loops vectorize.

Real `tanh` is expanded into a branch-free kernel (`tanh_real`). With a
`KernelLibrary` (`math_library.MathLibrary`) such a kernel is emitted once per
module as a private function and called: the xDSL passes see one op per use and
LLVM inlines the kernel at O3 before vectorizing.

Element ops get the `contract` fast-math flag only (FMA formation); reductions
add `reassoc` so the vectorizer may reorder sums (see `reduction_flags`).

The arithmetic shared by integers and floats (`add`, `sub`, `mul`, `neg`,
`maximum`, `minimum`, `compare`, `cast`) dispatches on the operand's type, with
numpy's integer semantics: two's complement wrap-around (no `nsw`/`nuw` flags),
signed order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import copysign
from math import exp as math_exp
from typing import Protocol, TypeAlias, TypeVar, cast

from xdsl.builder import Builder
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import AnyFloat, Float32Type, FloatAttr, IntegerAttr, IntegerType, i1
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Attribute, Operation, SSAValue

Complex: TypeAlias = tuple[SSAValue, SSAValue]
Element: TypeAlias = SSAValue | Complex

Expansion: TypeAlias = "Callable[[ScalarBuilder, SSAValue], SSAValue]"
"""A kernel body: the ops computing it on a value, inserted by a `ScalarBuilder`."""

ELEMENT_FLAGS = arith.FastMathFlagsAttr([FastMathFlag.ALLOW_CONTRACT])
REDUCTION_FLAGS = arith.FastMathFlagsAttr([FastMathFlag.REASSOC, FastMathFlag.ALLOW_CONTRACT])

_CMP_PREDICATES = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}
_CMPI_PREDICATES = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}
_MAX_INT_POWER = 4

T = TypeVar("T")


def as_real(value: Element) -> SSAValue:
    assert isinstance(value, SSAValue), "expected a real element"
    return value


def as_complex(value: Element) -> Complex:
    assert isinstance(value, tuple), "expected a complex element"
    return value


class KernelLibrary(Protocol):
    """Shared kernel functions of a module (`math_library.MathLibrary`); a protocol so
    this module does not depend on the library that uses it."""

    def call(self, b: Builder, name: str, a: SSAValue, expand: Expansion) -> SSAValue:
        """A call of kernel `name` on `a`, defining it with `expand` the first time."""
        ...


class ScalarBuilder:
    """Inserts scalar ops at `builder`'s insertion point (see the module docstring)."""

    def __init__(
        self,
        builder: Builder,
        flags: arith.FastMathFlagsAttr = ELEMENT_FLAGS,
        library: KernelLibrary | None = None,
    ):
        self.builder = builder
        self.flags = flags
        self.library = library
        self._constants: dict[tuple[float, float, Attribute], SSAValue] = {}

    def emit(self, op: Operation) -> SSAValue:
        """Insert `op` and return its single result."""
        self.builder.insert(op)
        return op.results[0]

    # ----- real arithmetic -------------------------------------------------

    def const(self, value: float, typ: Attribute) -> SSAValue:
        """A constant, created once per builder (all uses follow it in the same block);
        `-0.0` and `0.0` are two constants. An integer `value` stays exact for an
        integer `typ` (an int64 beyond 2^53 is no float)."""
        key = (value, copysign(1.0, value), typ)
        if key not in self._constants:
            attr = (
                IntegerAttr(int(value), typ)
                if isinstance(typ, IntegerType)
                else FloatAttr(value, cast(AnyFloat, typ))
            )
            self._constants[key] = self.emit(arith.ConstantOp(attr))
        return self._constants[key]

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if _is_integer(a):
            return self.emit(arith.AddiOp(a, b))
        return self.emit(arith.AddfOp(a, b, self.flags))

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if _is_integer(a):
            return self.emit(arith.SubiOp(a, b))
        return self.emit(arith.SubfOp(a, b, self.flags))

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if _is_integer(a):
            return self.emit(arith.MuliOp(a, b))
        return self.emit(arith.MulfOp(a, b, self.flags))

    def div(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(arith.DivfOp(a, b, self.flags))

    def neg(self, a: SSAValue) -> SSAValue:
        """`-a`; `0 - a` for integers (`arith` has no negi), so `-INT_MIN` wraps to itself."""
        if _is_integer(a):
            return self.sub(self.const(0, a.type), a)
        return self.emit(arith.NegfOp(a))

    def maximum(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if _is_integer(a):
            return self.emit(arith.MaxSIOp(a, b))
        return self.emit(arith.MaximumfOp(a, b))

    def minimum(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if _is_integer(a):
            return self.emit(arith.MinSIOp(a, b))
        return self.emit(arith.MinimumfOp(a, b))

    def unary(self, op_type: Callable[[SSAValue], Operation], a: SSAValue) -> SSAValue:
        return self.emit(op_type(a))

    def binary(
        self, op_type: Callable[[SSAValue, SSAValue], Operation], a: SSAValue, b: SSAValue
    ) -> SSAValue:
        return self.emit(op_type(a, b))

    def select(self, pred: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(arith.SelectOp(pred, a, b))

    def compare(self, direction: str, a: SSAValue, b: SSAValue) -> SSAValue:
        """`a <direction> b`: ordered for floats except `ne`, signed for integers."""
        if _is_integer(a):
            return self.emit(arith.CmpiOp(a, b, _CMPI_PREDICATES[direction]))
        return self.emit(arith.CmpfOp(a, b, _CMP_PREDICATES[direction]))

    def cast(self, a: SSAValue, target: Attribute) -> SSAValue:
        """`a` as the real type `target`, like numpy's `astype`: to i1 is `a != 0`
        (true for NaN), from i1 is 0 or 1, float to integer truncates toward zero,
        integer to integer sign-extends or wraps (identity when the types are equal)."""
        source = a.type
        if source == target:
            return a
        if target == i1:
            return self.compare("ne", a, self.const(0, source))
        if source == i1:
            if isinstance(target, IntegerType):
                return self.emit(arith.ExtUIOp(a, target))
            # xDSL's llvm dialect has no uitofp
            return self.select(a, self.const(1.0, target), self.const(0.0, target))
        if isinstance(source, IntegerType) and isinstance(target, IntegerType):
            widen = target.width.data > source.width.data
            return self.emit(arith.ExtSIOp(a, target) if widen else arith.TruncIOp(a, target))
        if isinstance(source, IntegerType):
            return self.emit(arith.SIToFPOp(a, cast(AnyFloat, target)))
        if isinstance(target, IntegerType):
            return self.emit(arith.FPToSIOp(a, target))
        if isinstance(target, Float32Type):
            return self.emit(arith.TruncFOp(a, target))
        return self.emit(arith.ExtFOp(a, target))

    def products(
        self,
        a: SSAValue,
        b: SSAValue,
        c: SSAValue,
        d: SSAValue,
        combine: Callable[[SSAValue, SSAValue], Operation],
    ) -> SSAValue:
        """`a·b ± c·d` with each op rounded (no FMA contraction), so that equal
        expressions round equally: `z/z` has the real part 1."""
        return self.emit(combine(self.emit(arith.MulfOp(a, b)), self.emit(arith.MulfOp(c, d))))

    def fabs(self, a: SSAValue) -> SSAValue:
        return self.unary(math.AbsFOp, a)

    def larger(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """The larger of two non-negative values (`b` when one is NaN): a compare
        and a select, cheaper than NaN-propagating `maximumf`."""
        return self.select(self.compare("gt", a, b), a, b)

    def scaling(
        self, magnitude: SSAValue, unscale: Callable[[int], float]
    ) -> tuple[SSAValue, SSAValue]:
        """`(s, u)`: `s = 2^k` bringing `magnitude·s` into the safe range of
        `_Scaling` (`k = 0` inside it) and `u = unscale(k)`."""
        t = magnitude.type
        limits = _SCALING_F32 if isinstance(t, Float32Type) else _SCALING_F64
        big = self.compare("gt", magnitude, self.const(limits.big, t))
        small = self.compare("lt", magnitude, self.const(limits.small, t))

        def pick(value: Callable[[int], float]) -> SSAValue:
            inner = self.select(small, self.const(value(limits.up), t), self.const(value(0), t))
            return self.select(big, self.const(value(limits.down), t), inner)

        return pick(lambda k: 2.0**k), pick(unscale)

    def any_above(self, values: list[SSAValue], limit: float) -> SSAValue:
        """Whether any of `values` is above `limit` (an i1)."""
        bound = self.const(limit, values[0].type)
        above = [self.compare("gt", v, bound) for v in values]
        result = above[0]
        for flag in above[1:]:
            result = self.emit(arith.OrIOp(result, flag))
        return result

    def inf_if_either(self, value: SSAValue, x: SSAValue, y: SSAValue) -> SSAValue:
        """`value`, or `inf` where `x` or `y` (non-negative) is `inf`, NaN or not."""
        inf = self.const(float("inf"), value.type)
        value = self.select(self.compare("eq", y, inf), inf, value)
        return self.select(self.compare("eq", x, inf), inf, value)

    def both(self, p: SSAValue, q: SSAValue) -> SSAValue:
        """`p and q` (i1)."""
        return self.emit(arith.AndIOp(p, q))

    def nonfinite(self, a: SSAValue) -> SSAValue:
        """Whether `a` is infinite or NaN (an i1)."""
        inf = self.const(float("inf"), a.type)
        return self.emit(arith.CmpfOp(self.fabs(a), inf, "uge"))

    def norm(self, x: SSAValue, y: SSAValue) -> SSAValue:
        """`sqrt(x² + y²)` as written (the caller scales)."""
        return self.unary(math.SqrtOp, self.add(self.mul(x, x), self.mul(y, y)))

    def hypot(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """`sqrt(a² + b²)` without intermediate overflow or underflow, `inf`
        when `a` or `b` is (numpy's `hypot`)."""
        x, y = self.fabs(a), self.fabs(b)
        scale, unscale = self.scaling(self.larger(x, y), lambda k: 2.0**-k)
        h = self.mul(self.norm(self.mul(x, scale), self.mul(y, scale)), unscale)
        return self.inf_if_either(h, x, y)

    def log_hypot(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """`log sqrt(a² + b²)` as `log` of the scaled norm plus `-k·log 2`: a
        tiny `|z|` is never rounded to a subnormal (which keeps few digits).
        Where `t = a² + b² - 1` is below 1/2 in modulus it is `log1p(t)/2`
        instead, so a tiny result keeps its digits (`log|1 + 1e-10i| = 5e-21`,
        not 0); one `log` serves both."""
        t = a.type
        x, y = self.fabs(a), self.fabs(b)
        larger = self.larger(x, y)
        scale, offset = self.scaling(larger, lambda k: -k * _LN2)
        norm = self.inf_if_either(self.norm(self.mul(x, scale), self.mul(y, scale)), x, y)
        excess = self.norm_squared_minus_one(larger, self.select(self.compare("gt", x, y), y, x))
        is_near = self.compare("lt", self.fabs(excess), self.const(0.5, t))
        u = self.add(self.const(1.0, t), excess)
        logarithm = self.unary(math.LogOp, self.select(is_near, u, norm))
        near = self.mul(self.log1p_from(excess, u, logarithm), self.const(0.5, t))
        return self.select(is_near, near, self.add(logarithm, offset))

    def norm_squared_minus_one(self, x: SSAValue, y: SSAValue) -> SSAValue:
        """`x² + y² - 1` for `x >= y >= 0` from exact pieces: each square as a
        rounded `h` plus its error `fma(x, x, -h)`, `h_x + h_y` as a rounded `s`
        plus its error (Fast2Sum), and `s - 1` exact where `s` is in `[1/2, 2]`;
        so near `|z| = 1` the result has all its digits. Unflagged ops: a
        contraction would change the errors the pieces stand for."""
        (high_x, low_x), (high_y, low_y) = self.exact_square(x), self.exact_square(y)
        total = self.emit(arith.AddfOp(high_x, high_y))
        error = self.emit(arith.SubfOp(high_y, self.emit(arith.SubfOp(total, high_x))))
        lows = self.emit(arith.AddfOp(self.emit(arith.AddfOp(error, low_x)), low_y))
        excess = self.emit(arith.SubfOp(total, self.const(1.0, x.type)))
        return self.emit(arith.AddfOp(excess, lows))

    def exact_square(self, x: SSAValue) -> Complex:
        """`(h, l)` with `h + l = x²` exactly: `h` rounded, `l = fma(x, x, -h)`."""
        high = self.emit(arith.MulfOp(x, x))
        return high, self.emit(math.FmaOp(x, x, self.neg(high)))

    def log1p_from(self, t: SSAValue, u: SSAValue, log_u: SSAValue) -> SSAValue:
        """`log(1 + t)` from `u = 1 + t` (rounded) and `log u` by Kahan's
        `log(u)·t/(u - 1)`: accurate for a tiny `t` (`t` itself where `u`
        rounds to 1), and vectorizable, unlike libm's `log1p` call."""
        one = self.const(1.0, t.type)
        ratio = self.div(t, self.sub(u, one))
        return self.select(self.compare("eq", u, one), t, self.mul(log_u, ratio))

    def kernel(self, name: str, a: SSAValue, expand: Expansion) -> SSAValue:
        """`expand(self, a)` inline, or a call of it as the library function `name`."""
        if self.library is None:
            return expand(self, a)
        return self.library.call(self.builder, name, a, expand)

    def exp(self, a: SSAValue) -> SSAValue:
        return self.unary(math.ExpOp, a)

    def tanh(self, a: SSAValue) -> SSAValue:
        return self.kernel("tanh", a, ScalarBuilder.tanh_real)

    def tanh_real(self, a: SSAValue) -> SSAValue:
        """Cephes' tanh: a rational approximation for |a| < 0.625, else
        `copysign(1 - 2 / (exp(2|a|) + 1), a)`; both computed, one selected, so the
        loop stays branch-free and vectorizes with libmvec's exp."""
        t = a.type
        magnitude = self.unary(math.AbsFOp, a)
        z = self.mul(a, a)
        p = _horner(self, z, _TANH_P, t, monic=False)
        q = _horner(self, z, _TANH_Q, t, monic=True)
        small = self.add(a, self.mul(self.mul(a, z), self.div(p, q)))
        two, one = self.const(2.0, t), self.const(1.0, t)
        s = self.exp(self.mul(two, magnitude))
        big = self.sub(one, self.div(two, self.add(s, one)))
        big = self.binary(math.CopySignOp, big, a)
        is_small = self.emit(arith.CmpfOp(magnitude, self.const(0.625, t), "olt"))
        return self.select(is_small, small, big)

    def real_pow(self, a: SSAValue, exponent: float) -> SSAValue:
        """`a ** exponent`: multiplications for small integers, sqrt for 0.5, else powf."""
        if exponent == 0.5:
            return self.unary(math.SqrtOp, a)
        integer = _small_integer(exponent)
        if integer is None:
            return self.binary(math.PowFOp, a, self.const(exponent, a.type))
        one = self.const(1.0, a.type)
        result = _power_by_squaring(a, abs(integer), one, self.mul)
        return self.div(one, result) if integer < 0 else result

    # ----- complex arithmetic ----------------------------------------------

    def c_add(self, x: Complex, y: Complex) -> Complex:
        return self.add(x[0], y[0]), self.add(x[1], y[1])

    def c_sub(self, x: Complex, y: Complex) -> Complex:
        return self.sub(x[0], y[0]), self.sub(x[1], y[1])

    def c_mul(self, x: Complex, y: Complex) -> Complex:
        (a, b), (c, d) = x, y
        return self.sub(self.mul(a, c), self.mul(b, d)), self.add(self.mul(a, d), self.mul(b, c))

    def c_div(self, x: Complex, y: Complex) -> Complex:
        """Smith's algorithm with numpy's expressions: with `p` the part of `y`
        of larger modulus, `q` the other and `r = q/p`, the quotient is
        `(a·ra + b·rb, b·ra - a·rb) / (p + q·r)`, `(ra, rb) = (1, r)` when
        `p = c`, `(r, 1)` when `p = d`. Where `|a|`, `|b|` or `|p|` is above a
        quarter of the largest value, `x` and `y` are halved (exact there:
        `ra`, `rb` and `p` scaled by `h = 1/2`), so `a·ra + b·rb` and
        `p + q·r <= 2|p|` do not overflow. A zero `y` gives `(a, b)/|c|`."""
        (a, b), (c, d) = x, y
        if _is_positive_zero(d):
            return self.c_div_real(x, c)
        t = a.type
        abs_c, abs_d = self.fabs(c), self.fabs(d)
        c_larger = self.compare("ge", abs_c, abs_d)
        p, q = self.select(c_larger, c, d), self.select(c_larger, d, c)
        ratio = self.div(q, p)
        huge = self.any_above(
            [self.select(c_larger, abs_c, abs_d), self.fabs(a), self.fabs(b)], _huge(t)
        )
        half = self.select(huge, self.const(0.5, t), self.const(1.0, t))
        half_ratio = self.mul(ratio, half)
        ra = self.select(c_larger, half, half_ratio)
        rb = self.select(c_larger, half_ratio, half)
        re = self.products(a, ra, b, rb, arith.AddfOp)
        im = self.products(b, ra, a, rb, arith.SubfOp)
        denominator = self.products(p, half, q, half_ratio, arith.AddfOp)
        zero = self.compare("eq", p, self.const(0.0, t))
        re, im = self.select(zero, a, re), self.select(zero, b, im)
        denominator = self.select(zero, abs_c, denominator)
        return self.div(re, denominator), self.div(im, denominator)

    def c_div_real(self, x: Complex, c: SSAValue) -> Complex:
        """`c_div(x, (c, +0))` (a converted real divisor, as in the gradient of
        `|z|`) with the same special values but no ratio to divide: `r = +0/c`
        is `copysign(0, c)` and the denominator `c + 0·r` is `c + 0`."""
        a, b = x
        zero = self.const(0.0, a.type)
        ratio = self.binary(math.CopySignOp, zero, c)
        re = self.add(a, self.mul(b, ratio))
        im = self.sub(b, self.mul(a, ratio))
        is_zero = self.compare("eq", c, zero)
        re, im = self.select(is_zero, a, re), self.select(is_zero, b, im)
        denominator = self.add(c, zero)  # |c| when c = -0
        return self.div(re, denominator), self.div(im, denominator)

    def c_neg(self, x: Complex) -> Complex:
        return self.neg(x[0]), self.neg(x[1])

    def c_conj(self, x: Complex) -> Complex:
        return x[0], self.neg(x[1])

    def c_abs(self, x: Complex) -> SSAValue:
        return self.hypot(*x)

    def c_exp(self, x: Complex) -> Complex:
        """`e^a (cos b + i sin b)`, finite wherever the result is (`a` reduced as in
        `reduced_exp`), with C99's special values: `exp(nan + 0i) = nan + 0i`,
        `exp(inf + yi) = inf + nan i` and `exp(-inf + yi) = 0 ± 0i` for a
        non-finite `y`."""
        a, b = x
        t = a.type
        reduce = self.compare("gt", a, self.const(_exp_limit(t), t))
        e = self.reduced_exp(a, reduce)
        scale = self.select(reduce, self.const(math_exp(_exp_limit(t)), t), self.const(1.0, t))
        re = self.mul(self.mul(self.unary(math.CosOp, b), e), scale)
        im = self.mul(self.mul(self.unary(math.SinOp, b), e), scale)
        inf = self.const(float("inf"), t)
        nonfinite_b = self.nonfinite(b)
        re = self.select(self.both(self.compare("eq", a, inf), nonfinite_b), inf, re)
        vanishing = self.both(self.compare("eq", a, self.const(float("-inf"), t)), nonfinite_b)
        zero = self.const(0.0, t)
        re = self.select(vanishing, zero, re)
        im = self.select(vanishing, self.binary(math.CopySignOp, zero, b), im)
        return re, self.select(self.compare("eq", b, zero), b, im)

    def reduced_exp(self, y: SSAValue, reduce: SSAValue) -> SSAValue:
        """`e^(y - c)` where `reduce` (i1) is set, else `e^y`, the exponent clamped
        to `c` (709, f32: 88; `y - c` is exact): callers multiply a factor of
        modulus at most 1 by it first, then by `e^c`, so only a product that
        overflows is `inf` (`e^710·cos 1` is finite, `e^710` is not)."""
        t = y.type
        limit = self.const(_exp_limit(t), t)
        shift = self.select(reduce, limit, self.const(0.0, t))
        return self.exp(self.minimum(self.sub(y, shift), limit))

    def cosh_sinh_times(self, y: SSAValue, p: SSAValue, q: SSAValue) -> Complex:
        """`(p·cosh y, q·sinh y)` for `|p|, |q| <= 1`: libm's `cosh` and `sinh`
        up to `|y| = c` (`reduced_exp`), beyond it `e^|y|/2` (equal to them
        there to the last bit) scaled as in `reduced_exp`, so finite wherever
        the products are."""
        t = y.type
        magnitude = self.fabs(y)
        reduce = self.compare("gt", magnitude, self.const(_exp_limit(t), t))
        e = self.reduced_exp(magnitude, reduce)
        half_scale = self.const(math_exp(_exp_limit(t)) / 2, t)
        big_re = self.mul(self.mul(p, e), half_scale)
        big_im = self.mul(self.mul(q, e), self.binary(math.CopySignOp, half_scale, y))
        re = self.mul(p, self.unary(math.CoshOp, y))
        im = self.mul(q, self.unary(math.SinhOp, y))
        return self.select(reduce, big_re, re), self.select(reduce, big_im, im)

    def c_log(self, x: Complex) -> Complex:
        a, b = x
        return self.log_hypot(a, b), self.binary(math.Atan2Op, b, a)

    def c_sin(self, x: Complex) -> Complex:
        """`sin a cosh b + i cos a sinh b` (`cosh_sinh_times`) with C99's special
        values: `sin(±0 + nan i) = ±0 + nan i` and, for a non-finite `a`, the
        imaginary part `b` where `b = ±0` and `+inf` where `b = ±inf`."""
        a, b = x
        re, im = self.cosh_sinh_times(b, self.unary(math.SinOp, a), self.unary(math.CosOp, a))
        t = a.type
        zero, inf = self.const(0.0, t), self.const(float("inf"), t)
        re = self.select(self.compare("eq", a, zero), a, re)
        infinite_b = self.select(self.compare("eq", self.fabs(b), inf), inf, im)
        edge = self.select(self.compare("eq", b, zero), b, infinite_b)
        return re, self.select(self.nonfinite(a), edge, im)

    def c_cos(self, x: Complex) -> Complex:
        """`cos a cosh b - i sin a sinh b` (`cosh_sinh_times`) with C99's special
        values: `cos(±0 + nan i) = nan ± 0i` and, for a non-finite `a`,
        `nan + 0i` where `b = ±0` and `inf + nan i` where `b = ±inf`."""
        a, b = x
        re, im = self.cosh_sinh_times(b, self.unary(math.CosOp, a), self.unary(math.SinOp, a))
        t = a.type
        zero, inf = self.const(0.0, t), self.const(float("inf"), t)
        nan_b = self.emit(arith.CmpfOp(b, b, "uno"))
        im = self.select(self.both(self.compare("eq", a, zero), nan_b), a, self.neg(im))
        nonfinite_a = self.nonfinite(a)
        infinite_b = self.compare("eq", self.fabs(b), inf)
        re = self.select(self.both(nonfinite_a, infinite_b), inf, re)
        zero_b = self.compare("eq", b, zero)
        return re, self.select(self.both(nonfinite_a, zero_b), zero, im)

    def c_tanh(self, x: Complex) -> Complex:
        """`(sinh a cosh a + i sin b cos b) / (sinh² a + cos² b)`, a sum of squares
        (no cancellation near the poles), on `a` clamped to `±c` (20, f32: 10),
        beyond which `tanh a = ±1` to the last bit; the imaginary part,
        `4 sin b cos b e^-2|a|` there, is multiplied by `e^(-2(|a| - c))` (an
        exact argument). C99's special values: `tanh(±0 + yi) = ±0 + nan i` and
        `tanh(±inf + yi) = ±1 ± 0i` for a non-finite `y`, `tanh(nan ± 0i) = nan ± 0i`."""
        a, b = x
        t = a.type
        zero, inf = self.const(0.0, t), self.const(float("inf"), t)
        magnitude = self.fabs(a)
        clamped = self.minimum(magnitude, self.const(_tanh_limit(t), t))
        a_clamped = self.binary(math.CopySignOp, clamped, a)
        infinite_a = self.compare("eq", magnitude, inf)
        signed_zero = self.binary(math.CopySignOp, zero, b)
        # tanh(±inf + yi) for a non-finite y: as for y = ±0
        b = self.select(self.both(infinite_a, self.nonfinite(b)), signed_zero, b)
        sinh_a, cos_b = self.unary(math.SinhOp, a_clamped), self.unary(math.CosOp, b)
        denominator = self.add(self.mul(sinh_a, sinh_a), self.mul(cos_b, cos_b))
        re = self.div(self.mul(sinh_a, self.unary(math.CoshOp, a_clamped)), denominator)
        im = self.div(self.mul(self.unary(math.SinOp, b), cos_b), denominator)
        decay = self.exp(self.mul(self.const(-2.0, t), self.sub(magnitude, clamped)))
        im = self.mul(im, decay)
        re = self.select(self.compare("eq", a, zero), a, re)
        return re, self.select(self.compare("eq", b, zero), b, im)

    def c_sqrt(self, x: Complex) -> Complex:
        """The principal root: `t = sqrt((|a| + |z|)/2)` (on the parts scaled by
        an even power of two) and `v = |b|/(2t)`, `(t, ±v)` for `a >= 0` and
        `(v, ±t)` for `a < 0` (`±`: `b`'s sign), each part to a few ulp; `t = inf`
        where `a` is infinite (`b` may be NaN), and `(inf, b)` where `b` is."""
        a, b = x
        t = a.type
        inf = self.const(float("inf"), t)
        abs_a, abs_b = self.fabs(a), self.fabs(b)
        scale, unscale = self.scaling(self.larger(abs_a, abs_b), lambda k: 2.0 ** (-k // 2))
        scaled_a = self.mul(abs_a, scale)
        modulus = self.norm(scaled_a, self.mul(abs_b, scale))
        half_sum = self.mul(self.add(scaled_a, modulus), self.const(0.5, t))
        root = self.mul(self.unary(math.SqrtOp, half_sum), unscale)
        root = self.select(self.compare("eq", abs_a, inf), inf, root)
        zero = self.compare("eq", root, self.const(0.0, t))
        other = self.div(abs_b, self.select(zero, self.const(1.0, t), self.add(root, root)))
        negative = self.compare("lt", a, self.const(0.0, t))
        re = self.select(negative, other, root)
        im = self.binary(math.CopySignOp, self.select(negative, root, other), b)
        infinite = self.compare("eq", abs_b, inf)
        return self.select(infinite, inf, re), self.select(infinite, b, im)

    def c_pow(self, x: Complex, exponent: float) -> Complex:
        integer = _small_integer(exponent)
        if integer is None:
            return self.c_pow_general(x, exponent)
        one = self.const(1.0, x[0].type), self.const(0.0, x[0].type)
        result = _power_by_squaring(x, abs(integer), one, self.c_mul)
        return self.c_div(one, result) if integer < 0 else result

    def c_pow_general(self, x: Complex, exponent: float) -> Complex:
        """`exp((p + 0i)·log z)` as glibc's `cpow` (numpy's) computes it: the zero
        part makes the product NaN where glibc's is (`inf·0`). A zero base
        gives numpy's `+0` for `p > 0` and NaN for `p < 0`."""
        a, b = x
        t = a.type
        zero = self.const(0.0, t)
        re, im = self.c_exp(self.c_mul(self.c_log(x), (self.const(exponent, t), zero)))
        at_zero = self.const(0.0 if exponent > 0 else float("nan"), t)
        zero_base = self.both(self.compare("eq", a, zero), self.compare("eq", b, zero))
        return self.select(zero_base, at_zero, re), self.select(zero_base, at_zero, im)


@dataclass(frozen=True)
class _Scaling:
    """Where `scaling` rescales: magnitudes above `big` by `2^down`, below `small`
    by `2^up` (even exponents, so `sqrt` unscales exactly), so that squares and
    sums of two squares neither overflow nor lose the larger term to underflow."""

    big: float
    small: float
    down: int
    up: int


_LN2 = 0.6931471805599453  # log(2)
_SCALING_F64 = _Scaling(big=2.0**500, small=2.0**-500, down=-600, up=600)
_SCALING_F32 = _Scaling(big=2.0**50, small=2.0**-50, down=-70, up=100)


_TANH_P = (-9.64399179425052238628e-1, -9.92877231001918586564e1, -1.61468768441708447952e3)
_TANH_Q = (1.12811678491632931402e2, 2.23548839060100448583e3, 4.84406305325125486048e3)


def _horner(
    sb: ScalarBuilder, z: SSAValue, coefficients: tuple[float, ...], t: Attribute, monic: bool
) -> SSAValue:
    """The polynomial with `coefficients` (highest first) at `z`; `monic` adds a leading 1."""
    acc = z if monic else sb.const(coefficients[0], t)
    for c in coefficients if monic else coefficients[1:]:
        if monic and acc is z:
            acc = sb.add(z, sb.const(c, t))
        else:
            acc = sb.add(sb.mul(acc, z), sb.const(c, t))
    return acc


def _is_integer(value: SSAValue) -> bool:
    """Whether `value` is an integer (i32, i64) rather than a float."""
    return isinstance(value.type, IntegerType)


def _exp_limit(t: Attribute) -> float:
    """An integer `c` with `e^c` and `cosh c` finite, `e^-2c` below the rounding
    error: 709 (f32: 88)."""
    return 88.0 if isinstance(t, Float32Type) else 709.0


def _tanh_limit(t: Attribute) -> float:
    """An integer `c` beyond which `tanh x` rounds to ±1 and `sinh² x + cos² y`
    to `e^2x/4`: 20 (f32: 10)."""
    return 10.0 if isinstance(t, Float32Type) else 20.0


def _huge(t: Attribute) -> float:
    """About a quarter of the largest finite value of `t`: 2^1022 (f32: 2^126)."""
    return 2.0**126 if isinstance(t, Float32Type) else 2.0**1022


def _is_positive_zero(value: SSAValue) -> bool:
    """Whether `value` is the constant `+0.0` (the imaginary part of a converted real)."""
    owner = value.owner
    if not isinstance(owner, arith.ConstantOp) or not isinstance(owner.value, FloatAttr):
        return False
    number = owner.value.value.data
    return number == 0.0 and copysign(1.0, number) > 0


def _small_integer(exponent: float) -> int | None:
    """`exponent` as an int when it is one of small magnitude (exact by multiplication)."""
    if exponent.is_integer() and abs(exponent) <= _MAX_INT_POWER:
        return int(exponent)
    return None


def _power_by_squaring(base: T, n: int, one: T, mul: Callable[[T, T], T]) -> T:
    """`base ** n` (n >= 0) with O(log n) multiplications."""
    result: T | None = None
    while n:
        if n & 1:
            result = base if result is None else mul(result, base)
        n >>= 1
        if n:
            base = mul(base, base)
    return one if result is None else result
