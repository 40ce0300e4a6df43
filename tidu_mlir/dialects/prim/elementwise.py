"""The non-linear elementwise `prim` ops: div, maximum, minimum, atan2, exp,
log, sin, cos, tanh, sqrt, pow, abs, floor, ceil, round, sign, erf and compare.

Their JVPs scale the tangent by a fixed factor computed on the primal side
(`dy = f'(x)·dx` for the holomorphic ones), built from core ops and the ops
of this file. Only `div` is linear in an operand (its numerator).

floor, ceil, round and sign are piecewise constant: no tangent (a zero
derivative, JAX's convention), like compare.

Ties (JAX's conventions): `maximum` and `minimum` send the whole tangent to
the lhs when the operands are equal. `abs` of a real 0 has derivative +1
(JAX's `select(x >= 0, dx, -dx)`); `abs` of a complex 0 has derivative 0.

Every op here is batched by the rule of `Elementwise` (base.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, cast

import numpy as np
from xdsl.dialects.builtin import FloatAttr, StringAttr, TensorType, f64, i1
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from tidu_mlir.dialects.prim.base import (
    AddOp,
    Elementwise,
    ElementwiseBinaryOp,
    ElementwiseUnaryOp,
    NotLinear,
    PrimOp,
    TypeChangingUnaryOp,
    Values,
    emit_value,
)
from tidu_mlir.dialects.prim.core import (
    ConjOp,
    ConvertOp,
    MulOp,
    NegOp,
    RealOp,
    SelectOp,
    SubOp,
    conj_if_complex,
    full_like,
    scale,
    zeros_like,
)
from tidu_mlir.dialects.prim.syntax import (
    RoleSpec,
    float_literal,
    parse_same_type,
    print_attr_dict,
    print_same_type,
    resolve,
    role_attributes,
)
from tidu_mlir.dialects.prim.types import (
    Value,
    check_same_type,
    check_tensor,
    is_complex,
    real_type,
    tensor_type_of,
    with_element_type,
)
from tidu_mlir.fast_syntax import build_operation
from tidu_mlir.interfaces import RuleContext

# --------------------------------------------------------------------------
# Binary arithmetic
# --------------------------------------------------------------------------


@irdl_op_definition
class Atan2Op(NotLinear, ElementwiseBinaryOp):
    """Elementwise angle of the point (x, y) of real tensors: `prim.atan2 %y, %x : T`
    (numpy's `arctan2(y, x)`). d atan2(y, x) = (x·dy - y·dx) / (x² + y²)."""

    name = "prim.atan2"
    KIND: ClassVar[str] = "real"

    reference = staticmethod(np.arctan2)

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        y, x = self.operands
        dy, dx = tangents
        by_x = emit_value(ctx, MulOp(x, dy)) if dy is not None else None
        by_y = emit_value(ctx, MulOp(y, dx)) if dx is not None else None
        if by_x is None:
            assert by_y is not None
            numerator = emit_value(ctx, NegOp(by_y))
        else:
            numerator = by_x if by_y is None else emit_value(ctx, SubOp(by_x, by_y))
        squares = AddOp(emit_value(ctx, MulOp(x, x)), emit_value(ctx, MulOp(y, y)))
        return [emit_value(ctx, DivOp(numerator, emit_value(ctx, squares)))]


@irdl_op_definition
class DivOp(ElementwiseBinaryOp):
    """Elementwise a/b. y = a/b: dy = (da - y·db)/b; linear in a only;
    transpose: ct/conj(b)."""

    name = "prim.div"

    reference = staticmethod(np.divide)

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        _, rhs = self.operands
        dlhs, drhs = tangents
        numerator = dlhs
        if drhs is not None:
            product = emit_value(ctx, MulOp(self.results[0], drhs))
            numerator = (
                emit_value(ctx, NegOp(product))
                if dlhs is None
                else emit_value(ctx, SubOp(dlhs, product))
            )
        assert numerator is not None
        return [emit_value(ctx, DivOp(numerator, rhs))]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        (ct,) = cotangents
        assert ct is not None
        return [emit_value(ctx, DivOp(ct, conj_if_complex(ctx, self.operands[1]))), None]

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return tuple(active_mask) == (True, False)


def winner_jvp(ctx: RuleContext, op: ElementwiseBinaryOp, wins: str, tangents: Values) -> Values:
    """The JVP of max/min, whose result is the operand winning the comparison
    `wins` (`gt`/`lt`): d = w·da + (1 - w)·db with w = 1 where the lhs wins, 0
    where the rhs does and 1/2 at ties, where the operands share the
    derivative (JAX's and PyTorch's convention)."""
    lhs, rhs = op.operands
    dlhs, drhs = tangents
    real = tensor_type_of(lhs)
    lhs_wins = emit_value(ctx, CompareOp(wins, lhs, rhs))
    tie = emit_value(ctx, CompareOp("eq", lhs, rhs))
    half_at_ties = emit_value(
        ctx, SelectOp(tie, full_like(ctx, 0.5, real), full_like(ctx, 0.0, real))
    )
    weight = emit_value(ctx, SelectOp(lhs_wins, full_like(ctx, 1.0, real), half_at_ties))
    terms: list[SSAValue] = []
    if dlhs is not None:
        terms.append(emit_value(ctx, MulOp(weight, dlhs)))
    if drhs is not None:
        rest = emit_value(ctx, SubOp(full_like(ctx, 1.0, real), weight))
        terms.append(emit_value(ctx, MulOp(rest, drhs)))
    if len(terms) == 1:
        return terms
    return [emit_value(ctx, AddOp(terms[0], terms[1]))]


@irdl_op_definition
class MaximumOp(NotLinear, ElementwiseBinaryOp):
    """Elementwise max of real tensors; ties share the derivative (`winner_jvp`)."""

    name = "prim.maximum"
    KIND: ClassVar[str] = "real or integer"

    reference = staticmethod(np.maximum)

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        return winner_jvp(ctx, self, "gt", tangents)


@irdl_op_definition
class MinimumOp(NotLinear, ElementwiseBinaryOp):
    """Elementwise min of real tensors; ties share the derivative (`winner_jvp`)."""

    name = "prim.minimum"
    KIND: ClassVar[str] = "real or integer"

    reference = staticmethod(np.minimum)

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        return winner_jvp(ctx, self, "lt", tangents)


# --------------------------------------------------------------------------
# Holomorphic unary functions: dy = f'(x)·dx with f'(x) computed on the primal side
# --------------------------------------------------------------------------


@irdl_op_definition
class ExpOp(NotLinear, ElementwiseUnaryOp):
    """d exp(x) = exp(x)·dx (reuses the primal result)."""

    name = "prim.exp"

    reference = staticmethod(np.exp)

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        return [scale(ctx, self.results[0], tangents[0])]


@irdl_op_definition
class LogOp(NotLinear, ElementwiseUnaryOp):
    """d log(x) = dx/x."""

    name = "prim.log"

    reference = staticmethod(np.log)

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        (tangent,) = tangents
        assert tangent is not None
        return [emit_value(ctx, DivOp(tangent, self.operands[0]))]


@irdl_op_definition
class SinOp(NotLinear, ElementwiseUnaryOp):
    """d sin(x) = cos(x)·dx."""

    name = "prim.sin"

    reference = staticmethod(np.sin)

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        return [scale(ctx, emit_value(ctx, CosOp(self.operands[0])), tangents[0])]


@irdl_op_definition
class CosOp(NotLinear, ElementwiseUnaryOp):
    """d cos(x) = -sin(x)·dx."""

    name = "prim.cos"

    reference = staticmethod(np.cos)

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        sine = emit_value(ctx, SinOp(self.operands[0]))
        return [scale(ctx, emit_value(ctx, NegOp(sine)), tangents[0])]


@irdl_op_definition
class TanhOp(NotLinear, ElementwiseUnaryOp):
    """d tanh(x) = (1 - y²)·dx with y = tanh(x)."""

    name = "prim.tanh"

    reference = staticmethod(np.tanh)

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        y = self.results[0]
        one = full_like(ctx, 1.0, tensor_type_of(y))
        factor = emit_value(ctx, SubOp(one, emit_value(ctx, MulOp(y, y))))
        return [scale(ctx, factor, tangents[0])]


@irdl_op_definition
class SqrtOp(NotLinear, ElementwiseUnaryOp):
    """d sqrt(x) = dx/(2y) with y = sqrt(x)."""

    name = "prim.sqrt"

    reference = staticmethod(np.sqrt)

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        (tangent,) = tangents
        assert tangent is not None
        y = self.results[0]
        return [emit_value(ctx, DivOp(tangent, emit_value(ctx, AddOp(y, y))))]


@irdl_op_definition
class PowOp(NotLinear, Elementwise):
    """`operand ** exponent` with a constant f64 exponent: `prim.pow %x, 2.5 : T`.
    d x^c = c·x^(c-1)·dx (no tangent when c = 0)."""

    name = "prim.pow"

    operand = operand_def()
    result = result_def()
    exponent = prop_def(FloatAttr)

    def __init__(self, operand: Value, exponent: float | FloatAttr, *, role: RoleSpec = None):
        if not isinstance(exponent, FloatAttr):
            exponent = FloatAttr(float(exponent), f64)
        super().__init__(
            operands=[operand],
            result_types=[SSAValue.get(operand).type],
            properties={"exponent": exponent},
            attributes=role_attributes(role),
        )

    @property
    def exponent_value(self) -> float:
        return float(self.exponent.value.data)

    def verify_types(self) -> None:
        check_tensor("operand", self.operand.type)
        check_same_type("result", self.result.type, self.operand.type)
        if self.exponent.type != f64:
            raise VerifyException(f"exponent must be an f64 attribute, got {self.exponent.type}")
        if not math.isfinite(self.exponent_value):
            raise VerifyException(f"exponent must be finite, got {self.exponent_value}")

    @staticmethod
    def reference(x: np.ndarray, *, exponent: float) -> np.ndarray:
        """x ** exponent, the exponent cast to x's dtype (f32 stays f32)."""
        x = np.asarray(x)
        return np.power(x, np.asarray(exponent, dtype=x.dtype))

    def reference_params(self) -> dict[str, Any]:
        return {"exponent": self.exponent_value}

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        (tangent,) = tangents
        exponent = self.exponent_value
        if exponent == 0.0:
            return [None]
        if exponent == 1.0:
            return [tangent]
        x = self.operands[0]
        power = x if exponent == 2.0 else emit_value(ctx, PowOp(x, exponent - 1.0))
        factor = emit_value(ctx, MulOp(full_like(ctx, exponent, tensor_type_of(x)), power))
        return [scale(ctx, factor, tangent)]

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.operand)
        printer.print_string(f", {float_literal(self.exponent_value)}")
        print_attr_dict(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> PowOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        exponent = float(parser.parse_number())
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        return build_operation(
            cls,
            resolve(parser, [operand], [t]),
            [t],
            {"exponent": FloatAttr(exponent, f64)},
            attributes,
        )


@irdl_op_definition
class AbsOp(NotLinear, Elementwise, TypeChangingUnaryOp):
    """Absolute value; the result is the real type of the operand.
    Real x: d|x| = sign(x)·dx with sign(0) = +1. Complex z:
    d|z| = Re(conj(z)/|z| · dz), 0 at z = 0."""

    name = "prim.abs"

    def __init__(self, operand: Value, *, role: RoleSpec = None):
        super().__init__(operand, real_type(tensor_type_of(operand)), role=role)

    def verify_types(self) -> None:
        check_tensor("operand", self.operand.type)
        check_same_type("result", self.result.type, real_type(cast(TensorType, self.operand.type)))

    reference = staticmethod(np.abs)

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        x, y = self.operands[0], self.results[0]
        if is_complex(x.type):
            return [self._complex_jvp(ctx, x, y, tangents[0])]
        zero = zeros_like(ctx, x)
        nonnegative = emit_value(ctx, CompareOp("ge", x, zero))
        x_type = tensor_type_of(x)
        one, minus_one = full_like(ctx, 1.0, x_type), full_like(ctx, -1.0, x_type)
        sign = emit_value(ctx, SelectOp(nonnegative, one, minus_one))
        return [scale(ctx, sign, tangents[0])]

    @staticmethod
    def _complex_jvp(
        ctx: RuleContext, z: SSAValue, magnitude: SSAValue, tangent: SSAValue | None
    ) -> SSAValue:
        is_zero = emit_value(ctx, CompareOp("eq", magnitude, zeros_like(ctx, magnitude)))
        one = full_like(ctx, 1.0, tensor_type_of(magnitude))
        safe = emit_value(ctx, SelectOp(is_zero, one, magnitude))
        denominator = emit_value(ctx, ConvertOp(safe, tensor_type_of(z).get_element_type()))
        direction = emit_value(ctx, DivOp(emit_value(ctx, ConjOp(z)), denominator))
        return emit_value(ctx, RealOp(scale(ctx, direction, tangent)))


# --------------------------------------------------------------------------
# Piecewise-constant functions (no tangent) and erf
# --------------------------------------------------------------------------


@irdl_op_definition
class FloorOp(NotLinear, ElementwiseUnaryOp):
    """Elementwise floor of a real tensor (numpy's `floor`). Piecewise constant:
    its derivative is 0 wherever it exists, so it has no tangent (JAX's
    convention: a zero gradient, not an error, at and between the jumps)."""

    name = "prim.floor"
    KIND: ClassVar[str] = "real"

    reference = staticmethod(np.floor)

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        return [None]


@irdl_op_definition
class CeilOp(NotLinear, ElementwiseUnaryOp):
    """Elementwise ceiling of a real tensor (numpy's `ceil`). Piecewise constant:
    no tangent (see `prim.floor`)."""

    name = "prim.ceil"
    KIND: ClassVar[str] = "real"

    reference = staticmethod(np.ceil)

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        return [None]


@irdl_op_definition
class RoundOp(NotLinear, ElementwiseUnaryOp):
    """Elementwise rounding of a real tensor to the nearest integer, halves to
    even (numpy's `rint`, and `round` with no decimals: 0.5 -> 0, 1.5 -> 2).
    Piecewise constant: no tangent (see `prim.floor`)."""

    name = "prim.round"
    KIND: ClassVar[str] = "real"

    reference = staticmethod(np.rint)

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        return [None]


@irdl_op_definition
class SignOp(NotLinear, ElementwiseUnaryOp):
    """Elementwise sign of a real or integer tensor (numpy's `sign`): -1, 0 or 1,
    +0 for both zeros, NaN for NaN. Piecewise constant: no tangent (see `prim.floor`)."""

    name = "prim.sign"
    KIND: ClassVar[str] = "real or integer"

    reference = staticmethod(np.sign)

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        return [None]


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def erf_reference(x: Any) -> np.ndarray:
    """`math.erf` elementwise (the C library's erf, correctly rounded in practice),
    computed in f64 and rounded to the operand's float type (f64 for anything else);
    numpy has no erf of its own."""
    x = np.asarray(x)
    dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    values = np.frompyfunc(math.erf, 1, 1)(x.astype(np.float64))
    return np.asarray(values, dtype=np.float64).astype(dtype)


@irdl_op_definition
class ErfOp(NotLinear, ElementwiseUnaryOp):
    """Elementwise error function of a real tensor, `erf(x) = 2/sqrt(pi) ∫_0^x e^(-t²) dt`.
    d erf(x) = 2/sqrt(pi)·exp(-x²)·dx."""

    name = "prim.erf"
    KIND: ClassVar[str] = "real"

    reference = staticmethod(erf_reference)

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        x = self.operands[0]
        square = emit_value(ctx, MulOp(x, x))
        gauss = emit_value(ctx, ExpOp(emit_value(ctx, NegOp(square))))
        constant = full_like(ctx, _TWO_OVER_SQRT_PI, tensor_type_of(x))
        return [scale(ctx, emit_value(ctx, MulOp(constant, gauss)), tangents[0])]


# --------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------

_COMPARISONS: dict[str, Callable[[Any, Any], np.ndarray]] = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}
COMPARE_DIRECTIONS: tuple[str, ...] = tuple(_COMPARISONS)


@irdl_op_definition
class CompareOp(NotLinear, Elementwise):
    """Elementwise comparison of real tensors to i1: `prim.compare lt, %a, %b : T`.
    No tangent: the i1 result is piecewise constant."""

    name = "prim.compare"

    lhs = operand_def()
    rhs = operand_def()
    result = result_def()
    direction = prop_def(StringAttr)

    def __init__(self, direction: str, lhs: Value, rhs: Value, *, role: RoleSpec = None):
        super().__init__(
            operands=[lhs, rhs],
            result_types=[with_element_type(tensor_type_of(lhs), i1)],
            properties={"direction": StringAttr(direction)},
            attributes=role_attributes(role),
        )

    def verify_types(self) -> None:
        if self.direction.data not in COMPARE_DIRECTIONS:
            raise VerifyException(
                f"direction must be one of {', '.join(COMPARE_DIRECTIONS)}, "
                f"got '{self.direction.data}'"
            )
        check_tensor("lhs", self.lhs.type, "real or integer")
        check_same_type("rhs", self.rhs.type, self.lhs.type)
        check_same_type(
            "result", self.result.type, with_element_type(cast(TensorType, self.lhs.type), i1)
        )

    @staticmethod
    def reference(lhs: np.ndarray, rhs: np.ndarray, *, direction: str) -> np.ndarray:
        return _COMPARISONS[direction](lhs, rhs)

    def reference_params(self) -> dict[str, Any]:
        return {"direction": self.direction.data}

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        return [None]

    def print(self, printer: Printer) -> None:
        print_same_type(printer, self, prefix=f"{self.direction.data}, ")

    @classmethod
    def parse(cls, parser: Parser) -> CompareOp:
        direction = parser.parse_identifier(" (comparison direction)")
        parser.parse_punctuation(",")
        operands, attributes, t = parse_same_type(parser, 2)
        result_type = with_element_type(t, i1) if isinstance(t, TensorType) else t
        return build_operation(
            cls, operands, [result_type], {"direction": StringAttr(direction)}, attributes
        )


OPS: tuple[type[PrimOp], ...] = (
    Atan2Op,
    DivOp,
    MaximumOp,
    MinimumOp,
    ExpOp,
    LogOp,
    SinOp,
    CosOp,
    TanhOp,
    SqrtOp,
    PowOp,
    AbsOp,
    FloorOp,
    CeilOp,
    RoundOp,
    SignOp,
    ErfOp,
    CompareOp,
)
"""The op classes of this layer, in the dialect's order."""

__all__ = [
    "AbsOp",
    "Atan2Op",
    "COMPARE_DIRECTIONS",
    "CeilOp",
    "CompareOp",
    "CosOp",
    "DivOp",
    "ErfOp",
    "ExpOp",
    "FloorOp",
    "LogOp",
    "MaximumOp",
    "MinimumOp",
    "PowOp",
    "RoundOp",
    "SignOp",
    "SinOp",
    "SqrtOp",
    "TanhOp",
]
