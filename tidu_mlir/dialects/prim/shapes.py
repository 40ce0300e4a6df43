"""The shape rules of the `prim` ops, shared by the constructors (which infer
result types, so AD rules can emit ops without computing shapes), the
verifiers and the numpy references. Each raises VerifyException on bad input."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.utils.exceptions import VerifyException

from tidu_mlir.dialects.prim.types import (
    Shape,
    check_axes_in_range,
    check_length,
    check_strictly_increasing,
    fmt_shape,
)


def broadcast_in_dim_check(operand: Shape, dims: Sequence[int], result: Shape) -> None:
    """Operand axis i goes to result axis dims[i] and has size 1 or the result's."""
    check_length("dims", dims, len(operand))
    check_axes_in_range("broadcast dim", dims, len(result))
    check_strictly_increasing("dims", dims)
    for axis, (size, dim) in enumerate(zip(operand, dims, strict=True)):
        if size not in (1, result[dim]):
            raise VerifyException(
                f"operand dimension {axis} has size {size}, which is neither 1 nor the "
                f"size {result[dim]} of result dimension {dim}"
            )


def reduce_shape(operand: Shape, axes: Sequence[int]) -> Shape:
    """The shape left after reducing `axes` (sorted, unique, in range)."""
    check_axes_in_range("reduction axis", axes, len(operand))
    check_strictly_increasing("axes", axes)
    return tuple(d for axis, d in enumerate(operand) if axis not in axes)


def transpose_shape(operand: Shape, permutation: Sequence[int]) -> Shape:
    """result.shape[i] = operand.shape[permutation[i]]."""
    if sorted(permutation) != list(range(len(operand))):
        raise VerifyException(
            f"permutation {fmt_shape(permutation)} is not a permutation of 0..{len(operand) - 1}"
        )
    return tuple(operand[p] for p in permutation)


def kept_axes(rank: int, removed: Sequence[int]) -> list[int]:
    """The axes 0..rank-1 not in `removed`, in order (e.g. the free axes of a
    dot_general operand, the axes a reduction keeps)."""
    return [axis for axis in range(rank) if axis not in removed]


def _check_dot_side(side: str, rank: int, batch: Sequence[int], contract: Sequence[int]) -> None:
    check_axes_in_range(f"{side} batch dimension", batch, rank)
    check_axes_in_range(f"{side} contracting dimension", contract, rank)
    if len(set(batch) | set(contract)) != len(batch) + len(contract):
        raise VerifyException(
            f"{side} batch {fmt_shape(batch)} and contracting {fmt_shape(contract)} "
            "dimensions must be unique and disjoint"
        )


def _check_dot_pairs(
    what: str, lhs: Shape, rhs: Shape, ls: Sequence[int], rs: Sequence[int]
) -> None:
    if len(ls) != len(rs):
        raise VerifyException(f"lhs and rhs {what} dimension lists differ in length")
    for left, right in zip(ls, rs, strict=True):
        if lhs[left] != rhs[right]:
            raise VerifyException(
                f"{what} dimension sizes differ: lhs dimension {left} has size {lhs[left]}, "
                f"rhs dimension {right} has size {rhs[right]}"
            )


def dot_general_shape(
    lhs: Shape,
    rhs: Shape,
    lhs_batch: Sequence[int],
    rhs_batch: Sequence[int],
    lhs_contract: Sequence[int],
    rhs_contract: Sequence[int],
) -> Shape:
    """Result shape in XLA order: batch, lhs free, rhs free."""
    _check_dot_side("lhs", len(lhs), lhs_batch, lhs_contract)
    _check_dot_side("rhs", len(rhs), rhs_batch, rhs_contract)
    _check_dot_pairs("batch", lhs, rhs, lhs_batch, rhs_batch)
    _check_dot_pairs("contracting", lhs, rhs, lhs_contract, rhs_contract)
    return (
        tuple(lhs[a] for a in lhs_batch)
        + tuple(lhs[a] for a in kept_axes(len(lhs), [*lhs_batch, *lhs_contract]))
        + tuple(rhs[a] for a in kept_axes(len(rhs), [*rhs_batch, *rhs_contract]))
    )


def slice_shape(
    operand: Shape, start: Sequence[int], limit: Sequence[int], stride: Sequence[int]
) -> Shape:
    """Size ceil((limit - start) / stride) per axis; 0 <= start <= limit <= dim, stride > 0."""
    for name, values in (("start", start), ("limit", limit), ("stride", stride)):
        check_length(name, values, len(operand))
    for axis, (dim, lo, hi, step) in enumerate(zip(operand, start, limit, stride, strict=True)):
        if not 0 <= lo <= hi <= dim:
            raise VerifyException(
                f"slice bounds of dimension {axis} must satisfy 0 <= start <= limit <= {dim}, "
                f"got start {lo}, limit {hi}"
            )
        if step <= 0:
            raise VerifyException(f"slice stride of dimension {axis} must be > 0, got {step}")
    return tuple(-(-(hi - lo) // step) for lo, hi, step in zip(start, limit, stride, strict=True))


def pad_shape(
    operand: Shape, low: Sequence[int], high: Sequence[int], interior: Sequence[int]
) -> Shape:
    """Size low + d + (d - 1) * interior + high per axis (all paddings >= 0)."""
    for name, values in (("low", low), ("high", high), ("interior", interior)):
        check_length(name, values, len(operand))
        if any(v < 0 for v in values):
            raise VerifyException(f"pad {name} {fmt_shape(values)} must be non-negative")
    return tuple(
        lo + d + max(d - 1, 0) * inner + hi
        for d, lo, hi, inner in zip(operand, low, high, interior, strict=True)
    )


def concatenate_shape(shapes: Sequence[Shape], dimension: int) -> Shape:
    """Inputs of equal rank and equal sizes except along `dimension`, which add up."""
    if not shapes:
        raise VerifyException("concatenate needs at least one input")
    first = shapes[0]
    if not 0 <= dimension < len(first):
        raise VerifyException(
            f"concatenate dimension {dimension} is out of range for rank {len(first)}"
        )
    for index, shape in enumerate(shapes):
        if len(shape) != len(first):
            raise VerifyException(
                f"concatenate input #{index} has rank {len(shape)}, expected {len(first)}"
            )
        for axis, (a, b) in enumerate(zip(shape, first, strict=True)):
            if axis != dimension and a != b:
                raise VerifyException(
                    f"concatenate input #{index} has size {a} in dimension {axis}, expected {b}"
                )
    total = sum(shape[dimension] for shape in shapes)
    return first[:dimension] + (total,) + first[dimension + 1 :]


__all__ = [
    "broadcast_in_dim_check",
    "concatenate_shape",
    "dot_general_shape",
    "pad_shape",
    "reduce_shape",
    "slice_shape",
    "transpose_shape",
]
