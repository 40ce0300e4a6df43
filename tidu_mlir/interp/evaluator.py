"""Running functions on numpy arrays: the reference semantics of every graph.

An op runs through its own `Evaluable.evaluate` (`interfaces.evaluable.evaluate_op`
checks each result against the result type and casts it to the result's
element type); this module adds whole functions."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.ir import SSAValue

from tidu_mlir.interfaces import EvaluationError
from tidu_mlir.interfaces.evaluable import Env, coerce_array, evaluate_op, evaluate_ops

__all__ = ["Env", "coerce_array", "evaluate_func", "evaluate_op", "evaluate_ops"]


def evaluate_func(func_op: func.FuncOp, args: Sequence[object]) -> list[np.ndarray]:
    """Run a single-block `func.func` on positional arguments; its returned arrays."""
    block = func_op.body.block
    if len(args) != len(block.args):
        raise ValueError(
            f"@{func_op.sym_name.data} takes {len(block.args)} arguments, got {len(args)}"
        )
    env: dict[SSAValue, np.ndarray] = {
        arg: coerce_array(value, arg.type, f"argument #{index} of @{func_op.sym_name.data}")
        for index, (arg, value) in enumerate(zip(block.args, args, strict=True))
    }
    terminator = block.last_op
    if not isinstance(terminator, func.ReturnOp):
        raise EvaluationError(f"@{func_op.sym_name.data} does not end with func.return")
    evaluate_ops((op for op in block.ops if op is not terminator), env)
    return [env[value] for value in terminator.arguments]
