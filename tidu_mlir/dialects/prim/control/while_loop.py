"""`prim.while`: a loop whose trip count is known only at run time (see
`WhileOp`), and `prim.record_while`, the same loop recording per-iteration
values in growable tapes (see `RecordWhileOp`), which its JVP rule emits."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType, f64, i1, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    AttrSizedResultSegments,
    irdl_op_definition,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import IsolatedFromAbove, Pure
from xdsl.utils.exceptions import VerifyException

from tidu_mlir.dialects.prim.base import PrimOp, Values, broadcast_to_batch
from tidu_mlir.dialects.prim.control.bodies import (
    YieldOp,
    argument_types,
    broadcast_yields,
    cast_results,
    check_types,
    clone_into,
    copied,
    linearize_carried,
    padded_yields,
    rebuilt,
    region_from,
    reordered,
    run_region,
    yield_types,
)
from tidu_mlir.dialects.prim.control.scan import DYNAMIC_LENGTH, ScanOp, stacked_type
from tidu_mlir.dialects.prim.core import (
    BroadcastInDimOp,
    ConstantOp,
    ConvertOp,
    SelectOp,
    or_zeros,
)
from tidu_mlir.dialects.prim.elementwise import CompareOp
from tidu_mlir.dialects.prim.structural import ReduceMaxOp
from tidu_mlir.dialects.prim.syntax import RoleSpec, role_attributes
from tidu_mlir.dialects.prim.types import check_tape, tensor_type_of
from tidu_mlir.interfaces import (
    ADRuleError,
    BatchContext,
    RecomputeCost,
    RuleContext,
)

_NOT_LINEAR = (
    "a while loop is linear in none of its operands (its JVP records the primal "
    "iterations, then runs a linear loop over them)"
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
    above. JVP (the unzip of a while loop): a `prim.record_while` runs the
    body's forward part, recording its trip count and, in growable tapes, the
    residuals of each iteration; then a dynamic `prim.scan` runs the body's
    linear part that many times over the tangents and the tapes. That scan
    is linear, so `linear-transpose` reverses it (a scan over the tapes in
    the opposite direction): reverse mode through a loop whose trip count is
    known only at run time. Batched on the predicate: the loop runs while any
    example's predicate holds, and an example whose predicate is false keeps
    its carries (`prim.select`).
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
        return WhileOp(init, consts, region_from(types, before), region_from(types, body))

    def verify_types(self) -> None:
        carries = _check_regions(self)
        check_types("carry returned by the body", yield_types(self.body), carries)

    # ----- semantics ----------------------------------------------------------

    @staticmethod
    def reference(
        *operands: Any,
        carries: int,
        cond: Callable[..., Sequence[Any]],
        body: Callable[..., Sequence[Any]],
    ) -> tuple[Any, ...]:
        """`while cond(*carry, *consts): carry = body(*carry, *consts)`; the carry
        (`RecordWhileOp.reference` recording nothing)."""
        recorded = RecordWhileOp.reference(
            *operands, carries=carries, cond=cond, body=body, slice_shapes=()
        )
        return recorded[:carries]

    def reference_params(self) -> dict[str, Any]:
        return {
            "carries": len(self.init),
            "cond": lambda *a: run_region(self.before, a, self.name),
            "body": lambda *a: run_region(self.body, a, self.name),
        }

    def evaluate(self, *operands: np.ndarray) -> tuple[np.ndarray, ...]:
        results = self.reference(*operands, **self.reference_params())
        return cast_results(results, self.results)

    # ----- AD -------------------------------------------------------------------

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        return _unzipped_loop(self, ctx, tangents)

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        raise ADRuleError("transpose", self, _NOT_LINEAR)

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return False

    def nonlinearity_note(self) -> str:
        return _NOT_LINEAR

    # ----- batching ---------------------------------------------------------------

    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        loop = ctx.emit(WhileOp(*_batched_loop(self, ctx, operands, batched)))
        return list(loop.carries)


@irdl_op_definition
class RecordWhileOp(PrimOp):
    """A while loop that also records, per iteration, the values its body
    yields after the new carries, in tapes (one slice per iteration):

        %r, %n, %tape = prim.record_while init(%c0) consts(%k) : (T) (K)
            -> (T) count tensor<i64> tapes(tensor<?xR>) cond {...} do {
        ^bb0(%c: T, %k: K):
          ...
          prim.yield %c_next, %residual : T, R
        }

    Its results: the last carries, the trip count `%n`, and the tapes (the
    recorded slices stacked along a leading axis of run-time length `%n`;
    native code grows them by doubling). Emitted by the JVP rule of
    `prim.while` for the linear loop to read; not differentiable itself.
    """

    name = "prim.record_while"

    init = var_operand_def()
    consts = var_operand_def()
    carries = var_result_def()
    count = result_def()
    tapes = var_result_def()
    before = region_def("single_block")
    body = region_def("single_block")

    irdl_options = (
        AttrSizedOperandSegments(as_property=True),
        AttrSizedResultSegments(as_property=True),
    )
    traits = traits_def(Pure(), RecomputeCost(cheap=False), IsolatedFromAbove())

    assembly_format = (
        "`init` `(` $init `)` `consts` `(` $consts `)` attr-dict `:` `(` type($init) `)` "
        "`(` type($consts) `)` `->` `(` type($carries) `)` `count` type($count) `tapes` "
        "`(` type($tapes) `)` `cond` $before `do` $body"
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
        recorded = yield_types(body)[len(init) :]
        super().__init__(
            operands=[list(init), list(consts)],
            result_types=[
                [v.type for v in init],
                TensorType(i64, []),
                [stacked_type(t, DYNAMIC_LENGTH) for t in recorded],
            ],
            regions=[before, body],
            attributes=role_attributes(role),
        )

    def verify_types(self) -> None:
        carries = _check_regions(self)
        yielded = yield_types(self.body)
        check_types("carry returned by the body", yielded[: len(carries)], carries)
        check_types("count", [self.count.type], [TensorType(i64, [])])
        for index, tape in enumerate(self.tapes):
            check_tape(f"tape #{index}", tape.type, "any")
        recorded = [stacked_type(t, DYNAMIC_LENGTH) for t in yielded[len(carries) :]]
        check_types("tape", [t.type for t in self.tapes], recorded)

    # ----- semantics ----------------------------------------------------------

    @staticmethod
    def reference(
        *operands: Any,
        carries: int,
        cond: Callable[..., Sequence[Any]],
        body: Callable[..., Sequence[Any]],
        slice_shapes: Sequence[tuple[int, ...]],
    ) -> tuple[Any, ...]:
        """`WhileOp.reference`, also returning the trip count and, per recorded
        value, its slices stacked in iteration order."""
        carry, consts = list(operands[:carries]), operands[carries:]
        slices: list[list[Any]] = [[] for _ in slice_shapes]
        count = 0
        while bool(cond(*carry, *consts)[0]):
            count += 1
            results = body(*carry, *consts)
            carry = list(results[:carries])
            for tape, value in zip(slices, results[carries:], strict=True):
                tape.append(value)
        tapes = [
            np.stack(tape) if tape else np.empty((0, *shape))
            for tape, shape in zip(slices, slice_shapes, strict=True)
        ]
        return (*carry, np.int64(count), *tapes)

    def reference_params(self) -> dict[str, Any]:
        return {
            "carries": len(self.init),
            "cond": lambda *a: run_region(self.before, a, self.name),
            "body": lambda *a: run_region(self.body, a, self.name),
            "slice_shapes": [tuple(tensor_type_of(t).get_shape()[1:]) for t in self.tapes],
        }

    def evaluate(self, *operands: np.ndarray) -> tuple[np.ndarray, ...]:
        results = self.reference(*operands, **self.reference_params())
        return cast_results(results, self.results)

    # ----- AD -------------------------------------------------------------------

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        """As `WhileOp`'s, the linear loop also stacking the tangents of the
        recorded values (tangent tapes); none for the count."""
        tangent_results = _unzipped_loop(self, ctx, tangents)
        carries = len(self.init)
        return [*tangent_results[:carries], None, *tangent_results[carries:]]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        raise ADRuleError("transpose", self, _NOT_LINEAR)

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return False

    # ----- batching ---------------------------------------------------------------

    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        """As `WhileOp`'s; every example records a slice each time the loop runs
        (the batched JVP records the predicate too, so its linear loop leaves
        the tangents of finished examples alone). The trip count is shared."""
        loop = ctx.emit(RecordWhileOp(*_batched_loop(self, ctx, operands, batched)))
        count = broadcast_to_batch(ctx, loop.count)
        return [*loop.carries, count, *loop.tapes]


def _unzipped_loop(op: WhileOp | RecordWhileOp, ctx: RuleContext, tangents: Values) -> Values:
    """The JVP of a while loop (see `WhileOp`): a `prim.record_while` of the
    body's forward part recording the predicate and the varying residuals,
    then a dynamic scan over those tapes running the body's linear part
    (guarded by the recorded predicate). The tangents of the body's results:
    carries, then (for a `prim.record_while`) the stacked recorded values."""
    carries = len(op.init)
    results = yield_types(op.body)
    linearized, active = linearize_carried(ctx, op.body, tangents, carries)
    residuals = linearized.residual_arguments
    recorded = [i for i, arg in enumerate(residuals) if arg is None or arg < carries]
    invariant = [arg for arg in residuals if arg is not None and arg >= carries]
    init = [or_zeros(ctx, tangents[i], op.init[i]) for i in range(carries) if active[i]]
    record = ctx.emit(  # after `init`: forward mode fuses it with its replay (`fuse_loops`)
        RecordWhileOp(
            op.init,
            op.consts,
            copied(op.before),
            _recording_body(op.before, linearized.forward, carries, len(results), recorded),
        )
    )
    wanted = [*active[:carries], *linearized.active_results[carries:]]
    linear = padded_yields(linearized.linear, results, linearized.active_results, wanted)
    tangent_count, active_carries = sum(active), sum(active[:carries])
    guarded = _guarded(linear, active_carries, tangent_count)
    first_residual = tangent_count + 1
    order = [
        *range(active_carries),
        tangent_count,
        *(first_residual + i for i in recorded),
        *range(active_carries, tangent_count),
        *(first_residual + i for i in range(len(residuals)) if i not in recorded),
    ]
    const_tangents = [t for t in tangents[carries : len(op.operands)] if t is not None]
    loop = ctx.emit(
        ScanOp(
            init,
            list(record.tapes),
            [*const_tangents, *(op.operands[arg] for arg in invariant)],
            reordered(guarded, order),
            record.count,
        )
    )
    values = iter([*loop.carries, *loop.ys])
    return [next(values) if flag else None for flag in wanted]


def _recording_body(
    before: Region, forward: Region, carries: int, results: int, recorded: Sequence[int]
) -> Region:
    """The body of the `prim.record_while` of a JVP: the forward part of the
    loop body (`forward`: its `results` values, then residuals), yielding the
    new carries, the predicate the iteration started with (true, or false for
    an example a batched loop no longer runs) and the `recorded` residuals."""

    def finish(block: Block, args: Sequence[SSAValue], outs: Sequence[SSAValue]) -> list[SSAValue]:
        (holds,) = clone_into(block, before, args)
        return [*outs[:carries], holds, *(outs[results + i] for i in recorded)]

    return rebuilt(forward, argument_types(forward), lambda args: args, finish)


def _guarded(linear: Region, carries: int, position: int) -> Region:
    """The linear body `linear` (tangents of its first `carries` arguments out
    first) with a 0-d boolean argument inserted at `position`, the predicate
    its iteration started with: where it is false (an example a batched loop
    no longer runs) the carries' tangents pass through unchanged. Linear in
    the tangents (`prim.select` on a fixed predicate)."""
    types = argument_types(linear)
    arg_types = [*types[:position], TensorType(i1, []), *types[position:]]

    def finish(block: Block, args: Sequence[SSAValue], outs: Sequence[SSAValue]) -> list[SSAValue]:
        holds = args[position]
        kept: list[SSAValue] = []
        for new, old in zip(outs[:carries], args[:carries], strict=True):
            shape = tensor_type_of(new).get_shape()
            mask = holds
            if shape:
                broadcast = BroadcastInDimOp(holds, [], TensorType(i1, shape))
                block.add_op(broadcast)
                mask = broadcast.result
            select = SelectOp(mask, new, old, role=(False, True, True))
            block.add_op(select)
            kept.append(select.result)
        return [*kept, *outs[carries:]]

    return rebuilt(
        linear, arg_types, lambda args: [*args[:position], *args[position + 1 :]], finish
    )


def _check_regions(op: WhileOp | RecordWhileOp) -> list[Attribute]:
    """Both regions take the carries and consts and end with `prim.yield`, the
    cond region yielding one `tensor<i1>`, and the results start with the
    carries; the carries' types."""
    expected = [v.type for v in (*op.init, *op.consts)]
    for label, region in (("cond", op.before), ("body", op.body)):
        check_types(f"{label} argument", [a.type for a in region.block.args], expected)
        if not isinstance(region.block.last_op, YieldOp):
            raise VerifyException(f"the {label} region of {op.name} must end with prim.yield")
    predicate = yield_types(op.before)
    if len(predicate) != 1 or predicate[0] != TensorType(i1, []):
        raise VerifyException(
            f"the cond region must yield one tensor<i1>, got {', '.join(map(str, predicate))}"
        )
    carries = [v.type for v in op.init]
    check_types("carry result", [r.type for r in op.carries], carries)
    return carries


def _batched_loop(
    op: WhileOp | RecordWhileOp,
    ctx: BatchContext,
    operands: Sequence[SSAValue],
    batched: Sequence[bool],
) -> tuple[list[SSAValue], list[SSAValue], Region, Region]:
    """The operands and regions of the batched loop (init, consts, cond, body):
    if the predicate is batched, the loop runs while any example's holds, and
    an example whose predicate is false keeps its carries."""
    carries = len(op.init)
    init = [
        v if b else broadcast_to_batch(ctx, v)
        for v, b in zip(operands[:carries], batched[:carries], strict=True)
    ]
    flags = [True] * carries + list(batched[carries:])
    before, before_batched = ctx.batch_body(op.before, flags)
    body, body_batched = ctx.batch_body(op.body, flags)
    body = broadcast_yields(body, body_batched, ctx.size)
    consts = list(operands[carries:])
    if not before_batched[0]:
        return init, consts, before, body
    return init, consts, _any_cond(before), _masked_body(before, body, carries)


def _any_cond(before: Region) -> Region:
    """A batched cond region (a predicate per example) yielding whether any holds."""
    block = Block(arg_types=argument_types(before))
    (flags,) = clone_into(block, before, block.args)
    as_real = ConvertOp(flags, f64)
    largest = ReduceMaxOp(as_real, [0])
    half = ConstantOp.from_value(np.asarray(0.5))
    any_true = CompareOp("gt", largest, half)
    block.add_ops([as_real, largest, half, any_true])
    block.add_op(YieldOp([any_true.result]))
    return Region(block)


def _masked_body(before: Region, body: Region, carries: int) -> Region:
    """A batched body that leaves the carries of the examples whose predicate is
    false unchanged (`prim.select` on the broadcast predicate); values it yields
    after the carries (a `prim.record_while`'s) pass through."""
    block = Block(arg_types=argument_types(body))
    (flags,) = clone_into(block, before, block.args)
    updated = clone_into(block, body, block.args)
    kept: list[SSAValue] = []
    for new, old in zip(updated[:carries], block.args[:carries], strict=True):
        target = TensorType(i1, tensor_type_of(new).get_shape())
        mask = BroadcastInDimOp(flags, [0], target)
        select = SelectOp(mask, new, old)
        block.add_ops([mask, select])
        kept.append(select.result)
    block.add_op(YieldOp([*kept, *updated[carries:]]))
    return Region(block)
