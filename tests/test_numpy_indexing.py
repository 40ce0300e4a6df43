"""Indexing with integer arrays, `.at[]` updates, arg-reductions, sorting,
rounding and the `td.lax` functions over the gather/scatter/dynamic-slice
primitives, against numpy (values and integer dtypes), finite differences and
JAX (gradients, skipped without it). Value checks of the shape-like functions
over many shapes, with their gradients, are cases of test_numpy_surface.py."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tidu_mlir as td
import tidu_mlir.numpy as tnp
from tidu_mlir import lax
from tidu_mlir.tracing import TracingError

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 5))


def _check(fn: Callable[..., Any], expected: Any, *args: Any) -> None:
    """`td.jit(fn)(*args)` equals `expected` in value, shape and dtype."""
    actual = td.jit(fn)(*args)
    expected = np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=1e-14, atol=0)


# --------------------------------------------------------------------------
# Arg-reductions and sorting
# --------------------------------------------------------------------------

TIES = np.array([[1.0, 3.0, 3.0, -2.0], [np.nan, 0.0, np.nan, 5.0], [2.0, 2.0, 2.0, 2.0]])


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_reductions_pick_the_first_and_nan_like_numpy(name: str) -> None:
    for axis in (None, 0, 1, -1):
        expected = getattr(np, name)(TIES, axis=axis)
        _check(lambda x, axis=axis: getattr(tnp, name)(x, axis=axis), expected, TIES)
    ints = np.array([[3, -1, 3], [7, 7, -9]], dtype=np.int32)
    _check(lambda n: getattr(tnp, name)(n, axis=1, keepdims=True),
           getattr(np, name)(ints, axis=1, keepdims=True), ints)  # fmt: skip
    with pytest.raises(ValueError, match="empty sequence"):
        td.jit(getattr(tnp, name))(np.zeros((0,)))


def test_argsort_and_sort_are_stable_with_nan_last() -> None:
    for axis in (0, 1, -1, None):
        _check(
            lambda x, a=axis: tnp.argsort(x, axis=a), np.argsort(TIES, axis, kind="stable"), TIES
        )
        _check(lambda x, a=axis: tnp.sort(x, axis=a), np.sort(TIES, axis), TIES)
    ints = RNG.integers(-3, 3, size=(3, 6))
    _check(lambda n: tnp.sort(n, axis=1), np.sort(ints, axis=1), ints)


def test_sort_gradient_goes_back_to_each_element() -> None:
    """d/dx of sum(w * sort(x)): each x receives the weight of the place it lands."""
    w = np.arange(1.0, 6.0)
    g = td.grad(lambda x: tnp.sum(tnp.sort(x, axis=1) * w))(X)
    expected = np.empty_like(X)
    np.put_along_axis(expected, np.argsort(X, axis=1), np.broadcast_to(w, X.shape), axis=1)
    np.testing.assert_allclose(g, expected, rtol=1e-15)


def test_cumulative_functions_of_integers_use_numpy_accumulators() -> None:
    ints = np.array([[1, -2, 3], [4, 5, -6]], dtype=np.int32)
    _check(lambda n: tnp.cumsum(n, axis=1), np.cumsum(ints, axis=1), ints)
    _check(lambda n: tnp.cumprod(n), np.cumprod(ints), ints)
    _check(lambda b: tnp.cumsum(b), np.cumsum(ints > 0), ints > 0)


# --------------------------------------------------------------------------
# Rounding
# --------------------------------------------------------------------------

HALVES = np.array([-2.5, -1.5, -0.5, -0.2, 0.0, 0.5, 1.5, 2.5, 2.7, np.nan, np.inf])


@pytest.mark.parametrize("name", ["floor", "ceil", "rint", "trunc", "round", "sign"])
def test_rounding_matches_numpy_with_zero_derivative(name: str) -> None:
    fn = getattr(tnp, name)
    _check(fn, getattr(np, name)(HALVES), HALVES)
    _check(fn, getattr(np, name)(HALVES.astype(np.float32)), HALVES.astype(np.float32))
    ints = np.array([-3, 0, 4])
    _check(fn, getattr(np, name)(ints), ints)
    finite = np.array([-1.3, 0.2, 2.6])
    np.testing.assert_array_equal(td.grad(lambda x: tnp.sum(fn(x)))(finite), np.zeros(3))


def test_round_to_decimals() -> None:
    x = np.array([1.2345, -0.0051, 125.0, 2.5e-3])
    for decimals in (2, -1):
        _check(lambda v, d=decimals: tnp.round(v, d), np.round(x, decimals), x)
    ints = np.array([15, 25, -35])
    _check(lambda n: tnp.round(n, -1), np.round(ints, -1), ints)


# --------------------------------------------------------------------------
# Integer-array indexing
# --------------------------------------------------------------------------


def test_traced_indices_gather_and_clamp() -> None:
    """A traced index gathers; out of range, it wraps once if negative and is
    then clamped (JAX's choice: run-time data cannot raise), while a static
    index out of range raises as in numpy."""
    get = td.jit(lambda x, i: x[i])
    np.testing.assert_array_equal(get(X, np.int64(2)), X[2])
    np.testing.assert_array_equal(get(X, np.int32(-1)), X[-1])
    np.testing.assert_array_equal(get(X, np.array([9, -9, 1])), X[[3, 0, 1]])
    rows = td.jit(lambda x, i, j: x[i, j])(X, np.array([0, 3]), np.array([[4], [0]]))
    np.testing.assert_array_equal(rows, X[np.array([0, 3]), np.array([[4], [0]])])
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 0 with size 4"):
        td.jit(lambda x: x[np.array([0, 4])])(X)
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 1 with size 5"):
        td.jit(lambda x: tnp.take(x, [7], axis=1))(X)


def test_bad_indices_are_clear_errors() -> None:
    with pytest.raises(TracingError, match="traced boolean mask"):
        td.jit(lambda x: x[x > 0])(X)
    with pytest.raises(IndexError, match="must be of integer"):
        td.jit(lambda x: x[np.array([0.5])])(X)
    with pytest.raises(IndexError, match="must be of integer"):
        td.jit(lambda x, i: x[i])(X, np.array([1.0]))


def test_gather_and_scatter_add_are_adjoint() -> None:
    """<x[i], y> = <x, zeros.at[i].add(y)>, repeated indices included, through
    `td.vjp` (the transpose of the gather is the scatter-add)."""
    index = np.array([[3, 0], [3, 3], [1, -1]])
    y = RNG.standard_normal((3, 2, 5))
    value, vjp_fn = td.vjp(lambda x: x[index], X)
    (x_bar,) = vjp_fn(y)
    scattered = td.jit(lambda z, y: z.at[index].add(y))(np.zeros((4, 5)), y)
    np.testing.assert_allclose(x_bar, scattered, rtol=1e-15)
    assert math.isclose(np.sum(value * y), np.sum(X * x_bar), rel_tol=1e-13)


# --------------------------------------------------------------------------
# `.at[]` updates
# --------------------------------------------------------------------------


def _numpy_update(x: np.ndarray, index: Any, how: str, values: Any) -> np.ndarray:
    out = x.copy()
    if how == "set":
        out[index] = values
    elif how == "add":
        np.add.at(out, index, values)
    else:
        ufunc = {"multiply": np.multiply, "min": np.minimum, "max": np.maximum}[how]
        out[index] = ufunc(out[index], values)
    return out


UPDATES = [
    ((1, slice(None)), "set", 7.0),
    ((slice(1, 3), [0, 4]), "set", np.arange(4.0).reshape(2, 2)),
    (np.array([0, 0, 2]), "add", 1.5),
    ((Ellipsis, -1), "add", np.arange(4.0)),
    (([1, 2], [3, 3]), "multiply", -2.0),
    ((slice(None, None, -2), 0), "min", 0.0),
    (np.array([[True, False, True, False, False]] * 4), "max", 0.5),
]


@pytest.mark.parametrize("case", range(len(UPDATES)))
def test_at_updates_match_numpy_and_differentiate(case: int) -> None:
    index, how, values = UPDATES[case]
    _check(lambda x: getattr(x.at[index], how)(values), _numpy_update(X, index, how, values), X)
    w = RNG.uniform(0.5, 1.5, X.shape)
    g = td.grad(lambda x: tnp.sum(getattr(x.at[index], how)(values) * w))(X)
    step, numeric = 1e-6, np.zeros_like(X)
    for position in np.ndindex(X.shape):
        up, down = X.copy(), X.copy()
        up[position] += step
        down[position] -= step
        numeric[position] = np.sum(
            (_numpy_update(up, index, how, values) - _numpy_update(down, index, how, values)) * w
        ) / (2 * step)
    np.testing.assert_allclose(g, numeric, rtol=1e-7, atol=1e-8)


def test_at_with_traced_index_and_values() -> None:
    f = td.jit(lambda x, i, v: (x.at[i].set(v), x.at[i].add(v), x.at[i].get()))
    i, v = np.array([2, -1, 2]), np.ones((3, 5))
    s, a, got = f(X, i, v)
    np.testing.assert_array_equal(s, _numpy_update(X, i, "set", v))
    np.testing.assert_allclose(a, _numpy_update(X, i, "add", v), rtol=1e-15)
    np.testing.assert_array_equal(got, X[i])
    g = td.grad(lambda x, v: tnp.sum(x.at[i].set(v) ** 2), argnums=(0, 1))(X, v)
    expected_x = 2 * X
    expected_x[[2, 3]] = 0.0
    np.testing.assert_allclose(g[0], expected_x)
    np.testing.assert_allclose(
        g[1], [[0.0] * 5, [2.0] * 5, [2.0] * 5]
    )  # the first 2 is overwritten
    with pytest.raises(NotImplementedError, match="static index without repeated"):
        td.jit(lambda x: x.at[np.array([1, 1])].multiply(2.0))(X)


def test_at_updates_match_jax_gradients() -> None:
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    jax.config.update("jax_enable_x64", True)
    index = (np.array([0, 2, 2]), slice(1, 4))
    v = RNG.standard_normal((3, 3))

    def loss(xp: Any, x: Any, v: Any) -> Any:
        return xp.sum(xp.sin(x.at[index].add(v * x[index])) * x.at[0].set(v[0, 0]))

    ours = td.grad(lambda x, v: loss(tnp, x, v), argnums=(0, 1))(X, v)
    theirs = jax.grad(lambda x, v: loss(jnp, x, v), argnums=(0, 1))(X, v)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-12, atol=1e-14)


# --------------------------------------------------------------------------
# td.lax
# --------------------------------------------------------------------------


def test_lax_dynamic_slices_clamp_and_differentiate() -> None:
    f = td.jit(lambda x, i, j: (lax.dynamic_slice(x, (i, j), (2, 3)),
                                lax.dynamic_update_slice(x, -tnp.ones((2, 2)), (i, j))))  # fmt: skip
    for i, j in [(0, 0), (1, 2), (3, 4), (-5, 9), (-1, -2)]:
        block, updated = f(X, np.int64(i), np.int32(j))
        i, j = i + 4 if i < 0 else i, j + 5 if j < 0 else j  # negative: from the end (JAX)
        r, c = min(max(i, 0), 2), min(max(j, 0), 2)
        np.testing.assert_array_equal(block, X[r : r + 2, c : c + 3])
        r, c = min(max(i, 0), 2), min(max(j, 0), 3)
        expected = X.copy()
        expected[r : r + 2, c : c + 2] = -1.0
        np.testing.assert_array_equal(updated, expected)
    g = td.grad(lambda x, u: tnp.sum(lax.dynamic_update_slice(x, u, (1, 2)) ** 2), argnums=(0, 1))
    gx, gu = g(X, np.full((2, 2), 3.0))
    expected_x = 2 * X
    expected_x[1:3, 2:4] = 0.0
    np.testing.assert_allclose(gx, expected_x)
    np.testing.assert_allclose(gu, np.full((2, 2), 6.0))
    with pytest.raises(TypeError, match="0-d integers"):
        td.jit(lambda x: lax.dynamic_slice(x, (0.5, 0), (1, 1)))(X)


def test_lax_functions_match_their_numpy_definitions() -> None:
    f = td.jit(lambda x: (lax.cumsum(x, 1, reverse=True), lax.cummax(x, 0), lax.cummin(x, 1, True),
                          lax.cumprod(x, 0), lax.sort(x, 0), lax.round(x * 2), lax.erf(x),
                          lax.argmax(x, 1, np.int32), lax.iota(np.int32, 4) + x.shape[0]))  # fmt: skip
    expected = (
        np.flip(np.cumsum(np.flip(X, 1), 1), 1),
        np.maximum.accumulate(X, 0),
        np.flip(np.minimum.accumulate(np.flip(X, 1), 1), 1),
        np.cumprod(X, 0),
        np.sort(X, 0),
        np.sign(X * 2) * np.floor(np.abs(X * 2) + 0.5),
        np.vectorize(math.erf)(X),
        np.argmax(X, 1).astype(np.int32),
        np.arange(4, dtype=np.int32) + 4,
    )
    for actual, wanted in zip(f(X), expected, strict=True):
        assert actual.dtype == wanted.dtype
        np.testing.assert_allclose(actual, wanted, rtol=1e-14)
    g = td.grad(lambda x: tnp.sum(lax.erf(x)))(X)
    np.testing.assert_allclose(g, 2 / np.sqrt(np.pi) * np.exp(-(X**2)), rtol=1e-14)


# --------------------------------------------------------------------------
# Random index expressions against numpy
# --------------------------------------------------------------------------


@st.composite
def _index_expressions(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[Any, ...]]:
    """A shape and an index numpy accepts on it: integers, slices with any
    step, None, at most one Ellipsis and integer arrays (in bounds)."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    items: list[Any] = []
    axis = 0
    ellipsis_used = False
    while axis < len(shape):
        kind = draw(st.sampled_from(["int", "slice", "array", "none", "ellipsis", "stop"]))
        size = shape[axis]
        if kind == "stop":
            break
        if kind == "none":
            items.append(None)
            continue
        if kind == "ellipsis":
            if not ellipsis_used:
                items.append(Ellipsis)
                ellipsis_used = True
            break
        if kind == "int":
            items.append(draw(st.integers(-size, size - 1)))
        elif kind == "slice":
            start = draw(st.none() | st.integers(-size - 1, size + 1))
            stop = draw(st.none() | st.integers(-size - 1, size + 1))
            step = draw(st.none() | st.sampled_from([-2, -1, 1, 2, 3]))
            items.append(slice(start, stop, step))
        else:
            length = draw(st.integers(0, 3))
            items.append(np.array(draw(st.lists(st.integers(-size, size - 1),
                                                min_size=length, max_size=length)),
                                  dtype=np.int64))  # fmt: skip
        axis += 1
    return shape, tuple(items)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(_index_expressions())
def test_random_index_expressions_match_numpy(
    case: tuple[tuple[int, ...], tuple[Any, ...]],
) -> None:
    shape, index = case
    x = np.arange(math.prod(shape), dtype=np.float64).reshape(shape)
    expected = x[index]
    actual = td.jit(lambda v: v[index])(x)
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected)


def test_constant_arrays_take_traced_indices_like_jax() -> None:
    """`tnp.asarray(table)[i]` with a traced `i` reads the table as a constant
    (it used to try turning the tracer into a numpy index)."""
    table = np.array([0.5, 1.5, 2.5, 3.5])
    read = td.jit(lambda i: tnp.asarray(table)[i])
    assert read(np.int64(2)) == 2.5
    grad = td.grad(lambda x, i: x * tnp.arange(4.0)[i] + tnp.zeros((2, 3))[1, i])
    assert grad(2.0, np.int64(2)) == 2.0
    assert isinstance(tnp.arange(5.0)[1:3], np.ndarray)  # concrete indices stay numpy
