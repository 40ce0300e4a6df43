"""Concurrency stress: 8 threads call shared transformed functions (first calls
included: tracing, AD, compilation and the caches race) while each compiles
new ones of its own (closures over other constants, other shapes). Every
result must be bit-identical (same dtype, `np.array_equal`) to a serial run
of the same work, and no thread may raise.

`--fuzz-budget N` runs N rounds per thread (CI: 2).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

import tidu_mlir as td
import tidu_mlir.numpy as tnp

THREADS = 8
CI_ROUNDS = 2
DEADLINE = 600.0
"""Seconds for the whole threaded run (a deadlock fails instead of hanging)."""

Results = dict[str, Any]
Call = tuple[str, Callable[..., Any], tuple[Any, ...]]


def shared_calls() -> list[Call]:
    """Transformed functions all threads call, on fixed arguments (new function
    objects each time, so the serial run does not reuse the threaded one's stages)."""
    x = np.linspace(-1.0, 1.0, 6)
    m = np.arange(12.0).reshape(3, 4) / 10.0
    v = np.linspace(0.5, 1.5, 4)

    def smooth(x: Any) -> Any:
        return tnp.sum(tnp.sin(x) * x + tnp.exp(-x * x))

    def layer(m: Any, v: Any) -> Any:
        return tnp.tanh(m @ v)

    def loss(params: dict[str, Any], v: Any) -> Any:
        return tnp.mean((tnp.tanh(params["m"] @ v) - params["b"]) ** 2)

    params = {"m": m, "b": np.array([0.1, -0.2, 0.3])}
    return [
        ("jit smooth", td.jit(smooth), (x,)),
        ("grad smooth", td.grad(smooth), (x,)),
        ("hessian smooth", td.hessian(smooth), (x,)),
        ("jit layer", td.jit(layer), (m, v)),
        ("jvp layer", lambda m, v: td.jvp(layer, (m, v), (m, v))[1], (m, v)),
        ("vjp layer", lambda m, v: td.vjp(layer, m, v)[1](np.ones(3)), (m, v)),
        ("grad loss", td.grad(loss), (params, v)),
        (
            "vmap grad loss",
            td.vmap(td.grad(loss), in_axes=(None, 0)),
            (params, np.stack([v, v * 2])),
        ),
    ]


def own_calls(thread: int, round_: int) -> list[Call]:
    """Functions only this thread and round compile: other constants and shapes."""
    scale = 0.25 * (thread + 1) + round_
    size = 3 + (thread + round_) % 5
    weights = np.linspace(-1.0, 1.0, size * 2).reshape(2, size) * scale
    x = np.linspace(0.1, 0.9, size)

    def closure(x: Any) -> Any:
        return tnp.sum(tnp.tanh(weights @ x) ** 2) + scale * tnp.sum(x)

    return [
        (f"own jit {thread}.{round_}", td.jit(closure), (x,)),
        (f"own grad {thread}.{round_}", td.grad(closure), (x,)),
    ]


def work(thread: int, rounds: int, shared: list[Call], start: threading.Barrier | None) -> Results:
    """One thread's calls: the shared ones (rotated, so threads start on
    different functions) and its own, `rounds` times."""
    if start is not None:
        start.wait()
    results: Results = {}
    for round_ in range(rounds):
        rotated = shared[thread % len(shared) :] + shared[: thread % len(shared)]
        for name, fn, args in rotated + own_calls(thread, round_):
            results[f"{thread}/{round_}/{name}"] = fn(*args)
    return results


def run_threaded(rounds: int) -> Results:
    shared = shared_calls()
    start = threading.Barrier(THREADS)
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        futures = [pool.submit(work, t, rounds, shared, start) for t in range(THREADS)]
        results: Results = {}
        for future in futures:
            results.update(future.result(timeout=DEADLINE))
    return results


def run_serial(rounds: int) -> Results:
    shared = shared_calls()
    results: Results = {}
    for thread in range(THREADS):
        results.update(work(thread, rounds, shared, None))
    return results


def leaves(value: Any) -> list[np.ndarray]:
    return [np.asarray(leaf) for leaf in td.tree_util.tree_leaves(value)]


def test_threads_compute_what_a_serial_run_computes(fuzz_budget: Callable[[int], int]) -> None:
    rounds = fuzz_budget(CI_ROUNDS)
    threaded = run_threaded(rounds)
    serial = run_serial(rounds)
    assert threaded.keys() == serial.keys()
    for key, expected in serial.items():
        got, want = leaves(threaded[key]), leaves(expected)
        assert len(got) == len(want), key
        for a, b in zip(got, want, strict=True):
            assert a.dtype == b.dtype and np.array_equal(a, b), f"{key}: {a!r} != {b!r}"
