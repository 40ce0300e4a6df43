"""Bounded compile caches and the release of native code.

Counted, not timed: cache sizes after every compilation, lowerings
(`runtime.COUNTS`), weak references to evicted `CompiledModule`s and their
engines, and the RSS of a subprocess compiling 300 distinct functions."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap
import weakref
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import tidu_mlir as td
from tidu_mlir.dialects import prim
from tidu_mlir.lowering import disk_cache, jit, runtime

from .oracle import build, tensor

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _memory_only() -> Iterator[None]:
    """No disk cache (every miss is lowered), empty caches, default bounds after."""
    disk_cache.set_cache_dir(None)
    td.clear_caches()
    yield
    disk_cache.reset_cache_dir()
    td.config.reset()


def function(n: int):
    """exp(sin(x)) on float64[n]: one distinct function per size."""
    return build([tensor([n])], lambda x: prim.ExpOp(prim.SinOp(x)), name="bounded")


def run(compiled: runtime.CompiledFunction, n: int) -> None:
    x = np.linspace(-2.0, 2.0, n)
    np.testing.assert_allclose(compiled(x), np.exp(np.sin(x)), rtol=1e-12)


def test_compile_cache_stays_within_its_bound_and_recompiles_evicted_functions() -> None:
    td.config.update("compile_cache_size", 3)
    lowerings = runtime.COUNTS["lowerings"]
    for n in range(1, 7):
        run(runtime.compile_function(function(n)), n)
        assert len(runtime._cache) <= 3
    assert runtime.COUNTS["lowerings"] - lowerings == 6
    run(runtime.compile_function(function(6)), 6)  # cached
    assert runtime.COUNTS["lowerings"] - lowerings == 6
    run(runtime.compile_function(function(1)), 1)  # evicted: compiled again, same result
    assert runtime.COUNTS["lowerings"] - lowerings == 7


def test_an_evicted_compiled_module_and_its_engine_are_collected() -> None:
    td.config.update("compile_cache_size", 1)
    first = runtime.compile_function(function(4))
    module, engine = weakref.ref(first.module), weakref.ref(first.module._engine)
    freed = weakref.finalize(first.module._engine, lambda: None)
    runtime.compile_function(function(5))  # evicts the first from the cache
    gc.collect()
    assert module() is not None  # still ours: evicting only dropped the cache's reference
    run(first, 4)
    del first
    gc.collect()
    assert module() is None and engine() is None and not freed.alive


def test_clear_caches_releases_every_compiled_module() -> None:
    modules = [weakref.ref(runtime.compile_function(function(n)).module) for n in range(1, 4)]
    modules.append(weakref.ref(jit.compile_module(jit.parse_module(MODULE))))
    assert all(ref() is not None for ref in modules)  # held by the caches only
    td.clear_caches()
    assert [ref() for ref in modules] == [None] * 4


MODULE = """
func.func @double(%x: memref<4xf64>, %out: memref<4xf64>) attributes {tidu.num_outputs = 1 : i64} {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<4xf64>
  %d = arith.addf %v, %v : f64
  memref.store %d, %out[%c0] : memref<4xf64>
  func.return
}
"""


def test_compile_module_cache_stays_within_its_bound() -> None:
    td.config.update("compile_cache_size", 2)
    for k in range(5):
        text = MODULE.replace("@double", f"@double{k}")
        compiled = jit.compile_module(text)  # two entries: the text and the parsed module
        assert len(jit._cache) <= 2
        out = compiled[f"double{k}"](np.full(4, 1.5))
        assert out[0] == 3.0


RSS_SCRIPT = textwrap.dedent(
    """
    import gc, json, os, sys
    sys.path.insert(0, {repo!r})
    import numpy as np
    import tidu_mlir as td
    import tidu_mlir.numpy as tnp

    def rss():
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    x = np.ones(4)
    kept = [td.jit(lambda x: tnp.sin(x) * 0.5)]
    kept[0](x)  # warm-up: imports, libraries, first compilation
    td.clear_caches()
    start = rss()
    td.config.update("compile_cache_size", 8)
    td.config.update("stage_cache_size", 8)
    for k in range(200):  # every jitted function stays alive: only the bounds free code
        kept.append(td.jit(lambda x, c=k + 1.5: tnp.sin(x) * c + x))
        kept[-1](x)
    gc.collect()
    bounded = rss() - start
    td.config.reset()
    for k in range(100):  # all 100 stay cached: what each costs
        kept.append(td.jit(lambda x, c=k + 1000.5: tnp.sin(x) * c + x))
        kept[-1](x)
    gc.collect()
    cached = rss() - start - bounded
    td.clear_caches()
    print(json.dumps({{"bounded": bounded, "cached": cached, "cleared": rss() - start}}))
    """
).format(repo=str(REPO))


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs /proc (Linux)")
def test_rss_stays_bounded_through_300_distinct_compilations() -> None:
    """Bounds of 8: 200 compilations grow the RSS by heap fragmentation (~5 MB),
    not by the compiled code (~0.75 MB per function before code was loaded from
    object code into a small engine; all 300 kept without the bounds) nor by
    LLVM's pass managers (~70 KB per optimization while llvmlite's were never
    freed: 14 MB here). `bench/bench_memory.py` measures longer runs."""
    env = {**os.environ, "TIDU_CACHE_DIR": ""}
    result = subprocess.run(
        [sys.executable, "-c", RSS_SCRIPT], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    growth = json.loads(result.stdout.strip().splitlines()[-1])
    assert growth["bounded"] < 12, growth
    assert growth["cached"] < 45, growth  # 100 cached functions and their stages
    assert growth["cleared"] < 15, growth
