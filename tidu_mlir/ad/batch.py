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

A *basis* input stands for rows of the standard basis of its type, each
scaled by the input (`jacrev` and `jacfwd` seed with ones): the basis inputs
in order take consecutive rows, so `size` is their total element count.
The new graph keeps them unbatched and builds no basis: their values travel
as `OneHot` rows while the ops' `one_hot_rule`s keep them so (see
`tidu_mlir.interfaces.batchable`), and are built only where an op or an
output needs them dense.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, TensorType, i1
from xdsl.ir import Block, Operation, Region, SSAValue

from tidu_mlir.ad.context import Target, body_transforms, check_new_symbol, resolve_target
from tidu_mlir.ad.materialization import default_function_name
from tidu_mlir.diagnostics import OpError
from tidu_mlir.dialects.cg import ROLE_ATTR_NAME, Fragment, GraphOp, InputOp, OutputOp, key_spec
from tidu_mlir.graph import fragment_inputs, fragment_outputs, fragment_path, reachable_ops
from tidu_mlir.interfaces import Batchable, BatchRuleError, OneHot, OpT, batched_type

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

    def __init__(self, block: Block, size: int, dialect: type[Batchable] | None):
        self.block = block
        self._size = size
        self.source: Operation | None = None
        self.dialect = dialect
        """The op class whose dialect builds one-hot rows no op asked for (outputs)."""

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
    basis: Sequence[bool] = (),
    dialect: type[Batchable] | None = None,
) -> Batched:
    """Add the batched form of a module-level `cg.graph` to its module.

    `mapped`: one flag per input of the graph (in program order), true for an
    input that gains a leading batch axis. `size`: the batch extent (the
    graph's types are those of one example). `name`: the new graph's symbol (default
    `<graph>_batched`). `basis`: flags (empty: none) of the mapped inputs that
    are basis inputs (see above); `dialect`: an op class whose dialect builds
    their rows for outputs when the graph has no op (e.g. `prim.add`'s). The
    module is unchanged when the batch is refused.
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
    basis = tuple(basis) or tuple(False for _ in inputs)
    _check_basis(graph, inputs, mapped, basis, size)
    sym_name = name if name is not None else f"{default_function_name(graph)}_batched"
    check_new_symbol(module, sym_name)

    block = Block()
    dialect = (_first_batchable(graph) or dialect) if any(basis) else None
    builder = BatchBuilder(block, size, dialect)
    values = _Values()
    offset = 0
    for op, is_mapped, is_basis in zip(inputs, mapped, basis, strict=True):
        new_type = batched_type(op.result.type, size) if is_mapped and not is_basis else None
        new_input = InputOp(op.key, new_type or op.result.type)
        new_input.result.name_hint = op.result.name_hint
        new_input.location = op.location
        block.add_op(new_input)
        if is_basis:
            rows = OneHot(new_input.result, offset)
            values.one_hot[op.result] = rows
            offset += rows.count
        else:
            values.set(op.result, new_input.result, is_mapped)

    outputs = fragment_outputs(graph)
    try:
        for op in reachable_ops(outputs):
            if not isinstance(op, InputOp):
                _batch_op(op, builder, values)
        new_outputs = [values.dense(value, builder) for value in outputs]
    except BaseException:
        block.erase(safe_erase=False)
        raise
    block.add_op(OutputOp(new_outputs))
    flags = tuple(value in values.batched for value in new_outputs)
    new_graph = GraphOp(sym_name, Region(block))
    new_graph.attributes[BATCHED_OUTPUTS_ATTR_NAME] = DenseArrayBase.from_list(i1, flags)
    new_graph.location = graph.location
    _insert_after(module, graph, new_graph)
    return Batched(new_graph, size, tuple(mapped), flags)


class _Values:
    """The batched graph's value of each original value: unbatched or batched
    (`mapping`, with `batched` holding the batched ones), or one-hot rows
    (`one_hot`), built at most once (`dense`)."""

    def __init__(self) -> None:
        self.mapping: dict[SSAValue, SSAValue] = {}
        self.batched: set[SSAValue] = set()
        self.one_hot: dict[SSAValue, OneHot] = {}

    def set(self, original: SSAValue, value: SSAValue, is_batched: bool) -> None:
        self.mapping[original] = value
        if is_batched:
            self.batched.add(value)

    def dense(self, original: SSAValue, builder: BatchBuilder) -> SSAValue:
        """The value of `original`, its one-hot rows built (by the dialect of
        the op being batched, else of the graph's first op) the first time."""
        if original not in self.mapping:
            rows = self.one_hot[original]
            source = builder.source
            dialect = type(source) if isinstance(source, Batchable) else builder.dialect
            built = dialect.emit_one_hot_rows(builder, rows) if dialect is not None else None
            if built is None:
                raise builder.error(f"the basis rows of {original.type} cannot be built here")
            self.set(original, built, True)
        return self.mapping[original]


def _batch_op(op: Operation, builder: BatchBuilder, values: _Values) -> None:
    """Copy `op` when no operand carries the batch, else call its batching rule
    (its one-hot rule first when an operand is one-hot rows)."""
    if not any(v in values.one_hot or values.mapping[v] in values.batched for v in op.operands):
        clone = op.clone(value_mapper=values.mapping)
        clone.attributes.pop(ROLE_ATTR_NAME, None)
        builder.block.add_op(clone)
        return
    if not isinstance(op, Batchable):
        raise BatchRuleError(op, f"'{op.name}' does not implement the Batchable interface")
    builder.source = op
    results = _one_hot_results(op, builder, values)
    if results is None:
        operands = [values.dense(v, builder) for v in op.operands]
        results = op.batch_rule(builder, operands, [v in values.batched for v in operands])
    if len(results) != len(op.results):
        raise builder.error(f"the rule returned {len(results)} values, expected {len(op.results)}")
    for original, value in zip(op.results, results, strict=True):
        if isinstance(value, OneHot):
            _check_one_hot(builder, original, value)
            values.one_hot[original] = value
            continue
        expected = batched_type(original.type, builder.size)
        if value.type != expected:
            raise builder.error(f"the rule returned a {value.type}, expected {expected}")
        if value.name_hint is None:
            value.name_hint = original.name_hint
        values.set(original, value, True)


def _one_hot_results(
    op: Batchable, builder: BatchBuilder, values: _Values
) -> Sequence[SSAValue | OneHot] | None:
    """The op's one-hot rule on its operands, when one of them is one-hot rows."""
    assert isinstance(op, Operation)
    if not any(v in values.one_hot for v in op.operands):
        return None
    operands = [values.one_hot.get(v) or values.mapping[v] for v in op.operands]
    flags = [not isinstance(v, OneHot) and v in values.batched for v in operands]
    return op.one_hot_rule(builder, operands, flags)


def _check_one_hot(builder: BatchBuilder, original: SSAValue, rows: OneHot) -> None:
    if rows.scale.type != original.type or not rows.covers(builder.size):
        raise builder.error(
            f"the one-hot rule returned rows of {rows.scale.type} at offset {rows.offset}, "
            f"expected {original.type} within {builder.size} rows"
        )


def _check_basis(graph: Fragment, inputs: Sequence[InputOp], mapped: Sequence[bool],
                 basis: Sequence[bool], size: int) -> None:  # fmt: skip
    """Basis inputs are mapped tensors whose element counts add up to `size`."""
    if len(basis) != len(inputs) or any(b and not m for b, m in zip(basis, mapped, strict=True)):
        raise OpError(
            f"batch of {fragment_path(graph)}: basis flags must mark mapped inputs", graph
        )
    rows = sum(
        math.prod(cast(TensorType, op.result.type).get_shape())
        for op, is_basis in zip(inputs, basis, strict=True)
        if is_basis
    )
    if any(basis) and rows != size:
        raise OpError(
            f"batch of {fragment_path(graph)}: the basis inputs have {rows} elements in all; "
            f"the batch size must equal it, got {size}",
            graph,
        )


def _first_batchable(graph: Fragment) -> type[Batchable] | None:
    """The class of the graph's first batchable op (whose dialect builds the
    one-hot rows of outputs no op consumed)."""
    for op in graph.body.walk():
        if isinstance(op, Batchable):
            return type(op)
    return None


def _check_top_level(fragment: Fragment) -> None:
    if not isinstance(fragment, GraphOp):
        raise OpError(
            f"batch needs a module-level cg.graph; {fragment_path(fragment)} is a nested "
            "fragment (materialize or unzip it into a graph first)",
            fragment,
        )


def _insert_after(module: ModuleOp, anchor: Operation, op: Operation) -> None:
    module.body.block.insert_op_after(op, anchor)
