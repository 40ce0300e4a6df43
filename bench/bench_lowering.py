"""Benchmark of the native lowering against numpy and JAX (jit), in one run.

    python bench/bench_lowering.py [--repeat 30]

Workloads (float64):
* chain:  z = tanh(x*y) * exp(-x) + sin(y) on 10^6 elements
* grad:   d/dx sum(z) from the AD pipeline: `td.jit(td.grad(f))` (linearize,
          transpose, materialize, compile), against `jax.jit(jax.grad(f))`;
          `grad1`: the same tidu code limited to one thread (`omp_set_num_threads`)
* matmul: dot_general 256x784 @ 784x256
* call:   the overhead of one call of a compiled function on 8 elements
* compile time of `chain` and of deep elementwise chains of 1,000 and 10,000 ops
Times are the best of `--repeat` calls, including argument checks and output
allocation; ratios are other/tidu (> 1 means tidu is faster).
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import statistics
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np
from xdsl.builder import ImplicitBuilder
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, TensorType, f64
from xdsl.ir import Block, Operation, Region, SSAValue

import tidu_mlir as td
import tidu_mlir.numpy as tnp
from tidu_mlir.dialects import prim
from tidu_mlir.lowering import parallel, runtime

N = 10**6


def build(
    name: str, types: list[TensorType], body: Callable[..., Sequence[SSAValue | Operation]]
) -> func.FuncOp:
    block = Block(arg_types=types)
    with ImplicitBuilder(block):
        results = [SSAValue.get(r) for r in body(*block.args)]
        func.ReturnOp(*results)
    ftype = FunctionType.from_lists(types, [r.type for r in results])
    return func.FuncOp(name, ftype, Region(block))


def vec(n: int = N) -> TensorType:
    return TensorType(f64, [n])


def chain_body(x: SSAValue, y: SSAValue) -> list[Operation]:
    t = prim.TanhOp(prim.MulOp(x, y))
    e = prim.ExpOp(prim.NegOp(x))
    return [prim.AddOp(prim.MulOp(t, e), prim.SinOp(y))]


def chain_loss(x: Any, y: Any) -> Any:
    """sum(tanh(x*y) * exp(-x) + sin(y)) in tidu_mlir.numpy (traced by td.grad)."""
    return tnp.sum(tnp.tanh(x * y) * tnp.exp(-x) + tnp.sin(y))


def matmul_body(a: SSAValue, b: SSAValue) -> list[Operation]:
    return [prim.DotGeneralOp(a, b, lhs_contract=[1], rhs_contract=[0])]


def deep_body(x: SSAValue, y: SSAValue, ops: int = 1000) -> list[SSAValue | Operation]:
    """`ops` elementwise and reduction ops in a long dependent chain."""
    v: SSAValue | Operation = x
    kinds = [prim.SinOp, prim.AddOp, prim.MulOp, prim.TanhOp]
    made = 0
    while made < ops:
        kind = kinds[made % len(kinds)]
        v = kind(v) if kind in (prim.SinOp, prim.TanhOp) else kind(v, y)
        made += 1
    return [v]


def best_median(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Best and median wall time in seconds of `repeat` calls of `fn()` (after one warm-up)."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def best(fn: Callable[[], object], repeat: int) -> float:
    """Best wall time in seconds of `repeat` calls of `fn()`."""
    return best_median(fn, repeat)[0]


def timed_compile(function: func.FuncOp) -> tuple[runtime.CompiledFunction, float]:
    start = time.perf_counter()
    compiled = runtime.compile_function(function)
    return compiled, time.perf_counter() - start


def load_jax():
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        return jax, jax.numpy
    except ImportError:
        return None, None


def report(name: str, times: dict[str, float]) -> None:
    tidu = times["tidu"]
    parts = [f"{k} {v * 1e3:8.4f} ms" for k, v in times.items()]
    ratios = [f"{k}/tidu {v / tidu:5.2f}" for k, v in times.items() if k != "tidu"]
    print(f"{name:8s} " + " | ".join(parts) + "   " + ", ".join(ratios))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    repeat = parser.parse_args().repeat
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-2, 2, N), rng.uniform(-2, 2, N)
    a, b = rng.standard_normal((256, 784)), rng.standard_normal((784, 256))
    jax, jnp = load_jax()

    chain, t_chain = timed_compile(build("chain", [vec(), vec()], chain_body))
    grad = td.jit(td.grad(chain_loss))
    start = time.perf_counter()
    grad(x, y)
    t_grad = time.perf_counter() - start
    matmul, t_mm = timed_compile(
        build("matmul", [TensorType(f64, [256, 784]), TensorType(f64, [784, 256])], matmul_body)
    )
    _, t_deep = timed_compile(build("deep", [vec(16), vec(16)], deep_body))
    _, t_deep4 = timed_compile(build("deep4", [vec(16), vec(16)], partial(deep_body, ops=10**4)))
    small = runtime.compile_function(
        build("small", [vec(8), vec(8)], lambda u, v: [prim.MulOp(u, v)])
    )
    s8 = np.ones(8)

    def np_chain():
        return np.tanh(x * y) * np.exp(-x) + np.sin(y)

    def np_grad():
        t, e = np.tanh(x * y), np.exp(-x)
        return ((1 - t * t) * y - t) * e

    np.testing.assert_allclose(chain(x, y), np_chain(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grad(x, y), np_grad(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(matmul(a, b), a @ b, rtol=1e-10, atol=1e-10)

    rows: dict[str, dict[str, float]] = {
        "chain": {"tidu": best(lambda: chain(x, y), repeat), "numpy": best(np_chain, repeat)},
        "grad": {"tidu": best(lambda: grad(x, y), repeat), "numpy": best(np_grad, repeat)},
        "matmul": {
            "tidu": best(lambda: matmul(a, b), repeat),
            "numpy": best(lambda: a @ b, repeat),
        },
        "call": {
            "tidu": best(lambda: small(s8, s8), repeat * 100),
            "numpy": best(lambda: s8 * s8, repeat * 100),
        },
    }
    if parallel.libgomp_available():
        gomp = ctypes.CDLL(ctypes.util.find_library("gomp"))
        threads = gomp.omp_get_max_threads()
        gomp.omp_set_num_threads(1)
        rows["grad1"] = {"tidu": best(lambda: grad(x, y), repeat)}
        gomp.omp_set_num_threads(threads)
    if jax is not None and jnp is not None:

        def jchain(u, v):
            return jnp.tanh(u * v) * jnp.exp(-u) + jnp.sin(v)

        j_chain = jax.jit(jchain)
        j_grad = jax.jit(jax.grad(lambda u, v: jnp.sum(jchain(u, v))))
        j_mm = jax.jit(lambda p, q: p @ q)
        j_small = jax.jit(lambda p, q: p * q)
        jx, jy, ja, jb, js = (jax.device_put(v) for v in (x, y, a, b, s8))
        np.testing.assert_allclose(np.asarray(j_grad(jx, jy)), np_grad(), rtol=1e-10)
        rows["chain"]["jax"] = best(lambda: j_chain(jx, jy).block_until_ready(), repeat)
        rows["grad"]["jax"] = best(lambda: j_grad(jx, jy).block_until_ready(), repeat)
        rows["call"]["jax"] = best(lambda: j_small(js, js).block_until_ready(), repeat * 100)
        rows["matmul"]["jax"] = best(lambda: j_mm(ja, jb).block_until_ready(), repeat)
    for name, times in rows.items():
        report(name, times)
    print(
        f"compile  chain {t_chain:.3f} s | grad {t_grad:.3f} s | matmul {t_mm:.3f} s"
        f" | 1000-op chain {t_deep:.3f} s | 10000-op chain {t_deep4:.3f} s"
    )


if __name__ == "__main__":
    main()
