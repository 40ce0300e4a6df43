"""A large module is cut into modules (`partition`) that LLVM optimizes and
compiles in threads at the same time (`llvm_threads`), linked in one engine.

Counted, not timed: the number of modules and objects, the threads that ran
the pass pipelines, the results against the module compiled whole."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path

import llvmlite.binding as llvm_binding
import numpy as np
import pytest
from llvmlite import ir

from tidu_mlir import config
from tidu_mlir.dialects import prim
from tidu_mlir.lowering import backend, disk_cache, partition, runtime
from tidu_mlir.lowering.jit import CompiledModule
from tidu_mlir.lowering.llvm_threads import ConcurrentCompilation, compile_threads

from .oracle import build, tensor

F64 = ir.DoubleType()
PTR = ir.PointerType()


def _small_program() -> ir.Module:
    """`@entry(x, out)`: out[0] = part_c(part_b(part_a(x[0]))) with noinline
    internal parts, an inlinable internal helper used by two parts, an
    internal constant, and a mutable global the parts count their calls in."""
    module = ir.Module(name="program")
    calls = ir.GlobalVariable(module, ir.IntType(64), "calls")
    calls.initializer = ir.Constant(ir.IntType(64), 0)  # pyright: ignore[reportAttributeAccessIssue]
    scale = ir.GlobalVariable(module, F64, "scale")
    scale.initializer = ir.Constant(F64, 3.0)  # pyright: ignore[reportAttributeAccessIssue]
    scale.global_constant = True
    scale.linkage = "internal"
    helper = ir.Function(module, ir.FunctionType(F64, [F64]), "helper")
    helper.linkage = "internal"
    builder = ir.IRBuilder(helper.append_basic_block())
    builder.ret(builder.fmul(helper.args[0], builder.load(scale)))
    parts = []
    for name, uses_helper in (("part_a", True), ("part_b", False), ("part_c", True)):
        part = ir.Function(module, ir.FunctionType(F64, [F64]), name)
        part.linkage = "internal"
        part.attributes.add("noinline")
        builder = ir.IRBuilder(part.append_basic_block())
        builder.store(builder.add(builder.load(calls), ir.Constant(ir.IntType(64), 1)), calls)
        value = part.args[0]
        value = builder.call(helper, [value]) if uses_helper else builder.fadd(value, value)
        builder.ret(value)
        parts.append(part)
    entry = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, PTR]), "entry")
    builder = ir.IRBuilder(entry.append_basic_block())
    value = builder.load(entry.args[0], typ=F64)  # pyright: ignore[reportCallIssue]
    for part in parts:
        value = builder.call(part, [value])
    builder.store(value, entry.args[1])
    builder.ret_void()
    return module


@pytest.fixture
def split_small_modules(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Modules cut however small, in two threads."""
    monkeypatch.setattr(partition, "MIN_MODULE_CHARS", 1)
    config.update("compile_threads", 2)
    yield
    config.reset("compile_threads")


def _definitions(text: str) -> list[str]:
    return re.findall(r'^define [^@]*@"([^"]+)"', text, re.MULTILINE)


def test_partition_defines_each_function_once_and_copies_what_is_inlined(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(partition, "MIN_MODULE_CHARS", 1)
    texts = partition.partition_module(_small_program(), 2)
    assert len(texts) == 2
    homed = sorted(name for text in texts for name in _definitions(text) if name != "helper")
    assert homed == ["entry", "part_a", "part_b", "part_c"]  # each exactly once
    for text in texts:
        llvm_binding.parse_assembly(text).verify()  # a module of its own
        uses_helper = any(f'@"{part}"' in text for part in ("part_a", "part_c"))
        assert ('define internal double @"helper"' in text) == uses_helper
        assert ('@"calls" = global' in text) != ('@"calls" = external global' in text)
    # parts called from the other module are exported there, declared here
    home = next(text for text in texts if '@"entry"(' in text.split("define", 1)[-1])
    for part in ("part_a", "part_b", "part_c"):
        if part not in _definitions(home):
            assert f'declare double @"{part}"' in home


def test_a_small_module_stays_whole() -> None:
    module = _small_program()
    assert partition.partition_module(module, 2) == [str(module)]  # under MIN_MODULE_CHARS
    assert partition.partition_module(module, 1) == [str(module)]


def _run_entry(compiled: CompiledModule, x: float) -> float:
    import ctypes

    address = compiled._engine.get_function_address("entry")  # pyright: ignore[reportPrivateUsage]
    entry = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(address)
    source, result = np.array([x]), np.zeros(1)
    entry(source.ctypes.data, result.ctypes.data)
    return float(result[0])


def test_modules_compiled_in_threads_link_into_one_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(partition, "MIN_MODULE_CHARS", 1)
    texts = partition.partition_module(_small_program(), 2)
    threads: set[int] = set()
    optimize = backend.optimize_in_context

    def recorded(*args: object):
        threads.add(threading.get_ident())
        return optimize(*args)  # pyright: ignore[reportCallIssue, reportArgumentType]

    monkeypatch.setattr(backend, "optimize_in_context", recorded)
    with ConcurrentCompilation(len(texts)) as compilation:
        compilation.optimize(texts)
        objects = compilation.generate()
    assert len(objects) == 2 and len(threads) == 2
    linked = CompiledModule.load(objects, {})
    assert _run_entry(linked, 0.5) == ((0.5 * 3.0) * 2) * 3.0


def test_an_error_in_one_thread_is_raised_and_frees_everything(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(partition, "MIN_MODULE_CHARS", 1)
    texts = partition.partition_module(_small_program(), 2)
    broken = [texts[0], texts[1].replace("define", "defnie", 1)]
    with (
        pytest.raises(RuntimeError, match="LLVM IR parsing error"),
        ConcurrentCompilation(2) as compilation,
    ):
        compilation.optimize(broken)
    acquired: list[bool] = []

    def try_lock() -> None:  # from another thread: the lock is reentrant
        acquired.append(backend.LLVM_LOCK.acquire(timeout=10))
        backend.LLVM_LOCK.release()

    other = threading.Thread(target=try_lock)
    other.start()
    other.join()
    assert acquired == [True]  # released
    with ConcurrentCompilation(2) as compilation:  # and LLVM still works
        compilation.optimize(texts)
        assert len(compilation.generate()) == 2


def _chain(steps: int, name: str):
    t = tensor([16])

    def body(x):
        for _ in range(steps):
            x = prim.AddOp(prim.SinOp(prim.MulOp(x, x)), prim.ExpOp(x))
        return prim.ReduceSumOp(x, [0])

    return build([t], body, name=name)


def test_a_large_function_compiles_in_threads_to_the_same_numbers(
    tmp_path: Path, split_small_modules: None
) -> None:
    """Cut into two modules (split-functions parts dealt out), compiled in two
    threads, stored as two objects on disk and loaded back from them."""
    x = np.linspace(-0.3, 0.3, 16)
    config.update("compile_threads", 1)
    runtime.clear_cache()
    whole = runtime.compile_function(_chain(150, "threads_whole"))
    assert whole.module.llvm_ir is not None
    assert whole.module.llvm_ir.count('target triple = "') == 1
    config.update("compile_threads", 2)
    disk_cache.set_cache_dir(tmp_path)
    try:
        runtime.clear_cache()
        split = runtime.compile_function(_chain(150, "threads_split"))
        assert split.module.llvm_ir is not None
        assert split.module.llvm_ir.count('target triple = "') == 2  # two modules
        hits = runtime.COUNTS["disk-hits"]
        runtime.clear_cache()
        loaded = runtime.compile_function(_chain(150, "threads_split"))
        assert runtime.COUNTS["disk-hits"] == hits + 1
        (entry,) = disk_cache.entries_directory(tmp_path).iterdir()
        stored = disk_cache.load(tmp_path, entry.stem)
        assert stored is not None and len(stored.objects) == 2
    finally:
        disk_cache.reset_cache_dir()
        runtime.clear_cache()
    expected = whole(x)
    np.testing.assert_array_equal(split(x), expected)
    np.testing.assert_array_equal(loaded(x), expected)


def test_compile_threads_defaults_to_the_cpus() -> None:
    import os

    config.reset("compile_threads")
    assert compile_threads() == len(os.sched_getaffinity(0))
    config.update("compile_threads", 3)
    assert compile_threads() == 3
    config.reset("compile_threads")
