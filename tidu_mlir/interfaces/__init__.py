"""The contracts an op class implements to take part in tidu's machinery.

`Differentiable`: the AD rules the AD passes call. `Evaluable`: the numpy
semantics the reference evaluator calls. `RecomputeCost`: whether `unzip`'s
policies may recompute the op rather than save its result. Both sit below every dialect and
every pass, so a dialect can implement them without importing a pass.
`Batchable`: the batching rule the `batch` pass (`td.vmap`) calls.
"""

from tidu_mlir.interfaces.batchable import (
    Batchable,
    BatchContext,
    BatchRuleError,
    OneHot,
    batched_type,
)
from tidu_mlir.interfaces.differentiable import (
    ADRuleError,
    Differentiable,
    LinearizedBody,
    OpT,
    RuleContext,
    RuleKind,
    active_mask_of,
)
from tidu_mlir.interfaces.evaluable import (
    Evaluable,
    EvaluationError,
    coerce_array,
    evaluate_op,
    evaluate_ops,
)
from tidu_mlir.interfaces.recompute import RecomputeCost

__all__ = [
    "BatchContext",
    "BatchRuleError",
    "Batchable",
    "ADRuleError",
    "Differentiable",
    "Evaluable",
    "EvaluationError",
    "LinearizedBody",
    "OneHot",
    "OpT",
    "RecomputeCost",
    "RuleContext",
    "RuleKind",
    "active_mask_of",
    "batched_type",
    "coerce_array",
    "evaluate_op",
    "evaluate_ops",
]
