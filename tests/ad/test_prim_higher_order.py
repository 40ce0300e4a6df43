"""Closed forms and higher order with the prim rules: grad |z|² = 2z, the worked
example's 4x and 4, FoF == FoR, 3rd and 4th derivatives by repeated
linearization, and FoR after RoF chains, all through the reference evaluator."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import tidu_mlir.numpy as tnp
from tidu_mlir import ad
from tidu_mlir.dialects import cg, prim
from tidu_mlir.tracing import ArraySpec, Tracer, trace_function

from .prim_harness import Emitter, build, primal_env, run


def traced(f: Callable[..., Tracer], *arrays: np.ndarray) -> cg.GraphOp:
    """The `cg.graph` of `f` traced on arrays like `arrays` (inputs arg0, arg1, ...)."""
    specs = [ArraySpec(a.shape, a.dtype) for a in arrays]
    return trace_function(f, specs).graph


def arg_env(*arrays: np.ndarray) -> dict:
    return {cg.KeyAttr(f"arg{i}"): a for i, a in enumerate(arrays)}


def seeded(env: dict, linearized: ad.LinearizedGraph, *values: np.ndarray) -> dict:
    """`env` plus the seeds of a derived fragment, in order."""
    seeds = {k: v for (k, _), v in zip(linearized.tangent_inputs, values, strict=True)}
    return {**env, **seeds}


def gradient(graph: cg.GraphOp, env: dict, wrt: str, ct: np.ndarray) -> np.ndarray:
    lin = ad.linearize(graph, wrt=[wrt])
    vjp = ad.linear_transpose(lin)
    ad.verify_linearity(vjp.fragment)
    return run(vjp.fragment, seeded(env, vjp, ct))[0]


# --------------------------------------------------------------------------
# Closed forms
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "square",
    [
        lambda b, z: b(prim.RealOp(b(prim.MulOp(z, b(prim.ConjOp(z)))))),
        lambda b, z: b(prim.PowOp(b(prim.AbsOp(z)), 2.0)),
        lambda b, z: b(
            prim.AddOp(
                b(prim.MulOp(b(prim.RealOp(z)), b(prim.RealOp(z)))),
                b(prim.MulOp(b(prim.ImagOp(z)), b(prim.ImagOp(z)))),
            )
        ),
    ],
    ids=["z_conj_z", "abs_squared", "re2_plus_im2"],
)
def test_grad_abs_squared_is_2z(square: Callable) -> None:
    z = np.array(1 + 2j)
    _, graph = build(square, [z])
    assert gradient(graph, primal_env([z]), "x0", np.array(1.0)) == 2 + 4j


def test_grad_of_complex_output_follows_the_real_inner_product() -> None:
    """f(z) = a·z: the adjoint of multiplication by a multiplies by conj(a)."""
    a, z, ct = 2 - 1j, np.array([0.5 + 1j]), np.array([1 - 3j])
    _, graph = build(lambda b, z: b(prim.MulOp(b.const(a, z), z)), [z])
    np.testing.assert_allclose(gradient(graph, primal_env([z]), "x0", ct), np.conj(a) * ct)


def test_worked_example_gradient_and_second_derivative() -> None:
    x = np.array(3.0)
    _, graph = build(lambda b, x: b(prim.MulOp(b(prim.AddOp(x, x)), x)), [x])  # (x + x) * x
    env = primal_env([x])
    assert gradient(graph, env, "x0", np.array(1.0)) == 12.0  # 4x
    # FoR: linearize the transposed fragment wrt x.
    lin = ad.linearize(graph, wrt=["x0"])
    vjp = ad.linear_transpose(lin)
    hvp = ad.linearize(vjp.fragment, wrt=["x0"])
    ad.verify_linearity(hvp.fragment)
    one = np.array(1.0)
    assert run(hvp.fragment, seeded(seeded(env, vjp, one), hvp, one))[0] == 4.0
    # FoF: linearize the JVP wrt x.
    fof = ad.linearize(lin.fragment, wrt=["x0"])
    assert run(fof.fragment, seeded(seeded(env, lin, one), fof, one))[0] == 4.0
    # The transposed graph has exactly the two fan-out adds of the worked example (x + x) * x.
    names = [op.name for op in vjp.fragment.body.block.ops if op.name != "cg.linear"]
    assert names == ["cg.input", "prim.mul", "prim.mul", "prim.add", "prim.add", "cg.output"]


# --------------------------------------------------------------------------
# FoF == FoR
# --------------------------------------------------------------------------


def mlp(x: Tracer, w: Tracer) -> Tracer:
    return tnp.sum(tnp.tanh(w @ x) ** 2) + tnp.sum(tnp.sin(x) * tnp.exp(x))


def ratio(x: Tracer, w: Tracer) -> Tracer:
    return tnp.sum(tnp.log(x) / (1.0 + tnp.sqrt(x) * x)) * tnp.sum(w * w)


def reductions(x: Tracer, w: Tracer) -> Tracer:
    return tnp.sum(tnp.max(w * x, axis=1) ** 3) + tnp.sum(tnp.transpose(w) ** 2.5)


def complex_loss(z: Tracer, w: Tracer) -> Tracer:
    return tnp.sum(tnp.abs(tnp.exp(w @ z) * tnp.conj(z[:2])) ** 2)


FUNCTIONS = {"mlp": mlp, "ratio": ratio, "reductions": reductions, "complex_loss": complex_loss}


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_fof_equals_for(name: str) -> None:
    """vᵀH u two ways: linearize twice (FoF) and linearize the gradient (FoR)."""
    rng = np.random.default_rng(1)
    dtype = np.complex128 if name == "complex_loss" else np.float64
    x = rng.uniform(0.5, 1.5, 3).astype(dtype)
    if dtype == np.complex128:
        x = x + 0.3j * rng.uniform(-1, 1, 3)
    w = rng.uniform(0.5, 1.5, (2, 3)).astype(dtype)
    graph = traced(FUNCTIONS[name], x, w)
    env = arg_env(x, w)
    u, v = (
        (rng.standard_normal(3) + 1j * rng.standard_normal(3)).astype(dtype)
        if dtype == np.complex128
        else rng.standard_normal(3)
        for _ in range(2)
    )
    lin = ad.linearize(graph, wrt=["arg0"])
    fof = ad.linearize(lin.fragment, wrt=["arg0"])
    ad.verify_linearity(fof.fragment)
    fof_value = run(fof.fragment, seeded(seeded(env, lin, u), fof, v))[0]
    vjp = ad.linear_transpose(lin)
    hvp = ad.linearize(vjp.fragment, wrt=["arg0"])
    ad.verify_linearity(hvp.fragment)
    hv = run(hvp.fragment, seeded(seeded(env, vjp, np.array(1.0)), hvp, v))[0]
    for_value = np.real(np.vdot(hv, u))  # <H v, u> with the real inner product
    np.testing.assert_allclose(fof_value, for_value, rtol=1e-10)


# --------------------------------------------------------------------------
# Third and fourth order
# --------------------------------------------------------------------------


def nth_derivative(body: Callable, x: np.ndarray, order: int, reverse_last: bool) -> np.ndarray:
    """d^n f/dx^n at x by n-1 (or n) nested linearizations with unit seeds, the
    last step optionally as a transpose (RoF...) followed by nothing more."""
    _, fragment = build(body, [x])
    env = primal_env([x])
    one = np.ones_like(x)
    current: cg.Fragment = fragment
    for _ in range(order - 1 if reverse_last else order):
        lin = ad.linearize(current, wrt=["x0"])
        ad.verify_linearity(lin.fragment)
        env = seeded(env, lin, one)
        current = lin.fragment
    if reverse_last:
        lin = ad.linearize(current, wrt=["x0"])
        vjp = ad.linear_transpose(lin)
        ad.verify_linearity(vjp.fragment)
        env = seeded(env, lin, one)
        env = seeded(env, vjp, one)
        current = vjp.fragment
    return run(current, env)[0]


def x4(b: Emitter, x):
    square = b(prim.MulOp(x, x))
    return b(prim.MulOp(square, square))


def sin(b: Emitter, x):
    return b(prim.SinOp(x))


@pytest.mark.parametrize("reverse_last", [False, True], ids=["forward", "reverse_last"])
def test_third_and_fourth_order(reverse_last: bool) -> None:
    x = np.array([0.7, -1.3])
    np.testing.assert_allclose(nth_derivative(x4, x, 3, reverse_last), 24 * x, rtol=1e-12)
    np.testing.assert_allclose(nth_derivative(x4, x, 4, reverse_last), [24.0, 24.0], rtol=1e-12)
    np.testing.assert_allclose(nth_derivative(sin, x, 3, reverse_last), -np.cos(x), rtol=1e-12)
    np.testing.assert_allclose(nth_derivative(sin, x, 4, reverse_last), np.sin(x), rtol=1e-12)
    pow4 = lambda b, x: b(prim.PowOp(x, 4.0))  # noqa: E731
    np.testing.assert_allclose(nth_derivative(pow4, x, 3, reverse_last), 24 * x, rtol=1e-12)
    np.testing.assert_allclose(nth_derivative(pow4, x, 4, reverse_last), [24.0, 24.0], rtol=1e-12)


def test_ror_of_a_gradient_is_the_jvp_of_the_gradient() -> None:
    """Transposing twice gives back the linear map (structural identity: x*x -> 2x)."""
    x = np.array([1.5])
    _, graph = build(lambda b, x: b(prim.MulOp(x, x)), [x])
    env = primal_env([x])
    lin = ad.linearize(graph, wrt=["x0"])
    vjp = ad.linear_transpose(lin)
    ror = ad.linear_transpose(vjp)
    ad.verify_linearity(ror.fragment)
    assert run(ror.fragment, seeded(seeded(env, vjp, np.array([1.0])), ror, np.array([1.0])))[
        0
    ] == pytest.approx(3.0)
