"""cholesky, triangular_solve, lu, qr, eigh and svd as calls to the LAPACK in
numpy's OpenBLAS.

numpy's `scipy_openblas64_` (`blas.openblas`) exports LAPACKE and CBLAS with
64-bit integers: `scipy_LAPACKE_?potrf_work64_`, `scipy_LAPACKE_?getrf_work64_`,
`scipy_cblas_?trsm64_`, `scipy_LAPACKE_?geqrf64_`, ... (`_ROUTINES`), `?` one
of s, d, c, z (f32, f64, complex<f32>, complex<f64>). The `_work` entry points
skip LAPACKE's NaN scan of the input; the others (qr, eigh, svd: no
workspace to size) answer a NaN in it with `info < 0`, and their results
are then NaNs.
Each op's buffers arrive viewed as `[batch, n, n]` (or `[batch, n, k]`); a loop
over the batch calls the routine once per matrix, at a pointer offset.

Our buffers are row-major, LAPACK's matrices column-major:

* potrf: a row-major Hermitian matrix read column-major is its conjugate
  (transpose), so the call factors it as `Uᴴ U` with `uplo = 'U'` and the
  upper factor, read row-major, is `L` (no copy). The untouched strict upper
  triangle is then zeroed; a matrix that is not positive definite (`info > 0`)
  is filled with NaNs.
* getrf: the operand is copied transposed into the result buffer, which
  then holds the matrix column-major, factored in place (LAPACK's own layout,
  no LAPACKE copies: its row-major layout transposes into and out of a
  temporary of its own) and transposed back in place; the 1-based i64 pivots
  are made 0-based i32 and replayed on the identity to give the permutation.
* geqrf, orgqr/ungqr: LAPACKE's row-major layout (see `emit_qr`).
* syevd/heevd: LAPACKE's row-major layout, `uplo = 'L'` (the lower triangle
  of the row-major matrix), on a copy in the eigenvector buffer.
* gesdd: LAPACKE's row-major layout on a copy of the operand (a scratch
  buffer), `jobz = 'A'` (full matrices) or `'S'`.
* trsm: CBLAS takes row-major operands as they are; one right-hand side is a
  `trsv` (a third of `trsm`'s time for n = 1000).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from xdsl.builder import Builder
from xdsl.dialects import arith, func, memref, scf
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
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

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

LINALG_OPS: tuple[type[Operation], ...] = (
    prim.CholeskyOp,
    prim.TriangularSolveOp,
    prim.LuOp,
    prim.QrOp,
    prim.EighOp,
    prim.SvdOp,
)
"""The ops lowered to LAPACK/CBLAS calls."""

MatrixBody = Callable[[Builder, SSAValue], None]
"""Emits the calls on one matrix: (builder, the matrix's index in the batch)."""

_PREFIX = {"f": "s", "d": "d", "F": "c", "D": "z"}
"""numpy's dtype character -> LAPACK's type letter."""
_ROUTINES = {
    "potrf": "scipy_LAPACKE_{}potrf_work64_",
    "getrf": "scipy_LAPACKE_{}getrf_work64_",
    "trsm": "scipy_cblas_{}trsm64_",
    "trsv": "scipy_cblas_{}trsv64_",
    "geqrf": "scipy_LAPACKE_{}geqrf64_",
    "orgqr": "scipy_LAPACKE_{}orgqr64_",
    "ungqr": "scipy_LAPACKE_{}ungqr64_",
    "syevd": "scipy_LAPACKE_{}syevd64_",
    "heevd": "scipy_LAPACKE_{}heevd64_",
    "gesdd": "scipy_LAPACKE_{}gesdd64_",
}
"""The `_work` entry points where the workspace is known (none needed), else
LAPACKE's allocating ones (their NaN scan of the input answers `info < 0`)."""
_CBLAS = frozenset({"trsm", "trsv"})
"""The routines without a result (CBLAS's)."""
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
        results = [] if routine in _CBLAS else [i64]
        return call_external(self.module, b, symbol(routine, self.element), args, results)


def scratch_types(op: Operation) -> list[TensorType]:
    """The scratch buffers `emit_linalg` takes after `op`'s results: lu's i64
    pivots (LAPACK's, 1-based), qr's Householder scalars `tau`, a copy of
    svd's operand (`gesdd` overwrites it)."""
    shape = prim.shape_of(op.operands[0])
    if isinstance(op, prim.LuOp):
        return [TensorType(i64, shape[:-1])]
    if isinstance(op, prim.QrOp):
        element = prim.element_type_of(op.operands[0].type)
        return [TensorType(element, [*shape[:-2], min(shape[-2:])])]
    if isinstance(op, prim.SvdOp):
        return [prim.tensor_type_of(op.operands[0])]
    return []


def emit_linalg(
    calls: MatrixCalls, op: Operation, operands: Sequence[Buffer], results: Sequence[Buffer]
) -> None:
    """The calls computing `op` (one of `LINALG_OPS`) from `operands` into
    `results`, buffers of `[batch, ...]`, followed by the `scratch_types` ones."""
    if isinstance(op, prim.CholeskyOp):
        emit_cholesky(calls, operands[0], results[0])
    elif isinstance(op, prim.TriangularSolveOp):
        emit_triangular_solve(calls, operands[0], operands[1], results[0], op.flags())
    elif isinstance(op, prim.LuOp):
        emit_lu(calls, operands[0], results[:3], results[3])
    elif isinstance(op, prim.QrOp):
        emit_qr(calls, operands[0], results[:2], results[2])
    elif isinstance(op, prim.EighOp):
        emit_eigh(calls, operands[0], results[0], results[1])
    else:
        assert isinstance(op, prim.SvdOp)
        emit_svd(calls, operands[0], results[:3], results[3], op.flags()["full_matrices"])


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
    """`out` = op(a)⁻¹ rhs per matrix, by `trsm` (`trsv` for one column) in
    place on a copy of `rhs`."""
    b = calls.b
    b.insert(memref.CopyOp(rhs.ref, out.ref))
    batch, n, k = out.shape
    trans = _TRANS_FLAGS[flags["transpose_a"], flags["conjugate_a"]]
    uplo = _LOWER if flags["lower"] else _UPPER
    diag = _UNIT if flags["unit_diagonal"] else _NON_UNIT
    a_base, out_base = calls.pointer(a), calls.pointer(out)

    def trsv(bb: Builder, iv: SSAValue) -> None:
        args = [
            *int_consts(bb, i32, _ROW_MAJOR, uplo, trans, diag), int_const(bb, n, i64),
            calls.matrix(bb, a_base, a, iv), _leading(bb, n),
            calls.matrix(bb, out_base, out, iv), int_const(bb, 1, i64),
        ]  # fmt: skip
        calls.call(bb, "trsv", args)

    def trsm(bb: Builder, iv: SSAValue) -> None:
        args = [
            *int_consts(bb, i32, _ROW_MAJOR, _LEFT, uplo, trans, diag),
            *int_consts(bb, i64, n, k), alpha,
            calls.matrix(bb, a_base, a, iv), _leading(bb, n),
            calls.matrix(bb, out_base, out, iv), _leading(bb, k),
        ]  # fmt: skip
        calls.call(bb, "trsm", args)

    if k == 1:
        calls.per_matrix(batch, trsv)
        return
    alpha = _one(calls)
    calls.per_matrix(batch, trsm)


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
    """`results` = (packed LU, pivots, permutation) of `operand`'s matrices,
    each copied transposed into `lu`, factored column-major there and
    transposed back; `scratch` (i64, `[batch, n]`) receives LAPACK's pivots."""
    lb = calls.lb
    lu, pivots, permutation = results
    batch, n, _ = lu.shape
    base, ipiv_base = calls.pointer(lu), calls.pointer(scratch)

    def body(bb: Builder, iv: SSAValue) -> None:
        lb.nest(bb, [n, n], lambda inner, ij: _copy_transposed(lb, inner, operand, lu, [iv, *ij]))
        args = [
            int_const(bb, _COL_MAJOR, i32), *int_consts(bb, i64, n, n),
            calls.matrix(bb, base, lu, iv), _leading(bb, n),
            offset_pointer(bb, ipiv_base, iv, n, i64),
        ]  # fmt: skip
        calls.call(bb, "getrf", args)
        _transpose_in_place(lb, bb, lu, iv, n)
        lb.nest(bb, [n], lambda inner, i: _store_pivot(inner, scratch, pivots, iv, i[0]))
        lb.nest(bb, [n], lambda inner, i: _store_identity(inner, permutation, iv, i[0]))
        lb.nest(bb, [n], lambda inner, i: _swap(inner, pivots, permutation, iv, i[0]))

    calls.per_matrix(batch, body)


def _copy_transposed(
    lb: LoopBuilder, b: Builder, source: Buffer, target: Buffer, idx: Index
) -> None:
    """target[iv, j, i] = source[iv, i, j] (`idx` = [iv, i, j])."""
    iv, i, j = idx
    lb.store(b, target, [iv, j, i], lb.load(b, source, idx))


def _transpose_in_place(lb: LoopBuilder, b: Builder, buffer: Buffer, iv: SSAValue, n: int) -> None:
    """Transpose the n×n matrix `iv` of `buffer` in place: swap `[i, j]` and
    `[j, i]` for every `j > i` (an inner loop from `i + 1`)."""

    def row(bb: Builder, ivs: Index) -> None:
        (i,) = ivs
        block = Block(arg_types=[IndexType()])
        start = lb.affine(bb, i, 1, 1)
        bb.insert(scf.ForOp(start, lb.index(n), lb.index(1), [], block))
        inner = Builder(InsertPoint.at_end(block))
        j = block.args[0]
        upper, lower = lb.load(inner, buffer, [iv, i, j]), lb.load(inner, buffer, [iv, j, i])
        lb.store(inner, buffer, [iv, i, j], lower)
        lb.store(inner, buffer, [iv, j, i], upper)
        inner.insert(scf.YieldOp())

    lb.nest(b, [n], row)


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


def emit_qr(calls: MatrixCalls, operand: Buffer, results: Sequence[Buffer], tau: Buffer) -> None:
    """`results` = (q, r) of `operand`'s matrices: `geqrf` on a copy, `r` its
    upper triangle, `q` from its reflectors by `orgqr`/`ungqr` (LAPACKE's
    row-major layout). Factored in `q` (its first `n` columns, the others
    zeroed) when `q` is at least as wide as `a`, else in `r` (`m < n`: `q` is
    `m×m`, copied from `r`'s first columns). NaNs where LAPACKE fails."""
    b, lb = calls.b, calls.lb
    q, r = results
    batch, m, n = operand.shape
    k = q.shape[-1]
    reflectors = min(m, n)
    factored = q if k >= n else r
    if k < n:
        b.insert(memref.CopyOp(operand.ref, r.ref))
    base, tau_base, q_base = calls.pointer(factored), calls.pointer(tau), calls.pointer(q)
    generate = "ungqr" if calls.parts == 2 else "orgqr"

    def body(bb: Builder, iv: SSAValue) -> None:
        if k >= n:
            lb.nest(bb, [m, n], lambda inner, ij: _copy(lb, inner, operand, q, [iv, *ij]))
            lb.nest(bb, [m, k - n], lambda inner, ij: _zero_column(calls, inner, q, iv, ij, n))
        tau_pointer = offset_pointer(bb, tau_base, iv, reflectors * calls.parts, calls.real)
        args = [
            int_const(bb, _ROW_MAJOR, i32), *int_consts(bb, i64, m, n),
            calls.matrix(bb, base, factored, iv), _leading(bb, factored.shape[-1]), tau_pointer,
        ]  # fmt: skip
        factor_info = calls.call(bb, "geqrf", args).res[0]
        if k < n:  # the reflectors, before r's lower triangle is zeroed
            lb.nest(bb, [m, m], lambda inner, ij: _copy(lb, inner, r, q, [iv, *ij]))
        lb.nest(bb, [k, n], lambda inner, ij: _upper(calls, inner, factored, r, [iv, *ij]))
        args = [
            int_const(bb, _ROW_MAJOR, i32), *int_consts(bb, i64, m, k, reflectors),
            calls.matrix(bb, q_base, q, iv), _leading(bb, k), tau_pointer,
        ]  # fmt: skip
        generate_info = calls.call(bb, generate, args).res[0]
        failed = bb.insert(arith.OrIOp(factor_info, generate_info)).result
        _nan_if_failed(calls, bb, failed, [q, r], iv)

    calls.per_matrix(batch, body)


def emit_eigh(calls: MatrixCalls, operand: Buffer, values: Buffer, vectors: Buffer) -> None:
    """`values` (ascending) and `vectors` (columns) of the Hermitian matrices
    made of `operand`'s lower triangles: `syevd`/`heevd` in place on a copy in
    `vectors`; NaNs where it fails (no convergence, or NaNs in the input)."""
    b = calls.b
    b.insert(memref.CopyOp(operand.ref, vectors.ref))
    batch, n, _ = vectors.shape
    base, values_base = calls.pointer(vectors), calls.pointer(values)
    routine = "heevd" if calls.parts == 2 else "syevd"

    def body(bb: Builder, iv: SSAValue) -> None:
        args = [
            int_const(bb, _ROW_MAJOR, i32), *int_consts(bb, i8, ord("V"), ord("L")),
            int_const(bb, n, i64), calls.matrix(bb, base, vectors, iv), _leading(bb, n),
            offset_pointer(bb, values_base, iv, n, calls.real),
        ]  # fmt: skip
        info = calls.call(bb, routine, args).res[0]
        _nan_if_failed(calls, bb, info, [values, vectors], iv)

    calls.per_matrix(batch, body)


def emit_svd(
    calls: MatrixCalls,
    operand: Buffer,
    results: Sequence[Buffer],
    copy: Buffer,
    full_matrices: bool,
) -> None:
    """`results` = (u, s, vh) of `operand`'s matrices by `gesdd` on `copy`
    (`jobz` 'A' for full matrices, else 'S'); NaNs where it fails (no
    convergence, or NaNs in the input)."""
    b = calls.b
    b.insert(memref.CopyOp(operand.ref, copy.ref))
    u, s, vh = results
    batch, m, n = operand.shape
    k = s.shape[-1]
    jobz = "A" if full_matrices else "S"
    bases = [calls.pointer(buffer) for buffer in (copy, s, u, vh)]

    def body(bb: Builder, iv: SSAValue) -> None:
        a_base, s_base, u_base, vh_base = bases
        args = [
            int_const(bb, _ROW_MAJOR, i32), int_const(bb, ord(jobz), i8),
            *int_consts(bb, i64, m, n), calls.matrix(bb, a_base, copy, iv), _leading(bb, n),
            offset_pointer(bb, s_base, iv, k, calls.real),
            calls.matrix(bb, u_base, u, iv), _leading(bb, u.shape[-1]),
            calls.matrix(bb, vh_base, vh, iv), _leading(bb, n),
        ]  # fmt: skip
        info = calls.call(bb, "gesdd", args).res[0]
        _nan_if_failed(calls, bb, info, results, iv)

    calls.per_matrix(batch, body)


def _copy(lb: LoopBuilder, b: Builder, source: Buffer, target: Buffer, idx: Index) -> None:
    """target[idx] = source[idx]."""
    lb.store(b, target, idx, lb.load(b, source, idx))


def _zero(calls: MatrixCalls, b: Builder) -> SSAValue | tuple[SSAValue, SSAValue]:
    """A zero element of the calls' element type."""
    zero = float_const(b, 0.0, calls.real)
    return (zero, zero) if calls.parts == 2 else zero


def _zero_column(
    calls: MatrixCalls, b: Builder, target: Buffer, iv: SSAValue, ij: Index, first: int
) -> None:
    """target[iv, i, first + j] = 0."""
    i, j = ij
    calls.lb.store(b, target, [iv, i, calls.lb.affine(b, j, 1, first)], _zero(calls, b))


def _upper(calls: MatrixCalls, b: Builder, source: Buffer, target: Buffer, idx: Index) -> None:
    """target[iv, i, j] = source[iv, i, j] on and above the diagonal, else 0
    (`source` may be `target`)."""
    _, i, j = idx
    below = b.insert(arith.CmpiOp(j, i, "ult")).result
    value = calls.lb.load(b, source, idx)
    parts = value if isinstance(value, tuple) else (value,)
    zero = float_const(b, 0.0, calls.real)
    kept = [b.insert(arith.SelectOp(below, zero, part)).result for part in parts]
    calls.lb.store(b, target, idx, (kept[0], kept[1]) if len(kept) == 2 else kept[0])


def _nan_if_failed(
    calls: MatrixCalls, b: Builder, info: SSAValue, buffers: Sequence[Buffer], iv: SSAValue
) -> None:
    """Fill matrix (or vector) `iv` of each of `buffers` with NaNs if `info`
    (i64) is not 0."""
    failed = b.insert(arith.CmpiOp(info, int_const(b, 0, i64), "ne")).result
    block = Block()
    inner = Builder(InsertPoint.at_end(block))
    nan = float_const(inner, float("nan"), calls.real)
    for buffer in buffers:
        value = (nan, nan) if buffer.is_complex else nan
        calls.lb.nest(
            inner,
            buffer.shape[1:],
            lambda bb, ij, t=buffer, x=value: calls.lb.store(bb, t, [iv, *ij], x),
        )
    inner.insert(scf.YieldOp())
    b.insert(scf.IfOp(failed, [], Region(block)))
