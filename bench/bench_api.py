"""Benchmark of the Python API (derivatives through the AD passes, compiled)
against numpy and JAX jit, in one run.

    python bench/bench_api.py [--repeat 20]

Workloads (float64 unless said):
* mlp_grad:    gradient of an MLP loss (256x784 input, 784x256 tanh, 256x10)
               w.r.t. both weight matrices; numpy: hand-written backprop
* hvp:         Hessian-vector product of sum(tanh(A x)^2), A 512x512;
               numpy: hand-written H·v
* complex:     gradient of sum(|exp(i·z)·w|^2) over 10^5 complex128 values;
               numpy: the closed form
* gmm:         gradient of a Gaussian-mixture log-likelihood (2,000 points,
               8 dims, 16 isotropic components) w.r.t. the means;
               numpy: hand-written
* chain_compile: trace + AD + compile time of the gradient of a deep scalar
               chain (250 and 2,500 steps: ~10^3 and ~10^4 primal ops)
Times are the best of `--repeat` calls after a warm-up call (which compiles);
ratios are other/tidu (> 1 means tidu is faster).
"""

from __future__ import annotations

import argparse
import functools
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from progress import progress

import tidu_mlir as td
import tidu_mlir.numpy as tnp

try:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
except ImportError:  # JAX is optional: its columns are left empty
    jax = None
    jnp = None


def best_time(fn: Callable[[], Any], repeat: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        if jax is not None:
            jax.block_until_ready(result)  # JAX dispatches asynchronously
        best = min(best, time.perf_counter() - start)
    return best


def mlp_loss(x, y, w1, w2, xp=tnp):
    hidden = xp.tanh(x @ w1)
    return xp.mean((hidden @ w2 - y) ** 2)


def mlp_grad_numpy(x, y, w1, w2):
    hidden = np.tanh(x @ w1)
    residual = hidden @ w2 - y
    d_out = 2.0 * residual / residual.size
    d_w2 = hidden.T @ d_out
    d_hidden = (d_out @ w2.T) * (1.0 - hidden**2)
    return x.T @ d_hidden, d_w2


def hvp_objective(x, a, xp=tnp):
    return xp.sum(xp.tanh(a @ x) ** 2)


def hvp_numpy(x, v, a):
    """H·v of sum(tanh(Ax)^2): Aᵀ diag(2(1-t²)(1-3t²)) A v."""
    t = np.tanh(a @ x)
    return a.T @ (2.0 * (1.0 - t**2) * (1.0 - 3.0 * t**2) * (a @ v))


def complex_loss(z, w, xp=tnp):
    u = xp.exp(1j * z) * w
    return xp.sum(xp.real(u * xp.conj(u)))


def complex_grad_numpy(z, w):
    """Real loss L = sum |w|² exp(-2 Im z): grad = ∂L/∂x + i∂L/∂y (`docs/complex.md`)."""
    return 1j * (-2.0 * np.abs(w) ** 2 * np.exp(-2.0 * z.imag))


def gmm_loglik(mu, x, xp=tnp):
    diff = x[:, None, :] - mu[None, :, :]
    logp = -0.5 * xp.sum(diff * diff, axis=2)
    m = xp.max(logp, axis=1, keepdims=True)
    return xp.sum(m[:, 0] + xp.log(xp.sum(xp.exp(logp - m), axis=1)))


def gmm_grad_numpy(mu, x):
    diff = x[:, None, :] - mu[None, :, :]
    logp = -0.5 * np.sum(diff * diff, axis=2)
    r = np.exp(logp - logp.max(axis=1, keepdims=True))
    r /= r.sum(axis=1, keepdims=True)
    return np.einsum("nk,nkd->kd", r, diff)


def row(name: str, tidu: float, numpy_time: float, jax_time: float | None, compile_s: float) -> str:
    jax_cell = f"{jax_time * 1e3:9.3f}" if jax_time is not None else "        -"
    jax_ratio = f"{jax_time / tidu:7.2f}" if jax_time is not None else "      -"
    return (
        f"{name:14s} {tidu * 1e3:9.3f} {numpy_time * 1e3:9.3f} {jax_cell} "
        f"{numpy_time / tidu:7.2f} {jax_ratio} {compile_s:9.2f}"
    )


def timed_first_call(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench_case(name: str, tidu_fn, numpy_fn, jax_fn, args, repeat: int, check) -> str:
    compile_s = timed_first_call(lambda: tidu_fn(*args))
    check(tidu_fn(*args), numpy_fn(*args))
    t_tidu = best_time(lambda: tidu_fn(*args), repeat)
    t_numpy = best_time(lambda: numpy_fn(*args), repeat)
    t_jax = None
    if jax is not None and jax_fn is not None:
        jitted = jax.jit(jax_fn)
        t_jax = best_time(lambda: jitted(*args), repeat)
    return row(name, t_tidu, t_numpy, t_jax, compile_s)


def close(rtol: float = 1e-8):
    def check(ours, theirs) -> None:
        as_tuple = lambda v: v if isinstance(v, tuple) else (v,)  # noqa: E731
        for a, b in zip(as_tuple(ours), as_tuple(theirs), strict=True):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-10)

    return check


def chain(depth: int):
    def f(x):
        for i in range(depth):
            x = tnp.sin(x) * 0.5 + x * (1.0 + 1e-3 * (i % 7))
        return tnp.sum(x)

    return f


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    repeat = parser.parse_args().repeat
    rng = np.random.default_rng(0)
    print(f"{'workload':14s} {'tidu ms':>9s} {'numpy ms':>9s} {'jax ms':>9s} "
          f"{'np/tidu':>7s} {'jax/tidu':>7s} {'compile s':>9s}")  # fmt: skip

    x = rng.standard_normal((256, 784)) * 0.1
    y = rng.standard_normal((256, 10))
    w1 = rng.standard_normal((784, 256)) * 0.05
    w2 = rng.standard_normal((256, 10)) * 0.1
    jax_mlp = jax and jax.grad(lambda x, y, w1, w2: mlp_loss(x, y, w1, w2, xp=jnp), argnums=(2, 3))
    cases: list[Callable[[], str]] = []  # each returns its table row
    cases.append(lambda: bench_case("mlp_grad", td.jit(td.grad(mlp_loss, argnums=(2, 3))),
                                    lambda x, y, w1, w2: mlp_grad_numpy(x, y, w1, w2), jax_mlp,
                                    (x, y, w1, w2), repeat, close()))  # fmt: skip

    a = rng.standard_normal((512, 512)) / 512**0.5
    xv, v = rng.standard_normal(512), rng.standard_normal(512)

    def tidu_hvp(x, v, a):
        return td.hvp(lambda x: hvp_objective(x, a), (x,), (v,))

    def jax_hvp(x, v, a):
        return jax.jvp(jax.grad(lambda x: hvp_objective(x, a, xp=jnp)), (x,), (v,))[1]

    cases.append(lambda: bench_case("hvp", td.jit(tidu_hvp), hvp_numpy, jax and jax_hvp,
                                    (xv, v, a), repeat, close()))  # fmt: skip

    z = rng.standard_normal(10**5) + 1j * rng.standard_normal(10**5) * 0.1
    w = rng.standard_normal(10**5) + 1j * rng.standard_normal(10**5)

    def jax_complex(z, w):  # ours = conj(jax(conj(ct))) with real ct = 1 (docs/complex.md)
        return jnp.conj(jax.grad(lambda z: complex_loss(z, w, xp=jnp))(z))

    cases.append(lambda: bench_case("complex_grad", td.jit(td.grad(complex_loss)),
                                    complex_grad_numpy, jax and jax_complex, (z, w), repeat,
                                    close(1e-7)))  # fmt: skip

    mu = rng.standard_normal((16, 8))
    pts = rng.standard_normal((2000, 8))
    jax_gmm = jax and jax.grad(lambda mu, x: gmm_loglik(mu, x, xp=jnp))
    cases.append(lambda: bench_case("gmm_grad", td.jit(td.grad(gmm_loglik)), gmm_grad_numpy,
                                    jax_gmm, (mu, pts), repeat, close(1e-7)))  # fmt: skip
    cases += [functools.partial(chain_compile, depth) for depth in (250, 2_500)]
    for case in progress(cases, "bench_api"):
        print(case())


def chain_compile(depth: int) -> str:
    """The row of the time to trace, differentiate and compile a `depth`-step chain."""
    start = time.perf_counter()
    g = td.grad(chain(depth))
    g(np.array(0.3))
    seconds = time.perf_counter() - start
    what = f"grad of a {depth}-step scalar chain (~{4 * depth} primal ops)"
    return f"chain{depth:<9d} {what}: trace + AD + compile {seconds:.2f} s"


if __name__ == "__main__":
    main()
