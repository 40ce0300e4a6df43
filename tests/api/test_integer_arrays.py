"""Integer (int32, int64) and boolean arrays as traced values: numpy's dtypes
and promotion through `td.jit`, never differentiated (no tangent in the IR, a
TypeError when asked for one), batched by `vmap`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tidu_mlir as td
import tidu_mlir.numpy as tnp

X = np.linspace(0.1, 1.2, 12).reshape(3, 4)


def _mixed(xp: Any) -> Callable[..., tuple[Any, ...]]:
    """A program mixing an integer array `n` with a float array `x` (numpy or tnp)."""

    def f(x: Any, n: Any) -> tuple[Any, ...]:
        return (
            n + 1,
            n * n - n,
            -n,
            xp.maximum(n, 3),
            x * n,
            n / 2,
            xp.exp(n * 0.1),
            n > 2,
            xp.where(n > 2, x, 0.0),
            xp.where(n, x, -x),
            n.astype(np.float32),
            (x * 10).astype(n.dtype),
            xp.sum(n),
            xp.sum(n > 2),
            xp.mean(n),
            xp.max(n, axis=0),
            n.T[1:, ::2],
            xp.concatenate([n, n], axis=1),
            (n > 2).astype(np.int32) + n,
        )

    return f


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_programs_have_numpy_dtypes_and_values(dtype: type) -> None:
    n = (np.arange(12).reshape(3, 4) - 4).astype(dtype)
    got = td.jit(_mixed(tnp))(X, n)
    expected = _mixed(np)(X, n)
    for index, (a, e) in enumerate(zip(got, expected, strict=True)):
        assert a.dtype == e.dtype, (index, a.dtype, e.dtype)
        np.testing.assert_allclose(a, e, rtol=1e-6 if a.dtype == np.float32 else 1e-14)


def test_integer_arithmetic_wraps_like_numpy() -> None:
    big = np.array([2**31 - 1, -(2**31), 123456789], dtype=np.int32)
    got = td.jit(lambda n: (n + 1, n * 3, -n))(big)
    with np.errstate(over="ignore"):
        expected = (big + np.int32(1), big * np.int32(3), -big)
    for a, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(a, e)
        assert a.dtype == np.int32


def test_scalars_and_small_integer_types() -> None:
    assert td.jit(lambda k: k * 2)(3).dtype == np.int64
    assert td.jit(lambda b: tnp.where(b, 1.0, 2.0))(True) == 1.0
    pixels = np.array([0, 200, 255], dtype=np.uint8)
    out = td.jit(lambda p: p * 2)(pixels)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [0, 400, 510])
    with pytest.raises(TypeError, match="uint64"):
        td.jit(lambda p: p)(np.arange(2, dtype=np.uint64))


def test_gradients_flow_around_integer_arguments() -> None:
    n = np.array([[0, 1, 2, 3], [4, 5, 6, 7], [-1, -2, -3, 9]])

    def loss(x: Any, n: Any) -> Any:
        return tnp.sum(x * n + tnp.where(n > 2, tnp.sin(x), 0.0) + (x * 10).astype(np.int64))

    g = td.grad(loss)(X, n)
    np.testing.assert_allclose(g, n + np.where(n > 2, np.cos(X), 0.0), rtol=1e-14)
    value, g2 = td.value_and_grad(loss)(X, n)
    np.testing.assert_allclose(g2, g)
    expected = np.sum(X * n + np.where(n > 2, np.sin(X), 0.0) + (X * 10).astype(np.int64))
    np.testing.assert_allclose(value, expected, rtol=1e-14)
    batched = td.vmap(td.grad(loss))(np.stack([X, 2 * X]), np.stack([n, -n]))
    np.testing.assert_allclose(batched[1], -n + np.where(-n > 2, np.cos(2 * X), 0.0))


@pytest.mark.parametrize(
    "call",
    [
        lambda f, x, n: td.grad(f, argnums=1)(x, n),
        lambda f, x, n: td.jvp(f, (x, n), (x, n)),
        lambda f, x, n: td.vjp(f, x, n),
        lambda f, x, n: td.linearize(f, x, n),
    ],
    ids=["grad", "jvp", "vjp", "linearize"],
)
def test_differentiating_an_integer_argument_is_a_type_error(call: Callable[..., Any]) -> None:
    with pytest.raises(
        TypeError, match=r"requires real- or complex-valued inputs.*argument 1 is int64"
    ):
        call(lambda x, n: tnp.sum(x * n), X, np.arange(12).reshape(3, 4))
