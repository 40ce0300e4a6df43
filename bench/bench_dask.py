"""`tidu_mlir.dask` on LocalClusters of 1 and 2 worker processes, in one run.

    python bench/bench_dask.py [--examples 1000000] [--chunk 50000] [--repeat 3] [--passes 5]

* per-example gradients of a logistic loss (100 features) over `--examples`
  examples made on the workers (`da.random`), `map_blocks(vmap(grad(loss)))`
  reduced on the workers (a sum over examples, so nothing large comes back):
  warm time (best of `--repeat`, after one call that compiles) with 1 and with
  2 workers: one pass alone (its latency, with Dask's start and end of a
  computation), and `--passes` passes at other parameters submitted
  together, per pass (the throughput of a busy cluster, as a dataset's
  gradients at several points, a line search's, are computed); the
  throughput ratio (target: 2 workers >= 1.6x 1 worker) is the latter's;
  one process (`td.vmap(td.grad(loss))` on the same data in memory) alongside.
* per-task overhead: the same on tiny blocks (10 examples, 200 blocks), warm,
  per block (target: < 5 ms), and per Dask task (a block is its function's
  task, one task per result leaf, and its share of the reduction); and
  `grad_sum` on those blocks (one task per block and its share of a tree of
  sums), per block.
* the conditions: the load average before and after (the machine's cores are
  shared) and the workers' `OMP_NUM_THREADS` (Dask's nanny sets 1: one core
  per single-threaded worker, no OpenMP threads fighting over the cores).
* the 20,000 x 2,000 Jacobian of tanh(A @ x) (A captured) by `jacobian(...,
  mode="fwd", chunk=500)` on 2 workers against `td.jacfwd` in this process:
  equal, and both times.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any, cast

import dask.array as da
import numpy as np
from dask.base import collections_to_expr
from distributed import Client, LocalCluster

import tidu_mlir as td
import tidu_mlir.dask as tdd
import tidu_mlir.numpy as tnp

FEATURES = 100


def loss(params, example):
    x, y = example
    return tnp.log(1.0 + tnp.exp(-y * (x @ params["w"] + params["b"])))


PER_EXAMPLE = td.vmap(td.grad(loss), in_axes=(None, 0))


def best(fn: Callable[[], Any], repeat: int) -> float:
    fn()  # compiles on the workers
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def dataset(examples: int, chunk: int) -> tuple[da.Array, da.Array]:
    rng = da.random.default_rng(0)
    x = rng.standard_normal((examples, FEATURES), chunks=(chunk, FEATURES))
    y = da.sign(rng.standard_normal(examples, chunks=chunk))
    return x, y


def persisted_dataset(client: Client, examples: int, chunk: int) -> list[da.Array]:
    """The dataset, made once and kept on the workers (all of them started)."""
    data = [a.persist() for a in dataset(examples, chunk)]
    client.wait_for_workers(len(client.nthreads()))
    return data


def per_example_time(client: Client, examples: int, chunk: int, repeat: int
                     ) -> tuple[float, int]:  # fmt: skip
    """The best warm time of the summed per-example gradients, and the number
    of tasks Dask runs for them (the data, kept on the workers, is not in the
    graph: its blocks are futures)."""
    params = {"w": np.full(FEATURES, 0.01), "b": np.float64(0.0)}
    data = persisted_dataset(client, examples, chunk)
    grads = tdd.map_blocks(PER_EXAMPLE, params, tuple(data))
    summed = [grads["w"].sum(axis=0), grads["b"].sum()]
    # The graph Dask runs: both sums optimized together (chains fused; with
    # `dask.optimize(...)` each would fuse its own copy of the block tasks).
    tasks = len(collections_to_expr(summed).optimize().__dask_graph__())
    return best(lambda: client.compute(summed, sync=True), repeat), tasks


def grad_sum_time(client: Client, examples: int, chunk: int, repeat: int) -> float:
    """The best warm time of `grad_sum` of the loss over the data."""
    params = {"w": np.full(FEATURES, 0.01), "b": np.float64(0.0)}
    data = persisted_dataset(client, examples, chunk)
    grads = tdd.grad_sum(loss, params, tuple(data))
    return best(lambda: client.compute(grads, sync=True), repeat)


def steady_time(client: Client, examples: int, chunk: int, repeat: int, passes: int) -> float:
    """The best warm time per pass of `passes` gradient evaluations over the data
    (each at other parameters) submitted together: the cluster kept busy, no
    wait for one pass to end before the next starts (throughput, not latency)."""
    data = persisted_dataset(client, examples, chunk)
    sums = []
    for k in range(passes):
        params = {"w": np.full(FEATURES, 0.01 * (k + 1)), "b": np.float64(0.0)}
        grads = tdd.map_blocks(PER_EXAMPLE, params, tuple(data))
        sums.append([grads["w"].sum(axis=0), grads["b"].sum()])
    return best(lambda: client.compute(sums, sync=True), repeat) / passes


def cluster_times(workers: int, args: argparse.Namespace
                  ) -> tuple[float, float, float, float, float]:  # fmt: skip
    """On `workers` single-threaded processes: the big run's time, its time per
    pass in steady state, the tiny run's time per block and per task, and
    `grad_sum`'s time per tiny block."""
    with (
        LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        # Dask's annotation of Client.run covers its asynchronous form only.
        threads = cast("dict[str, str]", client.run(lambda: os.environ.get("OMP_NUM_THREADS")))
        print(f"{workers} worker(s), OMP_NUM_THREADS in the workers: {set(threads.values())}")
        big, _ = per_example_time(client, args.examples, args.chunk, args.repeat)
        steady = steady_time(client, args.examples, args.chunk, args.repeat, args.passes)
        tiny, tasks = per_example_time(client, 2000, 10, args.repeat)
        summed = grad_sum_time(client, 2000, 10, args.repeat)
    return big, steady, tiny / 200, tiny / tasks, summed / 200


def one_process_time(examples: int, repeat: int) -> float:
    x, y = (np.asarray(a) for a in dataset(examples, examples))
    params = {"w": np.full(FEATURES, 0.01), "b": np.float64(0.0)}
    return best(lambda: PER_EXAMPLE(params, (x, y)), repeat)


def jacobian_times(repeat: int) -> tuple[float, float, bool]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((20_000, 2_000)) / 50
    x = rng.standard_normal(2_000)
    f = lambda v: tnp.tanh(a @ v)  # noqa: E731
    local = td.jacfwd(f)
    t_local = best(lambda: local(x), 1)
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        lazy = tdd.jacobian(f, x, mode="fwd", chunk=500)
        t_dask = best(lambda: client.compute(lazy, sync=True), repeat)
        equal = bool(np.allclose(client.compute(lazy, sync=True), local(x), rtol=1e-12))
    return t_local, t_dask, equal


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--passes", type=int, default=5, help="passes in flight (throughput)")
    args = parser.parse_args()
    print("load average (1, 5, 15 min) before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    one, steady_one, tiny_one, task_one, summed_one = cluster_times(1, args)
    two, steady_two, tiny_two, task_two, summed_two = cluster_times(2, args)
    local = one_process_time(args.examples, args.repeat)
    print(f"per-example gradients, {args.examples} x {FEATURES}, blocks of {args.chunk}:")
    print(f"  one pass: 1 worker {one:.3f} s, 2 workers {two:.3f} s, "
          f"one process (no Dask) {local:.3f} s; 1 worker / 2 workers {one / two:.2f}")  # fmt: skip
    print(f"  {args.passes} passes in flight, per pass: 1 worker {steady_one:.3f} s, 2 workers "
          f"{steady_two:.3f} s; throughput 2 workers / 1 worker: {steady_one / steady_two:.2f} "
          "(target >= 1.6)")  # fmt: skip
    print(f"per-task overhead (warm, 10-example blocks): 1 worker {tiny_one * 1e3:.2f} ms, "
          f"2 workers {tiny_two * 1e3:.2f} ms per block (target < 5); per task "
          f"{task_one * 1e3:.2f} ms, {task_two * 1e3:.2f} ms")  # fmt: skip
    print(f"grad_sum per block (warm, 10-example blocks): 1 worker {summed_one * 1e3:.2f} ms, "
          f"2 workers {summed_two * 1e3:.2f} ms (target < 5)")  # fmt: skip
    t_local, t_dask, equal = jacobian_times(args.repeat)
    print(f"Jacobian 20000 x 2000 (fwd, blocks of 500 columns): 2 workers {t_dask:.2f} s, "
          f"td.jacfwd in one process {t_local:.2f} s, equal: {equal}")  # fmt: skip
    print("load average (1, 5, 15 min) after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
