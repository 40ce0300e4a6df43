"""`td.vmap` against JAX and against a Python loop, in one run.

    python bench/bench_vmap.py [--repeat 10] [--examples 10000] [--baseline REV]

Workloads (float64):
* per_example_grads: `vmap(grad(loss))` of a logistic-regression loss over
  N examples of 100 features (w of 100, b scalar), against
  `jax.jit(jax.vmap(jax.grad(loss)))` and a Python loop of `td.grad` calls
  over the first 200 examples (scaled to N).
* jacrev_1000: `jacrev(f)` of f: R^1000 -> R^1000, f(x) = tanh(A @ x) * x.
* hessian_200: `hessian(g)` of g: R^200 -> R, g(x) = sum(tanh(B @ x) ** 2).
For the Jacobian workloads "loop" is the old way, one `vjp_fn` (or `f_jvp`)
call per output (input) element through one linearization, timed on the
first 50 calls and scaled. Times are best of `--repeat` after a warm-up call
(compilation excluded); ratios ours/JAX and loop/ours. `--baseline REV`
also times the two Jacobians with tidu_mlir as of the git revision REV (a
temporary worktree, in a subprocess), e.g. `5e1e87e`, the round-1 version
whose `jacrev`/`hessian` made one call per basis element (the "today's loop"
the batching targets were set against).
"""

from __future__ import annotations

import argparse
import functools
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from bench_api import best_time, jax, jnp
from progress import progress

import tidu_mlir as td
import tidu_mlir.numpy as tnp

FEATURES = 100
LOOP_SAMPLE = 200
JACOBIAN_SAMPLE = 50


def logistic_loss(params, x, y, xp=tnp):
    w, b = params
    z = x @ w + b
    return xp.log(1.0 + xp.exp(-y * z))


def jac_fn(x, a, xp=tnp):
    return xp.tanh(a @ x) * x


def hess_fn(x, b, xp=tnp):
    return xp.sum(xp.tanh(b @ x) ** 2)


def timed(fn: Callable[[], Any], repeat: int) -> float:
    fn()  # compile
    return best_time(fn, repeat)


def per_example_grads(examples: int, repeat: int) -> str:
    rng = np.random.default_rng(0)
    params = (rng.standard_normal(FEATURES) / 10, np.float64(0.1))
    xs = rng.standard_normal((examples, FEATURES))
    ys = np.sign(rng.standard_normal(examples))
    ours = td.vmap(td.grad(logistic_loss), in_axes=(None, 0, 0))
    t_ours = timed(lambda: ours(params, xs, ys), repeat)
    single = td.grad(logistic_loss)
    t_loop = timed(lambda: [single(params, xs[i], ys[i]) for i in range(LOOP_SAMPLE)], 3)
    t_loop *= examples / LOOP_SAMPLE
    t_jax = float("nan")
    if jax is not None:
        jax_fn = jax.jit(
            jax.vmap(jax.grad(lambda p, x, y: logistic_loss(p, x, y, xp=jnp)), in_axes=(None, 0, 0))
        )
        t_jax = timed(lambda: jax.block_until_ready(jax_fn(params, xs, ys)), repeat)
    return row(f"per_example_grads N={examples}", t_ours, t_jax, t_loop)


def jacobian_case(
    name: str,
    transform: Callable[..., Any],
    fn: Callable[..., Any],
    x: np.ndarray,
    const: np.ndarray,
    loop: Callable[[], Any],
    loop_scale: float,
    repeat: int,
) -> str:
    ours = transform(lambda v: fn(v, const))
    t_ours = timed(lambda: ours(x), repeat)
    t_loop = timed(loop, 2) * loop_scale
    t_jax = float("nan")
    if jax is not None:
        jax_transform = {td.jacrev: jax.jacrev, td.hessian: jax.hessian}[transform]
        jax_fn = jax.jit(jax_transform(lambda v: fn(v, const, xp=jnp)))
        t_jax = timed(lambda: jax.block_until_ready(jax_fn(x)), repeat)
    return row(name, t_ours, t_jax, t_loop)


def jacrev_inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    return rng.standard_normal(1000), rng.standard_normal((1000, 1000)) / 30


def hessian_inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2)
    b = rng.standard_normal((200, 200)) / 15
    return rng.standard_normal(200), b


def jacrev_1000(repeat: int) -> str:
    x, a = jacrev_inputs()
    _, vjp_fn = td.vjp(lambda v: jac_fn(v, a), x)
    basis = np.eye(1000)
    loop = lambda: [vjp_fn(basis[i]) for i in range(JACOBIAN_SAMPLE)]  # noqa: E731
    return jacobian_case(
        "jacrev R^1000->R^1000", td.jacrev, jac_fn, x, a, loop, 1000 / JACOBIAN_SAMPLE, repeat
    )


def hessian_200(repeat: int) -> str:
    x, b = hessian_inputs()
    grad_fn = td.grad(lambda v: hess_fn(v, b))
    _, f_jvp = td.linearize(grad_fn, x)
    basis = np.eye(200)
    loop = lambda: [f_jvp(basis[i]) for i in range(JACOBIAN_SAMPLE)]  # noqa: E731
    return jacobian_case(
        "hessian R^200", td.hessian, hess_fn, x, b, loop, 200 / JACOBIAN_SAMPLE, repeat
    )


def row(name: str, ours: float, jax_time: float, loop: float) -> str:
    return (
        f"{name:28s} {ours * 1e3:9.2f} {jax_time * 1e3:9.2f} {loop * 1e3:10.1f} "
        f"{ours / jax_time:9.2f} {loop / ours:9.1f}"
    )


def baseline_child(repeat: int) -> None:
    """Time both Jacobians with whichever tidu_mlir is on the path."""
    x, a = jacrev_inputs()
    jac = td.jacrev(lambda v: jac_fn(v, a))
    print(f"jacrev R^1000->R^1000 {timed(lambda: jac(x), repeat) * 1e3:9.1f} ms")
    x, b = hessian_inputs()
    hess = td.hessian(lambda v: hess_fn(v, b))
    print(f"hessian R^200         {timed(lambda: hess(x), repeat) * 1e3:9.1f} ms")


def baseline(revision: str, repeat: int) -> None:
    """Run `baseline_child` on a temporary worktree of `revision`."""
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        git = ["git", "-C", str(root), "worktree"]
        add = [*git, "add", "--detach", str(tree), revision]
        subprocess.run(add, check=True, capture_output=True)
        try:
            env = {**os.environ, "PYTHONPATH": str(tree), "TIDU_CACHE_DIR": ""}
            command = [sys.executable, __file__, "--baseline-child", "--repeat", str(repeat)]
            result = subprocess.run(command, env=env, cwd=tmp, capture_output=True, text=True)
            print(f"tidu_mlir at {revision}:")
            print(result.stdout.rstrip() or result.stderr)
        finally:
            subprocess.run([*git, "remove", "--force", str(tree)], check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--baseline", metavar="REV")
    parser.add_argument("--baseline-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline_child:
        baseline_child(args.repeat)
        return
    header = ("ours ms", "JAX ms", "loop ms", "ours/JAX", "loop/ours")
    print(f"{'workload':28s} " + " ".join(f"{h:>9s}" for h in header))
    cases = [
        functools.partial(per_example_grads, args.examples, args.repeat),
        functools.partial(jacrev_1000, args.repeat),
        functools.partial(hessian_200, args.repeat),
    ]
    for case in progress(cases, "bench_vmap"):
        print(case())
    if args.baseline:
        baseline(args.baseline, min(args.repeat, 3))


if __name__ == "__main__":
    main()
