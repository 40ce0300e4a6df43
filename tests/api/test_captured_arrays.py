"""Large arrays a function closes over are inputs bound at call time (`const<i>`),
not dense constants in the IR: the IR (and so compile time) does not grow with
their size, and every transform binds them."""

from __future__ import annotations

import numpy as np
import pytest

import tidu_mlir as td
import tidu_mlir.numpy as tnp
from tidu_mlir.tracing import CAPTURED_CONSTANT_SIZE

RNG = np.random.default_rng(21)


def _model(a: np.ndarray):
    def f(x):
        h = tnp.tanh(a @ x)
        return tnp.sum(tnp.tanh(a @ h) * h)

    return f


def test_large_captured_arrays_are_named_inputs_and_the_ir_does_not_grow() -> None:
    small, large = (RNG.standard_normal((n, n)) for n in (40, 400))
    texts = [td.ir(_model(a), np.ones(len(a))) for a in (small, large)]
    for text, n in zip(texts, (40, 400), strict=True):
        assert text.count(f'cg.input #cg.key<"const0"> : tensor<{n}x{n}xf64>') == 1
        assert "const1" not in text  # the same array used twice is one input
        assert "dense<" not in text
    assert abs(len(texts[1]) - len(texts[0])) < 100  # only the shapes' digits differ
    tiny = RNG.standard_normal(CAPTURED_CONSTANT_SIZE)
    assert "dense<" in td.ir(lambda x: x * tiny, np.ones(CAPTURED_CONSTANT_SIZE))


def test_every_transform_binds_captured_arrays() -> None:
    a = RNG.standard_normal((40, 40)) / 6
    f, x, t = _model(a), RNG.standard_normal(40), RNG.standard_normal(40)

    def numpy_f(v):
        h = np.tanh(a @ v)
        return np.sum(np.tanh(a @ h) * h)

    eps = 1e-6
    directional = (numpy_f(x + eps * t) - numpy_f(x - eps * t)) / (2 * eps)
    gradient = td.grad(f)(x)
    np.testing.assert_allclose(td.jit(f)(x), numpy_f(x), rtol=1e-12)
    np.testing.assert_allclose(gradient @ t, directional, rtol=1e-7)
    np.testing.assert_allclose(td.jvp(f, (x,), (t,))[1], directional, rtol=1e-7)
    _, f_jvp = td.linearize(f, x)
    np.testing.assert_allclose(f_jvp(t), directional, rtol=1e-7)
    _, vjp_fn = td.vjp(f, x)
    np.testing.assert_allclose(vjp_fn(np.float64(1.0))[0], gradient, rtol=1e-12)
    np.testing.assert_allclose(td.hessian(f)(x) @ t, td.jvp(td.grad(f), (x,), (t,))[1], rtol=1e-9)
    xs = RNG.standard_normal((3, 40))
    np.testing.assert_allclose(td.vmap(td.grad(f))(xs), [td.grad(f)(v) for v in xs], rtol=1e-12)
    outer = td.grad(lambda v: td.jit(f)(v) * 2.0)(x)  # inlined into an enclosing trace
    np.testing.assert_allclose(outer, 2.0 * gradient, rtol=1e-12)


def test_a_captured_array_is_a_snapshot() -> None:
    """Like a constant (and like jax.jit): changes after tracing are not seen."""
    a = RNG.standard_normal((40, 40))
    f = td.jit(lambda x: a @ x)
    x = np.ones(40)
    before = f(x)
    a[:] = 0.0
    np.testing.assert_allclose(f(x), before)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_captured_arrays_keep_their_dtype(dtype) -> None:
    a = RNG.standard_normal((40, 40)).astype(dtype)
    if np.iscomplexobj(a):
        a = a + 0.5j * RNG.standard_normal((40, 40))
    x = np.ones(40, dtype)
    np.testing.assert_allclose(td.jit(lambda v: a @ v)(x), a @ x, rtol=1e-5)
