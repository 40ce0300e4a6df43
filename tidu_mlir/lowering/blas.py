"""Large real matrix products as calls to the OpenBLAS that numpy bundles.

numpy's wheels ship `scipy_openblas64_` (ILP64, symbols `scipy_cblas_dgemm64_`,
`scipy_cblas_sgemm64_`) in `numpy.libs/`. A `dot_general` on f32/f64 without
batch dimensions whose operands are, after grouping axes, row-major matrices
(possibly transposed) and whose size reaches `BLAS_MIN_FLOPS` becomes one
`func.call` of `cblas_?gemm` (RowMajor, alpha 1, beta 0). The library is loaded
into the process when this module finds it; without it the loop nest is used.
Measured choice (docs/lowering.md): 256x784x256 f64 takes 7.3 ms as a loop nest
and about 1.2 ms through OpenBLAS (2 threads).
"""

from __future__ import annotations

import ctypes
import functools
import glob
import math
import os
from collections.abc import Sequence
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
    ModuleOp,
    UnrealizedConversionCastOp,
    i32,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.traits import SymbolTable

from tidu_mlir.dialects import prim
from tidu_mlir.lowering.loops import Buffer

BLAS_MIN_FLOPS = 32**3
"""Products with fewer multiply-adds stay loop nests (call overhead dominates)."""

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112


@functools.cache
def gemm_symbols() -> dict[str, str]:
    """Element type name -> loaded gemm symbol (empty when no OpenBLAS is found)."""
    libs = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    for path in sorted(glob.glob(os.path.join(libs, "libscipy_openblas64_*.so"))):
        try:
            library = ctypes.CDLL(path)
            llvm.load_library_permanently(path)
        except (OSError, RuntimeError):
            continue
        names = {"f64": "scipy_cblas_dgemm64_", "f32": "scipy_cblas_sgemm64_"}
        return {k: v for k, v in names.items() if hasattr(library, v)}
    return {}


@dataclass(frozen=True)
class GemmPlan:
    """`C[M,N] = op(A) @ op(B)` with row-major A, B, C."""

    trans_a: bool
    trans_b: bool
    m: int
    n: int
    k: int


def _grouped(axes: Sequence[int], first: Sequence[int], second: Sequence[int]) -> bool:
    return tuple(axes) == (*first, *second)


def plan_gemm(op: prim.DotGeneralOp) -> GemmPlan | None:
    """How `op` maps to one gemm call, or None when it does not (or is too small)."""
    lb, rb, lc, rc = op.dims()
    element = prim.element_type_of(op.result.type)
    if lb or rb or prim.is_complex(element) or str(element) not in gemm_symbols():
        return None
    lshape, rshape = prim.shape_of(op.lhs), prim.shape_of(op.rhs)
    lfree = [a for a in range(len(lshape)) if a not in lc]
    rfree = [a for a in range(len(rshape)) if a not in rc]
    m = math.prod(lshape[a] for a in lfree)
    n = math.prod(rshape[a] for a in rfree)
    k = math.prod(lshape[a] for a in lc)
    if m * n * k < BLAS_MIN_FLOPS:
        return None
    laxes, raxes = range(len(lshape)), range(len(rshape))
    if _grouped(laxes, lfree, lc):
        trans_a = False
    elif _grouped(laxes, lc, lfree):
        trans_a = True
    else:
        return None
    if _grouped(raxes, rc, rfree):
        trans_b = False
    elif _grouped(raxes, rfree, rc):
        trans_b = True
    else:
        return None
    return GemmPlan(trans_a, trans_b, m, n, k)


def emit_gemm(
    module: ModuleOp,
    b: Builder,
    op: prim.DotGeneralOp,
    plan: GemmPlan,
    operands: Sequence[Buffer],
    out: Buffer,
) -> None:
    """Insert the `cblas_?gemm` call computing `op` into `out`."""
    element = prim.element_type_of(op.result.type)
    symbol = gemm_symbols()[str(element)]
    ptr = llvm_dialect.LLVMPointerType()
    ints = [
        (_ROW_MAJOR, i32),
        (_TRANS if plan.trans_a else _NO_TRANS, i32),
        (_TRANS if plan.trans_b else _NO_TRANS, i32),
        (plan.m, i64),
        (plan.n, i64),
        (plan.k, i64),
    ]
    args: list[SSAValue] = [b.insert(arith.ConstantOp(IntegerAttr(v, t))).result for v, t in ints]

    def real(value: float) -> SSAValue:
        return b.insert(arith.ConstantOp(FloatAttr(value, cast(AnyFloat, element)))).result

    def pointer(buffer: Buffer) -> SSAValue:
        return b.insert(UnrealizedConversionCastOp.get([buffer.ref], [ptr])).results[0]

    def lead(value: int) -> SSAValue:
        return b.insert(arith.ConstantOp(IntegerAttr(value, i64))).result

    lhs, rhs = operands
    lda = plan.m if plan.trans_a else plan.k
    ldb = plan.k if plan.trans_b else plan.n
    args += [real(1.0), pointer(lhs), lead(lda), pointer(rhs), lead(ldb), real(0.0)]
    args += [pointer(out), lead(plan.n)]
    _declare(module, symbol, [a.type for a in args])
    b.insert(func.CallOp(symbol, args, []))


def _declare(module: ModuleOp, name: str, types: list[Attribute]) -> None:
    if SymbolTable.lookup_symbol(module, name) is None:
        module.body.block.add_op(func.FuncOp.external(name, types, []))
