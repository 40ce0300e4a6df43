"""The lowering's fast constructors (`llvm_ops`, the loop builders' loads,
stores and allocs) build exactly the ops xDSL's constructors build (operands,
result types, properties, attributes, verified)."""

from __future__ import annotations

import pytest
from xdsl.dialects import llvm, memref
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, MemRefType, f64, i32, i64
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Block, Operation

from tidu_mlir.lowering import llvm_ops, loops, prim_to_loops

ARGS = Block(arg_types=[llvm.LLVMPointerType(), i64, i64, f64, f64]).args
POINTER, INDEX, OTHER, X, Y = ARGS
NSW = llvm.OverflowAttr([llvm.OverflowFlag.NO_SIGNED_WRAP])
FLAGS = llvm.FastMathAttr([FastMathFlag.ALLOW_CONTRACT, FastMathFlag.REASSOC])
REF_TYPE = MemRefType(f64, [3, 4])
REF, ROW, COLUMN = Block(arg_types=[REF_TYPE, IndexType(), IndexType()]).args

PAIRS: list[tuple[str, Operation, Operation]] = [
    ("load", llvm_ops.load(POINTER, f64), llvm.LoadOp(POINTER, f64)),
    ("store", llvm_ops.store(X, POINTER), llvm.StoreOp(X, POINTER)),
    (
        "gep",
        llvm_ops.element_pointer(POINTER, INDEX, f64),
        llvm.GEPOp(POINTER, [llvm.GEP_USE_SSA_VAL], f64, ssa_indices=[INDEX], inbounds=True),
    ),
    ("i64", llvm_ops.integer_constant(-7), llvm.ConstantOp(IntegerAttr(-7, i64), i64)),
    ("i32", llvm_ops.integer_constant(3, i32), llvm.ConstantOp(IntegerAttr(3, i32), i32)),
    (
        "float",
        llvm_ops.constant(FloatAttr(0.5, f64), f64),
        llvm.ConstantOp(FloatAttr(0.5, f64), f64),
    ),
    (
        "mul",
        llvm_ops.integer_binary(llvm.MulOp, INDEX, OTHER, NSW),
        llvm.MulOp(INDEX, OTHER, overflow=NSW),
    ),
    (
        "add",
        llvm_ops.integer_binary(llvm.AddOp, INDEX, OTHER, llvm.OverflowAttr([])),
        llvm.AddOp(INDEX, OTHER),
    ),
    ("fmul", llvm_ops.float_binary(llvm.FMulOp, X, Y, FLAGS), llvm.FMulOp(X, Y, FLAGS)),
    ("memref.load", loops.memref_load(REF, [ROW, COLUMN]), memref.LoadOp.get(REF, [ROW, COLUMN])),
    (
        "memref.store",
        loops.memref_store(X, REF, [ROW, COLUMN]),
        memref.StoreOp.get(X, REF, [ROW, COLUMN]),
    ),
    (
        "memref.alloc",
        memref.AllocOp.create(result_types=[REF_TYPE], properties=prim_to_loops.ALLOC_PROPERTIES),
        memref.AllocOp.get(f64, prim_to_loops.ALIGNMENT, [3, 4]),
    ),
]


@pytest.mark.parametrize(
    ("fast", "xdsl"), [(f, x) for _, f, x in PAIRS], ids=[n for n, _, _ in PAIRS]
)
def test_fast_constructor_builds_xdsl_s_op(fast: Operation, xdsl: Operation) -> None:
    fast.verify()
    assert type(fast) is type(xdsl)
    assert list(fast.operands) == list(xdsl.operands)
    assert [r.type for r in fast.results] == [r.type for r in xdsl.results]
    assert fast.properties == xdsl.properties
    assert fast.attributes == xdsl.attributes
    assert str(fast) == str(xdsl)


def test_buffer_types_are_built_once() -> None:
    """Each distinct buffer type is one object (xDSL's constructor is slow)."""
    first = loops.buffer_memref_type(f64, [3, 4])
    assert loops.buffer_memref_type(f64, (3, 4))[0] is first[0]
    assert first == (REF_TYPE, False)
