"""First-call compile time of `td.grad` of a K-step chain, stage by stage, against
JAX, and the time to first gradient in a new process with a warm disk cache.

    python bench/bench_compile.py [--sizes 250 500 1000 2000] [--large] [--no-jax]
    python bench/bench_compile.py --scan [--sizes 10 10000]

Each step applies 6 ops to an 8-vector x: mul, exp, sum, sin, broadcast, add
(x <- 0.9 x + broadcast(sin(sum(exp(0.9 x))))); the loss is sum(x). The chain
is unrolled by Python (K copies of the step in the IR); with `--scan` it is a
`lax.fori_loop` of K steps instead (one copy of the step, `prim.scan`), and
the table compares each K's first call with the smallest K's (the target:
the gradient of a 10⁴-step loop compiles in about the time of a 10-step one).

Every measurement runs in a fresh subprocess (cold in-process caches):
* cold: an empty `TIDU_CACHE_DIR`; the first call of `td.grad(f)` (trace, AD,
  lowering, LLVM) and its stages read from `TIDU_LOG_COMPILES=1` lines (summed
  over the functions compiled: lower-to-loops, llvm-text (or lower-to-llvm
  and translate with TIDU_LLVM_TEXT=0), llvm-opt, codegen, ...); "other" is
  first call minus compile (trace + AD).
  A large program is compiled in modules (`tidu_mlir.lowering.partition`):
  then llvm-opt and codegen are thread times beside the lowering, and
  llvm-wait what LLVM added to the wall time after it;
* warm: a second process on the same cache directory: time to first gradient,
  no lowering or codegen (`disk-load` instead);
* jax: `jax.jit(jax.grad(f))` first call, when JAX is importable.
The growth exponent between consecutive sizes is log(t2/t1)/log(K2/K1).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

from progress import progress

N = 8
STAGE = re.compile(r"([a-z-]+) (\d+\.\d+) s")
LOG = re.compile(r"^tidu: compile @(\S+): (.*), total (\d+\.\d+) s(.*)$")


def chain(depth: int, xp):
    def f(x):
        for _ in range(depth):
            m = x * 0.9
            s = xp.sum(xp.exp(m))
            x = m + xp.broadcast_to(xp.sin(s), x.shape)
        return xp.sum(x)

    return f


def looped_chain(depth: int, xp, lax):
    def step(_, x):
        m = x * 0.9
        s = xp.sum(xp.exp(m))
        return m + xp.broadcast_to(xp.sin(s), x.shape)

    def f(x):
        return xp.sum(lax.fori_loop(0, depth, step, x))

    return f


def child(kind: str, depth: int) -> None:
    """Time the first call in this (fresh) process; print one JSON line."""
    import numpy as np

    x0 = np.linspace(-1.0, 1.0, N)
    result: dict[str, object] = {}
    if kind.startswith("jax"):
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        start = time.perf_counter()
        fn = looped_chain(depth, jnp, jax.lax) if kind == "jax-scan" else chain(depth, jnp)
        g = jax.jit(jax.grad(fn))
        value = np.asarray(jax.block_until_ready(g(x0)))
        seconds = time.perf_counter() - start
    else:
        import tidu_mlir as td
        import tidu_mlir.numpy as tnp
        from tidu_mlir.lowering import runtime

        start = time.perf_counter()
        fn = looped_chain(depth, tnp, td.lax) if kind == "tidu-scan" else chain(depth, tnp)
        value = np.asarray(td.grad(fn)(x0))
        seconds = time.perf_counter() - start
        result["counts"] = dict(runtime.COUNTS)
    result.update(seconds=seconds, checksum=float(value.sum()))
    print(json.dumps(result))


def run_child(kind: str, depth: int, cache_dir: str) -> dict:
    env = {**os.environ, "TIDU_CACHE_DIR": cache_dir, "TIDU_LOG_COMPILES": "1"}
    proc = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(depth)],
        capture_output=True,
        text=True,
        env=env,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} K={depth} failed:\n{proc.stderr[-3000:]}")
    result = json.loads((proc.stdout or "").strip().splitlines()[-1])
    stages: dict[str, float] = {}
    compile_total = 0.0
    for line in proc.stderr.splitlines():
        if (match := LOG.match(line)) is None:
            continue
        for stage, seconds in STAGE.findall(match.group(2)):
            stages[stage] = stages.get(stage, 0.0) + float(seconds)
        compile_total += float(match.group(3))
    result["stages"] = stages
    result["compile"] = compile_total
    return result


def exponent(sizes: list[int], times: list[float]) -> list[str]:
    return [
        f"{math.log(t2 / t1) / math.log(k2 / k1):.2f}"
        for (k1, t1), (k2, t2) in zip(
            zip(sizes, times, strict=True), zip(sizes[1:], times[1:], strict=True), strict=False
        )
    ]


def jax_available() -> bool:
    try:
        import jax  # noqa: F401
    except ImportError:
        return False
    return True


def scan_table(sizes: list[int], use_jax: bool) -> None:
    """First-call times of the looped chain; ratios to the smallest K."""
    print(
        f"{'K':>7s} {'first s':>8s} {'compile':>8s} {'ratio':>6s} {'jax s':>7s} {'jax ratio':>9s}"
    )
    base: tuple[float, float] | None = None
    for depth in progress(sizes, "bench_compile --scan"):
        with tempfile.TemporaryDirectory(prefix="tidu-bench-cache-") as cache_dir:
            cold = run_child("tidu-scan", depth, cache_dir)
        jax_seconds = run_child("jax-scan", depth, "")["seconds"] if use_jax else float("nan")
        if base is None:
            base = (cold["seconds"], jax_seconds)
        row = (cold["seconds"], cold["compile"], cold["seconds"] / base[0])
        row += (jax_seconds, jax_seconds / base[1])
        print(f"{depth:7d} " + " ".join(f"{v:9.2f}" for v in row))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+")
    parser.add_argument("--large", action="store_true", help="also K = 4000 and 8000")
    parser.add_argument("--no-jax", action="store_true")
    parser.add_argument("--scan", action="store_true", help="the chain as a lax.fori_loop")
    parser.add_argument("--child", nargs=2, metavar=("KIND", "K"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    use_jax = not args.no_jax and jax_available()
    if args.scan:
        scan_table(sorted(set(args.sizes or [10, 10_000])), use_jax)
        return
    default = [250, 500, 1000, 2000]
    sizes = sorted(set((args.sizes or default) + ([4000, 8000] if args.large else [])))

    stage_names = [
        "lower-to-loops",
        "llvm-text",
        "lower-to-llvm",
        "translate",
        "llvm-opt",
        "codegen",
        "llvm-wait",
    ]
    header = (
        f"{'K':>6s} {'ops':>6s} {'first s':>8s} {'other':>7s} {'compile':>8s} "
        + " ".join(f"{s:>14s}" for s in stage_names)
        + f" {'store':>6s} {'warm s':>7s} {'load':>6s} {'jax s':>7s}"
    )
    print(header)
    firsts, compiles, warms, jaxes = [], [], [], []
    for depth in progress(sizes, "bench_compile"):
        with tempfile.TemporaryDirectory(prefix="tidu-bench-cache-") as cache_dir:
            cold = run_child("tidu", depth, cache_dir)
            warm = run_child("tidu", depth, cache_dir)
        assert warm["counts"].get("lowerings", 0) == 0, warm["counts"]
        assert warm["checksum"] == cold["checksum"]
        jax_result = run_child("jax", depth, "") if use_jax else None
        st = cold["stages"]
        firsts.append(cold["seconds"])
        compiles.append(cold["compile"])
        warms.append(warm["seconds"])
        if jax_result is not None:
            jaxes.append(jax_result["seconds"])
        print(
            f"{depth:6d} {6 * depth:6d} {cold['seconds']:8.2f} "
            f"{cold['seconds'] - cold['compile']:7.2f} {cold['compile']:8.2f} "
            + " ".join(f"{st.get(s, 0.0):14.2f}" for s in stage_names)
            + f" {st.get('disk-store', 0.0):6.2f} {warm['seconds']:7.2f}"
            f" {warm['stages'].get('disk-load', 0.0):6.3f}"
            + (f" {jax_result['seconds']:7.2f}" if jax_result else f" {'-':>7s}")
        )
    if len(sizes) > 1:
        pairs = [f"{a}->{b}" for a, b in zip(sizes, sizes[1:], strict=False)]
        print("growth exponents", " ".join(pairs))
        print("  tidu first call", " ".join(exponent(sizes, firsts)))
        print("  tidu compile   ", " ".join(exponent(sizes, compiles)))
        print("  tidu warm      ", " ".join(exponent(sizes, warms)))
        if jaxes:
            print("  jax first call ", " ".join(exponent(sizes, jaxes)))


if __name__ == "__main__":
    main()
