"""JVPs and VJPs of traced composite functions against JAX (skipped without jax).

JVPs agree. VJPs follow docs/complex.md: ours(ct) = conj(vjp_jax(conj(ct))) (JAX
transposes complex maps bilinearly; for real maps both are the same).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import tidu_mlir.numpy as tnp
from tidu_mlir import ad
from tidu_mlir.dialects import cg
from tidu_mlir.tracing import ArraySpec, trace_function

from .prim_harness import run

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


def mlp(xp: ModuleType, x: Any, w: Any) -> Any:
    return xp.sum(xp.tanh(w @ x) ** 2) + xp.sum(xp.sin(x) * xp.exp(x))


def gated(xp: ModuleType, x: Any, w: Any) -> Any:
    return xp.tanh(w @ x) * x[:2] / (1.0 + xp.cos(x[1:]) ** 2)


def piecewise(xp: ModuleType, x: Any, w: Any) -> Any:
    return xp.concatenate(
        [
            xp.max(w * x, axis=1),
            xp.minimum(x, 1.0),
            xp.where(x > 1.0, x**2, xp.sqrt(x)),
            xp.log(xp.transpose(w).reshape(6)),
        ]
    )


def holo_and_not(xp: ModuleType, z: Any, w: Any) -> Any:
    return xp.exp(w @ z) * xp.conj(z[:2]) + xp.sqrt(z[1:]) + xp.abs(z[:2]) * w[:, 0]


def complex_to_real(xp: ModuleType, z: Any, w: Any) -> Any:
    return xp.sum(xp.abs(z) ** 2 + xp.real(xp.log(z)) * xp.imag(xp.transpose(w) @ z[::2]))


CASES: dict[str, tuple[Callable[..., Any], np.dtype]] = {
    "mlp": (mlp, np.dtype(np.float64)),
    "gated": (gated, np.dtype(np.float64)),
    "piecewise": (piecewise, np.dtype(np.float64)),
    "holo_and_not": (holo_and_not, np.dtype(np.complex128)),
    "complex_to_real": (complex_to_real, np.dtype(np.complex128)),
}


def sample(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    value = rng.uniform(0.3, 1.7, shape)
    if dtype.kind == "c":
        value = value + 1j * rng.uniform(-0.5, 0.5, shape)
    return value.astype(dtype)


@pytest.mark.parametrize("name", list(CASES))
def test_jvp_and_vjp_match_jax(name: str) -> None:
    fn, dtype = CASES[name]
    rng = np.random.default_rng(3)
    primals = [sample(rng, (3,), dtype), sample(rng, (2, 3), dtype)]
    tangents = [sample(rng, p.shape, dtype) - 1.0 for p in primals]
    graph = trace_function(
        lambda *a: fn(tnp, *a), [ArraySpec(p.shape, p.dtype) for p in primals]
    ).graph
    env = {cg.KeyAttr(f"arg{i}"): p for i, p in enumerate(primals)}

    with jax.enable_x64(True):
        jax_fn = lambda *a: fn(jnp, *a)  # noqa: E731
        out, jax_tangent = jax.jvp(jax_fn, tuple(primals), tuple(tangents))
        ct = sample(rng, np.shape(out), np.asarray(out).dtype)
        _, jax_vjp = jax.vjp(jax_fn, *primals)
        jax_cts = [np.asarray(c) for c in jax_vjp(np.conj(ct))]

    lin = ad.linearize(graph, wrt=["arg0", "arg1"])
    seeds = {k: t for (k, _), t in zip(lin.tangent_inputs, tangents, strict=True)}
    (ours,) = run(lin.fragment, {**env, **seeds})
    np.testing.assert_allclose(ours, np.asarray(jax_tangent), rtol=1e-10, atol=1e-12)

    vjp = ad.linear_transpose(lin)
    ad.verify_linearity(vjp.fragment)
    grads = run(vjp.fragment, {**env, vjp.tangent_inputs[0][0]: ct})
    for mine, theirs in zip(grads, jax_cts, strict=True):
        np.testing.assert_allclose(mine, np.conj(theirs), rtol=1e-10, atol=1e-12)
