"""Fusion structure, BLAS dispatch, runtime checks, cache and derived graphs."""

from __future__ import annotations

import re
import threading

import numpy as np
import pytest
from xdsl.dialects import memref, scf
from xdsl.dialects.builtin import ModuleOp

from tidu_mlir.dialects import prim
from tidu_mlir.lowering.lower_to_llvm import lower_prim_to_loops
from tidu_mlir.lowering.runtime import compile_function

from .oracle import build, check, tensor

T = tensor((6, 5))
V = tensor((5,))


def loop_count(function) -> int:
    """Number of scf.for ops after lowering a copy of `function` to loops."""
    module = ModuleOp([function.clone()])
    lower_prim_to_loops(module)
    return sum(isinstance(op, scf.ForOp) for op in module.walk())


def chain(x, y, b):
    bb = prim.BroadcastInDimOp(b, [1], T)
    e = prim.ExpOp(prim.MulOp(x, y))
    u = prim.MulOp(prim.AddOp(e, bb), e)
    return [prim.TanhOp(u), prim.SinOp(u)]


def test_elementwise_dag_is_one_nest() -> None:
    function = build([T, T, V], chain)
    assert loop_count(function) == 2  # one 2-d nest
    check(function)


def test_reduction_between_elementwise_ops_splits_the_nest() -> None:
    def body(x):
        e = prim.ExpOp(x)
        s = prim.ReduceSumOp(e, [0])
        back = prim.BroadcastInDimOp(s, [1], T)
        return prim.DivOp(e, back)  # softmax over axis 0

    function = build([T], body)
    # exp nest (2), reduction: init (1) + accumulation (2), division nest (2)
    assert loop_count(function) == 2 + 1 + 2 + 2
    check(function)


@pytest.mark.parametrize(
    ("reduction", "dtype"),
    [
        (prim.ReduceSumOp, np.float64),
        (prim.ReduceMaxOp, np.float64),
        (prim.ReduceSumOp, np.float32),
        (prim.ReduceSumOp, np.complex128),
        (prim.ReduceSumOp, np.int64),
        (prim.ReduceMaxOp, np.int32),
    ],
)
def test_whole_reductions_are_folded_by_the_nest_computing_their_operand(
    reduction: type[prim.ReduceSumOp | prim.ReduceMaxOp], dtype: type
) -> None:
    """`sum(x * y)` and `max(x * y)` over every axis are accumulated by the 2-d nest
    of the product (its value stored too, as it is returned): one nest, where
    a separate reduction kernel took a second one."""
    t = tensor((6, 5), dtype)

    def body(x, y):
        product = prim.MulOp(x, y)
        return [product, reduction(product, [0, 1])]

    if dtype == np.complex128 and reduction is prim.ReduceMaxOp:
        pytest.skip("complex numbers have no max")
    function = build([t, t], body)
    assert loop_count(function) == 2
    check(function)


def test_two_reductions_of_one_nest_and_a_reader_of_one_of_them() -> None:
    """Two whole reductions folded by the nest of their operands; the op reading
    one of them (a softmax-like division) runs in a nest after it, not in it."""

    def body(x):
        e = prim.ExpOp(x)
        total, peak = prim.ReduceSumOp(e, [0, 1]), prim.ReduceMaxOp(e, [0, 1])
        return prim.DivOp(e, prim.BroadcastInDimOp(total, [], T)), peak

    function = build([T], body)
    assert loop_count(function) == 2 + 2  # exp with both folds, then the division
    check(function)


def copy_count(function) -> int:
    """Number of memref.copy ops after lowering a copy of `function` to loops."""
    module = ModuleOp([function.clone()])
    lower_prim_to_loops(module)
    return sum(isinstance(op, memref.CopyOp) for op in module.walk())


def test_returned_reshape_is_computed_in_the_output_buffer() -> None:
    """`reshape(reshape(exp(x)))` returned: exp writes into a view of the output,
    no copy; a value returned both directly and reshaped is copied once."""

    def reshaped_twice(x):
        return prim.ReshapeOp(prim.ReshapeOp(prim.ExpOp(x), (5, 6, 1)), (30,))

    function = build([T], reshaped_twice)
    assert copy_count(function) == 0
    check(function)
    both = build([T], lambda x: [e := prim.ExpOp(x), prim.ReshapeOp(e, (30,))])
    assert copy_count(both) == 1
    check(both)
    of_input = build([T], lambda x: prim.ReshapeOp(x, (30,)))
    assert copy_count(of_input) == 1
    check(of_input)


def test_value_returned_twice_and_input_returned() -> None:
    check(build([T], lambda x: [prim.ExpOp(x), x, prim.ExpOp(x)]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_dot_general_uses_blas(dtype) -> None:
    a, b = tensor((64, 48), dtype), tensor((64, 40), dtype)
    function = build(
        [a, b], lambda x, y: prim.DotGeneralOp(x, y, lhs_contract=[0], rhs_contract=[0])
    )
    check(function)
    assert "cblas" in compile_function(function).llvm_ir


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_outer_products_store_each_element_once(dtype) -> None:
    """A dot_general contracting one element (batched [8,1,1] x [8,1,5], the
    shape of a per-example gradient) is one loop nest storing each product:
    no zero-fill nest before it, no read of the output inside it."""

    def outer(x, y):
        return prim.DotGeneralOp(
            x, y, lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[1]
        )

    function = build([tensor((8, 1, 1), dtype), tensor((8, 1, 5), dtype)], outer)
    assert loop_count(function) == 4  # batch, lhs free, contracted (extent 1), rhs free
    check(function)
    contracting = build(
        [tensor((8, 1, 3), dtype), tensor((8, 3, 5), dtype)],
        lambda x, y: prim.DotGeneralOp(
            x, y, lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[1]
        ),
    )
    assert loop_count(contracting) == 3 + 4  # zero fill, then the accumulation
    check(contracting)


def test_argument_errors_name_the_argument() -> None:
    compiled = compile_function(build([V, V], lambda x, y: prim.AddOp(x, y)))
    good = np.ones(5)
    with pytest.raises(TypeError, match="argument 1"):
        compiled(good, np.ones(5, np.float32))
    with pytest.raises(ValueError, match="argument 0"):
        compiled(np.ones(4), good)
    with pytest.raises(ValueError, match="contiguous"):
        compiled(np.ones(10)[::2], good)
    with pytest.raises(TypeError, match="takes 2 inputs"):
        compiled(good)


def test_cache_and_threads() -> None:
    first = compile_function(build([V], lambda x: prim.SinOp(x)))
    assert compile_function(build([V], lambda x: prim.SinOp(x))) is first
    x = np.linspace(0, 1, 5)
    results: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda: results.append(first(x))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(np.allclose(r, np.sin(x)) for r in results)


def test_long_chain_is_cut_into_bounded_loops() -> None:
    """A chain longer than `MAX_CLUSTER_OPS` becomes several loops (bounded LLVM time)."""
    from tidu_mlir.lowering.fusion import MAX_CLUSTER_OPS

    def long_chain(x):
        for _ in range(MAX_CLUSTER_OPS + 10):
            x = prim.SinOp(x)
        return x

    function = build([V], long_chain)
    assert loop_count(function) == 2
    x = np.linspace(0, 1, 5)
    expected = x
    for _ in range(MAX_CLUSTER_OPS + 10):
        expected = np.sin(expected)
    np.testing.assert_allclose(compile_function(function)(x), expected, rtol=1e-12)


def test_loop_bodies_of_a_long_mixed_chain_are_bounded() -> None:
    """A chain of 3 x `MAX_CLUSTER_OPS` + 7 ops becomes 4 loop nests, each of at
    most 2 ops per fused op (the op, its loads and stores), whatever the chain's
    length; the result matches numpy."""
    from tidu_mlir.lowering.fusion import MAX_CLUSTER_OPS

    n = 3 * MAX_CLUSTER_OPS + 7
    unary = {prim.SinOp: np.sin, prim.TanhOp: np.tanh}
    binary = {prim.AddOp: np.add, prim.MulOp: np.multiply}
    kinds = [prim.SinOp, prim.AddOp, prim.MulOp, prim.TanhOp]

    def long_chain(x, y):
        for i in range(n):
            kind = kinds[i % 4]
            x = kind(x) if kind in unary else kind(x, y)
        return x

    function = build([V, V], long_chain)
    module = ModuleOp([function.clone()])
    lower_prim_to_loops(module)
    loops = [op for op in module.walk() if isinstance(op, scf.ForOp)]
    assert len(loops) == 4
    assert max(sum(1 for _ in loop.walk()) for loop in loops) <= 2 * MAX_CLUSTER_OPS
    x, y = np.linspace(-1, 1, 5), np.linspace(0.5, 1.5, 5)
    expected = x
    for i in range(n):
        kind = kinds[i % 4]
        expected = unary[kind](expected) if kind in unary else binary[kind](expected, y)
    np.testing.assert_allclose(compile_function(function)(x, y), expected, rtol=1e-12)


def test_tanh_kernel_is_inlined_and_vectorized() -> None:
    """tanh is one private kernel function per module; O3 inlines it into the loop."""
    compiled = compile_function(build([tensor((64,))], lambda x: prim.TanhOp(prim.TanhOp(x))))
    body = compiled.llvm_ir.split("define void")[1].split("\n}")[0]
    assert "__tidu_tanh" not in body
    assert re.search(r"<(?:2|4|8) x double>", body)  # the host's vector width
    x = np.linspace(-30, 30, 64)
    np.testing.assert_allclose(compiled(x), np.tanh(np.tanh(x)), rtol=4e-16, atol=0)
