"""The AD contract and the graph-level Python API (SPEC §5, last item).

For people building their own primitive sets: op classes inherit
`Differentiable`; `linearize` and `linear_transpose` build derived fragments
(`LinearizedGraph`), `verify_linearity` checks one, `materialize` turns a
fragment into a self-contained `func.func`. The passes of the same names are
thin wrappers over these functions.
"""

from tidu_mlir.ad.context import FragmentBuilder, LinearizedGraph, Target
from tidu_mlir.ad.interface import (
    ADRuleError,
    Differentiable,
    RuleContext,
    RuleKind,
    active_mask_of,
)
from tidu_mlir.ad.jvp import linearize
from tidu_mlir.ad.linearity import verify_linearity, verify_module_linearity
from tidu_mlir.ad.materialization import KEY_ARG_ATTR, materialize
from tidu_mlir.ad.transpose import linear_transpose

__all__ = [
    "KEY_ARG_ATTR",
    "ADRuleError",
    "Differentiable",
    "FragmentBuilder",
    "LinearizedGraph",
    "RuleContext",
    "RuleKind",
    "Target",
    "active_mask_of",
    "linear_transpose",
    "linearize",
    "materialize",
    "verify_linearity",
    "verify_module_linearity",
]
