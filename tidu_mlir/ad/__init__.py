"""The graph-level AD API, and the AD contract re-exported for its users.

For people building their own primitive sets: op classes inherit
`Differentiable` (defined in `tidu_mlir.interfaces`); `linearize` and
`linear_transpose` build derived fragments (`LinearizedGraph`),
`verify_linearity` checks one, `batch` vectorizes a graph over a leading
axis (op classes inherit `Batchable`), `materialize` turns a fragment into a
self-contained `func.func`. The passes of the same names are
thin wrappers over these functions.
"""

from tidu_mlir.ad.batch import BATCHED_OUTPUTS_ATTR_NAME, Batched, batch
from tidu_mlir.ad.context import FragmentBuilder, LinearizedGraph, Target
from tidu_mlir.ad.jvp import linearize
from tidu_mlir.ad.linearity import verify_linearity, verify_module_linearity
from tidu_mlir.ad.materialization import KEY_ARG_ATTR, materialize
from tidu_mlir.ad.regions import batch_region, linearize_region, transpose_region
from tidu_mlir.ad.transpose import linear_transpose
from tidu_mlir.ad.unzip import POLICIES, Residual, Unzipped, saved_residuals, unzip
from tidu_mlir.interfaces import (
    ADRuleError,
    Differentiable,
    RuleContext,
    RuleKind,
    active_mask_of,
)

__all__ = [
    "BATCHED_OUTPUTS_ATTR_NAME",
    "Batched",
    "batch",
    "KEY_ARG_ATTR",
    "POLICIES",
    "ADRuleError",
    "Differentiable",
    "FragmentBuilder",
    "LinearizedGraph",
    "Residual",
    "RuleContext",
    "RuleKind",
    "Target",
    "Unzipped",
    "active_mask_of",
    "batch_region",
    "linear_transpose",
    "linearize_region",
    "linearize",
    "materialize",
    "saved_residuals",
    "transpose_region",
    "unzip",
    "verify_linearity",
    "verify_module_linearity",
]
