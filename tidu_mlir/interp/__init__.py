"""The reference evaluator (numpy): the oracle every compiled result is checked
against. `evaluate_ops` runs ops on arrays; `evaluate_func` runs a `func.func`;
`evaluate_fragment` runs a `cg` fragment on its signature's inputs. Any op
that implements `tidu_mlir.interfaces.Evaluable` can be evaluated."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.ir import SSAValue

from tidu_mlir.dialects.cg import Fragment
from tidu_mlir.graph import fragment_outputs, fragment_path, fragment_signature, reachable_ops
from tidu_mlir.interfaces import EvaluationError
from tidu_mlir.interp.evaluator import coerce_array, evaluate_func, evaluate_op, evaluate_ops


def evaluate_fragment(fragment: Fragment, args: Sequence[object]) -> list[np.ndarray]:
    """Run a fragment on arrays given in the order of `fragment_signature`."""
    signature = fragment_signature(fragment)
    if len(args) != len(signature):
        raise ValueError(
            f"{fragment_path(fragment)} takes {len(signature)} inputs, got {len(args)}"
        )
    env: dict[SSAValue, np.ndarray] = {
        input_op.result: coerce_array(value, input_op.result.type, f"input {input_op.key}")
        for input_op, value in zip(signature, args, strict=True)
    }
    outputs = fragment_outputs(fragment)
    evaluate_ops(reachable_ops(outputs), env)
    return [env[value] for value in outputs]


__all__ = [
    "EvaluationError",
    "coerce_array",
    "evaluate_fragment",
    "evaluate_func",
    "evaluate_op",
    "evaluate_ops",
]
