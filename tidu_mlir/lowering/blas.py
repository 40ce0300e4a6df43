"""Real products as calls to the OpenBLAS that numpy bundles.

numpy's wheels ship `scipy_openblas64_` (ILP64, symbols `scipy_cblas_dgemm64_`,
`scipy_cblas_dgemv64_` and their f32 twins) in
`numpy.libs/`; this module loads it when it finds it, else everything stays a
loop nest.

A `dot_general` on f32/f64 maps to BLAS when, in the buffers actually read,
each operand is a row-major matrix after grouping axes: leading batch axes
(same order on both sides), then its free axes and contracting axes as two
adjacent groups in either order (the order is the BLAS transpose flag). The
buffers read may be those of `transpose` ops feeding the product (their
permutation is folded into the axes, `Side.through`), and the result may be
written transposed (`Cᵀ = Bᵀ·Aᵀ`: the operands swap). Unit axes are ignored.
One call per product: `gemm`; `gemv` when one side has no free elements
(`m == 1` or `n == 1`); batches loop over gemm/gemv calls with pointer offsets.
Sizes below the measured crossovers (`*_MIN_FLOPS`), vector·vector and complex
products stay loop nests.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import cast

import llvmlite.binding as llvm
import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import arith
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


@functools.cache
def blas_symbols() -> dict[tuple[str, str], str]:
    """(element type, routine) -> loaded symbol; empty when no OpenBLAS is found."""
    library = openblas()
    if library is None:
        return {}
    names = {
        (element, routine): f"scipy_cblas_{prefix}{routine}64_"
        for element, prefix in _PREFIX.items()
        for routine in _ROUTINES
    }
    return {key: name for key, name in names.items() if hasattr(library, name)}


# ----- planning ------------------------------------------------------------------


@dataclass(frozen=True)
class Side:
    """One operand of a product, as axes of the buffer read: batch axes, free axes
    (in result order) and contracting axes (in pairing order)."""

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

    def is_laid_out(self, *groups: Sequence[int]) -> bool:
        """Whether the buffer's axes are `groups` concatenated (unit axes ignored)."""
        order = [a for group in groups for a in group if self.shape[a] != 1]
        return order == [a for a in range(len(self.shape)) if self.shape[a] != 1]


def sides(op: prim.DotGeneralOp) -> tuple[Side, Side]:
    """The two operands of `op` as `Side`s of its own operand buffers."""
    lb, rb, lc, rc = op.dims()

    def side(shape: tuple[int, ...], batch: tuple[int, ...], contract: tuple[int, ...]) -> Side:
        free = tuple(a for a in range(len(shape)) if a not in (*batch, *contract))
        return Side(shape, batch, free, contract)

    return side(prim.shape_of(op.lhs), lb, lc), side(prim.shape_of(op.rhs), rb, rc)


@dataclass(frozen=True)
class BlasCall:
    """`C[b] = op(A[b]) @ op(B[b])` for `b < batch`, row-major, C of shape M×N."""

    routine: str
    batch: int
    m: int
    n: int
    k: int
    trans_a: bool
    trans_b: bool


def _trans(side: Side, first: Sequence[int], second: Sequence[int]) -> bool | None:
    """False for batch+first+second order, True for batch+second+first, else None."""
    if side.is_laid_out(side.batch, first, second):
        return False
    if side.is_laid_out(side.batch, second, first):
        return True
    return None


def plan_call(lhs: Side, rhs: Side, element: Attribute) -> BlasCall | None:
    """The BLAS call computing `dot(lhs, rhs)` (result: batch, lhs free, rhs free)."""
    batch = lhs.size(lhs.batch)
    m, n, k = lhs.size(lhs.free), rhs.size(rhs.free), lhs.size(lhs.contract)
    if m == n == 1:  # vector·vector: the vectorized loop reduction is as good
        return None
    routine = "gemv" if 1 in (m, n) else "gemm"
    minimum = GEMV_MIN_FLOPS if routine == "gemv" else BLAS_MIN_FLOPS
    if (str(element), routine) not in blas_symbols() or m * n * k < minimum:
        return None
    trans_a = _trans(lhs, lhs.free, lhs.contract)
    trans_b = _trans(rhs, rhs.contract, rhs.free)
    if trans_a is None or trans_b is None:
        return None
    return BlasCall(routine, batch, m, n, k, trans_a, trans_b)


def _result_groups(
    permutation: Sequence[int], nb: int, nl: int
) -> tuple[list[int], list[int], bool] | None:
    """For `transpose(dot_result, permutation)` (dot result: nb batch, nl lhs-free,
    then rhs-free axes): the lhs-free and rhs-free result positions in transposed
    order, and whether rhs-free comes first; None if the batch axes move or the
    free groups interleave."""
    if list(permutation[:nb]) != list(range(nb)):
        return None
    rest = list(permutation[nb:])
    is_lhs = [axis < nb + nl for axis in rest]
    lhs_first = is_lhs == sorted(is_lhs, reverse=True)
    if not lhs_first and is_lhs != sorted(is_lhs):
        return None
    lhs_axes = [a - nb for a in rest if a < nb + nl]
    rhs_axes = [a - nb - nl for a in rest if a >= nb + nl]
    return lhs_axes, rhs_axes, not lhs_first


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
    """Fold a transpose of the result (its only use) if BLAS can write it, else
    plain; both read through transposes used only by `op` and not yet folded."""
    element = prim.element_type_of(op.result.type)
    if prim.is_complex(element):
        return None
    lhs, rhs = sides(op)
    operands = (_Operand(op.lhs, lhs), _Operand(op.rhs, rhs))
    uses = list(op.result.uses)
    user = uses[0].operation if len(uses) == 1 else None
    if isinstance(user, prim.TransposeOp):
        groups = _result_groups(user.prop_values("permutation"), len(lhs.batch), len(lhs.free))
        if groups is not None:
            lhs_order, rhs_order, swapped = groups
            left = _Operand(op.lhs, replace(lhs, free=tuple(lhs.free[i] for i in lhs_order)))
            right = _Operand(op.rhs, replace(rhs, free=tuple(rhs.free[i] for i in rhs_order)))
            pair = (right, left) if swapped else (left, right)
            product = _product(pair, element, user.result, (user,), folded)
            if product is not None:
                return product
    return _product(operands, element, op.result, (), folded)


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


def _product(
    pair: tuple[_Operand, _Operand],
    element: Attribute,
    result: SSAValue,
    transposes: tuple[prim.TransposeOp, ...],
    folded: set[prim.TransposeOp],
) -> Product | None:
    (a, a_folded), (b, b_folded) = (operand.look_through(folded) for operand in pair)
    call = plan_call(a.side, b.side, element)
    if call is None:
        return None
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
    """Insert the BLAS call(s) computing `call` into `out` (a loop over batches)."""
    ptr = llvm_dialect.LLVMPointerType()
    pointers = [
        b.insert(UnrealizedConversionCastOp.get([x.ref], [ptr])).results[0]
        for x in (*operands, out)
    ]
    emit = functools.partial(_EMITTERS[call.routine], module, call, element)
    if call.batch == 1:
        emit(b, pointers)
        return
    strides = (call.m * call.k, call.k * call.n, call.m * call.n)

    def body(bb: Builder, ivs: list[SSAValue]) -> None:
        emit(
            bb,
            [
                offset_pointer(bb, p, ivs[0], s, element)
                for p, s in zip(pointers, strides, strict=True)
            ],
        )

    lb.nest(b, [call.batch], body)


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
    lda = call.m if call.trans_a else call.k
    ldb = call.k if call.trans_b else call.n
    args = [
        *int_consts(b, i32, _ROW_MAJOR, _flag(call.trans_a), _flag(call.trans_b)),
        *int_consts(b, i64, call.m, call.n, call.k),
        float_const(b, 1.0, element), a, int_const(b, lda, i64), bm, int_const(b, ldb, i64),
        float_const(b, 0.0, element), c, int_const(b, call.n, i64),
    ]  # fmt: skip
    call_external(module, b, blas_symbols()[str(element), "gemm"], args)


def _gemv(
    module: ModuleOp, call: BlasCall, element: Attribute, b: Builder, pointers: Sequence[SSAValue]
) -> None:
    """`y = op(A) x`: A is the lhs when the rhs is a vector (n == 1), else the rhs
    (then y = op(B)ᵀ x)."""
    a, bm, c = pointers
    if call.n == 1:
        matrix, vector = a, bm
        rows, cols = (call.k, call.m) if call.trans_a else (call.m, call.k)
        trans = call.trans_a
    else:
        matrix, vector = bm, a
        rows, cols = (call.n, call.k) if call.trans_b else (call.k, call.n)
        trans = not call.trans_b
    args = [
        *int_consts(b, i32, _ROW_MAJOR, _flag(trans)), *int_consts(b, i64, rows, cols),
        float_const(b, 1.0, element), matrix, int_const(b, cols, i64), vector, int_const(b, 1, i64),
        float_const(b, 0.0, element), c, int_const(b, 1, i64),
    ]  # fmt: skip
    call_external(module, b, blas_symbols()[str(element), "gemv"], args)


_Emitter = Callable[[ModuleOp, BlasCall, Attribute, Builder, Sequence[SSAValue]], None]
_EMITTERS: dict[str, _Emitter] = {"gemm": _gemm, "gemv": _gemv}
