"""tidu-mlir: an automatic-differentiation compiler built on xDSL.

`import tidu_mlir as td` gives the function transforms of `tidu_mlir.api`
(`td.jit`, `td.grad`, ...); `import tidu_mlir.numpy as tnp` the numpy-named
functions to write traced functions with; `td.lax` the primitive-level
functions numpy has no name for; `td.tree_util` the pytree functions (the
transforms take and return pytrees of arrays: dicts, lists, tuples,
namedtuples, registered classes). `td.config` holds the cache bounds and the
`log_compiles` flag (`td.config.update("compile_cache_size", 64)`),
`td.clear_caches()` empties every cache.
"""

from tidu_mlir import config, lax, tree_util
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
    "saved_residuals",
    "tree_util",
    "value_and_grad",
    "vjp",
    "vmap",
]
