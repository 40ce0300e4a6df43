"""Real products as calls to the OpenBLAS that numpy bundles.

numpy's wheels ship `scipy_openblas64_` (ILP64, symbols `scipy_cblas_dgemm64_`,
`scipy_cblas_dgemv64_` and their f32 twins) in
`numpy.libs/`; this module loads it when it finds it, else everything stays a
loop nest.

A `dot_general` on f32/f64 maps to BLAS when, in the buffers actually read
and written (row-major), each operand and the result is a strided matrix:
its two groups of axes (free and contracting; lhs-free and rhs-free for the
result) each flatten to one axis, one of the two of unit stride (which one
is the BLAS transpose flag) and the other's stride its leading dimension;
the batch axes (paired in order) may sit anywhere, between the groups too,
and are looped over with each buffer's own strides. The buffers read may be
those of `transpose` ops feeding the product (their permutation is folded
into the axes, `Side.through`), and the result may be written transposed
(`Cᵀ = Bᵀ·Aᵀ`: the operands swap), batch axes moved included. Unit axes are
ignored. An operand of no such layout is copied to one (a transposed
temporary) when the product is large enough for the copy (`COPY_RATIO`).
`gemm`, or `gemv` when one side has no free elements (`m == 1` or
`n == 1`). Sizes below the measured crossovers (`*_MIN_FLOPS`), vector·vector and complex
products stay loop nests.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

import llvmlite.binding as llvm
import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import arith, func
from xdsl.dialects import llvm as llvm_dialect
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    UnrealizedConversionCastOp,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue

from tidu_mlir.dialects import prim
from tidu_mlir.lowering.common import call_external
from tidu_mlir.lowering.loops import Buffer, LoopBuilder

BLAS_MIN_FLOPS = 32**3
"""Matrix products with fewer multiply-adds (M·N·K) stay loop nests."""
GEMV_MIN_FLOPS = 96**2
"""Matrix-vector products with fewer multiply-adds (M·K) stay loop nests."""

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_ROUTINES = ("gemm", "gemv")
_PREFIX = {"f64": "d", "f32": "s"}


@functools.cache
def openblas() -> ctypes.CDLL | None:
    """numpy's bundled OpenBLAS (ILP64), also loaded for the JIT; None when absent."""
    libs = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    for path in sorted(glob.glob(os.path.join(libs, "libscipy_openblas64_*.so"))):
        try:
            library = ctypes.CDLL(path)
            llvm.load_library_permanently(path)
        except (OSError, RuntimeError):
            continue
        return library
    return None


OPENBLAS_PREFIX = "scipy_"
"""The prefix of every OpenBLAS symbol (CBLAS and LAPACKE) numpy's bundle exports."""


def calls_openblas(module: ModuleOp) -> bool:
    """Whether `module` calls into OpenBLAS (declares one of its functions)."""
    return any(
        isinstance(op, func.FuncOp) and op.sym_name.data.startswith(OPENBLAS_PREFIX)
        for op in module.ops
    )


@functools.cache
def blas_symbols() -> dict[tuple[str, str], str]:
    """(element type, routine) -> loaded symbol; empty when no OpenBLAS is found."""
    library = openblas()
    if library is None:
        return {}
    names = {
        (element, routine): f"{OPENBLAS_PREFIX}cblas_{prefix}{routine}64_"
        for element, prefix in _PREFIX.items()
        for routine in _ROUTINES
    }
    return {key: name for key, name in names.items() if hasattr(library, name)}


# ----- planning ------------------------------------------------------------------


@dataclass(frozen=True)
class Side:
    """One operand of a product, as axes of the (row-major) buffer read: batch
    axes, free axes (in result order) and contracting axes (in pairing order)."""

    shape: tuple[int, ...]
    batch: tuple[int, ...]
    free: tuple[int, ...]
    contract: tuple[int, ...]

    def size(self, axes: Sequence[int]) -> int:
        return math.prod(self.shape[a] for a in axes)

    def through(self, permutation: Sequence[int]) -> Side:
        """This side read from the operand of `transpose(x, permutation)` instead."""
        shape = [0] * len(permutation)
        for axis, source in enumerate(permutation):
            shape[source] = self.shape[axis]

        def remap(axes: Sequence[int]) -> tuple[int, ...]:
            return tuple(permutation[a] for a in axes)

        return Side(tuple(shape), remap(self.batch), remap(self.free), remap(self.contract))

    def transposed(self, permutation: Sequence[int]) -> Side:
        """This side in the buffer `transpose(x, permutation)` (x: this side's)."""
        position = {source: axis for axis, source in enumerate(permutation)}

        def moved(axes: Sequence[int]) -> tuple[int, ...]:
            return tuple(position[a] for a in axes)

        shape = tuple(self.shape[source] for source in permutation)
        return Side(shape, moved(self.batch), moved(self.free), moved(self.contract))

    def strides(self, axes: Sequence[int]) -> tuple[int, ...]:
        """The element strides of `axes` in the buffer."""
        after = [math.prod(self.shape[a + 1 :]) for a in range(len(self.shape))]
        return tuple(after[a] for a in axes)

    def group_stride(self, axes: Sequence[int]) -> int | None:
        """The stride of the group `axes` read as one flattened axis (each axis
        adjacent to the next in the buffer, unit axes aside); None if it is not
        one; 1 for a group of one element."""
        kept = [a for a in axes if self.shape[a] != 1]
        if not kept:
            return 1
        strides = self.strides(kept)
        for outer, inner, axis in zip(strides, strides[1:], kept[1:], strict=False):
            if outer != inner * self.shape[axis]:
                return None
        return strides[-1]

    def matrix(self, rows: Sequence[int], cols: Sequence[int]) -> tuple[bool, int] | None:
        """How row-major BLAS reads the (rows x cols) matrix of these axes:
        (False, ld) when element (r, c) is at r·ld + c, (True, ld) when at
        c·ld + r (its transpose is stored); None when neither (batch axes may
        sit anywhere, also between the two groups: then ld exceeds a row)."""
        row_stride, col_stride = self.group_stride(rows), self.group_stride(cols)
        if row_stride is None or col_stride is None:
            return None
        row_count, col_count = self.size(rows), self.size(cols)
        if col_stride == 1 and (row_count == 1 or row_stride >= col_count):
            return False, max(row_stride if row_count > 1 else col_count, 1)
        if row_stride == 1 and (col_count == 1 or col_stride >= row_count):
            return True, max(col_stride if col_count > 1 else row_count, 1)
        return None


def sides(op: prim.DotGeneralOp) -> tuple[Side, Side]:
    """The two operands of `op` as `Side`s of its own operand buffers."""
    lb, rb, lc, rc = op.dims()

    def side(shape: tuple[int, ...], batch: tuple[int, ...], contract: tuple[int, ...]) -> Side:
        free = tuple(a for a in range(len(shape)) if a not in (*batch, *contract))
        return Side(shape, batch, free, contract)

    return side(prim.shape_of(op.lhs), lb, lc), side(prim.shape_of(op.rhs), rb, rc)


def result_side(lhs: Side, rhs: Side, permutation: Sequence[int] | None = None) -> Side:
    """The buffer a product writes, as a `Side` whose free axes are the lhs-free
    ones and contracting axes the rhs-free ones: the result (batch, lhs free,
    rhs free), or `transpose(result, permutation)`."""
    nb, nl, nr = len(lhs.batch), len(lhs.free), len(rhs.free)
    shape = (*(lhs.shape[a] for a in (*lhs.batch, *lhs.free)), *(rhs.shape[a] for a in rhs.free))
    axes = range(nb + nl + nr)
    side = Side(shape, tuple(axes[:nb]), tuple(axes[nb : nb + nl]), tuple(axes[nb + nl :]))
    return side if permutation is None else side.transposed(permutation)


@dataclass(frozen=True)
class BlasCall:
    """`C[b] = op(A[b]) @ op(B[b])` for every batch index b, row-major, C of
    shape M×N: A, B and C with leading dimensions `ld` (a, b, c) and, per batch
    axis of `batch` (sizes), the element strides of the three buffers."""

    routine: str
    batch: tuple[int, ...]
    batch_strides: tuple[tuple[int, int, int], ...]
    m: int
    n: int
    k: int
    trans_a: bool
    trans_b: bool
    ld: tuple[int, int, int]
    swapped: bool
    """A is the product's rhs (the buffer written holds Cᵀ = Bᵀ·Aᵀ)."""
    copies: tuple[tuple[int, ...] | None, tuple[int, ...] | None] = (None, None)
    """For A and B: read from a copy of the buffer transposed by this
    permutation (the operand is no strided matrix), or in place (None)."""


def plan_call(lhs: Side, rhs: Side, out: Side, element: Attribute) -> BlasCall | None:
    """The BLAS call computing `dot(lhs, rhs)` into the buffer `out` (see
    `result_side`), swapping the operands (Cᵀ = Bᵀ·Aᵀ) when `out` holds the
    result transposed; None when a buffer is no strided matrix or below the
    crossovers."""
    m, n, k = lhs.size(lhs.free), rhs.size(rhs.free), lhs.size(lhs.contract)
    if m == n == 1:  # vector·vector: the vectorized loop reduction is as good
        return None
    routine = "gemv" if 1 in (m, n) else "gemm"
    minimum = GEMV_MIN_FLOPS if routine == "gemv" else BLAS_MIN_FLOPS
    if (str(element), routine) not in blas_symbols() or m * n * k < minimum:
        return None
    written = out.matrix(out.free, out.contract)
    if written is None:
        return None
    if written[0]:  # out holds Cᵀ: compute it as Bᵀ·Aᵀ
        lhs, rhs, m, n = rhs, lhs, n, m
    flops = lhs.size(lhs.batch) * m * n * k
    read_a, read_b = (
        _read(lhs, lhs.free, lhs.contract, flops),
        _read(rhs, rhs.contract, rhs.free, flops),
    )
    if read_a is None or read_b is None:
        return None
    (lhs, copy_a, a), (rhs, copy_b, b) = read_a, read_b
    kept = [i for i, axis in enumerate(lhs.batch) if lhs.shape[axis] != 1]
    strides = [lhs.strides(lhs.batch), rhs.strides(rhs.batch), out.strides(out.batch)]
    return BlasCall(
        routine,
        batch=tuple(lhs.shape[lhs.batch[i]] for i in kept),
        batch_strides=tuple((strides[0][i], strides[1][i], strides[2][i]) for i in kept),
        m=m,
        n=n,
        k=k,
        trans_a=a[0],
        trans_b=b[0],
        ld=(a[1], b[1], written[1]),
        swapped=written[0],
        copies=(copy_a, copy_b),
    )


COPY_RATIO = 8
"""An operand that is no strided matrix is copied to one (a transpose) when
the product does at least this many multiply-adds per element copied."""


def _read(side: Side, rows: tuple[int, ...], cols: tuple[int, ...], flops: int
          ) -> tuple[Side, tuple[int, ...] | None, tuple[bool, int]] | None:  # fmt: skip
    """How BLAS reads the (rows x cols) matrices of `side`: in place, or from a
    copy laid out (batch, rows, cols) when it is no strided matrix and the
    product is large enough (`COPY_RATIO`): (the side read, the copy's
    permutation of `side`'s buffer or None, `Side.matrix` of it)."""
    if (matrix := side.matrix(rows, cols)) is not None:
        return side, None, matrix
    if math.prod(side.shape) * COPY_RATIO > flops:
        return None
    permutation = (*side.batch, *rows, *cols)
    copied = side.transposed(permutation)
    nb, nr = len(side.batch), len(rows)
    groups = range(len(permutation))
    matrix = copied.matrix(groups[nb : nb + nr], groups[nb + nr :])
    assert matrix is not None, "a (batch, rows, cols) buffer is a strided matrix"
    return copied, permutation, matrix


@dataclass(frozen=True)
class Product:
    """A `dot_general` lowered to BLAS: reads the buffers of `lhs` and `rhs`, writes
    the buffer of `result` (the op's result, or a transpose of it); `transposes`
    are folded into the call and not run."""

    call: BlasCall
    lhs: SSAValue
    rhs: SSAValue
    result: SSAValue
    transposes: tuple[prim.TransposeOp, ...]


def plan_products(ops: Sequence[Operation]) -> dict[prim.DotGeneralOp, Product]:
    """The `dot_general`s of `ops` (in program order) that run as BLAS calls."""
    products: dict[prim.DotGeneralOp, Product] = {}
    folded: set[prim.TransposeOp] = set()
    for op in ops:
        if isinstance(op, prim.DotGeneralOp) and (product := _plan(op, folded)) is not None:
            products[op] = product
            folded.update(product.transposes)
    return products


def _plan(op: prim.DotGeneralOp, folded: set[prim.TransposeOp]) -> Product | None:
    """Write a transpose of the result (its only use) if BLAS can, else the
    result; both read through transposes used only by `op` and not yet folded."""
    element = prim.element_type_of(op.result.type)
    if prim.is_complex(element):
        return None
    lhs, rhs = (
        _Operand(value, side).look_through(folded)
        for value, side in zip((op.lhs, op.rhs), sides(op), strict=True)
    )
    uses = list(op.result.uses)
    user = uses[0].operation if len(uses) == 1 else None
    if isinstance(user, prim.TransposeOp):
        out = result_side(lhs[0].side, rhs[0].side, user.prop_values("permutation"))
        if (call := plan_call(lhs[0].side, rhs[0].side, out, element)) is not None:
            return _product(call, lhs, rhs, user.result, (user,))
    out = result_side(lhs[0].side, rhs[0].side)
    if (call := plan_call(lhs[0].side, rhs[0].side, out, element)) is not None:
        return _product(call, lhs, rhs, op.result, ())
    return None


@dataclass(frozen=True)
class _Operand:
    value: SSAValue
    side: Side

    def look_through(
        self, folded: set[prim.TransposeOp]
    ) -> tuple[_Operand, tuple[prim.TransposeOp, ...]]:
        """Read the operand of a transpose used only here (and not written by a product)."""
        producer = self.value.owner
        if (
            isinstance(producer, prim.TransposeOp)
            and producer not in folded
            and len(list(self.value.uses)) == 1
        ):
            side = self.side.through(producer.prop_values("permutation"))
            return _Operand(producer.operand, side), (producer,)
        return self, ()


Looked = tuple[_Operand, tuple[prim.TransposeOp, ...]]


def _product(call: BlasCall, lhs: Looked, rhs: Looked, result: SSAValue,
             transposes: tuple[prim.TransposeOp, ...]) -> Product:  # fmt: skip
    """The product of `call`, its operands in the order it reads them."""
    (a, a_folded), (b, b_folded) = (rhs, lhs) if call.swapped else (lhs, rhs)
    return Product(call, a.value, b.value, result, (*transposes, *a_folded, *b_folded))


# ----- emission ------------------------------------------------------------------


def emit_call(
    module: ModuleOp,
    lb: LoopBuilder,
    b: Builder,
    call: BlasCall,
    element: Attribute,
    operands: Sequence[Buffer],
    out: Buffer,
) -> None:
    """Insert the BLAS call(s) computing `call` into `out` (a loop nest over the
    batch axes, each matrix at its offset)."""
    ptr = llvm_dialect.LLVMPointerType()
    pointers = [
        b.insert(UnrealizedConversionCastOp.get([x.ref], [ptr])).results[0]
        for x in (*operands, out)
    ]
    emit = functools.partial(_EMITTERS[call.routine], module, call, element)
    if not call.batch:
        emit(b, pointers)
        return

    def body(bb: Builder, ivs: list[SSAValue]) -> None:
        emit(bb, [batch_pointer(bb, p, ivs, [s[j] for s in call.batch_strides], element)
                  for j, p in enumerate(pointers)])  # fmt: skip

    lb.nest(b, list(call.batch), body)


def batch_pointer(b: Builder, pointer: SSAValue, ivs: Sequence[SSAValue],
                  strides: Sequence[int], element: Attribute) -> SSAValue:  # fmt: skip
    """`pointer` advanced by `sum(iv * stride)` elements: one matrix of a batch."""
    for iv, stride in zip(ivs, strides, strict=True):
        pointer = offset_pointer(b, pointer, iv, stride, element)
    return pointer


def offset_pointer(
    b: Builder, pointer: SSAValue, iv: SSAValue, stride: int, element: Attribute
) -> SSAValue:
    """`pointer + iv * stride` elements of type `element` (`iv` an index): the
    matrix `iv` of a batch."""
    offset = b.insert(arith.IndexCastOp(iv, i64)).result
    scaled = b.insert(arith.MuliOp(offset, int_const(b, stride, i64))).result
    return b.insert(llvm_dialect.GEPOp.from_mixed_indices(pointer, [scaled], element)).result


def int_const(b: Builder, value: int, typ: IntegerType) -> SSAValue:
    """An integer constant of type `typ` (an argument of an external call)."""
    return b.insert(arith.ConstantOp(IntegerAttr(value, typ))).result


def int_consts(b: Builder, typ: IntegerType, *values: int) -> list[SSAValue]:
    """Integer constants of type `typ`, one per value."""
    return [int_const(b, v, typ) for v in values]


def float_const(b: Builder, value: float, element: Attribute) -> SSAValue:
    """A float constant of the float type `element`."""
    return b.insert(arith.ConstantOp(FloatAttr(value, cast(AnyFloat, element)))).result


def _flag(trans: bool) -> int:
    return _TRANS if trans else _NO_TRANS


def _gemm(
    module: ModuleOp, call: BlasCall, element: Attribute, b: Builder, pointers: Sequence[SSAValue]
) -> None:
    a, bm, c = pointers
    lda, ldb, ldc = call.ld
    args = [
        *int_consts(b, i32, _ROW_MAJOR, _flag(call.trans_a), _flag(call.trans_b)),
        *int_consts(b, i64, call.m, call.n, call.k),
        float_const(b, 1.0, element), a, int_const(b, lda, i64), bm, int_const(b, ldb, i64),
        float_const(b, 0.0, element), c, int_const(b, ldc, i64),
    ]  # fmt: skip
    call_external(module, b, blas_symbols()[str(element), "gemm"], args)


def _gemv(
    module: ModuleOp, call: BlasCall, element: Attribute, b: Builder, pointers: Sequence[SSAValue]
) -> None:
    """`y = op(A) x`: A is the lhs when the rhs is a vector (n == 1; its elements
    `ld` apart, as those of y), else the rhs (then y = op(B)ᵀ x, x's elements 1
    or, stored transposed, `ld` apart)."""
    a, bm, c = pointers
    lda, ldb, ldc = call.ld
    if call.n == 1:
        matrix, ld, vector, step, y_step = a, lda, bm, ldb, ldc
        rows, cols = (call.k, call.m) if call.trans_a else (call.m, call.k)
        trans = call.trans_a
    else:
        matrix, ld, vector, step, y_step = bm, ldb, a, lda if call.trans_a else 1, 1
        rows, cols = (call.n, call.k) if call.trans_b else (call.k, call.n)
        trans = not call.trans_b
    args = [
        *int_consts(b, i32, _ROW_MAJOR, _flag(trans)), *int_consts(b, i64, rows, cols),
        float_const(b, 1.0, element), matrix, int_const(b, ld, i64), vector,
        int_const(b, step, i64), float_const(b, 0.0, element), c, int_const(b, y_step, i64),
    ]  # fmt: skip
    call_external(module, b, blas_symbols()[str(element), "gemv"], args)


_Emitter = Callable[[ModuleOp, BlasCall, Attribute, Builder, Sequence[SSAValue]], None]
_EMITTERS: dict[str, _Emitter] = {"gemm": _gemm, "gemv": _gemv}
