"""cholesky, triangular_solve and lu compiled to LAPACK/CBLAS calls (lapack.py):
against the evaluator (numpy) for every element type, batched and not; a
matrix that is not positive definite gives NaNs, a singular one a zero pivot."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tidu_mlir.dialects import prim
from tidu_mlir.lowering.lapack import lapack_symbols
from tidu_mlir.lowering.runtime import compile_function

from .oracle import build, check, random_array, tensor

pytestmark = pytest.mark.skipif(not lapack_symbols(), reason="numpy's OpenBLAS not found")

DTYPES = [np.float64, np.float32, np.complex128, np.complex64]
SHAPES = [(4, 4), (3, 5, 5), (2, 2, 3, 3)]


def _random(shape: tuple[int, ...], dtype: type, seed: int = 0) -> np.ndarray:
    """Uniform in [-1, 1] (both parts of a complex number)."""
    return random_array(tensor(shape, dtype), np.random.default_rng(seed), -1.0, 1.0)


def _positive_definite(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    a = _random(shape, dtype)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dtype)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_cholesky(dtype: type, shape: tuple[int, ...]) -> None:
    a = _positive_definite(shape, dtype)
    (factor,) = check(build([tensor(shape, dtype)], prim.CholeskyOp), [a])
    rebuilt = factor @ np.conj(np.swapaxes(factor, -1, -2))
    np.testing.assert_allclose(
        rebuilt, a, rtol=1e-4 if np.real(factor).dtype == np.float32 else 1e-12
    )


def test_cholesky_not_positive_definite_gives_nans_in_that_matrix_only() -> None:
    a = _positive_definite((3, 4, 4), np.float64)
    a[1, 2, 2] = -50.0
    factor = compile_function(build([tensor(a.shape)], prim.CholeskyOp))(a)
    assert np.isnan(factor[1]).all() and np.isfinite(factor[[0, 2]]).all()


FLAGS = [
    dict(zip(("lower", "transpose_a", "conjugate_a", "unit_diagonal"), combo, strict=True))
    for combo in itertools.product([False, True], repeat=4)
    if combo[1] or not combo[2]
]


@pytest.mark.parametrize("flags", FLAGS, ids=lambda f: "-".join(k for k, v in f.items() if v))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_triangular_solve(dtype: type, flags: dict[str, bool]) -> None:
    a = (_random((2, 4, 4), dtype, 1) + 4 * np.eye(4)).astype(dtype)
    b = _random((2, 4, 3), dtype, 2)
    types = [tensor(a.shape, dtype), tensor(b.shape, dtype)]
    check(build(types, lambda a, b: prim.TriangularSolveOp.from_flags(a, b, flags)), [a, b])


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_lu(dtype: type, shape: tuple[int, ...]) -> None:
    a = _random(shape, dtype, 3)
    lu, pivots, permutation = check(
        build([tensor(shape, dtype)], lambda a: prim.LuOp(a).results), [a]
    )
    n = shape[-1]
    lower = np.tril(lu, -1) + np.eye(n)
    upper = np.triu(lu)
    permuted = np.take_along_axis(a, permutation[..., None].astype(np.int64), axis=-2)
    tolerance = 1e-4 if np.real(lu).dtype == np.float32 else 1e-12
    np.testing.assert_allclose(lower @ upper, permuted, atol=tolerance)
    assert pivots.dtype == permutation.dtype == np.int32


def test_lu_of_a_singular_matrix_has_a_zero_pivot() -> None:
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    lu, _, _ = compile_function(build([tensor(a.shape)], lambda a: prim.LuOp(a).results))(a)
    assert np.count_nonzero(np.diag(lu) == 0.0) == 1


def test_large_lu_matches_scipy() -> None:
    scipy_linalg = pytest.importorskip("scipy.linalg")
    a = _random((300, 300), np.float64, 4)
    lu, pivots, _ = compile_function(build([tensor(a.shape)], lambda a: prim.LuOp(a).results))(a)
    expected_lu, expected_pivots = scipy_linalg.lu_factor(a)
    np.testing.assert_allclose(lu, expected_lu, atol=1e-10)
    np.testing.assert_array_equal(pivots, expected_pivots)
