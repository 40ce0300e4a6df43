"""`prim.scan`: a loop over a body region, compiled once whatever its trip count.

    %c, %ys = prim.scan length 10 init(%c0) xs(%xs) consts(%w) : (...) -> (...) {
    ^bb0(%c: T, %x: X, %w: W):
      ...
      prim.yield %c_next, %y : T, Y
    }

The body runs `length` times (last to first with `reverse`). A scan built by
the AD rules of `prim.while` has a trip count known only at run time: it
has no `length`; a 0-d i64 operand `count` gives it, and each of its `xs` is
a tape of `prim.record_while` (type `tensor<?x...>`, one slice per iteration),
as is each of its `ys`:

    prim.scan count(%n : tensor<i64>) init(%t0) xs(%tape) consts() : ...
 Its arguments
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
from xdsl.dialects.builtin import DYNAMIC_INDEX, I64, IntegerAttr, TensorType, UnitAttr, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    AttrSizedResultSegments,
    irdl_op_definition,
    opt_operand_def,
    opt_prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import IsolatedFromAbove, Pure
from xdsl.utils.exceptions import VerifyException

from tidu_mlir.dialects.prim.base import PrimOp, Values, broadcast_to_batch
from tidu_mlir.dialects.prim.control.bodies import (
    YieldOp,
    append_zero,
    argument_types,
    broadcast_yields,
    cast_results,
    check_types,
    linear_arguments_of,
    linearize_carried,
    padded_yields,
    rebuilt,
    region_from,
    reordered,
    roles_are_linear,
    run_region,
    selected_yields,
)
from tidu_mlir.dialects.prim.core import (
    emit_transpose,
    is_zero_constant,
    or_zeros,
    zeros_like,
)
from tidu_mlir.dialects.prim.structural import ReduceMaxOp
from tidu_mlir.dialects.prim.syntax import RoleSpec, role_attributes
from tidu_mlir.dialects.prim.types import (
    check_shape,
    check_tape,
    check_tensor,
    shape_of,
    tensor_type_of,
)
from tidu_mlir.interfaces import (
    ADRuleError,
    BatchContext,
    RecomputeCost,
    RuleContext,
    active_mask_of,
)


def _sliced(t: Attribute) -> TensorType:
    """The type of one slice along the leading axis."""
    assert isinstance(t, TensorType)
    return TensorType(t.get_element_type(), t.get_shape()[1:])


DYNAMIC_LENGTH = DYNAMIC_INDEX
"""The trip count of a scan that has a `count` operand (and the length of a tape)."""


def stacked_type(t: Attribute, length: int) -> TensorType:
    """The type of `length` slices of type `t` stacked along a new leading axis
    (`DYNAMIC_LENGTH`: a dynamic axis, a tape)."""
    assert isinstance(t, TensorType)
    return TensorType(t.get_element_type(), [length, *t.get_shape()])


@irdl_op_definition
class ScanOp(PrimOp):
    """A loop of `length` iterations over its body (see the module docstring)."""

    name = "prim.scan"

    init = var_operand_def()
    xs = var_operand_def()
    consts = var_operand_def()
    count = opt_operand_def()
    carries = var_result_def()
    ys = var_result_def()
    length = opt_prop_def(IntegerAttr[I64])
    reverse = opt_prop_def(UnitAttr)
    body = region_def("single_block")

    irdl_options = (
        AttrSizedOperandSegments(as_property=True),
        AttrSizedResultSegments(as_property=True),
    )
    traits = traits_def(Pure(), RecomputeCost(cheap=False), IsolatedFromAbove())

    assembly_format = (
        "(`length` $length^)? (`count` `(` $count^ `:` type($count) `)`)? (`reverse` $reverse^)? "
        "`init` `(` $init `)` `xs` `(` $xs `)` "
        "`consts` `(` $consts `)` attr-dict `:` `(` type($init) `)` `(` type($xs) `)` "
        "`(` type($consts) `)` `->` `(` type($carries) `)` `(` type($ys) `)` $body"
    )

    def __init__(
        self,
        init: Sequence[SSAValue],
        xs: Sequence[SSAValue],
        consts: Sequence[SSAValue],
        body: Region,
        length: int | SSAValue,
        reverse: bool = False,
        *,
        role: RoleSpec = None,
    ):
        """`length`: the trip count, or the 0-d i64 value holding it (a dynamic scan)."""
        terminator = body.block.last_op
        assert terminator is not None, "a scan body ends with prim.yield"
        count = [length] if isinstance(length, SSAValue) else []
        static = DYNAMIC_LENGTH if isinstance(length, SSAValue) else length
        ys_types = [stacked_type(v.type, static) for v in terminator.operands[len(init) :]]
        properties: dict[str, Attribute] = {}
        if not isinstance(length, SSAValue):
            properties["length"] = IntegerAttr(length, i64)
        if reverse:
            properties["reverse"] = UnitAttr()
        super().__init__(
            operands=[list(init), list(xs), list(consts), count],
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
        length: int | SSAValue,
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
        return ScanOp(init, xs, consts, region_from(arg_types, body), length, reverse)

    # ----- structure ----------------------------------------------------------

    @property
    def trip_count(self) -> int:
        """The static trip count (`DYNAMIC_LENGTH` for a dynamic scan)."""
        return self.length.value.data if self.length is not None else DYNAMIC_LENGTH

    @property
    def extent(self) -> int | SSAValue:
        """The trip count, or the value holding it (the `length` of a new scan
        running as many times as this one)."""
        return self.count if self.count is not None else self.trip_count

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
        self._verify_length(length)
        for index, value in enumerate(self.xs):
            what = f"xs #{index}"
            if self.count is None:
                check_tensor(what, value.type)
            else:
                check_tape(what, value.type, "any")
            shape = tensor_type_of(value).get_shape()
            if not shape or shape[0] != length:
                described = "dynamic (a tape)" if self.count is not None else f"{length}"
                raise VerifyException(
                    f"{what} of type {value.type} must have a leading axis of the scan "
                    f"length {described}"
                )
        expected = [
            *(v.type for v in self.init),
            *(_sliced(v.type) for v in self.xs),
            *(v.type for v in self.consts),
        ]
        check_types("body argument", [a.type for a in self.body.block.args], expected)
        terminator = self.terminator
        if not isinstance(terminator, YieldOp):
            raise VerifyException(f"a scan body must end with prim.yield, not {terminator.name}")
        yielded = [v.type for v in terminator.operands]
        carries = [v.type for v in self.init]
        if len(yielded) < len(carries):
            raise VerifyException(
                f"the body yields {len(yielded)} values, fewer than its {len(carries)} carries"
            )
        check_types("carry returned by the body", yielded[: len(carries)], carries)
        check_types("carry result", [r.type for r in self.carries], carries)
        ys = [stacked_type(t, length) for t in yielded[len(carries) :]]
        check_types("ys result", [r.type for r in self.ys], ys)

    def _verify_length(self, length: int) -> None:
        if (self.length is None) == (self.count is None):
            raise VerifyException("a scan has either a length or a count operand")
        if self.count is None:
            if length < 0:
                raise VerifyException(f"scan length must be non-negative, got {length}")
            return
        check_tensor("count", self.count.type, "integer")
        check_shape("count", shape_of(self.count), ())

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
        stacked by `i`. A dynamic scan (`length` -1) runs as many times as its
        last operand, `count`, says."""
        if length == DYNAMIC_LENGTH:
            length, operands = int(operands[-1]), operands[:-1]
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
            np.stack(per_step) if length else np.empty((0, *shape[1:]))
            for per_step, shape in zip(slices, y_shapes, strict=True)
        ]
        return (*carry, *ys)

    def reference_params(self) -> dict[str, Any]:
        return {
            "body": lambda *args: run_region(self.body, args, self.name),
            "carries": len(self.init),
            "xs": len(self.xs),
            "length": self.trip_count,
            "reverse": self.is_reverse,
            "y_shapes": [tuple(tensor_type_of(y).get_shape()) for y in self.ys],
        }

    def evaluate(self, *operands: np.ndarray) -> tuple[np.ndarray, ...]:
        results = self.reference(*operands, **self.reference_params())
        return cast_results(results, self.results)

    # ----- AD -------------------------------------------------------------------

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        tangents = tangents[: len(self.body.block.args)]  # `count` (an integer) has none
        carries, xs = len(self.init), len(self.xs)
        linearized, active = linearize_carried(ctx, self.body, tangents, carries)
        results = [*active[:carries], *linearized.active_results[carries:]]
        linear_body = padded_yields(
            linearized.linear, [r.type for r in self.results], linearized.active_results, results
        )

        residuals = linearized.residual_arguments
        stacked = [i for i, arg in enumerate(residuals) if arg is None or arg < carries]
        body_results = len(self.carries) + len(self.ys)
        forward_body = selected_yields(
            linearized.forward, [*range(body_results), *(body_results + i for i in stacked)]
        )
        forward = ctx.emit(
            ScanOp(self.init, self.xs, self.consts, forward_body, self.extent, self.is_reverse)
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
                reordered(linear_body, order),
                self.extent,
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
                self.extent,
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
        if len(active_mask) > len(linear) and any(active_mask[len(linear) :]):
            return False  # an active count
        body_mask = active_mask[: len(linear)]
        for index, (active, is_linear) in enumerate(zip(body_mask, linear, strict=True)):
            if active and not is_linear:
                return False
            fixed_start = index < carries and is_linear and not active
            if fixed_start and not is_zero_constant(self.init[index]):
                return False  # a fixed, non-zero start makes the loop affine
        return roles_are_linear(self.body)

    def linear_arguments(self) -> list[bool]:
        """Per body argument: whether the body is linear in it."""
        return linear_arguments_of(self.body)

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
            _swap_leading_axes(ctx, v) if b and self.count is None else v
            for v, b in zip(
                operands[carries : carries + xs], batched[carries : carries + xs], strict=True
            )
        ]
        arguments = len(self.body.block.args)
        flags = [True] * carries + list(batched[carries:arguments])
        body, batched_results = ctx.batch_body(self.body, flags)
        body = broadcast_yields(body, batched_results, ctx.size)
        consts = operands[carries + xs : arguments]
        length: int | SSAValue = self.trip_count
        if self.count is not None:
            length = operands[arguments]
            if batched[arguments]:  # the same count for every example (a batched loop's)
                length = ctx.emit(ReduceMaxOp(length, [0])).result
        scan = ctx.emit(ScanOp(init, scanned, consts, body, length, self.is_reverse))
        ys = scan.ys if self.count is not None else [_swap_leading_axes(ctx, y) for y in scan.ys]
        return [*scan.carries, *ys]


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
    types = argument_types(body)
    const_types = linear_types[len(linear_types) - accumulators :]
    arg_types = [*types[:carries], *const_types, *types[carries:]]

    def args_of_body(args: Sequence[SSAValue]) -> list[SSAValue]:
        return [*args[:carries], *args[carries + accumulators :]]

    def finish(block: Block, args: Sequence[SSAValue], outs: Sequence[SSAValue]) -> list[SSAValue]:
        values = iter(outs)
        cotangents = [
            next(values) if flag else append_zero(block, t)
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

    return rebuilt(body, arg_types, args_of_body, finish)


def _swap_leading_axes(ctx: BatchContext, value: SSAValue) -> SSAValue:
    """`value` with its first two axes swapped (batch and scan axis)."""
    rank = len(tensor_type_of(value).get_shape())
    return emit_transpose(ctx, value, [1, 0, *range(2, rank)])
