"""Scalar element arithmetic for the prim lowering: one prim op applied to one element.

`ScalarBuilder` inserts `arith`/`math` ops at a builder's insertion point. A real
element is one SSA value (f32, f64 or i1); a complex element is a `(re, im)` pair
of real values, so complex arithmetic is expanded to real arithmetic here (the
`llvm` dialect has no complex type) with the usual real formulas:

* `exp(a+bi) = e^a (cos b + i sin b)`, `log z = log|z| + i atan2(b, a)`
* `sin`, `cos` through `sinh`/`cosh` of the imaginary part
* `tanh(a+bi) = (sinh 2a + i sin 2b) / (cosh 2a + cos 2b)`
* `sqrt z = sqrt((|z|+a)/2) + i copysign(sqrt((|z|-a)/2), b)` (principal branch)
* `z**p` for a constant `p`: repeated multiplication for small integer `p`,
  `exp(p log z)` otherwise.

Real `tanh` is expanded into a branch-free kernel (`tanh_real`). With a
`KernelLibrary` (`math_library.MathLibrary`) such a kernel is emitted once per
module as a private function and called: the xDSL passes see one op per use and
LLVM inlines the kernel at O3 before vectorizing.

Element ops get the `contract` fast-math flag only (FMA formation); reductions
add `reassoc` so the vectorizer may reorder sums (see `reduction_flags`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeAlias, TypeVar, cast

from xdsl.builder import Builder
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import AnyFloat, FloatAttr, IntegerAttr, i1
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Attribute, Operation, SSAValue

Complex: TypeAlias = tuple[SSAValue, SSAValue]
Element: TypeAlias = SSAValue | Complex

Expansion: TypeAlias = "Callable[[ScalarBuilder, SSAValue], SSAValue]"
"""A kernel body: the ops computing it on a value, inserted by a `ScalarBuilder`."""

ELEMENT_FLAGS = arith.FastMathFlagsAttr([FastMathFlag.ALLOW_CONTRACT])
REDUCTION_FLAGS = arith.FastMathFlagsAttr([FastMathFlag.REASSOC, FastMathFlag.ALLOW_CONTRACT])

_CMP_PREDICATES = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}
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
        self._constants: dict[tuple[float, Attribute], SSAValue] = {}

    def emit(self, op: Operation) -> SSAValue:
        """Insert `op` and return its single result."""
        self.builder.insert(op)
        return op.results[0]

    # ----- real arithmetic -------------------------------------------------

    def const(self, value: float, typ: Attribute) -> SSAValue:
        """A constant, created once per builder (all uses follow it in the same block)."""
        key = (value, typ)
        if key not in self._constants:
            attr = (
                IntegerAttr(int(value), i1) if typ == i1 else FloatAttr(value, cast(AnyFloat, typ))
            )
            self._constants[key] = self.emit(arith.ConstantOp(attr))
        return self._constants[key]

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(arith.AddfOp(a, b, self.flags))

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(arith.SubfOp(a, b, self.flags))

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(arith.MulfOp(a, b, self.flags))

    def div(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(arith.DivfOp(a, b, self.flags))

    def neg(self, a: SSAValue) -> SSAValue:
        return self.emit(arith.NegfOp(a))

    def maximum(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(arith.MaximumfOp(a, b))

    def minimum(self, a: SSAValue, b: SSAValue) -> SSAValue:
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
        return self.emit(arith.CmpfOp(a, b, _CMP_PREDICATES[direction]))

    def cast(self, a: SSAValue, target: Attribute) -> SSAValue:
        """Between f32 and f64 (identity when equal), or from i1 (a boolean is
        0.0 or 1.0)."""
        if a.type == target:
            return a
        if a.type == i1:  # xDSL's llvm dialect has no uitofp
            return self.select(a, self.const(1.0, target), self.const(0.0, target))
        width = {32: arith.TruncFOp, 64: arith.ExtFOp}
        bits = 64 if "64" in str(target) else 32
        return self.emit(width[bits](a, target))

    def hypot(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.unary(math.SqrtOp, self.add(self.mul(a, a), self.mul(b, b)))

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
        (a, b), (c, d) = x, y
        denom = self.add(self.mul(c, c), self.mul(d, d))
        re = self.add(self.mul(a, c), self.mul(b, d))
        im = self.sub(self.mul(b, c), self.mul(a, d))
        return self.div(re, denom), self.div(im, denom)

    def c_neg(self, x: Complex) -> Complex:
        return self.neg(x[0]), self.neg(x[1])

    def c_conj(self, x: Complex) -> Complex:
        return x[0], self.neg(x[1])

    def c_abs(self, x: Complex) -> SSAValue:
        return self.hypot(*x)

    def c_exp(self, x: Complex) -> Complex:
        a, b = x
        scale = self.exp(a)
        return (
            self.mul(scale, self.unary(math.CosOp, b)),
            self.mul(scale, self.unary(math.SinOp, b)),
        )

    def c_log(self, x: Complex) -> Complex:
        a, b = x
        return self.unary(math.LogOp, self.c_abs(x)), self.binary(math.Atan2Op, b, a)

    def c_sin(self, x: Complex) -> Complex:
        a, b = x
        return (
            self.mul(self.unary(math.SinOp, a), self.unary(math.CoshOp, b)),
            self.mul(self.unary(math.CosOp, a), self.unary(math.SinhOp, b)),
        )

    def c_cos(self, x: Complex) -> Complex:
        a, b = x
        return (
            self.mul(self.unary(math.CosOp, a), self.unary(math.CoshOp, b)),
            self.neg(self.mul(self.unary(math.SinOp, a), self.unary(math.SinhOp, b))),
        )

    def c_tanh(self, x: Complex) -> Complex:
        a, b = x
        two = self.const(2.0, a.type)
        a2, b2 = self.mul(two, a), self.mul(two, b)
        denom = self.add(self.unary(math.CoshOp, a2), self.unary(math.CosOp, b2))
        return (
            self.div(self.unary(math.SinhOp, a2), denom),
            self.div(self.unary(math.SinOp, b2), denom),
        )

    def c_sqrt(self, x: Complex) -> Complex:
        a, b = x
        half = self.const(0.5, a.type)
        r = self.c_abs(x)
        re = self.unary(math.SqrtOp, self.mul(half, self.add(r, a)))
        im = self.unary(math.SqrtOp, self.mul(half, self.sub(r, a)))
        return re, self.binary(math.CopySignOp, im, b)

    def c_pow(self, x: Complex, exponent: float) -> Complex:
        integer = _small_integer(exponent)
        if integer is None:
            log_re, log_im = self.c_log(x)
            p = self.const(exponent, x[0].type)
            return self.c_exp((self.mul(p, log_re), self.mul(p, log_im)))
        one = self.const(1.0, x[0].type), self.const(0.0, x[0].type)
        result = _power_by_squaring(x, abs(integer), one, self.c_mul)
        return self.c_div(one, result) if integer < 0 else result


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
