"""cholesky, triangular_solve, lu, qr, eigh and svd compiled to LAPACK/CBLAS
calls (lapack.py): against the evaluator (numpy) for every element type,
batched and not (eigh and svd by their defining identities: the signs of their
vectors are LAPACK's choice); a matrix that is not positive definite gives
NaNs, a singular one a zero pivot, NaNs in the input NaNs out."""

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


@pytest.mark.parametrize("columns", [3, 1], ids=["trsm", "trsv"])
@pytest.mark.parametrize("flags", FLAGS, ids=lambda f: "-".join(k for k, v in f.items() if v))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_triangular_solve(dtype: type, flags: dict[str, bool], columns: int) -> None:
    a = (_random((2, 4, 4), dtype, 1) + 4 * np.eye(4)).astype(dtype)
    b = _random((2, 4, columns), dtype, 2)
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


QR_SHAPES = [((5, 3), False), ((5, 3), True), ((3, 5), False), ((2, 4, 4), True), ((2, 3, 5), True)]


@pytest.mark.parametrize(("shape", "full_matrices"), QR_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_qr(dtype: type, shape: tuple[int, ...], full_matrices: bool) -> None:
    a = _random(shape, dtype, 5)
    q, r = check(
        build([tensor(shape, dtype)], lambda a: prim.QrOp(a, full_matrices=full_matrices).results),
        [a],
    )  # numpy's qr: the same LAPACK, the same signs
    tolerance = 1e-4 if np.real(q).dtype == np.float32 else 1e-12
    np.testing.assert_allclose(q @ r, a, atol=tolerance)
    assert np.array_equal(np.triu(r), r)


def test_qr_of_nans_is_nans() -> None:
    a = np.full((3, 2), np.nan)
    q, r = compile_function(build([tensor(a.shape)], lambda a: prim.QrOp(a).results))(a)
    assert np.isnan(q).all() and np.isnan(r).all()


@pytest.mark.parametrize("shape", [(4, 4), (3, 5, 5)], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_eigh(dtype: type, shape: tuple[int, ...]) -> None:
    a = _random(shape, dtype, 6)  # not Hermitian: the lower triangle is read
    graph = build([tensor(shape, dtype)], lambda a: prim.EighOp(a).results)
    values, vectors = compile_function(graph)(a)  # the eigenvectors' signs may differ from numpy's
    lower = np.tril(a, -1)
    hermitian = lower + np.conj(np.swapaxes(lower, -1, -2)) + np.real(a) * np.eye(shape[-1])
    tolerance = 1e-4 if values.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(values, np.linalg.eigvalsh(hermitian), atol=tolerance)
    rebuilt = (vectors * values[..., None, :]) @ np.conj(np.swapaxes(vectors, -1, -2))
    np.testing.assert_allclose(rebuilt, hermitian, atol=tolerance)
    assert values.dtype == np.real(a).dtype and (np.diff(values) >= 0).all()


def test_eigh_of_nans_is_nans_in_that_matrix_only() -> None:
    a = _random((2, 3, 3), np.float64, 7)
    a[1, 2, 0] = np.nan
    values, vectors = compile_function(build([tensor(a.shape)], lambda a: prim.EighOp(a).results))(
        a
    )
    assert np.isnan(values[1]).all() and np.isnan(vectors[1]).all()
    assert np.isfinite(values[0]).all() and np.isfinite(vectors[0]).all()


SVD_SHAPES = [((5, 3), False), ((5, 3), True), ((3, 5), True), ((2, 4, 4), False)]


@pytest.mark.parametrize(("shape", "full_matrices"), SVD_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_svd(dtype: type, shape: tuple[int, ...], full_matrices: bool) -> None:
    a = _random(shape, dtype, 8)
    graph = build(
        [tensor(shape, dtype)], lambda a: prim.SvdOp(a, full_matrices=full_matrices).results
    )
    u, s, vh = compile_function(graph)(a)  # the singular vectors' signs may differ from numpy's
    tolerance = 1e-4 if s.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), atol=tolerance)
    k = s.shape[-1]
    rebuilt = (u[..., :k] * s[..., None, :]) @ vh[..., :k, :]
    np.testing.assert_allclose(rebuilt, a, atol=tolerance)
    for unitary in (u, np.swapaxes(vh, -1, -2)):
        gram = np.conj(np.swapaxes(unitary, -1, -2)) @ unitary
        np.testing.assert_allclose(gram, np.eye(unitary.shape[-1]) + 0 * gram, atol=tolerance)
    assert s.dtype == np.real(a).dtype and u.shape[-1] == (shape[-2] if full_matrices else k)


def test_svd_of_nans_is_nans() -> None:
    a = np.full((3, 2), np.nan)
    results = compile_function(build([tensor(a.shape)], lambda a: prim.SvdOp(a).results))(a)
    assert all(np.isnan(r).all() for r in results)
