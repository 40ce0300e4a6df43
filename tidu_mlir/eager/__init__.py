"""Eager reverse mode (`docs/eager.md`).

The recording layer, generic over dialects: `KeySource`, `Recorder`,
`RecordedGraph`, `EagerInput`, `EagerOutput`, the `BackwardExecutor` protocol
and `try_backward`. On top of it a ready frontend: `Tensor` (numpy-backed,
PyTorch-style `.backward()` / `.grad`), `tensor(...)`, `no_grad()` and, under
the same names, every function of `tidu_mlir.numpy` and of `td.nn` on tensors
(`tidu_mlir.eager.functions.FUNCTIONS`).
"""

from tidu_mlir.eager import functions
from tidu_mlir.eager.backward import (
    BackwardContext,
    BackwardExecutor,
    BackwardPlan,
    EvaluatorExecutor,
    try_backward,
)
from tidu_mlir.eager.executor import CompiledExecutor
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

globals().update(functions.FUNCTIONS)

__all__ = [  # pyright: ignore[reportUnsupportedDunderAll] - the functions are generated
    "RUNTIME", "BackwardContext", "BackwardExecutor", "BackwardPlan", "CompiledExecutor",
    "EagerInput", "EagerOutput", "EvaluatorExecutor", "KeySource", "Operand", "RecordedGraph",
    "Recorder", "Tensor", "ValueKey", "is_grad_enabled", "no_grad", "set_backend", "tensor",
    "try_backward", *functions.FUNCTIONS,
]  # fmt: skip
