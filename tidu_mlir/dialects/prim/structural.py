"""The structural `prim` ops: slice, pad, concatenate and reduce_max.

slice and pad are each other's transpose; concatenate transposes to slices.
`reduce_max` splits its tangent evenly among the maximal entries (ties share
it, as JAX does); its JVP is built from core and elementwise ops.

Batching shifts each op's axes past the new leading batch axis: slice takes
the whole batch axis, pad leaves it unpadded (`ArrayPropsUnaryOp`'s rule),
concatenate joins along `dimension + 1`, reduce_max reduces `axes + 1`
(`ReduceOp`'s rule).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, IntegerType, TensorType, i64
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, var_operand_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from tidu_mlir.diagnostics import parse_int64
from tidu_mlir.dialects.prim.base import (
    AddOp,
    ArrayPropsUnaryOp,
    NotLinear,
    PrimOp,
    ReduceOp,
    UnaryLinear,
    Values,
    batch_all,
    emit_value,
)
from tidu_mlir.dialects.prim.core import (
    BroadcastInDimOp,
    ReduceSumOp,
    SelectOp,
    active_or_zero,
    emit_reshape,
    full_like,
    or_zeros,
    scale,
    zeros_like,
)
from tidu_mlir.dialects.prim.elementwise import CompareOp, DivOp
from tidu_mlir.dialects.prim.shapes import concatenate_shape, kept_axes, pad_shape, slice_shape
from tidu_mlir.dialects.prim.syntax import (
    RoleSpec,
    array_values,
    i64_array,
    parse_int64_assignment,
    parse_operands_until,
    parse_types_arrow,
    print_attr_dict,
    print_types_arrow,
    resolve,
    role_attributes,
)
from tidu_mlir.dialects.prim.types import (
    Value,
    check_same_element_type,
    check_shape,
    check_tensor,
    shape_of,
    tensor_type_of,
)
from tidu_mlir.fast_syntax import FastParser, build_operation
from tidu_mlir.interfaces import BatchContext, OneHot, RuleContext, active_mask_of

# --------------------------------------------------------------------------
# Slice and pad
# --------------------------------------------------------------------------


@irdl_op_definition
class SliceOp(UnaryLinear, PrimOp):
    """Strided slice: `prim.slice %x [1:5:2, 0:3:1] : tensor<8x3xf64> -> tensor<2x3xf64>`.
    d slice(x) = slice(dx); transpose: pad ct with zeros back into place
    (low = start, interior = stride - 1)."""

    name = "prim.slice"

    operand = operand_def()
    result = result_def()
    start = prop_def(DenseArrayBase.constr(i64))
    limit = prop_def(DenseArrayBase.constr(i64))
    stride = prop_def(DenseArrayBase.constr(i64))

    def __init__(
        self,
        operand: Value,
        start: Sequence[int],
        limit: Sequence[int],
        stride: Sequence[int] | None = None,
        *,
        role: RoleSpec = None,
    ):
        if stride is None:
            stride = [1] * len(start)
        operand_type = tensor_type_of(operand)
        shape = slice_shape(tuple(operand_type.get_shape()), start, limit, stride)
        super().__init__(
            operands=[operand],
            result_types=[TensorType(operand_type.get_element_type(), shape)],
            properties={
                "start": i64_array(start),
                "limit": i64_array(limit),
                "stride": i64_array(stride),
            },
            attributes=role_attributes(role),
        )

    def bounds(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """(start, limit, stride)."""
        return array_values(self.start), array_values(self.limit), array_values(self.stride)

    def verify_types(self) -> None:
        check_tensor("operand", self.operand.type, "any")
        check_tensor("result", self.result.type, "any")
        check_same_element_type("result", self.result.type, self.operand.type)
        check_shape(
            "result", shape_of(self.result), slice_shape(shape_of(self.operand), *self.bounds())
        )

    @staticmethod
    def reference(
        x: np.ndarray, *, start: Sequence[int], limit: Sequence[int], stride: Sequence[int]
    ) -> np.ndarray:
        index = tuple(slice(a, b, c) for a, b, c in zip(start, limit, stride, strict=True))
        return np.asarray(x)[index]

    def reference_params(self) -> dict[str, Any]:
        start, limit, stride = self.bounds()
        return {"start": start, "limit": limit, "stride": stride}

    def apply_to(self, tangent: SSAValue) -> Operation:
        return SliceOp(tangent, *self.bounds())

    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        """The whole batch axis: start 0, limit `size`, stride 1."""
        (operand,) = operands
        start, limit, stride = self.bounds()
        batched_op = SliceOp(operand, [0, *start], [ctx.size, *limit], [1, *stride])
        return [emit_value(ctx, batched_op)]

    def emit_adjoint(self, ctx: RuleContext, cotangent: SSAValue) -> SSAValue:
        start, _, stride = self.bounds()
        operand_shape = shape_of(self.operand)
        sizes = shape_of(cotangent)
        interior = [step - 1 for step in stride]
        high = [
            dim - low - size - max(size - 1, 0) * inner
            for dim, low, size, inner in zip(operand_shape, start, sizes, interior, strict=True)
        ]
        return emit_value(ctx, PadOp(cotangent, start, high, interior))

    def print(self, printer: Printer) -> None:
        start, limit, stride = self.bounds()
        ranges = ", ".join(f"{a}:{b}:{c}" for a, b, c in zip(start, limit, stride, strict=False))
        printer.print_string(" ")
        printer.print_operand(self.operand)
        printer.print_string(f" [{ranges}]")
        print_attr_dict(printer, self)
        print_types_arrow(printer, [self.operand.type], self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> SliceOp:
        operand = parser.parse_unresolved_operand()
        triples = _parse_slice_triples(parser)
        attributes = parser.parse_optional_attr_dict()
        inputs, output = parse_types_arrow(parser, 1)
        return build_operation(
            cls,
            resolve(parser, [operand], inputs),
            [output],
            {
                name: i64_array([t[k] for t in triples])
                for k, name in enumerate(("start", "limit", "stride"))
            },
            attributes,
        )


_SLICE = r"-?[0-9]+\s*:\s*-?[0-9]+\s*:\s*-?[0-9]+"
_PLAIN_SLICES = re.compile(rf"\[\s*(?:{_SLICE}(?:\s*,\s*{_SLICE})*)?\s*\]", re.ASCII)
"""`[a:b:c, ...]` of decimal integers and blanks only (read by `FastParser` in one match)."""


def _parse_slice_triples(parser: Parser) -> list[tuple[int, int, int]]:
    """Parse `[start:limit:stride, ...]`."""
    if (
        isinstance(parser, FastParser)
        and (lists := parser.parse_optional_plain_integers(_PLAIN_SLICES)) is not None
    ):
        values = lists[0]
        return [(values[i], values[i + 1], values[i + 2]) for i in range(0, len(values), 3)]
    return parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE, lambda: _parse_slice_triple(parser)
    )


def _parse_slice_triple(parser: Parser) -> tuple[int, int, int]:
    """Parse `start:limit:stride`."""
    start = parse_int64(parser, "slice start")
    parser.parse_punctuation(":")
    limit = parse_int64(parser, "slice limit")
    parser.parse_punctuation(":")
    stride = parse_int64(parser, "slice stride")
    return start, limit, stride


@irdl_op_definition
class PadOp(UnaryLinear, ArrayPropsUnaryOp):
    """Zero padding with interior padding:
    `prim.pad %x, low = [1], high = [0], interior = [2] : T -> U`.
    d pad(x) = pad(dx) (zero padding is linear); transpose: the strided slice
    picking the operand's positions (stride = interior + 1)."""

    name = "prim.pad"

    low = prop_def(DenseArrayBase.constr(i64))
    high = prop_def(DenseArrayBase.constr(i64))
    interior = prop_def(DenseArrayBase.constr(i64))
    ARRAY_PROPS: ClassVar[tuple[str, ...]] = ("low", "high", "interior")

    def __init__(
        self,
        operand: Value,
        low: Sequence[int],
        high: Sequence[int],
        interior: Sequence[int] | None = None,
        *,
        role: RoleSpec = None,
    ):
        if interior is None:
            interior = [0] * len(low)
        operand_type = tensor_type_of(operand)
        shape = pad_shape(tuple(operand_type.get_shape()), low, high, interior)
        self._init(
            operand,
            [low, high, interior],
            TensorType(operand_type.get_element_type(), shape),
            role,
        )

    def paddings(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """(low, high, interior)."""
        return self.prop_values("low"), self.prop_values("high"), self.prop_values("interior")

    def verify_types(self) -> None:
        operand, result = self.verify_operand_and_result("any")
        check_shape("result", result, pad_shape(operand, *self.paddings()))

    def batched_props(self) -> Sequence[Sequence[int]]:
        """No padding along the batch axis (the padding value is always zero,
        so there is no per-example padding value to batch)."""
        return [[0, *values] for values in self.paddings()]

    @staticmethod
    def reference(
        x: np.ndarray, *, low: Sequence[int], high: Sequence[int], interior: Sequence[int]
    ) -> np.ndarray:
        x = np.asarray(x)
        out = np.zeros(pad_shape(x.shape, low, high, interior), dtype=x.dtype)
        index = tuple(
            slice(lo, lo + (d - 1) * (inner + 1) + 1, inner + 1)
            for d, lo, inner in zip(x.shape, low, interior, strict=True)
        )
        out[index] = x
        return out

    def apply_to(self, tangent: SSAValue) -> Operation:
        return PadOp(tangent, *self.paddings())

    def emit_adjoint(self, ctx: RuleContext, cotangent: SSAValue) -> SSAValue:
        low, _, interior = self.paddings()
        sizes = shape_of(self.operand)
        stride = [inner + 1 for inner in interior]
        limit = [
            lo + (size - 1) * step + 1 if size else lo
            for lo, size, step in zip(low, sizes, stride, strict=True)
        ]
        return emit_value(ctx, SliceOp(cotangent, low, limit, stride))


# --------------------------------------------------------------------------
# Concatenate
# --------------------------------------------------------------------------


def emit_one_hot_rows(ctx: BatchContext, rows: OneHot) -> SSAValue:
    """One-hot rows built: the scale's n elements with n zeros padded between
    each are the n×n diagonal matrix read row by row (O(n²) work, no n×n
    constant); zero rows pad it to the batch."""
    n = rows.count
    flat = emit_reshape(ctx, rows.scale, [n])
    spread = emit_value(ctx, PadOp(flat, [0], [0], [n])) if n > 1 else flat
    diagonal = emit_reshape(ctx, spread, [n, n])
    batched_shape = [ctx.size, *shape_of(rows.scale)]
    return emit_reshape(ctx, pad_to_batch(ctx, diagonal, rows), batched_shape)


def pad_to_batch(ctx: BatchContext, matrix: SSAValue, rows: OneHot) -> SSAValue:
    """A matrix holding the non-zero rows of `rows`, padded with zero rows
    before (`offset`) and after them to the batch's `size` rows."""
    below = ctx.size - rows.count - rows.offset
    if rows.offset == 0 and below == 0:
        return matrix
    return emit_value(ctx, PadOp(matrix, [rows.offset, 0], [below, 0]))


PrimOp.ONE_HOT_ROWS = emit_one_hot_rows


@irdl_op_definition
class ConcatenateOp(PrimOp):
    """Join along `dimension`: `prim.concatenate %a, %b, dimension = 0 : (T1, T2) -> U`.
    d concat(xs) = concat(dxs) (zeros for missing tangents); transpose: the
    slice of ct each active input came from. Linear when fixed inputs are zero."""

    name = "prim.concatenate"

    inputs = var_operand_def()
    result = result_def()
    dimension = prop_def(IntegerAttr[IntegerType])

    def __init__(self, inputs: Sequence[Value], dimension: int, *, role: RoleSpec = None):
        if not inputs:
            raise VerifyException("concatenate needs at least one input")
        shape = concatenate_shape([shape_of(v) for v in inputs], dimension)
        element = tensor_type_of(inputs[0]).get_element_type()
        super().__init__(
            operands=[list(inputs)],
            result_types=[TensorType(element, shape)],
            properties={"dimension": IntegerAttr(dimension, i64)},
            attributes=role_attributes(role),
        )

    @property
    def dimension_value(self) -> int:
        return int(self.dimension.value.data)

    def verify_types(self) -> None:
        check_tensor("result", self.result.type, "any")
        for index, value in enumerate(self.inputs):
            check_tensor(f"input #{index}", value.type, "any")
            check_same_element_type(f"input #{index}", value.type, self.result.type)
        expected = concatenate_shape([shape_of(v) for v in self.inputs], self.dimension_value)
        check_shape("result", shape_of(self.result), expected)

    @staticmethod
    def reference(*inputs: np.ndarray, dimension: int) -> np.ndarray:
        return np.concatenate(inputs, axis=dimension)

    def reference_params(self) -> dict[str, Any]:
        return {"dimension": self.dimension_value}

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        parts = [
            or_zeros(ctx, tangent, value)
            for tangent, value in zip(tangents, self.operands, strict=True)
        ]
        return [emit_value(ctx, ConcatenateOp(parts, self.dimension_value))]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        (ct,) = cotangents
        assert ct is not None
        dimension = self.dimension_value
        shape = shape_of(ct)
        offset = 0
        result: list[SSAValue | None] = []
        for value, active in zip(self.operands, active_mask_of(self), strict=True):
            size = shape_of(value)[dimension]
            if active:
                start = [offset if axis == dimension else 0 for axis in range(len(shape))]
                limit = [offset + size if axis == dimension else d for axis, d in enumerate(shape)]
                result.append(emit_value(ctx, SliceOp(ct, start, limit)))
            else:
                result.append(None)
            offset += size
        return result

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return active_or_zero(self, active_mask)

    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        """Every input batched (the unbatched ones broadcast), joined along
        `dimension + 1`."""
        inputs = batch_all(ctx, operands, batched)
        return [emit_value(ctx, ConcatenateOp(inputs, self.dimension_value + 1))]

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.inputs, printer.print_operand)
        printer.print_string(f", dimension = {self.dimension_value}")
        print_attr_dict(printer, self)
        print_types_arrow(printer, [v.type for v in self.inputs], self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> ConcatenateOp:
        operands = parse_operands_until(parser, "dimension")
        dimension = parse_int64_assignment(parser, "dimension", keyword_read=True)
        attributes = parser.parse_optional_attr_dict()
        inputs, output = parse_types_arrow(parser, len(operands))
        return build_operation(
            cls, resolve(parser, operands, inputs), [output], {"dimension": dimension}, attributes
        )


# --------------------------------------------------------------------------
# Reduce max
# --------------------------------------------------------------------------


def lay_out_elements(ctx: RuleContext, parts: list[SSAValue]) -> list[SSAValue]:
    """Cotangents that are single elements a slice's transpose padded to the
    full shape (`x[i, j]` read many times), laid at their flat positions
    into one buffer (one concatenate with zero gaps) instead of a full-size
    pad and add each; the other parts as they are."""
    elements, rest = _padded_elements(parts)
    if len(elements) < 2:
        return parts
    return [_laid_out(ctx, elements, tensor_type_of(parts[0])), *rest]


def _padded_elements(
    values: Sequence[SSAValue],
) -> tuple[dict[int, list[SSAValue]], list[SSAValue]]:
    """The values that pad a single element, by the element's flat position
    (its padded operand, in arrival order), and the other values."""
    elements: dict[int, list[SSAValue]] = {}
    rest: list[SSAValue] = []
    for value in values:
        owner = value.owner
        shape = shape_of(value)
        if isinstance(owner, PadOp) and shape and all(d == 1 for d in shape_of(owner.operand)):
            low = owner.paddings()[0]
            elements.setdefault(int(np.ravel_multi_index(low, shape)), []).append(owner.operand)
        else:
            rest.append(value)
    return elements, rest


def _laid_out(ctx: RuleContext, elements: dict[int, list[SSAValue]], t: TensorType) -> SSAValue:
    """A `t`-shaped value holding each position's elements (summed), zero elsewhere."""
    element = t.get_element_type()
    pieces: list[SSAValue] = []
    cursor = 0
    for position in [*sorted(elements), math.prod(t.get_shape())]:
        if position > cursor:
            pieces.append(full_like(ctx, 0.0, TensorType(element, [position - cursor])))
        if position in elements:
            parts = [emit_reshape(ctx, part, [1]) for part in elements[position]]
            pieces.append(AddOp.accumulate_all(ctx, parts))
        cursor = position + 1
    return emit_reshape(ctx, emit_value(ctx, ConcatenateOp(pieces, 0)), t.get_shape())


PrimOp.SUM_STRATEGIES.append(lay_out_elements)


@irdl_op_definition
class ReduceMaxOp(NotLinear, ReduceOp):
    """Max over `axes` of a real tensor. d max(x) = sum(w·dx) with w = 1/count
    on the maximal entries, 0 elsewhere (ties share the tangent evenly, as JAX does)."""

    name = "prim.reduce_max"
    KIND: ClassVar[str] = "real or integer"

    @staticmethod
    def reference(x: np.ndarray, *, axes: Sequence[int]) -> np.ndarray:
        return np.max(x, axis=tuple(axes))

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        x, y = self.operand, self.result
        axes = self.prop_values("axes")
        x_type = tensor_type_of(x)
        kept = kept_axes(len(x_type.get_shape()), axes)
        maximum = emit_value(ctx, BroadcastInDimOp(y, kept, x_type))
        is_max = emit_value(ctx, CompareOp("eq", x, maximum))
        indicator = emit_value(
            ctx, SelectOp(is_max, full_like(ctx, 1.0, x_type), zeros_like(ctx, x))
        )
        count = emit_value(ctx, ReduceSumOp(indicator, axes))
        weights = emit_value(
            ctx, DivOp(indicator, emit_value(ctx, BroadcastInDimOp(count, kept, x_type)))
        )
        return [emit_value(ctx, ReduceSumOp(scale(ctx, weights, tangents[0]), axes))]


OPS: tuple[type[PrimOp], ...] = (
    SliceOp,
    PadOp,
    ConcatenateOp,
    ReduceMaxOp,
)
"""The op classes of this layer, in the dialect's order."""

__all__ = [
    "ConcatenateOp",
    "PadOp",
    "ReduceMaxOp",
    "SliceOp",
]
