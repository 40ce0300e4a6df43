"""What the ops with regions share: their terminator `prim.yield`, evaluating
a region, checking region signatures, and rebuilding regions (copying a
body's ops with new arguments or new yielded values) for their AD and
batching rules."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.builder import ImplicitBuilder
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    traits_def,
    var_operand_def,
)
from xdsl.traits import IsTerminator, OpTrait
from xdsl.utils.exceptions import VerifyException

from tidu_mlir.dialects.cg import role_of
from tidu_mlir.dialects.prim.core import (
    BroadcastInDimOp,
    ConstantOp,
)
from tidu_mlir.dialects.prim.types import tensor_dtype, tensor_type_of
from tidu_mlir.interfaces import (
    BatchContext,
    Differentiable,
    LinearizedBody,
    RuleContext,
    batched_type,
    coerce_array,
    evaluate_ops,
)


class InScanCondOrWhile(OpTrait):
    """The op's parent is an op of this layer with regions (scan, cond, while)."""

    def verify(self, op: Operation) -> None:
        parent = op.parent_op()
        if parent is None or parent.name not in REGION_OPS:
            raise VerifyException(f"'{op.name}' expects parent op {', '.join(sorted(REGION_OPS))}")


REGION_OPS = frozenset({"prim.scan", "prim.cond", "prim.while", "prim.record_while"})
"""The ops whose regions `prim.yield` terminates."""


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The terminator of a `prim.scan` body (the new carries, then the slices of
    `ys`), of a `prim.cond` branch (its results) and of the regions of a
    `prim.while` (the predicate; the new carries)."""

    name = "prim.yield"

    values = var_operand_def()

    traits = traits_def(IsTerminator(), InScanCondOrWhile())

    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[list(values)])


def region_from(
    arg_types: Sequence[Attribute], build: Callable[..., Sequence[SSAValue | Operation]]
) -> Region:
    """A body whose ops `build(*arguments)` creates (appended by an xDSL
    `ImplicitBuilder`) and which yields the values `build` returns."""
    block = Block(arg_types=arg_types)
    with ImplicitBuilder(block):
        YieldOp([SSAValue.get(v) for v in build(*block.args)])
    return Region(block)


def run_region(region: Region, args: Sequence[np.ndarray], owner: str) -> list[np.ndarray]:
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


def cast_results(arrays: Sequence[Any], results: Sequence[SSAValue]) -> tuple[np.ndarray, ...]:
    """Each array as its result's element type (so f32 stays f32)."""
    return tuple(
        np.asarray(array).astype(tensor_dtype(result.type), copy=False)
        for array, result in zip(arrays, results, strict=True)
    )


def linear_arguments_of(region: Region) -> list[bool]:
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


def roles_are_linear(region: Region) -> bool:
    """Whether every op of the body with a role is linear in its active operands."""
    return all(
        op.is_linear_in(role.active_mask)
        for op in region.block.ops
        if isinstance(op, Differentiable) and (role := role_of(op)) is not None
    )


def check_types(what: str, actual: Sequence[Attribute], expected: Sequence[Attribute]) -> None:
    if len(actual) != len(expected):
        raise VerifyException(f"expected {len(expected)} {what}s, got {len(actual)}")
    for index, (got, want) in enumerate(zip(actual, expected, strict=True)):
        if got != want:
            raise VerifyException(f"{what} #{index} has type {got}, expected {want}")


# --------------------------------------------------------------------------
# Rebuilding bodies
# --------------------------------------------------------------------------


def rebuilt(
    body: Region,
    arg_types: Sequence[Attribute],
    args_of_body: Callable[[Sequence[SSAValue]], Sequence[SSAValue]],
    finish: Callable[[Block, Sequence[SSAValue], Sequence[SSAValue]], Sequence[SSAValue]],
) -> Region:
    """A new body: arguments of `arg_types`; `body`'s ops copied with its
    arguments bound to `args_of_body(new args)`; yields `finish(block, new
    args, body's yielded values)` (which may append ops to the block)."""
    block = Block(arg_types=arg_types)
    yielded = clone_into(block, body, args_of_body(block.args))
    block.add_op(YieldOp(finish(block, block.args, yielded)))
    return Region(block)


def copied(body: Region) -> Region:
    """A copy of `body` (a region belongs to one op)."""
    return rebuilt(body, argument_types(body), lambda args: args, lambda _, __, ys: ys)


def argument_types(body: Region) -> list[Attribute]:
    return [arg.type for arg in body.block.args]


def append_zero(block: Block, t: Attribute) -> SSAValue:
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


def padded_yields(
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
                out.append(value if value is not None else append_zero(block, t))
        return out

    return rebuilt(body, argument_types(body), lambda args: args, finish)


def yield_types(region: Region) -> list[Attribute]:
    terminator = region.block.last_op
    assert terminator is not None
    return [v.type for v in terminator.operands]


def copy_body(
    region: Region, args: Sequence[SSAValue], add: Callable[[Operation], object]
) -> list[SSAValue]:
    """Hand a copy of each of the region's ops (its arguments bound to `args`)
    to `add`, in order; the values it yields."""
    mapping: dict[SSAValue, SSAValue] = dict(zip(region.block.args, args, strict=True))
    terminator = region.block.last_op
    assert terminator is not None
    for op in region.block.ops:
        if op is not terminator:
            add(op.clone(value_mapper=mapping))
    return [mapping.get(v, v) for v in terminator.operands]


def clone_into(block: Block, region: Region, args: Sequence[SSAValue]) -> list[SSAValue]:
    """Append a copy of the region's ops to `block`, its arguments bound to
    `args`; the values it yields."""
    return copy_body(region, args, block.add_op)


def emit_body(ctx: BatchContext, region: Region, args: Sequence[SSAValue]) -> list[SSAValue]:
    """Emit a copy of the body's ops on `args` through `ctx`; the values it yields."""
    return copy_body(region, args, ctx.emit)


def broadcast_yields(body: Region, batched: Sequence[bool], size: int) -> Region:
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

    return rebuilt(body, argument_types(body), lambda args: args, finish)


def linearize_carried(
    ctx: RuleContext, body: Region, tangents: Sequence[SSAValue | None], carries: int
) -> tuple[LinearizedBody, list[bool]]:
    """`ctx.linearize_body` of a loop body whose first `carries` arguments are
    carried from its first results: a carry that gets a tangent in the body has
    one from the start, so linearize again until the active carries are stable.
    The linearization and the active arguments."""
    active = [tangent is not None for tangent in tangents]
    linearized = ctx.linearize_body(body, active)
    while any(
        r and not a
        for r, a in zip(linearized.active_results[:carries], active[:carries], strict=True)
    ):
        active[:carries] = [
            a or r
            for a, r in zip(active[:carries], linearized.active_results[:carries], strict=True)
        ]
        linearized = ctx.linearize_body(body, active)
    return linearized, active


def selected_yields(body: Region, keep: Sequence[int]) -> Region:
    """`body` yielding only the values at the `keep` positions."""
    return rebuilt(
        body, argument_types(body), lambda args: args, lambda _, __, ys: [ys[i] for i in keep]
    )


def reordered(body: Region, order: Sequence[int]) -> Region:
    """`body` whose argument `k` is the old argument `order[k]`."""
    types = argument_types(body)
    inverse = {old: new for new, old in enumerate(order)}
    return rebuilt(
        body,
        [types[i] for i in order],
        lambda args: [args[inverse[i]] for i in range(len(types))],
        lambda _, __, ys: ys,
    )
