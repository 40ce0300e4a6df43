"""`promote-buffers-to-stack`: the small temporaries of a function live in its
frame, within the per-function caps (counted on lowered modules and in the
LLVM IR; results checked against the evaluator)."""

from __future__ import annotations

import math
import re

from xdsl.context import Context
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import MemRefType, ModuleOp

from tidu_mlir.lowering import promote_buffers
from tidu_mlir.lowering.memref_to_llvm import byte_size
from tidu_mlir.lowering.promote_buffers import PromoteBuffersToStackPass
from tidu_mlir.lowering.runtime import compile_function

from .oracle import check
from .test_compile_scaling import chain, loops


def _bytes(op: memref.AllocOp | memref.AllocaOp) -> int:
    typ = op.memref.type
    assert isinstance(typ, MemRefType)
    return byte_size(typ.element_type) * math.prod(typ.get_shape())


def _top_level(function: func.FuncOp, kind: type) -> list:
    return [op for op in function.body.block.ops if isinstance(op, kind)]


def _functions(module: ModuleOp) -> list[func.FuncOp]:
    return [f for f in module.ops if isinstance(f, func.FuncOp) and not f.is_declaration]


def test_small_temporaries_of_each_part_are_promoted_within_the_caps() -> None:
    module = loops(160)  # split into parts
    before = sum(len(_top_level(f, memref.AllocOp)) for f in _functions(module))
    PromoteBuffersToStackPass().apply(Context(allow_unregistered=True), module)
    promoted = 0
    for function in _functions(module):
        frame = _top_level(function, memref.AllocaOp)
        promoted += len(frame)
        assert len(frame) <= promote_buffers.MAX_BUFFERS
        assert sum(map(_bytes, frame)) <= promote_buffers.MAX_FRAME_BYTES
        left = [a for a in _top_level(function, memref.AllocOp) if _bytes(a) <= 256]
        full = (
            len(frame) == promote_buffers.MAX_BUFFERS
            or sum(map(_bytes, frame)) + min(map(_bytes, left), default=0)
            > promote_buffers.MAX_FRAME_BYTES
        )
        assert not left or full, f"@{function.sym_name.data}: small heap temporaries left"
        # a promoted buffer is not freed any more
        freed = {op.memref for op in function.walk() if isinstance(op, memref.DeallocOp)}
        assert not freed & {op.memref for op in frame}
    assert promoted > before // 2


def test_caps_bound_the_promoted_buffers_of_a_function() -> None:
    ctx = Context(allow_unregistered=True)
    module = loops(40, split=False)
    PromoteBuffersToStackPass(max_buffers=10).apply(ctx, module)
    (function,) = _functions(module)
    assert len(_top_level(function, memref.AllocaOp)) == 10
    module = loops(40, split=False)
    PromoteBuffersToStackPass(max_frame_bytes=500).apply(ctx, module)
    (function,) = _functions(module)
    frame = _top_level(function, memref.AllocaOp)
    assert 0 < sum(map(_bytes, frame)) <= 500
    module = loops(40, split=False)
    PromoteBuffersToStackPass(max_alloc_bytes=8).apply(ctx, module)
    (function,) = _functions(module)
    assert all(_bytes(op) <= 8 for op in _top_level(function, memref.AllocaOp))


def test_chain_calls_malloc_no_more() -> None:
    """The temporaries of a 30-step chain (4x3 arrays) are all in the frame: the
    optimized LLVM IR calls `malloc` nowhere (each one used to be a call LLVM
    could not see through), and the results match the evaluator."""
    function = chain(30)
    compiled = compile_function(function)
    assert not re.search(r"call .*@malloc\(", compiled.llvm_ir)
    check(function, seed=5, low=-0.5, high=0.5)
