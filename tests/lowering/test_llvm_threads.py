"""A large program is cut into modules (`partition`), lowered one by one while
LLVM compiles the ones before in threads (`llvm_threads`), and linked in one
engine.

Counted, not timed: the modules, the objects, the threads that ran LLVM; the
numbers and the failed checks against the program compiled whole."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import llvmlite.binding as llvm_binding
import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import SSAValue

from tidu_mlir import config
from tidu_mlir.dialects import prim
from tidu_mlir.lowering import backend, disk_cache, lower_to_llvm, partition, runtime
from tidu_mlir.lowering.allocation_guard import CHECK_FAILED_PREFIX, ProgramGuards
from tidu_mlir.lowering.jit import llvm_ir_of_parts
from tidu_mlir.lowering.llvm_threads import PipelinedCompilation, compile_threads
from tidu_mlir.lowering.lower_to_llvm import lower_prim_to_loops
from tidu_mlir.lowering.split import NO_INLINE_ATTR, SplitFunctionsPass

from .oracle import build, tensor

SMALL = "the sum is not below 1e6"
POSITIVE = "an element is not positive"


def chain_steps(x: SSAValue, steps: int) -> SSAValue:
    """`steps` steps of an elementwise chain with reductions on a 16-vector,
    bounded (sines) unless an exponential overflows."""
    for _ in range(steps):
        s = prim.ReduceSumOp(prim.ExpOp(prim.MulOp(x, x)), [0])
        x = prim.AddOp(prim.SinOp(x), prim.BroadcastInDimOp(prim.SinOp(s), [], tensor([16]))).result
    return x


def checked_chain(steps: int, name: str) -> func.FuncOp:
    """`steps` steps of `chain_steps` (many parts once split), then two checks
    of the result (in the last part). Bounded unless an exponential
    overflows: then the sum is NaN, not below 1e6."""

    def body(x: SSAValue) -> list[prim.PrimOp]:
        y = chain_steps(x, steps)
        total = prim.ReduceSumOp(y, [0])
        small = prim.CompareOp("lt", total, prim.ConstantOp.from_value(np.float64(1e6)))
        lowest = prim.NegOp(prim.ReduceMaxOp(prim.NegOp(x), [0]))
        positive = prim.CompareOp("gt", lowest, prim.ConstantOp.from_value(np.float64(0.0)))
        checked = prim.CheckOp(small, y, SMALL)
        return [prim.CheckOp(positive, checked, POSITIVE), total]

    return build([tensor([16])], body, name=name)


@pytest.fixture(autouse=True)
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Functions split into parts of ~100 ops, programs cut however small: a
    short chain makes many modules."""
    monkeypatch.setattr(lower_to_llvm, "SplitFunctionsPass", lambda: SplitFunctionsPass(100))
    monkeypatch.setattr(partition, "MIN_MODULE_OPS", 1)


@pytest.fixture
def two_threads() -> Iterator[None]:
    config.update("compile_threads", 2)
    yield
    config.reset("compile_threads")


def _loops(function: func.FuncOp) -> ModuleOp:
    module = ModuleOp([function.clone()])
    lower_prim_to_loops(module, Context(allow_unregistered=True))
    return module


def _defined(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.ops if isinstance(op, func.FuncOp) and not op.is_declaration]


def test_split_module_homes_each_function_once() -> None:
    whole = _loops(checked_chain(40, "split"))
    names = {f.sym_name.data for f in _defined(whole)}
    parts = [f.sym_name.data for f in _defined(whole) if NO_INLINE_ATTR in f.attributes]
    assert len(parts) >= 4
    modules = partition.split_module(whole, 4)
    assert len(modules) == 4
    homed = sorted(f.sym_name.data for m in modules for f in _defined(m))
    assert homed == sorted(names)  # each function in exactly one module (no copies here)
    assert "split" in {f.sym_name.data for f in _defined(modules[0])}  # the entry point first
    for module in modules:
        defined = {f.sym_name.data for f in _defined(module)}
        for op in module.walk():
            callee = op.callee.root_reference.data if isinstance(op, func.CallOp) else ""
            if callee in names and callee not in defined:
                declared = [
                    f
                    for f in module.ops
                    if isinstance(f, func.FuncOp) and f.sym_name.data == callee
                ]
                assert declared and declared[0].is_declaration  # declared here...
                home = next(f for m in modules for f in _defined(m) if f.sym_name.data == callee)
                assert home.sym_visibility != StringAttr("private")  # ...external there


def _program_texts(steps: int, count: int) -> list[str]:
    """The LLVM IR of the modules `checked_chain(steps)` is cut into."""
    whole = _loops(checked_chain(steps, "texts"))
    program = ProgramGuards.of(whole)
    return list(llvm_ir_of_parts(partition.split_module(whole, count), program))


def test_split_modules_lower_to_llvm_ir_of_their_own() -> None:
    """Each module lowers and translates alone; only the first defines the
    key of the guards and the message table, every module's failure
    functions use the program's codes."""
    program = ProgramGuards.of(_loops(checked_chain(40, "alone")))
    assert len(program.failures) == 2 and program.entries == {"alone"}
    texts = _program_texts(40, 3)
    for index, text in enumerate(texts):
        llvm_binding.parse_assembly(text).verify()
        assert ('@"tidu.jump_key" = global i32 0' in text) == (index == 0)
        assert ('@"tidu.check_messages" = constant' in text) == (index == 0)
    failing = [text for text in texts[1:] if f'@"{CHECK_FAILED_PREFIX}' in text]
    assert failing, "the checks are in the last part, not in the first module"


def test_a_large_function_compiles_in_threads_to_the_same_numbers(
    tmp_path: Path, two_threads: None
) -> None:
    """Cut into modules compiled in two threads, stored as several objects on
    disk and loaded back from them: the same numbers and the same failed
    checks as the program compiled whole."""
    good = np.linspace(0.1, 0.4, 16)
    config.update("compile_threads", 1)
    runtime.clear_cache()
    whole = runtime.compile_function(checked_chain(40, "threads_whole"))
    assert whole.module.llvm_ir is not None
    assert whole.module.llvm_ir.count('target triple = "') == 1
    config.update("compile_threads", 2)
    disk_cache.set_cache_dir(tmp_path)
    try:
        runtime.clear_cache()
        split = runtime.compile_function(checked_chain(40, "threads_split"))
        assert split.module.llvm_ir is not None
        modules = split.module.llvm_ir.count('target triple = "')
        assert modules > 2
        hits = runtime.COUNTS["disk-hits"]
        runtime.clear_cache()
        loaded = runtime.compile_function(checked_chain(40, "threads_split"))
        assert runtime.COUNTS["disk-hits"] == hits + 1
        (entry,) = disk_cache.entries_directory(tmp_path).iterdir()
        stored = disk_cache.load(tmp_path, entry.stem)
        assert stored is not None and len(stored.objects) == modules
    finally:
        disk_cache.reset_cache_dir()
        runtime.clear_cache()
    expected = whole(good)
    for compiled in (split, loaded):
        for got, want in zip(compiled(good), expected, strict=True):
            np.testing.assert_array_equal(got, want)
        with pytest.raises(prim.CheckFailedError, match=f"^{POSITIVE}$"):
            compiled(good - 1.0)
        with pytest.raises(prim.CheckFailedError, match=f"^{SMALL}$"):
            compiled(good * 1000.0)


def test_llvm_runs_in_the_pool_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = _program_texts(30, 4)
    threads: set[str] = set()
    optimize = backend.optimize_in_context

    def recorded(*args: object):
        threads.add(threading.current_thread().name)
        return optimize(*args)  # pyright: ignore[reportCallIssue, reportArgumentType]

    monkeypatch.setattr(backend, "optimize_in_context", recorded)
    with PipelinedCompilation(2) as compilation:
        for text in texts:
            compilation.submit(text)
        compiled = compilation.finish()
    assert len(compiled) == 4 and all(part.object_code for part in compiled)
    assert threads and all(name.startswith("tidu-llvm") for name in threads)


def test_an_error_in_one_thread_is_raised_and_the_lock_released() -> None:
    texts = _program_texts(30, 2)
    with pytest.raises(RuntimeError, match="LLVM IR parsing error"):  # noqa: SIM117
        with PipelinedCompilation(2) as compilation:
            compilation.submit(texts[0])
            compilation.submit(texts[1].replace("define", "defnie", 1))
            compilation.finish()
    acquired: list[bool] = []

    def try_lock() -> None:  # from another thread: the lock is reentrant
        acquired.append(backend.LLVM_LOCK.acquire(timeout=10))
        backend.LLVM_LOCK.release()

    other = threading.Thread(target=try_lock)
    other.start()
    other.join()
    assert acquired == [True]
    with PipelinedCompilation(2) as compilation:  # and LLVM still works
        for text in texts:
            compilation.submit(text)
        assert len(compilation.finish()) == 2


def test_a_small_function_is_not_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(partition, "MIN_MODULE_OPS", 400)
    whole = _loops(checked_chain(2, "small"))
    assert partition.split_module(whole, 8) == [whole]


def test_compile_threads_defaults_to_the_cpus() -> None:
    import os

    config.reset("compile_threads")
    assert compile_threads() == len(os.sched_getaffinity(0))
    config.update("compile_threads", 3)
    assert compile_threads() == 3
    config.reset("compile_threads")


def test_a_function_called_in_a_loop_stays_with_its_caller() -> None:
    """An outlined scan body (called in the loop of its caller) is not dealt
    out: the call stays within one module, where LLVM sees across it."""
    from xdsl.parser import Parser

    import tidu_mlir as td
    import tidu_mlir.numpy as tnp
    from tidu_mlir import lax
    from tidu_mlir.registry import make_context

    def looped(x):
        for _ in range(12):  # enough straight-line code around the loop for parts
            x = tnp.sin(x) * 1.5 + tnp.sum(tnp.exp(x))
        x = lax.fori_loop(0, 20, lambda _, y: tnp.cos(y) * y, x)
        for _ in range(12):
            x = tnp.sin(x) * 1.5 + tnp.sum(tnp.exp(x))
        return tnp.sum(x)

    text = td.ir(looped, np.linspace(0.0, 1.0, 16), stage="materialize")
    whole = Parser(make_context(), text).parse_module()
    lower_prim_to_loops(whole, Context(allow_unregistered=True))
    bodies = [f.sym_name.data for f in _defined(whole) if "__scan" in f.sym_name.data]
    assert bodies
    modules = partition.split_module(whole, 8)
    assert len(modules) > 2
    home = {f.sym_name.data: k for k, m in enumerate(modules) for f in _defined(m)}
    for k, module in enumerate(modules):
        for op in module.walk():
            if isinstance(op, func.CallOp) and op.callee.root_reference.data in bodies:
                assert home[op.callee.root_reference.data] == k
