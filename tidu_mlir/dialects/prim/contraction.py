"""`prim.dot_general`: batched tensor contraction with XLA's dimension numbers.

Bilinear: linear in exactly one operand at a time. Its transpose contracts the
cotangent with the conjugate of the fixed operand (docs/complex.md), then
transposes the axes back into the active operand's order. Its batching rule
makes the batch axis a batch dimension (both operands batched) or a free
dimension (one operand batched) of the contraction.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, TensorType, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure

from tidu_mlir.dialects.prim.base import PrimOp, Values, emit_value, shift_axes
from tidu_mlir.dialects.prim.core import (
    BroadcastInDimOp,
    MulOp,
    conj_if_complex,
    emit_reshape,
    emit_transpose,
    inverse_permutation,
    product_jvp,
)
from tidu_mlir.dialects.prim.shapes import dot_general_shape, kept_axes
from tidu_mlir.dialects.prim.structural import ConcatenateOp, pad_to_batch
from tidu_mlir.dialects.prim.syntax import (
    RoleSpec,
    array_values,
    i64_array,
    parse_keyword_lists,
    parse_types_arrow,
    print_attr_dict,
    print_int_list,
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
from tidu_mlir.fast_syntax import build_operation
from tidu_mlir.interfaces import BatchContext, OneHot, RecomputeCost, RuleContext, active_mask_of

DOT_PROPS: tuple[str, ...] = ("lhs_batch", "rhs_batch", "lhs_contract", "rhs_contract")


def einsum_spec(
    lhs_rank: int,
    rhs_rank: int,
    lhs_batch: Sequence[int],
    rhs_batch: Sequence[int],
    lhs_contract: Sequence[int],
    rhs_contract: Sequence[int],
) -> str:
    """The `np.einsum` subscripts of a dot_general (result: batch, lhs free, rhs free)."""
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    lhs = [next(letters) for _ in range(lhs_rank)]
    rhs = [next(letters) for _ in range(rhs_rank)]
    for left, right in zip([*lhs_batch, *lhs_contract], [*rhs_batch, *rhs_contract], strict=True):
        rhs[right] = lhs[left]
    shared = {lhs[a] for a in [*lhs_batch, *lhs_contract]}
    out = [lhs[a] for a in lhs_batch]
    out += [c for c in lhs if c not in shared]
    out += [c for c in rhs if c not in shared]
    return f"{''.join(lhs)},{''.join(rhs)}->{''.join(out)}"


@irdl_op_definition
class DotGeneralOp(PrimOp):
    """Batched tensor contraction, result axes batch, lhs free, rhs free:
    `prim.dot_general %l, %r, batch = [0] x [0], contract = [2] x [1] : (T1, T2) -> T3`.
    d dot(a, b) = dot(a, db) + dot(da, b) (fixed operand first, as for mul)."""

    name = "prim.dot_general"

    traits = traits_def(Pure(), RecomputeCost(cheap=False))
    lhs = operand_def()
    rhs = operand_def()
    result = result_def()
    lhs_batch = prop_def(DenseArrayBase.constr(i64))
    rhs_batch = prop_def(DenseArrayBase.constr(i64))
    lhs_contract = prop_def(DenseArrayBase.constr(i64))
    rhs_contract = prop_def(DenseArrayBase.constr(i64))

    def __init__(
        self,
        lhs: Value,
        rhs: Value,
        *,
        lhs_batch: Sequence[int] = (),
        rhs_batch: Sequence[int] = (),
        lhs_contract: Sequence[int] = (),
        rhs_contract: Sequence[int] = (),
        role: RoleSpec = None,
    ):
        lists = (lhs_batch, rhs_batch, lhs_contract, rhs_contract)
        shape = dot_general_shape(shape_of(lhs), shape_of(rhs), *lists)
        element = tensor_type_of(lhs).get_element_type()
        super().__init__(
            operands=[lhs, rhs],
            result_types=[TensorType(element, shape)],
            properties={name: i64_array(v) for name, v in zip(DOT_PROPS, lists, strict=True)},
            attributes=role_attributes(role),
        )

    def dims(self) -> tuple[tuple[int, ...], ...]:
        """(lhs_batch, rhs_batch, lhs_contract, rhs_contract)."""
        return tuple(array_values(getattr(self, name)) for name in DOT_PROPS)

    def verify_types(self) -> None:
        check_tensor("lhs", self.lhs.type)
        check_tensor("rhs", self.rhs.type)
        check_tensor("result", self.result.type)
        check_same_element_type("rhs", self.rhs.type, self.lhs.type)
        check_same_element_type("result", self.result.type, self.lhs.type)
        expected = dot_general_shape(shape_of(self.lhs), shape_of(self.rhs), *self.dims())
        check_shape("result", shape_of(self.result), expected)

    @staticmethod
    def reference(
        lhs: np.ndarray,
        rhs: np.ndarray,
        *,
        lhs_batch: Sequence[int] = (),
        rhs_batch: Sequence[int] = (),
        lhs_contract: Sequence[int] = (),
        rhs_contract: Sequence[int] = (),
    ) -> np.ndarray:
        lhs, rhs = np.asarray(lhs), np.asarray(rhs)
        spec = einsum_spec(lhs.ndim, rhs.ndim, lhs_batch, rhs_batch, lhs_contract, rhs_contract)
        return np.einsum(spec, lhs, rhs)

    def reference_params(self) -> dict[str, Any]:
        return dict(zip(DOT_PROPS, self.dims(), strict=True))

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        return [product_jvp(ctx, self, tangents, self._like)]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        (ct,) = cotangents
        assert ct is not None
        lhs, rhs = self.operands
        lhs_batch, rhs_batch, lhs_contract, rhs_contract = self.dims()
        if active_mask_of(self)[0]:
            lhs_free = len(kept_axes(len(shape_of(lhs)), [*lhs_batch, *lhs_contract]))
            contribution = _dot_cotangent(
                ctx, ct, rhs, lhs, (lhs_batch, lhs_contract), (rhs_batch, rhs_contract),
                fixed_free_start=len(lhs_batch) + lhs_free,
            )  # fmt: skip
            return [contribution, None]
        contribution = _dot_cotangent(
            ctx, ct, lhs, rhs, (rhs_batch, rhs_contract), (lhs_batch, lhs_contract),
            fixed_free_start=len(lhs_batch),
        )  # fmt: skip
        return [None, contribution]

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return sum(active_mask) == 1

    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        """Both sides batched: the batch axis is a new leading batch dimension,
        so it is the result's axis 0. One side batched: it is that side's first
        free axis; the result (batch, lhs free, rhs free) has it after the batch
        axes (and, for the rhs, after the lhs free axes), whence a transpose
        moves it to axis 0."""
        lhs, rhs = operands
        lhs_batched, rhs_batched = batched
        lhs_batch, rhs_batch, lhs_contract, rhs_contract = self.dims()
        if lhs_batched:
            lhs_batch, lhs_contract = shift_axes(lhs_batch), shift_axes(lhs_contract)
        if rhs_batched:
            rhs_batch, rhs_contract = shift_axes(rhs_batch), shift_axes(rhs_contract)
        if lhs_batched and rhs_batched:
            lhs_batch, rhs_batch = [0, *lhs_batch], [0, *rhs_batch]
            position = 0
        elif lhs_batched:
            position = len(lhs_batch)
        else:
            lhs_free = kept_axes(len(shape_of(lhs)), [*lhs_batch, *lhs_contract])
            position = len(lhs_batch) + len(lhs_free)
        product = emit_value(
            ctx,
            DotGeneralOp(
                lhs,
                rhs,
                lhs_batch=lhs_batch,
                rhs_batch=rhs_batch,
                lhs_contract=lhs_contract,
                rhs_contract=rhs_contract,
            ),
        )
        if position == 0:
            return [product]
        rank = len(shape_of(product))
        permutation = [position, *(axis for axis in range(rank) if axis != position)]
        return [emit_transpose(ctx, product, permutation)]

    def one_hot_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue | OneHot], batched: Sequence[bool]
    ) -> Sequence[SSAValue | OneHot] | None:
        """One-hot rows contracted over all their axes of extent > 1 with an
        unbatched operand pick that operand's slices: example `b` is the
        scale's element `b - offset` times the other operand at contraction
        index `b - offset` (work of the other's size, not a product with a
        diagonal matrix)."""
        lhs, rhs = operands
        if any(batched) or isinstance(lhs, OneHot) == isinstance(rhs, OneHot):
            return None
        _, _, lhs_contract, rhs_contract = self.dims()
        if isinstance(lhs, OneHot):
            rows, other, hot_axes, other_axes = lhs, rhs, lhs_contract, rhs_contract
        else:
            assert isinstance(rhs, OneHot)
            rows, other, hot_axes, other_axes = rhs, lhs, rhs_contract, lhs_contract
        assert not isinstance(other, OneHot)
        hot_shape = shape_of(rows.scale)
        if math.prod(hot_shape[axis] for axis in hot_axes) != rows.count:
            return None
        in_flat_order = [o for _, o in sorted(zip(hot_axes, other_axes, strict=True))]
        picked = _slices_first(ctx, other, in_flat_order)
        scaled = emit_value(ctx, MulOp(_broadcast_rows(ctx, rows, picked.type), picked))
        batched_shape = [ctx.size, *shape_of(self.result)]
        return [emit_reshape(ctx, pad_to_batch(ctx, scaled, rows), batched_shape)]

    def _like(self, lhs: SSAValue, rhs: SSAValue) -> DotGeneralOp:
        """A dot_general of `lhs` and `rhs` with this op's dimension numbers."""
        lhs_batch, rhs_batch, lhs_contract, rhs_contract = self.dims()
        return DotGeneralOp(
            lhs,
            rhs,
            lhs_batch=lhs_batch,
            rhs_batch=rhs_batch,
            lhs_contract=lhs_contract,
            rhs_contract=rhs_contract,
        )

    def print(self, printer: Printer) -> None:
        lb, rb, lc, rc = self.dims()
        printer.print_string(" ")
        printer.print_operand(self.lhs)
        printer.print_string(", ")
        printer.print_operand(self.rhs)
        for keyword, left, right in (("batch", lb, rb), ("contract", lc, rc)):
            printer.print_string(f", {keyword} = ")
            print_int_list(printer, left)
            printer.print_string(" x ")
            print_int_list(printer, right)
        print_attr_dict(printer, self)
        print_types_arrow(printer, [self.lhs.type, self.rhs.type], self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> DotGeneralOp:
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        lb, rb, lc, rc = parse_keyword_lists(parser, ("batch", "contract"), pairs=True)
        attributes = parser.parse_optional_attr_dict()
        inputs, output = parse_types_arrow(parser, 2)
        return build_operation(
            cls,
            resolve(parser, [lhs, rhs], inputs),
            [output],
            {name: i64_array(v) for name, v in zip(DOT_PROPS, (lb, rb, lc, rc), strict=True)},
            attributes,
        )


def _slices_first(ctx: BatchContext, value: SSAValue, axes: Sequence[int]) -> SSAValue:
    """`value` as a matrix: one row per index of `axes` (in that order), the
    other axes, in order, flattened along each row."""
    shape = shape_of(value)
    others = [axis for axis in range(len(shape)) if axis not in axes]
    moved = emit_transpose(ctx, value, [*axes, *others])
    matrix = [math.prod(shape[axis] for axis in axes), math.prod(shape[axis] for axis in others)]
    return emit_reshape(ctx, moved, matrix)


def _broadcast_rows(ctx: BatchContext, rows: OneHot, matrix: Attribute) -> SSAValue:
    """The rows' scale, flat, broadcast along the rows of a `matrix`-typed value."""
    assert isinstance(matrix, TensorType)
    flat = emit_reshape(ctx, rows.scale, [rows.count])
    return emit_value(ctx, BroadcastInDimOp(flat, [0], matrix))


def _dot_cotangent(
    ctx: RuleContext,
    ct: SSAValue,
    fixed: SSAValue,
    active: SSAValue,
    active_dims: tuple[Sequence[int], Sequence[int]],
    fixed_dims: tuple[Sequence[int], Sequence[int]],
    fixed_free_start: int,
) -> SSAValue:
    """The cotangent of the active operand of a dot_general.

    `ct`'s axes are batch, lhs free, rhs free; the fixed operand's free axes
    start at `fixed_free_start`. Contracting them (and batching the batch axes)
    with conj(fixed) leaves batch, active free, then the active contracting
    axes ordered like the fixed ones; a transpose restores the active order.
    """
    (active_batch, active_contract), (fixed_batch, fixed_contract) = active_dims, fixed_dims
    fixed_free = kept_axes(len(shape_of(fixed)), [*fixed_batch, *fixed_contract])
    active_free = kept_axes(len(shape_of(active)), [*active_batch, *active_contract])
    product = emit_value(
        ctx,
        DotGeneralOp(
            ct,
            conj_if_complex(ctx, fixed),
            lhs_batch=range(len(active_batch)),
            rhs_batch=fixed_batch,
            lhs_contract=range(fixed_free_start, fixed_free_start + len(fixed_free)),
            rhs_contract=fixed_free,
        ),
    )
    by_fixed = sorted(range(len(fixed_contract)), key=lambda i: fixed_contract[i])
    axes = [*active_batch, *active_free, *(active_contract[i] for i in by_fixed)]
    return emit_transpose(ctx, product, inverse_permutation(axes))


def merge_products(ctx: RuleContext, parts: list[SSAValue]) -> list[SSAValue]:
    """Cotangents that are products alike (the same dimension numbers, types
    and active operand: a weight shared by layers or steps receives one per
    use) summed as one product over their operands joined along a new
    contracted axis, when the additions saved outweigh the copies made; the
    other parts as they are."""
    groups: dict[tuple[Any, ...], list[DotGeneralOp]] = {}
    for part in parts:
        owner = part.owner
        if isinstance(owner, DotGeneralOp):
            key = (owner.dims(), owner.lhs.type, owner.rhs.type, active_mask_of(owner))
            groups.setdefault(key, []).append(owner)
    merged: dict[SSAValue, SSAValue | None] = {}
    for products in groups.values():
        if len(products) > 1 and _worth_merging(products):
            merged[products[0].result] = _merged(ctx, products)
            merged.update((product.result, None) for product in products[1:])
    kept = [merged.get(part, part) for part in parts]
    return [part for part in kept if part is not None]


def _worth_merging(products: Sequence[DotGeneralOp]) -> bool:
    """Whether the k - 1 additions of full results cost more than copying
    every operand into the joined ones."""
    first = products[0]
    result = math.prod(shape_of(first.result))
    operands = math.prod(shape_of(first.lhs)) + math.prod(shape_of(first.rhs))
    return (len(products) - 1) * result > len(products) * operands


def _merged(ctx: RuleContext, products: Sequence[DotGeneralOp]) -> SSAValue:
    """One dot_general summing `products`: each operand gains a trailing axis
    of extent 1, joined along it, and that axis is contracted too."""
    lhs_batch, rhs_batch, lhs_contract, rhs_contract = products[0].dims()

    def joined(operands: Sequence[SSAValue]) -> SSAValue:
        rank = len(shape_of(operands[0]))
        column = [emit_reshape(ctx, v, [*shape_of(v), 1]) for v in operands]
        return emit_value(ctx, ConcatenateOp(column, rank))

    lhs = joined([product.lhs for product in products])
    rhs = joined([product.rhs for product in products])
    product = DotGeneralOp(
        lhs,
        rhs,
        lhs_batch=lhs_batch,
        rhs_batch=rhs_batch,
        lhs_contract=[*lhs_contract, len(shape_of(lhs)) - 1],
        rhs_contract=[*rhs_contract, len(shape_of(rhs)) - 1],
    )
    return emit_value(ctx, product)


PrimOp.SUM_STRATEGIES.append(merge_products)


OPS: tuple[type[PrimOp], ...] = (DotGeneralOp,)
"""The op classes of this layer, in the dialect's order."""

__all__ = [
    "DOT_PROPS",
    "DotGeneralOp",
    "einsum_spec",
]
