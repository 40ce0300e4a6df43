"""cholesky, triangular_solve and lu as calls to the LAPACK in numpy's OpenBLAS.

numpy's `scipy_openblas64_` (`blas.openblas`) exports LAPACKE and CBLAS with
64-bit integers: `scipy_LAPACKE_?potrf_work64_`, `scipy_LAPACKE_?getrf_work64_`
and `scipy_cblas_?trsm64_`, `?` one of s, d, c, z (f32, f64, complex<f32>,
complex<f64>). The `_work` entry points skip LAPACKE's NaN scan of the input.
Each op's buffers arrive viewed as `[batch, n, n]` (or `[batch, n, k]`); a loop
over the batch calls the routine once per matrix, at a pointer offset.

Our buffers are row-major, LAPACK's matrices column-major:

* potrf: a row-major Hermitian matrix read column-major is its conjugate
  (transpose), so the call factors it as `Uᴴ U` with `uplo = 'U'` and the
  upper factor, read row-major, is `L` (no copy). The untouched strict upper
  triangle is then zeroed; a matrix that is not positive definite (`info > 0`)
  is filled with NaNs.
* getrf: LAPACKE's row-major layout (it factors a transposed copy and
  transposes back); the 1-based i64 pivots are made 0-based i32 and replayed
  on the identity to give the permutation.
* trsm: CBLAS takes row-major operands as they are.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from xdsl.builder import Builder
from xdsl.dialects import arith, func, memref
from xdsl.dialects import llvm as llvm_dialect
from xdsl.dialects.builtin import (
    IndexType,
    ModuleOp,
    TensorType,
    UnrealizedConversionCastOp,
    i8,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue

from tidu_mlir.dialects import prim
from tidu_mlir.lowering.blas import (
    float_const,
    int_const,
    int_consts,
    offset_pointer,
    openblas,
)
from tidu_mlir.lowering.common import call_external
from tidu_mlir.lowering.loops import Buffer, Index, LoopBuilder

LINALG_OPS: tuple[type[Operation], ...] = (prim.CholeskyOp, prim.TriangularSolveOp, prim.LuOp)
"""The ops lowered to LAPACK/CBLAS calls."""

MatrixBody = Callable[[Builder, SSAValue], None]
"""Emits the calls on one matrix: (builder, the matrix's index in the batch)."""

_PREFIX = {"f": "s", "d": "d", "F": "c", "D": "z"}
"""numpy's dtype character -> LAPACK's type letter."""
_ROUTINES = {
    "potrf": "scipy_LAPACKE_{}potrf_work64_",
    "getrf": "scipy_LAPACKE_{}getrf_work64_",
    "trsm": "scipy_cblas_{}trsm64_",
}
_ROW_MAJOR, _COL_MAJOR = 101, 102
_LEFT, _UPPER, _LOWER = 141, 121, 122
_NO_TRANS, _TRANS, _CONJ_TRANS = 111, 112, 113
_NON_UNIT, _UNIT = 131, 132
_TRANS_FLAGS = {(False, False): _NO_TRANS, (True, False): _TRANS, (True, True): _CONJ_TRANS}
"""CBLAS's `TransA` for (transpose_a, conjugate_a)."""


@functools.cache
def lapack_symbols() -> dict[tuple[str, str], str]:
    """(routine, dtype character) -> loaded symbol; empty without OpenBLAS."""
    library = openblas()
    if library is None:
        return {}
    names = {
        (routine, char): pattern.format(letter)
        for routine, pattern in _ROUTINES.items()
        for char, letter in _PREFIX.items()
    }
    return {key: name for key, name in names.items() if hasattr(library, name)}


def symbol(routine: str, element: Attribute) -> str:
    """The loaded symbol of `routine` for matrices of `element`."""
    char = prim.tensor_dtype(TensorType(element, [])).char
    found = lapack_symbols().get((routine, char))
    if found is None:
        raise NotImplementedError(f"no LAPACK {routine} for {element}: numpy's OpenBLAS not found")
    return found


class MatrixCalls:
    """Emits the per-matrix calls of one op on `[batch, rows, columns]` buffers."""

    def __init__(self, module: ModuleOp, lb: LoopBuilder, b: Builder, element: Attribute):
        self.module = module
        self.lb = lb
        self.b = b
        self.element = element
        self.real = prim.real_element_type(element)
        self.parts = 2 if prim.is_complex(element) else 1

    def pointer(self, buffer: Buffer) -> SSAValue:
        """The buffer's base pointer."""
        ptr = llvm_dialect.LLVMPointerType()
        return self.b.insert(UnrealizedConversionCastOp.get([buffer.ref], [ptr])).results[0]

    def matrix(self, b: Builder, base: SSAValue, buffer: Buffer, iv: SSAValue) -> SSAValue:
        """The pointer to matrix `iv` of `buffer` (base pointer `base`)."""
        _, rows, columns = buffer.shape
        return offset_pointer(b, base, iv, rows * columns * self.parts, self.real)

    def per_matrix(self, batch: int, body: MatrixBody) -> None:
        """`body(builder, iv)` for every matrix index `iv` of the batch, in a loop
        even for one matrix: `parallelize-loops` then leaves the O(n²) loops
        around a call serial (only a batch loop of several matrices, each
        iteration touching its own matrices and pivots, may run in parallel),
        so no thread team starts right after OpenBLAS's own."""
        self.lb.nest(self.b, [batch], lambda bb, ivs: body(bb, ivs[0]))

    def call(self, b: Builder, routine: str, args: list[SSAValue]) -> func.CallOp:
        """Call `routine` for this element type (LAPACKE's return an i64 `info`)."""
        results = [] if routine == "trsm" else [i64]
        return call_external(self.module, b, symbol(routine, self.element), args, results)


def emit_linalg(
    calls: MatrixCalls, op: Operation, operands: Sequence[Buffer], results: Sequence[Buffer]
) -> None:
    """The calls computing `op` (one of `LINALG_OPS`) from `operands` into
    `results`, buffers of `[batch, ...]` (lu: a last, i64 `[batch, n]` scratch
    buffer for LAPACK's pivots)."""
    if isinstance(op, prim.CholeskyOp):
        emit_cholesky(calls, operands[0], results[0])
    elif isinstance(op, prim.TriangularSolveOp):
        emit_triangular_solve(calls, operands[0], operands[1], results[0], op.flags())
    else:
        assert isinstance(op, prim.LuOp)
        emit_lu(calls, operands[0], results[:3], results[3])


def emit_cholesky(calls: MatrixCalls, operand: Buffer, out: Buffer) -> None:
    """`out` = the lower Cholesky factors of `operand`'s matrices (see the module)."""
    b, lb = calls.b, calls.lb
    b.insert(memref.CopyOp(operand.ref, out.ref))
    batch, n, _ = out.shape
    base = calls.pointer(out)

    def body(bb: Builder, iv: SSAValue) -> None:
        args = [
            int_const(bb, _COL_MAJOR, i32), int_const(bb, ord("U"), i8),
            int_const(bb, n, i64), calls.matrix(bb, base, out, iv), _leading(bb, n),
        ]  # fmt: skip
        info = calls.call(bb, "potrf", args).res[0]
        failed = bb.insert(arith.CmpiOp(info, int_const(bb, 0, i64), "ne")).result
        lb.nest(bb, [n, n], lambda inner, ij: _mask_factor(calls, inner, out, [iv, *ij], failed))

    calls.per_matrix(batch, body)


def _leading(b: Builder, columns: int) -> SSAValue:
    """A row-major leading dimension: the row length, at least 1 (BLAS and LAPACK
    reject 0 even for empty matrices)."""
    return int_const(b, max(1, columns), i64)


def _mask_factor(calls: MatrixCalls, b: Builder, out: Buffer, idx: Index, failed: SSAValue) -> None:
    """Zero above the diagonal; NaN everywhere if the factorization `failed`."""
    _, i, j = idx
    above = b.insert(arith.CmpiOp(j, i, "ugt")).result
    zero = float_const(b, 0.0, calls.real)
    nan = float_const(b, float("nan"), calls.real)
    value = calls.lb.load(b, out, idx)
    parts = value if isinstance(value, tuple) else (value,)
    masked = []
    for part in parts:
        kept = b.insert(arith.SelectOp(above, zero, part)).result
        masked.append(b.insert(arith.SelectOp(failed, nan, kept)).result)
    calls.lb.store(b, out, idx, tuple(masked) if len(masked) == 2 else masked[0])


def emit_triangular_solve(
    calls: MatrixCalls, a: Buffer, rhs: Buffer, out: Buffer, flags: dict[str, bool]
) -> None:
    """`out` = op(a)⁻¹ rhs per matrix, by `trsm` in place on a copy of `rhs`."""
    b = calls.b
    b.insert(memref.CopyOp(rhs.ref, out.ref))
    batch, n, k = out.shape
    trans = _TRANS_FLAGS[flags["transpose_a"], flags["conjugate_a"]]
    alpha = _one(calls)
    a_base, out_base = calls.pointer(a), calls.pointer(out)

    def body(bb: Builder, iv: SSAValue) -> None:
        args = [
            *int_consts(bb, i32, _ROW_MAJOR, _LEFT, _LOWER if flags["lower"] else _UPPER, trans),
            int_const(bb, _UNIT if flags["unit_diagonal"] else _NON_UNIT, i32),
            *int_consts(bb, i64, n, k), alpha,
            calls.matrix(bb, a_base, a, iv), _leading(bb, n),
            calls.matrix(bb, out_base, out, iv), _leading(bb, k),
        ]  # fmt: skip
        calls.call(bb, "trsm", args)

    calls.per_matrix(batch, body)


def _one(calls: MatrixCalls) -> SSAValue:
    """trsm's `alpha` = 1: a real scalar, or (complex) a pointer to (1, 0)."""
    if calls.parts == 1:
        return float_const(calls.b, 1.0, calls.real)
    slot = Buffer(calls.b.insert(memref.AllocaOp.get(calls.real, 0, [2])).memref, False)
    for part, value in enumerate((1.0, 0.0)):
        constant = float_const(calls.b, value, calls.real)
        calls.b.insert(memref.StoreOp.get(constant, slot.ref, [calls.lb.index(part)]))
    return calls.pointer(slot)


def emit_lu(
    calls: MatrixCalls, operand: Buffer, results: Sequence[Buffer], scratch: Buffer
) -> None:
    """`results` = (packed LU, pivots, permutation) of `operand`'s matrices;
    `scratch` (i64, `[batch, n]`) receives LAPACK's pivots."""
    b, lb = calls.b, calls.lb
    lu, pivots, permutation = results
    b.insert(memref.CopyOp(operand.ref, lu.ref))
    batch, n, _ = lu.shape
    base, ipiv_base = calls.pointer(lu), calls.pointer(scratch)

    def body(bb: Builder, iv: SSAValue) -> None:
        args = [
            int_const(bb, _ROW_MAJOR, i32), *int_consts(bb, i64, n, n),
            calls.matrix(bb, base, lu, iv), _leading(bb, n),
            offset_pointer(bb, ipiv_base, iv, n, i64),
        ]  # fmt: skip
        calls.call(bb, "getrf", args)
        lb.nest(bb, [n], lambda inner, i: _store_pivot(inner, scratch, pivots, iv, i[0]))
        lb.nest(bb, [n], lambda inner, i: _store_identity(inner, permutation, iv, i[0]))
        lb.nest(bb, [n], lambda inner, i: _swap(inner, pivots, permutation, iv, i[0]))

    calls.per_matrix(batch, body)


def _store_pivot(b: Builder, scratch: Buffer, pivots: Buffer, iv: SSAValue, i: SSAValue) -> None:
    """pivots[iv, i] = ipiv[iv, i] - 1 (0-based, i32)."""
    one_based = b.insert(memref.LoadOp.get(scratch.ref, [iv, i])).res
    zero_based = b.insert(arith.SubiOp(one_based, int_const(b, 1, i64))).result
    narrow = b.insert(arith.TruncIOp(zero_based, i32)).result
    b.insert(memref.StoreOp.get(narrow, pivots.ref, [iv, i]))


def _store_identity(b: Builder, permutation: Buffer, iv: SSAValue, i: SSAValue) -> None:
    """permutation[iv, i] = i."""
    value = b.insert(arith.IndexCastOp(i, i32)).result
    b.insert(memref.StoreOp.get(value, permutation.ref, [iv, i]))


def _swap(b: Builder, pivots: Buffer, permutation: Buffer, iv: SSAValue, i: SSAValue) -> None:
    """Row interchange `i` on the permutation: swap its entries `i` and `pivots[i]`."""
    pivot = b.insert(memref.LoadOp.get(pivots.ref, [iv, i])).res
    j = b.insert(arith.IndexCastOp(pivot, IndexType())).result
    first = b.insert(memref.LoadOp.get(permutation.ref, [iv, i])).res
    second = b.insert(memref.LoadOp.get(permutation.ref, [iv, j])).res
    b.insert(memref.StoreOp.get(second, permutation.ref, [iv, i]))
    b.insert(memref.StoreOp.get(first, permutation.ref, [iv, j]))
