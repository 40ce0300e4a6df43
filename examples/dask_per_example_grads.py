"""Gradients over a dataset on a Dask cluster (needs `pip install -e '.[dask]'`).

    python examples/dask_per_example_grads.py [--examples 20000] [--workers 2]
    python examples/dask_per_example_grads.py --scheduler tcp://host:8786

A logistic-regression loss over N examples of 100 features, chunked in
blocks: `tidu_mlir.dask.value_and_grad_sum` gives the total loss and its
gradient (one compiled batched gradient per block on the workers, summed by a
tree reduction), `map_blocks` the per-example gradients. Without
`--scheduler` a LocalCluster of `--workers` processes is started. The results
are checked against one `td.value_and_grad` call on the whole array.
"""

from __future__ import annotations

import argparse

import dask.array as da
import numpy as np
from distributed import Client, LocalCluster

import tidu_mlir as td
import tidu_mlir.dask as tdd
import tidu_mlir.numpy as tnp

FEATURES = 100


def loss(params, example):
    x, y = example
    return tnp.log(1.0 + tnp.exp(-y * (x @ params["w"] + params["b"])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=20_000)
    parser.add_argument("--chunk", type=int, default=5_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--scheduler", help="address of a running Dask scheduler")
    args = parser.parse_args()

    # The data is made by the workers, block by block (as it would be loaded).
    rng = da.random.default_rng(0)
    x = rng.standard_normal((args.examples, FEATURES), chunks=(args.chunk, FEATURES))
    y = da.sign(rng.standard_normal(args.examples, chunks=args.chunk))
    params = {"w": np.random.default_rng(1).standard_normal(FEATURES) / 10, "b": np.float64(0.0)}
    data = (x, y)

    if args.scheduler:
        client = Client(args.scheduler)
    else:
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1,
                               dashboard_address=None)  # fmt: skip
        client = Client(cluster)
    with client:
        value, grads = client.compute(tdd.value_and_grad_sum(loss, params, data), sync=True)
        per_example = tdd.map_blocks(td.vmap(td.grad(loss), in_axes=(None, 0)), params, data)
        first_rows = client.compute(per_example["w"][:3], sync=True)
        local = client.compute(data, sync=True)

    total = lambda p: tnp.sum(td.vmap(loss, in_axes=(None, 0))(p, tuple(local)))  # noqa: E731
    expected_value, expected = td.value_and_grad(total)(params)
    print(f"{len(client.nthreads()) if args.scheduler else args.workers} workers, "
          f"{args.examples} examples in blocks of {args.chunk}")  # fmt: skip
    print(f"loss sum {float(value):.6f} (one process: {float(expected_value):.6f})")
    print(f"|grad w| {np.linalg.norm(grads['w']):.6f}, grad b {float(grads['b']):.6f}")
    print(f"per-example gradients, first rows of w: shape {first_rows.shape}")
    assert np.allclose(grads["w"], expected["w"]) and np.allclose(value, expected_value)


if __name__ == "__main__":
    main()
