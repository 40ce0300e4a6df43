"""Ops with regions: `prim.scan` to one loop calling its body, `prim.cond` to
one branch calling one of its two, each region outlined into a function
compiled once.

A region becomes a private function `@<parent>__<kind><k>` (`outline_region`,
kind `scan` or `cond`): its arguments and results are the region's (for a
scan: carries, slices of `xs`, consts; new carries, slices of `ys`),
bufferized at once like any tensor function (inputs, then output buffers).
`convert-prim-to-loops` then lowers it as it lowers every function, so a scan
nested in the body is outlined in turn; `split-functions` and
`parallelize-loops` see it as an ordinary function. A loop body (scan, while)
is `no_inline`: LLVM compiles the body once and keeps a real loop, whatever
the trip count (inlined, LLVM may unroll a short scan into one copy of the
body per iteration). A cond branch may be inlined: it is called once, by no
loop, and inlining it saves a call per branch taken in small loop bodies
(GradBench's saddle: 0.88 -> 0.42 ms).

The scan itself (`emit_scan`), with two buffers per carry that swap roles at
each iteration (no copy of the carries in the loop):

    memref.copy init -> first          // first: the carry's result buffer if
    scf.for %k = 0 to length           //   length is even, else the spare one
        iter_args(%cur = first, %next = second) {
      %i = %k  (length - 1 - %k with `reverse`)
      func.call @f__scan0(%cur, xs[%i]..., consts..., %next, ys[%i]...)
      scf.yield %next, %cur
    }

so after `length` iterations the last carries are in their result buffers
(which may be the function's output buffers). A slice `xs[%i]` is a pointer
computed at run time, which a memref with a static layout cannot express: each
buffer is cast to `!llvm.ptr` (free after lowering: a memref is its base
pointer), offset by `%i` times the slice's element count with an `inbounds`
`llvm.getelementptr`, and cast to the callee's memref type;
`reconcile-casts` removes the casts. Every pointer of the call is a
distinct buffer or a disjoint slice (the carries' two buffers are distinct),
as the `noalias` arguments of the callee require.

The loop carries its pointers as loop values, so `parallelize-loops` keeps it
serial; a scan without carries is a map (iteration `i` reads `xs[i]` and the
consts, writes only `ys[i]`), whose loop may run in parallel.

A cond (`emit_cond`) loads its predicate and calls one of its two outlined
branches with its arguments' buffers and its result buffers, in an `scf.if`:
the results are written where the cond's users read them, no copy.

A while loop (`emit_while`) is an `scf.while` whose before region calls the
outlined cond (writing the predicate into a one-byte buffer) and whose after
region calls the outlined body; the carries swap between two temporary
buffers, and the last ones are copied into the result buffers (the trip
count, hence which buffer holds them, is known only at run time).

A `prim.record_while` is the same loop, also carrying its iteration count and
one heap block per tape: `tidu_malloc` gives room for `INITIAL_TAPE_SLICES`
slices, the body writes its recorded values straight into slice `n` of each
tape (no copy), and `tidu_realloc` doubles the room when it is full. The
count is stored in its 0-d result; each tape's final block is its buffer (a
`memref<?x...>`, freed with the function's temporaries). A dynamic scan reads
its trip count from that result and the parity choice of the carries' first
buffer is made at run time (`arith.select` on the two pointers).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith, func, llvm, memref, scf
from xdsl.dialects.builtin import (
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    UnrealizedConversionCastOp,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolTable

from tidu_mlir.dialects import prim
from tidu_mlir.lowering.allocation_guard import CHECKED_MALLOC, CHECKED_REALLOC
from tidu_mlir.lowering.bufferize import bufferize_function
from tidu_mlir.lowering.common import call_external
from tidu_mlir.lowering.llvm_ops import POINTER
from tidu_mlir.lowering.loops import Buffer, LoopBuilder
from tidu_mlir.lowering.memref_to_llvm import byte_size
from tidu_mlir.lowering.split import NO_INLINE_ATTR

INITIAL_TAPE_SLICES = 16
"""Slices a tape has room for before its first growth (it doubles when full)."""


def outline_region(region: Region, module: ModuleOp, parent: func.FuncOp, kind: str) -> func.FuncOp:
    """Move the body of `region` (ending with `prim.yield`) into a new private,
    bufferized function `@<parent>__<kind><k>` placed after `parent` (the ops
    are moved, not copied); `no_inline` unless a cond branch (see above)."""
    block = region.block
    region.detach_block(block)
    terminator = block.last_op
    assert isinstance(terminator, prim.YieldOp)
    results = list(terminator.operands)
    Rewriter.replace_op(terminator, func.ReturnOp(*results))
    function = func.FuncOp(
        _fresh_name(module, f"{parent.sym_name.data}__{kind}"),
        ([arg.type for arg in block.args], [v.type for v in results]),
        Region(block),
        visibility=StringAttr("private"),
    )
    if kind != "cond":
        function.attributes[NO_INLINE_ATTR] = UnitAttr()
    module.body.block.insert_op_after(function, parent)
    bufferize_function(function)
    return function


def _fresh_name(module: ModuleOp, prefix: str) -> str:
    """`<prefix><k>` for the smallest `k` not taken in `module`."""
    k = 0
    while SymbolTable.lookup_symbol(module, f"{prefix}{k}") is not None:
        k += 1
    return f"{prefix}{k}"


@dataclass(frozen=True)
class ScanBuffers:
    """The buffers a scan reads and writes; `spares` holds one extra buffer per
    carry, of the carry's type (the other half of each swapped pair)."""

    init: Sequence[Buffer]
    xs: Sequence[Buffer]
    consts: Sequence[Buffer]
    carries: Sequence[Buffer]
    spares: Sequence[Buffer]
    ys: Sequence[Buffer]
    count: Buffer | None = None
    """The 0-d i64 trip count of a dynamic scan."""


def emit_scan(
    lb: LoopBuilder,
    b: Builder,
    scan: prim.ScanOp,
    callee: func.FuncOp,
    buffers: ScanBuffers,
) -> None:
    """Insert at `b` the loop running `scan` by calls of `callee` (its outlined body)."""
    pairs = list(zip(buffers.carries, buffers.spares, strict=True))
    if buffers.count is None:
        length = lb.index(scan.trip_count)
        last = lb.index(scan.trip_count - 1) if scan.is_reverse else length
        even = scan.trip_count % 2 == 0
        first = [result if even else spare for result, spare in pairs]
        second = [spare if even else result for result, spare in pairs]
        for source, target in zip(buffers.init, first, strict=True):
            b.insert(memref.CopyOp(source.ref, target.ref))
        carried = [_pointer(b, buffer) for buffer in (*first, *second)]
    else:
        length, last, carried = _dynamic_start(b, lb, buffers.count, pairs)
        for source, target, (result, _) in zip(
            buffers.init, carried[: len(pairs)], pairs, strict=True
        ):
            b.insert(memref.CopyOp(source.ref, _cast(b, target, result.ref.type)))
    xs = [(_pointer(b, x), x) for x in buffers.xs]
    consts = [_pointer(b, c) for c in buffers.consts]
    ys = [(_pointer(b, y), y) for y in buffers.ys]

    count = len(pairs)
    block = Block(arg_types=[IndexType(), *(POINTER for _ in carried)])
    inner = Builder(InsertPoint.at_end(block))
    current, following = list(block.args[1 : 1 + count]), list(block.args[1 + count :])
    step = _iteration(inner, block.args[0], last, scan.is_reverse)
    pointers = [
        *current,
        *(_slice(inner, pointer, buffer.ref.type, step) for pointer, buffer in xs),
        *consts,
        *following,
        *(_slice(inner, pointer, buffer.ref.type, step) for pointer, buffer in ys),
    ]
    types = callee.function_type.inputs.data
    arguments = [_cast(inner, p, t) for p, t in zip(pointers, types, strict=True)]
    inner.insert(func.CallOp(callee.sym_name.data, arguments, []))
    inner.insert(scf.YieldOp(*following, *current))
    b.insert(scf.ForOp(lb.index(0), length, lb.index(1), carried, block))


def _dynamic_start(
    b: Builder, lb: LoopBuilder, count: Buffer, pairs: Sequence[tuple[Buffer, Buffer]]
) -> tuple[SSAValue, SSAValue, list[SSAValue]]:
    """The trip count and last position (indices) of a dynamic scan, and the
    pointers its carries start in, then those they swap with: the result
    buffers if the count is even, else the spares, chosen at run time (so the
    last carries end in the results)."""
    trips = b.insert(memref.LoadOp.get(count.ref, [])).res
    length = b.insert(arith.IndexCastOp(trips, IndexType())).result
    last = b.insert(arith.SubiOp(length, lb.index(1))).result
    odd = b.insert(arith.TruncIOp(trips, IntegerType(1))).result
    first: list[SSAValue] = []
    second: list[SSAValue] = []
    for result, spare in pairs:
        r, s = _pointer(b, result), _pointer(b, spare)
        first.append(b.insert(arith.SelectOp(odd, s, r)).result)
        second.append(b.insert(arith.SelectOp(odd, r, s)).result)
    return length, last, [*first, *second]


def emit_cond(
    b: Builder,
    pred: Buffer,
    callees: tuple[func.FuncOp, func.FuncOp],
    args: Sequence[Buffer],
    results: Sequence[Buffer],
) -> None:
    """Insert at `b` the `scf.if` calling the outlined true or false branch on
    the buffers of the cond's arguments and results."""
    flag = b.insert(memref.LoadOp.get(pred.ref, [])).res
    pointers = [_pointer(b, buffer) for buffer in (*args, *results)]
    regions: list[Region] = []
    for callee in callees:
        block = Block()
        inner = Builder(InsertPoint.at_end(block))
        _call(inner, callee, pointers)
        inner.insert(scf.YieldOp())
        regions.append(Region(block))
    b.insert(scf.IfOp(flag, [], regions[0], regions[1]))


@dataclass(frozen=True)
class WhileBuffers:
    """The buffers a while loop reads and writes: `current` and `following`
    hold the carries in turn (both temporaries), `flag` the predicate."""

    init: Sequence[Buffer]
    consts: Sequence[Buffer]
    carries: Sequence[Buffer]
    current: Sequence[Buffer]
    following: Sequence[Buffer]
    flag: Buffer
    count: Buffer | None = None
    """A `prim.record_while`'s 0-d i64 trip count."""
    tapes: Sequence[MemRefType] = ()
    """The buffer types of a `prim.record_while`'s tapes (`memref<?x...>`)."""


def emit_while(
    module: ModuleOp,
    b: Builder,
    callees: tuple[func.FuncOp, func.FuncOp],
    buffers: WhileBuffers,
) -> list[SSAValue]:
    """Insert at `b` the `scf.while` running a `prim.while` (or a
    `prim.record_while`) by calls of its outlined cond and body: the carries
    swap between two buffers each iteration, and the last ones are copied into
    the result buffers. The tapes' final blocks (`memref<?x...>`), for the
    caller to free."""
    cond_fn, body_fn = callees
    for source, target in zip(buffers.init, buffers.current, strict=True):
        b.insert(memref.CopyOp(source.ref, target.ref))
    carried = [_pointer(b, buffer) for buffer in (*buffers.current, *buffers.following)]
    consts = [_pointer(b, c) for c in buffers.consts]
    flag = _pointer(b, buffers.flag)
    count = len(buffers.current)
    recording = _tape_start(module, b, buffers.tapes) if buffers.count is not None else []
    state = [*carried, *recording]
    state_types = [v.type for v in state]

    before = Block(arg_types=state_types)
    inner = Builder(InsertPoint.at_end(before))
    _call(inner, cond_fn, [*before.args[:count], *consts, flag])
    value = inner.insert(memref.LoadOp.get(buffers.flag.ref, [])).res
    inner.insert(scf.ConditionOp(value, *before.args))

    after = Block(arg_types=state_types)
    inner = Builder(InsertPoint.at_end(after))
    current, following = list(after.args[:count]), list(after.args[count : 2 * count])
    recorded: list[SSAValue] = []
    slices: list[SSAValue] = []
    if buffers.count is not None:
        recorded, slices = _tape_step(module, inner, list(after.args[2 * count :]), buffers.tapes)
    _call(inner, body_fn, [*current, *consts, *following, *slices])
    inner.insert(scf.YieldOp(*following, *current, *recorded))

    loop = b.insert(scf.WhileOp(state, state_types, [before], [after]))
    for pointer, result in zip(loop.results[:count], buffers.carries, strict=True):
        b.insert(memref.CopyOp(_cast(b, pointer, result.ref.type), result.ref))
    if buffers.count is None:
        return []
    trips = loop.results[2 * count]
    b.insert(memref.StoreOp.get(trips, buffers.count.ref, []))
    tapes = loop.results[2 * count + 2 :]
    return [_cast(b, tape, typ) for tape, typ in zip(tapes, buffers.tapes, strict=True)]


def _slice_bytes(typ: MemRefType) -> int:
    """Bytes of one slice of a tape of buffer type `typ` (at least 1)."""
    return max(math.prod(typ.get_shape()[1:]) * byte_size(typ.element_type), 1)


def _tape_start(module: ModuleOp, b: Builder, tapes: Sequence[MemRefType]) -> list[SSAValue]:
    """The recording state before the first iteration: the count 0, the room
    `INITIAL_TAPE_SLICES`, and each tape's first block."""
    zero = b.insert(arith.ConstantOp(IntegerAttr(0, i64))).result
    room = b.insert(arith.ConstantOp(IntegerAttr(INITIAL_TAPE_SLICES, i64))).result
    return [zero, room, *(_allocate(module, b, room, typ) for typ in tapes)]


def _allocate(module: ModuleOp, b: Builder, slices: SSAValue, typ: MemRefType) -> SSAValue:
    """A heap block for `slices` (an i64) slices of a tape of buffer type `typ`."""
    return call_external(module, b, CHECKED_MALLOC, [_bytes(b, slices, typ)], [POINTER]).res[0]


def allocate_tape(module: ModuleOp, b: Builder, count: Buffer, typ: MemRefType) -> SSAValue:
    """A tape of buffer type `typ` (`memref<?x...>`) with room for as many
    slices as the 0-d i64 `count` holds: the `ys` of a dynamic scan (freed by
    the caller with its temporaries)."""
    slices = b.insert(memref.LoadOp.get(count.ref, [])).res
    return _cast(b, _allocate(module, b, slices, typ), typ)


def _tape_step(
    module: ModuleOp, b: Builder, state: list[SSAValue], tapes: Sequence[MemRefType]
) -> tuple[list[SSAValue], list[SSAValue]]:
    """Grow full tapes (doubling their room) and point at slice `count` of each:
    the recording state for the next iteration, and the slices the body writes."""
    trips, room, blocks = state[0], state[1], state[2:]
    full = b.insert(arith.CmpiOp(trips, room, "eq")).result
    two = b.insert(arith.ConstantOp(IntegerAttr(2, i64))).result
    doubled = b.insert(arith.MuliOp(room, two)).result
    room = b.insert(arith.SelectOp(full, doubled, room)).result
    grown: list[SSAValue] = []
    for block, typ in zip(blocks, tapes, strict=True):
        then = Block()
        grow = Builder(InsertPoint.at_end(then))
        size = _bytes(grow, room, typ)
        moved = call_external(module, grow, CHECKED_REALLOC, [block, size], [POINTER]).res[0]
        grow.insert(scf.YieldOp(moved))
        keep = Block()
        Builder(InsertPoint.at_end(keep)).insert(scf.YieldOp(block))
        grown.append(b.insert(scf.IfOp(full, [POINTER], Region(then), Region(keep))).results[0])
    one = b.insert(arith.ConstantOp(IntegerAttr(1, i64))).result
    following = b.insert(arith.AddiOp(trips, one)).result
    slices = [_slice(b, block, typ, trips) for block, typ in zip(grown, tapes, strict=True)]
    return [following, room, *grown], slices


def _bytes(b: Builder, slices: SSAValue, typ: MemRefType) -> SSAValue:
    """The bytes of `slices` (an i64) slices of a tape of buffer type `typ`."""
    size = b.insert(arith.ConstantOp(IntegerAttr(_slice_bytes(typ), i64))).result
    return b.insert(arith.MuliOp(slices, size)).result


def _call(b: Builder, callee: func.FuncOp, pointers: Sequence[SSAValue]) -> None:
    """Call `callee` on `pointers`, each cast to its argument type."""
    types = callee.function_type.inputs.data
    arguments = [_cast(b, p, t) for p, t in zip(pointers, types, strict=True)]
    b.insert(func.CallOp(callee.sym_name.data, arguments, []))


def _iteration(b: Builder, k: SSAValue, last: SSAValue, reverse: bool) -> SSAValue:
    """The scanned position of iteration `k`, as an i64: `k`, or `last - k`."""
    position = k
    if reverse:
        position = b.insert(arith.SubiOp(last, k)).result
    return b.insert(arith.IndexCastOp(position, i64)).result


def _pointer(b: Builder, buffer: Buffer) -> SSAValue:
    """The base pointer of `buffer`."""
    return b.insert(UnrealizedConversionCastOp.get([buffer.ref], [POINTER])).results[0]


def _slice(b: Builder, pointer: SSAValue, typ: Attribute, position: SSAValue) -> SSAValue:
    """The pointer to slice `position` (i64) along the leading axis of the
    buffer of type `typ` at `pointer`."""
    assert isinstance(typ, MemRefType)
    elements = math.prod(typ.get_shape()[1:])
    offset = position
    if elements != 1:
        size = b.insert(arith.ConstantOp(IntegerAttr(elements, i64))).result
        offset = b.insert(arith.MuliOp(position, size)).result
    gep = llvm.GEPOp(
        pointer, [llvm.GEP_USE_SSA_VAL], typ.element_type, ssa_indices=[offset], inbounds=True
    )
    return b.insert(gep).result


def _cast(b: Builder, pointer: SSAValue, typ: Attribute) -> SSAValue:
    """`pointer` as a memref of type `typ` (a callee's argument)."""
    return b.insert(UnrealizedConversionCastOp.get([pointer], [typ])).results[0]
