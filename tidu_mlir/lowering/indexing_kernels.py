"""Loop-nest kernels of the indexing prim ops: iota, scatter_add, scatter,
dynamic_slice and dynamic_update_slice (`INDEXING_KERNELS`, merged into
`kernels.KERNELS`), and the index map of gather (`INDEXING_MAPS`).

Indices and starts are loaded as i32/i64, cast to `index` (sign-extended) and
normalized as the ops define them, with `arith` compare/select/maxsi/minsi, so
no access is out of bounds whatever the data:

* an index along an axis of extent n (gather, scatter_add, scatter): a negative
  index gets n added once, then the result is clamped into `[0, n - 1]`
  (`prim.normalize_indices`);
* a start (dynamic_slice, dynamic_update_slice): clamped into `[0, dim - size]`
  (`prim.clamp_start`), once, before the loop nest.

The kernels:

* iota: one nest over the result storing the induction variable of `dimension`;
* gather has no kernel but an index map (`INDEXING_MAPS`): the result's
  element at an index is the operand's at the normalized index read from the
  indices, which `convert-prim-to-loops` fuses into its readers' loop nests;
* scatter_add and scatter: the operand is copied into the result, then the
  updates are visited in row-major order: an outer nest over the updates'
  axes up to the last index axis loads and normalizes one index, an inner
  nest over the trailing axes writes that row. The visit is sequential, so
  duplicates accumulate (scatter_add) or the last one in index order wins
  (scatter), as in the references;
* dynamic_slice: one nest over the result, reading at `index + start`;
* dynamic_update_slice: the copy, then one nest over the update, writing at
  `index + start`.

Stores at data-dependent positions (scatters along axis 0, the update of
dynamic_update_slice) are not at the loop's induction variable, so
`parallelize-loops` leaves those loops serial.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeAlias, cast

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import AnyFloat, IndexType, IntegerType
from xdsl.ir import Attribute, Operation, SSAValue

from tidu_mlir.dialects import prim
from tidu_mlir.lowering.loops import Buffer, Index, LoopBuilder, Source
from tidu_mlir.lowering.scalar import Element, ScalarBuilder

ElementRead: TypeAlias = Callable[[SSAValue, Index], Element]
"""An operand's element at an index, as the fused loop nest reads it."""

IndexMap: TypeAlias = Callable[[LoopBuilder, Builder, Operation, Index, ElementRead], Element]
"""The element of an index-map op's result at `ivs` (`kernels.INDEX_MAPS`):
operand elements read (through the `ElementRead`) at indices computed from
`ivs`."""


def _insert(b: Builder, op: Operation) -> SSAValue:
    b.insert(op)
    return op.results[0]


def _load_index(lb: LoopBuilder, b: Builder, buffer: Source, idx: Index) -> SSAValue:
    """An i32/i64 element of `buffer` as an `index` (sign-extended)."""
    return _as_index(b, lb.load(b, buffer, idx))


def _as_index(b: Builder, raw: Element) -> SSAValue:
    """An i32/i64 element as an `index` (sign-extended)."""
    assert isinstance(raw, SSAValue)
    return _insert(b, arith.IndexCastOp(raw, IndexType()))


def clamp_index(lb: LoopBuilder, b: Builder, value: SSAValue, low: int, high: int) -> SSAValue:
    """`min(max(value, low), high)` on `index` values."""
    raised = _insert(b, arith.MaxSIOp(value, lb.index(low)))
    return _insert(b, arith.MinSIOp(raised, lb.index(high)))


def _normalized(lb: LoopBuilder, b: Builder, position: SSAValue, extent: int) -> SSAValue:
    """A position along an axis of `extent`: negative ones + extent once, then
    clamped into `[0, extent - 1]` (`prim.normalize_indices`)."""
    negative = _insert(b, arith.CmpiOp(position, lb.index(0), "slt"))
    shifted = _insert(b, arith.AddiOp(position, lb.index(extent)))
    wrapped = _insert(b, arith.SelectOp(negative, shifted, position))
    return clamp_index(lb, b, wrapped, 0, max(extent - 1, 0))


def _starts(
    lb: LoopBuilder,
    b: Builder,
    starts: Sequence[Source],
    dims: Sequence[int],
    sizes: Sequence[int],
) -> list[SSAValue]:
    """The 0-d starts loaded and clamped into `[0, dim - size]` (`prim.clamp_start`)."""
    return [
        clamp_index(lb, b, _load_index(lb, b, start, []), 0, dim - size)
        for start, dim, size in zip(starts, dims, sizes, strict=True)
    ]


def _offset(b: Builder, ivs: Index, begins: Sequence[SSAValue]) -> Index:
    return [_insert(b, arith.AddiOp(iv, begin)) for iv, begin in zip(ivs, begins, strict=True)]


def _copy(lb: LoopBuilder, b: Builder, source: Source, target: Buffer) -> None:
    """Copy `source` into `target` element by element (one nest)."""
    lb.nest(b, source.shape, lambda bb, ivs: lb.store(bb, target, ivs, lb.load(bb, source, ivs)))


def _add(sb: ScalarBuilder, a: Element, b: Element) -> Element:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return sb.c_add(a, b)
    assert isinstance(a, SSAValue) and isinstance(b, SSAValue)
    return sb.add(a, b)


def _iota_element(b: Builder, iv: SSAValue, element: Attribute) -> SSAValue:
    """An `index` induction variable as a value of `element` (i32, i64, f32, f64)."""
    if isinstance(element, IntegerType):
        return _insert(b, arith.IndexCastOp(iv, element))
    as_int = _insert(b, arith.IndexCastOp(iv, IntegerType(64)))
    return _insert(b, arith.SIToFPOp(as_int, cast(AnyFloat, element)))


def iota_kernel(
    lb: LoopBuilder, b: Builder, op: Operation, operands: Sequence[Source], out: Buffer
) -> None:
    assert isinstance(op, prim.IotaOp)
    dimension = op.dimension_value
    element = prim.element_type_of(op.result.type)

    def body(bb: Builder, ivs: Index) -> None:
        lb.store(bb, out, ivs, _iota_element(bb, ivs[dimension], element))

    lb.nest(b, out.shape, body)


def _gather_element(
    lb: LoopBuilder, b: Builder, op: Operation, ivs: Index, read: ElementRead
) -> Element:
    """The operand's element at the result's axes before `axis` and after the
    index axes and, along `axis`, at the (normalized) index read at the
    index axes."""
    assert isinstance(op, prim.GatherOp)
    axis, indices = op.axis_value, op.operands[1]
    split = axis + len(prim.shape_of(indices))
    position = _normalized(lb, b, _as_index(b, read(indices, ivs[axis:split])), op.extent)
    return read(op.operands[0], [*ivs[:axis], position, *ivs[split:]])


def scatter_kernel(
    lb: LoopBuilder, b: Builder, op: Operation, operands: Sequence[Source], out: Buffer
) -> None:
    """scatter_add and scatter (see the module docstring)."""
    assert isinstance(op, prim.ScatterAddOp | prim.ScatterOp)
    source, indices, updates = operands
    accumulate = isinstance(op, prim.ScatterAddOp)
    axis, extent = op.axis_value, op.extent
    split = axis + len(indices.shape)
    _copy(lb, b, source, out)

    def row(bb: Builder, ivs: Index) -> None:
        position = _normalized(lb, bb, _load_index(lb, bb, indices, ivs[axis:]), extent)

        def element(b3: Builder, post: Index) -> None:
            target = [*ivs[:axis], position, *post]
            value = lb.load(b3, updates, [*ivs, *post])
            if accumulate:
                value = _add(ScalarBuilder(b3), lb.load(b3, out, target), value)
            lb.store(b3, out, target, value)

        lb.nest(bb, updates.shape[split:], element)

    lb.nest(b, updates.shape[:split], row)


def dynamic_slice_kernel(
    lb: LoopBuilder, b: Builder, op: Operation, operands: Sequence[Source], out: Buffer
) -> None:
    assert isinstance(op, prim.DynamicSliceOp)
    source, *starts = operands
    begins = _starts(lb, b, starts, source.shape, out.shape)

    def body(bb: Builder, ivs: Index) -> None:
        lb.store(bb, out, ivs, lb.load(bb, source, _offset(bb, ivs, begins)))

    lb.nest(b, out.shape, body)


def dynamic_update_slice_kernel(
    lb: LoopBuilder, b: Builder, op: Operation, operands: Sequence[Source], out: Buffer
) -> None:
    assert isinstance(op, prim.DynamicUpdateSliceOp)
    source, update, *starts = operands
    begins = _starts(lb, b, starts, source.shape, update.shape)
    _copy(lb, b, source, out)

    def body(bb: Builder, ivs: Index) -> None:
        lb.store(bb, out, _offset(bb, ivs, begins), lb.load(bb, update, ivs))

    lb.nest(b, update.shape, body)


INDEXING_KERNELS: dict[
    type[Operation], Callable[[LoopBuilder, Builder, Operation, Sequence[Source], Buffer], None]
] = {
    prim.IotaOp: iota_kernel,
    prim.ScatterAddOp: scatter_kernel,
    prim.ScatterOp: scatter_kernel,
    prim.DynamicSliceOp: dynamic_slice_kernel,
    prim.DynamicUpdateSliceOp: dynamic_update_slice_kernel,
}
"""The loop-nest kernel of each indexing op (merged into `kernels.KERNELS`)."""

INDEXING_MAPS: dict[type[Operation], IndexMap] = {prim.GatherOp: _gather_element}
"""The index map of gather (merged into `kernels.INDEX_MAPS`)."""
