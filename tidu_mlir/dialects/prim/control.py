"""`prim.scan`: a loop over a body region, compiled once whatever its trip count.

    %c, %ys = prim.scan length 10 init(%c0) xs(%xs) consts(%w) : (...) -> (...) {
    ^bb0(%c: T, %x: X, %w: W):
      ...
      prim.yield %c_next, %y : T, Y
    }

The body runs `length` times (last to first with `reverse`). Its arguments
are the carries (initially `init`), one slice `xs[i]` of each scanned operand
(leading axis `length`), and the loop-invariant `consts`; it yields the new
carries, then one slice of each stacked result `ys` (leading axis `length`).
The body is isolated from above: what it reads from outside is a `const`.

AD: the rules ask the engine for the body's linearization, transpose or
batched form (`RuleContext.linearize_body`, ...). JVP: a forward scan that
also stacks the body's residuals per iteration, then a linear scan over the
tangents and the residuals (the unzip of a scan). Transpose: a scan in the
opposite direction over the transposed body; the cotangents of the consts are
summed across iterations in extra carries. Batching: the body batched, the
batch axis moved behind the scanned axis of `xs` and `ys`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.builder import ImplicitBuilder
from xdsl.dialects.builtin import I64, IntegerAttr, TensorType, UnitAttr, f64, i1, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    AttrSizedResultSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from tidu_mlir.dialects.cg import role_of
from tidu_mlir.dialects.prim.base import PrimOp, Values, broadcast_to_batch, emit_value
from tidu_mlir.dialects.prim.core import (
    BroadcastInDimOp,
    ConstantOp,
    ConvertOp,
    SelectOp,
    emit_transpose,
    is_zero_constant,
    or_zeros,
    zeros_like,
)
from tidu_mlir.dialects.prim.elementwise import CompareOp
from tidu_mlir.dialects.prim.structural import ReduceMaxOp
from tidu_mlir.dialects.prim.syntax import RoleSpec, role_attributes
from tidu_mlir.dialects.prim.types import check_tensor, tensor_dtype, tensor_type_of
from tidu_mlir.interfaces import (
    ADRuleError,
    BatchContext,
    Differentiable,
    LinearizedBody,
    RecomputeCost,
    RuleContext,
    active_mask_of,
    batched_type,
    coerce_array,
    evaluate_ops,
)


def _sliced(t: Attribute) -> TensorType:
    """The type of one slice along the leading axis."""
    assert isinstance(t, TensorType)
    return TensorType(t.get_element_type(), t.get_shape()[1:])


def _stacked(t: Attribute, length: int) -> TensorType:
    """The type of `length` slices of type `t` stacked along a new leading axis."""
    assert isinstance(t, TensorType)
    return TensorType(t.get_element_type(), [length, *t.get_shape()])


@irdl_op_definition
class ScanOp(PrimOp):
    """A loop of `length` iterations over its body (see the module docstring)."""

    name = "prim.scan"

    init = var_operand_def()
    xs = var_operand_def()
    consts = var_operand_def()
    carries = var_result_def()
    ys = var_result_def()
    length = prop_def(IntegerAttr[I64])
    reverse = opt_prop_def(UnitAttr)
    body = region_def("single_block")

    irdl_options = (
        AttrSizedOperandSegments(as_property=True),
        AttrSizedResultSegments(as_property=True),
    )
    traits = traits_def(Pure(), RecomputeCost(cheap=False), IsolatedFromAbove())

    assembly_format = (
        "`length` $length (`reverse` $reverse^)? `init` `(` $init `)` `xs` `(` $xs `)` "
        "`consts` `(` $consts `)` attr-dict `:` `(` type($init) `)` `(` type($xs) `)` "
        "`(` type($consts) `)` `->` `(` type($carries) `)` `(` type($ys) `)` $body"
    )

    def __init__(
        self,
        init: Sequence[SSAValue],
        xs: Sequence[SSAValue],
        consts: Sequence[SSAValue],
        body: Region,
        length: int,
        reverse: bool = False,
        *,
        role: RoleSpec = None,
    ):
        terminator = body.block.last_op
        assert terminator is not None, "a scan body ends with prim.yield"
        ys_types = [_stacked(v.type, length) for v in terminator.operands[len(init) :]]
        properties: dict[str, Attribute] = {"length": IntegerAttr(length, i64)}
        if reverse:
            properties["reverse"] = UnitAttr()
        super().__init__(
            operands=[list(init), list(xs), list(consts)],
            result_types=[[v.type for v in init], ys_types],
            properties=properties,
            regions=[body],
            attributes=role_attributes(role),
        )

    @staticmethod
    def from_body(
        init: Sequence[SSAValue],
        xs: Sequence[SSAValue],
        consts: Sequence[SSAValue],
        length: int,
        body: Callable[..., Sequence[SSAValue | Operation]],
        reverse: bool = False,
    ) -> ScanOp:
        """A scan whose body is built by `body(*arguments)`: the ops it creates
        are appended to the body (an xDSL `ImplicitBuilder`), and it returns the
        values to yield (new carries, then the slices of `ys`)."""
        arg_types = [
            *(v.type for v in init),
            *(_sliced(v.type) for v in xs),
            *(v.type for v in consts),
        ]
        return ScanOp(init, xs, consts, _region_from(arg_types, body), length, reverse)

    # ----- structure ----------------------------------------------------------

    @property
    def trip_count(self) -> int:
        return self.length.value.data

    @property
    def is_reverse(self) -> bool:
        return self.reverse is not None

    @property
    def terminator(self) -> Operation:
        terminator = self.body.block.last_op
        assert terminator is not None
        return terminator

    def verify_types(self) -> None:
        length = self.trip_count
        if length < 0:
            raise VerifyException(f"scan length must be non-negative, got {length}")
        for index, value in enumerate(self.xs):
            check_tensor(f"xs #{index}", value.type)
            shape = tensor_type_of(value).get_shape()
            if not shape or shape[0] != length:
                raise VerifyException(
                    f"xs #{index} of type {value.type} must have a leading axis of the scan "
                    f"length {length}"
                )
        expected = [
            *(v.type for v in self.init),
            *(_sliced(v.type) for v in self.xs),
            *(v.type for v in self.consts),
        ]
        _check_types("body argument", [a.type for a in self.body.block.args], expected)
        terminator = self.terminator
        if not isinstance(terminator, YieldOp):
            raise VerifyException(f"a scan body must end with prim.yield, not {terminator.name}")
        yielded = [v.type for v in terminator.operands]
        carries = [v.type for v in self.init]
        if len(yielded) < len(carries):
            raise VerifyException(
                f"the body yields {len(yielded)} values, fewer than its {len(carries)} carries"
            )
        _check_types("carry returned by the body", yielded[: len(carries)], carries)
        _check_types("carry result", [r.type for r in self.carries], carries)
        ys = [_stacked(t, length) for t in yielded[len(carries) :]]
        _check_types("ys result", [r.type for r in self.ys], ys)

    # ----- semantics ----------------------------------------------------------

    @staticmethod
    def reference(
        *operands: Any,
        body: Callable[..., Sequence[Any]],
        carries: int,
        xs: int,
        length: int,
        reverse: bool,
        y_shapes: Sequence[tuple[int, ...]],
    ) -> tuple[Any, ...]:
        """`carry, y = body(*carry, *(x[i] for x in xs), *consts)` for i in
        `range(length)` (reversed with `reverse`); the last carry and the `y`s
        stacked by `i`."""
        carry = list(operands[:carries])
        scanned = operands[carries : carries + xs]
        consts = operands[carries + xs :]
        slices: list[list[Any]] = [[None] * length for _ in y_shapes]
        steps = range(length - 1, -1, -1) if reverse else range(length)
        for i in steps:
            results = body(*carry, *(x[i] for x in scanned), *consts)
            carry = list(results[:carries])
            for per_step, y in zip(slices, results[carries:], strict=True):
                per_step[i] = y
        ys = [
            np.stack(per_step) if length else np.empty(shape)
            for per_step, shape in zip(slices, y_shapes, strict=True)
        ]
        return (*carry, *ys)

    def reference_params(self) -> dict[str, Any]:
        return {
            "body": lambda *args: _run_region(self.body, args, self.name),
            "carries": len(self.init),
            "xs": len(self.xs),
            "length": self.trip_count,
            "reverse": self.is_reverse,
            "y_shapes": [tuple(tensor_type_of(y).get_shape()) for y in self.ys],
        }

    def evaluate(self, *operands: np.ndarray) -> tuple[np.ndarray, ...]:
        results = self.reference(*operands, **self.reference_params())
        return _cast_results(results, self.results)

    # ----- AD -------------------------------------------------------------------

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        carries, xs = len(self.init), len(self.xs)
        active = [tangent is not None for tangent in tangents]
        linearized = ctx.linearize_body(self.body, active)
        while any(
            r and not a
            for r, a in zip(linearized.active_results[:carries], active[:carries], strict=True)
        ):
            # A carry that gets a tangent in the body has one from the start.
            for index in range(carries):
                active[index] = active[index] or linearized.active_results[index]
            linearized = ctx.linearize_body(self.body, active)
        results = [*active[:carries], *linearized.active_results[carries:]]
        linear_body = _padded_yields(
            linearized.linear, [r.type for r in self.results], linearized.active_results, results
        )

        residuals = linearized.residual_arguments
        stacked = [i for i, arg in enumerate(residuals) if arg is None or arg < carries]
        body_results = len(self.carries) + len(self.ys)
        forward_body = _selected_yields(
            linearized.forward, [*range(body_results), *(body_results + i for i in stacked)]
        )
        forward = ctx.emit(
            ScanOp(self.init, self.xs, self.consts, forward_body, self.trip_count, self.is_reverse)
        )
        stacked_values = dict(zip(stacked, forward.ys[len(self.ys) :], strict=True))

        tangent_count = sum(active)
        operands = list(self.operands)
        residual_operands = [
            stacked_values[i] if arg is None or arg < carries else operands[arg]
            for i, arg in enumerate(residuals)
        ]
        scanned = [i for i, arg in enumerate(residuals) if arg is None or arg < carries + xs]
        invariant = [i for i in range(len(residuals)) if i not in scanned]
        active_carries = sum(active[:carries])
        active_xs = sum(active[carries : carries + xs])
        order = [
            *range(active_carries + active_xs),
            *(tangent_count + i for i in scanned),
            *range(active_carries + active_xs, tangent_count),
            *(tangent_count + i for i in invariant),
        ]
        init = [or_zeros(ctx, tangents[i], self.init[i]) for i in range(carries) if active[i]]
        scanned_tangents = [t for t in tangents[carries : carries + xs] if t is not None]
        const_tangents = [t for t in tangents[carries + xs :] if t is not None]
        linear = ctx.emit(
            ScanOp(
                init,
                [*scanned_tangents, *(residual_operands[i] for i in scanned)],
                [*const_tangents, *(residual_operands[i] for i in invariant)],
                _reordered(linear_body, order),
                self.trip_count,
                self.is_reverse,
            )
        )
        carry_results = iter(linear.carries)
        ys_results = iter(linear.ys)
        return [
            *(next(carry_results) if active[i] else None for i in range(carries)),
            *(next(ys_results) if flag else None for flag in linearized.active_results[carries:]),
        ]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        carries, xs = len(self.init), len(self.xs)
        linear = self.linear_arguments()
        if not all(linear[:carries]):
            raise ADRuleError("transpose", self, "a loop carry read as a fixed operand")
        body, flowing = ctx.transpose_body(self.body, linear)
        fixed_xs = [
            v for v, f in zip(self.xs, linear[carries : carries + xs], strict=True) if not f
        ]
        fixed_consts = [
            v for v, f in zip(self.consts, linear[carries + xs :], strict=True) if not f
        ]
        linear_consts = [v for v, f in zip(self.consts, linear[carries + xs :], strict=True) if f]
        results = [*self.carries, *self.ys]
        seeds = [or_zeros(ctx, ct, result) for ct, result in zip(cotangents, results, strict=True)]
        linear_types = [a.type for a, f in zip(self.body.block.args, linear, strict=True) if f]
        reverse_body = _transposed_loop_body(
            body, flowing, linear_types, carries, len(linear_consts)
        )
        scan = ctx.emit(
            ScanOp(
                [*seeds[:carries], *(zeros_like(ctx, c) for c in linear_consts)],
                [*seeds[carries:], *fixed_xs],
                fixed_consts,
                reverse_body,
                self.trip_count,
                not self.is_reverse,
            )
        )
        by_operand: dict[int, SSAValue] = dict(enumerate(scan.carries[:carries]))
        linear_x_indices = [carries + j for j in range(xs) if linear[carries + j]]
        by_operand.update(zip(linear_x_indices, scan.ys, strict=True))
        const_indices = [carries + xs + k for k, flag in enumerate(linear[carries + xs :]) if flag]
        by_operand.update(zip(const_indices, scan.carries[carries:], strict=True))
        mask = active_mask_of(self)
        return [by_operand.get(i) if active else None for i, active in enumerate(mask)]

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        linear = self.linear_arguments()
        carries = len(self.init)
        for index, (active, is_linear) in enumerate(zip(active_mask, linear, strict=True)):
            if active and not is_linear:
                return False
            fixed_start = index < carries and is_linear and not active
            if fixed_start and not is_zero_constant(self.init[index]):
                return False  # a fixed, non-zero start makes the loop affine
        return _roles_are_linear(self.body)

    def linear_arguments(self) -> list[bool]:
        """Per body argument: whether the body is linear in it."""
        return _linear_arguments(self.body)

    # ----- batching ---------------------------------------------------------------

    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        carries, xs = len(self.init), len(self.xs)
        init = [
            v if b else broadcast_to_batch(ctx, v)
            for v, b in zip(operands[:carries], batched[:carries], strict=True)
        ]
        scanned = [
            _swap_leading_axes(ctx, v) if b else v
            for v, b in zip(
                operands[carries : carries + xs], batched[carries : carries + xs], strict=True
            )
        ]
        flags = [True] * carries + list(batched[carries:])
        body, batched_results = ctx.batch_body(self.body, flags)
        body = _broadcast_yields(body, batched_results, ctx.size)
        scan = ctx.emit(
            ScanOp(init, scanned, operands[carries + xs :], body, self.trip_count, self.is_reverse)
        )
        return [*scan.carries, *(_swap_leading_axes(ctx, y) for y in scan.ys)]


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
        return CondOp(pred, args, _region_from(types, on_true), _region_from(types, on_false))

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
            _check_types(f"{label} argument", [a.type for a in region.block.args], expected)
            terminator = region.block.last_op
            if not isinstance(terminator, YieldOp):
                raise VerifyException(f"a cond branch must end with prim.yield, not {terminator}")
            _check_types(f"{label} result", [v.type for v in terminator.operands], outputs)

    # ----- semantics ----------------------------------------------------------

    @staticmethod
    def reference(
        pred: Any, *args: Any, on_true: Callable[..., Any], on_false: Callable[..., Any]
    ) -> tuple[Any, ...]:
        """`on_true(*args)` if `pred` else `on_false(*args)`."""
        return tuple((on_true if bool(pred) else on_false)(*args))

    def reference_params(self) -> dict[str, Any]:
        return {
            "on_true": lambda *a: _run_region(self.on_true, a, self.name),
            "on_false": lambda *a: _run_region(self.on_false, a, self.name),
        }

    def evaluate(self, *operands: np.ndarray) -> tuple[np.ndarray, ...]:
        results = self.reference(*operands, **self.reference_params())
        return _cast_results(results, self.results)

    # ----- AD -------------------------------------------------------------------

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        active = [tangent is not None for tangent in tangents[1:]]
        parts = [ctx.linearize_body(branch, active) for branch in self.branches]
        true_results, false_results = (p.active_results for p in parts)
        active_results = [a or b for a, b in zip(true_results, false_results, strict=True)]
        types = [r.type for r in self.results]
        residual_types = [_yield_types(p.forward)[len(types) :] for p in parts]
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
            _padded_yields(region, linear_types, flowing, [True] * len(linear_types))
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
        flags = zip(*(_linear_arguments(branch) for branch in self.branches), strict=True)
        return [all(pair) for pair in flags]

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        linear = self.linear_arguments()
        if active_mask[0] or any(a and not f for a, f in zip(active_mask[1:], linear, strict=True)):
            return False
        return all(_roles_are_linear(branch) for branch in self.branches)

    # ----- batching ---------------------------------------------------------------

    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        flags = list(batched[1:])
        parts = [ctx.batch_body(branch, flags) for branch in self.branches]
        branches = [_broadcast_yields(region, done, ctx.size) for region, done in parts]
        args = list(operands[1:])
        if not batched[0]:
            cond = ctx.emit(CondOp(operands[0], args, *branches))
            return list(cond.outputs)
        on_true, on_false = (_inline(ctx, region, args) for region in branches)
        return [
            emit_value(ctx, SelectOp(_broadcast_pred(ctx, operands[0], value), value, other))
            for value, other in zip(on_true, on_false, strict=True)
        ]


_WHILE_REVERSE = (
    "reverse mode (grad, vjp, linearize) through a while loop is not supported yet: its "
    "trip count is known only at run time; forward mode (jvp, jacfwd) works, or use "
    "lax.scan / lax.fori_loop with static bounds"
)


@irdl_op_definition
class WhileOp(PrimOp):
    """`while cond(carries, consts): carries = body(carries, consts)`.

        %r = prim.while init(%c0) consts(%k) : (T) (K) -> (T) cond {
        ^bb0(%c: T, %k: K):
          ...
          prim.yield %p : tensor<i1>
        } do {
        ^bb0(%c: T, %k: K):
          ...
          prim.yield %c_next : T
        }

    The trip count is known only at run time. Both regions are isolated from
    above. JVP: one while loop carrying the primal and the tangent carries
    (its body is the body's JVP): forward mode works, but that loop is not
    linear (its primal carries evolve), so `linear-transpose` and `unzip`
    refuse it: reverse mode through a while loop needs its residuals stored
    per iteration, which is not built yet. Batched on the predicate: the loop
    runs while any example's predicate holds, and an example whose predicate
    is false keeps its carries (`prim.select`).
    """

    name = "prim.while"

    init = var_operand_def()
    consts = var_operand_def()
    carries = var_result_def()
    before = region_def("single_block")
    body = region_def("single_block")

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(Pure(), RecomputeCost(cheap=False), IsolatedFromAbove())

    assembly_format = (
        "`init` `(` $init `)` `consts` `(` $consts `)` attr-dict `:` `(` type($init) `)` "
        "`(` type($consts) `)` `->` `(` type($carries) `)` `cond` $before `do` $body"
    )

    def __init__(
        self,
        init: Sequence[SSAValue],
        consts: Sequence[SSAValue],
        before: Region,
        body: Region,
        *,
        role: RoleSpec = None,
    ):
        super().__init__(
            operands=[list(init), list(consts)],
            result_types=[[v.type for v in init]],
            regions=[before, body],
            attributes=role_attributes(role),
        )

    @staticmethod
    def from_regions(
        init: Sequence[SSAValue],
        consts: Sequence[SSAValue],
        before: Callable[..., Sequence[SSAValue | Operation]],
        body: Callable[..., Sequence[SSAValue | Operation]],
    ) -> WhileOp:
        """A while loop whose regions are built by `before(*arguments)` (returning
        the predicate) and `body(*arguments)` (see `ScanOp.from_body`)."""
        types = [v.type for v in (*init, *consts)]
        return WhileOp(init, consts, _region_from(types, before), _region_from(types, body))

    def verify_types(self) -> None:
        expected = [v.type for v in (*self.init, *self.consts)]
        carries = [v.type for v in self.init]
        for label, region in (("cond", self.before), ("body", self.body)):
            _check_types(f"{label} argument", [a.type for a in region.block.args], expected)
            if not isinstance(region.block.last_op, YieldOp):
                raise VerifyException(f"the {label} region of prim.while must end with prim.yield")
        predicate = _yield_types(self.before)
        if len(predicate) != 1 or predicate[0] != TensorType(i1, []):
            raise VerifyException(
                f"the cond region must yield one tensor<i1>, got {', '.join(map(str, predicate))}"
            )
        _check_types("carry returned by the body", _yield_types(self.body), carries)
        _check_types("carry result", [r.type for r in self.carries], carries)

    # ----- semantics ----------------------------------------------------------

    @staticmethod
    def reference(
        *operands: Any,
        carries: int,
        cond: Callable[..., Sequence[Any]],
        body: Callable[..., Sequence[Any]],
    ) -> tuple[Any, ...]:
        """`while cond(*carry, *consts): carry = body(*carry, *consts)`; the carry."""
        carry, consts = list(operands[:carries]), operands[carries:]
        while bool(cond(*carry, *consts)[0]):
            carry = list(body(*carry, *consts))
        return tuple(carry)

    def reference_params(self) -> dict[str, Any]:
        return {
            "carries": len(self.init),
            "cond": lambda *a: _run_region(self.before, a, self.name),
            "body": lambda *a: _run_region(self.body, a, self.name),
        }

    def evaluate(self, *operands: np.ndarray) -> tuple[np.ndarray, ...]:
        results = self.reference(*operands, **self.reference_params())
        return _cast_results(results, self.results)

    # ----- AD -------------------------------------------------------------------

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        carries = len(self.init)
        active = [tangent is not None for tangent in tangents]
        linearized = ctx.linearize_body(self.body, active)
        while any(
            r and not a for r, a in zip(linearized.active_results, active[:carries], strict=True)
        ):  # a carry that gets a tangent in the body has one from the start
            active[:carries] = [
                a or r for a, r in zip(active[:carries], linearized.active_results, strict=True)
            ]
            linearized = ctx.linearize_body(self.body, active)
        carry_types = [v.type for v in self.init]
        linear = _padded_yields(
            linearized.linear, carry_types, linearized.active_results, active[:carries]
        )
        tangent_init = [
            or_zeros(ctx, tangents[i], self.init[i]) for i in range(carries) if active[i]
        ]
        const_tangents = [t for t in tangents[carries:] if t is not None]
        loop = ctx.emit(
            WhileOp(
                [*self.init, *tangent_init],
                [*self.consts, *const_tangents],
                _extended_cond(self.before, carries, active),
                _jvp_loop_body(linearized.forward, linear, carries, active),
            )
        )
        tangent_results = iter(loop.carries[carries:])
        return [next(tangent_results) if flag else None for flag in active[:carries]]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        raise ADRuleError("transpose", self, _WHILE_REVERSE)

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return False  # its JVP carries the primal along (see the class docstring)

    def nonlinearity_note(self) -> str:
        return _WHILE_REVERSE

    # ----- batching ---------------------------------------------------------------

    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        carries = len(self.init)
        init = [
            v if b else broadcast_to_batch(ctx, v)
            for v, b in zip(operands[:carries], batched[:carries], strict=True)
        ]
        flags = [True] * carries + list(batched[carries:])
        before, before_batched = ctx.batch_body(self.before, flags)
        body, body_batched = ctx.batch_body(self.body, flags)
        body = _broadcast_yields(body, body_batched, ctx.size)
        consts = list(operands[carries:])
        if not before_batched[0]:
            loop = ctx.emit(WhileOp(init, consts, before, body))
            return list(loop.carries)
        loop = ctx.emit(WhileOp(init, consts, _any_cond(before), _masked_body(before, body)))
        return list(loop.carries)


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The terminator of a `prim.scan` body (the new carries, then the slices of
    `ys`), of a `prim.cond` branch (its results) and of the regions of a
    `prim.while` (the predicate; the new carries)."""

    name = "prim.yield"

    values = var_operand_def()

    traits = traits_def(IsTerminator(), HasParent(ScanOp, CondOp, WhileOp))

    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[list(values)])


def _region_from(
    arg_types: Sequence[Attribute], build: Callable[..., Sequence[SSAValue | Operation]]
) -> Region:
    """A body whose ops `build(*arguments)` creates (appended by an xDSL
    `ImplicitBuilder`) and which yields the values `build` returns."""
    block = Block(arg_types=arg_types)
    with ImplicitBuilder(block):
        YieldOp([SSAValue.get(v) for v in build(*block.args)])
    return Region(block)


def _run_region(region: Region, args: Sequence[np.ndarray], owner: str) -> list[np.ndarray]:
    """Evaluate a body on arrays; the arrays it yields."""
    block = region.block
    env: dict[SSAValue, np.ndarray] = {
        arg: coerce_array(value, arg.type, f"body argument #{index} of {owner}")
        for index, (arg, value) in enumerate(zip(block.args, args, strict=True))
    }
    terminator = block.last_op
    assert terminator is not None
    evaluate_ops((op for op in block.ops if op is not terminator), env)
    return [env[value] for value in terminator.operands]


def _cast_results(arrays: Sequence[Any], results: Sequence[SSAValue]) -> tuple[np.ndarray, ...]:
    """Each array as its result's element type (so f32 stays f32)."""
    return tuple(
        np.asarray(array).astype(tensor_dtype(result.type), copy=False)
        for array, result in zip(arrays, results, strict=True)
    )


def _linear_arguments(region: Region) -> list[bool]:
    """Per body argument: whether the body is linear in it, i.e. no op reads it
    as a fixed operand (one without an active flag in its role)."""
    fixed: set[SSAValue] = set()
    terminator = region.block.last_op
    for op in region.block.ops:
        if op is terminator:
            continue
        role = role_of(op)
        mask = role.active_mask if role is not None else (False,) * len(op.operands)
        fixed.update(v for v, active in zip(op.operands, mask, strict=True) if not active)
    return [arg not in fixed for arg in region.block.args]


def _roles_are_linear(region: Region) -> bool:
    """Whether every op of the body with a role is linear in its active operands."""
    return all(
        op.is_linear_in(role.active_mask)
        for op in region.block.ops
        if isinstance(op, Differentiable) and (role := role_of(op)) is not None
    )


def _check_types(what: str, actual: Sequence[Attribute], expected: Sequence[Attribute]) -> None:
    if len(actual) != len(expected):
        raise VerifyException(f"expected {len(expected)} {what}s, got {len(actual)}")
    for index, (got, want) in enumerate(zip(actual, expected, strict=True)):
        if got != want:
            raise VerifyException(f"{what} #{index} has type {got}, expected {want}")


# --------------------------------------------------------------------------
# Rebuilding bodies
# --------------------------------------------------------------------------


def _rebuilt(
    body: Region,
    arg_types: Sequence[Attribute],
    args_of_body: Callable[[Sequence[SSAValue]], Sequence[SSAValue]],
    finish: Callable[[Block, Sequence[SSAValue], Sequence[SSAValue]], Sequence[SSAValue]],
) -> Region:
    """A new body: arguments of `arg_types`; `body`'s ops copied with its
    arguments bound to `args_of_body(new args)`; yields `finish(block, new
    args, body's yielded values)` (which may append ops to the block)."""
    block = Block(arg_types=arg_types)
    old = body.block
    mapping: dict[SSAValue, SSAValue] = dict(zip(old.args, args_of_body(block.args), strict=True))
    terminator = old.last_op
    assert terminator is not None
    for op in old.ops:
        if op is not terminator:
            block.add_op(op.clone(value_mapper=mapping))
    yielded = [mapping.get(v, v) for v in terminator.operands]
    block.add_op(YieldOp(finish(block, block.args, yielded)))
    return Region(block)


def _same_args(body: Region) -> list[Attribute]:
    return [arg.type for arg in body.block.args]


def _selected_yields(body: Region, keep: Sequence[int]) -> Region:
    """`body` yielding only the values at the `keep` positions."""
    return _rebuilt(
        body, _same_args(body), lambda args: args, lambda _, __, ys: [ys[i] for i in keep]
    )


def _reordered(body: Region, order: Sequence[int]) -> Region:
    """`body` whose argument `k` is the old argument `order[k]`."""
    types = _same_args(body)
    inverse = {old: new for new, old in enumerate(order)}
    return _rebuilt(
        body,
        [types[i] for i in order],
        lambda args: [args[inverse[i]] for i in range(len(types))],
        lambda _, __, ys: ys,
    )


def _zero(block: Block, t: Attribute) -> SSAValue:
    """Append a zero tensor of type `t` (a scalar constant, broadcast) to `block`."""
    assert isinstance(t, TensorType)
    scalar = TensorType(t.get_element_type(), [])
    constant = ConstantOp.from_value(np.zeros((), tensor_dtype(t)), scalar)
    block.add_op(constant)
    if not t.get_shape():
        return constant.result
    broadcast = BroadcastInDimOp(constant.result, [], t)
    block.add_op(broadcast)
    return broadcast.result


def _padded_yields(
    body: Region, types: Sequence[Attribute], present: Sequence[bool], wanted: Sequence[bool]
) -> Region:
    """`body` yields the values flagged `present` (in order) among results of
    `types`; the new body yields those flagged `wanted`, a zero where one is
    wanted but not present."""

    def finish(block: Block, _: Sequence[SSAValue], ys: Sequence[SSAValue]) -> list[SSAValue]:
        values = iter(ys)
        out: list[SSAValue] = []
        for t, has, want in zip(types, present, wanted, strict=True):
            value = next(values) if has else None
            if want:
                out.append(value if value is not None else _zero(block, t))
        return out

    return _rebuilt(body, _same_args(body), lambda args: args, finish)


def _transposed_loop_body(
    body: Region,
    flowing: Sequence[bool],
    linear_types: Sequence[Attribute],
    carries: int,
    accumulators: int,
) -> Region:
    """The body of the reverse scan, from the transposed body `body` (cotangents
    of the carries and ys, then the fixed arguments, in; the flowing
    cotangents of the linear arguments, of `linear_types`, out). Its
    arguments: the carries' cotangents, one accumulator per linear const (the
    last `accumulators` linear arguments), then the ys' cotangents, the fixed
    xs and the fixed consts. It yields the carries' cotangents, the
    accumulators plus this iteration's const cotangents, and the linear xs'
    cotangents (zeros where none flows)."""
    types = _same_args(body)
    const_types = linear_types[len(linear_types) - accumulators :]
    arg_types = [*types[:carries], *const_types, *types[carries:]]

    def args_of_body(args: Sequence[SSAValue]) -> list[SSAValue]:
        return [*args[:carries], *args[carries + accumulators :]]

    def finish(block: Block, args: Sequence[SSAValue], outs: Sequence[SSAValue]) -> list[SSAValue]:
        values = iter(outs)
        cotangents = [
            next(values) if flag else _zero(block, t)
            for t, flag in zip(linear_types, flowing, strict=True)
        ]
        split = len(cotangents) - accumulators
        sums: list[SSAValue] = []
        for accumulator, ct in zip(
            args[carries : carries + accumulators], cotangents[split:], strict=True
        ):
            add = PrimOp.accumulate(accumulator, ct)
            add.attributes.update(role_attributes((True, True)))
            block.add_op(add)
            sums.append(add.results[0])
        return [*cotangents[:carries], *sums, *cotangents[carries:split]]

    return _rebuilt(body, arg_types, args_of_body, finish)


def _yield_types(region: Region) -> list[Attribute]:
    terminator = region.block.last_op
    assert terminator is not None
    return [v.type for v in terminator.operands]


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
                residuals.extend(_zero(block, t) for t in types)
        return [*ys[:results], *residuals]

    return _rebuilt(forward, _same_args(forward), lambda args: args, finish)


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
    arg_types = _same_args(part.linear)
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
                out.append(value if value is not None else _zero(block, t))
        return out

    return _rebuilt(part.linear, [*arg_types[:tangents], *all_residuals], args_of_body, finish)


def _inline(ctx: BatchContext, region: Region, args: Sequence[SSAValue]) -> list[SSAValue]:
    """Emit a copy of the body's ops on `args`; the values it yields."""
    mapping: dict[SSAValue, SSAValue] = dict(zip(region.block.args, args, strict=True))
    terminator = region.block.last_op
    assert terminator is not None
    for op in region.block.ops:
        if op is not terminator:
            ctx.emit(op.clone(value_mapper=mapping))
    return [mapping.get(v, v) for v in terminator.operands]


def _broadcast_pred(ctx: BatchContext, pred: SSAValue, like: SSAValue) -> SSAValue:
    """A batched 0-d predicate (shape `[size]`) broadcast to the shape of `like`."""
    target = TensorType(tensor_type_of(pred).get_element_type(), tensor_type_of(like).get_shape())
    return emit_value(ctx, BroadcastInDimOp(pred, [0], target))


def _clone_into(block: Block, region: Region, args: Sequence[SSAValue]) -> list[SSAValue]:
    """Append a copy of the region's ops to `block`, its arguments bound to
    `args`; the values it yields."""
    mapping: dict[SSAValue, SSAValue] = dict(zip(region.block.args, args, strict=True))
    terminator = region.block.last_op
    assert terminator is not None
    for op in region.block.ops:
        if op is not terminator:
            block.add_op(op.clone(value_mapper=mapping))
    return [mapping.get(v, v) for v in terminator.operands]


def _loop_layout(
    types: Sequence[Attribute], carries: int, active: Sequence[bool]
) -> list[Attribute]:
    """Argument types of a JVP loop: carries, active carries' tangents, consts,
    active consts' tangents (`types`: the original carries, then consts)."""
    tangents = [t for t, flag in zip(types, active, strict=True) if flag]
    active_carries = sum(active[:carries])
    return [
        *types[:carries],
        *tangents[:active_carries],
        *types[carries:],
        *tangents[active_carries:],
    ]


def _split_layout(
    args: Sequence[SSAValue], carries: int, active: Sequence[bool]
) -> tuple[list[SSAValue], list[SSAValue]]:
    """(primal arguments, tangent arguments) of a JVP loop's region."""
    active_carries, tangents = sum(active[:carries]), sum(active)
    consts = len(active) - carries
    primal = [*args[:carries], *args[carries + active_carries : carries + active_carries + consts]]
    tangent = [
        *args[carries : carries + active_carries],
        *args[len(args) - (tangents - active_carries) :],
    ]
    return primal, tangent


def _extended_cond(before: Region, carries: int, active: Sequence[bool]) -> Region:
    """The cond region of a JVP loop: it reads the primal arguments only."""
    block = Block(arg_types=_loop_layout(_same_args(before), carries, active))
    primal, _ = _split_layout(block.args, carries, active)
    block.add_op(YieldOp(_clone_into(block, before, primal)))
    return Region(block)


def _jvp_loop_body(forward: Region, linear: Region, carries: int, active: Sequence[bool]) -> Region:
    """The body of a JVP loop: the forward body (new carries, residuals), then
    the linear body on the tangents and those residuals."""
    block = Block(arg_types=_loop_layout(_same_args(forward), carries, active))
    primal, tangent = _split_layout(block.args, carries, active)
    forward_out = _clone_into(block, forward, primal)
    linear_out = _clone_into(block, linear, [*tangent, *forward_out[carries:]])
    block.add_op(YieldOp([*forward_out[:carries], *linear_out]))
    return Region(block)


def _any_cond(before: Region) -> Region:
    """A batched cond region (a predicate per example) yielding whether any holds."""
    block = Block(arg_types=_same_args(before))
    (flags,) = _clone_into(block, before, block.args)
    as_real = ConvertOp(flags, f64)
    largest = ReduceMaxOp(as_real, [0])
    half = ConstantOp.from_value(np.asarray(0.5))
    any_true = CompareOp("gt", largest, half)
    block.add_ops([as_real, largest, half, any_true])
    block.add_op(YieldOp([any_true.result]))
    return Region(block)


def _masked_body(before: Region, body: Region) -> Region:
    """A batched body that leaves the carries of the examples whose predicate is
    false unchanged (`prim.select` on the broadcast predicate)."""
    block = Block(arg_types=_same_args(body))
    (flags,) = _clone_into(block, before, block.args)
    updated = _clone_into(block, body, block.args)
    kept: list[SSAValue] = []
    for new, old in zip(updated, block.args, strict=False):
        target = TensorType(i1, tensor_type_of(new).get_shape())
        mask = BroadcastInDimOp(flags, [0], target)
        select = SelectOp(mask, new, old)
        block.add_ops([mask, select])
        kept.append(select.result)
    block.add_op(YieldOp(kept))
    return Region(block)


def _broadcast_yields(body: Region, batched: Sequence[bool], size: int) -> Region:
    """`body` with every unbatched yielded value broadcast along a new leading
    axis of extent `size` (a scan's carries and ys are all batched)."""

    def finish(block: Block, _: Sequence[SSAValue], ys: Sequence[SSAValue]) -> list[SSAValue]:
        out: list[SSAValue] = []
        for value, is_batched in zip(ys, batched, strict=True):
            if not is_batched:
                rank = len(tensor_type_of(value).get_shape())
                op = BroadcastInDimOp(value, range(1, rank + 1), batched_type(value.type, size))
                block.add_op(op)
                value = op.result
            out.append(value)
        return out

    return _rebuilt(body, _same_args(body), lambda args: args, finish)


def _swap_leading_axes(ctx: BatchContext, value: SSAValue) -> SSAValue:
    """`value` with its first two axes swapped (batch and scan axis)."""
    rank = len(tensor_type_of(value).get_shape())
    return emit_transpose(ctx, value, [1, 0, *range(2, rank)])


OPS: tuple[type[PrimOp], ...] = (ScanOp, CondOp, WhileOp)
"""The op classes of this layer, in the dialect's order."""

TERMINATORS: tuple[type[IRDLOperation], ...] = (YieldOp,)
"""The terminators of the bodies of this layer's ops (not `PrimOp`s: no rules)."""

__all__ = ["CondOp", "ScanOp", "WhileOp", "YieldOp"]
