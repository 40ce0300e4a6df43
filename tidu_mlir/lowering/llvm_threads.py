"""LLVM's optimizer and code generator in threads, while Python lowers the
next module (`PipelinedCompilation`).

A large program is cut into modules (`partition`). The lowering lowers them
one by one in the calling thread and hands each, as LLVM IR text, to a pool
of threads. Each module is parsed into an LLVM context of its own, optimized
with the pass builders of its thread (`backend.optimize_in_context`) and
compiled to object code by an MCJIT engine of its own: LLVM allows that much
to run side by side. llvmlite, however, serializes every call into LLVM
behind one process-wide lock, so the two long calls (the pass pipeline and
code generation) go to its C functions directly
(`backend.without_llvmlite_lock`), releasing the GIL like any ctypes call.

While the calling thread still lowers, LLVM may use one thread fewer than
`td.config.compile_threads` (on 2 cores, a second LLVM thread slowed the
lowering more than it gained); once the last module is handed over, all of
them. Measured on the K=1000 chain of `bench/bench_compile.py` (2 cores):
the lowering alone 5.9 s and LLVM alone in one thread 6.3 s took 6.6 s
together with LLVM in one thread beside the lowering, 9.2 s with two.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import NamedTuple

import llvmlite.binding as llvm
from llvmlite.binding import ffi

from tidu_mlir import config
from tidu_mlir.lowering import backend
from tidu_mlir.lowering.backend import without_llvmlite_lock


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


class Compiled(NamedTuple):
    """One module compiled: its optimized LLVM IR, its object code, and the
    seconds its thread spent optimizing and generating code."""

    llvm_ir: str
    object_code: bytes
    optimizing: float
    generating: float


class PipelinedCompilation:
    """LLVM IR texts handed over one by one (`submit`), each optimized and
    compiled in a pool of `threads` threads, at most `threads - 1` at once
    until `finish`. Holds `backend.LLVM_LOCK` while open."""

    def __init__(self, threads: int) -> None:
        self._threads = threads
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="tidu-llvm")
        self._running = threading.Semaphore(max(1, threads - 1))
        self._slots = threading.local()
        self._next_slot = 0
        self._slot_lock = threading.Lock()
        self._futures: list[Future[Compiled]] = []

    def __enter__(self) -> PipelinedCompilation:
        backend.LLVM_LOCK.acquire()
        backend.prepare_slots(self._threads)
        return self

    def __exit__(self, *_exception: object) -> None:
        try:
            self._running.release()  # (if `finish` did not run: no thread waits forever)
            self._pool.shutdown(cancel_futures=True)
        finally:
            backend.LLVM_LOCK.release()

    def submit(self, text: str) -> None:
        """Start compiling the module of LLVM IR `text` (its target machine is
        made here: making one takes `LLVM_LOCK`, which this thread holds)."""
        machine = backend.new_target_machine()
        self._futures.append(self._pool.submit(self._compile, text, machine))

    def finish(self) -> list[Compiled]:
        """Every module submitted, compiled (in order), the threads all in use
        from now on; the first error raised if a module failed."""
        self._running.release()
        wait(self._futures)
        for future in self._futures:
            if (error := future.exception()) is not None:
                raise error
        return [future.result() for future in self._futures]

    def _compile(self, text: str, machine: llvm.TargetMachine) -> Compiled:
        with self._running:
            start = time.perf_counter()
            context = llvm.create_context()
            module, optimized = backend.optimize_in_context(text, context, self._slot(), True)
            # (on an error above, the context is left alone: a module of it may still be alive)
            optimizing = time.perf_counter() - start
            try:
                code = object_code(module, machine, concurrent=True)
            finally:
                module.close()  # a no-op once the engine took it (and freed it)
            context.close()
            return Compiled(optimized, code, optimizing, time.perf_counter() - start - optimizing)

    def _slot(self) -> int:
        """This thread's pass-builder slot (one per pool thread)."""
        if (slot := getattr(self._slots, "slot", None)) is None:
            with self._slot_lock:
                slot = self._slots.slot = self._next_slot
                self._next_slot += 1
        return slot
