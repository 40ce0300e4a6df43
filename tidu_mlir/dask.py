"""Compiled derivatives over Dask arrays (`pip install -e '.[dask]'`).

Dask schedules, tidu computes: each function is traced and differentiated
once here, on the client, at the shape of one block, and shipped to the
workers as IR text (`tidu_mlir.export.Exported`: no native or Python code
travels); a worker compiles it on its first block and reuses it for the rest.
Everything returns dask arrays (pytrees of them), lazily: run them with
`dask.compute`, `.compute()` or a `distributed.Client`.

* `map_blocks(fn, *args, batch_axis=0)`: `fn` (typically a `td.vmap`) applied
  block by block along the batch axis of the dask arrays among `args`.
* `grad_sum(loss, params, data, mean=False)` and `value_and_grad_sum`: the
  gradient of `sum_i loss(params, example_i)` over a chunked dataset, one
  batched gradient per block and a tree reduction.
* `jacobian(f, x, mode="rev"|"fwd", chunk=...)` and `hessian(f, x, chunk=...)`:
  blocks of rows (batched VJPs, or HVPs) or columns (batched JVPs).
"""

from __future__ import annotations

import functools
import operator
import string
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

try:
    import dask.array as da
    from dask.base import tokenize
    from dask.blockwise import blockwise
    from dask.delayed import Delayed, delayed
    from dask.highlevelgraph import HighLevelGraph, MaterializedLayer
except ImportError as error:  # an optional extra
    raise ImportError(
        "tidu_mlir.dask needs Dask: pip install -e '.[dask]' (dask and distributed)"
    ) from error

import tidu_mlir.api as td
import tidu_mlir.numpy as tnp
from tidu_mlir.export import Exported, export
from tidu_mlir.tree_util import tree_flatten, tree_unflatten

__all__ = ["grad_sum", "hessian", "jacobian", "map_blocks", "value_and_grad_sum"]


# --------------------------------------------------------------------------
# Blocks along the batch axis
# --------------------------------------------------------------------------


def _batch_chunks(leaves: Sequence[Any], batch_axis: int) -> tuple[int, ...]:
    """The block sizes along the batch axis, shared by every dask leaf."""
    arrays = [leaf for leaf in leaves if isinstance(leaf, da.Array)]
    if not arrays:
        raise TypeError("map_blocks needs at least one dask array among the arguments")
    for array in arrays:
        if not -array.ndim <= batch_axis < array.ndim:
            raise ValueError(f"batch_axis {batch_axis} is out of range for a {array.ndim}-d array")
    sizes = {array.shape[batch_axis] for array in arrays}
    if len(sizes) > 1:
        raise ValueError(f"the dask arrays differ in size along batch_axis: {sorted(sizes)}")
    return arrays[0].chunks[batch_axis]


def _blocks_of(array: Any, chunks: tuple[int, ...], batch_axis: int) -> list[Any]:
    """The delayed blocks of the dask array `array` along `batch_axis` (whole
    along the other axes), chunked as `chunks` (rechunked when it is not).
    (Dask's own annotations of `Array` are partial: typed as Any here.)"""
    axis = batch_axis % array.ndim
    wanted = tuple(chunks if a == axis else (n,) for a, n in enumerate(array.shape))
    if array.chunks != wanted:
        array = array.rechunk(wanted)
    return list(np.moveaxis(array.to_delayed(), axis, 0).reshape(len(chunks)))


def _example(leaf: Any, size: int, batch_axis: int) -> Any:
    """A zero array shaped like one block of the dask leaf (other leaves as they are)."""
    if not isinstance(leaf, da.Array):
        return leaf
    shape = [int(n) for n in leaf.shape]
    shape[batch_axis] = size
    return np.zeros(shape, leaf.dtype)


SCATTER_BYTES = 1 << 20
"""Objects the tasks share (exported functions with the arrays they captured,
parameters) of at least this many bytes of arrays are scattered to the
workers of the active `distributed` client when the graph is built, not
written into the graph (which Dask sends through its scheduler)."""


def _shared(value: Any, nbytes: int) -> Any:
    """`value` as one node of the task graph: each worker receives it once, not
    once per task that uses it; scattered beforehand (a future) when it is
    large and a `distributed` client is active."""
    client = _active_client() if nbytes >= SCATTER_BYTES else None
    if client is None:
        return delayed(value, pure=True)
    return client.scatter(value, broadcast=True, hash=True)


def _active_client() -> Any:
    """The current `distributed` client, if there is one."""
    try:
        from distributed import default_client
    except ImportError:  # plain Dask schedulers only
        return None
    try:
        return default_client()
    except ValueError:  # no client started
        return None


def _shipped(exported: Exported) -> Any:
    """`exported` (and the arrays it captured) as one node of the task graph."""
    captured = sum(s.nbytes for s in exported.sources if isinstance(s, np.ndarray))
    return _shared(exported, captured)


def _run_block(exported: Exported, tree: Any, *leaves: Any) -> list[Any]:
    """On a worker: the exported function on one block, its result leaves."""
    return tree_flatten(exported(*tree_unflatten(tree, list(leaves))))[0]


def _block_runs(calls: Sequence[tuple[Any, ...]]) -> list[Delayed]:
    """`_run_block(*call)` for each block's `call`, delayed, keyed `(name, b)`
    for block `b`: the blocks of one collection (`_joined_leaf`)."""
    name = f"tidu-blocks-{tokenize(*calls)}"
    return [delayed(_run_block, pure=True)(*call, dask_key_name=(name, b))
            for b, call in enumerate(calls)]  # fmt: skip


def _one_layer(results: Sequence[Delayed]) -> HighLevelGraph:
    """The graph of the delayed `results` of `_block_runs` with their tasks in
    one layer, named as their keys are: the input a `Blockwise` layer indexes
    (a `Delayed`'s own task is the layer named by its key)."""
    name = results[0].key[0]
    merged = HighLevelGraph.merge(*(r.__dask_graph__() for r in results))
    own = {r.key for r in results}
    layers = {k: layer for k, layer in merged.layers.items() if k not in own}
    dependencies = {k: deps for k, deps in merged.dependencies.items() if k not in own}
    layers[name] = MaterializedLayer({r.key: merged.layers[r.key][r.key] for r in results})
    dependencies[name] = set().union(*(merged.dependencies[r.key] for r in results))
    return HighLevelGraph(layers, dependencies)


def _blockwise(fn: Callable[..., Any], args: tuple[Any, ...], batch_axis: int
               ) -> tuple[list[Any], list[Exported], tuple[int, ...]]:  # fmt: skip
    """One delayed result (the list of result leaves) per block, the function
    exported for each block, and the block sizes."""
    leaves, tree = tree_flatten(args)
    chunks = _batch_chunks(leaves, batch_axis)
    blocks = {
        k: _blocks_of(leaf, chunks, batch_axis)
        for k, leaf in enumerate(leaves)
        if isinstance(leaf, da.Array)
    }
    by_size = {
        size: export(fn, *tree_unflatten(tree, [_example(x, size, batch_axis) for x in leaves]))
        for size in set(chunks)
    }
    shipped = {size: _shipped(e) for size, e in by_size.items()}
    # The other leaves (parameters) are graph nodes too: sent once per worker.
    whole = {k: _shared(x, np.asarray(x).nbytes) for k, x in enumerate(leaves) if k not in blocks}
    block_leaves = [
        [blocks[k][b] if k in blocks else whole[k] for k in range(len(leaves))]
        for b in range(len(chunks))
    ]
    calls = [(shipped[size], tree, *block_leaves[b]) for b, size in enumerate(chunks)]
    return _block_runs(calls), [by_size[size] for size in chunks], chunks


def _joined_leaf(results: Sequence[Delayed], exported: Sequence[Exported], j: int, axis: int
                 ) -> Any:  # fmt: skip
    """Result leaf `j` of every block (`results` of `_block_runs`: delayed
    lists of leaves) as one dask array, the blocks joined along `axis`. A
    `Blockwise` layer of one getitem per block, which Dask fuses with the
    blockwise operations that follow (a sum's first step: one task per block
    for both)."""
    shapes = [e.out_specs[j][0] for e in exported]
    dtype = np.dtype(exported[0].out_specs[j][1])
    ndim = len(shapes[0])
    axis %= max(ndim, 1)
    blocks = results[0].key[0]
    name = f"tidu-block-leaf-{tokenize(blocks, j)}"
    indices = string.ascii_lowercase[:ndim]
    layer = blockwise(
        operator.getitem, name, indices, blocks, indices[axis], j, None,
        numblocks={blocks: (len(results),)},
        new_axes={index: 1 for a, index in enumerate(indices) if a != axis},
    )  # fmt: skip
    leaf_graph = HighLevelGraph({name: layer}, {name: {blocks}})
    graph = HighLevelGraph.merge(_one_layer(results), leaf_graph)
    chunks = tuple(
        tuple(shape[a] for shape in shapes) if a == axis else (shapes[0][a],) for a in range(ndim)
    )
    # Dask's annotation of Array.__new__ omits the graph, name and chunks it takes.
    return da.Array(graph, name, chunks, dtype=dtype)  # pyright: ignore[reportCallIssue]


def map_blocks(fn: Callable[..., Any], *args: Any, batch_axis: int = 0) -> Any:
    """`fn(*args)` computed block by block: each dask array among the pytrees
    `args` is cut along `batch_axis` (all of them into the same blocks: the
    first one's chunks, the others rechunked to match), the other leaves go
    whole to every block, and each result leaf, which must keep the batch
    along `batch_axis`, is concatenated back. A pytree of dask arrays."""
    results, exported, chunks = _blockwise(fn, args, batch_axis)
    _check_batched_results(exported, chunks, batch_axis)
    count = len(exported[0].out_specs)
    leaves = [_joined_leaf(results, exported, j, batch_axis) for j in range(count)]
    return tree_unflatten(exported[0].out_tree, leaves)


def _check_batched_results(exported: Sequence[Exported], chunks: tuple[int, ...],
                           batch_axis: int) -> None:  # fmt: skip
    """Refuse a function whose result leaves do not keep the batch: each must
    have the block's size along `batch_axis`, or the blocks cannot be joined."""
    for e, size in zip(exported, chunks, strict=True):
        for j, (shape, _) in enumerate(e.out_specs):
            if not -len(shape) <= batch_axis < len(shape) or shape[batch_axis] != size:
                raise ValueError(
                    f"map_blocks: result leaf {j} of a block of {size} has shape "
                    f"{tuple(shape)}; each result must keep the batch of {size} along "
                    f"batch_axis {batch_axis}"
                )


# --------------------------------------------------------------------------
# Gradients of sums over a dataset
# --------------------------------------------------------------------------


SPLIT_EVERY = 8
"""How many partial results one task of `value_and_grad_sum`'s tree reduction adds."""


def _added_leaves(*partials: Sequence[Any]) -> list[Any]:
    """On a worker: the leaf-by-leaf sum of lists of result leaves."""
    return [functools.reduce(np.add, leaves) for leaves in zip(*partials, strict=True)]


def _scaled_leaf(leaves: Sequence[Any], j: int, scale: float) -> np.ndarray:
    """Leaf `j` times `scale` (1.0: as it is)."""
    leaf = np.asarray(leaves[j])
    return leaf * scale if scale != 1.0 else leaf


def _tree_sum(partials: list[Any]) -> Any:
    """The leaf-by-leaf sum of the delayed lists `partials`, by a tree of
    delayed sums of `SPLIT_EVERY` each: one task per block, a few more."""
    while len(partials) > 1:
        partials = [
            delayed(_added_leaves, pure=True)(*partials[i : i + SPLIT_EVERY])
            for i in range(0, len(partials), SPLIT_EVERY)
        ]
    return partials[0]


def value_and_grad_sum(loss: Callable[[Any, Any], Any], params: Any, data: Any,
                       mean: bool = False) -> tuple[da.Array, Any]:  # fmt: skip
    """`sum_i loss(params, example_i)` and its gradient w.r.t. `params`, over
    the examples of `data` (a dask array or a pytree of them sharing their
    first axis; `loss` takes one example with that structure: a row of each).
    Each block computes one batched value and gradient on a worker; the
    blocks' lists of leaves are summed by a tree reduction on the workers
    (a block costs Dask one task: no per-leaf task until the total). With
    `mean`, divided by the example count. Returns (a 0-d dask array, a pytree
    like `params` of dask arrays)."""

    def block_value_and_grad(p: Any, block: Any) -> Any:
        total = lambda q: tnp.sum(td.vmap(loss, in_axes=(None, 0))(q, block))  # noqa: E731
        return td.value_and_grad(total)(p)

    results, exported, chunks = _blockwise(block_value_and_grad, (params, data), 0)
    scale = 1.0 / sum(chunks) if mean else 1.0
    total = _tree_sum(results)
    sums = [
        da.from_delayed(delayed(_scaled_leaf, pure=True)(total, j, scale), shape, np.dtype(dtype))
        for j, (shape, dtype) in enumerate(exported[0].out_specs)
    ]
    value, grads = tree_unflatten(exported[0].out_tree, sums)
    return value, grads


def grad_sum(loss: Callable[[Any, Any], Any], params: Any, data: Any, mean: bool = False) -> Any:
    """The gradient part of `value_and_grad_sum`."""
    return value_and_grad_sum(loss, params, data, mean)[1]


# --------------------------------------------------------------------------
# Jacobians and Hessians by blocks of basis vectors
# --------------------------------------------------------------------------


def _basis_rows(start: int, stop: int, size: int, dtype: str) -> np.ndarray:
    """Rows `start:stop` of the identity of order `size` (made on the worker)."""
    rows = np.zeros((stop - start, size), np.dtype(dtype))
    rows[np.arange(stop - start), np.arange(start, stop)] = 1
    return rows


def _by_basis_blocks(batched: Callable[[Any, Any], Any], x: np.ndarray, size: int,
                     chunk: int) -> Any:  # fmt: skip
    """`batched(x, basis_block)` over blocks of `chunk` basis vectors of R^size
    (each of `x`'s dtype), stacked along a first axis of length `size`."""
    if chunk < 1:
        raise ValueError(f"chunk must be a positive number of basis vectors, got {chunk}")
    starts = range(0, size, chunk)
    exported = {n: export(batched, x, np.zeros((n, size), x.dtype)) for n in
                {min(chunk, size - s) for s in starts}}  # fmt: skip
    shipped = {n: _shipped(e) for n, e in exported.items()}
    point_and_basis = tree_flatten((x, x))[1]  # the structure of `batched`'s arguments
    x_node = _shared(x, x.nbytes)
    block_exports = [exported[min(chunk, size - start)] for start in starts]
    results = _block_runs([
        (shipped[min(chunk, size - start)], point_and_basis, x_node,
         delayed(_basis_rows, pure=True)(start, min(start + chunk, size), size, x.dtype.name))
        for start in starts
    ])  # fmt: skip
    return _joined_leaf(results, block_exports, 0, 0)


def _flat_function(f: Callable[[Any], Any], shape: tuple[int, ...]) -> Callable[[Any], Any]:
    """`f` on a flat vector: reshaped to `shape` in, raveled out."""
    return lambda v: tnp.reshape(f(tnp.reshape(v, shape)), (-1,))


def jacobian(f: Callable[[Any], Any], x: Any, mode: str = "rev", chunk: int = 256) -> da.Array:
    """The Jacobian of `f` (one array in, one array out) at `x`, shaped
    `f(x).shape + x.shape`, computed in blocks of `chunk` rows (`mode="rev"`:
    batched VJPs with basis cotangents) or columns (`"fwd"`: batched JVPs)."""
    x = np.asarray(x)
    flat_f = _flat_function(f, x.shape)
    flat_x = x.reshape(-1)
    out_shape = td.jit(f)(x).shape  # traced once to learn the output shape
    m = int(np.prod(out_shape, dtype=np.int64))
    if mode == "rev":
        rows = lambda v, cts: td.vmap(lambda ct: td.vjp(flat_f, v)[1](ct)[0])(cts)  # noqa: E731
        flat = _by_basis_blocks(rows, flat_x, m, chunk)
    elif mode == "fwd":
        cols = lambda v, ts: td.vmap(lambda t: td.jvp(flat_f, (v,), (t,))[1])(ts)  # noqa: E731
        flat = _by_basis_blocks(cols, flat_x, flat_x.size, chunk).T
    else:
        raise ValueError(f"mode must be 'rev' or 'fwd', got {mode!r}")
    return flat.reshape(*out_shape, *x.shape)


def hessian(f: Callable[[Any], Any], x: Any, chunk: int = 256) -> da.Array:
    """The Hessian of a scalar `f` at `x`, shaped `x.shape + x.shape`, in blocks
    of `chunk` rows, each a batch of Hessian-vector products (forward over
    reverse)."""
    x = np.asarray(x)
    flat_f = _flat_function(lambda v: tnp.reshape(f(v), (1,)), x.shape)
    scalar = lambda v: flat_f(v)[0]  # noqa: E731
    hvps = lambda v, vs: td.vmap(lambda t: td.jvp(td.grad(scalar), (v,), (t,))[1])(vs)  # noqa: E731
    flat = _by_basis_blocks(hvps, x.reshape(-1), x.size, chunk)
    return flat.reshape(*x.shape, *x.shape)
