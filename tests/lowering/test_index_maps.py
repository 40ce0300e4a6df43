"""Index maps (broadcast, transpose, slice, pad, gather, unit-axis reshape) computed
inside the loop nests of their readers (`kernels.INDEX_MAPS`,
`FunctionLowering._inlined_index_maps`): values against the evaluator, and
the nests and temporaries they save or keep."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import memref, scf
from xdsl.dialects.builtin import ModuleOp

from tidu_mlir.dialects import prim
from tidu_mlir.lowering import prim_to_loops
from tidu_mlir.lowering.bufferize import PrimBufferizePass

from .oracle import build, check, tensor


def lowered_counts(function) -> tuple[int, int]:
    """(loops, temporaries) of a copy of `function` after `prim-bufferize` and
    `convert-prim-to-loops`: its `scf.for` and `memref.alloc` ops."""
    module = ModuleOp([function.clone()])
    for lowering in (PrimBufferizePass(), prim_to_loops.ConvertPrimToLoopsPass()):
        lowering.apply(Context(), module)
    ops = list(module.walk())
    loops = sum(isinstance(op, scf.ForOp) for op in ops)
    return loops, sum(isinstance(op, memref.AllocOp) for op in ops)


def minors_chain(x, indices, y):
    """A determinant's minors, as JAX's `a[1:, kept]` then `moveaxis` writes
    them: slice, gather, transpose, slice, a reshape dropping an axis of
    size 1, then an elementwise product."""
    rows = prim.SliceOp(x, [1, 0], [5, 5])  # 4x5
    picked = prim.GatherOp(rows, indices, 1)  # 4x5x4
    moved = prim.TransposeOp(picked, [1, 0, 2])  # 5x4x4
    first = prim.SliceOp(moved, [0, 0, 0], [5, 1, 4])  # 5x1x4
    flat = prim.ReshapeOp(first, [5, 4])
    return prim.MulOp(flat, y)


def test_a_chain_of_index_maps_is_computed_in_its_readers_nest() -> None:
    """One 2-d nest reads `x` and the indices where the product needs them:
    no nest and no temporary for the four index maps and the reshape (each
    had its own nest and buffer). The indices include negative ones."""
    function = build([tensor((5, 5)), tensor((5, 4), np.int64), tensor((5, 4))], minors_chain)
    assert lowered_counts(function) == (2, 0)
    check(function)
    check(function, seed=1)


def test_an_index_map_a_reduction_reads_is_computed_where_it_loads() -> None:
    """A transpose read by a partial sum (a kernel loading each element once)
    and by a product: both compute it where they read it, no temporary."""

    def body(x, y):
        moved = prim.TransposeOp(x, [1, 0])
        return [prim.ReduceSumOp(moved, [0]), prim.MulOp(moved, y)]

    function = build([tensor((6, 5)), tensor((5, 6))], body)
    # the product (2), the sum: init (1) + accumulation (2)
    assert lowered_counts(function) == (2 + 1 + 2, 0)
    check(function)


def test_an_index_map_a_matrix_product_reads_is_stored() -> None:
    """A small matrix product's loops read each operand element once per
    column: a transpose it reads is stored once (by the nest the elementwise
    reader joins), not recomputed on every read."""

    def body(x, y):
        moved = prim.TransposeOp(x, [1, 0])
        return [prim.DotGeneralOp(moved, y, lhs_contract=[1], rhs_contract=[0]), prim.SinOp(moved)]

    function = build([tensor((6, 5)), tensor((6, 4))], body)
    assert lowered_counts(function)[1] == 1  # the transpose's buffer
    check(function)


def test_a_transpose_of_a_value_computed_in_the_same_nest_waits_for_it() -> None:
    """`y + y.T` for `y = exp(x)`: the transpose reads `y` at other indices, so
    `y` is stored by a nest of its own before the sum's nest reads it (one
    nest computing both would read elements of `y` not yet stored)."""

    def body(x):
        y = prim.ExpOp(x)
        return prim.AddOp(y, prim.TransposeOp(y, [1, 0]))

    function = build([tensor((7, 7))], body)
    assert lowered_counts(function)[0] == 4
    check(function)


def transposed_twice(n: int):
    """`x.T` read by a sum over an axis (a kernel) and by `sin(x.T)` plus
    that sum (a nest after the kernel)."""

    def body(x):
        moved = prim.TransposeOp(x, [1, 0])
        sums = prim.ReduceSumOp(moved, [0])
        spread = prim.BroadcastInDimOp(sums, [1], tensor((n, n)))
        return prim.AddOp(prim.SinOp(moved), spread)

    return build([tensor((n, n))], body)


def test_a_large_index_map_read_by_two_loops_is_stored_once() -> None:
    """Up to `INLINED_MAX_ELEMENTS` elements the transpose is recomputed by
    the sum's loops and by the nest after it; above, a nest of its own
    stores it (with `sin`, which joins it) before the sum reads it."""
    side = int(np.sqrt(prim_to_loops.INLINED_MAX_ELEMENTS))
    small, large = transposed_twice(side), transposed_twice(side + 1)
    (small_loops, small_buffers), (large_loops, large_buffers) = map(lowered_counts, (small, large))
    assert (large_loops, large_buffers) == (small_loops + 2, small_buffers + 2)
    check(small)
    check(large)


def test_fused_readers_of_an_index_map_share_its_nest() -> None:
    """A broadcast read by two products: they join its cluster (one nest),
    as they would not if each computed it."""

    def body(b, x, y):
        spread = prim.BroadcastInDimOp(b, [1], tensor((6, 5)))
        return [prim.MulOp(spread, x), prim.MulOp(spread, y)]

    function = build([tensor((5,)), tensor((6, 5)), tensor((6, 5))], body)
    assert lowered_counts(function) == (2, 0)
    check(function)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_pads_summed_as_reverse_mode_writes_them_are_one_nest(dtype: type) -> None:
    """The adjoint of slices: their cotangents padded back to the whole shape
    (edges and interior) and added. One nest selects each element or zero;
    before, each pad filled a temporary with zeros and copied its operand in."""

    def body(a, b):
        edges = prim.PadOp(a, [1, 0], [2, 1], [0, 0])  # 3x3 -> 6x4
        strided = prim.PadOp(b, [1, 0], [0, 1], [1, 1])  # 3x2 -> 6x4
        return prim.AddOp(edges, strided)

    function = build([tensor((3, 3), dtype), tensor((3, 2), dtype)], body)
    assert lowered_counts(function) == (2, 0)
    check(function)


def test_a_pad_of_an_empty_array_is_zeros() -> None:
    function = build([tensor((0, 3))], lambda a: prim.ExpOp(prim.PadOp(a, [1, 0], [1, 0])))
    [result] = check(function)
    np.testing.assert_array_equal(result, np.ones((2, 3)))


def test_a_gathers_adjoint_reads_its_zeros_and_updates_where_it_loads() -> None:
    """Reverse mode's scatter_add into broadcast zeros of updates it
    transposes: the scatter's copy nest and update nest read both index maps
    in place (duplicate indices accumulate); no temporary."""

    def body(updates, indices):
        zeros = prim.BroadcastInDimOp(prim.ConstantOp.from_value(0.0), [], tensor((4, 5)))
        moved = prim.TransposeOp(updates, [1, 0, 2])  # 5x4x4 -> 4x5x4
        return prim.ScatterAddOp(zeros, indices, moved, 1)

    function = build([tensor((5, 4, 4)), tensor((5, 4), np.int64)], body)
    assert lowered_counts(function)[1] == 0
    check(function)
