"""AD rules of cholesky, triangular_solve, lu, qr, eigh and svd: JVP vs finite
differences, the adjoint identity of triangular_solve's transpose, linearity of
every derived fragment and higher order (prim_harness.check_derivatives), on
small matrices, batched and not, real and complex; eigenvectors and singular
vectors through functions blind to their signs and phases."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tidu_mlir import ad
from tidu_mlir.dialects import prim

from .prim_harness import build, check_derivatives, primal_env, run

DTYPES = [np.float64, np.complex128, np.float32]


def _dtype_id(dtype: type) -> str:
    return np.dtype(dtype).name


def _random(shape: tuple[int, ...], dtype: type, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.uniform(-1.0, 1.0, shape)
    if np.issubdtype(dtype, np.complexfloating):
        values = values + 1j * rng.uniform(-1.0, 1.0, shape)
    return values.astype(dtype)


def _well_conditioned(shape: tuple[int, ...], dtype: type, seed: int = 0) -> np.ndarray:
    """A random matrix (batch) plus a multiple of the identity: far from singular."""
    return (_random(shape, dtype, seed) + 3.0 * np.eye(shape[-1])).astype(dtype)


def _positive_definite(shape: tuple[int, ...], dtype: type, seed: int = 0) -> np.ndarray:
    a = _random(shape, dtype, seed)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=_dtype_id)
@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3)], ids=["matrix", "batch"])
def test_cholesky(shape: tuple[int, ...], dtype: type) -> None:
    a = _positive_definite(shape, dtype)
    check_derivatives(lambda b, a: b(prim.CholeskyOp(a)), [a], higher=len(shape) == 2)


FLAGS = [
    dict(zip(("lower", "transpose_a", "conjugate_a", "unit_diagonal"), combo, strict=True))
    for combo in itertools.product([False, True], repeat=4)
    if combo[1] or not combo[2]
]


@pytest.mark.parametrize("flags", FLAGS, ids=lambda f: "-".join(k for k, v in f.items() if v))
@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=_dtype_id)
def test_triangular_solve(flags: dict[str, bool], dtype: type) -> None:
    a = _well_conditioned((3, 3), dtype, 1)
    b = _random((3, 2), dtype, 2)
    check_derivatives(lambda e, a, b: e(prim.TriangularSolveOp.from_flags(a, b, flags)), [a, b])


@pytest.mark.parametrize("dtype", DTYPES, ids=_dtype_id)
def test_triangular_solve_batched_and_linear_in_b(dtype: type) -> None:
    a = _well_conditioned((2, 3, 3), dtype, 1)
    b = _random((2, 3, 4), dtype, 2)
    check_derivatives(lambda e, a, b: e(prim.TriangularSolveOp(a, b, lower=True)), [a, b])
    # Linear in b alone (a constant): the transpose's adjoint identity.
    check_derivatives(
        lambda e, b: e(
            prim.TriangularSolveOp(e(prim.ConstantOp.from_value(a)), b, transpose_a=True)
        ),
        [b],
    )


@pytest.mark.parametrize("dtype", DTYPES, ids=_dtype_id)
@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3)], ids=["matrix", "batch"])
def test_lu(shape: tuple[int, ...], dtype: type) -> None:
    a = _random(shape, dtype, 3)
    check_derivatives(lambda b, a: b(prim.LuOp(a)), [a], higher=len(shape) == 2)


def test_integer_results_have_no_tangent() -> None:
    a = _random((3, 3), np.float64)

    def body(b, a):
        b(lu := prim.LuOp(a))
        return [lu.pivots, lu.permutation]

    _, graph = build(body, [a])
    lin = ad.linearize(graph, wrt=["x0"])
    assert lin.tangent_outputs == [None, None]


def test_cholesky_jvp_closed_form() -> None:
    """d(L Lᴴ) = dA for a symmetric tangent: the factor's tangent rebuilds it."""
    a = _positive_definite((4, 4), np.float64)
    da = _random((4, 4), np.float64, 5)
    da = da + da.T
    _, graph = build(lambda b, a: b(prim.CholeskyOp(a)), [a])
    lin = ad.linearize(graph, wrt=["x0"])
    env = {**primal_env([a]), lin.tangent_inputs[0][0]: da}
    (dl,) = run(lin.fragment, env)
    (factor,) = run(graph, primal_env([a]))
    np.testing.assert_allclose(dl @ factor.T + factor @ dl.T, da, atol=1e-12)
    assert np.allclose(np.triu(dl, 1), 0.0)


QR_CASES = [
    ((4, 3), False), ((4, 3), True), ((3, 3), True), ((3, 5), False), ((3, 5), True),
    ((2, 4, 3), False), ((2, 4, 2), True),
]  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES, ids=_dtype_id)
@pytest.mark.parametrize(("shape", "full_matrices"), QR_CASES, ids=str)
def test_qr(shape: tuple[int, ...], full_matrices: bool, dtype: type) -> None:
    diagonal = 2.0 * np.eye(shape[-2], shape[-1])  # far from rank-deficient at f32's h = 0.03
    a = (_random(shape, dtype, 4) + diagonal).astype(dtype)

    def body(b, a):
        b(qr := prim.QrOp(a, full_matrices=full_matrices))
        return [qr.q, qr.r]

    check_derivatives(body, [a], higher=len(shape) == 2)


def _eigh_gauge_free(b, a):
    """eigh's eigenvalues and `V ∘ conj(V)`: each eigenvector is defined up to a
    sign or phase, which LAPACK may flip between finite-difference steps."""
    b(eigh := prim.EighOp(a))
    vectors = eigh.eigenvectors
    return [eigh.eigenvalues, b(prim.MulOp(vectors, b(prim.ConjOp(vectors))))]


@pytest.mark.parametrize("dtype", DTYPES, ids=_dtype_id)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)], ids=["matrix", "batch"])
def test_eigh(shape: tuple[int, ...], dtype: type) -> None:
    spread = 3.0 * np.diag(np.arange(shape[-1]))  # eigenvalue gaps >> f32's h = 0.03
    a = (_random(shape, dtype, 6) + spread).astype(dtype)  # lower triangle read: not symmetric
    check_derivatives(_eigh_gauge_free, [a], higher=len(shape) == 2)


def test_eigh_jvp_closed_form_and_degenerate_eigenvalues() -> None:
    """dw = diag(Vᵀ dA V); with a repeated eigenvalue the eigenvector tangents
    are infinite where the gap is 0 (JAX's), the eigenvalue tangents finite."""
    a = _positive_definite((3, 3), np.float64)
    da = _random((3, 3), np.float64, 7)
    da = np.tril(da) + np.tril(da, -1).T
    for matrix, finite_vectors in ((a, True), (np.diag([1.0, 1.0, 2.0]), False)):
        _, graph = build(lambda b, a: list(b(eigh := prim.EighOp(a)) and eigh.results), [matrix])
        lin = ad.linearize(graph, wrt=["x0"])
        env = {**primal_env([matrix]), lin.tangent_inputs[0][0]: da}
        with np.errstate(divide="ignore", invalid="ignore"):
            dw, dv = run(lin.fragment, env)
        _, v = np.linalg.eigh(matrix)
        np.testing.assert_allclose(dw, np.diag(v.T @ da @ v), atol=1e-12)
        assert np.isfinite(dv).all() == finite_vectors


def _svd_gauge_free(full_matrices: bool):
    """svd's `s`, `U ∘ conj(U)` and `U diag(1, 2, ...) Vh`: each pair of singular
    vectors is defined up to a common sign or phase, which LAPACK may flip
    between finite-difference steps; the last one checks their coupling."""

    def body(b, a):
        b(svd := prim.SvdOp(a, full_matrices=full_matrices))
        u, vh = svd.u, svd.vh
        shape = prim.shape_of(u)
        weights = np.broadcast_to(np.arange(1.0, shape[-1] + 1.0), shape)
        weighted = b(prim.MulOp(u, b.const(weights, u)))
        batch = range(len(shape) - 2)
        rank = len(shape)
        coupled = b(
            prim.DotGeneralOp(
                weighted, vh, lhs_batch=batch, rhs_batch=batch,
                lhs_contract=[rank - 1], rhs_contract=[rank - 2],
            )
        )  # fmt: skip
        return [svd.s, b(prim.MulOp(u, b(prim.ConjOp(u)))), coupled]

    return body


SVD_CASES = [((4, 3), False), ((3, 3), True), ((3, 4), False), ((2, 4, 3), False)]


@pytest.mark.parametrize("dtype", DTYPES, ids=_dtype_id)
@pytest.mark.parametrize(("shape", "full_matrices"), SVD_CASES, ids=str)
def test_svd(shape: tuple[int, ...], full_matrices: bool, dtype: type) -> None:
    m, n = shape[-2:]
    spread = 3.0 * np.eye(m, n) * np.arange(1, n + 1)  # singular value gaps >> f32's h
    a = (_random(shape, dtype, 8) + spread).astype(dtype)
    check_derivatives(_svd_gauge_free(full_matrices), [a], higher=len(shape) == 2)


def test_svd_full_matrices_of_a_non_square_matrix_has_no_derivative() -> None:
    _, graph = build(lambda b, a: b(prim.SvdOp(a, full_matrices=True)), [_random((4, 3), float)])
    with pytest.raises(ad.ADRuleError, match=r"prim\.svd.*m != n"):
        ad.linearize(graph, wrt=["x0"])
