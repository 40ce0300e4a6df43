"""Resident memory of compiled code and caches: RSS as the caches fill, evict and clear.

    python bench/bench_memory.py [--probes distinct shapes eager llvm-opt]
        [--compilations 1000] [--shapes 300] [--steps 1000] [--cache-size N]
        [--disk-cache DIR]

Each probe runs in a fresh subprocess, by default with the disk cache off,
and prints the RSS (`/proc/self/statm`) relative to its start, after a warm-up:
* distinct: N distinct small functions, `td.jit(lambda x: sin(x) * c + x)` for
  N constants c, every jitted function kept alive (only the cache bounds free
  their code); every 100 compilations, then after `td.clear_caches()`;
* shapes: one `td.jit` function called on S shapes (its stages bounded by
  `function_cache_size`), then after `td.clear_caches()`;
* eager: a `Tensor` loop whose operand shape changes at every step
  (`sum(tanh(x * w) ** 2)`, `backward()`: 4 backward graphs compiled per step);
  every 100 steps, then after `td.clear_caches()`;
* llvm-opt: `backend.optimize` of the LLVM IR of the distinct probe's function,
  N times, no JIT and no cache: the memory LLVM's optimizer keeps per run
  (~70 KB while llvmlite's pass managers were never freed; none since
  `backend` frees them).
`--cache-size N` sets every `td.config` bound to N (default: the defaults).
`--disk-cache DIR` uses DIR as the disk cache instead: run twice, the second run
loads every function's object code from it (no LLVM optimization, so none of
llvmlite's per-optimization memory), which isolates what the caches hold.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from progress import progress  # imports tqdm before any RSS baseline

PROBES = ("distinct", "shapes", "eager", "llvm-opt")


def rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class Meter:
    """Prints the RSS against the start, with the time since the start."""

    def __init__(self) -> None:
        import gc

        gc.collect()
        self.start = rss_mb()
        self.clock = time.perf_counter()
        print(f"  start {self.start:.0f} MB", flush=True)

    def report(self, label: str, extra: str = "") -> None:
        import gc

        gc.collect()
        now = rss_mb()
        seconds = time.perf_counter() - self.clock
        print(
            f"  {label}: {now:.0f} MB ({now - self.start:+.0f}) {extra}{seconds:.0f} s", flush=True
        )


def distinct(count: int) -> None:
    import numpy as np

    import tidu_mlir as td
    import tidu_mlir.numpy as tnp
    from tidu_mlir.lowering import runtime

    x = np.ones(4)
    td.jit(lambda x: tnp.sin(x) * 0.5)(x)  # warm-up: imports, libraries, first compile
    meter = Meter()
    kept = []
    for k in progress(range(count), "distinct"):
        jitted = td.jit(lambda x, c=k + 1.5: tnp.sin(x) * c + x)
        jitted(x)
        kept.append(jitted)
        if (k + 1) % 100 == 0:
            counts = (
                f"lowered {runtime.COUNTS['lowerings']} disk hits {runtime.COUNTS['disk-hits']}"
            )
            meter.report(f"{k + 1} compilations", f"cached {len(runtime._cache)} {counts} ")
    td.clear_caches()
    meter.report("after clear_caches")


def shapes(count: int) -> None:
    import numpy as np

    import tidu_mlir as td
    import tidu_mlir.numpy as tnp
    from tidu_mlir import api

    def fn(x):
        return tnp.sin(x) * 2.0 + x

    jitted = td.jit(fn)
    jitted(np.ones(1))
    meter = Meter()
    for n in progress(range(2, count + 2), "shapes"):
        jitted(np.ones(n))
        if (n - 1) % 100 == 0:
            meter.report(f"{n - 1} shapes", f"stages {api._STAGES.count(fn)} ")
    td.clear_caches()
    meter.report("after clear_caches")


def eager(steps: int) -> None:
    import numpy as np

    import tidu_mlir as td
    import tidu_mlir.eager as te

    tanh, total = te.functions.FUNCTIONS["tanh"], te.functions.FUNCTIONS["sum"]
    rng = np.random.default_rng(0)
    w = te.tensor(0.5, requires_grad=True)

    def step(n: int) -> None:
        x = te.tensor(rng.normal(size=n), requires_grad=True)
        total(tanh(x * w) ** 2).backward()

    step(1)
    meter = Meter()
    for s in progress(range(steps), "eager"):
        step(2 + s)
        if (s + 1) % 100 == 0:
            graphs, compiled = len(te.functions.GRAPHS), len(te.RUNTIME.executor.compiled)
            meter.report(f"{s + 1} steps", f"graphs {graphs} compiled {compiled} ")
    td.clear_caches()
    meter.report("after clear_caches")


def llvm_opt(count: int) -> None:
    import numpy as np

    import tidu_mlir as td
    import tidu_mlir.numpy as tnp
    from tidu_mlir.lowering import backend, jit

    texts: list[str] = []
    jit.optimize = lambda text: texts.append(text) or backend.optimize(text)  # the LLVM IR in
    td.jit(lambda x: tnp.sin(x) * 0.5)(np.ones(4))
    (text,) = texts
    meter = Meter()
    for k in progress(range(count), "llvm-opt"):
        backend.optimize(f"{text}\n@g{k} = global double {k}.5\n")
        if (k + 1) % 200 == 0:
            td.clear_caches()
            meter.report(f"{k + 1} optimizations")


def child(probe: str, count: int, cache_size: int | None) -> None:
    import tidu_mlir as td

    if cache_size is not None:
        for name, setting in td.config.SETTINGS.items():
            if not setting.is_flag:  # the cache bounds, not log_compiles
                td.config.update(name, cache_size)
    {"distinct": distinct, "shapes": shapes, "eager": eager, "llvm-opt": llvm_opt}[probe](count)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--probes", nargs="+", choices=PROBES, default=list(PROBES))
    parser.add_argument("--compilations", type=int, default=1000)
    parser.add_argument("--shapes", type=int, default=300)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--cache-size", type=int, default=None)
    parser.add_argument("--disk-cache", default="", metavar="DIR")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args.cache_size)
        return
    counts = {
        "distinct": args.compilations,
        "shapes": args.shapes,
        "eager": args.steps,
        "llvm-opt": args.compilations,
    }
    env = {**os.environ, "TIDU_CACHE_DIR": args.disk_cache}
    for probe in args.probes:
        print(f"{probe} ({counts[probe]}):", flush=True)
        command = [sys.executable, __file__, "--child", probe, str(counts[probe])]
        if args.cache_size is not None:
            command += ["--cache-size", str(args.cache_size)]
        subprocess.run(command, env=env, check=True)


if __name__ == "__main__":
    main()
