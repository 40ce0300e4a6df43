"""Loop-nest kernels of the non-elementwise prim ops (one op -> one or two nests).

Each kernel writes the whole result buffer `out` from its operand buffers:

* reductions iterate the operand in row-major order; the trailing run of reduced
  axes is folded in registers (`scf.for` iter_args, `reassoc` so it vectorizes),
  and when an outer axis is reduced too the partial sums accumulate in `out`
  (initialized first), which keeps the innermost loop contiguous; integer sums
  and maxima start from 0 and the smallest integer (`_reduction_identity`);
* `dot_general` runs batch, lhs-free, contracting, rhs-free loops
  (`out[b,i,j] += l[b,i,k] * r[b,k,j]`, innermost loop contiguous in `r` and
  `out`), or a register reduction over the contracting axes when there are no
  rhs-free axes; large real matrix products call BLAS instead (`blas.py`);
* pad and concatenate write their operands into `out` at shifted indices;
* the ops along one axis (argmax, argmin, cumsum, argsort) are in
  `ordering_kernels.py`, merged into `KERNELS`.

Broadcast, transpose, slice and gather have no kernel but an *index map*
(`INDEX_MAPS`): their result's element at an index is their first operand's
element at an index computed from it (reading other operands, a gather's
indices, where needed). `convert-prim-to-loops` fuses them, like elementwise
ops, into the loop nest of their readers, which read the operand where the
value is used: no nest and no temporary of their own unless nothing
elementwise reads them (then a nest of their own copies the elements).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeAlias

from xdsl.builder import Builder
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Attribute, Operation, SSAValue

from tidu_mlir.dialects import prim
from tidu_mlir.lowering.indexing_kernels import (
    INDEXING_KERNELS,
    INDEXING_MAPS,
    ElementRead,
    IndexMap,
)
from tidu_mlir.lowering.loops import Buffer, Index, LoopBuilder
from tidu_mlir.lowering.ordering_kernels import ORDERING_KERNELS
from tidu_mlir.lowering.scalar import REDUCTION_FLAGS, Element, ScalarBuilder

Kernel: TypeAlias = Callable[[LoopBuilder, Builder, Operation, Sequence[Buffer], Buffer], None]


def constant_element(sb: ScalarBuilder, value: complex, element: Attribute) -> Element:
    """A scalar constant of element type `element` (a pair for complex types); an
    integer or bool `value` is kept exact for integer types."""
    real = prim.real_element_type(element)
    if prim.is_complex(element):
        return sb.const(value.real, real), sb.const(value.imag, real)
    return sb.const(value.real, real)


def flatten(value: Element) -> list[SSAValue]:
    return list(value) if isinstance(value, tuple) else [value]


def unflatten(values: Sequence[SSAValue]) -> Element:
    return (values[0], values[1]) if len(values) == 2 else values[0]


def _add(sb: ScalarBuilder, a: Element, b: Element) -> Element:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return sb.c_add(a, b)
    assert isinstance(a, SSAValue) and isinstance(b, SSAValue)
    return sb.add(a, b)


def _mul(sb: ScalarBuilder, a: Element, b: Element) -> Element:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return sb.c_mul(a, b)
    assert isinstance(a, SSAValue) and isinstance(b, SSAValue)
    return sb.mul(a, b)


def _max(sb: ScalarBuilder, a: Element, b: Element) -> Element:
    assert isinstance(a, SSAValue) and isinstance(b, SSAValue)
    return sb.maximum(a, b)


def _reduction_identity(element: Attribute, is_max: bool) -> float:
    """The start of a sum (0) or a max (-inf, or the smallest value of an integer type)."""
    if not is_max:
        return 0
    if isinstance(element, IntegerType):
        return -(2 ** (element.width.data - 1))
    return float("-inf")


def reduction_start(b: Builder, op: prim.ReduceSumOp | prim.ReduceMaxOp) -> list[SSAValue]:
    """The identity a reduction's accumulators start from (flattened: complex
    sums carry two values)."""
    element = prim.element_type_of(op.operand.type)
    identity = _reduction_identity(element, isinstance(op, prim.ReduceMaxOp))
    return flatten(constant_element(ScalarBuilder(b, REDUCTION_FLAGS), identity, element))


def reduction_step(
    b: Builder, op: prim.ReduceSumOp | prim.ReduceMaxOp, acc: Sequence[SSAValue], value: Element
) -> list[SSAValue]:
    """The accumulators `acc` of a reduction with `value` folded in (`reassoc`,
    so the loop vectorizes)."""
    combine = _max if isinstance(op, prim.ReduceMaxOp) else _add
    return flatten(combine(ScalarBuilder(b, REDUCTION_FLAGS), unflatten(acc), value))


def reduce_kernel(
    lb: LoopBuilder, b: Builder, op: Operation, operands: Sequence[Buffer], out: Buffer
) -> None:
    assert isinstance(op, prim.ReduceSumOp | prim.ReduceMaxOp)
    (src,) = operands
    axes = set(op.prop_values("axes"))
    shape = src.shape
    split = len(shape)
    while split > 0 and split - 1 in axes:
        split -= 1
    outer, inner = shape[:split], shape[split:]
    accumulate_in_out = any(axis < split for axis in axes)
    element = prim.element_type_of(op.operand.type)

    if accumulate_in_out:
        identity = _reduction_identity(element, isinstance(op, prim.ReduceMaxOp))
        lb.fill(b, out, constant_element(ScalarBuilder(b), identity, element))

    def outer_body(bb: Builder, ivs: Index) -> None:
        if inner:
            total = unflatten(
                lb.reduce(
                    bb,
                    inner,
                    reduction_start(bb, op),
                    lambda b3, ivs2, acc: reduction_step(
                        b3, op, acc, lb.load(b3, src, [*ivs, *ivs2])
                    ),
                )
            )
        else:
            total = lb.load(bb, src, ivs)
        kept = [iv for axis, iv in enumerate(ivs) if axis not in axes]
        if accumulate_in_out:
            total = unflatten(reduction_step(bb, op, flatten(lb.load(bb, out, kept)), total))
        lb.store(bb, out, kept, total)

    lb.nest(b, outer, outer_body)


def _place(rank: int, groups: Sequence[tuple[Sequence[int], Sequence[SSAValue]]]) -> Index:
    """An index of `rank` entries with `values` placed at `axes` for each group."""
    index: list[SSAValue | None] = [None] * rank
    for axes, values in groups:
        for axis, value in zip(axes, values, strict=True):
            index[axis] = value
    assert all(v is not None for v in index)
    return [v for v in index if v is not None]


def dot_general_kernel(
    lb: LoopBuilder, b: Builder, op: Operation, operands: Sequence[Buffer], out: Buffer
) -> None:
    assert isinstance(op, prim.DotGeneralOp)
    lhs, rhs = operands
    lb_axes, rb_axes, lc_axes, rc_axes = op.dims()
    lf_axes = [a for a in range(len(lhs.shape)) if a not in (*lb_axes, *lc_axes)]
    rf_axes = [a for a in range(len(rhs.shape)) if a not in (*rb_axes, *rc_axes)]
    nb, nlf, nc = len(lb_axes), len(lf_axes), len(lc_axes)
    batch = [lhs.shape[a] for a in lb_axes]
    lfree = [lhs.shape[a] for a in lf_axes]
    contract = [lhs.shape[a] for a in lc_axes]
    rfree = [rhs.shape[a] for a in rf_axes]
    element = prim.element_type_of(op.result.type)

    def product(bb: Builder, bv: Index, lv: Index, cv: Index, rv: Index) -> Element:
        left = lb.load(
            bb, lhs, _place(len(lhs.shape), [(lb_axes, bv), (lf_axes, lv), (lc_axes, cv)])
        )
        right = lb.load(
            bb, rhs, _place(len(rhs.shape), [(rb_axes, bv), (rf_axes, rv), (rc_axes, cv)])
        )
        return _mul(ScalarBuilder(bb, REDUCTION_FLAGS), left, right)

    if rfree:
        # One contracted element (an outer product, e.g. the cotangent of a
        # matrix-vector product): each output is one product, stored once,
        # with no zero fill and no read-modify-write pass.
        outer = math.prod(contract) == 1
        if not outer:
            lb.fill(b, out, constant_element(ScalarBuilder(b), 0.0, element))

        def accumulate(bb: Builder, ivs: Index) -> None:
            bv, lv = ivs[:nb], ivs[nb : nb + nlf]
            cv, rv = ivs[nb + nlf : nb + nlf + nc], ivs[nb + nlf + nc :]
            target = [*bv, *lv, *rv]
            total = product(bb, bv, lv, cv, rv)
            if not outer:
                sb = ScalarBuilder(bb, REDUCTION_FLAGS)
                total = _add(sb, lb.load(bb, out, target), total)
            lb.store(bb, out, target, total)

        lb.nest(b, [*batch, *lfree, *contract, *rfree], accumulate)
        return

    def row(bb: Builder, ivs: Index) -> None:
        bv, lv = ivs[:nb], ivs[nb:]
        init = flatten(constant_element(ScalarBuilder(bb), 0.0, element))
        total = lb.reduce(
            bb,
            contract,
            init,
            lambda b3, cv, acc: flatten(
                _add(
                    ScalarBuilder(b3, REDUCTION_FLAGS), unflatten(acc), product(b3, bv, lv, cv, [])
                )
            ),
        )
        lb.store(bb, out, ivs, unflatten(total))

    lb.nest(b, [*batch, *lfree], row)


def emit_transpose(
    lb: LoopBuilder, b: Builder, permutation: Sequence[int], source: Buffer, out: Buffer
) -> None:
    """`out` = `source` transposed: `out[i] = source[i permuted]`, a loop nest."""

    def body(bb: Builder, ivs: Index) -> None:
        place = _place(len(permutation), [(permutation, ivs)])
        lb.store(bb, out, ivs, lb.load(bb, source, place))

    lb.nest(b, out.shape, body)


def pad_kernel(
    lb: LoopBuilder, b: Builder, op: Operation, operands: Sequence[Buffer], out: Buffer
) -> None:
    assert isinstance(op, prim.PadOp)
    low, _, interior = op.paddings()
    element = prim.element_type_of(op.result.type)
    lb.fill(b, out, constant_element(ScalarBuilder(b), 0.0, element))

    def body(bb: Builder, ivs: Index) -> None:
        target = [lb.affine(bb, iv, n + 1, o) for iv, n, o in zip(ivs, interior, low, strict=True)]
        lb.store(bb, out, target, lb.load(bb, operands[0], ivs))

    lb.nest(b, operands[0].shape, body)


def concatenate_kernel(
    lb: LoopBuilder, b: Builder, op: Operation, operands: Sequence[Buffer], out: Buffer
) -> None:
    assert isinstance(op, prim.ConcatenateOp)
    dim = op.dimension_value
    offset = 0
    for source in operands:

        def body(bb: Builder, ivs: Index, source: Buffer = source, offset: int = offset) -> None:
            target = list(ivs)
            target[dim] = lb.affine(bb, ivs[dim], 1, offset)
            lb.store(bb, out, target, lb.load(bb, source, ivs))

        lb.nest(b, source.shape, body)
        offset += source.shape[dim]


KERNELS: dict[type[Operation], Kernel] = {
    prim.ReduceSumOp: reduce_kernel,
    prim.ReduceMaxOp: reduce_kernel,
    prim.DotGeneralOp: dot_general_kernel,
    prim.PadOp: pad_kernel,
    prim.ConcatenateOp: concatenate_kernel,
    **ORDERING_KERNELS,
    **INDEXING_KERNELS,
}
"""The loop-nest kernel of each non-elementwise prim op that is not an index
map (reshape is a view)."""


# --------------------------------------------------------------------------
# Index maps
# --------------------------------------------------------------------------


def _broadcast_index(
    lb: LoopBuilder, _b: Builder, op: Operation, ivs: Index, _read: ElementRead
) -> Index:
    """The operand's axis `k` follows the result's axis `dims[k]`, or stays at 0
    where it has size 1 and the result does not."""
    assert isinstance(op, prim.BroadcastInDimOp)
    operand_shape, result_shape = prim.shape_of(op.operand), prim.shape_of(op.result)
    return [
        ivs[dim] if size == result_shape[dim] else lb.index(0)
        for size, dim in zip(operand_shape, op.prop_values("dims"), strict=True)
    ]


def _transpose_index(
    _lb: LoopBuilder, _b: Builder, op: Operation, ivs: Index, _read: ElementRead
) -> Index:
    """The result's axis `k` is the operand's axis `permutation[k]`."""
    assert isinstance(op, prim.TransposeOp)
    permutation = op.prop_values("permutation")
    return _place(len(permutation), [(permutation, ivs)])


def _slice_index(
    lb: LoopBuilder, b: Builder, op: Operation, ivs: Index, _read: ElementRead
) -> Index:
    """`start + stride * i` along each axis."""
    assert isinstance(op, prim.SliceOp)
    start, _, stride = op.bounds()
    return [lb.affine(b, iv, s, o) for iv, s, o in zip(ivs, stride, start, strict=True)]


INDEX_MAPS: dict[type[Operation], IndexMap] = {
    prim.BroadcastInDimOp: _broadcast_index,
    prim.TransposeOp: _transpose_index,
    prim.SliceOp: _slice_index,
    **INDEXING_MAPS,
}
"""The index map of each prim op whose result element is one element of its
first operand (see the module docstring)."""


def _unit_reshape_index(
    lb: LoopBuilder, _b: Builder, op: Operation, ivs: Index, _read: ElementRead
) -> Index:
    """A reshape that only adds or drops axes of size 1: the other axes in order."""
    kept = iter(iv for iv, size in zip(ivs, prim.shape_of(op.results[0]), strict=True) if size != 1)
    return [lb.index(0) if size == 1 else next(kept) for size in prim.shape_of(op.operands[0])]


def index_map_of(op: Operation) -> IndexMap | None:
    """`op`'s index map: an `INDEX_MAPS` op's, or a reshape's that only adds or
    drops axes of size 1 (any other reshape is a view of its operand's
    buffer, which needs one)."""
    if (index_map := INDEX_MAPS.get(type(op))) is not None:
        return index_map
    if isinstance(op, prim.ReshapeOp):
        operand, result = prim.shape_of(op.operand), prim.shape_of(op.result)
        if [n for n in operand if n != 1] == [n for n in result if n != 1]:
            return _unit_reshape_index
    return None
