"""AD rules of cholesky, triangular_solve and lu: JVP vs finite differences, the
adjoint identity of triangular_solve's transpose, linearity of every derived
fragment and higher order (prim_harness.check_derivatives), on small matrices,
batched and not, real and complex."""

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
