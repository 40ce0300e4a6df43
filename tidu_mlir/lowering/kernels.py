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
* concatenate writes each operand into `out` at shifted indices;
* the ops along one axis (argmax, argmin, cumsum, argsort) are in
  `ordering_kernels.py`, merged into `KERNELS`.

Broadcast, transpose, slice, pad and gather have no kernel but an *index
map* (`INDEX_MAPS`): their result's element at an index is their operand's
element at an index computed from it (a gather reads its indices for it; a
pad selects zero where the index falls on no element of the operand, whose
read is clamped into bounds). `convert-prim-to-loops` fuses them, like
elementwise ops, into the loop nests of their readers, and the kernels of
`READ_ONCE_KERNELS` compute them where they load them: no nest and no
temporary of their own unless a reader needs them in memory (a matrix
product, a BLAS or LAPACK call, a reshape's view), they are returned, or
several nests read a large one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeAlias

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Attribute, Operation, SSAValue

from tidu_mlir.dialects import prim
from tidu_mlir.lowering.indexing_kernels import (
    INDEXING_KERNELS,
    INDEXING_MAPS,
    ElementRead,
    IndexMap,
    clamp_index,
)
from tidu_mlir.lowering.loops import Buffer, Index, LoopBuilder, Source
from tidu_mlir.lowering.ordering_kernels import ORDERING_KERNELS
from tidu_mlir.lowering.scalar import REDUCTION_FLAGS, Element, ScalarBuilder

Kernel: TypeAlias = Callable[[LoopBuilder, Builder, Operation, Sequence[Source], Buffer], None]


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
    lb: LoopBuilder, b: Builder, op: Operation, operands: Sequence[Source], out: Buffer
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
    lb: LoopBuilder, b: Builder, op: Operation, operands: Sequence[Source], out: Buffer
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


def concatenate_kernel(
    lb: LoopBuilder, b: Builder, op: Operation, operands: Sequence[Source], out: Buffer
) -> None:
    assert isinstance(op, prim.ConcatenateOp)
    dim = op.dimension_value
    offset = 0
    for source in operands:

        def body(bb: Builder, ivs: Index, source: Source = source, offset: int = offset) -> None:
            target = list(ivs)
            target[dim] = lb.affine(bb, ivs[dim], 1, offset)
            lb.store(bb, out, target, lb.load(bb, source, ivs))

        lb.nest(b, source.shape, body)
        offset += source.shape[dim]


KERNELS: dict[type[Operation], Kernel] = {
    prim.ReduceSumOp: reduce_kernel,
    prim.ReduceMaxOp: reduce_kernel,
    prim.DotGeneralOp: dot_general_kernel,
    prim.ConcatenateOp: concatenate_kernel,
    **ORDERING_KERNELS,
    **INDEXING_KERNELS,
}
"""The loop-nest kernel of each non-elementwise prim op that is not an index
map (reshape is a view)."""

READ_ONCE_KERNELS: frozenset[type[Operation]] = frozenset(
    {
        prim.ReduceSumOp,
        prim.ReduceMaxOp,
        prim.ConcatenateOp,
        prim.ScatterAddOp,
        prim.ScatterOp,
        prim.DynamicSliceOp,
        prim.DynamicUpdateSliceOp,
    }
)
"""Kernels that load each element of their operands once: an index map they
read may be computed where they load it (`loops.Computed`), at no extra cost
(a matrix product's loops would recompute it for every use)."""


# --------------------------------------------------------------------------
# Index maps
# --------------------------------------------------------------------------


def _broadcast_element(
    lb: LoopBuilder, _b: Builder, op: Operation, ivs: Index, read: ElementRead
) -> Element:
    """The operand's axis `k` follows the result's axis `dims[k]`, or stays at 0
    where it has size 1 and the result does not."""
    assert isinstance(op, prim.BroadcastInDimOp)
    operand_shape, result_shape = prim.shape_of(op.operand), prim.shape_of(op.result)
    dims = op.prop_values("dims")
    return read(
        op.operand,
        [
            ivs[dim] if size == result_shape[dim] else lb.index(0)
            for size, dim in zip(operand_shape, dims, strict=True)
        ],
    )


def _transpose_element(
    _lb: LoopBuilder, _b: Builder, op: Operation, ivs: Index, read: ElementRead
) -> Element:
    """The result's axis `k` is the operand's axis `permutation[k]`."""
    assert isinstance(op, prim.TransposeOp)
    permutation = op.prop_values("permutation")
    return read(op.operand, _place(len(permutation), [(permutation, ivs)]))


def _slice_element(
    lb: LoopBuilder, b: Builder, op: Operation, ivs: Index, read: ElementRead
) -> Element:
    """The operand's element at `start + stride * i` along each axis."""
    assert isinstance(op, prim.SliceOp)
    start, _, stride = op.bounds()
    return read(
        op.operand, [lb.affine(b, iv, s, o) for iv, s, o in zip(ivs, stride, start, strict=True)]
    )


def _pad_element(
    lb: LoopBuilder, b: Builder, op: Operation, ivs: Index, read: ElementRead
) -> Element:
    """The operand's element where `ivs` falls on one of its positions
    (`low + k * (interior + 1)` along each axis), else zero: the operand read
    at the position clamped into its bounds, then selected."""
    assert isinstance(op, prim.PadOp)
    sb = ScalarBuilder(b)
    zero = constant_element(sb, 0.0, prim.element_type_of(op.result.type))
    shape = prim.shape_of(op.operand)
    if 0 in shape:
        return zero
    inside: list[SSAValue] = []
    source: Index = []
    for iv, low, high, interior, size in zip(ivs, *op.paddings(), shape, strict=True):
        position, checks = _padded_position(lb, b, iv, (low, high, interior), size)
        inside.extend(checks)
        source.append(position)
    value = read(op.operand, source)
    if not inside:
        return value
    pred = inside[0]
    for check in inside[1:]:
        pred = b.insert(arith.AndIOp(pred, check)).result
    if isinstance(value, tuple) and isinstance(zero, tuple):
        return sb.select(pred, value[0], zero[0]), sb.select(pred, value[1], zero[1])
    assert isinstance(value, SSAValue) and isinstance(zero, SSAValue)
    return sb.select(pred, value, zero)


def _padded_position(
    lb: LoopBuilder, b: Builder, iv: SSAValue, padding: tuple[int, int, int], size: int
) -> tuple[SSAValue, list[SSAValue]]:
    """Along one axis of a pad: the operand position `iv` reads (clamped into
    `[0, size - 1]`) and the conditions for `iv` to fall on it."""
    low, high, interior = padding
    if low == high == interior == 0:
        return iv, []
    offset = lb.affine(b, iv, 1, -low)
    step = lb.index(interior + 1)
    position = offset if interior == 0 else b.insert(arith.DivSIOp(offset, step)).result
    checks: list[SSAValue] = []
    if low:
        checks.append(b.insert(arith.CmpiOp(offset, lb.index(0), "sge")).result)
    if high:
        checks.append(b.insert(arith.CmpiOp(position, lb.index(size), "slt")).result)
    if interior:
        remainder = b.insert(arith.RemSIOp(offset, step)).result
        checks.append(b.insert(arith.CmpiOp(remainder, lb.index(0), "eq")).result)
    return clamp_index(lb, b, position, 0, size - 1), checks


INDEX_MAPS: dict[type[Operation], IndexMap] = {
    prim.BroadcastInDimOp: _broadcast_element,
    prim.TransposeOp: _transpose_element,
    prim.SliceOp: _slice_element,
    prim.PadOp: _pad_element,
    **INDEXING_MAPS,
}
"""The index map of each prim op whose result elements are elements of its
operands read at other indices (see the module docstring)."""


def _unit_reshape_element(
    lb: LoopBuilder, _b: Builder, op: Operation, ivs: Index, read: ElementRead
) -> Element:
    """A reshape that only adds or drops axes of size 1: the other axes in order."""
    kept = iter(iv for iv, size in zip(ivs, prim.shape_of(op.results[0]), strict=True) if size != 1)
    operand = op.operands[0]
    return read(operand, [lb.index(0) if n == 1 else next(kept) for n in prim.shape_of(operand)])


def index_map_of(op: Operation) -> IndexMap | None:
    """`op`'s index map: an `INDEX_MAPS` op's, or a reshape's that only adds or
    drops axes of size 1 (any other reshape is a view of its operand's
    buffer, which needs one)."""
    if (index_map := INDEX_MAPS.get(type(op))) is not None:
        return index_map
    if isinstance(op, prim.ReshapeOp):
        operand, result = prim.shape_of(op.operand), prim.shape_of(op.result)
        if [n for n in operand if n != 1] == [n for n in result if n != 1]:
            return _unit_reshape_element
    return None
