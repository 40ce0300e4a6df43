"""The indexing `prim` ops: iota, gather, scatter_add, scatter, dynamic_slice
and dynamic_update_slice.

Indices and starts are i32 or i64 tensors: run-time data that never carries a
tangent. Every index is valid (the ops never fault on their data):

* `gather`, `scatter_add` and `scatter` index one axis of extent n: a negative
  index counts from the end once (numpy's `i + n`), then an index still outside
  `[0, n)` is clamped into it, as JAX's gather and scatter do (numpy would raise
  an IndexError, but indices are only known at run time): `normalize_indices`.
* `dynamic_slice` and `dynamic_update_slice` take one 0-d start per axis,
  clamped as XLA does into `[0, dim - size]` (no negative wrap), so the block
  always lies inside the operand: `clamp_start`.

AD: `gather` and `scatter_add` are each other's transpose, and so are
`dynamic_slice` and `dynamic_update_slice` (with the same normalization both
ways, so the adjoints are exact). `scatter`'s transpose sends each cotangent
entry to the update that landed there: with duplicate indices only the last
duplicate receives it (a mask computed from the indices, as JAX does), so it is
exact with duplicates too. Linearity: indices are never active; the data
operands (operand, updates) are linear jointly, a fixed one only when it is a
zero constant.

Batching: a batched operand (or updates) shifts the indexed axis by one; with
batched indices or starts the batch is folded into the indexed axis (the
operand flattened, the indices offset by `example * extent`, built with
`prim.iota` and integer adds and multiplies), so one ordinary gather or
scatter does every example.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, TypeAlias

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, IntegerType, TensorType, i1, i64
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, var_operand_def
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from tidu_mlir.dialects.prim.base import (
    AddOp,
    NotLinear,
    PrimOp,
    Values,
    batch_all,
    broadcast_to_batch,
    emit_value,
)
from tidu_mlir.dialects.prim.core import (
    BroadcastInDimOp,
    ConstantOp,
    ConvertOp,
    MulOp,
    ReshapeOp,
    SelectOp,
    emit_transpose,
    is_zero_constant,
    or_zeros,
    zeros_like,
)
from tidu_mlir.dialects.prim.elementwise import CompareOp, MaximumOp, MinimumOp
from tidu_mlir.dialects.prim.syntax import (
    RoleSpec,
    array_values,
    i64_array,
    parse_int64_assignment,
    parse_keyword_list,
    parse_operands_until,
    parse_types_after_colon,
    print_attr_dict,
    print_int_list,
    resolve,
    role_attributes,
)
from tidu_mlir.dialects.prim.types import (
    Shape,
    Value,
    check_same_element_type,
    check_same_type,
    check_shape,
    check_tensor,
    fmt_shape,
    shape_of,
    tensor_dtype,
    tensor_type_of,
)
from tidu_mlir.fast_syntax import build_operation
from tidu_mlir.interfaces import BatchContext, RuleContext, active_mask_of

AnyContext: TypeAlias = RuleContext | BatchContext

# --------------------------------------------------------------------------
# Index semantics (shared by the references, the rules and the lowering's docs)
# --------------------------------------------------------------------------


def normalize_indices(indices: Any, extent: int) -> np.ndarray:
    """The positions `indices` select along an axis of `extent`: a negative index
    counts from the end once (`i + extent`), then the result is clamped into
    `[0, extent - 1]` (int64)."""
    idx = np.asarray(indices).astype(np.int64)
    idx = np.where(idx < 0, idx + extent, idx)
    return np.clip(idx, 0, max(extent - 1, 0))


def clamp_start(start: Any, dim: int, size: int) -> int:
    """A block start clamped into `[0, dim - size]` (XLA's dynamic_slice)."""
    return int(min(max(int(np.asarray(start)), 0), dim - size))


def indexed_shape(operand: Shape, indices: Shape, axis: int) -> Shape:
    """`operand[:axis] + indices + operand[axis + 1:]`: the shape of a gather's
    result and of a scatter's updates."""
    if not 0 <= axis < len(operand):
        raise VerifyException(f"axis {axis} is out of range for rank {len(operand)}")
    return (*operand[:axis], *indices, *operand[axis + 1 :])


def _axis_slices(axis: int) -> tuple[slice, ...]:
    return (slice(None),) * axis


# --------------------------------------------------------------------------
# Syntax helpers: `%a, %b, axis = 1 : T1, T2 -> U`
# --------------------------------------------------------------------------


def _print_types(printer: Printer, op: Operation) -> None:
    """Print ` : T1, T2, ... -> U` (every operand type, then the result type)."""
    printer.print_string(" : ")
    printer.print_list([v.type for v in op.operands], printer.print_attribute)
    printer.print_string(" -> ")
    printer.print_attribute(op.results[0].type)


def _parse_starts(parser: Parser) -> list[UnresolvedOperand]:
    """Parse `[%s0, %s1, ...]`."""
    return parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE, parser.parse_unresolved_operand
    )


def _print_starts(printer: Printer, starts: Sequence[SSAValue]) -> None:
    printer.print_string(" [")
    printer.print_list(starts, printer.print_operand)
    printer.print_string("]")


# --------------------------------------------------------------------------
# Rule helpers: integer index arithmetic as prim ops
# --------------------------------------------------------------------------


def _full(ctx: AnyContext, value: int, t: TensorType) -> SSAValue:
    """A tensor of type `t` filled with `value` (a scalar constant, broadcast)."""
    scalar = TensorType(t.get_element_type(), [])
    constant = emit_value(ctx, ConstantOp.from_value(np.asarray(value), scalar))
    if not t.get_shape():
        return constant
    return emit_value(ctx, BroadcastInDimOp(constant, [], t))


def _as_i64(ctx: AnyContext, value: SSAValue) -> SSAValue:
    """An integer tensor as i64 (itself when it is already)."""
    t = tensor_type_of(value)
    if t.get_element_type() == i64:
        return value
    return emit_value(ctx, ConvertOp(value, i64))


def _clamp(ctx: AnyContext, value: SSAValue, low: int, high: int) -> SSAValue:
    """`min(max(value, low), high)` elementwise."""
    t = tensor_type_of(value)
    raised = emit_value(ctx, MaximumOp(value, _full(ctx, low, t)))
    return emit_value(ctx, MinimumOp(raised, _full(ctx, high, t)))


def emit_normalized(ctx: AnyContext, indices: SSAValue, extent: int) -> SSAValue:
    """`normalize_indices` as prim ops (same integer type as `indices`)."""
    t = tensor_type_of(indices)
    negative = emit_value(ctx, CompareOp("lt", indices, _full(ctx, 0, t)))
    shifted = emit_value(ctx, AddOp(indices, _full(ctx, extent, t)))
    wrapped = emit_value(ctx, SelectOp(negative, shifted, indices))
    return _clamp(ctx, wrapped, 0, max(extent - 1, 0))


def _iota(ctx: AnyContext, shape: Sequence[int], dimension: int) -> SSAValue:
    return emit_value(ctx, IotaOp(TensorType(i64, list(shape)), dimension))


def _scaled(ctx: AnyContext, value: SSAValue, factor: int) -> SSAValue:
    if factor == 1:
        return value
    return emit_value(ctx, MulOp(value, _full(ctx, factor, tensor_type_of(value))))


def _batch_offset_indices(ctx: AnyContext, indices: SSAValue, extent: int) -> SSAValue:
    """Batched indices (leading batch axis) normalized along an axis of `extent`
    and offset by `example * extent` (i64): positions along the batch axis folded
    into the indexed axis (`example * extent + position`)."""
    normalized = _as_i64(ctx, emit_normalized(ctx, indices, extent))
    examples = _iota(ctx, shape_of(normalized), 0)
    return emit_value(ctx, AddOp(normalized, _scaled(ctx, examples, extent)))


def _fold_batch_into_axis(ctx: AnyContext, value: SSAValue, axis: int) -> SSAValue:
    """`[B, *pre, n, *post]` (pre of length `axis`) -> `[*pre, B * n, *post]`."""
    shape = shape_of(value)
    rank = len(shape)
    moved = emit_transpose(ctx, value, [*range(1, axis + 1), 0, *range(axis + 1, rank)])
    folded = [*shape[1 : axis + 1], shape[0] * shape[axis + 1], *shape[axis + 2 :]]
    return emit_value(ctx, ReshapeOp(moved, folded))


def _unfold_batch_from_axis(ctx: BatchContext, value: SSAValue, axis: int, extent: int) -> SSAValue:
    """`[*pre, B * n, *post]` -> `[B, *pre, n, *post]` (undoes `_fold_batch_into_axis`)."""
    shape = shape_of(value)
    split = [*shape[:axis], ctx.size, extent, *shape[axis + 1 :]]
    reshaped = emit_value(ctx, ReshapeOp(value, split))
    return _move_to_front(ctx, reshaped, axis)


def _move_to_front(ctx: AnyContext, value: SSAValue, axis: int) -> SSAValue:
    """`value` with axis `axis` moved to position 0."""
    rank = len(shape_of(value))
    return emit_transpose(ctx, value, [axis, *range(axis), *range(axis + 1, rank)])


def _move_from_front(ctx: AnyContext, value: SSAValue, axis: int) -> SSAValue:
    """`value` with axis 0 moved to position `axis`."""
    rank = len(shape_of(value))
    return emit_transpose(ctx, value, [*range(1, axis + 1), 0, *range(axis + 1, rank)])


def _block_indices(
    ctx: BatchContext,
    starts: Sequence[SSAValue],
    batched: Sequence[bool],
    dims: Sequence[int],
    sizes: Sequence[int],
) -> SSAValue:
    """For each example and each position of a block of `sizes` at the (clamped)
    `starts` (0-d, or `[B]` when batched), the position of that element in the
    batched operand `[B, *dims]` flattened to one axis: i64, shape `[B, *sizes]`."""
    shape = [ctx.size, *sizes]
    t = TensorType(i64, shape)
    total = _scaled(ctx, _iota(ctx, shape, 0), math.prod(dims))
    for axis, (start, is_batched) in enumerate(zip(starts, batched, strict=True)):
        clamped = _clamp(ctx, _as_i64(ctx, start), 0, dims[axis] - sizes[axis])
        offset = emit_value(ctx, BroadcastInDimOp(clamped, [0] if is_batched else [], t))
        position = emit_value(ctx, AddOp(_iota(ctx, shape, axis + 1), offset))
        stride = math.prod(dims[axis + 1 :])
        total = emit_value(ctx, AddOp(total, _scaled(ctx, position, stride)))
    return total


def _linear_data_operands(op: Operation, active_mask: Sequence[bool], data: Sequence[int]) -> bool:
    """Linear jointly in the operands at positions `data` (some active, the fixed
    ones zero constants), and no other operand (index) active."""
    if any(active for i, active in enumerate(active_mask) if i not in data):
        return False
    return any(active_mask[i] for i in data) and all(
        active_mask[i] or is_zero_constant(op.operands[i]) for i in data
    )


# --------------------------------------------------------------------------
# iota
# --------------------------------------------------------------------------


@irdl_op_definition
class IotaOp(NotLinear):
    """Each element's index along `dimension`:
    `prim.iota dimension = 1 : tensor<2x3xi64>` is `[[0, 1, 2], [0, 1, 2]]`
    (jax.lax.broadcasted_iota). Element type i32, i64, f32 or f64. No operands,
    so no tangent."""

    name = "prim.iota"

    result = result_def()
    dimension = prop_def(IntegerAttr[IntegerType])

    def __init__(self, result_type: TensorType, dimension: int, *, role: RoleSpec = None):
        super().__init__(
            result_types=[result_type],
            properties={"dimension": IntegerAttr(dimension, i64)},
            attributes=role_attributes(role),
        )

    @property
    def dimension_value(self) -> int:
        return int(self.dimension.value.data)

    def verify_types(self) -> None:
        check_tensor("result", self.result.type, "real or integer")
        rank = len(shape_of(self.result))
        if not 0 <= self.dimension_value < rank:
            raise VerifyException(
                f"iota dimension {self.dimension_value} is out of range for rank {rank}"
            )

    @staticmethod
    def reference(*, shape: Sequence[int], dimension: int, dtype: np.dtype) -> np.ndarray:
        expanded = [1] * len(shape)
        expanded[dimension] = shape[dimension]
        positions = np.arange(shape[dimension], dtype=dtype).reshape(expanded)
        return np.broadcast_to(positions, tuple(shape)).copy()

    def reference_params(self) -> dict[str, Any]:
        return {
            "shape": shape_of(self.result),
            "dimension": self.dimension_value,
            "dtype": tensor_dtype(self.result.type),
        }

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        return [None]

    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        """Never called by `batch` (no operands, so none is batched): the iota
        along `dimension + 1` of the batched shape (the same for every example)."""
        t = tensor_type_of(self.result)
        batched_type = TensorType(t.get_element_type(), [ctx.size, *t.get_shape()])
        return [emit_value(ctx, IotaOp(batched_type, self.dimension_value + 1))]

    def print(self, printer: Printer) -> None:
        printer.print_string(f" dimension = {self.dimension_value}")
        print_attr_dict(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> IotaOp:
        dimension = parse_int64_assignment(parser, "dimension")
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        result_type = parser.parse_type()
        return build_operation(cls, [], [result_type], {"dimension": dimension}, attributes)


# --------------------------------------------------------------------------
# gather, scatter_add, scatter
# --------------------------------------------------------------------------


class AxisIndexedOp(PrimOp):
    """An op indexing one `axis` of its operand with an integer `indices` tensor
    (gather, scatter_add, scatter), printed
    `%x, %i, ..., axis = 1 attr-dict : T1, T2, ... -> U`."""

    axis = prop_def(IntegerAttr[IntegerType])

    @property
    def axis_value(self) -> int:
        return int(self.axis.value.data)

    @property
    def extent(self) -> int:
        """The extent of the indexed axis."""
        return shape_of(self.operands[0])[self.axis_value]

    def reference_params(self) -> dict[str, Any]:
        return {"axis": self.axis_value}

    def verify_indexing(self) -> Shape:
        """Check the operand and indices; the shape `indexed_shape` gives (a
        gather's result, a scatter's updates)."""
        operand, indices = self.operands[0], self.operands[1]
        check_tensor("operand", operand.type, "any")
        check_tensor("indices", indices.type, "integer")
        operand_shape, index_shape = shape_of(operand), shape_of(indices)
        expected = indexed_shape(operand_shape, index_shape, self.axis_value)
        if operand_shape[self.axis_value] == 0 and math.prod(index_shape) > 0:
            raise VerifyException(
                f"axis {self.axis_value} of the operand has extent 0: no position for "
                f"{math.prod(index_shape)} indices"
            )
        return expected

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        printer.print_string(f", axis = {self.axis_value}")
        print_attr_dict(printer, self)
        _print_types(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> AxisIndexedOp:
        operands = parse_operands_until(parser, "axis")
        axis = parse_int64_assignment(parser, "axis", keyword_read=True)
        attributes = parser.parse_optional_attr_dict()
        inputs, output = parse_types_after_colon(parser)
        return build_operation(
            cls, resolve(parser, operands, inputs), [output], {"axis": axis}, attributes
        )


@irdl_op_definition
class GatherOp(AxisIndexedOp):
    """`take` along `axis`:
    `prim.gather %x, %i, axis = 1 : tensor<3x4xf64>, tensor<5xi64> -> tensor<3x5xf64>`;
    `result[a, j, b] = x[a, k(i[j]), b]` for `a` over `x.shape[:axis]`, `j` over
    `i.shape` (any rank), `b` over `x.shape[axis + 1:]`. Index semantics: a
    negative index counts from the end once, then an out-of-range one is CLAMPED
    into `[0, n - 1]` (JAX's behaviour, not numpy's IndexError; `normalize_indices`).
    Operand of any element type; indices i32 or i64 (never active).
    Linear in the operand: d gather(x) = gather(dx); transpose: scatter_add of
    ct into zeros at the same indices."""

    name = "prim.gather"

    operand = operand_def()
    indices = operand_def()
    result = result_def()

    def __init__(self, operand: Value, indices: Value, axis: int, *, role: RoleSpec = None):
        shape = indexed_shape(shape_of(operand), shape_of(indices), axis)
        element = tensor_type_of(operand).get_element_type()
        super().__init__(
            operands=[operand, indices],
            result_types=[TensorType(element, shape)],
            properties={"axis": IntegerAttr(axis, i64)},
            attributes=role_attributes(role),
        )

    def verify_types(self) -> None:
        expected = self.verify_indexing()
        check_tensor("result", self.result.type, "any")
        check_same_element_type("result", self.result.type, self.operand.type)
        check_shape("result", shape_of(self.result), expected)

    @staticmethod
    def reference(x: np.ndarray, indices: np.ndarray, *, axis: int) -> np.ndarray:
        x = np.asarray(x)
        return np.take(x, normalize_indices(indices, x.shape[axis]), axis=axis)

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        tangent = tangents[0]
        assert tangent is not None
        return [emit_value(ctx, GatherOp(tangent, self.indices, self.axis_value))]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        (ct,) = cotangents
        assert ct is not None
        zeros = zeros_like(ctx, self.operand)
        return [emit_value(ctx, ScatterAddOp(zeros, self.indices, ct, self.axis_value)), None]

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return active_mask[0] and not active_mask[1]

    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        """Batched operand only: gather along `axis + 1`. Batched indices only:
        the gather's result has the batch axis at `axis`, moved to the front.
        Both: the batch folded into the indexed axis (`_fold_batch_into_axis`),
        the indices offset per example."""
        operand, indices = operands
        operand_batched, indices_batched = batched
        axis = self.axis_value
        if not indices_batched:
            return [emit_value(ctx, GatherOp(operand, indices, axis + 1))]
        if not operand_batched:
            gathered = emit_value(ctx, GatherOp(operand, indices, axis))
            return [_move_to_front(ctx, gathered, axis)]
        folded = _fold_batch_into_axis(ctx, operand, axis)
        offsets = _batch_offset_indices(ctx, indices, self.extent)
        gathered = emit_value(ctx, GatherOp(folded, offsets, axis))
        return [_move_to_front(ctx, gathered, axis)]


class ScatterBase(AxisIndexedOp):
    """`operand, indices, updates`, with `updates` shaped
    `operand.shape[:axis] + indices.shape + operand.shape[axis + 1:]`; the result
    has the operand's type. Linear jointly in (operand, updates)."""

    operand = operand_def()
    indices = operand_def()
    updates = operand_def()
    result = result_def()

    def __init__(
        self, operand: Value, indices: Value, updates: Value, axis: int, *, role: RoleSpec = None
    ):
        super().__init__(
            operands=[operand, indices, updates],
            result_types=[SSAValue.get(operand).type],
            properties={"axis": IntegerAttr(axis, i64)},
            attributes=role_attributes(role),
        )

    def verify_types(self) -> None:
        expected = self.verify_indexing()
        check_tensor("updates", self.updates.type, "any")
        check_same_element_type("updates", self.updates.type, self.operand.type)
        check_shape("updates", shape_of(self.updates), expected)
        check_same_type("result", self.result.type, self.operand.type)

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return _linear_data_operands(self, active_mask, (0, 2))

    def emit_on_tangents(self, ctx: RuleContext, tangents: Values) -> SSAValue:
        """This op's class on the tangents of the operand and the updates (zeros
        for a missing one) at the same indices: the JVP."""
        d_operand, _, d_updates = tangents
        d_operand = or_zeros(ctx, d_operand, self.operand)
        d_updates = or_zeros(ctx, d_updates, self.updates)
        return emit_value(ctx, type(self)(d_operand, self.indices, d_updates, self.axis_value))

    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        """Unbatched indices: operand and updates batched (broadcast where they are
        not), scattered along `axis + 1`. Batched indices: the batch folded into
        the indexed axis of the operand, moved next to the indices' axes in the
        updates, the indices offset per example; one scatter, unfolded after.
        Each example's updates keep their order, so the last duplicate still wins."""
        operand, indices, updates = operands
        operand, updates = batch_all(ctx, [operand, updates], [batched[0], batched[2]])
        axis = self.axis_value
        cls = type(self)
        if not batched[1]:
            return [emit_value(ctx, cls(operand, indices, updates, axis + 1))]
        folded = _fold_batch_into_axis(ctx, operand, axis)
        offsets = _batch_offset_indices(ctx, indices, self.extent)
        moved = _move_from_front(ctx, updates, axis)
        scattered = emit_value(ctx, cls(folded, offsets, moved, axis))
        return [_unfold_batch_from_axis(ctx, scattered, axis, self.extent)]


@irdl_op_definition
class ScatterAddOp(ScatterBase):
    """The operand with the updates added at the indices along `axis`, duplicates
    accumulating (`np.add.at`):
    `prim.scatter_add %x, %i, %u, axis = 0 : tensor<4xf64>, tensor<3xi64>, tensor<3xf64>
    -> tensor<4xf64>`. Indices as `prim.gather` (negative wrap once, then clamped).
    d = scatter_add(dx, i, du) (zeros for a missing side); transpose:
    (ct, gather(ct, i))."""

    name = "prim.scatter_add"

    @staticmethod
    def reference(
        x: np.ndarray, indices: np.ndarray, updates: np.ndarray, *, axis: int
    ) -> np.ndarray:
        out = np.array(x, copy=True)
        positions = normalize_indices(indices, out.shape[axis])
        where: Any = (*_axis_slices(axis), positions)
        np.add.at(out, where, np.asarray(updates, dtype=out.dtype))
        return out

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        d_operand, _, d_updates = tangents
        if d_updates is None:
            return [d_operand]
        return [self.emit_on_tangents(ctx, tangents)]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        (ct,) = cotangents
        assert ct is not None
        operand_active, _, updates_active = active_mask_of(self)
        gathered = (
            emit_value(ctx, GatherOp(ct, self.indices, self.axis_value)) if updates_active else None
        )
        return [ct if operand_active else None, None, gathered]


@irdl_op_definition
class ScatterOp(ScatterBase):
    """The operand with the positions at the indices along `axis` overwritten by
    the updates: `prim.scatter %x, %i, %u, axis = 0 : ... -> tensor<4xf64>`.
    Indices as `prim.gather` (negative wrap once, then clamped). With duplicate
    positions the last update (row-major order of the indices) wins, in the
    reference and in the lowering, which writes in index order.
    d = scatter(dx, i, du) (zeros for a missing side); transpose:
    ct_operand = scatter(ct, i, 0) (zero where overwritten), ct_updates =
    gather(ct, i) masked to the updates that landed (the last of each set of
    duplicates), so the transpose is exact with duplicates too."""

    name = "prim.scatter"

    @staticmethod
    def reference(
        x: np.ndarray, indices: np.ndarray, updates: np.ndarray, *, axis: int
    ) -> np.ndarray:
        out = np.array(x, copy=True)
        positions = normalize_indices(indices, out.shape[axis]).reshape(-1)
        count = positions.size
        values = np.asarray(updates, dtype=out.dtype)
        values = values.reshape(*out.shape[:axis], count, *out.shape[axis + 1 :])
        # the last occurrence of each position: no duplicates left, so the
        # assignment is the sequential one whatever order numpy writes in
        _, first_from_end = np.unique(positions[::-1], return_index=True)
        last = count - 1 - first_from_end
        out[(*_axis_slices(axis), positions[last])] = values[(*_axis_slices(axis), last)]
        return out

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        return [self.emit_on_tangents(ctx, tangents)]

    def landed_mask(self, ctx: RuleContext) -> SSAValue | None:
        """i1 of the updates' shape: whether each update is the one that lands
        (no later duplicate overwrites it); None when the indices are a constant
        with no duplicates. Scatters each update's position in `indices` (an
        id), gathers the ids back and compares."""
        indices = self.indices
        extent = self.extent
        index_shape = shape_of(indices)
        owner = indices.owner
        if isinstance(owner, ConstantOp):
            positions = normalize_indices(owner.to_array(), extent).reshape(-1)
            if np.unique(positions).size == positions.size:
                return None
        count = math.prod(index_shape)
        flat = emit_value(ctx, ReshapeOp(indices, [count]))
        ids = _iota(ctx, [count], 0)
        unset = _full(ctx, -1, TensorType(i64, [extent]))
        winners = emit_value(ctx, ScatterOp(unset, flat, ids, 0))
        back = emit_value(ctx, GatherOp(winners, flat, 0))
        landed = emit_value(ctx, CompareOp("eq", back, ids))
        landed = emit_value(ctx, ReshapeOp(landed, index_shape))
        axis = self.axis_value
        dims = range(axis, axis + len(index_shape))
        updates_type = TensorType(i1, shape_of(self.updates))
        return emit_value(ctx, BroadcastInDimOp(landed, dims, updates_type))

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        (ct,) = cotangents
        assert ct is not None
        operand_active, _, updates_active = active_mask_of(self)
        axis = self.axis_value
        ct_operand = None
        if operand_active:
            cleared = ScatterOp(ct, self.indices, zeros_like(ctx, self.updates), axis)
            ct_operand = emit_value(ctx, cleared)
        ct_updates = None
        if updates_active:
            ct_updates = emit_value(ctx, GatherOp(ct, self.indices, axis))
            mask = self.landed_mask(ctx)
            if mask is not None:
                ct_updates = emit_value(
                    ctx, SelectOp(mask, ct_updates, zeros_like(ctx, ct_updates))
                )
        return [ct_operand, None, ct_updates]


# --------------------------------------------------------------------------
# dynamic_slice, dynamic_update_slice
# --------------------------------------------------------------------------


def _verify_starts(starts: Sequence[SSAValue], rank: int, op_name: str) -> None:
    """One 0-d integer start per axis."""
    if len(starts) != rank:
        raise VerifyException(
            f"{op_name} has {len(starts)} starts, expected {rank} (the operand's rank)"
        )
    for index, start in enumerate(starts):
        check_tensor(f"start #{index}", start.type, "integer")
        if shape_of(start):
            raise VerifyException(f"start #{index} must be a 0-d tensor, got {start.type}")


@irdl_op_definition
class DynamicSliceOp(PrimOp):
    """A block of static `sizes` at run-time starts (one 0-d i32/i64 tensor per
    axis): `prim.dynamic_slice %x [%s0, %s1], sizes = [2, 2] : tensor<4x5xf64>,
    tensor<i64>, tensor<i64> -> tensor<2x2xf64>`. Each start is clamped into
    `[0, dim - size]` (XLA), so the block lies inside the operand.
    d = dynamic_slice(dx); transpose: dynamic_update_slice of ct into zeros."""

    name = "prim.dynamic_slice"

    operand = operand_def()
    starts = var_operand_def()
    result = result_def()
    sizes = prop_def(DenseArrayBase.constr(i64))

    def __init__(
        self,
        operand: Value,
        starts: Sequence[Value],
        sizes: Sequence[int],
        *,
        role: RoleSpec = None,
    ):
        element = tensor_type_of(operand).get_element_type()
        super().__init__(
            operands=[operand, list(starts)],
            result_types=[TensorType(element, list(sizes))],
            properties={"sizes": i64_array(sizes)},
            attributes=role_attributes(role),
        )

    def size_values(self) -> tuple[int, ...]:
        return array_values(self.sizes)

    def verify_types(self) -> None:
        check_tensor("operand", self.operand.type, "any")
        dims = shape_of(self.operand)
        _verify_starts(self.starts, len(dims), "dynamic_slice")
        sizes = self.size_values()
        if len(sizes) != len(dims):
            raise VerifyException(
                f"sizes {fmt_shape(sizes)} has {len(sizes)} entries, expected {len(dims)} "
                "(the operand's rank)"
            )
        for axis, (size, dim) in enumerate(zip(sizes, dims, strict=True)):
            if not 0 <= size <= dim:
                raise VerifyException(
                    f"size {size} of axis {axis} is outside [0, {dim}] (the operand's extent)"
                )
        check_tensor("result", self.result.type, "any")
        check_same_element_type("result", self.result.type, self.operand.type)
        check_shape("result", shape_of(self.result), sizes)

    @staticmethod
    def reference(x: np.ndarray, *starts: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
        x = np.asarray(x)
        index = tuple(
            slice(begin, begin + size)
            for begin, size in (
                (clamp_start(s, dim, size), size)
                for s, dim, size in zip(starts, x.shape, sizes, strict=True)
            )
        )
        return x[index].copy()

    def reference_params(self) -> dict[str, Any]:
        return {"sizes": self.size_values()}

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        tangent = tangents[0]
        assert tangent is not None
        return [emit_value(ctx, DynamicSliceOp(tangent, self.starts, self.size_values()))]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        (ct,) = cotangents
        assert ct is not None
        zeros = zeros_like(ctx, self.operand)
        placed = emit_value(ctx, DynamicUpdateSliceOp(zeros, ct, self.starts))
        return [placed, *[None] * len(self.starts)]

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return active_mask[0] and not any(active_mask[1:])

    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        """Unbatched starts: the whole batch axis (start 0, size `ctx.size`).
        Some batched start: a gather from the batched operand flattened to one
        axis, at the flat positions of each example's block (`_block_indices`)."""
        operand, *starts = operands
        sizes = self.size_values()
        if not any(batched[1:]):
            zero = _full(ctx, 0, TensorType(i64, []))
            return [emit_value(ctx, DynamicSliceOp(operand, [zero, *starts], [ctx.size, *sizes]))]
        if not batched[0]:
            operand = broadcast_to_batch(ctx, operand)
        dims = shape_of(self.operand)
        flat = emit_value(ctx, ReshapeOp(operand, [ctx.size * math.prod(dims)]))
        positions = _block_indices(ctx, starts, batched[1:], dims, sizes)
        return [emit_value(ctx, GatherOp(flat, positions, 0))]

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.operand)
        _print_starts(printer, self.starts)
        printer.print_string(", sizes = ")
        print_int_list(printer, self.size_values())
        print_attr_dict(printer, self)
        _print_types(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> DynamicSliceOp:
        operand = parser.parse_unresolved_operand()
        starts = _parse_starts(parser)
        parser.parse_punctuation(",")
        sizes = parse_keyword_list(parser, "sizes")
        attributes = parser.parse_optional_attr_dict()
        inputs, output = parse_types_after_colon(parser)
        return build_operation(
            cls,
            resolve(parser, [operand, *starts], inputs),
            [output],
            {"sizes": i64_array(sizes)},
            attributes,
        )


@irdl_op_definition
class DynamicUpdateSliceOp(PrimOp):
    """The operand with the block at run-time starts (one 0-d i32/i64 tensor per
    axis) replaced by `update` (same rank, each extent at most the operand's):
    `prim.dynamic_update_slice %x, %u [%s0, %s1] : tensor<4x5xf64>, tensor<2x2xf64>,
    tensor<i64>, tensor<i64> -> tensor<4x5xf64>`. Starts clamped into
    `[0, dim - size]` as in `prim.dynamic_slice`. Linear jointly in (operand,
    update); d = dynamic_update_slice(dx, du) (zeros for a missing side);
    transpose: (dynamic_update_slice(ct, 0), dynamic_slice(ct))."""

    name = "prim.dynamic_update_slice"

    operand = operand_def()
    update = operand_def()
    starts = var_operand_def()
    result = result_def()

    def __init__(
        self, operand: Value, update: Value, starts: Sequence[Value], *, role: RoleSpec = None
    ):
        super().__init__(
            operands=[operand, update, list(starts)],
            result_types=[SSAValue.get(operand).type],
            attributes=role_attributes(role),
        )

    def verify_types(self) -> None:
        check_tensor("operand", self.operand.type, "any")
        check_tensor("update", self.update.type, "any")
        check_same_element_type("update", self.update.type, self.operand.type)
        dims, sizes = shape_of(self.operand), shape_of(self.update)
        if len(sizes) != len(dims) or any(s > d for s, d in zip(sizes, dims, strict=True)):
            raise VerifyException(
                f"update shape {fmt_shape(sizes)} does not fit in operand shape {fmt_shape(dims)} "
                "(same rank, each extent at most the operand's)"
            )
        _verify_starts(self.starts, len(dims), "dynamic_update_slice")
        check_same_type("result", self.result.type, self.operand.type)

    @staticmethod
    def reference(x: np.ndarray, update: np.ndarray, *starts: np.ndarray) -> np.ndarray:
        out = np.array(x, copy=True)
        update = np.asarray(update)
        index = tuple(
            slice(begin, begin + size)
            for begin, size in (
                (clamp_start(s, dim, size), size)
                for s, dim, size in zip(starts, out.shape, update.shape, strict=True)
            )
        )
        out[index] = update
        return out

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        d_operand = or_zeros(ctx, tangents[0], self.operand)
        d_update = or_zeros(ctx, tangents[1], self.update)
        return [emit_value(ctx, DynamicUpdateSliceOp(d_operand, d_update, self.starts))]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        (ct,) = cotangents
        assert ct is not None
        operand_active, update_active = active_mask_of(self)[:2]
        ct_operand = ct_update = None
        if operand_active:
            cleared = DynamicUpdateSliceOp(ct, zeros_like(ctx, self.update), self.starts)
            ct_operand = emit_value(ctx, cleared)
        if update_active:
            sizes = shape_of(self.update)
            ct_update = emit_value(ctx, DynamicSliceOp(ct, self.starts, sizes))
        return [ct_operand, ct_update, *[None] * len(self.starts)]

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return _linear_data_operands(self, active_mask, (0, 1))

    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        """Unbatched starts: operand and update batched (broadcast where they are
        not), the whole batch axis replaced (start 0). Some batched start: a
        scatter into the batched operand flattened to one axis, at the flat
        positions of each example's block (`_block_indices`)."""
        operand, update, *starts = operands
        operand, update = batch_all(ctx, [operand, update], batched[:2])
        if not any(batched[2:]):
            zero = _full(ctx, 0, TensorType(i64, []))
            return [emit_value(ctx, DynamicUpdateSliceOp(operand, update, [zero, *starts]))]
        dims = shape_of(self.operand)
        flat = emit_value(ctx, ReshapeOp(operand, [ctx.size * math.prod(dims)]))
        positions = _block_indices(ctx, starts, batched[2:], dims, shape_of(self.update))
        scattered = emit_value(ctx, ScatterOp(flat, positions, update, 0))
        return [emit_value(ctx, ReshapeOp(scattered, [ctx.size, *dims]))]

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list([self.operand, self.update], printer.print_operand)
        _print_starts(printer, self.starts)
        print_attr_dict(printer, self)
        _print_types(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> DynamicUpdateSliceOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        update = parser.parse_unresolved_operand()
        starts = _parse_starts(parser)
        attributes = parser.parse_optional_attr_dict()
        inputs, output = parse_types_after_colon(parser)
        return build_operation(
            cls, resolve(parser, [operand, update, *starts], inputs), [output], {}, attributes
        )


OPS: tuple[type[PrimOp], ...] = (
    IotaOp,
    GatherOp,
    ScatterAddOp,
    ScatterOp,
    DynamicSliceOp,
    DynamicUpdateSliceOp,
)
"""The op classes of this layer, in the dialect's order."""

__all__ = [
    "AxisIndexedOp",
    "DynamicSliceOp",
    "DynamicUpdateSliceOp",
    "GatherOp",
    "IotaOp",
    "ScatterAddOp",
    "ScatterBase",
    "ScatterOp",
    "clamp_start",
    "emit_normalized",
    "indexed_shape",
    "normalize_indices",
]
