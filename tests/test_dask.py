"""`tidu_mlir.dask` on a real `distributed.LocalCluster` of two worker
processes (started once for this file), against single-process `td` results;
shipping (`tidu_mlir.export`) without a cluster. Skipped without the `dask`
extra (`pip install -e '.[dask]'`)."""

from __future__ import annotations

import os
import pickle
import signal
import threading
from collections import Counter
from collections.abc import Iterator
from typing import cast

import cloudpickle
import numpy as np
import pytest

pytest.importorskip("distributed", reason="the 'dask' extra is not installed")

import dask  # noqa: E402
import dask.array as da  # noqa: E402
from dask.base import collections_to_expr, compute  # noqa: E402
from dask.diagnostics.progress import ProgressBar  # noqa: E402
from dask.utils import key_split  # noqa: E402
from distributed import Client, Event, LocalCluster  # noqa: E402

import tidu_mlir as td  # noqa: E402
import tidu_mlir.dask as tdd  # noqa: E402
import tidu_mlir.numpy as tnp  # noqa: E402
from tidu_mlir.export import (  # noqa: E402
    COMPILED,
    Exported,
    Transformed,
    compilation_count,
    export,
)
from tidu_mlir.lowering.runtime import COUNTS  # noqa: E402
from tidu_mlir.tree_util import tree_leaves  # noqa: E402

pytestmark = pytest.mark.xdist_group("dask")  # one cluster per test worker

FEATURES = 6
RNG = np.random.default_rng(0)
W = RNG.standard_normal((FEATURES, 3)) / 3
PARAMS = {"w": RNG.standard_normal(3) / 2, "b": np.float64(0.1)}


def loss(p, example):
    """Logistic loss of one example (x, y), features through a captured matrix."""
    x, y = example
    return tnp.log(1.0 + tnp.exp(-y * (tnp.tanh(x @ W) @ p["w"] + p["b"])))


def dataset(n: int, chunk: int) -> tuple[tuple[np.ndarray, np.ndarray], tuple[da.Array, ...]]:
    x = RNG.standard_normal((n, FEATURES))
    y = np.sign(RNG.standard_normal(n))
    return (x, y), (da.from_array(x, chunks=(chunk, FEATURES)), da.from_array(y, chunks=chunk))


def reference_value_and_grad(data: tuple[np.ndarray, np.ndarray]):
    total = lambda p: tnp.sum(td.vmap(loss, in_axes=(None, 0))(p, data))
    return td.value_and_grad(total)(PARAMS)


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with cluster, Client(cluster) as connected:
        yield connected


def assert_tree_close(actual, expected) -> None:
    for a, e in zip(tree_leaves(actual), tree_leaves(expected), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------
# Shipping
# --------------------------------------------------------------------------


def test_an_exported_gradient_pickles_as_text_and_compiles_once_per_process() -> None:
    (x, y), _ = dataset(20, 20)
    per_example = td.vmap(td.grad(loss), in_axes=(None, 0))
    exported = export(per_example, PARAMS, (x, y))
    blob = pickle.dumps(exported)
    assert b"func.func" in blob and b"\x7fELF" not in blob  # IR text, no object code
    shipped = pickle.loads(blob)
    assert isinstance(shipped, Exported) and shipped.fingerprint == exported.fingerprint
    before = COMPILED.compilations
    for _ in range(3):
        assert_tree_close(shipped(PARAMS, (x, y)), per_example(PARAMS, (x, y)))
    assert COMPILED.compilations == before + 1


def test_an_exported_function_checks_its_arguments() -> None:
    (x, y), _ = dataset(20, 20)
    exported = export(td.vmap(loss, in_axes=(None, 0)), PARAMS, (x, y))
    with pytest.raises(
        TypeError, match=r"argument 1\[0\] is float64\[10, 6\], expected float64\[20, 6\]"
    ):
        exported(PARAMS, (x[:10], y[:10]))
    with pytest.raises(TypeError, match="exported function takes"):
        exported(PARAMS, x)


def total_loss(p, data):
    """The summed loss over a batch: a module-level function, which `pickle` sends by name."""
    return tnp.sum(td.vmap(loss, in_axes=(None, 0))(p, data))


TRANSFORMS = {
    "jit": td.jit,
    "grad": td.grad,
    "value_and_grad": td.value_and_grad,
    "vmap": lambda f: td.vmap(td.grad(f), in_axes=(None, 0)),
    "jacfwd": td.jacfwd,
    "jacrev": td.jacrev,
    "hessian": td.hessian,
}
"""Each transform whose result is a function, applied to a loss of (params, data)."""


def transform_arguments(name: str) -> tuple:
    """(params, data) for the summed loss; for `vmap`, data batched over a leading axis."""
    (x, y), _ = dataset(8, 8)
    if name == "vmap":
        return PARAMS, (x.reshape(2, 4, FEATURES), y.reshape(2, 4))
    return PARAMS, (x, y)


def compiled_here() -> int:
    """Native compilations in this process: functions lowered or loaded from the disk cache."""
    return COUNTS["lowerings"] + COUNTS["disk-hits"]


@pytest.mark.parametrize("pickler", [pickle, cloudpickle], ids=["pickle", "cloudpickle"])
@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_a_transform_result_pickles_as_ir_text_and_its_copy_runs_it_compiled_once(
    name: str, pickler
) -> None:
    # pickle sends the module-level function by name; cloudpickle a lambda by value
    fn = total_loss if pickler is pickle else lambda p, data: total_loss(p, data) * 2.0
    transformed = TRANSFORMS[name](fn)
    args = transform_arguments(name)
    expected = transformed(*args)
    blob = pickler.dumps(transformed)
    assert b"func.func" in blob and b"\x7fELF" not in blob  # IR text, no object code
    (exported,) = transformed.signatures.values()
    pickler.dumps(transformed)
    assert next(iter(transformed.signatures.values())) is exported  # exported once, kept
    copy = pickle.loads(blob)
    assert isinstance(copy, Transformed) and len(copy.shipped) == 1
    assert_tree_close(copy(*args), expected)
    before = compiled_here()
    for _ in range(3):
        assert_tree_close(copy(*args), expected)
    assert compiled_here() == before  # the first call compiled it: no more compilation
    assert not copy.signatures  # run from the shipped text, never traced here
    assert len(pickle.loads(pickler.dumps(copy)).shipped) == 1  # a copy pickles what it got


def test_a_copy_traces_signatures_it_was_not_shipped_and_static_arguments_ship_none() -> None:
    (x, y), _ = dataset(8, 8)
    copy = pickle.loads(pickle.dumps(td.grad(total_loss)))
    assert not copy.shipped  # never called: nothing traced to ship
    assert_tree_close(copy(PARAMS, (x, y)), td.grad(total_loss)(PARAMS, (x, y)))
    assert len(copy.signatures) == 1
    scaled = td.jit(lambda v, k: v * k, static_argnums=1)
    assert_tree_close(scaled(x, 3), x * 3)
    static_copy = cloudpickle.loads(cloudpickle.dumps(scaled))
    assert not static_copy.shipped and static_copy.options["static_argnums"] == 1
    assert_tree_close(static_copy(x, 4), x * 4)


def unpicklable_closures():
    """A function capturing a lock, and one calling a function that captures it."""
    guard = threading.Lock()

    def guarded_double(x):
        with guard:
            return x * 2.0

    def guarded_sum(x):
        with guard:
            return tnp.sum(x * 2.0)

    def helped_sum(x):
        return tnp.sum(guarded_double(x))

    return guarded_sum, helped_sum


@pytest.mark.parametrize("pickler", [pickle, cloudpickle], ids=["pickle", "cloudpickle"])
def test_pickling_a_transform_of_an_unpicklable_closure_names_what_it_captures(pickler) -> None:
    guarded_sum, helped_sum = unpicklable_closures()
    for fn, culprit in (
        (guarded_sum, r"'guard' \(a lock\) captured by unpicklable_closures.<locals>.guarded_sum"),
        (
            helped_sum,
            r"'guard' \(a lock\) captured by unpicklable_closures.<locals>.guarded_double",
        ),
    ):
        transformed = td.grad(fn)
        np.testing.assert_allclose(transformed(np.ones(3)), 2.0)
        with pytest.raises(
            TypeError, match=rf"td.grad\({fn.__name__}\) cannot be pickled.*{culprit}"
        ):
            pickler.dumps(transformed)


def test_a_function_referring_to_its_own_transform_pickles_once_and_runs() -> None:
    def halving_sum(x, n=2):
        return tnp.sum(x) if n == 0 else recursive(x * 0.5, n - 1)

    recursive = td.jit(halving_sum, static_argnums=1)
    np.testing.assert_allclose(recursive(np.ones(4)), 1.0)
    copy = cloudpickle.loads(cloudpickle.dumps(recursive))  # the check re-entered itself
    np.testing.assert_allclose(copy(np.ones(4)), 1.0)


# --------------------------------------------------------------------------
# On the cluster
# --------------------------------------------------------------------------


def test_workers_run_a_submitted_jit_result_from_its_text_compiling_it_once(
    client: Client,
) -> None:
    (x, y), _ = dataset(40, 40)
    per_example = td.jit(lambda p, data: td.vmap(td.grad(loss), in_axes=(None, 0))(p, data))
    expected = per_example(PARAMS, (x, y))
    before = client.run(compiled_here), client.run(compilation_count)
    futures = [client.submit(per_example, PARAMS, (x, y), pure=False) for _ in range(8)]
    for result in client.gather(futures):
        assert_tree_close(result, expected)
    after = client.run(compiled_here), client.run(compilation_count)
    native, from_text = (
        [now[w] - then[w] for w in now] for then, now in zip(before, after, strict=True)
    )
    assert max(native) <= 1 and sum(from_text) >= 1, (before, after)  # once per worker, from text


def test_submitting_an_unpicklable_closure_fails_here_naming_it_before_any_task_is_sent(
    client: Client,
) -> None:
    guarded_sum, _ = unpicklable_closures()
    transformed = td.jit(guarded_sum)
    with pytest.raises(TypeError) as raised:
        client.submit(transformed, np.ones(3), key="tidu-unpicklable-task")
    causes = []
    error: BaseException | None = raised.value
    while error is not None:
        causes.append(str(error))
        error = error.__cause__
    assert any("'guard' (a lock) captured by" in cause for cause in causes), causes
    # Dask's annotation of run_on_scheduler covers its asynchronous form only.
    scheduled = cast(
        "list[str]", client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.tasks))
    )
    assert "tidu-unpicklable-task" not in scheduled


def test_map_blocks_matches_the_single_process_vmap(client: Client) -> None:
    (x, y), data = dataset(230, 50)  # five blocks, the last one smaller
    per_example = td.vmap(td.grad(loss), in_axes=(None, 0))
    lazy = tdd.map_blocks(per_example, PARAMS, data)
    assert isinstance(lazy["w"], da.Array) and lazy["w"].shape == (230, 3)
    assert lazy["w"].chunks == ((50, 50, 50, 50, 30), (3,))
    assert_tree_close(client.compute(lazy).result(), per_example(PARAMS, (x, y)))


def test_map_blocks_rechunks_misaligned_arrays_and_refuses_different_sizes(client: Client) -> None:
    (x, y), _ = dataset(100, 100)
    data = (da.from_array(x, chunks=(40, 3)), da.from_array(y, chunks=25))
    lazy = tdd.map_blocks(td.vmap(loss, in_axes=(None, 0)), PARAMS, data)
    np.testing.assert_allclose(
        client.compute(lazy).result(), td.vmap(loss, in_axes=(None, 0))(PARAMS, (x, y))
    )
    with pytest.raises(ValueError, match=r"differ in size along batch_axis: \[99, 100\]"):
        tdd.map_blocks(td.vmap(loss, in_axes=(None, 0)), PARAMS, (data[0], data[1][:99]))


@pytest.mark.parametrize(
    ("fn", "shape"), [(tnp.sum, r"\(\)"), (lambda v: tnp.sum(v, axis=0), r"\(6,\)")]
)
def test_map_blocks_refuses_a_function_whose_results_lose_the_batch(fn, shape: str) -> None:
    _, (x, _) = dataset(100, 25)
    with pytest.raises(ValueError, match=rf"block of 25 has shape {shape}; .* keep the batch"):
        tdd.map_blocks(fn, x)


def test_grad_sum_matches_the_single_process_gradient_and_workers_compile_once(
    client: Client,
) -> None:
    (x, y), data = dataset(600, 100)
    before = client.run(compilation_count)
    value, grads = tdd.value_and_grad_sum(loss, PARAMS, data)
    assert isinstance(value, da.Array) and isinstance(grads["w"], da.Array)
    computed_value, computed_grads = client.compute((value, grads), sync=True)
    expected_value, expected_grads = reference_value_and_grad((x, y))
    np.testing.assert_allclose(computed_value, expected_value, rtol=1e-12)
    assert_tree_close(computed_grads, expected_grads)
    mean = client.compute(tdd.grad_sum(loss, PARAMS, data, mean=True), sync=True)
    assert_tree_close(mean, {k: v / 600 for k, v in expected_grads.items()})
    # Twelve blocks of one function (the same text both times): each worker
    # compiled it at most once.
    after = client.run(compilation_count)
    new = [after[w] - before[w] for w in after]
    assert max(new) <= 1 and sum(new) >= 1, (before, after)


def test_the_synchronous_scheduler_runs_every_block_here_with_dask_s_progress_bar(
    capsys: pytest.CaptureFixture[str],
) -> None:
    (x, y), data = dataset(91, 13)  # seven blocks of a size no other test uses
    value, grads = tdd.value_and_grad_sum(loss, PARAMS, data)
    before = COMPILED.compilations
    with ProgressBar():
        computed_value, computed_grads = compute(value, grads, scheduler="synchronous")
    assert COMPILED.compilations == before + 1  # the blocks ran here, compiled once
    expected_value, expected_grads = reference_value_and_grad((x, y))
    np.testing.assert_allclose(computed_value, expected_value, rtol=1e-12)
    assert_tree_close(computed_grads, expected_grads)
    assert "100% Completed" in capsys.readouterr().out


def test_grad_sum_costs_dask_one_task_per_block_and_a_tree_of_sums() -> None:
    _, data = dataset(640, 10)  # 64 blocks
    value, grads = tdd.value_and_grad_sum(loss, PARAMS, data)
    graph = {}
    for leaf in tree_leaves((value, grads)):
        graph.update(leaf.__dask_graph__())
    data_keys = {key for array in data for key in array.__dask_graph__()}
    ours = len(graph.keys() - data_keys)
    # 64 block tasks, 8 + 1 sums of 8, 3 leaves taken out (a task and a
    # from_delayed chunk each), and the function and two parameters as nodes.
    assert ours == 64 + 9 + 3 * 2 + 3, ours


def test_map_blocks_result_leaves_fuse_with_dask_s_sums_one_task_per_block_and_leaf() -> None:
    (x, y), data = dataset(640, 10)  # 64 blocks
    per_example = td.vmap(td.grad(loss), in_axes=(None, 0))
    grads = tdd.map_blocks(per_example, PARAMS, data)
    summed = [grads["w"].sum(axis=0), grads["b"].sum()]
    graph = collections_to_expr(summed).optimize().__dask_graph__()
    data_keys = {key for array in data for key in array.__dask_graph__()}
    ours = {key: task for key, task in graph.items() if key not in data_keys}
    names = Counter(key_split(key) for key in ours)
    # Per block: the function's task, and one task per leaf taking the leaf
    # out and summing it (Dask's first step of the sum, fused: no getitem
    # task, no alias left by the fusion). Then Dask's tree of sums.
    assert names["tidu-blocks"] == 64 and names["sum"] == 2 * 64, names
    assert not [key for key, task in ours.items() if type(task).__name__ == "Alias"]
    assert len(ours) <= 3 * 64 + 2 * (16 + 4 + 1) + 3, names  # + the function, parameters
    np.testing.assert_allclose(
        compute(summed, scheduler="synchronous")[0][0], per_example(PARAMS, (x, y))["w"].sum(0)
    )


def test_jacobian_in_both_modes_and_hessian_match_td(client: Client) -> None:
    a = RNG.standard_normal((9, 5))
    f = lambda v: tnp.tanh(a @ v) * 2.0
    g = lambda v: tnp.sum(tnp.tanh(a @ v) ** 2)
    x = RNG.standard_normal(5)
    rev, fwd, hess = client.compute(
        [
            tdd.jacobian(f, x, chunk=4),
            tdd.jacobian(f, x, mode="fwd", chunk=2),
            tdd.hessian(g, x, chunk=3),
        ],
        sync=True,
    )
    np.testing.assert_allclose(rev, td.jacrev(f)(x), rtol=1e-12)
    np.testing.assert_allclose(fwd, td.jacrev(f)(x), rtol=1e-12)
    np.testing.assert_allclose(hess, td.hessian(g)(x), rtol=1e-12)
    with pytest.raises(ValueError, match="mode must be 'rev' or 'fwd'"):
        tdd.jacobian(f, x, mode="both")


def test_large_captured_arrays_and_parameters_are_scattered_not_put_in_the_graph(
    client: Client,
) -> None:
    a = RNG.standard_normal((400, 500))  # 1.6 MB, above SCATTER_BYTES
    f = lambda v: tnp.tanh(a @ v)
    x = RNG.standard_normal(500)
    jacobian = tdd.jacobian(f, x, mode="fwd", chunk=250)
    big_w = {"w": RNG.standard_normal((FEATURES, 40_000))}  # 1.9 MB of parameters
    _, (xs, _) = dataset(40, 10)
    per_example = tdd.map_blocks(lambda p, x: tnp.tanh(x @ p["w"]), big_w, xs)
    for lazy in (jacobian, per_example):
        assert len(cloudpickle.dumps(dict(lazy.__dask_graph__()))) < 100_000
    assert client.futures  # the scattered objects
    np.testing.assert_allclose(jacobian.compute(), td.jacfwd(f)(x), rtol=1e-12)
    expected = np.tanh(xs.compute() @ big_w["w"])
    np.testing.assert_allclose(per_example.compute(), expected, rtol=1e-12)


def _held_block(x: np.ndarray, index: int, event_name: str) -> np.ndarray:
    """A data block that becomes available only once the test sets the event
    (blocks after the first two): the computation cannot end before the kill."""
    if index >= 2:
        Event(event_name).wait(timeout=120)
    return x


def test_a_worker_killed_during_grad_sum_changes_nothing(client: Client) -> None:
    (x, y), _ = dataset(800, 100)
    blocks = [
        da.from_delayed(
            dask.delayed(_held_block)(x[i : i + 100], i // 100, "tidu-release"),
            (100, FEATURES),
            x.dtype,
        )
        for i in range(0, 800, 100)
    ]
    data = (da.concatenate(blocks), da.from_array(y, chunks=100))
    futures = client.compute(tree_leaves(tdd.value_and_grad_sum(loss, PARAMS, data)))
    release = Event("tidu-release", client=client)
    try:
        client.wait_for_workers(2)
        # (the workers from `run`: `scheduler_info()` may answer from a cache
        # without them when the scheduler is slow to answer)
        _, pid = next(iter(client.run(os.getpid).items()))
        assert not all(f.done() for f in futures)  # held by the event
        os.kill(pid, signal.SIGKILL)  # its nanny starts a new worker; Dask reruns the lost tasks
    finally:
        release.set()  # never leave the workers held for the next test
    value, *grads = client.gather(futures)
    expected_value, expected_grads = reference_value_and_grad((x, y))
    np.testing.assert_allclose(value, expected_value, rtol=1e-12)
    assert_tree_close(grads, tree_leaves(expected_grads))


def test_a_function_failing_to_compile_on_a_worker_raises_there_as_it_does_here(
    client: Client,
) -> None:
    (x, y), _ = dataset(10, 10)
    exported = export(td.vmap(loss, in_axes=(None, 0)), PARAMS, (x, y))
    broken = Exported(
        exported.func_text.replace("prim.tanh", "prim.no_such_op"),
        exported.in_trees,
        exported.in_specs,
        exported.sources,
        exported.out_tree,
        exported.out_specs,
    )
    with pytest.raises(Exception) as here:
        broken(PARAMS, (x, y))
    with pytest.raises(type(here.value)) as there:
        client.submit(broken, PARAMS, (x, y), pure=False).result(timeout=60)
    assert str(there.value) == str(here.value)
