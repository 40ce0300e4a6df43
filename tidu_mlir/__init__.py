"""tidu-mlir: an automatic-differentiation compiler built on xDSL.

`import tidu_mlir as td` gives the transforms (`td.jit`, `td.grad`, ...);
`import tidu_mlir.numpy as tnp` the numpy-named functions to write traced
functions with.
"""

from tidu_mlir.transforms import (
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
    value_and_grad,
    vjp,
)

__all__ = [
    "grad",
    "hessian",
    "hvp",
    "ir",
    "jacfwd",
    "jacrev",
    "jit",
    "jvp",
    "linear_transpose",
    "linearize",
    "lower",
    "value_and_grad",
    "vjp",
]
