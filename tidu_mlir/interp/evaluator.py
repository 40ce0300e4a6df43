"""Running ops on numpy arrays: the reference semantics of every graph.

An op runs through its own `Evaluable.evaluate`; the evaluator checks each
result against the result type and casts it to the result's element type."""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping, Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from tidu_mlir.interfaces import Evaluable, EvaluationError
from tidu_mlir.types import numpy_dtype

Env = MutableMapping[SSAValue, np.ndarray]


def coerce_array(value: object, t: Attribute, what: str) -> np.ndarray:
    """`value` as an array of tensor type `t`; a ValueError names `what` on a
    shape mismatch (no silent broadcasting)."""
    if not isinstance(t, TensorType):
        raise EvaluationError(f"{what} has non-tensor type {t}")
    array = np.asarray(value)
    shape = tuple(t.get_shape())
    if array.shape != shape:
        raise ValueError(f"{what} has shape {array.shape}, expected {shape} ({t})")
    dtype = numpy_dtype(t.get_element_type())
    if np.iscomplexobj(array) and dtype.kind != "c":
        raise ValueError(f"{what} is complex but {t} is real")
    return array.astype(dtype, copy=False)


def evaluate_op(op: Operation, env: Env) -> None:
    """Run one op, reading its operands from `env` and storing its results."""
    if not isinstance(op, Evaluable):
        raise EvaluationError(f"'{op.name}' is not evaluable (no numpy semantics)")
    args: list[np.ndarray] = []
    for index, operand in enumerate(op.operands):
        if operand not in env:
            raise EvaluationError(f"no value for operand #{index} of '{op.name}'")
        args.append(env[operand])
    with np.errstate(all="ignore"):  # inf and nan are results like any other
        results = op.evaluate(*args)
    if len(results) != len(op.results):
        raise EvaluationError(
            f"'{op.name}' evaluated to {len(results)} results, expected {len(op.results)}"
        )
    for index, (result, array) in enumerate(zip(op.results, results, strict=True)):
        try:
            env[result] = coerce_array(array, result.type, f"result #{index} of '{op.name}'")
        except ValueError as error:
            raise EvaluationError(str(error)) from error


def evaluate_ops(ops: Iterable[Operation], env: Env) -> Env:
    """Run topologically ordered `ops`; `env` maps values to arrays and receives
    the results. Ops whose results all have values already (seeded inputs such
    as `cg.input`) are skipped. Returns `env`."""
    for op in ops:
        if op.results and all(result in env for result in op.results):
            continue
        evaluate_op(op, env)
    return env


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
