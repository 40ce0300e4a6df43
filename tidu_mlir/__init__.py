"""tidu-mlir: an automatic-differentiation compiler built on xDSL.

`import tidu_mlir as td` gives the function transforms of `tidu_mlir.api`
(`td.jit`, `td.grad`, ...); `import tidu_mlir.numpy as tnp` the numpy-named
functions to write traced functions with; `td.lax` the primitive-level
functions numpy has no name for; `td.nn` the neural-network functions of
`jax.nn` (`softmax`, `relu`, ...); `td.scipy.special` the special functions
of `jax.scipy.special` (`gammaln`, `logsumexp`, ...); `td.tree_util` the
pytree functions (the transforms take and return pytrees of arrays: dicts,
lists, tuples, namedtuples, registered classes). `td.config` holds the cache
bounds and the `log_compiles` flag (`td.config.update("compile_cache_size",
64)`), `td.clear_caches()` empties every cache.

The public names are imported on first use (module `__getattr__`), so tools
that only need the dialects and passes, such as `tidu-opt`, start without
loading the tracing and JIT machinery.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tidu_mlir import config, lax, nn, scipy, tree_util
    from tidu_mlir.api import (
        checkpoint,
        grad,
        hessian,
        hvp,
        ir,
        jacfwd,
        jacrev,
        jit,
        jvp,
        linear_transpose,
        linearize,
        lower,
        saved_residuals,
        value_and_grad,
        vjp,
        vmap,
    )
    from tidu_mlir.config import clear_caches
    from tidu_mlir.draw import draw

__all__ = [
    "checkpoint",
    "clear_caches",
    "config",
    "draw",
    "grad",
    "hessian",
    "hvp",
    "ir",
    "jacfwd",
    "jacrev",
    "jit",
    "jvp",
    "lax",
    "linear_transpose",
    "linearize",
    "lower",
    "nn",
    "saved_residuals",
    "scipy",
    "tree_util",
    "value_and_grad",
    "vjp",
    "vmap",
]

_SUBMODULES = frozenset({"config", "lax", "nn", "scipy", "tree_util"})
_DEFINED_ELSEWHERE = {"clear_caches": "tidu_mlir.config", "draw": "tidu_mlir.draw"}


def __getattr__(name: str) -> Any:
    """Import a public name on first access and keep it in the package."""
    if name in _SUBMODULES:
        value = importlib.import_module(f"tidu_mlir.{name}")
    elif name in __all__:
        module = _DEFINED_ELSEWHERE.get(name, "tidu_mlir.api")
        value = getattr(importlib.import_module(module), name)
    else:
        raise AttributeError(f"module 'tidu_mlir' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
