"""`convert-memref-to-llvm`: statically shaped memrefs to bare `!llvm.ptr`s.

A memref value becomes a pointer to element 0 of its buffer (the "base"
pointer); its static layout (strides, offset) stays in the type and is applied
at each access: `memref.load %m[%i, %j]` becomes
`llvm.getelementptr inbounds %p[offset + i*s0 + j*s1]` (index arithmetic `nsw`)
and `llvm.load`. Emitting `inbounds` GEPs on typed elements, instead of xDSL's
`convert-memref-to-ptr` + `convert-ptr-to-llvm` (ptrtoint/add/inttoptr), keeps
LLVM's alias analysis and SCEV working, so loops vectorize (docs/lowering.md has
the measurement). View ops (cast, subview, reinterpret_cast, collapse/expand
shape) keep the base pointer; their result type carries the new layout.
Dynamic strides or offsets, and buffers of dynamic size, are rejected: a bare
pointer cannot carry them.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import llvm, memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ComplexType,
    DenseIntOrFPElementsAttr,
    FixedBitwidthType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    i8,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.utils.exceptions import DiagnosticException

from tidu_mlir.lowering.allocation_guard import CHECKED_MALLOC
from tidu_mlir.lowering.common import (
    declare_functions,
    replace_with_legal,
    rewrite_by_type,
    to_legal,
)
from tidu_mlir.lowering.llvm_ops import (
    POINTER,
    element_pointer,
    integer_binary,
    integer_constant,
    load,
    store,
)

_NSW = llvm.OverflowAttr([llvm.OverflowFlag.NO_SIGNED_WRAP])


def static_layout(typ: Attribute) -> tuple[MemRefType, Sequence[int], int]:
    """`typ` as a memref with its static strides and offset, or a diagnostic."""
    if not isinstance(typ, MemRefType):
        raise DiagnosticException(f"expected a memref, got {typ}")
    strides = typ.get_strides()
    offset = typ.get_offset()
    if strides is None or None in strides or offset is None:
        raise DiagnosticException(f"only memrefs with static strides and offset are lowered: {typ}")
    return typ, [s for s in strides if s is not None], offset


def byte_size(typ: Attribute) -> int:
    """Bytes per element of a memref element type (complex numbers interleaved)."""
    if isinstance(typ, ComplexType):
        return 2 * byte_size(typ.element_type)
    if isinstance(typ, FixedBitwidthType):
        return typ.size
    raise DiagnosticException(f"unsupported memref element type {typ}")


def _constant(value: int, ops: list[Operation]) -> SSAValue:
    op = integer_constant(value)
    ops.append(op)
    return op.result


def _linear_index(
    indices: Sequence[SSAValue], strides: Sequence[int], offset: int, ops: list[Operation]
) -> SSAValue | None:
    """`offset + sum(index * stride)` as i64 ops appended to `ops` (None when 0)."""
    total: SSAValue | None = _constant(offset, ops) if offset else None
    for index, stride in zip(indices, strides, strict=True):
        term = index
        if stride != 1:
            mul = integer_binary(llvm.MulOp, index, _constant(stride, ops), _NSW)
            ops.append(mul)
            term = mul.results[0]
        if total is None:
            total = term
        else:
            add = integer_binary(llvm.AddOp, total, term, _NSW)
            ops.append(add)
            total = add.results[0]
    return total


def _element_pointer(
    ref: SSAValue, indices: Sequence[SSAValue], rewriter: PatternRewriter, ops: list[Operation]
) -> SSAValue:
    """Pointer to element `indices` of the memref `ref`, built from ops added to `ops`."""
    typ, strides, offset = static_layout(ref.type)
    base = to_legal(ref, rewriter)
    linear = _linear_index([to_legal(i, rewriter) for i in indices], strides, offset, ops)
    if linear is None:
        return base
    gep = element_pointer(base, linear, typ.element_type)
    ops.append(gep)
    return gep.result


class ConvertLoad(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.LoadOp, rewriter: PatternRewriter, /) -> None:
        ops: list[Operation] = []
        pointer = _element_pointer(op.memref, op.indices, rewriter, ops)
        rewriter.replace(op, [*ops, load(pointer, op.res.type)])


class ConvertStore(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.StoreOp, rewriter: PatternRewriter, /) -> None:
        ops: list[Operation] = []
        pointer = _element_pointer(op.memref, op.indices, rewriter, ops)
        rewriter.replace(op, [*ops, store(op.value, pointer)], [])


def buffer_elements(typ: MemRefType) -> int:
    """Elements spanned by a buffer of static layout `typ` (its allocation size)."""
    _, strides, offset = static_layout(typ)
    shape = typ.get_shape()
    if DYNAMIC_INDEX in shape:
        raise DiagnosticException(f"buffers of dynamic size are not lowered: {typ}")
    if 0 in shape:
        return 0
    return offset + 1 + sum((d - 1) * s for d, s in zip(shape, strides, strict=True))


def buffer_bytes(typ: MemRefType) -> int:
    """Bytes of a buffer of static layout `typ` (`buffer_elements` of its
    element's `byte_size`)."""
    return buffer_elements(typ) * byte_size(typ.element_type)


def alloca_alignment(op: memref.AllocaOp) -> int:
    """The alignment of the stack buffer `op` makes: its own, or 16 bytes."""
    return op.alignment.value.data if op.alignment is not None else 16


def is_contiguous(typ: MemRefType) -> bool:
    """Whether `typ`'s elements are in row-major order from offset 0."""
    return typ.get_strides() == typ.strides_for_shape(typ.get_shape()) and not typ.get_offset()


class ConvertAlloca(RewritePattern):
    """alloca -> `llvm.alloca`, then a bitcast to the opaque `!llvm.ptr`: xDSL's
    llvmlite translation types an alloca's pointer by its element (`double*`),
    and a function first called with such a pointer would be declared with it."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.AllocaOp, rewriter: PatternRewriter, /) -> None:
        typ = op.memref.type
        ops: list[Operation] = []
        size = _constant(buffer_elements(typ), ops)
        alloca = llvm.AllocaOp(size, typ.element_type, alloca_alignment(op))
        replace_with_legal(op, [*ops, alloca, llvm.BitcastOp(alloca.res, POINTER)], rewriter)


@dataclass
class ConvertHeapOps(RewritePattern):
    """alloc -> `tidu_malloc` (`malloc` that turns failure into `MemoryError`, see
    `allocation_guard`), dealloc -> `free`; callees are collected in `declarations`."""

    declarations: dict[str, llvm.LLVMFunctionType] = field(
        default_factory=dict[str, llvm.LLVMFunctionType]
    )

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, memref.AllocOp):
            typ = op.memref.type
            ops: list[Operation] = []
            size = _constant(buffer_bytes(typ), ops)
            self.declarations[CHECKED_MALLOC] = llvm.LLVMFunctionType([i64], POINTER)
            call = llvm.CallOp(CHECKED_MALLOC, size, return_type=POINTER)
            replace_with_legal(op, [*ops, call], rewriter)
        elif isinstance(op, memref.DeallocOp):
            self.declarations["free"] = llvm.LLVMFunctionType([POINTER])
            rewriter.replace(op, llvm.CallOp("free", to_legal(op.memref, rewriter)), [])


class ConvertCopy(RewritePattern):
    """copy between identically laid out buffers -> `llvm.memcpy`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.CopyOp, rewriter: PatternRewriter, /) -> None:
        source, target = op.source.type, op.destination.type
        if source != target:
            raise DiagnosticException(f"memref.copy between different types {source}, {target}")
        assert isinstance(source, MemRefType)
        ops: list[Operation] = []
        nbytes = _constant(buffer_bytes(source), ops)
        volatile = llvm.ConstantOp(IntegerAttr(0, IntegerType(1)), IntegerType(1))
        args = [to_legal(op.destination, rewriter), to_legal(op.source, rewriter), nbytes]
        call = llvm.CallIntrinsicOp("llvm.memcpy.p0.p0.i64", [*args, volatile.result], [])
        rewriter.replace(op, [*ops, volatile, call], [])


VIEWS = (
    memref.CastOp,
    memref.SubviewOp,
    memref.ReinterpretCastOp,
    memref.CollapseShapeOp,
    memref.ExpandShapeOp,
)


class ConvertView(RewritePattern):
    """View ops keep the base pointer; the result type holds the static layout."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, VIEWS):
            return
        static_layout(op.results[0].type)
        if len(op.operands) != 1:
            raise DiagnosticException(f"{op.name} with dynamic operands is not lowered")
        replace_with_legal(op, [], rewriter, [to_legal(op.operands[0], rewriter)])


class ConvertByteView(RewritePattern):
    """view of a byte buffer at a byte offset (a static result) -> the buffer's
    pointer advanced by the offset (`llvm.getelementptr inbounds` on i8)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.ViewOp, rewriter: PatternRewriter, /) -> None:
        static_layout(op.result.type)
        if op.sizes:
            raise DiagnosticException("memref.view with dynamic sizes is not lowered")
        base = to_legal(op.source, rewriter)
        offset = to_legal(op.byte_shift, rewriter)
        replace_with_legal(op, [element_pointer(base, offset, i8)], rewriter)


class ConvertGetGlobal(RewritePattern):
    """get_global -> `llvm.mlir.addressof`, then a bitcast to the opaque
    `!llvm.ptr`: xDSL's llvmlite translation gives the address the global's
    own type (`[2 x double]*`), and a function (`llvm.memcpy`) first called
    with it would be declared with that type, refusing a second global."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.GetGlobalOp, rewriter: PatternRewriter, /) -> None:
        address = llvm.AddressOfOp(op.name_, POINTER)
        replace_with_legal(op, [address, llvm.BitcastOp(address.result, POINTER)], rewriter)


class ConvertGlobal(RewritePattern):
    """memref.global with a dense initializer -> an `llvm.mlir.global` flat array."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.GlobalOp, rewriter: PatternRewriter, /) -> None:
        typ = op.type
        value = op.initial_value
        if not isinstance(value, DenseIntOrFPElementsAttr):
            raise DiagnosticException(f"memref.global @{op.sym_name.data} needs a dense value")
        if not is_contiguous(typ):
            raise DiagnosticException(f"memref.global @{op.sym_name.data} must be contiguous")
        # The backend flattens the dense value into the array initializer.
        new_op = llvm.GlobalOp(
            llvm.LLVMArrayType(typ.element_count(), typ.element_type),
            op.sym_name,
            "internal",
            constant=op.constant is not None,
            value=value,
            alignment=op.alignment.value.data if op.alignment is not None else None,
        )
        rewriter.replace(op, new_op)


@dataclass(frozen=True)
class ConvertMemrefToLLVMPass(ModulePass):
    """Lower statically shaped memref ops to `llvm` pointer arithmetic and memory ops."""

    name = "convert-memref-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        heap = ConvertHeapOps()
        patterns: dict[type[Operation], RewritePattern] = {
            memref.LoadOp: ConvertLoad(),
            memref.StoreOp: ConvertStore(),
            memref.AllocaOp: ConvertAlloca(),
            memref.AllocOp: heap,
            memref.DeallocOp: heap,
            memref.CopyOp: ConvertCopy(),
            **dict.fromkeys(VIEWS, ConvertView()),
            memref.ViewOp: ConvertByteView(),
            memref.GetGlobalOp: ConvertGetGlobal(),
            memref.GlobalOp: ConvertGlobal(),
        }
        rewrite_by_type(op, patterns)
        declare_functions(op, heap.declarations)
