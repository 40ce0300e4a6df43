"""AD rules of erf, cumsum and the ops without a tangent (floor, ceil, round, sign,
argmax, argmin, argsort): JVP vs finite differences, the adjoint identity, linearity
of the derived fragments and higher order (prim_harness.check_derivatives), closed
forms and the emitted IR."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tidu_mlir import ad
from tidu_mlir.dialects import prim

from .prim_harness import build, check_derivatives, primal_env, run

REAL = [np.float64, np.float32]


def _rng(seed: int = 7) -> np.random.Generator:
    """A generator per test: its draws do not depend on which tests ran before."""
    return np.random.default_rng(seed)


def _separated(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Distinct values 0.5 apart, in random order: finite differences never
    change an argmax, argmin or argsort."""
    count = int(np.prod(shape))
    return _rng(seed).permutation(count).reshape(shape) * 0.5 - count / 4


def _ops(fragment) -> list[str]:
    return [op.name for op in fragment.body.block.ops]


@pytest.mark.parametrize("dtype", REAL, ids=lambda d: np.dtype(d).name)
def test_erf(dtype: type) -> None:
    x = _rng().uniform(-2.0, 2.0, (5,)).astype(dtype)
    check_derivatives(lambda b, x: b(prim.ErfOp(x)), [x])
    check_derivatives(lambda b, x: b(prim.ErfOp(b(prim.MulOp(x, x)))), [x])


def test_erf_derivative_closed_form() -> None:
    x = np.array([-1.5, 0.0, 0.3, 2.0])
    dx = np.array([1.0, 2.0, -1.0, 0.5])
    _, graph = build(lambda b, x: b(prim.ErfOp(x)), [x])
    lin = ad.linearize(graph, wrt=["x0"])
    env = {**primal_env([x]), lin.tangent_inputs[0][0]: dx}
    expected = [2.0 / math.sqrt(math.pi) * math.exp(-v * v) * d for v, d in zip(x, dx, strict=True)]
    np.testing.assert_allclose(run(lin.fragment, env)[0], expected, rtol=1e-15)


CUMSUM_DTYPES = [np.float64, np.float32, np.complex128]


@pytest.mark.parametrize("dtype", CUMSUM_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_cumsum(axis: int, reverse: bool, dtype: type) -> None:
    rng = _rng(axis)
    x = rng.standard_normal((2, 3, 4))
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal((2, 3, 4))
    x = x.astype(dtype)
    check_derivatives(lambda b, x: b(prim.CumsumOp(x, axis, reverse)), [x])


def test_cumsum_in_a_product() -> None:
    """cumsum of a non-linear function, times the input: a fixed factor in the rule."""
    x = _rng().uniform(0.5, 1.5, (6,))
    check_derivatives(lambda b, x: b(prim.MulOp(b(prim.CumsumOp(b(prim.SinOp(x)), 0)), x)), [x])


@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum_transposes_to_the_opposite_direction(reverse: bool) -> None:
    rng = _rng()
    x = rng.standard_normal((3, 4))
    _, graph = build(lambda b, x: b(prim.CumsumOp(x, 1, reverse)), [x])
    lin = ad.linearize(graph, wrt=["x0"])
    assert _ops(lin.fragment) == ["cg.input", "prim.cumsum", "cg.output"]
    vjp = ad.linear_transpose(lin)
    (transposed,) = [op for op in vjp.fragment.body.block.ops if isinstance(op, prim.CumsumOp)]
    assert transposed.axis_value == 1 and transposed.is_reverse is not reverse
    ct = rng.standard_normal((3, 4))
    (grad,) = run(vjp.fragment, {**primal_env([x]), vjp.tangent_inputs[0][0]: ct})
    lower = np.tril(np.ones((4, 4))) if not reverse else np.triu(np.ones((4, 4)))
    np.testing.assert_allclose(grad, ct @ lower, rtol=1e-14)


PIECEWISE = {
    "floor": prim.FloorOp,
    "ceil": prim.CeilOp,
    "round": prim.RoundOp,
    "sign": prim.SignOp,
}


@pytest.mark.parametrize("dtype", REAL, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", list(PIECEWISE))
def test_piecewise_constant_ops_have_zero_derivative(name: str, dtype: type) -> None:
    """No tangent of their own (a symbolic zero); combined with other terms the
    derivative is theirs alone (finite differences away from the jumps agree)."""
    op = PIECEWISE[name]
    x = (np.arange(6) - 2.75).astype(dtype)  # 1/4 from the jumps (integers and halves)
    _, graph = build(lambda b, x: b(op(x)), [x])
    assert ad.linearize(graph, wrt=["x0"]).tangent_outputs == [None]
    check_derivatives(lambda b, x: b(prim.MulOp(b(op(x)), b(prim.ExpOp(x)))), [x])
    check_derivatives(lambda b, x: [b(op(x)), b(prim.AddOp(b(op(x)), x))], [x])


@pytest.mark.parametrize(
    "op",
    [lambda x: prim.ArgMaxOp(x, 1), lambda x: prim.ArgMinOp(x, 0), lambda x: prim.ArgsortOp(x, 1)],
    ids=["argmax", "argmin", "argsort"],
)
def test_integer_results_have_no_tangent(op) -> None:
    """The index output gets no tangent; the float output next to it does."""
    x = _separated((3, 4))
    _, graph = build(lambda b, x: [b(op(x)), b(prim.SinOp(x))], [x])
    lin = ad.linearize(graph, wrt=["x0"])
    assert lin.tangent_outputs[0] is None and lin.tangent_outputs[1] is not None
    check_derivatives(lambda b, x: [b(op(x)), b(prim.SinOp(x))], [x])


def test_index_results_feed_float_computations() -> None:
    """argmax converted to a float (a constant factor for AD) scales a tangent."""
    x = _separated((3, 4), seed=1)

    def body(b, x):
        index = b(prim.ArgMaxOp(x, 1))
        weight = b(prim.ConvertOp(index, prim.element_type_of_dtype(np.float64)))
        row = b(prim.ReduceSumOp(x, [1]))
        return b(prim.MulOp(weight, row))

    check_derivatives(body, [x])
