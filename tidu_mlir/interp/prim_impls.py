"""Numpy implementations of the `prim` ops (numpy/XLA semantics).

Each returns arrays in numpy's natural dtype; the evaluator casts them to the
result element type (so f32 stays f32 even where numpy would upcast).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.ir import Operation

from tidu_mlir.dialects import prim
from tidu_mlir.interp.registry import register_impl

Array = np.ndarray


def _register_elementwise(op_class: type[Operation], fn: Callable[..., Array]) -> None:
    """Register a numpy function applied to the operand arrays."""

    def impl(op: Operation, *args: Array) -> tuple[Array, ...]:
        with np.errstate(all="ignore"):
            return (np.asarray(fn(*args)),)

    register_impl(op_class)(impl)


_ELEMENTWISE: dict[type[Operation], Callable[..., Array]] = {
    prim.AddOp: np.add,
    prim.SubOp: np.subtract,
    prim.MulOp: np.multiply,
    prim.DivOp: np.divide,
    prim.MaximumOp: np.maximum,
    prim.MinimumOp: np.minimum,
    prim.NegOp: np.negative,
    prim.ExpOp: np.exp,
    prim.LogOp: np.log,
    prim.SinOp: np.sin,
    prim.CosOp: np.cos,
    prim.TanhOp: np.tanh,
    prim.SqrtOp: np.sqrt,
    prim.ConjOp: np.conj,
    prim.AbsOp: np.abs,
    prim.RealOp: np.real,
    prim.ImagOp: np.imag,
    prim.SelectOp: np.where,
}

for _op_class, _fn in _ELEMENTWISE.items():
    _register_elementwise(_op_class, _fn)


_COMPARISONS: dict[str, Callable[[Array, Array], Array]] = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


@register_impl(prim.CompareOp)
def _compare(op: prim.CompareOp, lhs: Array, rhs: Array) -> tuple[Array, ...]:
    return (_COMPARISONS[op.direction.data](lhs, rhs),)


@register_impl(prim.PowOp)
def _pow(op: prim.PowOp, x: Array) -> tuple[Array, ...]:
    with np.errstate(all="ignore"):
        return (np.power(x, np.asarray(op.exponent_value, dtype=x.dtype)),)


@register_impl(prim.ComplexOp)
def _complex(op: prim.ComplexOp, re: Array, im: Array) -> tuple[Array, ...]:
    out = np.empty(re.shape, dtype=prim.tensor_dtype(op.result.type))
    out.real = re
    out.imag = im
    return (out,)


@register_impl(prim.ConvertOp)
def _convert(op: prim.ConvertOp, x: Array) -> tuple[Array, ...]:
    if prim.is_complex(op.operand.type) and not prim.is_complex(op.result.type):
        x = np.real(x)
    return (x.astype(prim.tensor_dtype(op.result.type)),)


@register_impl(prim.ConstantOp)
def _constant(op: prim.ConstantOp) -> tuple[Array, ...]:
    return (op.to_array(),)


@register_impl(prim.BroadcastInDimOp)
def _broadcast_in_dim(op: prim.BroadcastInDimOp, x: Array) -> tuple[Array, ...]:
    result_shape = prim.shape_of(op.result)
    expanded = [1] * len(result_shape)
    for size, dim in zip(x.shape, op.prop_values("dims"), strict=True):
        expanded[dim] = size
    return (np.broadcast_to(x.reshape(expanded), result_shape).copy(),)


@register_impl(prim.ReduceSumOp)
def _reduce_sum(op: prim.ReduceSumOp, x: Array) -> tuple[Array, ...]:
    return (np.sum(x, axis=op.prop_values("axes")),)


@register_impl(prim.ReduceMaxOp)
def _reduce_max(op: prim.ReduceMaxOp, x: Array) -> tuple[Array, ...]:
    return (np.max(x, axis=op.prop_values("axes")),)


@register_impl(prim.ReshapeOp)
def _reshape(op: prim.ReshapeOp, x: Array) -> tuple[Array, ...]:
    return (x.reshape(prim.shape_of(op.result)),)


@register_impl(prim.TransposeOp)
def _transpose(op: prim.TransposeOp, x: Array) -> tuple[Array, ...]:
    return (np.transpose(x, op.prop_values("permutation")),)


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


@register_impl(prim.DotGeneralOp)
def _dot_general(op: prim.DotGeneralOp, lhs: Array, rhs: Array) -> tuple[Array, ...]:
    spec = einsum_spec(lhs.ndim, rhs.ndim, *op.dims())
    return (np.einsum(spec, lhs, rhs),)


@register_impl(prim.SliceOp)
def _slice(op: prim.SliceOp, x: Array) -> tuple[Array, ...]:
    start, limit, stride = op.bounds()
    index = tuple(slice(a, b, c) for a, b, c in zip(start, limit, stride, strict=True))
    return (x[index],)


@register_impl(prim.PadOp)
def _pad(op: prim.PadOp, x: Array) -> tuple[Array, ...]:
    low, _, interior = op.paddings()
    out = np.zeros(prim.shape_of(op.result), dtype=x.dtype)
    index = tuple(
        slice(lo, lo + (d - 1) * (inner + 1) + 1, inner + 1)
        for d, lo, inner in zip(x.shape, low, interior, strict=True)
    )
    out[index] = x
    return (out,)


@register_impl(prim.ConcatenateOp)
def _concatenate(op: prim.ConcatenateOp, *inputs: Array) -> tuple[Array, ...]:
    return (np.concatenate(inputs, axis=op.dimension_value),)
