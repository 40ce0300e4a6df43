"""Cut a large prim function into segments lowered and compiled one after another.

The lowering of a program to loops runs in Python on one core; LLVM's optimizer
and code generator run in threads (`llvm_threads`). Lowered whole, a program
reaches LLVM only when all of it is at the loop level, so the second core
idles through the lowering. Cut at the prim level, each segment is lowered
while LLVM compiles the ones before it.

`segment_function` cuts a function of more than twice `size` prim ops (nested
ones counted; `td.config.segment_ops`, 1500 by default) into consecutive runs of
top-level ops of about that size. Each run becomes a public tensor function
`@name__segK` of the values it reads from earlier runs or the arguments,
returning the values that later runs read; the last returns the function's
results. Constants are re-created in every segment that reads them, so they
never cross. A cut is made only where every value crossing it has a static shape
(the tapes of a recorded loop do not). The function itself becomes `entry`, at
the loop level in the buffer calling convention: it allocates a buffer per
crossing value, calls the segments in order and frees the buffers. Each segment
is then lowered and compiled as an entry point of its own module, the entry in a
last one (`jit.CompiledModule.of_modules`); fusion stops at a cut, nothing else
changes.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType, i64
from xdsl.ir import Block, Operation, Region, SSAValue

from tidu_mlir.dialects import prim
from tidu_mlir.lowering.bufferize import NUM_OUTPUTS_ATTR, buffer_type
from tidu_mlir.lowering.pool_buffers import PoolBuffersPass
from tidu_mlir.lowering.prim_to_loops import temporary_alloc
from tidu_mlir.lowering.promote_buffers import PromoteBuffersToStackPass
from tidu_mlir.lowering.split import op_count


@dataclass
class Segments:
    """A function cut by `segment_function`."""

    modules: list[ModuleOp]
    """One module per segment, in call order: its tensor function, public."""
    entry: ModuleOp
    """The function at the loop level, calling the segments (declared)."""


@dataclass
class _Segment:
    """A run of top-level ops and the values it takes and gives."""

    ops: list[Operation]
    inputs: list[SSAValue]
    outputs: list[SSAValue]


def segment_function(function: func.FuncOp, size: int) -> Segments | None:
    """`function` (consumed: its ops are moved) cut into segments, or None when
    it is not larger than `2 * size` or has no place to cut."""
    block = function.body.block
    ops = list(block.ops)
    ret = ops.pop()
    assert isinstance(ret, func.ReturnOp), "a prim function ends with func.return"
    weights = [op_count(op) for op in ops]
    if sum(weights) <= 2 * size:
        return None
    reads = [_reads(op) for op in ops]
    last_use = _last_uses(reads, ret)
    ends = _cut_points(ops, weights, last_use, size)
    if not ends:
        return None
    segments = _segments(ops, reads, last_use, [0, *ends, len(ops)], list(ret.operands))
    name = function.sym_name.data
    names = [f"{name}__seg{k}" for k in range(len(segments))]
    modules = [ModuleOp([_outlined(n, s)]) for n, s in zip(names, segments, strict=True)]
    return Segments(modules, _entry_module(function, names, segments))


def _reads(op: Operation) -> list[SSAValue]:
    """The values `op` and the ops nested in it read that are defined outside `op`,
    each once, in order of first read."""
    if not op.regions:
        return list(dict.fromkeys(op.operands))
    inside = set(op.walk())
    blocks = {b for nested in inside for region in nested.regions for b in region.blocks}
    reads: dict[SSAValue, None] = {}
    for nested in inside:
        for value in nested.operands:
            owner = value.owner
            if not (owner in inside if isinstance(owner, Operation) else owner in blocks):
                reads[value] = None
    return list(reads)


def _last_uses(reads: list[list[SSAValue]], ret: func.ReturnOp) -> dict[SSAValue, int]:
    """The index of the last top-level op reading each value (the return: the
    number of ops)."""
    last: dict[SSAValue, int] = {}
    for index, values in enumerate(reads):
        for value in values:
            last[value] = index
    for value in ret.operands:
        last[value] = len(reads)
    return last


def _cut_points(
    ops: list[Operation], weights: list[int], last_use: dict[SSAValue, int], size: int
) -> list[int]:
    """Where segments start (after the first): once a segment holds `size` ops,
    at the first op before which no value of a dynamic shape is live, unless
    less than half a segment would follow."""
    cuts: list[int] = []
    held = 0
    remaining = sum(weights)
    dynamic_live: dict[SSAValue, int] = {}
    for index, op in enumerate(ops):
        held += weights[index]
        remaining -= weights[index]
        for result in op.results:
            if not _is_static(result) and last_use.get(result, -1) > index:
                dynamic_live[result] = last_use[result]
        dynamic_live = {v: end for v, end in dynamic_live.items() if end > index}
        if held >= size and remaining >= size // 2 and not dynamic_live:
            cuts.append(index + 1)
            held = 0
    return cuts


def _is_static(value: SSAValue) -> bool:
    typ = value.type
    return isinstance(typ, TensorType) and all(d >= 0 for d in typ.get_shape())


def _is_constant(value: SSAValue) -> bool:
    return isinstance(value.owner, prim.ConstantOp)


def _segments(
    ops: list[Operation],
    reads: list[list[SSAValue]],
    last_use: dict[SSAValue, int],
    bounds: list[int],
    results: list[SSAValue],
) -> list[_Segment]:
    """The runs `ops[bounds[k]:bounds[k + 1]]` with their inputs (values read from
    before the run, constants aside) and outputs (values read after it; the
    last run's: the function's `results`)."""
    segments: list[_Segment] = []
    for start, end in zip(bounds, bounds[1:], strict=False):
        inside = set(ops[start:end])
        read = [v for values in reads[start:end] for v in values]
        outputs: list[SSAValue]
        if end == len(ops):
            read.extend(results)
            outputs = results
        else:
            outputs = [
                result
                for op in ops[start:end]
                for result in op.results
                if last_use.get(result, -1) >= end and not _is_constant(result)
            ]
        inputs = [
            v
            for v in dict.fromkeys(read)
            if not _is_constant(v) and (not isinstance(v.owner, Operation) or v.owner not in inside)
        ]
        segments.append(_Segment(ops[start:end], inputs, outputs))
    return segments


def _outlined(name: str, segment: _Segment) -> func.FuncOp:
    """The public tensor function of `segment`: its ops moved into it, reading
    its inputs as arguments and constants from before it as copies."""
    entry = Block(arg_types=[v.type for v in segment.inputs])
    mapping: dict[SSAValue, SSAValue] = dict(zip(segment.inputs, entry.args, strict=True))
    inside = {nested for op in segment.ops for nested in op.walk()}

    def local(value: SSAValue) -> SSAValue:
        if value not in mapping:
            if isinstance(value.owner, Operation) and value.owner in inside:
                return value
            original = value.owner  # a prim.constant from an earlier segment
            assert isinstance(original, prim.ConstantOp)
            constant = original.clone()
            entry.add_op(constant)
            mapping[value] = constant.results[0]
        return mapping[value]

    for op in segment.ops:
        for nested in op.walk():
            for index, operand in enumerate(nested.operands):
                if operand in mapping or _is_constant(operand):
                    nested.operands[index] = local(operand)
    for op in segment.ops:
        op.detach()
        entry.add_op(op)
    entry.add_op(func.ReturnOp(*(local(v) for v in segment.outputs)))
    types = ([a.type for a in entry.args], [v.type for v in segment.outputs])
    return func.FuncOp(name, types, Region(entry))


def _entry_module(function: func.FuncOp, names: list[str], segments: list[_Segment]) -> ModuleOp:
    """`function` at the loop level (`prim-bufferize`'s convention), calling the
    segments (declared in the module) on buffers: its arguments, its outputs
    and a temporary per value crossing a cut."""
    arguments = list(function.body.block.args)
    results = segments[-1].outputs
    types = [*function.function_type.inputs.data, *(v.type for v in results)]
    entry = Block(arg_types=[buffer_type(t) for t in types])
    buffers: dict[SSAValue, SSAValue] = dict(zip(arguments, entry.args, strict=False))
    for arg, original in zip(entry.args, arguments, strict=False):
        arg.name_hint = original.name_hint
    outputs = list(entry.args[len(arguments) :])
    for index, out in enumerate(outputs):
        out.name_hint = f"out{index}"
    temporaries: list[SSAValue] = []
    declarations: list[func.FuncOp] = []
    for name, segment in zip(names, segments, strict=True):
        if segment is segments[-1]:
            destinations = outputs
        else:
            destinations = [_temporary(entry, v) for v in segment.outputs]
            buffers.update(zip(segment.outputs, destinations, strict=True))
            temporaries.extend(destinations)
        operands = [*(buffers[v] for v in segment.inputs), *destinations]
        entry.add_op(func.CallOp(name, operands, []))
        declarations.append(func.FuncOp.external(name, [v.type for v in operands], []))
    entry.add_ops([*(memref.DeallocOp.get(t) for t in temporaries), func.ReturnOp()])
    lowered = func.FuncOp(function.sym_name.data, ([a.type for a in entry.args], []), Region(entry))
    lowered.attributes[NUM_OUTPUTS_ATTR] = IntegerAttr(len(outputs), i64)
    module = ModuleOp([lowered, *declarations])
    ctx = Context(allow_unregistered=True)
    PromoteBuffersToStackPass().apply(ctx, module)
    PoolBuffersPass().apply(ctx, module)
    return module


def _temporary(block: Block, value: SSAValue) -> SSAValue:
    """A buffer for `value` allocated at the end of `block`, as
    `convert-prim-to-loops` allocates a temporary."""
    alloc, _ = temporary_alloc(prim.tensor_type_of(value))
    block.add_op(alloc)
    return alloc.memref
