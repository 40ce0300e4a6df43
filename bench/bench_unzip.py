"""Cost of `f_jvp` and `vjp_fn` relative to the primal, now that `td.linearize`
and `td.vjp` run the forward function once and then only the linear
(transposed) map on stored residuals; JAX's ratios alongside, in one run.

    python bench/bench_unzip.py [--repeat 20]

Workloads (float64):
* tanh_chain: f(x, A) = tanh(A @ tanh(A @ ... x)), 10 layers, A 1000x1000,
              x of 1000 (derivatives w.r.t. both)
* tanh_chain_x: the same chain with A (2000x2000) captured by the function
              (`partial(f, A)`), derivatives w.r.t. x only
* mlp_loss:   the MLP loss of bench_api.py (256x784 input, 784x256 tanh,
              256x10), w.r.t. all four arguments
* mlp_weights: the same loss w.r.t. the weights only, the data captured (as
              bench_api.py's mlp_grad differentiates it, and as an optimizer
              linearizes it)
Columns: best times (ms) of the primal (jit), of one `f_jvp` call and of one
`vjp_fn` call; their ratios to the primal (ours, then JAX's `jax.linearize` /
`jax.vjp` results under `jax.jit`); the residual memory `td.saved_residuals`
reports for the default policy (save-all) and for `save-nothing`, with
`f_jvp`'s time under `save-nothing`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np
from bench_api import best_time, jax, jnp, mlp_loss
from progress import progress

import tidu_mlir as td
import tidu_mlir.numpy as tnp

LAYERS = 10


def tanh_chain(x, a, xp=tnp):
    for _ in range(LAYERS):
        x = xp.tanh(a @ x)
    return x


def captured_chain(a: np.ndarray) -> Callable[..., Any]:
    """`tanh_chain` of x alone, closing over `a` (a captured array)."""

    def chain_of_x(x, xp=tnp):
        return tanh_chain(x, a, xp)

    return chain_of_x


def mlp_of_weights(x: np.ndarray, y: np.ndarray) -> Callable[..., Any]:
    """`mlp_loss` of the weights alone, closing over the data."""

    def loss_of_weights(w1, w2, xp=tnp):
        return mlp_loss(x, y, w1, w2, xp)

    return loss_of_weights


def residual_mb(fn: Callable[..., Any], args: tuple[np.ndarray, ...]) -> float:
    return sum(r.nbytes for r in td.saved_residuals(fn, *args)) / 2**20


def ratios(fn: Callable[..., Any], args: tuple[np.ndarray, ...], repeat: int) -> tuple[float, ...]:
    """(primal, f_jvp, vjp_fn) best times of `fn` at `args`."""
    rng = np.random.default_rng(1)
    tangents = [rng.standard_normal(a.shape) for a in args]
    primal = td.jit(fn)
    out, f_jvp = td.linearize(fn, *args)
    _, vjp_fn = td.vjp(fn, *args)
    ct = rng.standard_normal(np.shape(out))
    return (
        best_time(lambda: primal(*args), repeat),
        best_time(lambda: f_jvp(*tangents), repeat),
        best_time(lambda: vjp_fn(ct), repeat),
    )


def jax_ratios(fn: Callable[..., Any], args: tuple[np.ndarray, ...], repeat: int) -> str:
    if jax is None:
        return f"{'-':>8s} {'-':>8s}"
    jax_fn = lambda *xs: fn(*xs, xp=jnp)  # noqa: E731
    rng = np.random.default_rng(1)
    tangents = [rng.standard_normal(a.shape) for a in args]
    primal = jax.jit(jax_fn)
    out, f_jvp = jax.linearize(jax_fn, *args)
    _, vjp_fn = jax.vjp(jax_fn, *args)
    f_jvp, vjp_fn = jax.jit(f_jvp), jax.jit(vjp_fn)
    ct = rng.standard_normal(np.shape(out))
    t_primal = best_time(lambda: primal(*args), repeat)
    t_jvp = best_time(lambda: f_jvp(*tangents), repeat)
    t_vjp = best_time(lambda: vjp_fn(ct), repeat)
    return f"{t_jvp / t_primal:8.2f} {t_vjp / t_primal:8.2f}"


def bench(name: str, fn: Callable[..., Any], args: tuple[np.ndarray, ...], repeat: int) -> str:
    t_primal, t_jvp, t_vjp = ratios(fn, args, repeat)
    nothing = td.checkpoint(fn, policy="save-nothing")
    _, t_jvp_nothing, _ = ratios(nothing, args, repeat)
    return (
        f"{name:12s} {t_primal * 1e3:9.3f} {t_jvp * 1e3:9.3f} {t_vjp * 1e3:9.3f} "
        f"{t_jvp / t_primal:8.2f} {t_vjp / t_primal:8.2f} {jax_ratios(fn, args, repeat)} "
        f"{residual_mb(fn, args):9.2f} {residual_mb(nothing, args):9.2f} "
        f"{t_jvp_nothing / t_primal:8.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    repeat = parser.parse_args().repeat
    rng = np.random.default_rng(0)
    print(f"{'workload':12s} {'primal ms':>9s} {'f_jvp ms':>9s} {'vjp_fn ms':>9s} "
          f"{'jvp/prim':>8s} {'vjp/prim':>8s} {'jax jvp':>8s} {'jax vjp':>8s} "
          f"{'res MB':>9s} {'res MB 0':>9s} {'jvp/p 0':>8s}")  # fmt: skip
    a = rng.standard_normal((1000, 1000)) / 1000**0.5
    x = rng.standard_normal(1000)
    big = rng.standard_normal((2000, 2000)) / 2000**0.5
    x_big = rng.standard_normal(2000)
    mlp_args = (
        rng.standard_normal((256, 784)) * 0.1,
        rng.standard_normal((256, 10)),
        rng.standard_normal((784, 256)) * 0.05,
        rng.standard_normal((256, 10)) * 0.1,
    )
    workloads: list[tuple[str, Callable[..., Any], tuple[np.ndarray, ...]]] = [
        ("tanh_chain", tanh_chain, (x, a)),
        ("tanh_chain_x", captured_chain(big), (x_big,)),
        ("mlp_loss", mlp_loss, mlp_args),
        ("mlp_weights", mlp_of_weights(*mlp_args[:2]), mlp_args[2:]),
    ]
    for name, fn, args in progress(workloads, "bench_unzip"):
        print(bench(name, fn, args, repeat))
    print("res MB 0 / jvp/p 0: residual memory and f_jvp/primal under save-nothing")


if __name__ == "__main__":
    main()
