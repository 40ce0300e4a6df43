"""Fast constructors of the `llvm` ops the conversions create most.

xDSL's constructors of `llvm.load`, `llvm.store`, `llvm.getelementptr`,
`llvm.mlir.constant` and the arithmetic ops rebuild every property
attribute and go through IRDL's generic argument checks: 20-45 µs per op, and
converting one memory access creates several. These build the same ops (the
same properties, so the same text and LLVM IR; `tests/lowering/
test_llvm_ops.py` compares them with xDSL's) with `create` and property
attributes made once: ~6 µs per op.
"""

from __future__ import annotations

import functools

from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, IntegerType, UnitAttr, i32, i64
from xdsl.ir import Attribute, Operation, SSAValue

POINTER = llvm.LLVMPointerType()

_NOT_ATOMIC = IntegerAttr(0, i64)
"""The `ordering` of a plain load or store."""

_ONE_SSA_INDEX = DenseArrayBase.from_list(i32, [llvm.GEP_USE_SSA_VAL])
_NO_WRAP_FLAGS = IntegerAttr(0, 32)
_INBOUNDS = UnitAttr()


def load(pointer: SSAValue, typ: Attribute) -> llvm.LoadOp:
    """`llvm.load` of a `typ` from `pointer` (as `llvm.LoadOp(pointer, typ)`)."""
    return llvm.LoadOp.create(
        operands=[pointer], result_types=[typ], properties={"ordering": _NOT_ATOMIC}
    )


def store(value: SSAValue, pointer: SSAValue) -> llvm.StoreOp:
    """`llvm.store` of `value` to `pointer` (as `llvm.StoreOp(value, pointer)`)."""
    return llvm.StoreOp.create(operands=[value, pointer], properties={"ordering": _NOT_ATOMIC})


def element_pointer(base: SSAValue, index: SSAValue, element_type: Attribute) -> llvm.GEPOp:
    """`getelementptr inbounds` of element `index` of an array of `element_type`
    at `base`."""
    return llvm.GEPOp.create(
        operands=[base, index],
        result_types=[POINTER],
        properties={
            "rawConstantIndices": _ONE_SSA_INDEX,
            "elem_type": element_type,
            "noWrapFlags": _NO_WRAP_FLAGS,
            "inbounds": _INBOUNDS,
        },
    )


@functools.lru_cache(maxsize=4096)
def _integer(value: int, typ: IntegerType) -> IntegerAttr:
    return IntegerAttr(value, typ)


def integer_constant(value: int, typ: IntegerType = i64) -> llvm.ConstantOp:
    """`llvm.mlir.constant` of the integer `value` of type `typ`."""
    return constant(_integer(value, typ), typ)


def constant(value: Attribute, typ: Attribute) -> llvm.ConstantOp:
    """`llvm.mlir.constant` of `value` (as `llvm.ConstantOp(value, typ)`)."""
    return llvm.ConstantOp.create(result_types=[typ], properties={"value": value})


def float_binary(
    op_type: type[Operation], lhs: SSAValue, rhs: SSAValue, fastmath: llvm.FastMathAttr
) -> Operation:
    """A `llvm.fadd`/`fsub`/`fmul`/`fdiv` with `fastmath` flags (as
    `op_type(lhs, rhs, fastmath)`)."""
    return op_type.create(
        operands=[lhs, rhs], result_types=[lhs.type], properties={"fastmathFlags": fastmath}
    )


@functools.cache
def _overflow_flags(overflow: llvm.OverflowAttr) -> IntegerAttr:
    return IntegerAttr(overflow.to_int(), 32)


def integer_binary(
    op_type: type[Operation], lhs: SSAValue, rhs: SSAValue, overflow: llvm.OverflowAttr
) -> Operation:
    """An integer `llvm.add`/`sub`/`mul`/`shl` with `overflow` flags (as
    `op_type(lhs, rhs, overflow=overflow)`)."""
    return op_type.create(
        operands=[lhs, rhs],
        result_types=[lhs.type],
        properties={"overflowFlags": _overflow_flags(overflow)},
    )
