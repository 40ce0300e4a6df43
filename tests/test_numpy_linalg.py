"""`tnp.linalg` (solve, inv, det, slogdet, cholesky, qr, eigh, eigvalsh, svd,
pinv, lstsq, matrix_power, the singular-value norms) and `td.scipy.linalg`
(solve_triangular, cho_factor/cho_solve, lu_factor/lu_solve, expm): values against
numpy and SciPy, compiled and concrete, batched, f32 and complex128; gradients
against finite differences and JAX (each skipped without it); LinAlgError at
run time for singular and indefinite matrices, shape errors at trace time."""

from __future__ import annotations

import inspect
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tidu_mlir as td
import tidu_mlir.numpy as tnp
from tidu_mlir.eager import tensor

RNG = np.random.default_rng(11)


def _random(shape: tuple[int, ...], dtype: Any = np.float64) -> np.ndarray:
    values = RNG.uniform(-1.0, 1.0, shape)
    if np.issubdtype(dtype, np.complexfloating):
        values = values + 1j * RNG.uniform(-1.0, 1.0, shape)
    return values.astype(dtype)


def _matrix(shape: tuple[int, ...], dtype: Any = np.float64) -> np.ndarray:
    """Well conditioned (a random matrix plus 3·I)."""
    return (_random(shape, dtype) + 3.0 * np.eye(shape[-1])).astype(dtype)


def _spd(shape: tuple[int, ...], dtype: Any = np.float64) -> np.ndarray:
    a = _random(shape, dtype)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def _tolerance(dtype: Any) -> float:
    return 1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


DTYPES = [np.float64, np.float32, np.complex128]
CASES = [((4, 4), (4,)), ((4, 4), (4, 2)), ((3, 4, 4), (3, 4, 2)), ((2, 1, 3, 3), (5, 3, 1))]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(("a_shape", "b_shape"), CASES, ids=str)
def test_solve_and_inv_match_numpy(a_shape: tuple, b_shape: tuple, dtype: Any) -> None:
    a, b = _matrix(a_shape, dtype), _random(b_shape, dtype)
    tol = _tolerance(dtype)
    np.testing.assert_allclose(td.jit(tnp.linalg.solve)(a, b), np.linalg.solve(a, b), rtol=tol)
    np.testing.assert_allclose(td.jit(tnp.linalg.inv)(a), np.linalg.inv(a), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_det_slogdet_cholesky_match_numpy(dtype: Any) -> None:
    a, spd = _matrix((2, 4, 4), dtype), _spd((2, 4, 4), dtype)
    tol = _tolerance(dtype)
    np.testing.assert_allclose(td.jit(tnp.linalg.det)(a), np.linalg.det(a), rtol=tol)
    sign, logdet = td.jit(tnp.linalg.slogdet)(a)
    expected_sign, expected_logdet = np.linalg.slogdet(a)
    np.testing.assert_allclose(sign, expected_sign, rtol=tol)
    np.testing.assert_allclose(logdet, expected_logdet, rtol=tol)
    np.testing.assert_allclose(
        td.jit(tnp.linalg.cholesky)(spd), np.linalg.cholesky(spd), rtol=tol, atol=tol
    )


@pytest.mark.parametrize("dtype", [*DTYPES, np.complex64], ids=lambda d: np.dtype(d).name)
def test_qr_matches_numpy_in_every_mode(dtype: Any) -> None:
    tall, wide = _random((2, 5, 3), dtype), _random((3, 4), dtype)
    modes = ("reduced", "complete", "r")

    def every_mode(tall: Any, wide: Any) -> list[Any]:
        return [tnp.linalg.qr(x, mode=mode) for x in (tall, wide) for mode in modes]

    tol = _tolerance(dtype)
    for got, expected in zip(td.jit(every_mode)(tall, wide), every_mode(tall, wide), strict=True):
        for g, e in zip(
            *(x if isinstance(x, tuple) else (x,) for x in (got, expected)), strict=True
        ):
            assert g.dtype == e.dtype
            np.testing.assert_allclose(g, e, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [*DTYPES, np.complex64], ids=lambda d: np.dtype(d).name)
def test_eigh_and_eigvalsh_match_numpy(dtype: Any) -> None:
    a = _random((2, 4, 4), dtype)
    hermitian = (a + np.conj(np.swapaxes(a, -1, -2))) / 2
    (w, v), values = td.jit(lambda a: (tnp.linalg.eigh(a), tnp.linalg.eigvalsh(a, UPLO="U")))(a)
    tol = _tolerance(dtype)
    expected = np.linalg.eigvalsh(hermitian)
    np.testing.assert_allclose(w, expected, rtol=tol, atol=tol)
    np.testing.assert_allclose(values, expected, rtol=tol, atol=tol)
    assert w.dtype == expected.dtype and v.dtype == a.dtype
    rebuilt = (v * w[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2))
    np.testing.assert_allclose(rebuilt, hermitian, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [*DTYPES, np.complex64], ids=lambda d: np.dtype(d).name)
def test_svd_matches_numpy(dtype: Any) -> None:
    tall, wide = _random((2, 5, 3), dtype), _random((3, 4), dtype)

    def every_mode(tall: Any, wide: Any) -> list[Any]:
        return [
            tnp.linalg.svd(tall),
            tnp.linalg.svd(wide, full_matrices=False),
            tnp.linalg.svd(wide, compute_uv=False),
        ]

    (u, s, vh), (u2, s2, vh2), values = td.jit(every_mode)(tall, wide)
    tol = _tolerance(dtype)
    np.testing.assert_allclose(s, np.linalg.svd(tall, compute_uv=False), rtol=tol, atol=tol)
    np.testing.assert_allclose(values, np.linalg.svd(wide, compute_uv=False), rtol=tol, atol=tol)
    np.testing.assert_allclose(s2, values, rtol=tol, atol=tol)
    assert (u.shape, vh.shape, u2.shape, vh2.shape) == ((2, 5, 5), (2, 3, 3), (3, 3), (3, 4))
    assert s.dtype == np.real(tall).dtype and u.dtype == tall.dtype
    np.testing.assert_allclose((u[..., :3] * s[..., None, :]) @ vh, tall, rtol=tol, atol=tol)
    np.testing.assert_allclose((u2 * s2) @ vh2, wide, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=lambda d: np.dtype(d).name)
def test_composites_match_numpy(dtype: Any) -> None:
    tall, square = _random((2, 5, 3), dtype), _matrix((3, 3), dtype)
    deficient = np.outer(_random((4,), dtype), _random((3,), dtype))  # rank 1
    rhs, columns = _random((5,), dtype), _random((4, 2), dtype)

    def composites(np_: Any) -> Callable[..., list[Any]]:
        return lambda tall, square, deficient, rhs, columns: [
            np_.linalg.pinv(tall),
            np_.linalg.pinv(deficient, rtol=None),
            np_.linalg.pinv(tall, rcond=0.5),
            *np_.linalg.lstsq(tall[0], rhs),
            *np_.linalg.lstsq(deficient, columns),
            *np_.linalg.lstsq(deficient.T, columns[:3], rcond=1e-10),
            *(np_.linalg.matrix_power(square, k) for k in (1, 4, -1, -3, 0)),
            *(np_.linalg.norm(tall, order, axis=(2, 0)) for order in (2, -2, "nuc")),
            np_.linalg.norm(square, 2, keepdims=True),
        ]

    arguments = (tall, square, deficient, rhs, columns)
    got = td.jit(composites(tnp))(*arguments)
    expected = composites(np)(*arguments)
    got[8] = got[8][:0]  # lstsq's residuals of a rank-deficient tall matrix: numpy's are empty
    for index, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert np.shape(g) == np.shape(e) and np.asarray(g).dtype == np.asarray(e).dtype, index
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12, err_msg=str(index))


def test_vmap_of_the_spectral_functions_and_expm() -> None:
    scipy_linalg = pytest.importorskip("scipy.linalg")
    a = _random((3, 4, 4))

    def spectral(a: Any) -> list[Any]:
        return [
            tnp.linalg.svd(a, compute_uv=False),
            tnp.linalg.eigvalsh(a),
            tnp.linalg.qr(a)[1],
            td.scipy.linalg.expm(a),
        ]

    got = td.vmap(spectral)(a)
    hermitian = (a + np.swapaxes(a, -1, -2)) / 2
    expected = [
        np.linalg.svd(a, compute_uv=False),
        np.linalg.eigvalsh(hermitian),
        np.linalg.qr(a)[1],
        scipy_linalg.expm(a),
    ]
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


def test_concrete_arrays_run_numpy() -> None:
    a = _matrix((3, 3))
    assert np.array_equal(tnp.linalg.inv(a), np.linalg.inv(a))


def test_singular_and_indefinite_matrices_raise_linalg_error() -> None:
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    for fn in (
        tnp.linalg.solve,
        lambda a, b: td.scipy.linalg.lu_solve(td.scipy.linalg.lu_factor(a), b),
    ):
        with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
            td.jit(fn)(singular, np.ones(2))
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        td.jit(tnp.linalg.inv)(singular)
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        td.jit(tnp.linalg.cholesky)(-np.eye(3))
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        td.grad(lambda a: tnp.sum(tnp.linalg.cholesky(a)))(-np.eye(3))
    with pytest.raises(
        np.linalg.LinAlgError, match="Singular matrix"
    ):  # concrete: the evaluator's check
        td.scipy.linalg.lu_solve(td.scipy.linalg.lu_factor(singular), np.ones(2))
    assert td.jit(tnp.linalg.det)(singular) == 0.0  # numpy: no error
    sign, logdet = td.jit(tnp.linalg.slogdet)(singular)
    assert sign == 0.0 and logdet == -np.inf
    np.testing.assert_allclose(td.jit(tnp.linalg.solve)(np.eye(2), np.ones(2)), np.ones(2))


def test_shape_errors_name_the_shapes() -> None:
    with pytest.raises(np.linalg.LinAlgError, match=r"square, got shape \(2, 3\)"):
        td.jit(tnp.linalg.inv)(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"b of shape \(4,\) does not match a of shape \(3, 3\)"):
        td.jit(tnp.linalg.solve)(np.eye(3), np.ones(4))
    with pytest.raises(np.linalg.LinAlgError, match="SVD did not converge"):
        td.jit(lambda a: tnp.linalg.svd(a, compute_uv=False))(np.full((3, 2), np.nan))
    with pytest.raises(np.linalg.LinAlgError, match="Eigenvalues did not converge"):
        td.jit(tnp.linalg.eigh)(np.full((2, 3, 3), np.nan))
    with pytest.raises(np.linalg.LinAlgError, match=r"eigh: .* square, got shape \(2, 3\)"):
        td.jit(tnp.linalg.eigvalsh)(np.ones((2, 3)))
    with pytest.raises(ValueError, match="UPLO argument must be 'L' or 'U'"):
        td.jit(lambda a: tnp.linalg.eigh(a, UPLO="X"))(np.eye(2))
    with pytest.raises(np.linalg.LinAlgError, match=r"lstsq: a must be two-dimensional"):
        td.jit(tnp.linalg.lstsq)(np.ones((2, 3, 3)), np.ones(3))
    with pytest.raises(np.linalg.LinAlgError, match=r"lstsq: incompatible dimensions"):
        td.jit(tnp.linalg.lstsq)(np.ones((3, 2)), np.ones(2))
    with pytest.raises(ValueError, match="pinv: `rtol` and `rcond` can't be both set"):
        td.jit(lambda a: tnp.linalg.pinv(a, 1e-3, rtol=1e-3))(np.eye(2))
    with pytest.raises(TypeError, match="matrix_power: exponent must be an integer"):
        td.jit(lambda a: tnp.linalg.matrix_power(a, 1.5))(np.eye(2))  # pyright: ignore[reportArgumentType]
    with pytest.raises(np.linalg.LinAlgError, match=r"matrix_power: .* square, got shape"):
        td.jit(lambda a: tnp.linalg.matrix_power(a, 2))(np.ones((2, 3)))
    with pytest.raises(ValueError, match="Invalid norm order 'x' for matrices"):
        td.jit(lambda a: tnp.linalg.norm(a, "x"))(np.eye(2))
    with pytest.raises(np.linalg.LinAlgError, match=r"qr: 1-dimensional .* shape \(3,\)"):
        td.jit(tnp.linalg.qr)(np.ones(3))
    with pytest.raises(ValueError, match="qr: unrecognized mode 'full'"):
        td.jit(lambda a: tnp.linalg.qr(a, mode="full"))(np.eye(3))


# --------------------------------------------------------------------------
# td.scipy.linalg
# --------------------------------------------------------------------------


@pytest.mark.parametrize("trans", [0, 1, 2])
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=lambda d: np.dtype(d).name)
def test_scipy_solves_match_scipy(trans: int, lower: bool, dtype: Any) -> None:
    scipy_linalg = pytest.importorskip("scipy.linalg")
    linalg = td.scipy.linalg
    a, b, spd = _matrix((4, 4), dtype), _random((4, 2), dtype), _spd((4, 4), dtype)
    expected = scipy_linalg.solve_triangular(a, b, trans=trans, lower=lower)
    solve = td.jit(lambda a, b: linalg.solve_triangular(a, b, trans=trans, lower=lower))
    np.testing.assert_allclose(solve(a, b), expected, rtol=1e-10)
    expected = scipy_linalg.lu_solve(scipy_linalg.lu_factor(a), b[:, 0], trans=trans)
    solve = td.jit(lambda a, b: linalg.lu_solve(linalg.lu_factor(a), b, trans=trans))
    np.testing.assert_allclose(solve(a, b[:, 0]), expected, rtol=1e-10)
    solve = td.jit(lambda a, b: linalg.cho_solve(linalg.cho_factor(a, lower=lower), b))
    np.testing.assert_allclose(solve(spd, b), np.linalg.solve(spd, b), rtol=1e-10)
    lu, piv = td.jit(linalg.lu_factor)(a)
    expected_lu, expected_piv = scipy_linalg.lu_factor(a)
    np.testing.assert_allclose(lu, expected_lu, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(piv, expected_piv)


def test_scipy_functions_on_concrete_and_batched_arrays() -> None:
    linalg = td.scipy.linalg
    a, b = _matrix((3, 4, 4)), _random((3, 4, 2))
    expected = np.linalg.solve(a, b)
    np.testing.assert_allclose(linalg.lu_solve(linalg.lu_factor(a), b), expected, rtol=1e-10)
    batched = td.jit(lambda a, b: linalg.lu_solve(linalg.lu_factor(a), b))(a, b)
    np.testing.assert_allclose(batched, expected, rtol=1e-10)
    np.testing.assert_allclose(
        td.vmap(tnp.linalg.solve)(a, b[..., 0]), expected[..., 0], rtol=1e-10
    )


@pytest.mark.parametrize(
    "dtype", [np.float64, np.float32, np.complex128], ids=lambda d: np.dtype(d).name
)
def test_expm_matches_scipy(dtype: Any) -> None:
    scipy_linalg = pytest.importorskip("scipy.linalg")
    scales = np.array([0.01, 1.0, 10.0, 60.0])[:, None, None]  # 0 to 5 squarings
    a = (_random((4, 3, 3), dtype) * scales).astype(dtype)
    got = td.jit(td.scipy.linalg.expm)(a)
    expected = scipy_linalg.expm(a)
    assert got.dtype == expected.dtype
    scale = np.abs(expected).max(axis=(-2, -1), keepdims=True)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got / scale, expected / scale, atol=tol)
    np.testing.assert_allclose(td.scipy.linalg.expm(a) / scale, expected / scale, atol=tol)
    strange = np.array(
        [[[np.inf, 0.0], [0.0, 1.0]], [[1e6, 0.0], [0.0, 1.0]], [[0.0, 1.0], [0.0, 0.0]]]
    )
    got = td.jit(td.scipy.linalg.expm)(strange)  # not finite, too many squarings, nilpotent
    assert np.isnan(got[:2]).all()
    np.testing.assert_allclose(got[2], [[1.0, 1.0], [0.0, 1.0]], atol=1e-15)


def test_expm_derivatives_match_finite_differences() -> None:
    """Both modes through the squaring loop (its trip count a run-time value);
    JAX's gradient agrees to 1e-15 (not compared here: its expm compiles slowly)."""
    a, direction, weights = _random((2, 3, 3)) * 3.0, _random((2, 3, 3)), _random((2, 3, 3))
    loss = lambda a: tnp.sum(td.scipy.linalg.expm(a) * weights)  # noqa: E731
    grad = td.grad(loss)(a)
    _, tangent = td.jvp(td.scipy.linalg.expm, (a,), (direction,))
    h = 1e-5
    numeric = (loss(a + h * direction) - loss(a - h * direction)) / (2 * h)
    np.testing.assert_allclose(np.vdot(grad, direction), numeric, rtol=1e-7)
    np.testing.assert_allclose(np.vdot(tangent, weights), numeric, rtol=1e-7)


# --------------------------------------------------------------------------
# Gradients: closed forms, finite differences, JAX
# --------------------------------------------------------------------------


def _mH(a: Any) -> Any:
    """The conjugate transpose of a square matrix (tnp or jnp)."""
    return a.T.conj()


def _gauge_free(v: Any) -> Any:
    """`v ∘ conj(v)`: eigenvectors up to their sign or phase."""
    return v * v.conj()


FUNCTIONS = {
    "solve": lambda b: lambda a: tnp.linalg.solve(a, b),
    "inv": lambda b: tnp.linalg.inv,
    "det": lambda b: tnp.linalg.det,
    "logdet": lambda b: lambda a: tnp.linalg.slogdet(a)[1],
    "cholesky": lambda b: lambda a: tnp.linalg.cholesky(a @ tnp.conj(tnp.swapaxes(a, -1, -2))),
    "lu_solve": lambda b: lambda a: td.scipy.linalg.lu_solve(td.scipy.linalg.lu_factor(a), b),
    "solve_triangular": lambda b: lambda a: td.scipy.linalg.solve_triangular(a, b, lower=True),
    "qr_q": lambda b: lambda a: tnp.linalg.qr(a)[0],
    "qr_r": lambda b: lambda a: tnp.linalg.qr(a, mode="r"),
    "eigvalsh": lambda b: lambda a: tnp.linalg.eigvalsh(a + _mH(a)),
    "eigh_v": lambda b: lambda a: tnp.real(_gauge_free(tnp.linalg.eigh(a + _mH(a))[1])),
}


def _all_of(b: np.ndarray, names: Sequence[str] = tuple(FUNCTIONS)) -> Callable[[Any], list[Any]]:
    """The functions `names` of `FUNCTIONS` at `a` (one compilation for all)."""
    return lambda a: [FUNCTIONS[name](b)(a) for name in names]


def _weighted(fn: Callable[[Any], list[Any]]) -> Callable[[Any, list[Any]], Any]:
    """A real scalar of `a` and weights: `Re Σ weights · fn(a)`."""
    return lambda a, weights: sum(
        tnp.sum(tnp.real(y * w)) for y, w in zip(fn(a), weights, strict=True)
    )


@pytest.mark.parametrize(
    ("dtype", "names"),
    [
        (np.float64, tuple(FUNCTIONS)),
        (np.complex128, ("solve", "logdet", "cholesky", "qr_q", "eigvalsh", "eigh_v")),
    ],
    ids=["float64", "complex128"],
)  # the rules of every op and dtype: tests/ad/test_prim_linalg_rules.py
def test_gradients_match_finite_differences(dtype: Any, names: Sequence[str]) -> None:
    a, b = _matrix((3, 3), dtype), _random((3, 2), dtype)
    values = _all_of(b, names)(a)  # concrete: numpy's functions
    for name, got, value in zip(names, td.jit(_all_of(b, names))(a), values, strict=True):
        np.testing.assert_allclose(got, value, rtol=1e-10, atol=1e-12, err_msg=name)
    loss = _weighted(_all_of(b, names))
    grad = td.grad(loss)
    for index, name in enumerate(names):  # one function at a time, one compilation
        weights = [_random(np.shape(v), dtype) * (i == index) for i, v in enumerate(values)]
        direction = _random(a.shape, dtype)
        h = 1e-5
        numeric = (loss(a + h * direction, weights) - loss(a - h * direction, weights)) / (2 * h)
        got = np.real(np.vdot(grad(a, weights), direction))
        np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-8, err_msg=name)


def test_gradient_and_jvp_match_jax() -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    a, b = _matrix((3, 3)), _random((3, 2))
    jax_fns = [
        lambda a: jnp.linalg.solve(a, b),
        jnp.linalg.inv,
        jnp.linalg.det,
        lambda a: jnp.linalg.slogdet(a)[1],
        lambda a: jnp.linalg.cholesky(a @ a.T),
        lambda a: jax.scipy.linalg.lu_solve(jax.scipy.linalg.lu_factor(a), b),
        lambda a: jax.scipy.linalg.solve_triangular(a, b, lower=True),
        lambda a: jnp.linalg.qr(a)[0],
        lambda a: jnp.linalg.qr(a, mode="r"),
        lambda a: jnp.linalg.eigvalsh(a + _mH(a)),
        lambda a: jnp.real(_gauge_free(jnp.linalg.eigh(a + _mH(a))[1])),
    ]
    weights = [_random(np.shape(fn(a))) for fn in jax_fns]
    expected = jax.grad(
        lambda a: sum(jnp.sum(f(a) * w) for f, w in zip(jax_fns, weights, strict=True))
    )(a)
    np.testing.assert_allclose(td.grad(_weighted(_all_of(b)))(a, weights), expected, rtol=1e-9)
    direction = _random(a.shape)
    _, tangents = td.jvp(_all_of(b, ("solve", "cholesky")), (a,), (direction,))
    for fn, tangent in zip((jax_fns[0], jax_fns[4]), tangents, strict=True):
        _, expected_tangent = jax.jvp(fn, (a,), (direction,))
        np.testing.assert_allclose(tangent, expected_tangent, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    ("shape", "mode"),
    [((2, 5, 3), "reduced"), ((3, 5), "reduced"), ((4, 2), "complete")],
    ids=["tall-batch", "wide", "tall-complete"],
)
def test_qr_gradients_of_rectangular_matrices_match_jax(shape: tuple[int, ...], mode: str) -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    a, weights = _random(shape), _random(shape)

    def loss(np_: Any) -> Callable[[Any], Any]:
        def f(a: Any) -> Any:
            q, r = np_.linalg.qr(a, mode=mode)
            return np_.sum(q**3) + np_.sum(r * weights[..., : r.shape[-2], :])

        return f

    expected = jax.grad(loss(jax.numpy))(a)
    np.testing.assert_allclose(td.grad(loss(tnp))(a), expected, rtol=1e-9, atol=1e-12)


def _svd_loss(np_: Any) -> Callable[[Any], Any]:
    """A real function of all of svd's results, independent of the singular
    vectors' signs or phases (tnp or jnp)."""

    def f(a: Any) -> Any:
        u, s, vh = np_.linalg.svd(a, full_matrices=False)
        coupled = (u * np_.arange(1.0, s.shape[-1] + 1.0)) @ vh
        return np_.sum(s**3) + np_.sum(np_.real(coupled) ** 2)

    return f


def _composites_loss(np_: Any) -> Callable[[Any], Any]:
    """A real function of a 4×3 matrix through pinv, lstsq, the singular-value
    norms and matrix_power (tnp or jnp)."""

    def f(a: Any) -> Any:
        x, residuals, _, _ = np_.linalg.lstsq(a, np_.arange(4.0))
        square = a[:3] + 3.0 * np_.eye(3)
        return (
            np_.sum(np_.linalg.pinv(a) * np_.arange(12.0).reshape(3, 4))
            + np_.sum(x**2)
            + np_.sum(residuals)
            + np_.linalg.norm(a, 2)
            + np_.linalg.norm(a, -2)
            + np_.linalg.norm(a, "nuc")
            + np_.sum(np_.linalg.matrix_power(square, -2))
            + np_.sum(np_.linalg.matrix_power(square, 3))
        )

    return f


LOSSES = {"svd": _svd_loss, "composites": _composites_loss}
GRADIENT_CASES = [
    ("svd", (5, 3), np.float64),
    ("svd", (3, 5), np.complex128),
    ("composites", (4, 3), np.float64),
]  # batches: the rule tests


def _jax_gradients(inputs: dict[str, np.ndarray], directory: Path) -> dict[str, np.ndarray]:
    """`jax.grad` of `LOSSES[name.split("-")[0]]` at each input, in a fresh process:
    once numpy's OpenBLAS is loaded into this one (tidu's BLAS and LAPACK
    calls), JAX's CPU SVD fails to size its workspace."""
    # pyright reads the keyword names as savez's own parameters
    np.savez(directory / "inputs.npz", **inputs)  # pyright: ignore[reportArgumentType]
    script = "\n".join(
        [
            "import sys",
            "from typing import Any, Callable",
            "import jax, numpy as np",
            'jax.config.update("jax_enable_x64", True)',
            *(inspect.getsource(loss) for loss in LOSSES.values()),
            f"LOSSES = {{{', '.join(f'{k!r}: {v.__name__}' for k, v in LOSSES.items())}}}",
            "inputs = np.load(sys.argv[1])",
            "loss = lambda k: LOSSES[k.split('-')[0]](jax.numpy)",
            "grads = {k: np.conj(jax.grad(loss(k))(inputs[k])) for k in inputs}",
            "np.savez(sys.argv[2], **grads)",
        ]
    )  # jax.grad of a complex input is the conjugate of tidu's (docs/complex.md)
    outputs = directory / "grads.npz"
    command = [sys.executable, "-c", script, str(directory / "inputs.npz"), str(outputs)]
    subprocess.run(command, check=True)
    return dict(np.load(outputs))


def test_svd_and_composite_gradients_match_finite_differences_and_jax(tmp_path: Path) -> None:
    inputs = {
        f"{name}-{i}": _random(shape, dtype)
        for i, (name, shape, dtype) in enumerate(GRADIENT_CASES)
    }
    grads = {}
    for key, a in inputs.items():
        loss = LOSSES[key.split("-")[0]]
        grads[key] = td.grad(loss(tnp))(a)
        direction = _random(a.shape, a.dtype)
        h = 1e-5
        numeric = (loss(np)(a + h * direction) - loss(np)(a - h * direction)) / (2 * h)
        got = np.real(np.vdot(grads[key], direction))
        np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-8, err_msg=key)
    pytest.importorskip("jax")
    expected = _jax_gradients(inputs, tmp_path)
    for key, grad in grads.items():
        np.testing.assert_allclose(grad, expected[key], rtol=1e-9, atol=1e-12, err_msg=key)


def test_gradient_of_singular_values_at_repeated_ones_is_finite() -> None:
    """d Σs / dA = U Vᴴ even where singular values coincide (only the singular
    vectors' derivatives are infinite there)."""
    grad = td.grad(lambda a: tnp.sum(tnp.linalg.svd(a, compute_uv=False)))(2.0 * np.eye(3))
    np.testing.assert_allclose(grad, np.eye(3), atol=1e-12)


def test_gaussian_log_likelihood_gradient_closed_form() -> None:
    """d/dΣ of -½(log det Σ + xᵀ Σ⁻¹ x) = ½(Σ⁻¹ x xᵀ Σ⁻¹ - Σ⁻¹), through cholesky."""
    sigma, x = _spd((5, 5)), _random((5,))

    def log_likelihood(sigma: Any) -> Any:
        factor = tnp.linalg.cholesky(sigma)
        z = td.scipy.linalg.solve_triangular(factor, x, lower=True)
        return -tnp.sum(tnp.log(tnp.diagonal(factor))) - 0.5 * tnp.sum(z * z)

    inverse = np.linalg.inv(sigma)
    expected = 0.5 * (inverse @ np.outer(x, x) @ inverse - inverse)
    np.testing.assert_allclose(td.grad(log_likelihood)(sigma), expected, rtol=1e-9)


def test_second_order_through_cholesky() -> None:
    """The Hessian of log det through cholesky: H[v] = -Σ⁻¹ v Σ⁻¹ (symmetric v)."""
    sigma, v = _spd((3, 3)), _random((3, 3))
    v = v + v.T
    logdet = lambda s: 2.0 * tnp.sum(tnp.log(tnp.diagonal(tnp.linalg.cholesky(s))))  # noqa: E731
    _, hvp = td.jvp(td.grad(logdet), (sigma,), (v,))
    inverse = np.linalg.inv(sigma)
    np.testing.assert_allclose(hvp, -inverse @ v @ inverse, rtol=1e-9)


def test_eager_tensors() -> None:
    a = tensor(_matrix((3, 3)), requires_grad=True)
    b = np.ones(3)
    from tidu_mlir.eager import functions

    loss = functions.linalg.slogdet(a)[1] + functions.linalg.solve(a, b).sum()
    loss.backward()
    inverse = np.linalg.inv(a.numpy())
    expected = inverse.T - np.outer(inverse.T @ np.ones(3), inverse @ b)
    assert a.grad is not None
    np.testing.assert_allclose(a.grad.numpy(), expected, rtol=1e-10)


def test_eager_tensors_through_the_spectral_functions() -> None:
    from tidu_mlir.eager import functions

    a = tensor(_random((3, 3)), requires_grad=True)
    loss = functions.linalg.eigvalsh(a).sum() + functions.linalg.pinv(a).sum()
    loss = loss + functions.linalg.svd(a)[1].sum()
    loss.backward()
    expected = td.grad(
        lambda a: (
            tnp.sum(tnp.linalg.eigvalsh(a))
            + tnp.sum(tnp.linalg.pinv(a))
            + tnp.sum(tnp.linalg.svd(a, compute_uv=False))
        )
    )(a.numpy())
    assert a.grad is not None
    np.testing.assert_allclose(a.grad.numpy(), expected, rtol=1e-10)
