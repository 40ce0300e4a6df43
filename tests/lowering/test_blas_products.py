"""dot_general layouts produced by AD, compiled (BLAS or loop nest) vs the evaluator.

Layouts come from the materialized gradients of the MLP loss and the HVP of
`bench/bench_api.py` and from the dot_general transpose rule (`prim_ad.py`):
contraction over the leading axis (weight gradients), results transposed,
transposed operands, matrix-vector both ways, batch axes, several contracting
axes. Each runs just below and just above the BLAS thresholds, f32 and f64.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pytest
from xdsl.dialects import memref, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from tidu_mlir.dialects import prim
from tidu_mlir.lowering import blas
from tidu_mlir.lowering.lower_to_llvm import lower_prim_to_loops
from tidu_mlir.lowering.runtime import compile_function

from .oracle import build, check, tensor

needs_blas = pytest.mark.skipif(not blas.blas_symbols(), reason="no OpenBLAS in numpy.libs")


@dataclass(frozen=True)
class Layout:
    """`transpose?(dot_general(transpose?(x), transpose?(y)))` on source shapes."""

    lhs: tuple[int, ...]
    rhs: tuple[int, ...]
    dims: tuple[Sequence[int], Sequence[int], Sequence[int], Sequence[int]]
    lhs_perm: Sequence[int] | None = None
    rhs_perm: Sequence[int] | None = None
    result_perm: Sequence[int] | None = None

    def function(self, dtype: type):
        lb, rb, lc, rc = self.dims

        def body(x: SSAValue, y: SSAValue):
            lhs = prim.TransposeOp(x, self.lhs_perm).result if self.lhs_perm else x
            rhs = prim.TransposeOp(y, self.rhs_perm).result if self.rhs_perm else y
            dot = prim.DotGeneralOp(
                lhs, rhs, lhs_batch=lb, rhs_batch=rb, lhs_contract=lc, rhs_contract=rc
            )
            return prim.TransposeOp(dot, self.result_perm) if self.result_perm else dot

        return build([tensor(self.lhs, dtype), tensor(self.rhs, dtype)], body)


def layouts(m: int, n: int, k: int, b: int = 3) -> dict[str, Layout]:
    """Every layout, for an M×N result contracting K (batch count b)."""
    return {
        "nn (x @ w1)": Layout((m, k), (k, n), ([], [], [1], [0])),
        "nt (d_out @ w2ᵀ)": Layout((m, k), (n, k), ([], [], [1], [1])),
        "tn (xᵀ d: weight gradient)": Layout((k, m), (k, n), ([], [], [0], [0])),
        "tt": Layout((k, m), (n, k), ([], [], [0], [1])),
        "tn, result transposed": Layout((k, n), (k, m), ([], [], [0], [0]), result_perm=[1, 0]),
        "nt, result transposed": Layout((n, k), (m, k), ([], [], [1], [1]), result_perm=[1, 0]),
        "transposed lhs operand": Layout((m, k), (n, k), ([], [], [0], [1]), lhs_perm=[1, 0]),
        "transposed rhs operand": Layout((m, k), (k, n), ([], [], [1], [1]), rhs_perm=[1, 0]),
        "both operands and result transposed": Layout(
            (m, k), (k, n), ([], [], [0], [1]), [1, 0], [1, 0], [1, 0]
        ),
        "several contracting axes": Layout(
            (m, 2, k // 2), (2, k // 2, n), ([], [], [1, 2], [0, 1])
        ),
        "several free axes": Layout((2, m // 2, k), (k, n), ([], [], [2], [0])),
        "contracting axes in other order": Layout(
            (m, 2, k // 2), (k // 2, 2, n), ([], [], [1, 2], [1, 0])
        ),
        "batched nn": Layout((b, m, k), (b, k, n), ([0], [0], [2], [1])),
        "batched tn, result transposed": Layout(
            (b, k, n), (b, k, m), ([0], [0], [1], [1]), result_perm=[0, 2, 1]
        ),
        "batch not leading": Layout((m, b, k), (b, k, n), ([1], [0], [2], [1])),
        "batch between the groups of both": Layout((m, b, k), (k, b, n), ([1], [1], [2], [0])),
        "einsum ijk,mik->mij (gmm)": Layout(
            (b, m, k), (n, b, k), ([0], [1], [2], [2]), result_perm=[2, 0, 1]
        ),
        "two batch axes, paired out of order": Layout(
            (b, m, 2, k), (2, k, b, n), ([0, 2], [2, 0], [3], [1])
        ),
        "batch innermost": Layout((m, k, b), (k, n, b), ([2], [2], [1], [0])),
    }


def vector_layouts(m: int, k: int, b: int = 3) -> dict[str, Layout]:
    """Matrix-vector layouts (HVP and the transpose rule) for an M-vector result."""
    return {
        "A x, x as k×1 (hvp)": Layout((m, k), (k, 1), ([], [], [1], [0])),
        "A x, x a vector": Layout((m, k), (k,), ([], [], [1], [0])),
        "Aᵀ x": Layout((k, m), (k,), ([], [], [0], [0])),
        "x A (vector on the left)": Layout((k,), (k, m), ([], [], [0], [0])),
        "xᵀ A, result transposed (hvp)": Layout(
            (k, 1), (k, m), ([], [], [0], [0]), result_perm=[1, 0]
        ),
        "x Aᵀ": Layout((k,), (m, k), ([], [], [0], [1])),
        "batched A x": Layout((b, m, k), (b, k), ([0], [0], [2], [1])),
        "vector · vector (loops)": Layout((k,), (k,), ([], [], [0], [0])),
    }


CUBE = round(blas.BLAS_MIN_FLOPS ** (1 / 3))
SQUARE = round(blas.GEMV_MIN_FLOPS**0.5)
CASES = [
    *((name, layout) for name, layout in layouts(CUBE, CUBE, CUBE).items()),
    *((f"{name}, small", layout) for name, layout in layouts(CUBE - 2, CUBE, CUBE).items()),
    *((name, layout) for name, layout in vector_layouts(SQUARE, SQUARE).items()),
    *((f"{name}, small", layout) for name, layout in vector_layouts(SQUARE - 2, SQUARE).items()),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("name", "layout"), CASES, ids=[name for name, _ in CASES])
def test_layout_matches_evaluator(name: str, layout: Layout, dtype: type) -> None:
    check(layout.function(dtype), seed=len(name))


def loop_count(function) -> int:
    module = ModuleOp([function.clone()])
    lower_prim_to_loops(module)
    return sum(isinstance(op, scf.ForOp) for op in module.walk())


@needs_blas
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    "name",
    ["nt (d_out @ w2ᵀ)", "tn (xᵀ d: weight gradient)", "tn, result transposed",
     "transposed lhs operand", "both operands and result transposed"],
)  # fmt: skip
def test_mlp_weight_gradient_layouts_call_gemm_without_loops(name: str, dtype: type) -> None:
    function = layouts(64, 48, 40)[name].function(dtype)
    symbol = blas.blas_symbols()[str(prim.element_type_of_dtype(dtype)), "gemm"]
    assert symbol in compile_function(function).llvm_ir
    assert loop_count(function) == 0  # transposes folded into the gemm flags


@needs_blas
@pytest.mark.parametrize(
    ("name", "loops"),
    [("batch not leading", 1), ("batch between the groups of both", 1),
     ("einsum ijk,mik->mij (gmm)", 1), ("two batch axes, paired out of order", 2)],
)  # fmt: skip
def test_strided_batches_call_gemm_in_a_loop_per_batch_axis(name: str, loops: int) -> None:
    """Batch axes anywhere: one gemm per matrix of the batch, the matrices
    read and written in place (strided), no transpose copied."""
    function = layouts(64, 48, 40)[name].function(np.float64)
    assert "scipy_cblas_dgemm64_" in compile_function(function).llvm_ir
    assert loop_count(function) == loops


def temporary_count(module: ModuleOp) -> int:
    """The temporaries of a lowered module: heap allocations and the buffers
    `pool-buffers` carved out of one (the pools themselves not counted)."""
    return sum(
        isinstance(op, memref.ViewOp)
        or (
            isinstance(op, memref.AllocOp)
            and not any(isinstance(use.operation, memref.ViewOp) for use in op.memref.uses)
        )
        for op in module.walk()
    )


@needs_blas
@pytest.mark.parametrize(("mnk", "gemm"), [((64, 48, 40), True), ((64, 4, 48), False)])
def test_an_operand_of_no_matrix_layout_is_copied_when_the_product_pays_for_it(
    mnk: tuple[int, int, int], gemm: bool
) -> None:
    """A batch axis of unit stride: no BLAS matrix reads the operands in place.
    They are copied (a transposed temporary each) when the product does at
    least `COPY_RATIO` multiply-adds per element copied (the lhs: n of them,
    4 < 8 in the second case, above the BLAS threshold), else it is a loop nest."""
    assert math.prod(mnk) * 3 >= blas.BLAS_MIN_FLOPS
    function = layouts(*mnk)["batch innermost"].function(np.float64)
    assert ("scipy_cblas_dgemm64_" in compile_function(function).llvm_ir) == gemm
    module = ModuleOp([function.clone()])
    lower_prim_to_loops(module)
    assert temporary_count(module) == (2 if gemm else 0)


@needs_blas
def test_matrix_vector_products_call_gemv() -> None:
    for layout in vector_layouts(128, 128).values():
        ir = compile_function(layout.function(np.float64)).llvm_ir
        assert ("scipy_cblas_dgemv64_" in ir) == (layout.lhs != layout.rhs)


@needs_blas
def test_below_threshold_stays_a_loop_nest() -> None:
    function = layouts(CUBE - 2, CUBE, CUBE)["nn (x @ w1)"].function(np.float64)
    assert "cblas" not in compile_function(function).llvm_ir


def test_transpose_with_another_use_is_kept() -> None:
    def body(x: SSAValue, y: SSAValue):
        xt = prim.TransposeOp(x, [1, 0])
        dot = prim.DotGeneralOp(xt, y, lhs_contract=[1], rhs_contract=[0])
        return [dot, xt]

    check(build([tensor((40, 48)), tensor((40, 64))], body))


def test_transposed_result_feeding_another_product() -> None:
    """The transpose written by one gemm is read (not looked through) by the next."""

    def body(x: SSAValue, y: SSAValue):
        first = prim.DotGeneralOp(x, y, lhs_contract=[0], rhs_contract=[0])
        flipped = prim.TransposeOp(first, [1, 0])
        return prim.DotGeneralOp(flipped, x, lhs_contract=[1], rhs_contract=[1])

    check(build([tensor((40, 48)), tensor((40, 36))], body))


@needs_blas
def test_mlp_gradient_products_all_run_on_blas() -> None:
    """Every dot_general of the compiled MLP gradient is a BLAS call, every transpose folded."""
    import tidu_mlir as td
    import tidu_mlir.numpy as tnp
    from tidu_mlir import api

    def loss(x, y, w1, w2):
        return tnp.mean((tnp.tanh(x @ w1) @ w2 - y) ** 2)

    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s) for s in ((128, 96), (128, 10), (96, 64), (64, 10))]
    grad = td.grad(loss, argnums=(2, 3))
    function = api._stage_primal(grad, api._specs(args)).func  # pyright: ignore[reportPrivateUsage]
    ops = list(function.body.block.ops)
    products = blas.plan_products(ops)
    folded = {t for p in products.values() for t in p.transposes}
    assert set(products) == {op for op in ops if isinstance(op, prim.DotGeneralOp)}
    assert folded == {op for op in ops if isinstance(op, prim.TransposeOp)}
    got = td.jit(grad)(*args)
    expected = numpy_mlp_grad(*args)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


def numpy_mlp_grad(x, y, w1, w2):
    hidden = np.tanh(x @ w1)
    d_out = 2.0 * (hidden @ w2 - y) / y.size
    return x.T @ ((d_out @ w2.T) * (1.0 - hidden**2)), hidden.T @ d_out
