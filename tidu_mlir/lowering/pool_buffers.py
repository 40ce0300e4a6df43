"""`pool-buffers`: the heap temporaries of a function's entry block in one
allocation.

The temporaries `promote-buffers-to-stack` leaves on the heap (over its caps)
that are allocated and freed at the top level of a function (`memref.alloc`
... `memref.dealloc` in its entry block, not returned), of static shape and at
most `max_alloc_bytes`, are carved out of one byte buffer allocated where the
first of them was, freed before the function returns: each becomes a
`memref.view` at its offset (aligned like the allocation it replaces), and its
`memref.dealloc` goes. Pooling stops at `max_pool_bytes`; the later ones stay
as they are.

Why: the entry function of an unrolled program keeps the values passed
between the parts `split-functions` made in thousands of small heap buffers
(a 1,000-step chain's gradient: 1,813 `malloc`/`free` pairs, each `malloc` an
inlined failure check with its own block). LLVM then sees thousands of
pointers live across the part calls; one base pointer plus constant offsets
it can recompute instead (O3 and codegen of that gradient: 8.5 -> 5.5 s).

The cost: a pooled buffer lives until the function returns, so the caps bound
the memory held longer than before. Run after `promote-buffers-to-stack`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, ModuleOp, i8
from xdsl.ir import Block
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tidu_mlir.lowering.promote_buffers import single_release, static_bytes

MAX_ALLOC_BYTES = 1 << 16
"""The largest temporary pooled."""

MAX_POOL_BYTES = 1 << 22
"""The most bytes pooled in one function (they stay allocated until it returns)."""

POOL_ALIGNMENT = 64
"""The pool's alignment, and the least one of each buffer in it (a cache line)."""


Pooled = list[tuple[memref.AllocOp, memref.DeallocOp, int]]


def _poolable(block: Block, max_alloc_bytes: int, max_pool_bytes: int) -> tuple[Pooled, int]:
    """The allocs of `block` to pool, with their deallocs and offsets in the
    pool (the first ones in program order, within the caps), and the pool's
    size."""
    block_ops = set(block.ops)
    chosen: Pooled = []
    end = 0
    for op in block.ops:
        if not isinstance(op, memref.AllocOp):
            continue
        size = static_bytes(op)
        if size is None or size > max_alloc_bytes:
            continue
        dealloc = single_release(op, block_ops)
        if dealloc is None:
            continue
        alignment = max(POOL_ALIGNMENT, op.alignment.value.data if op.alignment else 0)
        offset = -(-end // alignment) * alignment
        if offset + size > max_pool_bytes:
            break
        chosen.append((op, dealloc, offset))
        end = offset + size
    return chosen, end


def _pool_in_function(function: func.FuncOp, max_alloc_bytes: int, max_pool_bytes: int) -> None:
    """Pool the entry block's temporaries of `function` (at least two of them)."""
    block = function.body.blocks.first
    if block is None or not isinstance(block.last_op, func.ReturnOp):
        return
    chosen, size = _poolable(block, max_alloc_bytes, max_pool_bytes)
    if len(chosen) < 2:
        return
    first, _, _ = chosen[0]
    pool_type = MemRefType(i8, [size])
    pool = memref.AllocOp([], [], pool_type, IntegerAttr(POOL_ALIGNMENT, 64))
    Rewriter.insert_op(pool, InsertPoint.before(first))
    for alloc, dealloc, offset in chosen:
        shift = arith.ConstantOp(IntegerAttr(offset, IndexType()))
        view = memref.ViewOp(pool.memref, shift.result, [], alloc.memref.type)
        view.result.name_hint = alloc.memref.name_hint
        Rewriter.insert_op(shift, InsertPoint.before(alloc))
        Rewriter.replace_op(alloc, view)
        Rewriter.erase_op(dealloc)
    Rewriter.insert_op(memref.DeallocOp.get(pool.memref), InsertPoint.before(block.last_op))


@dataclass(frozen=True)
class PoolBuffersPass(ModulePass):
    """The small heap temporaries of each function's entry block carved out of
    one allocation.

    Options:
        max_alloc_bytes: the largest buffer pooled.
        max_pool_bytes: the most bytes pooled in one function.
    """

    name = "pool-buffers"

    max_alloc_bytes: int = MAX_ALLOC_BYTES
    max_pool_bytes: int = MAX_POOL_BYTES

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in op.ops:
            if isinstance(function, func.FuncOp) and not function.is_declaration:
                _pool_in_function(function, self.max_alloc_bytes, self.max_pool_bytes)
