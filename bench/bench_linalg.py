"""Linear algebra on LAPACK (`tnp.linalg`, `td.scipy.linalg`) against JAX and numpy.

    python bench/bench_linalg.py [--repeat 5] [--n 500] [--solve-n 1000]

Two workloads, each timed in the same run for every library present: the
first call (tracing, differentiation and compilation included; the persistent
compilation cache is off) and the best of `--repeat` later calls, with the
ratios ours/theirs of the latter:

* the gradient with respect to the covariance Σ (n×n) of a Gaussian
  log-likelihood, `-½ (log det Σ + xᵀ Σ⁻¹ x)` through `cholesky`, a triangular
  solve and the factor's log-diagonal, `td.jit(td.grad(f))` vs `jax.jit(jax.grad(f))`;
* `linalg.solve` of an n×n system with one right-hand side, vs numpy (and JAX).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
from bench_api import best_time, jax, jnp
from progress import progress

import tidu_mlir as td
import tidu_mlir.numpy as tnp
from tidu_mlir.lowering import disk_cache


def log_likelihood(np_: Any, solve_triangular: Any) -> Any:
    """`-½ (log det Σ + xᵀ Σ⁻¹ x)` of a numpy-like module (its `linalg.cholesky`)."""

    def f(sigma: Any, x: Any) -> Any:
        factor = np_.linalg.cholesky(sigma)
        z = solve_triangular(factor, x, lower=True)
        return -np_.sum(np_.log(np_.diagonal(factor))) - 0.5 * np_.sum(z * z)

    return f


def workloads(n: int, solve_n: int) -> list[tuple[str, dict[str, Any], tuple[Any, ...]]]:
    """(name, {library: function}, arguments) of each benchmark."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=(n, n))
    sigma = a @ a.T / n + np.eye(n)
    x = rng.normal(size=n)
    ours = td.jit(td.grad(log_likelihood(tnp, td.scipy.linalg.solve_triangular)))
    gaussian: dict[str, Any] = {"tidu": ours}
    if jax is not None:
        theirs = log_likelihood(jnp, jax.scipy.linalg.solve_triangular)
        gaussian["jax"] = jax.jit(jax.grad(theirs))
    m = rng.normal(size=(solve_n, solve_n)) + np.sqrt(solve_n) * np.eye(solve_n)
    b = rng.normal(size=solve_n)
    solve: dict[str, Any] = {"tidu": td.jit(tnp.linalg.solve), "numpy": np.linalg.solve}
    if jax is not None:
        solve["jax"] = jax.jit(jnp.linalg.solve)
    return [
        (f"grad gaussian loglik {n}x{n}", gaussian, (sigma, x)),
        (f"solve {solve_n}x{solve_n}", solve, (m, b)),
    ]


def first_call(fn: Any, arguments: tuple[Any, ...]) -> float:
    """Seconds of the first call of `fn` (compilation included), its result ready."""
    start = time.perf_counter()
    result = fn(*arguments)
    if jax is not None:
        jax.block_until_ready(result)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description="tnp.linalg against JAX and numpy")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--solve-n", type=int, default=1000)
    args = parser.parse_args()
    disk_cache.set_cache_dir(None)  # first calls compile
    print(f"{'workload':30s} {'tidu':>10s} {'numpy':>10s} {'JAX':>10s} {'/numpy':>7s} {'/JAX':>7s}"
          f" {'first tidu':>11s} {'first JAX':>10s}")  # fmt: skip
    for name, functions, arguments in progress(workloads(args.n, args.solve_n), "linalg"):
        first = {lib: first_call(f, arguments) for lib, f in functions.items()}
        times = {
            lib: best_time(lambda f=f, a=arguments: f(*a), args.repeat)
            for lib, f in functions.items()
        }
        ours = times["tidu"]
        cells = [
            f"{times[lib] * 1e3:8.2f}ms" if lib in times else f"{'':>10s}"
            for lib in ("tidu", "numpy", "jax")
        ]
        ratios = [
            f"{ours / times[lib]:7.2f}" if lib in times else f"{'':>7s}" for lib in ("numpy", "jax")
        ]
        firsts = [
            f"{first[lib]:10.2f}s" if lib in first else f"{'':>11s}" for lib in ("tidu", "jax")
        ]
        print(f"{name:30s} {' '.join(cells)} {' '.join(ratios)} {' '.join(firsts)}")


if __name__ == "__main__":
    main()
