"""`promote-buffers-to-stack`: small temporaries of a function in its frame.

A temporary of static shape allocated at the top level of a function and freed
there (`memref.alloc` ... `memref.dealloc` in the function's entry block, the
pairs `convert-prim-to-loops` emits) becomes a `memref.alloca` when it holds
at most `max_alloc_bytes`, as long as the function's promoted buffers stay
within `max_frame_bytes` and `max_buffers` (the first ones in program order
are promoted, the others stay on the heap). Its `memref.dealloc` goes.

Why: an unrolled program has thousands of tiny temporaries (a step of an
8-vector chain allocates ~7). On the heap each costs a `malloc`, a failure
check and a `free` at run time and, worse, a call LLVM cannot see through,
so the buffer stays in memory; in the frame LLVM's SROA turns a fully
unrolled 8-element buffer into registers. On the K=250 chain of
`bench/bench_compile.py` (1,749 such temporaries) this halves O3's work
and cuts codegen by a third, and the emitted code shrinks by 40 %.

The caps keep frames small (worker threads have smaller stacks than the main
thread) and bound the frame objects of one function: thousands of stack
slots in one function made LLVM's instruction selection take minutes
(GradBench gmm at d=3). Run after `split-functions`, so each part of a large
function has its own budget, and a temporary used only in a part is promoted
in that part's frame, which is released when the part returns.

Only the entry block is considered: an `alloca` in a loop would grow the
stack at every iteration. A buffer used by the function's return is never
promoted (it outlives the frame).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import cast

from xdsl.context import Context
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import DenseArrayBase, MemRefType, ModuleOp, i32
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from tidu_mlir.lowering.memref_to_llvm import byte_size

MAX_ALLOC_BYTES = 256
"""The largest temporary promoted (32 doubles: the tiny kernels LLVM unrolls)."""

MAX_FRAME_BYTES = 16384
"""The most bytes of promoted temporaries in one function's frame."""

MAX_BUFFERS = 256
"""The most promoted temporaries in one function (its stack slots)."""


def static_bytes(alloc: memref.AllocOp) -> int | None:
    """The size of a statically shaped allocation, else None."""
    if alloc.dynamic_sizes or alloc.symbol_operands:
        return None
    return _bytes_of(cast(MemRefType, alloc.memref.type))


@functools.cache
def _bytes_of(typ: MemRefType) -> int | None:
    """The bytes of a buffer of type `typ` (None if a size is dynamic)."""
    shape = typ.get_shape()
    if any(size < 0 for size in shape):
        return None
    return byte_size(typ.element_type) * math.prod(shape)


def single_release(alloc: memref.AllocOp, block_ops: set[Operation]) -> memref.DeallocOp | None:
    """The one `memref.dealloc` of `alloc` in the same block, if the buffer is
    freed only there and not returned; else None."""
    deallocs = [u.operation for u in alloc.memref.uses if isinstance(u.operation, memref.DeallocOp)]
    returned = any(isinstance(u.operation, func.ReturnOp) for u in alloc.memref.uses)
    if returned or len(deallocs) != 1 or deallocs[0] not in block_ops:
        return None
    return deallocs[0]


_NO_OPERANDS = DenseArrayBase.from_list(i32, [0, 0])
"""The operand segment sizes of an `alloca` of static shape (no sizes, no symbols)."""


def _alloca_like(alloc: memref.AllocOp) -> memref.AllocaOp:
    """A `memref.alloca` of the type and alignment of `alloc`, made of its
    attributes (building new ones was most of this pass's time)."""
    properties: dict[str, Attribute] = {"operandSegmentSizes": _NO_OPERANDS}
    if alloc.alignment is not None:
        properties["alignment"] = alloc.alignment
    alloca = memref.AllocaOp.create(result_types=[alloc.memref.type], properties=properties)
    alloca.memref.name_hint = alloc.memref.name_hint
    return alloca


def _promote_in_function(
    function: func.FuncOp, max_alloc_bytes: int, max_frame_bytes: int, max_buffers: int
) -> None:
    """Promote the small temporaries of `function`'s entry block, within the caps."""
    block = function.body.blocks.first
    if block is None:
        return
    block_ops = set(block.ops)
    frame_bytes = promoted = 0
    for op in list(block.ops):
        if promoted == max_buffers:
            break
        if not isinstance(op, memref.AllocOp):
            continue
        size = static_bytes(op)
        if size is None or size > max_alloc_bytes or frame_bytes + size > max_frame_bytes:
            continue
        dealloc = single_release(op, block_ops)
        if dealloc is None:
            continue
        Rewriter.replace_op(op, _alloca_like(op))
        Rewriter.erase_op(dealloc)
        frame_bytes += size
        promoted += 1


@dataclass(frozen=True)
class PromoteBuffersToStackPass(ModulePass):
    """Small top-level temporaries (`memref.alloc` + `memref.dealloc` in a
    function's entry block) become `memref.alloca`s, within per-function caps.

    Options:
        max_alloc_bytes: the largest buffer promoted.
        max_frame_bytes: the most promoted bytes in one function.
        max_buffers: the most promoted buffers in one function.
    """

    name = "promote-buffers-to-stack"

    max_alloc_bytes: int = MAX_ALLOC_BYTES
    max_frame_bytes: int = MAX_FRAME_BYTES
    max_buffers: int = MAX_BUFFERS

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in op.ops:
            if isinstance(function, func.FuncOp) and not function.is_declaration:
                _promote_in_function(
                    function, self.max_alloc_bytes, self.max_frame_bytes, self.max_buffers
                )
