"""What each elementwise prim op computes on one element (real or (re, im) pair).

`ELEMENT_RULES` is the only place that knows the per-element semantics of the
prim ops: one rule per op class, covering both its real and its complex case.
The loop builders call `apply_elementwise` inside their innermost loop; adding
an elementwise op to the lowering means adding its entry here. Semantics follow
numpy (the reference evaluator): `compare` is ordered except `ne`,
`maximum`/`minimum` propagate NaN, `convert` from complex to real takes the real
part, `abs` of a complex number is its modulus. Integer (i32, i64) elements go
through the same rules: `ScalarBuilder` picks the integer ops (wrap-around
arithmetic, signed order) from the operand's type, and `convert` follows
numpy's `astype` (float to integer truncates, to bool is `!= 0`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeAlias

from xdsl.dialects import math
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Operation, SSAValue

from tidu_mlir.dialects import prim
from tidu_mlir.lowering.scalar import Complex, Element, ScalarBuilder, as_complex, as_real

ElementRule: TypeAlias = Callable[[ScalarBuilder, Operation, Sequence[Element]], Element]
"""One element of an op's result from its operands' elements (real or complex)."""

RealUnary: TypeAlias = Callable[[ScalarBuilder, SSAValue], SSAValue]
ComplexUnary: TypeAlias = Callable[[ScalarBuilder, Complex], Element]
RealBinary: TypeAlias = Callable[[ScalarBuilder, SSAValue, SSAValue], SSAValue]
ComplexBinary: TypeAlias = Callable[[ScalarBuilder, Complex, Complex], Complex]


def _unary(real: RealUnary | None, complex_: ComplexUnary | None) -> ElementRule:
    """The rule of a one-operand op; None where the op rejects that kind of operand."""

    def rule(sb: ScalarBuilder, op: Operation, args: Sequence[Element]) -> Element:
        (x,) = args
        if isinstance(x, tuple):
            assert complex_ is not None, f"{op.name} takes real operands"
            return complex_(sb, x)
        assert real is not None, f"{op.name} takes complex operands"
        return real(sb, x)

    return rule


def _binary(real: RealBinary, complex_: ComplexBinary | None = None) -> ElementRule:
    """The rule of a two-operand op of one element type; None: real operands only."""

    def rule(sb: ScalarBuilder, op: Operation, args: Sequence[Element]) -> Element:
        x, y = args
        if isinstance(x, tuple):
            assert complex_ is not None, f"{op.name} takes real operands"
            return complex_(sb, x, as_complex(y))
        return real(sb, x, as_real(y))

    return rule


def _math(op_type: Callable[[SSAValue], Operation]) -> RealUnary:
    """A real unary function computed by one `math` op."""
    return lambda sb, x: sb.unary(op_type, x)


def _identity(_: ScalarBuilder, x: SSAValue) -> SSAValue:
    return x


def _pow(sb: ScalarBuilder, op: Operation, args: Sequence[Element]) -> Element:
    assert isinstance(op, prim.PowOp)
    (x,) = args
    if isinstance(x, tuple):
        return sb.c_pow(x, op.exponent_value)
    return sb.real_pow(x, op.exponent_value)


def _compare(sb: ScalarBuilder, op: Operation, args: Sequence[Element]) -> Element:
    assert isinstance(op, prim.CompareOp)
    return sb.compare(op.direction.data, as_real(args[0]), as_real(args[1]))


def _select(sb: ScalarBuilder, _: Operation, args: Sequence[Element]) -> Element:
    pred, on_true, on_false = args
    pred = as_real(pred)
    if isinstance(on_true, tuple):
        on_false = as_complex(on_false)
        return sb.select(pred, on_true[0], on_false[0]), sb.select(pred, on_true[1], on_false[1])
    return sb.select(pred, on_true, as_real(on_false))


def _convert(sb: ScalarBuilder, op: Operation, args: Sequence[Element]) -> Element:
    """The operand converted to the result's element type (complex -> real, integer
    or bool keeps the real part, the others -> complex have a zero imaginary part)."""
    (x,) = args
    target = prim.element_type_of(op.results[0].type)
    real_target = prim.real_element_type(target)
    if isinstance(x, tuple):
        if prim.is_complex(target):
            return sb.cast(x[0], real_target), sb.cast(x[1], real_target)
        return sb.cast(x[0], real_target)
    value = sb.cast(x, real_target)
    if prim.is_complex(target):
        return value, sb.const(0.0, real_target)
    return value


def _sign(sb: ScalarBuilder, x: SSAValue) -> SSAValue:
    """numpy's `sign`: 1 above 0, -1 below, +0 for either zero (0 for integers),
    and `x` itself, NaN, otherwise (compares and selects, so loops vectorize)."""
    t = x.type
    zero = sb.const(0, t)
    rest = x if isinstance(t, IntegerType) else sb.select(sb.compare("eq", x, zero), zero, x)
    rest = sb.select(sb.compare("lt", x, zero), sb.const(-1, t), rest)
    return sb.select(sb.compare("gt", x, zero), sb.const(1, t), rest)


ELEMENT_RULES: dict[type[Operation], ElementRule] = {
    prim.AddOp: _binary(ScalarBuilder.add, ScalarBuilder.c_add),
    prim.SubOp: _binary(ScalarBuilder.sub, ScalarBuilder.c_sub),
    prim.MulOp: _binary(ScalarBuilder.mul, ScalarBuilder.c_mul),
    prim.DivOp: _binary(ScalarBuilder.div, ScalarBuilder.c_div),
    prim.MaximumOp: _binary(ScalarBuilder.maximum),
    prim.MinimumOp: _binary(ScalarBuilder.minimum),
    prim.Atan2Op: _binary(lambda sb, y, x: sb.binary(math.Atan2Op, y, x)),
    prim.NegOp: _unary(ScalarBuilder.neg, ScalarBuilder.c_neg),
    prim.ExpOp: _unary(ScalarBuilder.exp, ScalarBuilder.c_exp),
    prim.LogOp: _unary(_math(math.LogOp), ScalarBuilder.c_log),
    prim.SinOp: _unary(_math(math.SinOp), ScalarBuilder.c_sin),
    prim.CosOp: _unary(_math(math.CosOp), ScalarBuilder.c_cos),
    prim.TanhOp: _unary(ScalarBuilder.tanh, ScalarBuilder.c_tanh),
    prim.SqrtOp: _unary(_math(math.SqrtOp), ScalarBuilder.c_sqrt),
    prim.ConjOp: _unary(_identity, ScalarBuilder.c_conj),
    prim.PowOp: _pow,
    prim.AbsOp: _unary(_math(math.AbsFOp), ScalarBuilder.c_abs),
    prim.RealOp: _unary(None, lambda _, x: x[0]),
    prim.ImagOp: _unary(None, lambda _, x: x[1]),
    prim.ComplexOp: lambda _, op, args: (as_real(args[0]), as_real(args[1])),
    prim.SelectOp: _select,
    prim.CompareOp: _compare,
    prim.ConvertOp: _convert,
    prim.FloorOp: _unary(_math(math.FloorOp), None),
    prim.CeilOp: _unary(_math(math.CeilOp), None),
    prim.RoundOp: _unary(_math(math.RoundEvenOp), None),
    prim.SignOp: _unary(_sign, None),
    prim.ErfOp: _unary(_math(math.ErfOp), None),
}
"""The rule of every op computed element by element (operands and result of one shape)."""


def apply_elementwise(sb: ScalarBuilder, op: Operation, args: Sequence[Element]) -> Element:
    """The element of `op`'s result computed from its operands' elements `args`."""
    rule = ELEMENT_RULES.get(type(op))
    if rule is None:
        raise NotImplementedError(
            f"no element rule for '{op.name}': elementwise ops need an entry in ELEMENT_RULES"
        )
    return rule(sb, op, args)
