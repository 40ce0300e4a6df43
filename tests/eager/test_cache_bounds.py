"""The eager frontend's caches (traced graphs, graph interfaces, backward plans,
compiled backward code) stay within `td.config.eager_cache_size` through a
loop whose shapes vary, gradients stay right when evicted entries are built
again, and a graph no cache or tensor holds is freed."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import numpy as np
import pytest

import tidu_mlir as td
import tidu_mlir.eager as te
from tidu_mlir.eager import recording
from tidu_mlir.eager.functions import FUNCTIONS, GRAPHS

tanh, total = FUNCTIONS["tanh"], FUNCTIONS["sum"]


@pytest.fixture(autouse=True)
def _restore_settings() -> Iterator[None]:
    yield
    td.config.reset()


def sizes() -> dict[str, int]:
    return {
        "graphs": len(GRAPHS),
        "interfaces": len(recording._interfaces),
        "plans": len(te.RUNTIME.context.plans),
        "compiled": len(te.RUNTIME.executor.compiled),
    }


def loss_and_grad(n: int) -> tuple[te.Tensor, np.ndarray]:
    """sum(tanh(x * 0.7) ** 2) and its gradient, for float64[n]."""
    data = np.linspace(-1.0, 1.0, n)
    x = te.tensor(data, requires_grad=True)
    total(tanh(x * 0.7) ** 2).backward()
    t = np.tanh(0.7 * data)
    assert x.grad is not None
    return x, 2.0 * t * (1.0 - t**2) * 0.7


def test_varying_shapes_stay_within_the_bound_and_gradients_stay_right() -> None:
    td.config.update("eager_cache_size", 5)
    for n in [*range(2, 8), *range(2, 8)]:  # the second pass finds most entries evicted
        x, expected = loss_and_grad(n)
        assert x.grad is not None
        np.testing.assert_allclose(x.grad.data, expected, rtol=1e-12)
        assert all(size <= 5 for size in sizes().values()), sizes()


def test_graphs_are_freed_once_no_cache_or_tensor_holds_them() -> None:
    x, _ = loss_and_grad(3)
    alive = [weakref.ref(traced.graph) for traced in GRAPHS.values()]
    del x
    td.clear_caches()
    gc.collect()
    assert alive and all(ref() is None for ref in alive)
