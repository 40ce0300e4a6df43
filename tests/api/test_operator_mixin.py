"""One operator mixin for both array classes: `Tracer` (traced by `td.jit`) and
the eager `Tensor` get `+ - * / ** @`, comparisons, indexing and the numpy
methods from `ArrayOperators`, each bound to its own numpy-named functions,
and give numpy's results through both paths."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import tidu_mlir as td
import tidu_mlir.eager as te
import tidu_mlir.numpy as tnp
from tidu_mlir.array_operators import ArrayOperators
from tidu_mlir.eager import functions as eager_functions
from tidu_mlir.eager.tensor import Tensor
from tidu_mlir.tracing import Tracer

MEMBERS = sorted(
    name
    for name, member in vars(ArrayOperators).items()
    if callable(member) or isinstance(member, property)
    if name not in ("bind_functions", "__hash__")
)

RNG = np.random.default_rng(3)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((4, 4)) + 2.0


@pytest.fixture
def interp() -> Iterator[None]:
    te.set_backend("interp")
    yield
    te.set_backend(None)


def test_mixin_has_the_operators_and_methods() -> None:
    assert {"__add__", "__rmatmul__", "__eq__", "__getitem__", "T", "sum", "astype"} <= set(MEMBERS)


@pytest.mark.parametrize("name", MEMBERS)
def test_tracer_and_tensor_take_each_member_from_the_mixin(name: str) -> None:
    assert name not in vars(Tracer) and name not in vars(Tensor)
    assert getattr(Tracer, name) is getattr(Tensor, name) is getattr(ArrayOperators, name)


def test_each_class_is_bound_to_its_functions() -> None:
    assert Tracer._functions is tnp  # pyright: ignore[reportPrivateUsage]
    assert Tensor._functions is eager_functions  # pyright: ignore[reportPrivateUsage]
    assert hash(te.tensor(1.0)) != hash(te.tensor(1.0))  # identity hashing despite __eq__


def _expression(x, y):
    return x @ y + x * 2 - y[:3] / 3


def _methods(x, y):
    """Reflected operators, powers, indexing and the numpy methods."""
    z = (1.0 - x) * (2.0 / y[1:, :]) + abs(-x) ** 2 + 3.0**x
    w = z.T.reshape(2, 6).transpose().sum(axis=0, keepdims=True) + z.mean() - z.max(axis=1)[0]
    return w + (x @ y).astype(np.float64)[..., :1] + +x[:, None, 0]


@pytest.mark.parametrize("fn", [_expression, _methods])
def test_operators_through_jit_give_numpy_results(fn) -> None:
    np.testing.assert_allclose(td.jit(fn)(A, B), fn(A, B), rtol=1e-12)


def test_comparisons_through_jit_select_like_numpy() -> None:
    def clip(x):
        inner = tnp.where(x < -0.2, -0.2, tnp.where(x <= 0.7, x, 0.7))
        picked = tnp.where(x > 0.5, inner, 0.0) + tnp.where(x >= 0.5, 1.0, 0.0)
        return picked + tnp.where(x == A, 1.0, 2.0) + tnp.where(x != 9.0, 1.0, 2.0)

    np.testing.assert_allclose(td.jit(clip)(A), clip(A))


@pytest.mark.parametrize("fn", [_expression, _methods])
def test_operators_on_tensors_give_numpy_results(fn, interp: None) -> None:
    out = fn(te.tensor(A), te.tensor(B))
    assert isinstance(out, Tensor)
    np.testing.assert_allclose(out.numpy(), fn(A, B), rtol=1e-12)


def test_operators_on_tensors_record_hand_derived_gradients(interp: None) -> None:
    x, y = te.tensor(A, requires_grad=True), te.tensor(B, requires_grad=True)
    (x @ y + x * 2 - y[:3] / 3).sum().backward()
    ones = np.ones((3, 4))
    expected_y = A.T @ ones
    expected_y[:3] -= 1 / 3
    np.testing.assert_allclose(x.grad.numpy(), ones @ B.T + 2)  # type: ignore[union-attr]
    np.testing.assert_allclose(y.grad.numpy(), expected_y)  # type: ignore[union-attr]


def test_comparisons_on_tensors_are_never_recorded(interp: None) -> None:
    x = te.tensor(A, requires_grad=True)
    z = te.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    for mask, expected in ((x < 0.0, A < 0.0), (x == x, A == A), (z != 1 + 2j, [False, True])):
        assert mask.dtype == np.bool_ and not mask.requires_grad
        np.testing.assert_array_equal(mask.numpy(), expected)


def test_eager_exports_every_function_of_tnp() -> None:
    assert set(tnp.__all__) <= set(te.__all__)
    for name in tnp.__all__:
        assert (
            getattr(te, name) is eager_functions.FUNCTIONS[name] is getattr(eager_functions, name)
        )


@pytest.mark.parametrize("name", ["sin", "exp", "tanh", "conj", "real", "imag", "negative"])
def test_generated_unary_functions_match_numpy(name: str, interp: None) -> None:
    z = A + 1j * A[::-1]
    x = te.tensor(z, requires_grad=True)
    out = getattr(te, name)(x)
    np.testing.assert_allclose(out.numpy(), getattr(np, name)(z))
    assert out.requires_grad and getattr(te, name).__name__ == name
