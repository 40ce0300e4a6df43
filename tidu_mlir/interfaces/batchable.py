"""The batching contract: what an op class provides to be vectorized by `batch`.

The `batch` pass (and `td.vmap` on top of it) rewrites a graph computing one
example into a graph computing `size` examples at once. It walks the ops in
order; an op none of whose operands carries the batch is copied unchanged,
any other op has its `batch_rule` called. The pass never names a concrete
op: the rule of each op class says how the op handles a new leading axis.

Convention: a batched value carries the batch as its *leading* axis (axis 0,
of extent `ctx.size`); the pass moves mapped input axes there first and
moves outputs to their `out_axes` last, so rules see only axis 0. One
exception: a tape (a tensor whose leading axis is dynamic, one slice per
iteration of a loop) carries the batch as axis 1, so each slice is a batched
value (the loop writes and reads slices; it cannot stride a dynamic axis).

One-hot rows: batching over a standard basis (the seeds of a Jacobian) need
not build the basis. The pass carries such a value as a `OneHot` (an
unbatched *scale* of the example's shape and an offset: example `b` is the
scale's element at flat position `b - offset`, zero elsewhere) through the
ops whose `one_hot_rule` keeps it one-hot (elementwise ops linear in it,
reshapes) or turns it into a cheap dense value (a contraction picks rows of
its other operand instead of multiplying by a diagonal matrix). Any other op
gets it materialized by the dialect (`emit_one_hot_rows`) and its
`batch_rule` called as usual.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, Region, SSAValue

from tidu_mlir.diagnostics import OpError
from tidu_mlir.interfaces.differentiable import OpT


def batched_type(t: Attribute, size: int) -> TensorType:
    """The tensor type `t` with a leading batch axis of extent `size` (the type
    of a batched value, by the convention above; behind a tape's dynamic axis)."""
    assert isinstance(t, TensorType), f"batching maps tensor values, not {t}"
    shape = t.get_shape()
    if shape and shape[0] < 0:
        return TensorType(t.get_element_type(), [shape[0], size, *shape[1:]])
    return TensorType(t.get_element_type(), [size, *shape])


@dataclass(frozen=True)
class OneHot:
    """A batched value of standard-basis rows, not built: example `b` holds
    `scale`'s element at flat position `b - offset` and zeros elsewhere (all
    zeros when `b - offset` is outside the example). `scale` is an unbatched
    value of the example's type."""

    scale: SSAValue
    offset: int

    def covers(self, size: int) -> bool:
        """Whether its rows fit in a batch of `size` examples."""
        return self.offset >= 0 and self.offset + self.count <= size

    @property
    def count(self) -> int:
        """The number of non-zero rows (the example's element count)."""
        assert isinstance(self.scale.type, TensorType)
        return math.prod(self.scale.type.get_shape())


class BatchRuleError(OpError):
    """An op cannot be batched (no rule, or its rule refused the operands)."""

    def __init__(self, op: Operation, detail: str | None = None):
        message = f"unsupported batching rule for {op.name}"
        if detail:
            message += f": {detail}"
        super().__init__(message, op)
        self.op_name: str = op.name


class BatchContext(Protocol):
    """What a batching rule uses to add ops to the batched graph."""

    @property
    def size(self) -> int:
        """The extent of the batch axis (axis 0 of every batched value)."""
        ...

    def emit(self, op: OpT) -> OpT:
        """Insert `op` at the end of the batched graph (with the location of the
        op being batched); return `op`."""
        ...

    def batch_body(self, body: Region, batched: Sequence[bool]) -> tuple[Region, list[bool]]:
        """Batch the body of an op with a region (a loop body): `batched` flags
        its arguments that carry the batch (a leading axis of extent `size`).
        Returns the new region and which of its results are batched (a result
        that depends on no batched argument stays unbatched). The body is left
        unchanged."""
        ...


class Batchable(ABC):
    """Mixin for op classes that carry their own batching rule."""

    @abstractmethod
    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        """Emit the batched form of this op.

        `operands`: the batched graph's values for this op's operands, in order;
        those with `batched[i]` have an extra leading axis of extent `ctx.size`,
        the others have this op's operand type unchanged. Called only when some
        operand is batched. Returns one value per result, each batched (leading
        axis `ctx.size`, then the result's own shape)."""

    def one_hot_rule(
        self,
        ctx: BatchContext,
        operands: Sequence[SSAValue | OneHot],
        batched: Sequence[bool],
    ) -> Sequence[SSAValue | OneHot] | None:
        """Batch this op with some operands one-hot rows (`OneHot`) without
        building them: one value per result (batched, or one-hot again), or
        None to have the pass build them (`emit_one_hot_rows`) and call
        `batch_rule`. `batched` flags the other operands that are batched.
        The default keeps nothing one-hot."""
        return None

    @classmethod
    def emit_one_hot_rows(cls, ctx: BatchContext, rows: OneHot) -> SSAValue | None:
        """Build `rows` as a batched value with ops of this class's dialect;
        None when the dialect cannot (the pass then refuses the basis)."""
        return None
