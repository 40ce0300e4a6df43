"""The evaluation contract: what an op class provides to run on numpy arrays.

The reference evaluator (`tidu_mlir.interp`) runs any `Evaluable` op by
calling `evaluate` on its operand arrays (`evaluate_op`); each result is
checked against the result type (shape) and cast to the result's element
type. `evaluate_op` and `evaluate_ops` live here, below every dialect, so an
op with a body (`prim.scan`) can run the ops of its body.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, MutableMapping

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from tidu_mlir.types import numpy_dtype

Env = MutableMapping[SSAValue, np.ndarray]


class EvaluationError(Exception):
    """The evaluator cannot run an op (not evaluable, missing value, bad result)."""


class Evaluable(ABC):
    """Mixin for op classes that carry their own numpy semantics."""

    @abstractmethod
    def evaluate(self, *operands: np.ndarray) -> tuple[np.ndarray, ...]:
        """One array per result, computed from one array per operand (in order)."""


def coerce_array(value: object, t: Attribute, what: str) -> np.ndarray:
    """`value` as an array of tensor type `t`; a ValueError names `what` on a
    shape mismatch (no silent broadcasting)."""
    if not isinstance(t, TensorType):
        raise EvaluationError(f"{what} has non-tensor type {t}")
    array = np.asarray(value)
    shape = tuple(t.get_shape())
    if not _fits(array.shape, shape):
        raise ValueError(f"{what} has shape {array.shape}, expected {shape} ({t})")
    dtype = numpy_dtype(t.get_element_type())
    if np.iscomplexobj(array) and dtype.kind != "c":
        raise ValueError(f"{what} is complex but {t} is real")
    return array.astype(dtype, copy=False)


def _fits(actual: tuple[int, ...], expected: tuple[int, ...]) -> bool:
    """`actual` is `expected`, a dynamic axis (-1, a tape's) matching any extent."""
    return len(actual) == len(expected) and all(
        e < 0 or a == e for a, e in zip(actual, expected, strict=True)
    )


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
