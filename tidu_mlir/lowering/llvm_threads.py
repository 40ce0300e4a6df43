"""Optimize and generate code for several LLVM modules at once, a thread each.

A large program reaches LLVM as several modules (`partition`). Each is parsed
into an LLVM context of its own, optimized with its own pass builder and
target machine (`backend.optimize_in_context`), then compiled to object code
by an MCJIT engine of its own: LLVM allows that much to run concurrently.
llvmlite, however, serializes every call into LLVM behind one process-wide
lock, so the two long calls (the pass pipeline and code generation) are made
through the underlying C functions directly, and release the GIL like any
ctypes call. Everything else, short, goes through llvmlite as usual, and the
whole runs under `backend.LLVM_LOCK` like any compilation.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TypeVar

import llvmlite.binding as llvm
from llvmlite.binding import ffi

from tidu_mlir import config
from tidu_mlir.lowering import backend
from tidu_mlir.lowering.backend import without_llvmlite_lock

_T = TypeVar("_T")


def compile_threads() -> int:
    """How many threads a compilation may use: `td.config.compile_threads`, or
    the CPUs this process may run on when it is 0."""
    return config.get("compile_threads") or len(os.sched_getaffinity(0))


def object_code(module: llvm.ModuleRef, machine: llvm.TargetMachine, concurrent: bool) -> bytes:
    """The object code MCJIT generates for `module` with `machine`, in an engine
    closed at once (it owns both). The caller holds `backend.LLVM_LOCK`; with
    `concurrent`, code generation runs without llvmlite's lock (other threads
    generate code for modules in other contexts at the same time)."""
    objects: list[bytes] = []
    engine = llvm.create_mcjit_compiler(module, machine)
    try:
        engine.set_object_cache(notify_func=lambda _module, data: objects.append(bytes(data)))
        if concurrent:
            without_llvmlite_lock(ffi.lib.LLVMPY_FinalizeObject)(engine)
        else:
            engine.finalize_object()
    finally:
        engine.close()
    if len(objects) != 1:
        raise RuntimeError(f"MCJIT generated {len(objects)} objects, expected one")
    return objects[0]


class ConcurrentCompilation:
    """Modules optimized (`optimize`), then compiled to object code
    (`generate`), a thread each. Holds `backend.LLVM_LOCK` while open; on
    leaving, frees the modules and their contexts, whatever happened."""

    def __init__(self, count: int) -> None:
        self._count = count
        self._modules: list[llvm.ModuleRef | None] = [None] * count
        self._contexts: list[llvm.ContextRef] = []
        self._pool = ThreadPoolExecutor(count, thread_name_prefix="tidu-llvm")

    def __enter__(self) -> ConcurrentCompilation:
        backend.LLVM_LOCK.acquire()
        backend.prepare_slots(self._count)
        self._contexts = [llvm.create_context() for _ in range(self._count)]
        return self

    def __exit__(self, *_exception: object) -> None:
        try:
            self._pool.shutdown()
            for module in self._modules:
                if module is not None:
                    module.close()  # a no-op for those an engine took (and freed)
            for context in self._contexts:
                context.close()  # after its modules: it would free them again
        finally:
            backend.LLVM_LOCK.release()

    def optimize(self, texts: list[str]) -> list[str]:
        """Each LLVM IR text (one per thread) parsed into a context of its own
        and optimized; their optimized texts."""
        return _results(
            self._pool.submit(self._optimize, text, slot) for slot, text in enumerate(texts)
        )

    def generate(self) -> list[bytes]:
        """The object code of each optimized module (the engines free them)."""
        machines = [backend.new_target_machine() for _ in self._modules]
        return _results(
            self._pool.submit(object_code, module, machine, True)
            for module, machine in zip(self._modules, machines, strict=True)
            if module is not None
        )

    def _optimize(self, text: str, slot: int) -> str:
        module, optimized = backend.optimize_in_context(text, self._contexts[slot], slot, True)
        self._modules[slot] = module
        return optimized


def _results(futures: Iterable[Future[_T]]) -> list[_T]:
    """The futures' results once all are done, or the first error."""
    pending = list(futures)
    wait(pending)
    for future in pending:
        if (error := future.exception()) is not None:
            raise error
    return [future.result() for future in pending]
