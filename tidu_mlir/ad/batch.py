"""`batch`: vectorize a graph over a new leading axis (what `td.vmap` runs).

From a `cg.graph` computing one example, build a module-level `cg.graph`
computing `size` examples at once. Each input is *mapped* (it gains a
leading axis of extent `size`: one slice per example) or *broadcast* (the
same value for every example). One topological walk: an op none of whose
operands is batched is copied unchanged (work on broadcast values is done
once, not per example), any other op has its `batch_rule` called (see
`tidu_mlir.interfaces.batchable`). The pass knows no concrete op.

An output that depends on no mapped input stays unbatched (the rules would
otherwise have to broadcast it, and only a dialect knows how): the new graph
records which outputs carry the batch in its `cg.batched_outputs` attribute
(`array<i1: ...>`), and callers such as `td.vmap` broadcast the others.
Batch axes other than the leading one are the caller's to move (`td.vmap`
does it for `in_axes` and `out_axes`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, i1
from xdsl.ir import Block, Operation, Region, SSAValue

from tidu_mlir.ad.context import Target, body_transforms, check_new_symbol, resolve_target
from tidu_mlir.ad.materialization import default_function_name
from tidu_mlir.diagnostics import OpError
from tidu_mlir.dialects.cg import ROLE_ATTR_NAME, Fragment, GraphOp, InputOp, OutputOp, key_spec
from tidu_mlir.graph import fragment_inputs, fragment_outputs, fragment_path, reachable_ops
from tidu_mlir.interfaces import Batchable, BatchRuleError, OpT, batched_type

BATCHED_OUTPUTS_ATTR_NAME = "cg.batched_outputs"
"""The attribute of a batched graph: one flag per output, true when it carries the batch."""


@dataclass
class Batched:
    """A graph built by `batch`: its mapped inputs and batched outputs lead with `size`."""

    graph: GraphOp
    size: int
    mapped_inputs: tuple[bool, ...]
    batched_outputs: tuple[bool, ...]


class BatchBuilder:
    """The `BatchContext` of one `batch` call: appends emitted ops to `block`
    with the location of the op being batched."""

    def __init__(self, block: Block, size: int):
        self.block = block
        self._size = size
        self.source: Operation | None = None

    @property
    def size(self) -> int:
        return self._size

    def emit(self, op: OpT) -> OpT:
        if op.parent is not None:
            raise self.error(f"the rule emitted '{op.name}', which is already in a block")
        if self.source is not None:
            op.location = self.source.location
        self.block.add_op(op)
        return op

    def batch_body(self, body: Region, batched: Sequence[bool]) -> tuple[Region, list[bool]]:
        return body_transforms().batch(body, batched, self._size)

    def error(self, detail: str) -> OpError:
        if self.source is None:
            return OpError(detail)
        return BatchRuleError(self.source, detail)


def batch(
    target: Target,
    mapped: Sequence[bool],
    size: int,
    name: str | None = None,
) -> Batched:
    """Add the batched form of a module-level `cg.graph` to its module.

    `mapped`: one flag per input of the graph (in program order), true for an
    input that gains a leading batch axis. `size`: the batch extent (the
    graph's types are those of one example). `name`: the new graph's symbol (default
    `<graph>_batched`). The module is unchanged when the batch is refused.
    """
    module, graph = resolve_target(target)
    _check_top_level(graph)
    inputs = fragment_inputs(graph)
    if len(mapped) != len(inputs):
        keys = ", ".join(key_spec(op.key) for op in inputs) or "none"
        raise OpError(
            f"batch of {fragment_path(graph)} needs one axis per input ({len(inputs)}: {keys}); "
            f"got {len(mapped)}",
            graph,
        )
    if size < 0:
        raise OpError(f"batch size must be non-negative, got {size}", graph)
    sym_name = name if name is not None else f"{default_function_name(graph)}_batched"
    check_new_symbol(module, sym_name)

    block = Block()
    builder = BatchBuilder(block, size)
    mapping: dict[SSAValue, SSAValue] = {}
    batched: set[SSAValue] = set()
    for op, is_mapped in zip(inputs, mapped, strict=True):
        new_type = batched_type(op.result.type, size) if is_mapped else op.result.type
        new_input = InputOp(op.key, new_type)
        new_input.result.name_hint = op.result.name_hint
        new_input.location = op.location
        block.add_op(new_input)
        mapping[op.result] = new_input.result
        if is_mapped:
            batched.add(new_input.result)

    outputs = fragment_outputs(graph)
    try:
        for op in reachable_ops(outputs):
            if not isinstance(op, InputOp):
                _batch_op(op, builder, mapping, batched)
    except BaseException:
        block.erase(safe_erase=False)
        raise
    new_outputs = [mapping[value] for value in outputs]
    block.add_op(OutputOp(new_outputs))
    flags = tuple(value in batched for value in new_outputs)
    new_graph = GraphOp(sym_name, Region(block))
    new_graph.attributes[BATCHED_OUTPUTS_ATTR_NAME] = DenseArrayBase.from_list(i1, flags)
    new_graph.location = graph.location
    _insert_after(module, graph, new_graph)
    return Batched(new_graph, size, tuple(mapped), flags)


def _batch_op(
    op: Operation,
    builder: BatchBuilder,
    mapping: dict[SSAValue, SSAValue],
    batched: set[SSAValue],
) -> None:
    """Copy `op` when no operand carries the batch, else call its batching rule."""
    operands = [mapping[value] for value in op.operands]
    flags = [value in batched for value in operands]
    if not any(flags):
        clone = op.clone(value_mapper=mapping)
        clone.attributes.pop(ROLE_ATTR_NAME, None)
        builder.block.add_op(clone)
        return
    if not isinstance(op, Batchable):
        raise BatchRuleError(op, f"'{op.name}' does not implement the Batchable interface")
    builder.source = op
    results = op.batch_rule(builder, operands, flags)
    if len(results) != len(op.results):
        raise builder.error(f"the rule returned {len(results)} values, expected {len(op.results)}")
    for original, value in zip(op.results, results, strict=True):
        expected = batched_type(original.type, builder.size)
        if value.type != expected:
            raise builder.error(f"the rule returned a {value.type}, expected {expected}")
        if value.name_hint is None:
            value.name_hint = original.name_hint
        mapping[original] = value
        batched.add(value)


def _check_top_level(fragment: Fragment) -> None:
    if not isinstance(fragment, GraphOp):
        raise OpError(
            f"batch needs a module-level cg.graph; {fragment_path(fragment)} is a nested "
            "fragment (materialize or unzip it into a graph first)",
            fragment,
        )


def _insert_after(module: ModuleOp, anchor: Operation, op: Operation) -> None:
    module.body.block.insert_op_after(op, anchor)
