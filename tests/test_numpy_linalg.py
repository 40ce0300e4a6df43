"""`tnp.linalg` (solve, inv, det, slogdet, cholesky) and `td.scipy.linalg`
(solve_triangular, cho_factor/cho_solve, lu_factor/lu_solve): values against
numpy and SciPy, compiled and concrete, batched, f32 and complex128; gradients
against finite differences and JAX (each skipped without it); LinAlgError at
run time for singular and indefinite matrices, shape errors at trace time."""

from __future__ import annotations

from collections.abc import Callable, Sequence
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


# --------------------------------------------------------------------------
# Gradients: closed forms, finite differences, JAX
# --------------------------------------------------------------------------


FUNCTIONS = {
    "solve": lambda b: lambda a: tnp.linalg.solve(a, b),
    "inv": lambda b: tnp.linalg.inv,
    "det": lambda b: tnp.linalg.det,
    "logdet": lambda b: lambda a: tnp.linalg.slogdet(a)[1],
    "cholesky": lambda b: lambda a: tnp.linalg.cholesky(a @ tnp.conj(tnp.swapaxes(a, -1, -2))),
    "lu_solve": lambda b: lambda a: td.scipy.linalg.lu_solve(td.scipy.linalg.lu_factor(a), b),
    "solve_triangular": lambda b: lambda a: td.scipy.linalg.solve_triangular(a, b, lower=True),
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
    [(np.float64, tuple(FUNCTIONS)), (np.complex128, ("solve", "logdet", "cholesky"))],
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
