"""Loop-nest kernels of the `prim` ops along one axis: argmax, argmin, cumsum, argsort.

Each works lane by lane: a lane is the 1-d run of the operand along the op's
`axis`, at one index of the other axes (`outer` before the axis, `inner` after).

* `argmax` / `argmin`: one nest over the result; per lane an `scf.for` along
  the axis carries the best value and its index (i64), starting from entry 0.
  An entry replaces the best when it compares strictly better, so ties keep
  the first index; for floats a NaN entry replaces a non-NaN best and nothing
  replaces a NaN best (`ugt`/`ult` and `ord`), so the first NaN wins, as in
  numpy.
* `cumsum`: along the last axis, a loop per lane carrying the running sum in a
  register; along another axis, row by row, `out[k] = out[k-1] + x[k]` over
  the contiguous inner axes (so the innermost loop vectorizes). Sums are
  sequential, without `reassoc`: the rounding is numpy's.
* `argsort`: a stable bottom-up merge sort of each lane, O(n log n) per lane
  of n entries (ceil(log2 n) passes of n steps), with scratch buffers of n
  i64 indices and 2n keys, allocated once for every lane. A lane starts as the
  indices 0..n-1 next to a copy of its keys; pass p merges adjacent sorted runs
  of 2^p entries, index and key together, from one copy of the lane into the
  other (the result lane with one key buffer, the index scratch with the
  other), so the keys are read in order rather than through the indices, and
  the passes end in the result when the first copy is put in the right one. A
  merge takes from the left run unless the right entry is strictly smaller
  (stability); floats order NaN after everything (`ult` and `ord`). Measured
  on one core: 1e6 f64 in about 1.3x numpy's time (numpy's stable sort is a
  radix/tim sort), 1000 lanes of 1000 in about 1.5x.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from xdsl.builder import Builder
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerType, i64
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint

from tidu_mlir.dialects import prim
from tidu_mlir.lowering.loops import Buffer, Index, LoopBuilder, Source
from tidu_mlir.lowering.scalar import Element, ScalarBuilder

Kernel: TypeAlias = Callable[[LoopBuilder, Builder, Operation, Sequence[Source], Buffer], None]
"""`kernels.Kernel` (this module is imported by `kernels`, so it does not import it)."""

ALIGNMENT = 64


def _insert(b: Builder, op: Operation) -> SSAValue:
    b.insert(op)
    return op.results[0]


def _lane_index(axis: int, ivs: Index, position: SSAValue) -> Index:
    """The operand index of entry `position` of the lane at `ivs` (the other axes)."""
    return [*ivs[:axis], position, *ivs[axis:]]


def _to_i64(b: Builder, value: SSAValue) -> SSAValue:
    return _insert(b, arith.IndexCastOp(value, i64))


def _to_index(b: Builder, value: SSAValue) -> SSAValue:
    return _insert(b, arith.IndexCastOp(value, IndexType()))


def _for(
    b: Builder,
    lower: SSAValue,
    upper: SSAValue,
    step: SSAValue,
    init: Sequence[SSAValue],
) -> tuple[scf.ForOp, Builder, SSAValue, list[SSAValue]]:
    """An `scf.for` from `lower` to `upper` carrying `init`: the loop, a builder
    at the end of its (still unterminated) body, its induction variable and
    carried values. The caller ends the body with `scf.yield`."""
    block = Block(arg_types=[IndexType(), *(v.type for v in init)])
    loop = scf.ForOp(lower, upper, step, list(init), block)
    b.insert(loop)
    return loop, Builder(InsertPoint.at_end(block)), block.args[0], list(block.args[1:])


# --------------------------------------------------------------------------
# argmax, argmin
# --------------------------------------------------------------------------


def _better(sb: ScalarBuilder, is_max: bool, x: SSAValue, best: SSAValue) -> SSAValue:
    """Whether `x` replaces `best`: strictly larger (smaller), or for floats a
    NaN `x` when `best` is not NaN."""
    if isinstance(x.type, IntegerType):
        return sb.compare("gt" if is_max else "lt", x, best)
    beyond = sb.emit(arith.CmpfOp(x, best, "ugt" if is_max else "ult"))
    best_is_number = sb.emit(arith.CmpfOp(best, best, "ord"))
    return sb.emit(arith.AndIOp(beyond, best_is_number))


def arg_reduce_kernel(
    lb: LoopBuilder, b: Builder, op: Operation, operands: Sequence[Source], out: Buffer
) -> None:
    assert isinstance(op, prim.ArgMaxOp | prim.ArgMinOp)
    (src,) = operands
    axis = op.axis_value
    extent = src.shape[axis]
    is_max = isinstance(op, prim.ArgMaxOp)

    def lane(bb: Builder, ivs: Index) -> None:
        sb = ScalarBuilder(bb)
        first = lb.load(bb, src, _lane_index(axis, ivs, lb.index(0)))
        assert isinstance(first, SSAValue)

        def step(b3: Builder, kv: Index, acc: list[SSAValue]) -> list[SSAValue]:
            best, best_index = acc
            position = lb.affine(b3, kv[0], 1, 1)
            x = lb.load(b3, src, _lane_index(axis, ivs, position))
            assert isinstance(x, SSAValue)
            s3 = ScalarBuilder(b3)
            take = _better(s3, is_max, x, best)
            return [s3.select(take, x, best), s3.select(take, _to_i64(b3, position), best_index)]

        _, index = lb.reduce(bb, [extent - 1], [first, sb.const(0, i64)], step)
        lb.store(bb, out, ivs, index)

    lb.nest(b, out.shape, lane)


# --------------------------------------------------------------------------
# cumsum
# --------------------------------------------------------------------------


def _add(sb: ScalarBuilder, a: Element, b: Element) -> Element:
    if isinstance(a, tuple):
        assert isinstance(b, tuple)
        return sb.c_add(a, b)
    assert isinstance(b, SSAValue)
    return sb.add(a, b)


def cumsum_kernel(
    lb: LoopBuilder, b: Builder, op: Operation, operands: Sequence[Source], out: Buffer
) -> None:
    assert isinstance(op, prim.CumsumOp)
    (src,) = operands
    axis, reverse = op.axis_value, op.is_reverse
    shape = src.shape
    extent = shape[axis]
    outer, inner = shape[:axis], shape[axis + 1 :]
    if extent == 0:
        return

    def position(bb: Builder, k: SSAValue) -> SSAValue:
        """Entry `k` of the scan order (from the end with `reverse`)."""
        return lb.affine(bb, k, -1, extent - 1) if reverse else k

    if not inner:
        element = prim.element_type_of(op.operand.type)
        real = prim.real_element_type(element)
        parts = 2 if prim.is_complex(element) else 1

        def lane(bb: Builder, ivs: Index) -> None:
            zero = [ScalarBuilder(bb).const(0, real)] * parts

            def step(b3: Builder, kv: Index, acc: list[SSAValue]) -> list[SSAValue]:
                index = [*ivs, position(b3, kv[0])]
                running: Element = (acc[0], acc[1]) if parts == 2 else acc[0]
                total = _add(ScalarBuilder(b3), running, lb.load(b3, src, index))
                lb.store(b3, out, index, total)
                return list(total) if isinstance(total, tuple) else [total]

            lb.reduce(bb, [extent], zero, step)

        lb.nest(b, outer, lane)
        return

    def rows(bb: Builder, ovs: Index) -> None:
        first = lb.index(extent - 1 if reverse else 0)

        def copy(b3: Builder, jvs: Index) -> None:
            index = [*ovs, first, *jvs]
            lb.store(b3, out, index, lb.load(b3, src, index))

        lb.nest(bb, inner, copy)

        def row(b3: Builder, kv: Index) -> None:
            previous = position(b3, kv[0])
            current = position(b3, lb.affine(b3, kv[0], 1, 1))

            def accumulate(b4: Builder, jvs: Index) -> None:
                index = [*ovs, current, *jvs]
                running = lb.load(b4, out, [*ovs, previous, *jvs])
                lb.store(b4, out, index, _add(ScalarBuilder(b4), running, lb.load(b4, src, index)))

            lb.nest(b3, inner, accumulate)

        lb.nest(bb, [extent - 1], row)

    lb.nest(b, outer, rows)


# --------------------------------------------------------------------------
# argsort
# --------------------------------------------------------------------------


def _before(sb: ScalarBuilder, a: SSAValue, b: SSAValue) -> SSAValue:
    """Whether key `a` sorts strictly before key `b` (floats: NaN after everything,
    NaNs equal to each other)."""
    if isinstance(a.type, IntegerType):
        return sb.compare("lt", a, b)
    below = sb.emit(arith.CmpfOp(a, b, "ult"))
    a_is_number = sb.emit(arith.CmpfOp(a, a, "ord"))
    return sb.emit(arith.AndIOp(below, a_is_number))


@dataclass(frozen=True)
class _Run:
    """One copy of a lane being sorted: its indices (i64) and the keys they point at,
    in the same order. The indices are in the lane of the result buffer (`lane`
    set: the entry's position goes at `axis`) or in a 1-d scratch buffer; the keys
    always in a 1-d scratch buffer, so every pass reads and writes them in order."""

    indices: Buffer
    keys: Buffer
    axis: int
    lane: Index | None

    def at(self, position: SSAValue) -> Index:
        return [position] if self.lane is None else _lane_index(self.axis, self.lane, position)


def _merge_pass(
    lb: LoopBuilder, b: Builder, extent: int, width: int, source: _Run, target: _Run, keys: bool
) -> None:
    """Merge each pair of adjacent sorted runs of `width` entries of `source` into
    `target` (stable: the left run first among equal keys); the keys are copied
    along unless `keys` is false (the last pass)."""
    last = lb.index(extent - 1)
    end = lb.index(extent)
    _, bb, start, _ = _for(b, lb.index(0), end, lb.index(2 * width), [])
    middle = _insert(bb, arith.MinUIOp(lb.affine(bb, start, 1, width), end))
    stop = _insert(bb, arith.MinUIOp(lb.affine(bb, start, 1, 2 * width), end))
    _, b3, k, (left, right) = _for(bb, start, stop, lb.index(1), [start, middle])
    sb = ScalarBuilder(b3)

    def entry(position: SSAValue) -> tuple[SSAValue, SSAValue]:
        """The index and key at `position` of `source` (clamped into the lane: an
        exhausted run's position is read but not used)."""
        clamped = _insert(b3, arith.MinUIOp(position, last))
        index = lb.load(b3, source.indices, source.at(clamped))
        key = lb.load(b3, source.keys, [clamped])
        assert isinstance(index, SSAValue) and isinstance(key, SSAValue)
        return index, key

    left_index, left_key = entry(left)
    right_index, right_key = entry(right)
    left_done = _insert(b3, arith.CmpiOp(left, middle, "uge"))
    right_open = _insert(b3, arith.CmpiOp(right, stop, "ult"))
    right_first = _insert(b3, arith.AndIOp(right_open, _before(sb, right_key, left_key)))
    take_right = _insert(b3, arith.OrIOp(left_done, right_first))
    lb.store(b3, target.indices, target.at(k), sb.select(take_right, right_index, left_index))
    if keys:
        lb.store(b3, target.keys, [k], sb.select(take_right, right_key, left_key))
    zero, one = lb.index(0), lb.index(1)
    next_left = _insert(b3, arith.AddiOp(left, sb.select(take_right, zero, one)))
    next_right = _insert(b3, arith.AddiOp(right, sb.select(take_right, one, zero)))
    b3.insert(scf.YieldOp(next_left, next_right))
    bb.insert(scf.YieldOp())


def argsort_kernel(
    lb: LoopBuilder, b: Builder, op: Operation, operands: Sequence[Source], out: Buffer
) -> None:
    assert isinstance(op, prim.ArgsortOp)
    (src,) = operands
    axis = op.axis_value
    shape = src.shape
    extent = shape[axis]
    if 0 in shape:
        return
    passes = (extent - 1).bit_length()  # ceil(log2(extent))
    if not passes:  # lanes of one entry
        lb.fill(b, out, ScalarBuilder(b).const(0, i64))
        return
    key_type = prim.element_type_of(op.operand.type)
    scratch: list[Buffer] = []
    for element in (i64, key_type, key_type):
        alloc = memref.AllocOp.get(element, ALIGNMENT, [extent])
        b.insert(alloc)
        scratch.append(Buffer(alloc.memref, False))
    spare_indices, *key_buffers = scratch

    def lane(bb: Builder, ivs: Index) -> None:
        runs = [
            _Run(out, key_buffers[0], axis, ivs),
            _Run(spare_indices, key_buffers[1], axis, None),
        ]
        # Start where an even number of passes leaves the result in `out`.
        current = passes % 2

        def start(b3: Builder, kv: Index) -> None:
            run = runs[current]
            lb.store(b3, run.indices, run.at(kv[0]), _to_i64(b3, kv[0]))
            lb.store(b3, run.keys, kv, lb.load(b3, src, _lane_index(axis, ivs, kv[0])))

        lb.nest(bb, [extent], start)
        for p in range(passes):
            target = 1 - current
            _merge_pass(lb, bb, extent, 1 << p, runs[current], runs[target], p < passes - 1)
            current = target

    lb.nest(b, shape[:axis] + shape[axis + 1 :], lane)
    for buffer in scratch:
        b.insert(memref.DeallocOp.get(buffer.ref))


ORDERING_KERNELS: dict[type[Operation], Kernel] = {
    prim.ArgMaxOp: arg_reduce_kernel,
    prim.ArgMinOp: arg_reduce_kernel,
    prim.CumsumOp: cumsum_kernel,
    prim.ArgsortOp: argsort_kernel,
}
"""The kernels of this module, merged into `kernels.KERNELS`."""
