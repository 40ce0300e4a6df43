"""The indexing ops of `prim` (tidu_mlir/dialects/prim/indexing.py): verifier
messages, constructors, the references against hand-computed numpy (negative,
out-of-range and duplicate indices, 0-d and empty cases), the adjoint pairs on
the references, the shapes of the batching rules (every batched combination
is checked against a loop in test_prim_batching.py), and JAX as an oracle
where it is installed."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest
from xdsl.dialects.builtin import ComplexType, TensorType, f32, f64, i1, i32, i64
from xdsl.ir import Attribute, Block, Operation
from xdsl.utils.exceptions import VerifyException

from tidu_mlir.dialects import prim

from .test_prim_batching import SIZE, Sample, _Context, _run, batch_and_compare

RNG = np.random.default_rng(11)


def _t(shape: Sequence[int], element: Attribute = f64) -> TensorType:
    return TensorType(element, list(shape))


def _args(*types: Attribute) -> Sequence:
    return Block(arg_types=list(types)).args


def _wrap_clip(indices: np.ndarray, n: int) -> np.ndarray:
    """Hand-written: numpy's wrap of negatives, then np.take's mode='clip'."""
    indices = np.asarray(indices)
    return np.where(indices < 0, indices + n, indices)


# --------------------------------------------------------------------------
# Verifier
# --------------------------------------------------------------------------

X = _t([3, 4])
I5 = _t([5], i64)
S = _t([], i64)


def _gather_with_result(result: TensorType) -> Callable[[], Operation]:
    def make() -> Operation:
        x, i = _args(X, I5)
        return prim.GatherOp.create(
            operands=[x, i], result_types=[result], properties=prim.GatherOp(x, i, 1).properties
        )

    return make


def _gather(x: TensorType, i: TensorType, axis: int) -> Operation:
    operand, indices = _args(x, i)
    return prim.GatherOp(operand, indices, axis)


def _scatter(cls: type[prim.ScatterBase], x: TensorType, i: TensorType, u: TensorType) -> Operation:
    operand, indices, updates = _args(x, i, u)
    return cls(operand, indices, updates, 1)


def _scatter_with(updates: TensorType, cls: type = prim.ScatterAddOp) -> Callable[[], Operation]:
    return lambda: _scatter(cls, X, I5, updates)


def _update(update: TensorType, starts: Sequence[TensorType]) -> Operation:
    operand, value = _args(X, update)
    return prim.DynamicUpdateSliceOp(operand, value, _args(*starts))


ERRORS: dict[str, tuple[Callable[[], Operation], str]] = {
    "float indices": (
        lambda: _gather(X, _t([5]), 1),
        r"indices must have an? integer element type \(i32, i64\), got f64",
    ),
    "bool indices": (
        lambda: _gather(X, _t([5], i1), 0),
        "indices must have an? integer element type",
    ),
    "gather result shape": (
        _gather_with_result(_t([3, 4])),
        r"result shape \[3, 4\] does not match expected \[3, 5\]",
    ),
    "gather result element": (
        _gather_with_result(_t([3, 5], f32)),
        "result element type f32 must equal f64",
    ),
    "gather from an empty axis": (
        lambda: _gather(_t([3, 0]), I5, 1),
        "axis 1 of the operand has extent 0: no position for 5 indices",
    ),
    "scatter_add updates shape": (
        _scatter_with(_t([3, 4])),
        r"updates shape \[3, 4\] does not match expected \[3, 5\]",
    ),
    "scatter updates element": (
        _scatter_with(_t([3, 5], f32), prim.ScatterOp),
        "updates element type f32 must equal f64",
    ),
    "scatter float indices": (
        lambda: _scatter(prim.ScatterOp, X, _t([5]), _t([3, 5])),
        "indices must have an? integer element type",
    ),
    "dynamic_slice 1-d start": (
        lambda: prim.DynamicSliceOp(_args(X)[0], _args(_t([1], i32), S), [2, 2]),
        r"start #0 must be a 0-d tensor, got tensor<1xi32>",
    ),
    "dynamic_slice float start": (
        lambda: prim.DynamicSliceOp(_args(X)[0], _args(S, _t([])), [2, 2]),
        r"start #1 must have an? integer element type \(i32, i64\), got f64",
    ),
    "dynamic_slice start count": (
        lambda: prim.DynamicSliceOp(_args(X)[0], _args(S), [2, 2]),
        r"dynamic_slice has 1 starts, expected 2 \(the operand's rank\)",
    ),
    "dynamic_slice size": (
        lambda: prim.DynamicSliceOp(_args(X)[0], _args(S, S), [2, 5]),
        r"size 5 of axis 1 is outside \[0, 4\]",
    ),
    "dynamic_slice sizes count": (
        lambda: prim.DynamicSliceOp.create(
            operands=[*_args(X, S, S)],
            result_types=[_t([2])],
            properties={"sizes": prim.i64_array([2])},
        ),
        r"sizes \[2\] has 1 entries, expected 2",
    ),
    "dynamic_update_slice too big": (
        lambda: _update(_t([4, 4]), [S, S]),
        r"update shape \[4, 4\] does not fit in operand shape \[3, 4\]",
    ),
    "dynamic_update_slice rank": (
        lambda: _update(_t([2]), [S, S]),
        r"update shape \[2\] does not fit",
    ),
    "dynamic_update_slice element": (
        lambda: _update(_t([2, 2], f32), [S, S]),
        "update element type f32 must equal f64",
    ),
    "dynamic_update_slice 1-d start": (
        lambda: _update(_t([2, 2]), [S, _t([2], i64)]),
        r"start #1 must be a 0-d tensor",
    ),
    "iota dimension": (
        lambda: prim.IotaOp(_t([2, 3], i32), 2),
        "iota dimension 2 is out of range for rank 2",
    ),
    "iota complex": (
        lambda: prim.IotaOp(_t([2], ComplexType(f64)), 0),
        "result must have a real or integer element type",
    ),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_verifier_errors(name: str) -> None:
    make, message = ERRORS[name]
    with pytest.raises(VerifyException, match=message):
        make().verify()


@pytest.mark.parametrize("axis", [-1, 2])
def test_constructors_reject_a_bad_axis(axis: int) -> None:
    x, i, u = _args(X, I5, _t([3, 5]))
    with pytest.raises(VerifyException, match=f"axis {axis} is out of range for rank 2"):
        prim.GatherOp(x, i, axis)
    with pytest.raises(VerifyException, match=f"axis {axis} is out of range for rank 2"):
        prim.ScatterAddOp(x, i, u, axis).verify()


def test_constructors_infer_result_types() -> None:
    x, i, s = _args(_t([3, 4], ComplexType(f32)), _t([2, 5], i32), S)
    assert prim.GatherOp(x, i, 1).result.type == _t([3, 2, 5], ComplexType(f32))
    assert prim.GatherOp(x, i, 0).result.type == _t([2, 5, 4], ComplexType(f32))
    assert prim.DynamicSliceOp(x, [s, s], [1, 3]).result.type == _t([1, 3], ComplexType(f32))
    assert prim.DynamicUpdateSliceOp(x, x, [s, s]).result.type == x.type


# --------------------------------------------------------------------------
# References against hand-computed numpy
# --------------------------------------------------------------------------


def test_normalize_indices() -> None:
    indices = np.array([0, 3, 4, 9, -1, -4, -5, -100], dtype=np.int32)
    np.testing.assert_array_equal(prim.normalize_indices(indices, 4), [0, 3, 3, 3, 3, 0, 0, 0])
    assert prim.normalize_indices(np.array([], np.int64), 0).shape == (0,)


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("index_shape", [(), (4,), (2, 3)], ids=str)
def test_gather_reference(axis: int, index_shape: tuple[int, ...]) -> None:
    x = RNG.standard_normal((4, 5, 3))
    n = x.shape[axis]
    indices = RNG.integers(-2 * n, 2 * n, index_shape)
    expected = np.take(x, _wrap_clip(indices, n), axis=axis, mode="clip")
    np.testing.assert_array_equal(prim.GatherOp.reference(x, indices, axis=axis), expected)


def test_gather_reference_by_hand() -> None:
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    got = prim.GatherOp.reference(x, np.array([[2, -1], [-3, 7]]), axis=1)
    np.testing.assert_array_equal(got, [[[3.0, 3.0], [1.0, 3.0]], [[6.0, 6.0], [4.0, 6.0]]])
    empty = prim.GatherOp.reference(np.zeros((0, 3)), np.zeros(0, np.int64), axis=0)
    assert empty.shape == (0, 3)


@pytest.mark.parametrize("axis", [0, 1])
def test_scatter_add_reference(axis: int) -> None:
    x = RNG.standard_normal((4, 3))
    indices = np.array([[0, -1, 9], [-9, 1, 1]])
    n = x.shape[axis]
    updates = RNG.standard_normal(x.shape[:axis] + indices.shape + x.shape[axis + 1 :])
    positions = np.clip(_wrap_clip(indices, n), 0, n - 1)
    expected = x.copy()
    for a in np.ndindex(x.shape[:axis]):
        for j in np.ndindex(indices.shape):
            for b in np.ndindex(x.shape[axis + 1 :]):
                expected[(*a, positions[j], *b)] += updates[(*a, *j, *b)]
    np.testing.assert_allclose(
        prim.ScatterAddOp.reference(x, indices, updates, axis=axis), expected
    )


def test_scatter_reference_last_duplicate_wins() -> None:
    x = np.zeros((4, 2))
    indices = np.array([1, -3, 3, 7, 0])  # 1, 1, 3, 3, 0
    updates = np.arange(10.0).reshape(5, 2)
    got = prim.ScatterOp.reference(x, indices, updates, axis=0)
    np.testing.assert_array_equal(got, [[8.0, 9.0], [2.0, 3.0], [0.0, 0.0], [6.0, 7.0]])
    got = prim.ScatterOp.reference(x.T, indices, updates.T, axis=1)
    np.testing.assert_array_equal(got.T, [[8.0, 9.0], [2.0, 3.0], [0.0, 0.0], [6.0, 7.0]])


def test_scatter_references_keep_the_dtype_and_leave_the_operand() -> None:
    x = np.arange(4, dtype=np.int32)
    got = prim.ScatterAddOp.reference(x, np.array([0, 0]), np.array([5, 5], np.int32), axis=0)
    assert got.dtype == np.int32 and list(got) == [10, 1, 2, 3] and list(x) == [0, 1, 2, 3]
    scalar = prim.ScatterOp.reference(x, np.array(-1), np.array(9, np.int32), axis=0)
    assert list(scalar) == [0, 1, 2, 9]


@pytest.mark.parametrize(
    ("starts", "expected_begin"),
    [((1, 2), (1, 2)), ((-3, 9), (0, 2)), ((5, -1), (2, 0)), ((0, 0), (0, 0))],
    ids=str,
)
def test_dynamic_slice_references(starts: tuple[int, int], expected_begin: tuple[int, int]) -> None:
    x = np.arange(20.0).reshape(4, 5)
    begin0, begin1 = expected_begin
    starts_arrays = [np.array(starts[0], np.int32), np.array(starts[1], np.int64)]
    got = prim.DynamicSliceOp.reference(x, *starts_arrays, sizes=(2, 3))
    np.testing.assert_array_equal(got, x[begin0 : begin0 + 2, begin1 : begin1 + 3])
    update = -np.ones((2, 3))
    expected = x.copy()
    expected[begin0 : begin0 + 2, begin1 : begin1 + 3] = update
    got = prim.DynamicUpdateSliceOp.reference(x, update, *starts_arrays)
    np.testing.assert_array_equal(got, expected)


def test_dynamic_slice_edge_cases() -> None:
    scalar = np.array(2.5)
    assert prim.DynamicSliceOp.reference(scalar, sizes=()) == 2.5
    assert prim.DynamicUpdateSliceOp.reference(scalar, np.array(1.0)) == 1.0
    x = np.arange(3.0)
    assert prim.DynamicSliceOp.reference(x, np.array(2), sizes=(0,)).shape == (0,)
    np.testing.assert_array_equal(prim.DynamicSliceOp.reference(x, np.array(-7), sizes=(3,)), x)


def test_iota_reference() -> None:
    got = prim.IotaOp.reference(shape=(2, 3), dimension=1, dtype=np.dtype(np.int32))
    np.testing.assert_array_equal(got, [[0, 1, 2], [0, 1, 2]])
    assert got.dtype == np.int32
    got = prim.IotaOp.reference(shape=(2, 3), dimension=0, dtype=np.dtype(np.float64))
    np.testing.assert_array_equal(got, [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])


# --------------------------------------------------------------------------
# The adjoint pairs, on the references
# --------------------------------------------------------------------------


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.real(np.vdot(a, b)))


def test_gather_and_scatter_add_are_adjoint() -> None:
    x = RNG.standard_normal((4, 5)) + 1j * RNG.standard_normal((4, 5))
    indices = RNG.integers(-8, 8, (3, 2))  # duplicates, negative and clamped ones
    y = RNG.standard_normal((4, 3, 2)) + 1j * RNG.standard_normal((4, 3, 2))
    lhs = _dot(prim.GatherOp.reference(x, indices, axis=1), y)
    rhs = _dot(x, prim.ScatterAddOp.reference(np.zeros_like(x), indices, y, axis=1))
    assert lhs == pytest.approx(rhs, rel=1e-12)


def test_dynamic_slice_and_update_are_adjoint() -> None:
    x, y = RNG.standard_normal((4, 5)), RNG.standard_normal((2, 3))
    for starts in [(1, 1), (-2, 7), (3, 3)]:
        s = [np.array(v) for v in starts]
        lhs = _dot(prim.DynamicSliceOp.reference(x, *s, sizes=(2, 3)), y)
        rhs = _dot(x, prim.DynamicUpdateSliceOp.reference(np.zeros_like(x), y, *s))
        assert lhs == pytest.approx(rhs, rel=1e-12)


# --------------------------------------------------------------------------
# Batching: the shapes of the rules (values: test_prim_batching.py)
# --------------------------------------------------------------------------


def _names(ops: Sequence[Operation]) -> list[str]:
    return [op.name for op in ops]


def test_gather_with_batched_operand_is_one_gather() -> None:
    sample = Sample(lambda x, i: prim.GatherOp(x, i, 1), [("f64", (2, 4)), ("i32", (3,))])
    (op,) = batch_and_compare(sample, (True, False))
    assert isinstance(op, prim.GatherOp) and op.axis_value == 2


def test_gather_with_batched_indices_moves_the_batch_axis() -> None:
    sample = Sample(lambda x, i: prim.GatherOp(x, i, 1), [("f64", (2, 4)), ("i32", (3,))])
    assert _names(batch_and_compare(sample, (False, True))) == ["prim.gather", "prim.transpose"]


def test_batched_starts_become_a_gather() -> None:
    sample = Sample(lambda x, s: prim.DynamicSliceOp(x, [s], [2]), [("f64", (5,)), ("i64", ())])
    ops = batch_and_compare(sample, (False, True))
    assert _names(ops)[-1] == "prim.gather"
    op = batch_and_compare(sample, (True, False))[-1]
    assert isinstance(op, prim.DynamicSliceOp) and op.size_values() == (SIZE, 2)


@pytest.mark.parametrize("seed", range(4))
def test_batched_scatter_keeps_the_last_duplicate(seed: int) -> None:
    """Indices drawn from [-6, 6] along an axis of 2: nearly all duplicates."""
    sample = Sample(
        lambda x, i, u: prim.ScatterOp(x, i, u, 1),
        [("f64", (3, 2)), ("i64", (4,)), ("f64", (3, 4))],
    )
    for batched in [(False, True, False), (True, True, True), (False, True, True)]:
        batch_and_compare(sample, batched, seed=seed)


def test_iota_batch_rule() -> None:
    op = prim.IotaOp(_t([2, 3], i32), 1)
    ctx = _Context(SIZE)
    (output,) = op.batch_rule(ctx, [], [])
    env: dict = {}
    _run(ctx.ops, env)
    assert output.type == _t([SIZE, 2, 3], i32)
    np.testing.assert_array_equal(env[output], np.broadcast_to([0, 1, 2], (SIZE, 2, 3)))


# --------------------------------------------------------------------------
# JAX as an oracle
# --------------------------------------------------------------------------


def test_references_match_jax() -> None:
    jnp = pytest.importorskip("jax.numpy")
    lax = pytest.importorskip("jax.lax")
    x = RNG.standard_normal((4, 5)).astype(np.float32)
    indices = np.array([[0, -1, 7], [-9, 2, 2]])
    np.testing.assert_array_equal(
        prim.GatherOp.reference(x, indices, axis=1),
        np.asarray(jnp.asarray(x).at[:, indices].get(mode="clip")),
    )
    updates = RNG.standard_normal((4, 2, 3)).astype(np.float32)
    np.testing.assert_allclose(
        prim.ScatterAddOp.reference(x, indices, updates, axis=1),
        np.asarray(jnp.asarray(x).at[:, indices].add(updates, mode="clip")),
        rtol=1e-6,
    )
    unique = np.array([3, -5, 1])
    rows = RNG.standard_normal((3, 5)).astype(np.float32)
    np.testing.assert_array_equal(
        prim.ScatterOp.reference(x, unique, rows, axis=0),
        np.asarray(jnp.asarray(x).at[unique].set(rows, mode="clip")),
    )
    for starts in [(1, 2), (3, 4), (0, 9)]:  # non-negative: JAX may wrap negative starts
        s = [np.array(v, np.int32) for v in starts]
        np.testing.assert_array_equal(
            prim.DynamicSliceOp.reference(x, *s, sizes=(2, 3)),
            np.asarray(lax.dynamic_slice(x, starts, (2, 3))),
        )
        update = np.ones((2, 3), np.float32)
        np.testing.assert_array_equal(
            prim.DynamicUpdateSliceOp.reference(x, update, *s),
            np.asarray(lax.dynamic_update_slice(x, update, starts)),
        )
    np.testing.assert_array_equal(
        prim.IotaOp.reference(shape=(2, 3), dimension=1, dtype=np.dtype(np.int32)),
        np.asarray(lax.broadcasted_iota(np.int32, (2, 3), 1)),
    )
