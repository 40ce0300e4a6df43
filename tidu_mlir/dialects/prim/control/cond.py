"""`prim.cond`: one of two regions, chosen by a 0-d boolean (see `CondOp`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import IsolatedFromAbove, Pure
from xdsl.utils.exceptions import VerifyException

from tidu_mlir.dialects.prim.base import PrimOp, Values, emit_value
from tidu_mlir.dialects.prim.control.bodies import (
    YieldOp,
    append_zero,
    argument_types,
    broadcast_yields,
    cast_results,
    check_types,
    emit_body,
    linear_arguments_of,
    padded_yields,
    rebuilt,
    region_from,
    roles_are_linear,
    run_region,
    yield_types,
)
from tidu_mlir.dialects.prim.core import (
    BroadcastInDimOp,
    SelectOp,
    or_zeros,
)
from tidu_mlir.dialects.prim.syntax import RoleSpec, role_attributes
from tidu_mlir.dialects.prim.types import check_tensor, tensor_type_of
from tidu_mlir.interfaces import (
    ADRuleError,
    BatchContext,
    LinearizedBody,
    RecomputeCost,
    RuleContext,
    active_mask_of,
)


@irdl_op_definition
class CondOp(PrimOp):
    """`pred ? on_true(args) : on_false(args)`: runs one of its two regions.

        %r = prim.cond %p, (%a, %b) : tensor<i1>, (T, U) -> (V) {
        ^bb0(%x: T, %y: U):
          ...
          prim.yield %v : V
        } else {
        ^bb0(%x: T, %y: U):
          ...
          prim.yield %w : V
        }

    Both regions take `args` and yield values of the result types; they are
    isolated from above. AD: a forward cond whose branches also yield their
    residuals (each branch yields zeros for the other's), and a linear cond
    over the tangents and residuals on the same predicate; its transpose is a
    cond of the transposed branches. Batched on the predicate: both branches
    run, batched, and `prim.select` picks each example's results.
    """

    name = "prim.cond"

    pred = operand_def()
    args = var_operand_def()
    outputs = var_result_def()
    on_true = region_def("single_block")
    on_false = region_def("single_block")

    traits = traits_def(Pure(), RecomputeCost(cheap=False), IsolatedFromAbove())

    assembly_format = (
        "$pred `,` `(` $args `)` attr-dict `:` type($pred) `,` `(` type($args) `)` "
        "`->` `(` type($outputs) `)` $on_true `else` $on_false"
    )

    def __init__(
        self,
        pred: SSAValue,
        args: Sequence[SSAValue],
        on_true: Region,
        on_false: Region,
        *,
        role: RoleSpec = None,
    ):
        terminator = on_true.block.last_op
        assert terminator is not None, "a cond branch ends with prim.yield"
        super().__init__(
            operands=[pred, list(args)],
            result_types=[[v.type for v in terminator.operands]],
            regions=[on_true, on_false],
            attributes=role_attributes(role),
        )

    @staticmethod
    def from_branches(
        pred: SSAValue,
        args: Sequence[SSAValue],
        on_true: Callable[..., Sequence[SSAValue | Operation]],
        on_false: Callable[..., Sequence[SSAValue | Operation]],
    ) -> CondOp:
        """A cond whose branches are built by `on_true(*arguments)` and
        `on_false(*arguments)` (see `ScanOp.from_body`)."""
        types = [v.type for v in args]
        return CondOp(pred, args, region_from(types, on_true), region_from(types, on_false))

    @property
    def branches(self) -> tuple[Region, Region]:
        return self.on_true, self.on_false

    def verify_types(self) -> None:
        check_tensor("pred", self.pred.type, "i1")
        if tensor_type_of(self.pred).get_shape():
            raise VerifyException(f"the predicate must be a 0-d tensor<i1>, got {self.pred.type}")
        expected = [v.type for v in self.args]
        outputs = [r.type for r in self.outputs]
        for label, region in (("on_true", self.on_true), ("on_false", self.on_false)):
            check_types(f"{label} argument", [a.type for a in region.block.args], expected)
            terminator = region.block.last_op
            if not isinstance(terminator, YieldOp):
                raise VerifyException(f"a cond branch must end with prim.yield, not {terminator}")
            check_types(f"{label} result", [v.type for v in terminator.operands], outputs)

    # ----- semantics ----------------------------------------------------------

    @staticmethod
    def reference(
        pred: Any, *args: Any, on_true: Callable[..., Any], on_false: Callable[..., Any]
    ) -> tuple[Any, ...]:
        """`on_true(*args)` if `pred` else `on_false(*args)`."""
        return tuple((on_true if bool(pred) else on_false)(*args))

    def reference_params(self) -> dict[str, Any]:
        return {
            "on_true": lambda *a: run_region(self.on_true, a, self.name),
            "on_false": lambda *a: run_region(self.on_false, a, self.name),
        }

    def evaluate(self, *operands: np.ndarray) -> tuple[np.ndarray, ...]:
        results = self.reference(*operands, **self.reference_params())
        return cast_results(results, self.results)

    # ----- AD -------------------------------------------------------------------

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        active = [tangent is not None for tangent in tangents[1:]]
        parts = [ctx.linearize_body(branch, active) for branch in self.branches]
        true_results, false_results = (p.active_results for p in parts)
        active_results = [a or b for a, b in zip(true_results, false_results, strict=True)]
        types = [r.type for r in self.results]
        residual_types = [yield_types(p.forward)[len(types) :] for p in parts]
        forward_branches = [
            _with_foreign_residuals(p.forward, len(types), residual_types, side)
            for side, p in enumerate(parts)
        ]
        forward = ctx.emit(CondOp(self.pred, self.args, *forward_branches))
        residuals = list(forward.outputs[len(types) :])
        tangent_args = [t for t in tangents[1:] if t is not None]
        linear_branches = [
            _linear_branch(p, types, active_results, residual_types, side, len(tangent_args))
            for side, p in enumerate(parts)
        ]
        linear = ctx.emit(CondOp(self.pred, [*tangent_args, *residuals], *linear_branches))
        outputs = iter(linear.outputs)
        return [next(outputs) if flag else None for flag in active_results]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        linear = self.linear_arguments()
        mask = active_mask_of(self)[1:]
        if any(a and not f for a, f in zip(mask, linear, strict=True)):
            raise ADRuleError("transpose", self, "a branch reads an active operand as fixed")
        linear_types = [a.type for a, f in zip(self.args, linear, strict=True) if f]
        branches = [
            padded_yields(region, linear_types, flowing, [True] * len(linear_types))
            for region, flowing in (ctx.transpose_body(b, linear) for b in self.branches)
        ]
        seeds = [
            or_zeros(ctx, ct, result) for ct, result in zip(cotangents, self.results, strict=True)
        ]
        fixed = [v for v, f in zip(self.args, linear, strict=True) if not f]
        cond = ctx.emit(CondOp(self.pred, [*seeds, *fixed], *branches))
        results = iter(cond.outputs)
        return [None, *(next(results) if f else None for f in linear)]

    def linear_arguments(self) -> list[bool]:
        """Per argument: whether both branches are linear in it."""
        flags = zip(*(linear_arguments_of(branch) for branch in self.branches), strict=True)
        return [all(pair) for pair in flags]

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        linear = self.linear_arguments()
        if active_mask[0] or any(a and not f for a, f in zip(active_mask[1:], linear, strict=True)):
            return False
        return all(roles_are_linear(branch) for branch in self.branches)

    # ----- batching ---------------------------------------------------------------

    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        flags = list(batched[1:])
        parts = [ctx.batch_body(branch, flags) for branch in self.branches]
        branches = [broadcast_yields(region, done, ctx.size) for region, done in parts]
        args = list(operands[1:])
        if not batched[0]:
            cond = ctx.emit(CondOp(operands[0], args, *branches))
            return list(cond.outputs)
        on_true, on_false = (emit_body(ctx, region, args) for region in branches)
        return [
            emit_value(ctx, SelectOp(_broadcast_pred(ctx, operands[0], value), value, other))
            for value, other in zip(on_true, on_false, strict=True)
        ]


def _with_foreign_residuals(
    forward: Region, results: int, residual_types: Sequence[Sequence[Attribute]], side: int
) -> Region:
    """A branch's forward body (results, then its residuals) yielding the
    results, then the residuals of every branch in order: zeros for the
    other branch's."""

    def finish(block: Block, _: Sequence[SSAValue], ys: Sequence[SSAValue]) -> list[SSAValue]:
        residuals: list[SSAValue] = []
        for branch, types in enumerate(residual_types):
            if branch == side:
                residuals.extend(ys[results:])
            else:
                residuals.extend(append_zero(block, t) for t in types)
        return [*ys[:results], *residuals]

    return rebuilt(forward, argument_types(forward), lambda args: args, finish)


def _linear_branch(
    part: LinearizedBody,
    types: Sequence[Attribute],
    active_results: Sequence[bool],
    residual_types: Sequence[Sequence[Attribute]],
    side: int,
    tangents: int,
) -> Region:
    """A branch's linear body (its tangents, then its residuals, in) taking the
    tangents, then the residuals of every branch in order, and yielding the
    tangents of the `active_results` (zeros where this branch has none)."""
    arg_types = argument_types(part.linear)
    all_residuals = [t for branch in residual_types for t in branch]
    start = sum(len(branch) for branch in residual_types[:side])
    own = len(residual_types[side])

    def args_of_body(args: Sequence[SSAValue]) -> list[SSAValue]:
        return [*args[:tangents], *args[tangents + start : tangents + start + own]]

    def finish(block: Block, _: Sequence[SSAValue], ys: Sequence[SSAValue]) -> list[SSAValue]:
        values = iter(ys)
        out: list[SSAValue] = []
        for t, has, want in zip(types, part.active_results, active_results, strict=True):
            value = next(values) if has else None
            if want:
                out.append(value if value is not None else append_zero(block, t))
        return out

    return rebuilt(part.linear, [*arg_types[:tangents], *all_residuals], args_of_body, finish)


def _broadcast_pred(ctx: BatchContext, pred: SSAValue, like: SSAValue) -> SSAValue:
    """A batched 0-d predicate (shape `[size]`) broadcast to the shape of `like`."""
    target = TensorType(tensor_type_of(pred).get_element_type(), tensor_type_of(like).get_shape())
    return emit_value(ctx, BroadcastInDimOp(pred, [0], target))
