"""AD and batching of an op's body region, for the rules of ops with regions.

A loop body is a single-block region: block arguments in, the operands of its
terminator out. The rule of such an op (`prim.scan`) asks, through its rule
context, for the body's linearization, transpose or batched form; this module
builds each by running the generic passes on a temporary module: the body is
copied into a `cg.graph` (one input `#cg.key<"a<i>">` per argument, one
output per result), the pass runs, and the fragments it builds are flattened
back into regions whose block arguments stand for their inputs. The body is
never changed, and no concrete primitive is named here: the terminator of a
new region is a copy of the body's terminator with new operands.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue

from tidu_mlir.ad.batch import batch
from tidu_mlir.ad.context import BodyTransforms, register_body_transforms
from tidu_mlir.ad.jvp import linearize
from tidu_mlir.ad.transpose import linear_transpose
from tidu_mlir.ad.unzip import unzip
from tidu_mlir.dialects.cg import (
    Fragment,
    GraphOp,
    InputOp,
    KeyAttr,
    LinearOp,
    OutputOp,
    allocate_pass_id,
    tangent_of,
)
from tidu_mlir.graph import fragment_inputs, fragment_outputs, reachable_ops
from tidu_mlir.interfaces import LinearizedBody

_BODY = "body"


def linearize_region(body: Region, active: Sequence[bool]) -> LinearizedBody:
    """`linearize` then `unzip` (save-all) of `body` w.r.t. the `active` arguments."""
    module, graph = _graph_of(body)
    wrt = [_argument_key(index) for index, flag in enumerate(active) if flag]
    linear = linearize(graph, wrt=wrt)
    unzipped = unzip((module, f"@{_BODY}::@{linear.fragment.sym_name.data}"))
    terminator = _terminator(body)

    forward = Block(arg_types=[arg.type for arg in body.block.args])
    mapping: dict[SSAValue, SSAValue] = {
        op.result: forward.args[_index_of(op)] for op in fragment_inputs(unzipped.forward)
    }
    outputs = _copy_ops(forward, mapping, unzipped.forward)
    _close(forward, terminator, outputs)

    inputs = [*fragment_inputs(unzipped.linear), *fragment_inputs(unzipped.residual_graph)]
    linear_block = Block(arg_types=[op.result.type for op in inputs])
    mapping: dict[SSAValue, SSAValue] = dict(
        zip((op.result for op in inputs), linear_block.args, strict=True)
    )
    outputs = _copy_ops(linear_block, mapping, unzipped.linear)
    _close(linear_block, terminator, outputs)
    return LinearizedBody(
        forward=Region(forward),
        residual_arguments=[
            _index_of(r.value.owner) if isinstance(r.value.owner, InputOp) else None
            for r in unzipped.residuals
        ],
        linear=Region(linear_block),
        active_results=[value is not None for value in linear.tangent_outputs],
    )


def transpose_region(body: Region, linear: Sequence[bool]) -> tuple[Region, list[bool]]:
    """The transpose of the linear `body` (see `RuleContext.transpose_body`), and
    which linear arguments receive a cotangent (those the new region returns)."""
    graph, fragment, active_results = _linear_graph_of(body, linear)
    transposed = linear_transpose(fragment)
    results = list(_terminator(body).operands)
    fixed = fragment_inputs(graph)
    block = Block(arg_types=[value.type for value in results] + [op.result.type for op in fixed])
    seeds = iter(fragment_inputs(transposed.fragment))
    mapping: dict[SSAValue, SSAValue] = {
        next(seeds).result: arg
        for arg, is_active in zip(block.args, active_results, strict=False)
        if is_active
    }
    mapping.update(zip((op.result for op in fixed), block.args[len(results) :], strict=True))
    outputs = _copy_ops(block, mapping, transposed.fragment)
    _close(block, _terminator(body), outputs)
    return Region(block), [value is not None for value in transposed.tangent_outputs]


def batch_region(body: Region, batched: Sequence[bool], size: int) -> tuple[Region, list[bool]]:
    """The `batch` pass on `body` (see `BatchContext.batch_body`)."""
    _, graph = _graph_of(body)
    result = batch(graph, list(batched), size)
    inputs = fragment_inputs(result.graph)
    block = Block(arg_types=[op.result.type for op in inputs])
    mapping: dict[SSAValue, SSAValue] = dict(
        zip((op.result for op in inputs), block.args, strict=True)
    )
    outputs = _copy_ops(block, mapping, result.graph)
    _close(block, _terminator(body), outputs)
    return Region(block), list(result.batched_outputs)


# --------------------------------------------------------------------------
# Body <-> fragment
# --------------------------------------------------------------------------


def _argument_key(index: int) -> KeyAttr:
    return KeyAttr(f"a{index}")


def _index_of(op: object) -> int:
    """The argument index of a body graph's input `#cg.key<"a<i>">`."""
    assert isinstance(op, InputOp) and isinstance(op.key, KeyAttr)
    return int(op.key.key_name.data[1:])


def _terminator(body: Region) -> Operation:
    terminator = body.block.last_op
    assert terminator is not None, "a body region ends with its terminator"
    return terminator


def _graph_of(body: Region) -> tuple[ModuleOp, GraphOp]:
    """A module holding `cg.graph @body`: a copy of `body` with inputs `a<i>`."""
    block = Block()
    mapping: dict[SSAValue, SSAValue] = {}
    for index, arg in enumerate(body.block.args):
        op = InputOp(_argument_key(index), arg.type)
        block.add_op(op)
        mapping[arg] = op.result
    terminator = _terminator(body)
    for op in body.block.ops:
        if op is not terminator:
            block.add_op(op.clone(value_mapper=mapping))
    block.add_op(OutputOp([mapping.get(value, value) for value in terminator.operands]))
    graph = GraphOp(_BODY, Region(block))
    return ModuleOp([graph]), graph


def _linear_graph_of(body: Region, linear: Sequence[bool]) -> tuple[GraphOp, LinearOp, list[bool]]:
    """`cg.graph @body { fixed inputs; cg.linear @l { tangent inputs; ops } }`
    from a linear body (in a module of its own), and which body results are
    active (depend on a linear argument; only those are outputs of `@l`)."""
    holder, inner = Block(), Block()
    graph = GraphOp(_BODY, Region(holder))
    module = ModuleOp([graph])
    pass_id = allocate_pass_id(module)
    mapping: dict[SSAValue, SSAValue] = {}
    active: set[SSAValue] = set()
    for index, (arg, is_linear) in enumerate(zip(body.block.args, linear, strict=True)):
        key = _argument_key(index)
        op = InputOp(tangent_of(key, pass_id) if is_linear else key, arg.type)
        (inner if is_linear else holder).add_op(op)
        mapping[arg] = op.result
        if is_linear:
            active.add(arg)
    terminator = _terminator(body)
    for op in body.block.ops:
        if op is not terminator:
            inner.add_op(op.clone(value_mapper=mapping))
            if any(value in active for value in op.operands):
                active.update(op.results)
    active_results = [value in active for value in terminator.operands]
    returned = [mapping[v] for v, a in zip(terminator.operands, active_results, strict=True) if a]
    inner.add_op(OutputOp(returned))
    fragment = LinearOp("l", pass_id, [True] * len(returned), Region(inner))
    holder.add_ops([fragment, OutputOp([])])
    return graph, fragment, active_results


def _copy_ops(block: Block, mapping: dict[SSAValue, SSAValue], returns: Fragment) -> list[SSAValue]:
    """Copy into `block` the ops the outputs of fragment `returns` need (across
    the fragments enclosing it, in program order), reading mapped values (every
    input they reach must be mapped); the copies of those outputs."""
    outputs = fragment_outputs(returns)
    for op in reachable_ops(outputs):
        if not isinstance(op, InputOp):
            block.add_op(op.clone(value_mapper=mapping))
    return [mapping[value] for value in outputs]


def _close(block: Block, terminator: Operation, values: Sequence[SSAValue]) -> None:
    """End `block` with a copy of `terminator` returning `values`."""
    block.add_op(type(terminator).create(operands=list(values)))


register_body_transforms(BodyTransforms(linearize_region, transpose_region, batch_region))
