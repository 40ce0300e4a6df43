"""`pool-buffers`: the heap temporaries left at the top level of a function
come out of one allocation, within the caps (counted on lowered modules and
in the LLVM IR; results checked against the evaluator)."""

from __future__ import annotations

import re

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import MemRefType, ModuleOp

from tidu_mlir.interp import evaluate_func
from tidu_mlir.lowering.jit import CompiledModule
from tidu_mlir.lowering.pool_buffers import PoolBuffersPass
from tidu_mlir.lowering.promote_buffers import PromoteBuffersToStackPass

from .oracle import assert_matches, random_array
from .test_compile_scaling import chain, loops


def _functions(module: ModuleOp) -> list[func.FuncOp]:
    return [f for f in module.ops if isinstance(f, func.FuncOp) and not f.is_declaration]


def _heap_allocations(function: func.FuncOp) -> list[memref.AllocOp]:
    return [op for op in function.body.block.ops if isinstance(op, memref.AllocOp)]


def _pooled(steps: int, max_pool_bytes: int = 1 << 22) -> tuple[ModuleOp, int]:
    """The chain lowered to loops and split, at most 2 temporaries per frame,
    then pooled; and the number of heap temporaries before pooling."""
    module = loops(steps)
    ctx = Context(allow_unregistered=True)
    PromoteBuffersToStackPass(max_buffers=2).apply(ctx, module)
    before = sum(len(_heap_allocations(f)) for f in _functions(module))
    PoolBuffersPass(max_pool_bytes=max_pool_bytes).apply(ctx, module)
    return module, before


def test_the_temporaries_left_on_the_heap_share_one_allocation() -> None:
    """Each function allocates one pool, every other heap temporary a view of it."""
    module, before = _pooled(160)
    views = 0
    for function in _functions(module):
        pools = _heap_allocations(function)
        assert len(pools) == 1
        views += sum(isinstance(use.operation, memref.ViewOp) for use in pools[0].memref.uses)
    assert before > 100 and views == before


def test_the_pool_cap_leaves_the_later_temporaries_alone() -> None:
    """With pools of at most 1,000 bytes, each pool is within the cap and the
    temporaries beyond it stay allocations of their own."""
    module, _ = _pooled(40, max_pool_bytes=1000)
    allocations = [a for f in _functions(module) for a in _heap_allocations(f)]
    pools = [
        a for a in allocations if any(isinstance(u.operation, memref.ViewOp) for u in a.memref.uses)
    ]
    for pool in pools:
        typ = pool.memref.type
        assert isinstance(typ, MemRefType) and typ.get_shape()[0] <= 1000
    assert pools and len(allocations) > len(pools)


def test_a_pooled_program_runs_as_the_evaluator_says() -> None:
    """The pooled 40-step chain, compiled: one `malloc` per function in its
    optimized LLVM IR (the pools), results equal to the evaluator's."""
    module, before = _pooled(40)
    compiled = CompiledModule(module)
    assert compiled.llvm_ir is not None
    mallocs = len(re.findall(r"call .*@malloc\(", compiled.llvm_ir))
    assert before > 2 * len(_functions(module)) and mallocs <= len(_functions(module))
    function = chain(40)
    rng = np.random.default_rng(5)
    args = [random_array(t, rng, -0.5, 0.5) for t in function.function_type.inputs.data]  # pyright: ignore[reportArgumentType]
    got = compiled["f"](*args)
    assert_matches(list(got), evaluate_func(function, args))
