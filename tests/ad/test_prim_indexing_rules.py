"""The AD rules of the indexing ops (iota, gather, scatter_add, scatter,
dynamic_slice, dynamic_update_slice) through `prim_harness.check_derivatives`:
JVP vs finite differences, the adjoint identity of the transpose, linearity of
every derived fragment, FoR and RoR. Indices and starts are integer constants
of the graph (integer inputs have no tangent), with negative, out-of-range and
duplicate entries; `_computed` hides them behind a conversion, so the rules
cannot read them as a constant."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import TensorType, f64, i32, i64
from xdsl.ir import Attribute, SSAValue

from tidu_mlir import ad
from tidu_mlir.dialects import prim

from .prim_harness import Emitter, build, check_derivatives, primal_env, run

RNG = np.random.default_rng(7)
ALL = [np.float64, np.complex128, np.float32, np.complex64]


def dtype_id(dtype: type) -> str:
    return np.dtype(dtype).name


def sample(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    values = RNG.uniform(-2.0, 2.0, shape)
    if np.issubdtype(dtype, np.complexfloating):
        values = values + 1j * RNG.uniform(-2.0, 2.0, shape)
    return values.astype(dtype)


def _indices(b: Emitter, values: object, element: Attribute = i64) -> SSAValue:
    array = np.asarray(values)
    return b(prim.ConstantOp.from_value(array, TensorType(element, list(array.shape))))


def _computed(b: Emitter, values: object, element: Attribute = i64) -> SSAValue:
    """Integer indices computed from a float constant (not a `prim.constant`)."""
    array = np.asarray(values, dtype=np.float64)
    floats = b(prim.ConstantOp.from_value(array, TensorType(f64, list(array.shape))))
    return b(prim.ConvertOp(floats, element))


def zeros(b: Emitter, like: np.ndarray) -> SSAValue:
    """A zero constant shaped like `like` (a fixed zero operand keeps an op linear)."""
    return b(prim.ConstantOp.from_value(np.zeros_like(like)))


DUPLICATES = [[0, -1, 7], [2, 3, -9]]  # -1 -> 3, 7 -> 3, -9 -> 0 along an axis of 4
UNIQUE = [[1, -1], [-9, 2]]  # 1, 3, 0, 2


@pytest.mark.parametrize("dtype", ALL, ids=dtype_id)
@pytest.mark.parametrize("axis", [0, 1])
def test_gather(axis: int, dtype: type) -> None:
    x = sample((4, 4, 2), dtype)
    check_derivatives(lambda b, x: b(prim.GatherOp(x, _indices(b, DUPLICATES), axis)), [x])


def test_gather_of_computed_indices() -> None:
    x = sample((4, 3), np.float64)
    check_derivatives(
        lambda b, x: b(prim.GatherOp(x, _computed(b, DUPLICATES, i32), 0)), [x], higher=False
    )


@pytest.mark.parametrize("dtype", ALL, ids=dtype_id)
def test_scatter_add(dtype: type) -> None:
    x, u = sample((2, 4), dtype), sample((2, 2, 3), dtype)

    def body(b: Emitter, x, u):
        return b(prim.ScatterAddOp(x, _indices(b, DUPLICATES, i32), u, 1))

    check_derivatives(body, [x, u])
    check_derivatives(
        lambda b, u: b(prim.ScatterAddOp(zeros(b, x), _indices(b, UNIQUE), u, 1)),
        [sample((2, 2, 2), dtype)],
    )


@pytest.mark.parametrize("dtype", ALL, ids=dtype_id)
@pytest.mark.parametrize("indices", [UNIQUE, DUPLICATES], ids=["unique", "duplicates"])
def test_scatter(indices: list[list[int]], dtype: type) -> None:
    """Exact with duplicate indices too: only the update that lands gets a cotangent."""
    x, u = sample((4, 3), dtype), sample((2, len(indices[0]), 3), dtype)
    check_derivatives(lambda b, x, u: b(prim.ScatterOp(x, _indices(b, indices), u, 0)), [x, u])
    check_derivatives(lambda b, x, u: b(prim.ScatterOp(x, _computed(b, indices), u, 0)), [x, u])


def test_scatter_transpose_masks_overwritten_updates() -> None:
    """u[0] and u[1] both go to position 1; only u[1] (the last) lands."""
    x, u = np.zeros(3), np.array([1.0, 2.0, 3.0])
    _, graph = build(lambda b, x, u: b(prim.ScatterOp(x, _indices(b, [1, 1, -1]), u, 0)), [x, u])
    lin = ad.linearize(graph, wrt=["x0", "x1"])
    vjp = ad.linear_transpose(lin)
    env = {**primal_env([x, u]), vjp.tangent_inputs[0][0]: np.array([10.0, 20.0, 30.0])}
    ct_x, ct_u = run(vjp.fragment, env)
    np.testing.assert_array_equal(ct_x, [10.0, 0.0, 0.0])
    np.testing.assert_array_equal(ct_u, [0.0, 20.0, 30.0])


def test_scatter_with_constant_unique_indices_needs_no_mask() -> None:
    x, u = np.zeros(4), np.ones(2)
    _, graph = build(lambda b, x, u: b(prim.ScatterOp(x, _indices(b, [3, -4]), u, 0)), [x, u])
    vjp = ad.linear_transpose(ad.linearize(graph, wrt=["x0", "x1"]))
    names = {op.name for op in vjp.fragment.body.walk()}
    assert "prim.gather" in names and "prim.iota" not in names and "prim.select" not in names


STARTS = [(1, 2), (-3, 9), (0, 0)]  # in range; clamped low and high; at the origin


@pytest.mark.parametrize("dtype", ALL, ids=dtype_id)
@pytest.mark.parametrize("starts", STARTS, ids=str)
def test_dynamic_slice(starts: tuple[int, int], dtype: type) -> None:
    x = sample((4, 5), dtype)

    def body(b: Emitter, x):
        begin = [_indices(b, starts[0], i32), _indices(b, starts[1])]
        return b(prim.DynamicSliceOp(x, begin, [2, 3]))

    check_derivatives(body, [x])


@pytest.mark.parametrize("dtype", ALL, ids=dtype_id)
@pytest.mark.parametrize("starts", STARTS, ids=str)
def test_dynamic_update_slice(starts: tuple[int, int], dtype: type) -> None:
    x, u = sample((4, 5), dtype), sample((2, 3), dtype)

    def body(b: Emitter, x, u):
        begin = [_indices(b, starts[0]), _indices(b, starts[1], i32)]
        return b(prim.DynamicUpdateSliceOp(x, u, begin))

    check_derivatives(body, [x, u])
    check_derivatives(
        lambda b, u: b(prim.DynamicUpdateSliceOp(zeros(b, x), u, [_indices(b, s) for s in starts])),
        [u],
    )


def test_iota_has_no_tangent() -> None:
    x = sample((2, 3), np.float64)
    _, graph = build(
        lambda b, x: [b(prim.AddOp(x, b(prim.IotaOp(TensorType(f64, [2, 3]), 1)))), x], [x]
    )
    lin = ad.linearize(graph, wrt=["x0"])
    assert all(t is not None for t in lin.tangent_outputs)
    check_derivatives(
        lambda b, x: b(prim.MulOp(x, b(prim.IotaOp(TensorType(f64, [2, 3]), 0)))), [x]
    )


def test_integer_gather_has_no_tangent() -> None:
    """Gathering from an integer table (e.g. positions) carries no tangent."""
    x = sample((3,), np.float64)

    def body(b: Emitter, x):
        table = b(prim.IotaOp(TensorType(i64, [4]), 0))
        picked = b(prim.GatherOp(table, _indices(b, [3, 0, -1]), 0))
        return [b(prim.GatherOp(x, picked, 0)), picked]

    _, graph = build(body, [x])
    lin = ad.linearize(graph, wrt=["x0"])
    assert lin.tangent_outputs[0] is not None and lin.tangent_outputs[1] is None
    check_derivatives(lambda b, x: body(b, x)[0], [x])


def test_linearity_predicates() -> None:
    x = sample((4,), np.float64)

    def body(b: Emitter, x):
        index = _indices(b, [1, 2])
        zero, two = b.const(0.0, x), b.const(2.0, x)
        start = _indices(b, 1)
        half = b(prim.SliceOp(x, [0], [2]))
        return [
            b(prim.ScatterAddOp(zero, index, half, 0)),  # fixed zero operand: linear
            b(prim.ScatterAddOp(two, index, half, 0)),  # fixed non-zero operand: affine
            b(prim.DynamicUpdateSliceOp(zero, half, [start])),
            b(prim.DynamicUpdateSliceOp(two, half, [start])),
        ]

    _, graph = build(body, [x])
    ops = [
        op
        for op in graph.body.walk()
        if isinstance(op, prim.ScatterAddOp | prim.DynamicUpdateSliceOp)
    ]
    masks = {
        prim.ScatterAddOp: [False, False, True],
        prim.DynamicUpdateSliceOp: [False, True, False],
    }
    linear = [op.is_linear_in(masks[type(op)]) for op in ops]
    ad.verify_linearity(ad.linearize(graph, wrt=["x0"]).fragment)
    assert linear == [True, False, True, False]
