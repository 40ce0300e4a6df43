"""A small dialect of its own, to prove the AD passes are generic: they only
call the `Differentiable` methods, so any dialect with rules works.

`toy.add`, `toy.mul`, `toy.scale` (by a constant attribute), `toy.sincos`
(two results), `toy.copy` (linear, no transpose rule) and `toy.noad` (no AD
rules at all). Every op but `toy.noad` also batches (`Batchable`), when all
its operands are batched: the dialect has no broadcast op. Elementwise on f64 tensors; each op is `Evaluable`, so the
reference evaluator runs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import Float64Type, FloatAttr, TensorType, f64
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure

from tidu_mlir.interfaces import (
    ADRuleError,
    Batchable,
    BatchContext,
    BatchRuleError,
    Differentiable,
    Evaluable,
    RuleContext,
    active_mask_of,
)

Tangents = Sequence[SSAValue | None]


class ToyDifferentiable(Differentiable, Evaluable, Batchable):
    """The toy dialect's accumulation op is `toy.add`; its ops batch by
    applying themselves to batched operands (elementwise, same type)."""

    @classmethod
    def accumulate(cls, lhs: SSAValue, rhs: SSAValue) -> Operation:
        return AddOp(lhs, rhs)

    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        assert isinstance(self, IRDLOperation)
        if not all(batched):
            raise BatchRuleError(self, "toy ops batch only when every operand is batched")
        batched_type = operands[0].type
        op = type(self).create(
            operands=list(operands),
            result_types=[batched_type] * len(self.results),
            properties=dict(self.properties),
        )
        return ctx.emit(op).results


@irdl_op_definition
class AddOp(IRDLOperation, ToyDifferentiable):
    name = "toy.add"
    T: ClassVar = VarConstraint("T", base(TensorType))
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($result)"

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation):
        super().__init__(operands=[lhs, rhs], result_types=[SSAValue.get(lhs).type])

    def evaluate(self, *operands: np.ndarray) -> tuple[np.ndarray, ...]:
        return (operands[0] + operands[1],)

    def jvp_rule(self, ctx: RuleContext, tangents: Tangents) -> Tangents:
        left, right = tangents
        if left is None or right is None:
            return [left if left is not None else right]
        return [ctx.emit(AddOp(left, right)).result]

    def transpose_rule(self, ctx: RuleContext, cotangents: Tangents) -> Tangents:
        (cotangent,) = cotangents
        return [cotangent if active else None for active in active_mask_of(self)]

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return True


@irdl_op_definition
class MulOp(IRDLOperation, ToyDifferentiable):
    name = "toy.mul"
    T: ClassVar = VarConstraint("T", base(TensorType))
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($result)"

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation):
        super().__init__(operands=[lhs, rhs], result_types=[SSAValue.get(lhs).type])

    def evaluate(self, *operands: np.ndarray) -> tuple[np.ndarray, ...]:
        return (operands[0] * operands[1],)

    def jvp_rule(self, ctx: RuleContext, tangents: Tangents) -> Tangents:
        """d(a*b) = a*db + da*b: the fixed operand first, as prim.mul does."""
        dlhs, drhs = tangents
        terms: list[SSAValue] = []
        if drhs is not None:
            terms.append(ctx.emit(MulOp(self.lhs, drhs)).result)
        if dlhs is not None:
            terms.append(ctx.emit(MulOp(dlhs, self.rhs)).result)
        if len(terms) == 1:
            return terms
        return [ctx.emit(AddOp(terms[0], terms[1])).result]

    def transpose_rule(self, ctx: RuleContext, cotangents: Tangents) -> Tangents:
        """Linear in exactly one operand: multiply the cotangent by the other."""
        (cotangent,) = cotangents
        assert cotangent is not None
        if active_mask_of(self)[1]:
            return [None, ctx.emit(MulOp(self.lhs, cotangent)).result]
        return [ctx.emit(MulOp(self.rhs, cotangent)).result, None]

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return sum(active_mask) == 1


@irdl_op_definition
class ScaleOp(IRDLOperation, ToyDifferentiable):
    """Multiplication by a constant: `toy.scale %x {factor = 2.0 : f64}`."""

    name = "toy.scale"
    T: ClassVar = VarConstraint("T", base(TensorType))
    operand = operand_def(T)
    factor = prop_def(FloatAttr[Float64Type])
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$operand `by` $factor attr-dict `:` type($result)"

    def __init__(self, operand: SSAValue | Operation, factor: float):
        super().__init__(
            operands=[operand],
            result_types=[SSAValue.get(operand).type],
            properties={"factor": FloatAttr(factor, f64)},
        )

    @property
    def value(self) -> float:
        return self.factor.value.data

    def evaluate(self, *operands: np.ndarray) -> tuple[np.ndarray, ...]:
        return (operands[0] * self.value,)

    def jvp_rule(self, ctx: RuleContext, tangents: Tangents) -> Tangents:
        (tangent,) = tangents
        assert tangent is not None
        return [ctx.emit(ScaleOp(tangent, self.value)).result]

    def transpose_rule(self, ctx: RuleContext, cotangents: Tangents) -> Tangents:
        (cotangent,) = cotangents
        assert cotangent is not None
        return [ctx.emit(ScaleOp(cotangent, self.value)).result]

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return True


@irdl_op_definition
class SinCosOp(IRDLOperation, ToyDifferentiable):
    """`sin, cos = toy.sincos x`: two results; never linear."""

    name = "toy.sincos"
    T: ClassVar = VarConstraint("T", base(TensorType))
    operand = operand_def(T)
    sin = result_def(T)
    cos = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$operand attr-dict `:` type($sin)"

    def __init__(self, operand: SSAValue | Operation):
        t = SSAValue.get(operand).type
        super().__init__(operands=[operand], result_types=[t, t])

    def evaluate(self, *operands: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.sin(operands[0]), np.cos(operands[0]))

    def jvp_rule(self, ctx: RuleContext, tangents: Tangents) -> Tangents:
        """d sin = cos·dx, d cos = -sin·dx; the rule references its own results."""
        (tangent,) = tangents
        assert tangent is not None
        dsin = ctx.emit(MulOp(self.cos, tangent)).result
        dcos = ctx.emit(ScaleOp(ctx.emit(MulOp(self.sin, tangent)).result, -1.0)).result
        return [dsin, dcos]

    def transpose_rule(self, ctx: RuleContext, cotangents: Tangents) -> Tangents:
        raise ADRuleError("transpose", self, "toy.sincos is not linear")

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return not any(active_mask)


@irdl_op_definition
class CopyOp(IRDLOperation, ToyDifferentiable):
    """The identity, linear, but without a transpose rule."""

    name = "toy.copy"
    T: ClassVar = VarConstraint("T", base(TensorType))
    operand = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$operand attr-dict `:` type($result)"

    def __init__(self, operand: SSAValue | Operation):
        super().__init__(operands=[operand], result_types=[SSAValue.get(operand).type])

    def evaluate(self, *operands: np.ndarray) -> tuple[np.ndarray, ...]:
        return (operands[0].copy(),)

    def jvp_rule(self, ctx: RuleContext, tangents: Tangents) -> Tangents:
        (tangent,) = tangents
        assert tangent is not None
        return [ctx.emit(CopyOp(tangent)).result]

    def transpose_rule(self, ctx: RuleContext, cotangents: Tangents) -> Tangents:
        raise ADRuleError("transpose", self)

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return True


@irdl_op_definition
class NoAdOp(IRDLOperation, Evaluable):
    """An op without AD rules (cube): differentiating through it must fail."""

    name = "toy.noad"
    T: ClassVar = VarConstraint("T", base(TensorType))
    operand = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$operand attr-dict `:` type($result)"

    def __init__(self, operand: SSAValue | Operation):
        super().__init__(operands=[operand], result_types=[SSAValue.get(operand).type])

    def evaluate(self, *operands: np.ndarray) -> tuple[np.ndarray, ...]:
        return (operands[0] ** 3,)


# f(x, y) = [sin(x*y) * 3x + cos(x*y), cos(x*y)] on vectors: every op but noad.
MIXED = """
cg.graph @f {
  %x = cg.input #cg.key<"x"> : tensor<3xf64>
  %y = cg.input #cg.key<"y"> : tensor<3xf64>
  %xy = toy.mul %x, %y : tensor<3xf64>
  %s, %c = toy.sincos %xy : tensor<3xf64>
  %x3 = toy.scale %x by 3.0 : tensor<3xf64>
  %a = toy.mul %s, %x3 : tensor<3xf64>
  %b = toy.add %a, %c : tensor<3xf64>
  cg.output %b, %c : tensor<3xf64>, tensor<3xf64>
}
"""


TOY = Dialect("toy", [AddOp, MulOp, ScaleOp, SinCosOp, CopyOp, NoAdOp], [])


def register_toy(ctx: Context) -> Context:
    """Add the toy dialect to a context (for parsing toy IR in tests)."""
    if "toy" not in ctx.registered_dialect_names:
        ctx.load_dialect(TOY)
    return ctx


def scalar() -> Attribute:
    return TensorType(f64, [])
