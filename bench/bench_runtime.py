"""Run-time performance against JAX: the workloads of the run-time issue, one
table, in one run per thread count.

    python bench/bench_runtime.py [--threads 1 2] [--seconds 0.4] [--only NAME]

For each thread count the table is measured in a fresh subprocess whose
environment caps the threads before anything is imported: `OMP_NUM_THREADS`
and `OPENBLAS_NUM_THREADS` for tidu, `XLA_FLAGS` (Eigen's thread pool off)
for JAX at one thread (at more, JAX's default: a thread per core). Each row
is a compiled function of tidu (`td.jit` of the transform) and the same
program under `jax.jit`, called on the same inputs: a few warm-up calls (the
first compiles), then calls of the two interleaved (tidu, JAX, tidu, ...) for
about `--seconds` each; the
medians, their ratio tidu / JAX (< 1: tidu is faster) and the geometric mean
of the ratios. Results are compared (relative 1e-8) before timing. Without
JAX only tidu's times are printed.

Workloads: the Hessian-vector product of sum(exp(sin x) x) (n = 10^5,
`td.hvp`); the GMM objective gradient at d=10 k=25 n=10^4 and GradBench's
d=10 k=25 n=1000; GradBench's ht (simple, complicated; the synthetic hand
of bench_gradbench), ode (n=10^4, s=10), saddle, ba, lse, llsq, kmeans, det
and lstm at bench_gradbench's sizes; the MLP loss gradient and the complex
loss gradient of bench_api; the gradient of an elementwise chain on 10^6
elements (bench_lowering's).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
Row = tuple[str, Callable[[], Any], Callable[[], Any] | None]
"""(label, tidu thunk, JAX thunk or None)."""


def thread_environment(threads: int) -> dict[str, str]:
    """The environment of a measuring subprocess limited to `threads` threads
    (JAX: one thread by turning Eigen's pool off, else its default, one
    thread per core)."""
    environment = {
        **os.environ,
        "OMP_NUM_THREADS": str(threads),
        "OPENBLAS_NUM_THREADS": str(threads),
    }
    if threads == 1:
        single = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
        environment["XLA_FLAGS"] = single
    return environment


def rows(only: str | None) -> Iterator[Row]:
    """The workloads, built lazily (imports happen in the measuring process)."""
    import numpy as np
    from bench_api import complex_loss, jax, jnp, mlp_loss

    import tidu_mlir as td
    import tidu_mlir.numpy as tnp
    import tidu_mlir.scipy.special as td_special

    sys.path.insert(0, str(BENCH.parent / "tests"))
    from gradbench import evals as gradbench  # pyright: ignore[reportMissingImports]

    def wanted(label: str) -> bool:
        return only is None or only in label

    rng = np.random.default_rng(0)
    ready = jax.block_until_ready if jax is not None else (lambda x: x)

    def pair(label: str, ours: Callable[..., Any], theirs: Any, *args: Any) -> Row:
        jitted = jax.jit(theirs) if jax is not None and theirs is not None else None
        return (
            label,
            lambda: ours(*args),
            None if jitted is None else (lambda: ready(jitted(*args))),
        )

    if wanted(label := "hvp sum(exp(sin x) x) n=1e5"):
        x, v = rng.standard_normal(10**5), rng.standard_normal(10**5)
        f = lambda x, xp: xp.sum(xp.exp(xp.sin(x)) * x)  # noqa: E731
        ours = td.jit(lambda x, v: td.hvp(lambda x: f(x, tnp), (x,), (v,)))
        theirs = jax and (lambda x, v: jax.jvp(jax.grad(lambda x: f(x, jnp)), (x,), (v,))[1])
        yield pair(label, ours, theirs, x, v)

    mine = gradbench.evals(tnp, td, td_special)
    other = gradbench.evals(jnp, jax, jax.scipy.special) if jax is not None else None
    evals = [
        ("gmm", "jacobian", lambda: gradbench.gmm_input(10, 25, 10000), "d=10 k=25 n=1e4"),
        ("gmm", "jacobian", lambda: gradbench.gmm_input(10, 25, 1000), "d=10 k=25 n=1000"),
        ("ht", "jacobian", lambda: gradbench.ht_input(544, 100, False), "simple"),
        ("ht", "jacobian", lambda: gradbench.ht_input(544, 100, True), "complicated"),
        ("ode", "gradient", lambda: gradbench.ode_input(10000, 10), "n=1e4 s=10"),
        *(("saddle", v, lambda: gradbench.SADDLE_INPUT, v) for v in ("ff", "fr", "rr", "rf")),
        ("ba", "jacobian", lambda: gradbench.ba_input(49, 7776, 31843), "49 cams"),
        ("lse", "gradient", lambda: gradbench.lse_input(2500), "n=2500"),
        ("llsq", "gradient", lambda: gradbench.llsq_input(16, 128), "16x128"),
        ("kmeans", "dir", lambda: gradbench.kmeans_input(10, 1000, 8), "k=10 n=1000"),
        ("det", "gradient", lambda: gradbench.det_input(5), "5x5"),
        ("lstm", "jacobian", lambda: gradbench.lstm_input(2, 1024), "2 layers"),
    ]
    for name, function, make_input, detail in evals:
        label = f"{name}.{function} {detail}"
        if not wanted(label):
            continue
        data = make_input()
        ours_prepared = mine[name]["prepare"](data)
        ours = lambda e=mine[name][function], a=ours_prepared: e(a)  # noqa: E731
        theirs = None
        if other is not None:
            theirs_prepared = other[name]["prepare"](data)
            theirs = lambda e=other[name][function], a=theirs_prepared: ready(e(a))  # noqa: E731
        yield label, ours, theirs

    if wanted(label := "mlp loss gradient"):
        x, y = rng.standard_normal((256, 784)) * 0.1, rng.standard_normal((256, 10))
        w1, w2 = rng.standard_normal((784, 256)) * 0.05, rng.standard_normal((256, 10)) * 0.1
        ours = td.jit(td.grad(mlp_loss, argnums=(2, 3)))
        theirs = jax and jax.grad(lambda *a: mlp_loss(*a, xp=jnp), argnums=(2, 3))
        yield pair(label, ours, theirs, x, y, w1, w2)
    if wanted(label := "complex loss gradient n=1e5"):
        z = rng.standard_normal(10**5) + 1j * rng.standard_normal(10**5) * 0.1
        w = rng.standard_normal(10**5) + 1j * rng.standard_normal(10**5)
        ours = td.jit(td.grad(complex_loss))
        # tidu's gradient is the conjugate of JAX's for a real loss (docs/complex.md).
        theirs = jax and (lambda z, w: jnp.conj(jax.grad(lambda z: complex_loss(z, w, jnp))(z)))
        yield pair(label, ours, theirs, z, w)
    if wanted(label := "elementwise chain gradient n=1e6"):
        a, b = rng.standard_normal(10**6), rng.standard_normal(10**6)
        chain = lambda x, y, xp: xp.sum(xp.tanh(x * y) * xp.exp(-x) + xp.sin(y))  # noqa: E731
        ours = td.jit(td.grad(lambda x, y: chain(x, y, tnp)))
        theirs = jax and jax.grad(lambda x, y: chain(x, y, jnp))
        yield pair(label, ours, theirs, a, b)


def median_times(ours: Callable[[], Any], theirs: Callable[[], Any] | None,
                 seconds: float) -> tuple[float, float]:  # fmt: skip
    """Medians of interleaved calls (NaN for a missing side)."""
    for _ in range(3):  # warm-up: the first call compiles
        ours()
        if theirs is not None:
            theirs()
    times: tuple[list[float], list[float]] = ([], [])
    spent = [0.0, 0.0]
    while min(spent) < seconds or len(times[0]) < 10:
        for side, fn in enumerate((ours, theirs)):
            if fn is None:
                spent[side] = seconds
                continue
            start = time.perf_counter()
            fn()
            elapsed = time.perf_counter() - start
            times[side].append(elapsed)
            spent[side] += elapsed
    return tuple(statistics.median(t) if t else math.nan for t in times)  # pyright: ignore[reportReturnType]


def same_results(ours: Any, theirs: Any) -> bool:
    """Whether the two results' leaves agree (relative 1e-8)."""
    import numpy as np

    from tidu_mlir.tree_util import tree_leaves

    mine, other = tree_leaves(ours), tree_leaves(theirs)
    return len(mine) == len(other) and all(
        np.allclose(np.asarray(a), np.asarray(b), rtol=1e-8, atol=1e-10)
        for a, b in zip(mine, other, strict=True)
    )


def measure(threads: int, seconds: float, only: str | None) -> None:
    """The table, in this process (its threads already capped)."""
    sys.path.insert(0, str(BENCH))
    from tidu_mlir.lowering import disk_cache

    disk_cache.set_cache_dir(None)
    print(f"## {threads} thread(s); load average {os.getloadavg()[0]:.2f}", flush=True)
    print(f"{'workload':38s} {'tidu ms':>9s} {'JAX ms':>9s} {'tidu/JAX':>8s}", flush=True)
    ratios = []
    for label, ours, theirs in rows(only):
        agree = theirs is None or same_results(ours(), theirs())
        mine, other = median_times(ours, theirs, seconds)
        ratio = mine / other
        if not math.isnan(ratio):
            ratios.append(ratio)
        note = "" if agree else "  RESULTS DIFFER"
        print(f"{label:38s} {mine * 1e3:9.3f} {other * 1e3:9.3f} {ratio:8.2f}{note}", flush=True)
    if ratios:
        geometric = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"{'geometric mean':38s} {'':9s} {'':9s} {geometric:8.2f}; worst {max(ratios):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--seconds", type=float, default=0.4, help="time per side and row")
    parser.add_argument("--only", default=None, help="only the rows whose label contains this")
    parser.add_argument("--measure", type=int, help=argparse.SUPPRESS)  # the subprocess
    args = parser.parse_args()
    if args.measure is not None:
        return measure(args.measure, args.seconds, args.only)
    for threads in args.threads:
        command = [sys.executable, __file__, "--measure", str(threads)]
        command += ["--seconds", str(args.seconds)] + (["--only", args.only] if args.only else [])
        subprocess.run(command, env=thread_environment(threads), check=True)


if __name__ == "__main__":
    main()
