"""`tidu_mlir.dask` on LocalClusters of 1 and 2 worker processes, in one run.

    python bench/bench_dask.py [--examples 1000000] [--chunk 50000] [--repeat 3]
                               [--passes 5] [--rounds 3]

Both clusters are started first and kept up; their measurements alternate,
round by round, so that a slow spell of this shared machine falls on both
rather than on whichever cluster happened to run then.

* per-example gradients of a logistic loss (100 features) over `--examples`
  examples made on the workers (`da.random`), `map_blocks(vmap(grad(loss)))`
  reduced on the workers (a sum over examples, so nothing large comes back):
  warm time (best of `--repeat`, after one call that compiles) with 1 and with
  2 workers: one pass alone (its latency, with Dask's start and end of a
  computation), and `--passes` passes at other parameters submitted
  together, per pass (the throughput of a busy cluster, as a dataset's
  gradients at several points, a line search's, are computed), measured in
  each of `--rounds` rounds; the throughput ratio (target: 2 workers >= 1.6x
  1 worker) is the best pass time of 1 worker over that of 2 workers, with
  each round's own ratio alongside; one process (`td.vmap(td.grad(loss))` on
  the same data in memory) for comparison.
* per-block overhead on tiny blocks (10 examples, 200 blocks), warm, per
  block (target: < 5 ms): `map_blocks` alone (its tasks: the function's and
  one per result leaf; the per-example gradients gathered), `map_blocks`
  followed by Dask's own sums of the leaves (which add Dask's reduction
  tasks), and `grad_sum` (one task per block and its share of a tree of
  sums); and the mean time per Dask task of the summed graph.
* the conditions: the load average before and after (the machine's cores are
  shared) and the workers' `OMP_NUM_THREADS` (Dask's nanny sets 1: one core
  per single-threaded worker, no OpenMP threads fighting over the cores).
* the 20,000 x 2,000 Jacobian of tanh(A @ x) (A captured) by `jacobian(...,
  mode="fwd", chunk=500)` on 2 workers against `td.jacfwd` in this process:
  equal, and both times.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any, cast

import dask.array as da
import numpy as np
from dask.base import collections_to_expr
from distributed import Client, LocalCluster

import tidu_mlir as td
import tidu_mlir.dask as tdd
import tidu_mlir.numpy as tnp

FEATURES = 100
WORKER_COUNTS = (1, 2)
TINY_EXAMPLES, TINY_CHUNK = 2000, 10


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


def persisted_dataset(client: Client, examples: int, chunk: int) -> tuple[da.Array, ...]:
    """The dataset, made once and kept on the workers (all of them started)."""
    client.wait_for_workers(len(client.nthreads()))
    return tuple(client.persist(list(dataset(examples, chunk))))


def parameters(k: int = 0) -> dict[str, Any]:
    return {"w": np.full(FEATURES, 0.01 * (k + 1)), "b": np.float64(0.0)}


def summed_per_example_grads(data: tuple[da.Array, ...], k: int = 0) -> list[da.Array]:
    """The per-example gradients at `parameters(k)`, summed over the examples by Dask."""
    grads = tdd.map_blocks(PER_EXAMPLE, parameters(k), data)
    return [grads["w"].sum(axis=0), grads["b"].sum()]


def one_pass_time(client: Client, data: tuple[da.Array, ...], repeat: int) -> float:
    """The best warm time of one pass of summed per-example gradients."""
    summed = summed_per_example_grads(data)
    return best(lambda: client.compute(summed, sync=True), repeat)


def steady_time(client: Client, data: tuple[da.Array, ...], repeat: int, passes: int) -> float:
    """The best warm time per pass of `passes` gradient evaluations over the data
    (each at other parameters) submitted together: the cluster kept busy, no
    wait for one pass to end before the next starts (throughput, not latency)."""
    sums = [summed_per_example_grads(data, k) for k in range(passes)]
    return best(lambda: client.compute(sums, sync=True), repeat) / passes


def tiny_block_times(client: Client, repeat: int) -> tuple[float, float, float, float]:
    """Per tiny block: `map_blocks` alone (gathered), `map_blocks` and Dask's
    sums, `grad_sum`; and the summed graph's time per Dask task (the data,
    kept on the workers, is not in the graph: its blocks are futures)."""
    data = persisted_dataset(client, TINY_EXAMPLES, TINY_CHUNK)
    grads = tdd.map_blocks(PER_EXAMPLE, parameters(), data)
    leaves = [grads["w"], grads["b"]]
    summed = summed_per_example_grads(data)
    # The graph Dask runs: both sums optimized together (chains fused; with
    # `dask.optimize(...)` each would fuse its own copy of the block tasks).
    tasks = len(collections_to_expr(summed).optimize().__dask_graph__())
    gradient = tdd.grad_sum(loss, parameters(), data)
    blocks = TINY_EXAMPLES // TINY_CHUNK
    alone, with_sums, grad_sum = (
        best(lambda c=c: client.compute(c, sync=True), repeat) / blocks
        for c in (leaves, summed, gradient)
    )
    return alone, with_sums, grad_sum, with_sums * blocks / tasks


@contextlib.contextmanager
def clusters() -> Iterator[dict[int, Client]]:
    """A client on a LocalCluster of each size in `WORKER_COUNTS`, single-threaded workers."""
    with contextlib.ExitStack() as stack:
        clients = {}
        for workers in WORKER_COUNTS:
            cluster = stack.enter_context(
                LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None)
            )
            clients[workers] = stack.enter_context(Client(cluster, set_as_default=False))
        yield clients


def one_process_time(examples: int, repeat: int) -> float:
    x, y = (np.asarray(a) for a in dataset(examples, examples))
    return best(lambda: PER_EXAMPLE(parameters(), (x, y)), repeat)


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


def report_clusters(args: argparse.Namespace) -> None:
    """Everything measured on the two clusters, their measurements interleaved."""
    with clusters() as clients:
        for workers, client in clients.items():
            # Dask's annotation of Client.run covers its asynchronous form only.
            threads = cast("dict[str, str]", client.run(lambda: os.environ.get("OMP_NUM_THREADS")))
            print(f"{workers} worker(s), OMP_NUM_THREADS in the workers: {set(threads.values())}")
        data = {w: persisted_dataset(c, args.examples, args.chunk) for w, c in clients.items()}
        one = {w: one_pass_time(c, data[w], args.repeat) for w, c in clients.items()}
        steady: dict[int, list[float]] = {w: [] for w in clients}
        for r in range(args.rounds):
            for w in WORKER_COUNTS if r % 2 == 0 else reversed(WORKER_COUNTS):
                steady[w].append(steady_time(clients[w], data[w], args.repeat, args.passes))
        del data  # 2 x 800 MB on the workers
        tiny = {w: tiny_block_times(c, args.repeat) for w, c in clients.items()}
    local = one_process_time(args.examples, args.repeat)
    print(f"per-example gradients, {args.examples} x {FEATURES}, blocks of {args.chunk}:")
    print(f"  one pass: 1 worker {one[1]:.3f} s, 2 workers {one[2]:.3f} s, one process "
          f"(no Dask) {local:.3f} s; 1 worker / 2 workers {one[1] / one[2]:.2f}")  # fmt: skip
    rounds = [f"{a / b:.2f}" for a, b in zip(steady[1], steady[2], strict=True)]
    print(f"  {args.passes} passes in flight, per pass, best of {args.rounds} rounds: 1 worker "
          f"{min(steady[1]):.3f} s, 2 workers {min(steady[2]):.3f} s; throughput 2 workers / "
          f"1 worker: {min(steady[1]) / min(steady[2]):.2f} (target >= 1.6); by round: "
          f"{', '.join(rounds)} (median {statistics.median(map(float, rounds)):.2f})")  # fmt: skip
    for label, k in (("map_blocks alone", 0), ("map_blocks + Dask's sums", 1), ("grad_sum", 2)):
        one_worker, two_workers = tiny[1][k] * 1e3, tiny[2][k] * 1e3
        print(f"per block, warm, {TINY_CHUNK}-example blocks, {label}: 1 worker {one_worker:.2f}"
              f" ms, 2 workers {two_workers:.2f} ms (target < 5)")  # fmt: skip
    print(f"per Dask task of map_blocks + sums: 1 worker {tiny[1][3] * 1e3:.2f} ms, "
          f"2 workers {tiny[2][3] * 1e3:.2f} ms")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--passes", type=int, default=5, help="passes in flight (throughput)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating throughput rounds")
    args = parser.parse_args()
    print("load average (1, 5, 15 min) before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    report_clusters(args)
    t_local, t_dask, equal = jacobian_times(args.repeat)
    print(f"Jacobian 20000 x 2000 (fwd, blocks of 500 columns): 2 workers {t_dask:.2f} s, "
          f"td.jacfwd in one process {t_local:.2f} s, equal: {equal}")  # fmt: skip
    print("load average (1, 5, 15 min) after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
