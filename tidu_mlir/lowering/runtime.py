"""Compile a `func.func` of prim ops on static tensors to native code and call it on numpy arrays.

    compiled = compile_function(func_op)          # or (module, "name")
    out = compiled(x, y)                          # numpy in, numpy out

The function is cloned into a module of its own, lowered by `lower-to-llvm`
(bufferize, fused loop nests, llvm dialect), optimized at O3 and loaded by MCJIT
(`jit.CompiledModule`). Arguments are checked by the JIT layer: exact dtype and
shape, C-contiguous and aligned, else `TypeError`/`ValueError` naming the
argument (a Python number is accepted for a rank-0 tensor). Outputs are freshly
allocated; one result is returned as an array, several as a tuple.

Cache: keyed by the SHA-256 of the printed function (its body, shapes and
dtypes), least recently used first out beyond `CACHE_SIZE`; compiling the same
function twice in a process returns the same `CompiledFunction`. The machine
code lives as long as the `CompiledFunction` (it holds the engine). Calls release
the GIL and are thread-safe.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.traits import SymbolTable

from tidu_mlir.lowering.allocator import retain_freed_memory
from tidu_mlir.lowering.jit import CompiledModule, JitFunction
from tidu_mlir.lowering.lower_to_llvm import lower_prim_to_loops
from tidu_mlir.types import numpy_dtype

CACHE_SIZE = 256


class CompiledFunction:
    """A compiled tensor function: call it with one numpy array per argument."""

    def __init__(self, function: func.FuncOp):
        self.name = function.sym_name.data
        inputs = function.function_type.inputs.data
        outputs = function.function_type.outputs.data
        for typ in (*inputs, *outputs):
            if not isinstance(typ, TensorType):
                raise TypeError(f"@{self.name}: only tensor arguments and results, got {typ}")
        self.input_types: tuple[TensorType, ...] = tuple(inputs)  # pyright: ignore[reportAttributeAccessIssue]
        self.output_types: tuple[TensorType, ...] = tuple(outputs)  # pyright: ignore[reportAttributeAccessIssue]
        module = ModuleOp([function.clone()])
        lower_prim_to_loops(module, Context(allow_unregistered=True))
        # Cached by this function's text (`compile_function`): no second key to print.
        self.module = CompiledModule(module, consume=True)
        self._native: JitFunction = self.module[self.name]
        self._rank0 = tuple(
            (i, numpy_dtype(t.get_element_type()))
            for i, t in enumerate(self.input_types)
            if not t.get_shape()
        )

    @property
    def llvm_ir(self) -> str:
        """The optimized LLVM IR."""
        return self.module.llvm_ir

    def __call__(self, *args: object) -> Any:
        if not self._rank0:
            return self._native(*args)
        arrays = list(args)
        for i, dtype in self._rank0:
            if i < len(arrays):
                arrays[i] = _rank0(arrays[i], dtype)
        return self._native(*arrays)


def _rank0(value: object, dtype: np.dtype[Any]) -> object:
    """A Python or numpy number for a rank-0 tensor argument, as a 0-d array."""
    if isinstance(value, int | float | complex | np.number) and not isinstance(value, bool):
        return np.asarray(value, dtype=dtype)
    return value


_cache: OrderedDict[str, CompiledFunction] = OrderedDict()
_lock = threading.Lock()


def compile_function(target: func.FuncOp | ModuleOp, name: str | None = None) -> CompiledFunction:
    """Compile `target` (a `func.func`, or the function `name` of a module), cached."""
    retain_freed_memory()
    function = _find_function(target, name)
    key = hashlib.sha256(str(function).encode()).hexdigest()
    with _lock:
        if (hit := _cache.get(key)) is not None:
            _cache.move_to_end(key)
            return hit
        compiled = CompiledFunction(function)
        _cache[key] = compiled
        if len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
        return compiled


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
    """Forget every cached compiled function."""
    with _lock:
        _cache.clear()
