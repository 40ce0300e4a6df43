"""The indexing ops (iota, gather, scatter_add, scatter, dynamic_slice,
dynamic_update_slice) compiled to native code (`indexing_kernels.py`) and
compared with the evaluator: float, complex, integer and boolean operands, i32
and i64 indices with negative, out-of-range and duplicate entries, 0-d and
empty tensors. Several ops share one compiled function to keep compilation
time down."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp, TensorType, f32, f64, i32, i64
from xdsl.ir import Block, Region

from tidu_mlir import ad
from tidu_mlir.dialects import cg, prim
from tidu_mlir.execution import executable

from .oracle import build, check, tensor

# along an axis of 4: 0, 3, 3 (clamped), 0 (wrapped, then clamped), 2, 2, 3 (wrapped)
INDICES = np.array([[0, 7, -1, -9, 2, 2, -1]])
DATA = [np.float64, np.float32, np.complex128]


def _data(shape: tuple[int, ...], dtype: type, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.uniform(-2.0, 2.0, shape)
    if np.issubdtype(dtype, np.complexfloating):
        values = values + 1j * rng.uniform(-2.0, 2.0, shape)
    return values.astype(dtype)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64], ids=["i32", "i64"])
@pytest.mark.parametrize("dtype", DATA, ids=lambda d: np.dtype(d).name)
def test_gather_and_scatters(dtype: type, index_dtype: type) -> None:
    """Along axis 0 (a data-dependent store position) and axis 1 (inside a loop)."""
    x, xt = _data((4, 3), dtype), _data((3, 4), dtype, 1)
    rows = INDICES.astype(index_dtype)  # shape (1, 7)
    u0, u1 = _data((1, 7, 3), dtype, 2), _data((3, 1, 7), dtype, 3)

    def body(x, i, u0, xt, u1):
        return [
            prim.GatherOp(x, i, 0),
            prim.GatherOp(xt, i, 1),
            prim.ScatterAddOp(x, i, u0, 0),
            prim.ScatterAddOp(xt, i, u1, 1),
            prim.ScatterOp(x, i, u0, 0),
            prim.ScatterOp(xt, i, u1, 1),
        ]

    arrays = [x, rows, u0, xt, u1]
    check(build([tensor(a.shape, a.dtype) for a in arrays], body), arrays)


def test_scatter_last_duplicate_wins_and_adds_accumulate() -> None:
    x = np.zeros(4)
    indices = np.array([1, -3, 3, 7, 0, 5], np.int64)  # 1, 1, 3, 3, 0, 3
    updates = np.arange(1.0, 7.0)

    def body(x, i, u):
        return [prim.ScatterOp(x, i, u, 0), prim.ScatterAddOp(x, i, u, 0)]

    types = [tensor((4,)), tensor((6,), np.int64), tensor((6,))]
    got = check(build(types, body), [x, indices, updates])
    np.testing.assert_array_equal(got[0], [5.0, 2.0, 0.0, 6.0])
    np.testing.assert_array_equal(got[1], [5.0, 3.0, 0.0, 13.0])


def test_integer_and_boolean_operands() -> None:
    """Gather and scatter of i64 and i1 tensors (indices are data of any kind)."""
    table = np.array([10, 20, 30], np.int64)
    flags = np.array([True, False, True])
    indices = np.array([[2, -1], [5, 0]], np.int32)

    def body(t, f, i):
        return [
            prim.GatherOp(t, i, 0),
            prim.GatherOp(f, i, 0),
            prim.ScatterAddOp(t, i, prim.GatherOp(t, i, 0), 0),
            prim.ScatterOp(f, i, prim.GatherOp(f, i, 0), 0),
        ]

    types = [tensor((3,), np.int64), tensor((3,), np.bool_), tensor((2, 2), np.int32)]
    got = check(build(types, body), [table, flags, indices])
    np.testing.assert_array_equal(got[0], [[30, 30], [30, 10]])


def test_zero_dimensional_and_empty() -> None:
    """A 0-d index, a scalar gathered into a 0-d result; empty index tensors."""

    def body(x, i, e):
        return [
            prim.GatherOp(x, i, 0),  # tensor<f64>
            prim.ScatterOp(x, i, prim.GatherOp(x, i, 0), 0),
            prim.GatherOp(x, e, 0),  # tensor<0xf64>
            prim.ScatterAddOp(x, e, prim.GatherOp(x, e, 0), 0),
        ]

    types = [tensor((5,)), tensor((), np.int64), tensor((0,), np.int32)]
    for index in (-2, 9):
        check(build(types, body), [np.arange(5.0), np.array(index), np.zeros(0, np.int32)])


STARTS = [(1, 2), (-3, 9), (4, -1)]


@pytest.mark.parametrize("dtype", DATA, ids=lambda d: np.dtype(d).name)
def test_dynamic_slice_and_update(dtype: type) -> None:
    x, u = _data((4, 5), dtype), _data((2, 3), dtype, 1)

    def body(x, u, s, t):
        return [
            prim.DynamicSliceOp(x, [s, t], [2, 3]),
            prim.DynamicUpdateSliceOp(x, u, [s, t]),
            prim.DynamicSliceOp(x, [t, s], [4, 0]),
        ]

    types = [
        tensor((4, 5), dtype),
        tensor((2, 3), dtype),
        tensor((), np.int32),
        tensor((), np.int64),
    ]
    function = build(types, body)
    for s, t in STARTS:
        check(function, [x, u, np.array(s, np.int32), np.array(t, np.int64)])


def test_dynamic_slice_of_a_scalar_and_iota() -> None:
    def body(x):
        return [
            prim.DynamicSliceOp(x, [], []),
            prim.DynamicUpdateSliceOp(x, prim.NegOp(x), []),
            prim.IotaOp(TensorType(f64, [2, 3]), 1),
            prim.IotaOp(TensorType(f32, [3, 2]), 0),
            prim.IotaOp(TensorType(i32, [4]), 0),
            prim.IotaOp(TensorType(i64, [2, 2, 3]), 2),
        ]

    got = check(build([tensor(())], body), [np.array(1.5)])
    np.testing.assert_array_equal(got[4], [0, 1, 2, 3])


def test_large_gather_runs_in_parallel_and_matches() -> None:
    """Big enough for `parallelize-loops` (the gather's stores are at its loop's
    induction variables); the scatter along axis 0 stays serial."""
    n, m = 512, 256
    x = _data((n, m), np.float64)
    rng = np.random.default_rng(5)
    indices = rng.integers(-2 * n, 2 * n, (n,))

    def body(x, i):
        gathered = prim.GatherOp(x, i, 0)
        return [gathered, prim.ScatterAddOp(x, i, gathered, 0)]

    check(build([tensor((n, m)), tensor((n,), np.int64)], body), [x, indices])


def _vjp_and_jvp(shape: tuple[int, ...]) -> list:
    """The JVP and VJP functions of a graph using every differentiable indexing op,
    with indices computed from a float constant (so scatter's transpose builds
    its mask of landed updates with iota, an integer scatter, gather and compare)."""
    block = Block()
    graph = cg.GraphOp("f", Region(block))
    module = ModuleOp([graph])
    x_in = cg.InputOp(cg.KeyAttr("x"), TensorType(f64, list(shape)))
    block.add_op(x_in)
    x = x_in.result
    ops: list = []

    def emit(op):
        ops.append(op)
        return op.results[0]

    floats = emit(prim.ConstantOp.from_value(np.array([3.0, -1.0, 9.0, 0.0, -2.0])))
    indices = emit(prim.ConvertOp(floats, i64))  # 3, 3 (wrapped), 3 (clamped), 0, 2
    start = emit(prim.ConstantOp.from_value(np.array(-4), TensorType(i32, [])))
    gathered = emit(prim.GatherOp(x, indices, 0))
    scattered = emit(prim.ScatterOp(x, indices, emit(prim.SinOp(gathered)), 0))
    added = emit(prim.ScatterAddOp(scattered, indices, gathered, 0))
    block_ = emit(prim.DynamicSliceOp(added, [start, start], [2, 2]))
    updated = emit(prim.DynamicUpdateSliceOp(added, emit(prim.ExpOp(block_)), [start, start]))
    block.add_ops(ops)
    block.add_op(cg.OutputOp([updated]))
    module.verify()
    linear = ad.linearize(graph, wrt=["x"])
    return [
        ad.materialize(linear.fragment, name="jvp"),
        ad.materialize(ad.linear_transpose(linear).fragment, name="vjp"),
    ]


def test_derived_graphs_compile() -> None:
    rng = np.random.default_rng(2)
    for func in _vjp_and_jvp((4, 3)):
        args = [rng.uniform(-1.5, 1.5, t.get_shape()) for t in func.function_type.inputs.data]
        compiled = executable(func, "llvm")(*args)
        expected = executable(func, "interp")(*args)
        assert len(compiled) == len(expected)
        for got, want in zip(compiled, expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_batched_graph_compiles() -> None:
    """The batching rules' index arithmetic (normalization, per-example offsets,
    flat block positions) on integer tensors, compiled: every input batched."""
    block = Block()
    graph = cg.GraphOp("f", Region(block))
    module = ModuleOp([graph])
    types = {
        "x": TensorType(f64, [4, 3]),
        "i": TensorType(i64, [5]),
        "s": TensorType(i32, []),
        "u": TensorType(f64, [2, 2]),
    }
    inputs = [cg.InputOp(cg.KeyAttr(k), t) for k, t in types.items()]
    block.add_ops(inputs)
    x, i, s, u = (op.result for op in inputs)
    ones = prim.ConstantOp.from_value(np.ones((4, 5)))
    ops = [
        prim.GatherOp(x, i, 1),
        prim.ScatterOp(x, i, ones, 1),
        prim.DynamicSliceOp(x, [s, s], [2, 2]),
        prim.DynamicUpdateSliceOp(x, u, [s, s]),
    ]
    block.add_ops([ones, *ops])
    block.add_op(cg.OutputOp([op.results[0] for op in ops]))
    module.verify()
    size = 3
    batched = ad.batch(graph, [True] * 4, size)
    func = ad.materialize(batched.graph, name="batched")
    rng = np.random.default_rng(4)
    args = [
        rng.uniform(-2.0, 2.0, (size, 4, 3)),
        rng.integers(-9, 9, (size, 5)),
        rng.integers(-5, 5, (size,)).astype(np.int32),
        rng.uniform(-2.0, 2.0, (size, 2, 2)),
    ]
    compiled = executable(func, "llvm")(*args)
    expected = executable(func, "interp")(*args)
    for got, want in zip(compiled, expected, strict=True):
        np.testing.assert_array_equal(got, want)
