"""The stage cache of the transforms (`api._STAGES`): bounded per function
(`function_cache_size`) and in all (`stage_cache_size`), counted after every
call; an evicted stage is traced again on its next use and gives the same
result; a stage the user holds (a `linearize` result) outlives eviction."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import tidu_mlir as td
import tidu_mlir.numpy as tnp
from tidu_mlir import api


@pytest.fixture(autouse=True)
def _restore_settings() -> Iterator[None]:
    yield
    td.config.reset()


def counted(calls: list[int]):
    """`sin(x) * x + 1`, counting its traces in `calls`."""

    def fn(x):
        calls.append(1)
        return tnp.sin(x) * x + 1.0

    return fn


def test_one_function_keeps_at_most_its_bound_of_stages() -> None:
    td.config.update("function_cache_size", 3)
    calls: list[int] = []
    fn = counted(calls)
    jitted = td.jit(fn)
    for n in range(1, 9):
        x = np.linspace(-1.0, 1.0, n)
        np.testing.assert_allclose(jitted(x), np.sin(x) * x + 1.0, rtol=1e-12)
        assert api._STAGES.count(fn) <= 3
    assert len(calls) == 8
    jitted(np.linspace(-1.0, 1.0, 8))  # cached: no trace
    assert len(calls) == 8
    x = np.linspace(-1.0, 1.0, 1)
    np.testing.assert_allclose(jitted(x), np.sin(x) * x + 1.0, rtol=1e-12)  # evicted: traced again
    assert len(calls) == 9


def test_all_functions_together_keep_at_most_the_total_bound() -> None:
    td.config.update("stage_cache_size", 4)
    functions = [counted([]) for _ in range(7)]
    x = np.linspace(0.0, 2.0, 5)
    for fn in functions:
        td.grad(lambda x, fn=fn: tnp.sum(fn(x)))(x)
        td.jit(fn)(x)
        assert len(api._STAGES) <= 4
    assert api._STAGES.count(functions[-1]) == 1  # the jit stage of the last one


def test_a_held_linearization_outlives_clear_caches() -> None:
    def f(x):
        return tnp.tanh(x) * x

    x = np.linspace(-1.0, 1.0, 6)
    t = np.ones(6)
    out, f_jvp = td.linearize(f, x)
    before = f_jvp(t)
    td.clear_caches()
    assert len(api._STAGES) == 0
    np.testing.assert_allclose(f_jvp(t), before, rtol=0)
    np.testing.assert_allclose(out, np.tanh(x) * x, rtol=1e-12)


def test_a_zero_bound_caches_nothing_and_still_computes() -> None:
    td.config.update("stage_cache_size", 0)
    calls: list[int] = []
    jitted = td.jit(counted(calls))
    x = np.linspace(-1.0, 1.0, 4)
    for _ in range(2):
        np.testing.assert_allclose(jitted(x), np.sin(x) * x + 1.0, rtol=1e-12)
    assert len(calls) == 2 and len(api._STAGES) == 0


def test_a_cached_call_builds_no_ir_and_copies_no_dense_argument(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The per-call path of a compiled function: no xDSL attribute made (input
    keys are made once), no `np.require` on arguments already dense; a view
    is still copied to a dense buffer."""
    from xdsl.ir import Attribute

    from tidu_mlir import execution

    jitted = td.jit(lambda x, y: x * y + 1.0)
    x, y = np.linspace(0.0, 1.0, 6), np.ones(6)
    jitted(x, y)
    made: list[int] = []
    original_init = Attribute.__post_init__
    monkeypatch.setattr(Attribute, "__post_init__", lambda a: made.append(1) or original_init(a))
    required: list[int] = []
    original_require = np.require
    monkeypatch.setattr(
        execution.np, "require", lambda *a, **k: required.append(1) or original_require(*a, **k)
    )
    for _ in range(10):
        np.testing.assert_array_equal(jitted(x, y), x * y + 1.0)
    assert (made, required) == ([], [])
    wide = np.linspace(0.0, 1.0, 12)
    np.testing.assert_array_equal(jitted(wide[::2], y), wide[::2] * y + 1.0)
    assert required == [1]
