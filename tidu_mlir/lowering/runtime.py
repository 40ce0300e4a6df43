"""Compile a `func.func` of prim ops on static tensors to native code and call it on numpy arrays.

    compiled = compile_function(func_op)          # or (module, "name")
    out = compiled(x, y)                          # numpy in, numpy out

The function is cloned into a module of its own, lowered by `lower-to-llvm`
(bufferize, fused loop nests, llvm dialect), optimized at O3 and loaded by MCJIT
(`jit.CompiledModule`). A large one is first cut into segments (`segment`), each
lowered while LLVM compiles the ones before it. Arguments are checked by the JIT
layer: exact dtype and shape, C-contiguous and aligned, else
`TypeError`/`ValueError` naming the argument (a Python number of the tensor's
kind is accepted for a rank-0 tensor). Outputs are freshly allocated; one result
is returned as an array, several as a tuple.

Cache: keyed by the SHA-256 of the printed function (its body, shapes and
dtypes), least recently used first out beyond `td.config.compile_cache_size`
(`tidu_mlir.config`); compiling the same function twice in a process returns
the same `CompiledFunction` while it is cached. The machine code lives as long
as the `CompiledFunction` (it holds the engine): eviction only drops the
cache's reference. Calls release the GIL and are thread-safe.

Disk cache (`disk_cache`): on an in-process miss the object code is looked up on
disk (key: that SHA-256, the lowering options of `lowering_options()` and the
toolchain); a hit loads it into a fresh MCJIT engine with the stored signature,
skipping lowering, optimization and codegen. A miss compiles and stores it.

`td.config.update("log_compiles", True)` (or `TIDU_LOG_COMPILES=1`) prints one
line per compilation to stderr with the time of each stage (`key`: printing and
hashing the function, `disk-key`, `lower-to-loops`, `llvm-text` (LLVM IR
written from the loop-level IR, `llvm_text`), or `lower-to-llvm` and
`translate` when it is lowered through the `llvm` dialect, `llvm-opt`,
`codegen`, `disk-load`/`disk-store`).
`COUNTS` counts lowerings and disk hits in this process.
"""

from __future__ import annotations

import hashlib
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import Builtin, ModuleOp, TensorType
from xdsl.parser import Parser
from xdsl.traits import SymbolTable

from tidu_mlir import config
from tidu_mlir.collector import collection_paused
from tidu_mlir.config import LRUCache
from tidu_mlir.dialects.cg import CG
from tidu_mlir.dialects.prim import PRIM
from tidu_mlir.fast_syntax import op_text
from tidu_mlir.lowering import (
    backend,
    blas,
    disk_cache,
    fusion,
    parallel,
    pool_buffers,
    prim_to_loops,
    promote_buffers,
    segment,
)
from tidu_mlir.lowering.allocator import retain_freed_memory
from tidu_mlir.lowering.jit import (
    BufferParam,
    CompiledModule,
    JitFunction,
    Signature,
    lap,
)
from tidu_mlir.lowering.llvm_threads import compile_threads
from tidu_mlir.lowering.lower_to_llvm import lower_prim_to_loops
from tidu_mlir.lowering.vector_library import libmvec_available

COUNTS: Counter[str] = Counter()
"""`lowerings` (functions lowered and compiled) and `disk-hits` (functions loaded
from the disk cache instead) in this process."""


class CompiledFunction:
    """A compiled tensor function: call it with one numpy array per argument.

    `CompiledFunction(function)` always compiles (no cache); `compile_function`
    goes through the caches.
    """

    def __init__(
        self,
        function: func.FuncOp,
        *,
        timings: dict[str, float] | None = None,
        keep_object: bool = False,
    ):
        """Compile `function`, adding each stage's time to `timings`; with
        `keep_object` the object code stays in `self.module.objects`."""
        self.name = function.sym_name.data
        inputs = function.function_type.inputs.data
        outputs = function.function_type.outputs.data
        for typ in (*inputs, *outputs):
            if not isinstance(typ, TensorType):
                raise TypeError(f"@{self.name}: only tensor arguments and results, got {typ}")
        start = time.perf_counter()
        with collection_paused():
            function = function.clone()
            size = config.get("segment_ops")
            cut = size > 0 and compile_threads() > 1
            segments = segment.segment_function(function, size) if cut else None
            if segments is not None:
                self.module = CompiledModule.of_modules(
                    _lowered(segments.modules, timings),
                    segments.entry,
                    timings=timings,
                    keep_object=keep_object,
                )
            else:
                module = ModuleOp([function])
                lower_prim_to_loops(module, Context(allow_unregistered=True))
                lap(timings, "lower-to-loops", start)
                # Cached by this function's text (`compile_function`): no second key to print.
                self.module = CompiledModule(
                    module, consume=True, timings=timings, keep_object=keep_object
                )
        self._source: str | None = None
        self._bind()
        COUNTS["lowerings"] += 1

    @classmethod
    def loaded(cls, name: str, module: CompiledModule, source: str) -> CompiledFunction:
        """The function `name` of `module` loaded from object code; `source` is the
        function's text (lowered again only if its LLVM IR is asked for)."""
        self = cls.__new__(cls)
        self.name = name
        self.module = module
        self._source = source
        self._bind()
        return self

    def _bind(self) -> None:
        self._native: JitFunction = self.module[self.name]
        self._rank0 = tuple(
            (i, p.dtype)
            for i, p in enumerate(self.signature.inputs)
            if isinstance(p, BufferParam) and not p.shape
        )

    @property
    def signature(self) -> Signature:
        """Names, shapes and dtypes of the native inputs and outputs."""
        return self._native.signature

    @property
    def llvm_ir(self) -> str:
        """The optimized LLVM IR (a function loaded from the disk cache is lowered
        again from its text for it)."""
        if self.module.llvm_ir is None:
            assert self._source is not None
            self.module.llvm_ir = CompiledFunction(_parse_function(self._source)).llvm_ir
        return self.module.llvm_ir

    def __call__(self, *args: object) -> Any:
        if not self._rank0:
            return self._native(*args)
        arrays = list(args)
        for i, dtype in self._rank0:
            if i < len(arrays):
                arrays[i] = _rank0(arrays[i], dtype)
        return self._native(*arrays)


def _lowered(modules: list[ModuleOp], timings: dict[str, float] | None) -> Iterator[ModuleOp]:
    """Each of `modules` lowered to loops when asked for, the time added to
    `timings["lower-to-loops"]`."""
    for module in modules:
        start = time.perf_counter()
        lower_prim_to_loops(module, Context(allow_unregistered=True))
        lap(timings, "lower-to-loops", start)
        yield module


_RANK0_NUMBERS: dict[str, tuple[type, ...]] = {
    "b": (bool, np.bool_),
    "i": (int, np.integer),
    "f": (int, float, np.integer, np.floating),
    "c": (int, float, complex, np.number),
}
"""The numbers a rank-0 tensor argument of each dtype kind takes in place of an array."""


def _rank0(value: object, dtype: np.dtype[Any]) -> object:
    """A Python or numpy number for a rank-0 tensor argument, as a 0-d array. Only
    numbers of the tensor's kind convert (a float is not truncated to an integer, a
    complex number not to its real part, a bool is no number); others are left for
    the argument check to reject."""
    is_bool = isinstance(value, bool | np.bool_)
    if is_bool == (dtype.kind == "b") and isinstance(value, _RANK0_NUMBERS[dtype.kind]):
        return np.asarray(value, dtype=dtype)
    return value


_cache: LRUCache[str, CompiledFunction] = LRUCache("compile_cache_size")
_lock = threading.Lock()
"""Held while compiling: a function asked for by two threads is compiled once."""


def compile_function(target: func.FuncOp | ModuleOp, name: str | None = None) -> CompiledFunction:
    """Compile `target` (a `func.func`, or the function `name` of a module), cached
    in the process and on disk (`disk_cache`)."""
    retain_freed_memory()
    function = _find_function(target, name)
    start = time.perf_counter()
    with collection_paused():  # (a third of the printing's time otherwise)
        source = op_text(function)  # (the key: the function's text)
    key = hashlib.sha256(source.encode()).hexdigest()
    with _lock:
        if (hit := _cache.get(key)) is not None:
            return hit
        compiled = _compile(function, source, key, start)
        _cache[key] = compiled
        return compiled


def lowering_options() -> dict[str, Any]:
    """The settings besides the function's text that change its object code (read
    at each compilation: tests change thresholds), part of the disk cache key."""
    return {
        "llvm-text": bool(config.get("llvm_text")),
        "opt-level": backend.OPT_LEVEL,
        "unroll-threshold": backend.UNROLL_THRESHOLD,
        "vectorizer-min-trip-count": backend.VECTORIZER_MIN_TRIP_COUNT,
        "parallel-min-work": parallel.PARALLEL_MIN_WORK,
        "next-to-openblas-min-work": parallel.NEXT_TO_OPENBLAS_MIN_WORK,
        "max-threads": parallel.MAX_THREADS,
        "grain": parallel.GRAIN,
        "blas-min-flops": blas.BLAS_MIN_FLOPS,
        "gemv-min-flops": blas.GEMV_MIN_FLOPS,
        "max-cluster-ops": fusion.MAX_CLUSTER_OPS,
        "segment-ops": config.get("segment_ops"),
        "alignment": prim_to_loops.ALIGNMENT,
        "stack-buffers": [
            promote_buffers.MAX_ALLOC_BYTES,
            promote_buffers.MAX_FRAME_BYTES,
            promote_buffers.MAX_BUFFERS,
        ],
        "pooled-buffers": [pool_buffers.MAX_ALLOC_BYTES, pool_buffers.MAX_POOL_BYTES],
    }


def _compile(function: func.FuncOp, source: str, digest: str, start: float) -> CompiledFunction:
    """A function missing from the process cache: from the disk cache, or compiled
    (and stored there)."""
    timings = {"key": time.perf_counter() - start}
    root = disk_cache.get_cache_dir()
    if root is None:
        compiled = CompiledFunction(function, timings=timings)
        _log(compiled.name, timings, start, "")
        return compiled
    clock = time.perf_counter()
    key = disk_cache.entry_key(digest, lowering_options())
    clock = lap(timings, "disk-key", clock)
    if (loaded := _load(root, key, source)) is not None:
        lap(timings, "disk-load", clock)
        _log(loaded.name, timings, start, " (disk cache hit)")
        return loaded
    compiled = CompiledFunction(function, timings=timings, keep_object=True)
    clock = time.perf_counter()
    _store(root, key, compiled)
    lap(timings, "disk-store", clock)
    _log(compiled.name, timings, start, " (disk cache miss)")
    return compiled


_LIBRARIES = {
    # library: (marker in the optimized LLVM IR, loader)
    "mvec": ("@_ZGV", libmvec_available),
    "gomp": ("@GOMP_", parallel.libgomp_available),
    "blas": ("@scipy_", lambda: blas.openblas() is not None),  # CBLAS and LAPACKE
}
"""The shared libraries compiled code may call: an entry records those it needs,
and they are loaded before it (MCJIT resolves its symbols in the process)."""


def _store(root: Path, key: str, compiled: CompiledFunction) -> None:
    module = compiled.module
    assert module.objects is not None and module.llvm_ir is not None
    libraries = [lib for lib, (marker, _) in _LIBRARIES.items() if marker in module.llvm_ir]
    metadata = {
        "function": compiled.name,
        "signatures": {compiled.name: compiled.signature.to_json()},
        "libraries": libraries,
    }
    disk_cache.store(root, key, metadata, module.objects)
    module.objects = None  # on disk now: no copy kept in memory


def _load(root: Path, key: str, source: str) -> CompiledFunction | None:
    """The entry of `key` as a `CompiledFunction`, or None (a miss; an unusable
    entry is reported and deleted)."""
    entry = disk_cache.load(root, key)
    if entry is None:
        return None
    path = disk_cache.entry_path(root, key)
    try:
        metadata = entry.metadata
        name = metadata["function"]
        signatures = {n: Signature.from_json(s) for n, s in metadata["signatures"].items()}
        libraries = metadata["libraries"]
        if not isinstance(name, str) or name not in signatures or not isinstance(libraries, list):
            raise ValueError("no signature of the function")
        if any(lib not in _LIBRARIES for lib in libraries):
            raise ValueError(f"unknown libraries {libraries}")
    except (KeyError, TypeError, AttributeError, ValueError) as error:
        disk_cache.discard(path, f"bad metadata ({error!r})")
        return None
    if not all(_LIBRARIES[lib][1]() for lib in libraries):
        return None  # a library it calls is missing in this process: compile anew
    try:
        module = CompiledModule.load(entry.objects, signatures)
        compiled = CompiledFunction.loaded(name, module, source)
    except (RuntimeError, KeyError, ValueError) as error:
        disk_cache.discard(path, f"cannot load the object code ({error})")
        return None
    COUNTS["disk-hits"] += 1
    return compiled


def _log(name: str, timings: dict[str, float], start: float, note: str) -> None:
    """With `td.config.log_compiles` on (`TIDU_LOG_COMPILES=1`): one line of
    stage times to stderr."""
    if not config.get("log_compiles"):
        return
    stages = ", ".join(f"{stage} {seconds:.3f} s" for stage, seconds in timings.items())
    total = time.perf_counter() - start
    print(f"tidu: compile @{name}: {stages}, total {total:.3f} s{note}", file=sys.stderr)


def _parse_function(source: str) -> func.FuncOp:
    """The `func.func` printed as `source`."""
    ctx = Context(allow_unregistered=True)
    for dialect in (Builtin, func.Func, arith.Arith, PRIM, CG):
        ctx.load_dialect(dialect)
    op = Parser(ctx, source).parse_op()
    if not isinstance(op, func.FuncOp):
        raise TypeError(f"expected a func.func, got {op.name}")
    return op


def llvm_ir(target: func.FuncOp | ModuleOp, name: str | None = None) -> str:
    """The optimized LLVM IR of a compiled function (compiling it if needed)."""
    return compile_function(target, name).llvm_ir


def _find_function(target: func.FuncOp | ModuleOp, name: str | None) -> func.FuncOp:
    if isinstance(target, func.FuncOp):
        return target
    if name is None:
        functions = [op for op in target.ops if isinstance(op, func.FuncOp)]
        if len(functions) != 1:
            raise ValueError("the module has several functions: pass the name of one")
        return functions[0]
    found = SymbolTable.lookup_symbol(target, name.removeprefix("@"))
    if not isinstance(found, func.FuncOp):
        raise KeyError(f"no func.func @{name.removeprefix('@')} in the module")
    return found


def clear_cache() -> None:
    """Forget every compiled function cached in this process (the disk cache stays:
    `disk_cache.clear()`; `td.clear_caches()` empties every cache)."""
    _cache.clear()
