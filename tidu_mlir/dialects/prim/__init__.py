"""The `prim` dialect: the differentiable tensor primitives (docs/design.md).

Every op takes and gives statically shaped ranked tensors. Values that carry
tangents are f32, f64, complex<f32> or complex<f64>; integers (i32, i64) and
booleans (i1) are computed with (arithmetic, comparison, selection, structural
ops, conversion) but never differentiated. Every op is `Pure`, accepts an optional
discardable `role` attribute (`#cg.linearized<[...]>`) and checks it in its
verifier. Constructors infer the result type wherever the operands and
properties determine it, so AD rules can emit ops without computing shapes.

Each op class holds everything about itself: verifier, assembly format, AD
rules and numpy reference. The modules are layered; each imports only the
ones before it:

1. `types`: element types, dtypes, type checks
2. `shapes`: shape rules
3. `syntax`: role attribute, array properties, print/parse helpers
4. `base`: `PrimOp`, the rule-shape and structural bases, `prim.add`
5. `core`: the linear core ops and the rule helpers that emit them
6. `elementwise`: the non-linear elementwise ops
7. `structural`: slice, pad, concatenate, reduce_max
8. `indexing`: iota, gather, scatter_add, scatter, dynamic_slice,
   dynamic_update_slice (run-time integer indices)
9. `ordering`: the ops along one axis, argmax, argmin, cumsum, argsort
10. `contraction`: dot_general
11. `linalg`: cholesky, triangular_solve, lu, qr (matrices on the trailing axes)
12. `spectral`: eigh, svd (on `linalg`'s matrix helpers)
13. `check`: prim.check, the run-time assertion on the data path
14. `control` (a package): the ops with regions, scan, cond and while, and
    their terminator, yield

Each layer lists its public names in `__all__` and its op classes in `OPS`;
this module re-exports them and assembles the dialect, so a new op is added
in its layer's file only.
"""

from xdsl.ir import Dialect

from tidu_mlir.dialects.prim import (
    base,
    check,
    contraction,
    control,
    core,
    elementwise,
    indexing,
    linalg,
    ordering,
    shapes,
    spectral,
    structural,
    syntax,
    types,
)
from tidu_mlir.dialects.prim.base import *  # noqa: F403
from tidu_mlir.dialects.prim.check import *  # noqa: F403
from tidu_mlir.dialects.prim.contraction import *  # noqa: F403
from tidu_mlir.dialects.prim.control import *  # noqa: F403
from tidu_mlir.dialects.prim.core import *  # noqa: F403
from tidu_mlir.dialects.prim.elementwise import *  # noqa: F403
from tidu_mlir.dialects.prim.indexing import *  # noqa: F403
from tidu_mlir.dialects.prim.linalg import *  # noqa: F403
from tidu_mlir.dialects.prim.ordering import *  # noqa: F403
from tidu_mlir.dialects.prim.shapes import *  # noqa: F403
from tidu_mlir.dialects.prim.spectral import *  # noqa: F403
from tidu_mlir.dialects.prim.structural import *  # noqa: F403
from tidu_mlir.dialects.prim.syntax import *  # noqa: F403
from tidu_mlir.dialects.prim.types import *  # noqa: F403

PRIM_OPS: tuple[type[base.PrimOp], ...] = (
    *base.OPS,
    *core.OPS,
    *elementwise.OPS,
    *structural.OPS,
    *indexing.OPS,
    *ordering.OPS,
    *contraction.OPS,
    *linalg.OPS,
    *spectral.OPS,
    *check.OPS,
    *control.OPS,
)
"""Every op of the dialect, layer by layer."""

PRIM = Dialect("prim", [*PRIM_OPS, *control.TERMINATORS], [])

__all__ = ["PRIM", "PRIM_OPS"]
__all__ += types.__all__
__all__ += shapes.__all__
__all__ += syntax.__all__
__all__ += base.__all__
__all__ += core.__all__
__all__ += elementwise.__all__
__all__ += structural.__all__
__all__ += indexing.__all__
__all__ += ordering.__all__
__all__ += contraction.__all__
__all__ += linalg.__all__
__all__ += spectral.__all__
__all__ += check.__all__
__all__ += control.__all__
