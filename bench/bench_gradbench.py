"""GradBench's evals (tests/gradbench/evals.py, the JAX program with only the
names bound to tidu) timed against JAX in one run.

    python bench/bench_gradbench.py [--repeat 5] [--large] [--evals ba ht]

For each eval function and input size: the first call (trace, derive and
compile, then run) and the best of `--repeat` later calls, for tidu and for
`jax.jit`; ratios ours/JAX. Sizes are GradBench's smallest by default and
its larger ones with `--large` (ode n=10000 s=100, gmm d=20 k=25, ...);
particle and saddle (one input each) in their four variants, where JAX
refuses the ones with reverse mode through a while loop; ba at ba1's sizes
(one observation repeated, as GradBench's inputs are), ht on synthetic
hand models (GradBench's are not at hand), "simple" and "complicated".
`--evals` keeps the rows of the evals named. The
persistent compilation cache is off (`disk_cache.set_cache_dir(None)`), so
first calls compile. tidu's compiler (`tidu_mlir.lowering.runtime`, ~0.4 s of
imports on a slow host) is imported before the first timing, as `import jax`
imports JAX's: otherwise the first row's first call would pay it.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from bench_api import best_time, jax, jnp
from progress import progress

import tidu_mlir as td
import tidu_mlir.lowering.runtime  # noqa: F401 - the compiler, imported before any timing as `import jax` imports JAX's
import tidu_mlir.numpy as tnp
import tidu_mlir.scipy.special as td_special
from tidu_mlir.lowering import disk_cache

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from gradbench import evals as gradbench  # noqa: E402  # pyright: ignore[reportMissingImports]

VARIANTS = ("ff", "fr", "rr", "rf")
"""particle's and saddle's: outer then inner derivative, forward or reverse."""

NESTED = [
    *(("particle", variant, lambda: gradbench.PARTICLE_INPUT) for variant in VARIANTS),
    *(("saddle", variant, lambda: gradbench.SADDLE_INPUT) for variant in VARIANTS),
]
"""particle and saddle: one input each, in both lists."""

SMALL = [
    ("lse", "gradient", lambda: gradbench.lse_input(2500)),
    ("llsq", "gradient", lambda: gradbench.llsq_input(16, 128)),
    ("kmeans", "dir", lambda: gradbench.kmeans_input(10, 1000, 8)),
    ("ode", "gradient", lambda: gradbench.ode_input(1000, 10)),
    ("gmm", "jacobian", lambda: gradbench.gmm_input(2, 5, 1000)),
    ("det", "gradient", lambda: gradbench.det_input(5)),
    ("lstm", "jacobian", lambda: gradbench.lstm_input(2, 1024)),
    ("ba", "jacobian", lambda: gradbench.ba_input(49, 7776, 31843)),
    ("ht", "jacobian", lambda: gradbench.ht_input(544, 100, complicated=False)),
    ("ht", "jacobian", lambda: gradbench.ht_input(544, 100, complicated=True)),
    *NESTED,
]
LARGE = [
    ("lse", "gradient", lambda: gradbench.lse_input(1280000)),
    ("llsq", "gradient", lambda: gradbench.llsq_input(1024, 128)),
    ("kmeans", "dir", lambda: gradbench.kmeans_input(100, 10000, 16)),
    ("ode", "gradient", lambda: gradbench.ode_input(10000, 100)),
    ("gmm", "jacobian", lambda: gradbench.gmm_input(20, 25, 1000)),
    ("det", "gradient", lambda: gradbench.det_input(8)),
    ("lstm", "jacobian", lambda: gradbench.lstm_input(4, 4096)),
    ("ba", "jacobian", lambda: gradbench.ba_input(257, 65132, 225911)),
    ("ht", "jacobian", lambda: gradbench.ht_input(5000, 10000, complicated=False)),
    ("ht", "jacobian", lambda: gradbench.ht_input(5000, 10000, complicated=True)),
    *NESTED,
]


def timings(evaluation: dict[str, Callable[[Any], Any]], function: str, data: dict[str, Any],
            repeat: int) -> tuple[float, float]:  # fmt: skip
    """(first call, best later call) of one eval function, its input prepared first."""
    prepared = evaluation["prepare"](data)
    start = time.perf_counter()
    result = evaluation[function](prepared)
    if jax is not None:
        jax.block_until_ready(result)
    first = time.perf_counter() - start
    return first, best_time(lambda: evaluation[function](prepared), repeat)


def describe(data: dict[str, Any]) -> str:
    """An input's sizes for its row: its integer fields, its arrays' shapes,
    or ht's model and correspondences."""
    if "theta" in data:  # ht
        vertices = len(data["data"]["model"]["base_positions"])
        kind = "complicated" if data["us"] else "simple"
        return f"{kind}, v={vertices}, c={len(data['data']['correspondences'])}"
    sizes = ", ".join(f"{k}={v}" for k, v in data.items() if isinstance(v, int))
    return sizes or ", ".join(f"{k}{np.shape(data[k])}" for k in ("x", "sequence") if k in data)


def main() -> None:
    parser = argparse.ArgumentParser(description="GradBench's evals, tidu against JAX")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--large", action="store_true")
    parser.add_argument("--evals", nargs="+", metavar="EVAL", help="only these evals' rows")
    args = parser.parse_args()
    disk_cache.set_cache_dir(None)  # first calls compile
    ours = gradbench.evals(tnp, td, td_special)
    theirs = gradbench.evals(jnp, jax, jax.scipy.special) if jax is not None else None
    print(f"{'eval':44s} {'first ours':>10s} {'first JAX':>10s} {'run ours':>10s} "
          f"{'run JAX':>10s} {'ratio':>6s}")  # fmt: skip
    rows = [
        row for row in (LARGE if args.large else SMALL) if not args.evals or row[0] in args.evals
    ]
    for name, function, make_input in progress(rows, "gradbench"):
        data = make_input()
        label = f"{name}.{function} ({describe(data)})"
        row = [*timings(ours[name], function, data, args.repeat), float("nan"), float("nan")]
        if theirs is not None:
            try:
                row[2:] = timings(theirs[name], function, data, args.repeat)
            except ValueError as error:  # JAX: no reverse mode through while loops
                label += " JAX refuses" if "Reverse-mode" in str(error) else " JAX fails"
        row = [row[0], row[2], row[1], row[3]]
        print(f"{label:44s} {row[0]:10.3f} {row[1]:10.3f} {row[2] * 1e3:8.2f}ms "
              f"{row[3] * 1e3:8.2f}ms {row[2] / row[3]:6.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
