"""Running materialized functions: compiled native code or the reference evaluator.

`executable(func_op)` returns a callable taking numpy arrays (in the
function's argument order) and returning a list of arrays. The backend is
`llvm` (compiled through `tidu_mlir.lowering`, cached by content) unless
`TIDU_BACKEND=interp` is set or passed, which runs the numpy evaluator.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Literal

import numpy as np
from xdsl.dialects.func import FuncOp

from tidu_mlir.interp import evaluate_func

Backend = Literal["llvm", "interp"]
Executable = Callable[..., list[np.ndarray]]


def default_backend() -> Backend:
    """The backend named by `TIDU_BACKEND` (default `llvm`)."""
    name = os.environ.get("TIDU_BACKEND", "llvm")
    if name not in ("llvm", "interp"):
        raise ValueError(f"TIDU_BACKEND must be 'llvm' or 'interp', not '{name}'")
    return name  # type: ignore[return-value]


def executable(func_op: FuncOp, backend: Backend | None = None) -> Executable:
    """A callable running `func_op` on numpy arrays."""
    chosen = backend or default_backend()
    if chosen == "interp":
        return lambda *args: evaluate_func(func_op, args)
    from tidu_mlir.lowering.runtime import compile_function  # llvmlite only when used

    compiled = compile_function(func_op)

    def run(*args: np.ndarray) -> list[np.ndarray]:
        results = compiled(*map(_dense, args))
        return list(results) if isinstance(results, tuple) else [results]

    return run


def _dense(array: np.ndarray) -> np.ndarray:
    """`array` as native code reads it, dense and row-major: a view (`x.T`,
    `x[::2]`) copied (the test first: `np.require` costs ~1 µs even when it
    returns its argument)."""
    if isinstance(array, np.ndarray) and (flags := array.flags).c_contiguous and flags.aligned:
        return array
    return np.require(array, requirements=["C", "A"])
