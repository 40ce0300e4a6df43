"""Eager reverse mode (SPEC §1.7, seeds/003).

The recording layer, generic over dialects: `KeySource`, `Recorder`,
`RecordedGraph`, `EagerInput`, `EagerOutput`, the `BackwardExecutor` protocol
and `try_backward`. On top of it a ready frontend: `Tensor` (numpy-backed,
PyTorch-style `.backward()` / `.grad`), `tensor(...)`, `no_grad()` and the
numpy-named functions of `tidu_mlir.numpy` on tensors.
"""

from tidu_mlir.eager.backward import (
    BackwardContext,
    BackwardExecutor,
    BackwardPlan,
    EvaluatorExecutor,
    try_backward,
)
from tidu_mlir.eager.executor import CompiledExecutor
from tidu_mlir.eager.functions import (
    abs,
    add,
    astype,
    broadcast_to,
    concatenate,
    conj,
    cos,
    divide,
    dot,
    einsum,
    equal,
    exp,
    greater,
    greater_equal,
    imag,
    less,
    less_equal,
    log,
    matmul,
    max,
    maximum,
    mean,
    minimum,
    multiply,
    negative,
    not_equal,
    power,
    real,
    reshape,
    sin,
    sqrt,
    subtract,
    sum,
    tanh,
    transpose,
    where,
)
from tidu_mlir.eager.recording import (
    EagerInput,
    EagerOutput,
    KeySource,
    Operand,
    RecordedGraph,
    Recorder,
    ValueKey,
)
from tidu_mlir.eager.tensor import (
    RUNTIME,
    Tensor,
    is_grad_enabled,
    no_grad,
    set_backend,
    tensor,
)

__all__ = [
    "RUNTIME", "BackwardContext", "BackwardExecutor", "BackwardPlan", "CompiledExecutor",
    "EagerInput", "EagerOutput", "EvaluatorExecutor", "KeySource", "Operand", "RecordedGraph",
    "Recorder", "Tensor", "ValueKey", "abs", "add", "astype", "broadcast_to", "concatenate",
    "conj", "cos", "divide", "dot", "einsum", "equal", "exp", "greater", "greater_equal", "imag",
    "is_grad_enabled", "less", "less_equal", "log", "matmul", "max", "maximum", "mean",
    "minimum", "multiply", "negative", "no_grad", "not_equal", "power", "real", "reshape",
    "set_backend", "sin", "sqrt", "subtract", "sum", "tanh", "tensor", "transpose",
    "try_backward", "where",
]  # fmt: skip
