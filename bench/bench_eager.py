"""Per-op overhead of eager reverse mode: tidu_mlir.eager against PyTorch eager.

    python bench/bench_eager.py [--ops 100] [--size 8] [--repeat 30] [--backend llvm]
                                [--compiled-only]

Workload: a chain of `--ops` elementwise operations on a small float64 vector
(alternating y = sin(y) and y = y * 1.0001), then sum() and backward(). Small
tensors make the time per op the framework's overhead. Reported: the best of
`--repeat` runs, as µs per recorded op for the forward alone and for
forward + backward, and the ratio tidu / torch (> 1: tidu is slower). The
first run (tracing, linearizing, compiling each op's backward once) is
reported separately as warm-up. `--compiled-only` runs every backward
fragment as LLVM code (by default small ones run as numpy programs). PyTorch
is optional (`pip install torch==2.13.0`); without it only tidu's figures are
printed.

On the 2-core machine of docs/eager.md (PyTorch 2.13, one thread), µs/op:
forward 4.0 (torch 2.7-2.8), forward + backward 7.1-7.3 (torch 7.6-7.8);
`--compiled-only` 11.7; `--backend interp` 7.2. Before the per-op path of
docs/eager.md: 11.3 and 26.3-26.7.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import tidu_mlir.eager as te
from tidu_mlir.eager.functions import FUNCTIONS


def best_of(repeat: int, fn: Callable[[], Any]) -> float:
    """The best wall time of `repeat` calls, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def chain(x: Any, ops: int, sin: Callable[[Any], Any]) -> Any:
    """The benchmarked forward: `ops` recorded ops, then a sum."""
    y = x
    for index in range(ops):
        y = sin(y) if index % 2 == 0 else y * 1.0001
    return y.sum()


def tidu_figures(ops: int, size: int, repeat: int) -> dict[str, float]:
    x = te.tensor(np.linspace(0.1, 1.0, size), requires_grad=True)

    def forward() -> None:
        chain(x, ops, FUNCTIONS["sin"])

    def both() -> None:
        chain(x, ops, FUNCTIONS["sin"]).backward()

    start = time.perf_counter()
    both()
    warmup = time.perf_counter() - start
    return {"warmup": warmup, "forward": best_of(repeat, forward), "both": best_of(repeat, both)}


def torch_figures(ops: int, size: int, repeat: int) -> dict[str, float] | None:
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    x = torch.tensor(np.linspace(0.1, 1.0, size), requires_grad=True)

    def forward() -> None:
        chain(x, ops, torch.sin)

    def both() -> None:
        chain(x, ops, torch.sin).backward()

    both()
    return {"forward": best_of(repeat, forward), "both": best_of(repeat, both)}


def main() -> None:
    parser = argparse.ArgumentParser(description="Per-op overhead of eager reverse mode.")
    parser.add_argument("--ops", type=int, default=100)
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--backend", choices=["llvm", "interp"], default=None)
    parser.add_argument(
        "--compiled-only",
        action="store_true",
        help="run every backward fragment as LLVM code (no numpy programs for small ones)",
    )
    args = parser.parse_args()
    te.set_backend(args.backend)
    if args.compiled_only:
        te.RUNTIME.executor.numpy_limits = None
    recorded = args.ops + 1  # the chain and the sum
    ours = tidu_figures(args.ops, args.size, args.repeat)
    theirs = torch_figures(args.ops, args.size, args.repeat)
    runners = {compiled.backend for compiled in te.RUNTIME.executor.compiled.values()}
    print(f"chain of {args.ops} ops + sum on float64[{args.size}], best of {args.repeat}")
    print(f"tidu backward runs as: {', '.join(sorted(runners))}")
    print(f"tidu warm-up (trace, linearize, compile once): {ours['warmup'] * 1e3:.1f} ms")
    print(f"{'':18}{'tidu µs/op':>12}{'torch µs/op':>13}{'tidu/torch':>12}")
    for label, key in (("forward", "forward"), ("forward+backward", "both")):
        mine = ours[key] / recorded * 1e6
        if theirs is None:
            print(f"{label:18}{mine:12.1f}{'n/a':>13}{'n/a':>12}")
        else:
            other = theirs[key] / recorded * 1e6
            print(f"{label:18}{mine:12.1f}{other:13.1f}{mine / other:12.1f}")
    if theirs is None:
        print("PyTorch is not installed: pip install torch==2.13.0 for the comparison")


if __name__ == "__main__":
    main()
