"""The garbage collector is paused while a transform is traced and derived and
while it compiles, and back on afterwards (unless the user turned it off)."""

from __future__ import annotations

import gc
import threading

import numpy as np

import tidu_mlir as td
import tidu_mlir.numpy as tnp
from tidu_mlir.collector import collection_paused


def test_the_collector_is_off_while_a_function_is_traced_and_back_on_after() -> None:
    seen: list[bool] = []

    def f(x):
        seen.append(gc.isenabled())
        return tnp.sum(tnp.sin(x) * x)

    x = np.linspace(0.0, 1.0, 5)
    np.testing.assert_allclose(td.grad(f)(x), np.cos(x) * x + np.sin(x))
    assert seen == [False]
    assert gc.isenabled()


def test_pauses_nest_across_threads_and_keep_the_user_s_choice() -> None:
    inside = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with collection_paused():
            inside.set()
            release.wait(5)

    worker = threading.Thread(target=hold)
    worker.start()
    inside.wait(5)
    with collection_paused():
        assert not gc.isenabled()
    assert not gc.isenabled(), "the other thread's pause still holds"
    release.set()
    worker.join()
    assert gc.isenabled()
    gc.disable()
    try:
        with collection_paused():
            pass
        assert not gc.isenabled(), "left off as the user set it"
    finally:
        gc.enable()


def test_the_collector_is_off_while_the_cache_key_is_printed(monkeypatch) -> None:
    from tidu_mlir.lowering import runtime

    seen: list[bool] = []
    printed = runtime.op_text

    def recording(op):
        seen.append(gc.isenabled())
        return printed(op)

    monkeypatch.setattr(runtime, "op_text", recording)
    td.jit(lambda x: tnp.exp(x) * 3.0)(np.arange(7.0))
    assert seen and not any(seen)
