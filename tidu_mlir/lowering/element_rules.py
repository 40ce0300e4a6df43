"""What each elementwise prim op computes on one element (real or (re, im) pair).

`apply_elementwise` is the only place that knows the per-element semantics of
the prim ops; the loop builders call it inside their innermost loop. Semantics
follow numpy (the reference evaluator): `compare` is ordered except `ne`,
`maximum`/`minimum` propagate NaN, `convert` from complex to real takes the real
part, `abs` of a complex number is its modulus.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import math
from xdsl.ir import Attribute, Operation

from tidu_mlir.dialects import prim
from tidu_mlir.lowering.scalar import Element, ScalarBuilder, as_complex, as_real

ELEMENTWISE_OPS: tuple[type[Operation], ...] = (
    prim.AddOp,
    prim.SubOp,
    prim.MulOp,
    prim.DivOp,
    prim.MaximumOp,
    prim.MinimumOp,
    prim.NegOp,
    prim.ExpOp,
    prim.LogOp,
    prim.SinOp,
    prim.CosOp,
    prim.TanhOp,
    prim.SqrtOp,
    prim.ConjOp,
    prim.PowOp,
    prim.AbsOp,
    prim.RealOp,
    prim.ImagOp,
    prim.ComplexOp,
    prim.SelectOp,
    prim.CompareOp,
    prim.ConvertOp,
)
"""Ops computed element by element with identical operand and result shapes."""

_Rule = Callable[[ScalarBuilder, Operation, Sequence[Element]], Element]

_REAL_BINARY = {
    prim.AddOp: ScalarBuilder.add,
    prim.SubOp: ScalarBuilder.sub,
    prim.MulOp: ScalarBuilder.mul,
    prim.DivOp: ScalarBuilder.div,
    prim.MaximumOp: ScalarBuilder.maximum,
    prim.MinimumOp: ScalarBuilder.minimum,
}
_COMPLEX_BINARY = {
    prim.AddOp: ScalarBuilder.c_add,
    prim.SubOp: ScalarBuilder.c_sub,
    prim.MulOp: ScalarBuilder.c_mul,
    prim.DivOp: ScalarBuilder.c_div,
}
_REAL_MATH = {
    prim.LogOp: math.LogOp,
    prim.SinOp: math.SinOp,
    prim.CosOp: math.CosOp,
    prim.SqrtOp: math.SqrtOp,
    prim.AbsOp: math.AbsFOp,
}
_COMPLEX_UNARY = {
    prim.NegOp: ScalarBuilder.c_neg,
    prim.ConjOp: ScalarBuilder.c_conj,
    prim.ExpOp: ScalarBuilder.c_exp,
    prim.LogOp: ScalarBuilder.c_log,
    prim.SinOp: ScalarBuilder.c_sin,
    prim.CosOp: ScalarBuilder.c_cos,
    prim.TanhOp: ScalarBuilder.c_tanh,
    prim.SqrtOp: ScalarBuilder.c_sqrt,
    prim.AbsOp: ScalarBuilder.c_abs,
    prim.RealOp: lambda _, x: x[0],
    prim.ImagOp: lambda _, x: x[1],
}


def apply_elementwise(sb: ScalarBuilder, op: Operation, args: Sequence[Element]) -> Element:
    """The element of `op`'s result computed from its operands' elements `args`."""
    kind = type(op)
    if isinstance(op, prim.SelectOp):
        return _select(sb, args)
    if isinstance(op, prim.CompareOp):
        return sb.compare(op.direction.data, as_real(args[0]), as_real(args[1]))
    if isinstance(op, prim.ConvertOp):
        return convert_element(sb, args[0], prim.element_type_of(op.result.type))
    if isinstance(op, prim.ComplexOp):
        return as_real(args[0]), as_real(args[1])
    if isinstance(op, prim.PowOp):
        x = args[0]
        if isinstance(x, tuple):
            return sb.c_pow(x, op.exponent_value)
        return sb.real_pow(x, op.exponent_value)
    if isinstance(args[0], tuple):
        if kind in _COMPLEX_BINARY:
            return _COMPLEX_BINARY[kind](sb, as_complex(args[0]), as_complex(args[1]))
        return _COMPLEX_UNARY[kind](sb, as_complex(args[0]))
    if kind in _REAL_BINARY:
        return _REAL_BINARY[kind](sb, as_real(args[0]), as_real(args[1]))
    if kind in _REAL_MATH:
        return sb.unary(_REAL_MATH[kind], as_real(args[0]))
    if isinstance(op, prim.TanhOp):
        return sb.tanh(as_real(args[0]))
    if isinstance(op, prim.ExpOp):
        return sb.exp(as_real(args[0]))
    if isinstance(op, prim.NegOp):
        return sb.neg(as_real(args[0]))
    if isinstance(op, prim.ConjOp | prim.RealOp):
        return args[0]
    raise NotImplementedError(f"no element rule for {op.name}")


def _select(sb: ScalarBuilder, args: Sequence[Element]) -> Element:
    pred, on_true, on_false = args
    pred = as_real(pred)
    if isinstance(on_true, tuple):
        on_false = as_complex(on_false)
        return sb.select(pred, on_true[0], on_false[0]), sb.select(pred, on_true[1], on_false[1])
    return sb.select(pred, on_true, as_real(on_false))


def convert_element(sb: ScalarBuilder, x: Element, target: Attribute) -> Element:
    """`x` converted to element type `target` (complex -> real keeps the real part)."""
    real_target = prim.real_element_type(target)
    if isinstance(x, tuple):
        if prim.is_complex(target):
            return sb.cast(x[0], real_target), sb.cast(x[1], real_target)
        return sb.cast(x[0], real_target)
    value = sb.cast(x, real_target)
    if prim.is_complex(target):
        return value, sb.const(0.0, real_target)
    return value
