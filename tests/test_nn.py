"""`td.nn`: values against numpy formulas written here and against `jax.nn`
(when installed), gradients against central differences and `jax.grad`, the
stable forms at ±1000, `one_hot`, every function under `jit`, `grad` and
`vmap`, and the eager twins with `.backward()`."""

from __future__ import annotations

import doctest
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest

import tidu_mlir as td
import tidu_mlir.eager as te
import tidu_mlir.nn as nn
import tidu_mlir.numpy as tnp

RNG = np.random.default_rng(0)
X = np.linspace(-6.0, 6.0, 13)  # moderate: the textbook formulas are exact enough here
M = RNG.normal(size=(3, 4)) * 3.0
W = RNG.normal(size=(3, 4))  # weights making `sum(w * f(x))` see every output


# Independent references: the textbook formulas, elementwise in Python floats.
def _sigmoid(v: float) -> float:
    return 1.0 / (1.0 + math.exp(-v)) if v >= 0 else math.exp(v) / (1.0 + math.exp(v))


def _softplus(v: float) -> float:
    return max(v, 0.0) + math.log1p(math.exp(-abs(v)))


def _gelu_tanh(v: float) -> float:
    return 0.5 * v * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (v + 0.044715 * v**3)))


def _elementwise(f: Callable[[float], float]) -> Callable[[np.ndarray], np.ndarray]:
    return lambda x: np.vectorize(f, otypes=[np.float64])(x)


def _logsumexp(x: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    return np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))


def _softmax(x: np.ndarray, axis: Any = -1) -> np.ndarray:
    return np.exp(x) / np.sum(np.exp(x), axis=axis, keepdims=True)


REFERENCES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "relu": lambda x: np.maximum(x, 0.0),
    "sigmoid": _elementwise(_sigmoid),
    "softplus": _elementwise(_softplus),
    "silu": _elementwise(lambda v: v * _sigmoid(v)),
    "gelu": _elementwise(_gelu_tanh),
    "log_sigmoid": _elementwise(lambda v: -_softplus(-v)),
}
ELEMENTWISE = list(REFERENCES)

# Every function as a function of one float array (one_hot of float labels).
CASES: dict[str, Callable[[Any], Any]] = {
    **{name: getattr(nn, name) for name in ELEMENTWISE},
    "logsumexp": nn.logsumexp,
    "logsumexp_axis0": lambda x: nn.logsumexp(x, axis=0),
    "logsumexp_keepdims": lambda x: nn.logsumexp(x, axis=-1, keepdims=True),
    "softmax": nn.softmax,
    "softmax_axis0": lambda x: nn.softmax(x, axis=0),
    "log_softmax": nn.log_softmax,
    "log_softmax_all": lambda x: nn.log_softmax(x, axis=None),
    "one_hot": lambda x: nn.one_hot(x, 4),
}
CASE_REFERENCES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    **REFERENCES,
    "logsumexp": _logsumexp,
    "logsumexp_axis0": lambda x: _logsumexp(x, axis=0),
    "logsumexp_keepdims": lambda x: _logsumexp(x, axis=-1, keepdims=True),
    "softmax": _softmax,
    "softmax_axis0": lambda x: _softmax(x, axis=0),
    "log_softmax": lambda x: np.log(_softmax(x)),
    "log_softmax_all": lambda x: np.log(_softmax(x, axis=None)),
    "one_hot": lambda x: (x[..., None] == np.arange(4)).astype(np.float64),
}
DIFFERENTIABLE = [name for name in CASES if name != "one_hot"]


LABELS = np.array([[0.0, 3.0, 1.0, 5.0], [2.0, 2.0, 0.0, 1.0], [3.0, 1.0, 2.0, 0.0]])  # 5: none


def _input(name: str) -> np.ndarray:
    """Float labels for one_hot, logits otherwise."""
    return LABELS if name == "one_hot" else M


@pytest.fixture
def jax_nn() -> Any:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return pytest.importorskip("jax.nn")


# --------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_values_match_the_formulas(name: str) -> None:
    expected = REFERENCES[name](X)
    np.testing.assert_allclose(getattr(nn, name)(X), expected, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(td.jit(getattr(nn, name))(X), expected, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", list(CASES))
def test_values_on_arrays_and_under_jit(name: str) -> None:
    x = _input(name)
    expected = CASE_REFERENCES[name](x)
    np.testing.assert_allclose(CASES[name](x), expected, rtol=1e-12)
    np.testing.assert_allclose(td.jit(CASES[name])(x), expected, rtol=1e-12)


def test_softmax_rows_are_distributions() -> None:
    p = td.jit(nn.softmax)(M)
    assert np.all(p > 0)
    np.testing.assert_allclose(p.sum(axis=-1), np.ones(3), rtol=1e-15)
    np.testing.assert_allclose(nn.softmax(M, axis=(0, 1)), _softmax(M, axis=(0, 1)), rtol=1e-12)


@pytest.mark.parametrize("name", ELEMENTWISE + ["softmax", "log_softmax", "logsumexp"])
def test_float32_stays_float32(name: str) -> None:
    x = M.astype(np.float32)
    assert td.jit(getattr(nn, name))(x).dtype == np.float32
    assert getattr(nn, name)(x).dtype == np.float32


def test_integer_arrays_are_computed_as_float64() -> None:
    np.testing.assert_allclose(nn.sigmoid(np.array([0, 1])), [0.5, _sigmoid(1.0)], rtol=1e-15)


@pytest.mark.parametrize("name", ELEMENTWISE + ["softmax", "log_softmax", "logsumexp"])
def test_values_match_jax(name: str, jax_nn: Any) -> None:
    x = np.concatenate([X, [-1000.0, -40.0, 0.0, 40.0, 1000.0]])
    np.testing.assert_allclose(
        getattr(nn, name)(x), getattr(jax_nn, name)(x), rtol=1e-14, atol=1e-15
    )
    np.testing.assert_allclose(
        td.jit(getattr(nn, name))(x), getattr(jax_nn, name)(x), rtol=1e-14, atol=1e-15
    )


# --------------------------------------------------------------------------
# Gradients
# --------------------------------------------------------------------------


def _weighted(f: Callable[[Any], Any], x: np.ndarray) -> Callable[[Any], Any]:
    """`sum(w * f(x))`, with weights of f(x)'s shape."""
    weights = np.resize(W, np.shape(f(x)))
    return lambda v: tnp.sum(f(v) * weights)


def _central_differences(f: Callable[[np.ndarray], Any], x: np.ndarray) -> np.ndarray:
    h = 1e-6
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = h
        grad[i] = (float(f(x + step)) - float(f(x - step))) / (2 * h)
    return grad


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_gradients_match_central_differences(name: str) -> None:
    loss = _weighted(CASES[name], M)
    np.testing.assert_allclose(
        td.grad(loss)(M), _central_differences(loss, M), rtol=1e-6, atol=1e-8
    )


@pytest.mark.parametrize("name", ELEMENTWISE + ["softmax", "log_softmax", "logsumexp"])
def test_gradients_match_jax(name: str, jax_nn: Any) -> None:
    import jax
    import jax.numpy as jnp

    x = np.concatenate([M.ravel(), [-1000.0, -40.0, 0.0, 40.0, 1000.0]])
    w = np.resize(W, x.shape)
    ours = td.grad(lambda v: tnp.sum(getattr(nn, name)(v) * w))(x)
    theirs = jax.grad(lambda v: jnp.sum(getattr(jax_nn, name)(v) * w))(x)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)


def test_one_hot_has_zero_gradient() -> None:
    labels = np.array([0.0, 2.0])
    np.testing.assert_array_equal(td.grad(lambda v: tnp.sum(nn.one_hot(v, 3)))(labels), [0, 0])


# --------------------------------------------------------------------------
# Stability
# --------------------------------------------------------------------------

EXTREMES = np.array([1000.0, 0.0, -1000.0])


def test_softmax_family_at_extremes() -> None:
    for f in (nn.softmax, td.jit(nn.softmax)):
        np.testing.assert_array_equal(f(EXTREMES), [1.0, 0.0, 0.0])
    for f in (nn.log_softmax, td.jit(nn.log_softmax)):
        np.testing.assert_array_equal(f(EXTREMES), [0.0, -1000.0, -2000.0])
    for f in (nn.logsumexp, td.jit(nn.logsumexp)):
        assert float(f(EXTREMES)) == 1000.0
        np.testing.assert_allclose(float(f(np.array([1000.0, 1000.0]))), 1000.0 + math.log(2.0))
    for f in (nn.softmax, nn.log_softmax, nn.logsumexp):
        grad = td.grad(lambda x, f=f: tnp.sum(f(x) * np.array([1.0, 2.0, 3.0])))(EXTREMES)
        assert np.all(np.isfinite(grad)), (f, grad)
    np.testing.assert_array_equal(td.grad(nn.logsumexp)(EXTREMES), [1.0, 0.0, 0.0])


def test_logsumexp_with_minus_infinity() -> None:
    x = np.array([0.0, -np.inf, math.log(3.0)])
    assert math.isclose(float(nn.logsumexp(x)), math.log(4.0), rel_tol=1e-15)
    grad = td.grad(nn.logsumexp)(x)
    np.testing.assert_allclose(grad, [0.25, 0.0, 0.75], rtol=1e-15)
    assert grad[1] == 0.0
    rows = np.array([[0.0, -np.inf], [-np.inf, 1.0]])
    np.testing.assert_allclose(td.jit(lambda r: nn.logsumexp(r, axis=1))(rows), [0.0, 1.0])
    np.testing.assert_array_equal(
        td.grad(lambda r: tnp.sum(nn.logsumexp(r, axis=1)))(rows), np.eye(2)
    )


def test_elementwise_at_extremes() -> None:
    big = np.array([-1000.0, 1000.0])
    cases = {
        nn.sigmoid: ([0.0, 1.0], [0.0, 0.0]),
        nn.softplus: ([0.0, 1000.0], [0.0, 1.0]),
        nn.log_sigmoid: ([-1000.0, 0.0], [1.0, 0.0]),
        nn.silu: ([0.0, 1000.0], [0.0, 1.0]),
        nn.gelu: ([0.0, 1000.0], [0.0, 1.0]),
    }
    for f, (value, grad) in cases.items():
        np.testing.assert_array_equal(td.jit(f)(big), value, err_msg=f.__name__)
        np.testing.assert_array_equal(td.grad(lambda x, f=f: tnp.sum(f(x)))(big), grad, f.__name__)


def test_tails_keep_relative_precision() -> None:
    x = np.array([-40.0, 40.0])
    tiny = math.exp(-40.0) / (1.0 + math.exp(-40.0))
    np.testing.assert_allclose(td.jit(nn.sigmoid)(x), [tiny, 1.0], rtol=1e-15)
    np.testing.assert_allclose(
        td.jit(nn.softplus)(x), [math.log1p(math.exp(-40.0)), 40.0], rtol=1e-15
    )
    np.testing.assert_allclose(
        td.jit(nn.log_sigmoid)(-x), [-math.log1p(math.exp(-40.0)), -40.0], rtol=1e-15
    )
    np.testing.assert_allclose(
        td.grad(lambda v: tnp.sum(nn.softplus(v)))(x), [tiny, 1.0], rtol=1e-15
    )


def test_gradients_at_zero_match_jax_conventions() -> None:
    zero = np.array([0.0])
    expected = {"relu": 0.0, "sigmoid": 0.25, "softplus": 0.5, "silu": 0.5, "log_sigmoid": 0.5}
    for name, value in expected.items():
        f = getattr(nn, name)
        grad = td.grad(lambda x, f=f: tnp.sum(f(x)))(zero)
        np.testing.assert_allclose(grad, [value], rtol=1e-15, err_msg=name)


def test_nan_propagates() -> None:
    for name in ELEMENTWISE:
        assert np.isnan(td.jit(getattr(nn, name))(np.array([np.nan])))[0], name


# --------------------------------------------------------------------------
# gelu's exact form
# --------------------------------------------------------------------------


def test_gelu_exact_needs_erf() -> None:
    if "erf" in tnp.__all__:
        expected = [0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0))) for v in X]
        np.testing.assert_allclose(td.jit(lambda x: nn.gelu(x, approximate=False))(X), expected)
    else:
        with pytest.raises(NotImplementedError, match=r"approximate=False\) needs erf"):
            nn.gelu(X, approximate=False)
        with pytest.raises(NotImplementedError, match="needs erf"):
            td.jit(lambda x: nn.gelu(x, approximate=False))(X)


# --------------------------------------------------------------------------
# one_hot
# --------------------------------------------------------------------------


def test_one_hot_of_integers_is_numpy() -> None:
    out = nn.one_hot(np.array([0, 2, -1, 3]), 3)
    assert isinstance(out, np.ndarray) and out.dtype == np.float64
    np.testing.assert_array_equal(out, [[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]])
    np.testing.assert_array_equal(nn.one_hot(1, 3), [0, 1, 0])
    labels = np.array([[0, 1, 2], [2, 1, 0]])
    for axis in (-3, -2, -1, 0, 1, 2):
        expected = np.moveaxis(np.eye(3)[labels], -1, axis)
        np.testing.assert_array_equal(nn.one_hot(labels, 3, axis=axis), expected)
    assert nn.one_hot(labels, 3, dtype=np.float32).dtype == np.float32


def test_one_hot_of_traced_float_labels() -> None:
    labels = np.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])
    for axis in (-1, 0, 1):
        out = td.jit(lambda v, axis=axis: nn.one_hot(v, 3, axis=axis))(labels)
        np.testing.assert_array_equal(out, np.moveaxis(np.eye(3)[labels.astype(int)], -1, axis))
    out32 = td.jit(lambda v: nn.one_hot(v, 2, dtype=np.float32))(labels.astype(np.float32))
    assert out32.dtype == np.float32
    np.testing.assert_array_equal(out32, np.eye(3)[labels.astype(int)][..., :2])


def test_one_hot_rejects_bad_labels_and_axes() -> None:
    with pytest.raises(TypeError, match="labels"):
        nn.one_hot(np.array([True]), 2)
    with pytest.raises(ValueError, match="out of bounds"):
        nn.one_hot(np.array([0, 1]), 2, axis=2)


def test_one_hot_matches_jax(jax_nn: Any) -> None:
    labels = np.array([[0, 3, -1], [1, 2, 7]])
    for axis in (-1, 0, 1):
        expected = jax_nn.one_hot(labels, 4, axis=axis, dtype=np.float64)
        np.testing.assert_array_equal(nn.one_hot(labels, 4, axis=axis), expected)
        traced = td.jit(lambda v, axis=axis: nn.one_hot(v, 4, axis=axis))(labels.astype(float))
        np.testing.assert_array_equal(traced, expected)


# --------------------------------------------------------------------------
# Transforms
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CASES))
def test_under_jit_grad_and_vmap(name: str) -> None:
    f, x = CASES[name], _input(name)
    expected = CASE_REFERENCES[name](x)
    np.testing.assert_allclose(td.jit(f)(x), expected, rtol=1e-12)
    grad = td.grad(lambda v: tnp.sum(f(v)))(x)
    assert grad.shape == x.shape
    if name == "one_hot":
        np.testing.assert_array_equal(grad, np.zeros_like(x))
    else:
        loss = lambda v: tnp.sum(f(v))
        np.testing.assert_allclose(grad, _central_differences(loss, x), rtol=1e-6, atol=1e-8)
    batched = td.vmap(f)(x)  # over rows: each row its own call
    np.testing.assert_allclose(
        batched, np.stack([CASE_REFERENCES[name](row) for row in x]), rtol=1e-12
    )
    row_grad = td.grad(lambda v: tnp.sum(f(v) * W[0]))
    expected_rows = np.stack([row_grad(row) for row in x])
    np.testing.assert_allclose(td.vmap(row_grad)(x), expected_rows, rtol=1e-12, atol=1e-15)


def test_nn_is_a_lazy_submodule() -> None:
    assert td.nn is nn
    assert "nn" in td.__all__


def test_docstring_examples_run() -> None:
    globs = {"np": np, "td": td, "tnp": tnp}
    result = doctest.testmod(nn, extraglobs=globs, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= len(nn.__all__) and result.failed == 0


# --------------------------------------------------------------------------
# Eager
# --------------------------------------------------------------------------


EAGER: Mapping[str, Any] = vars(te)  # the generated functions (typed Any for the checker)


def _leaf(data: Any) -> Any:
    """A tensor requiring grad, typed Any: its generated methods are unknown to the checker."""
    return te.tensor(data, requires_grad=True)


def test_eager_log_softmax_backward_matches_the_traced_gradient() -> None:
    traced = td.grad(lambda v: tnp.sum(nn.log_softmax(v, axis=-1) * W))(M)
    t = _leaf(M)
    (EAGER["log_softmax"](t, axis=-1) * W).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), traced, rtol=1e-13, atol=1e-15)
    method = _leaf(M)
    (method.log_softmax(axis=-1) * W).sum().backward()
    np.testing.assert_allclose(method.grad.numpy(), traced, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(t.log_softmax(-1).numpy(), np.log(_softmax(M)), rtol=1e-12)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_every_eager_function_backward_matches_grad(name: str) -> None:
    # The eager method with the same static arguments as the traced case.
    statics: dict[str, tuple[str, dict[str, Any]]] = {
        "logsumexp_axis0": ("logsumexp", {"axis": 0}),
        "logsumexp_keepdims": ("logsumexp", {"axis": -1, "keepdims": True}),
        "softmax_axis0": ("softmax", {"axis": 0}),
        "log_softmax_all": ("log_softmax", {"axis": None}),
    }
    eager_name, kwargs = statics.get(name, (name, {}))
    loss = _weighted(CASES[name], M)
    weights = np.resize(W, np.shape(CASES[name](M)))
    t = _leaf(M)
    (getattr(t, eager_name)(**kwargs) * weights).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), td.grad(loss)(M), rtol=1e-13, atol=1e-15)


def test_eager_one_hot_and_static_arguments() -> None:
    one_hot = EAGER["one_hot"]
    np.testing.assert_array_equal(one_hot(np.array([0, 2]), 3).numpy(), [[1, 0, 0], [0, 0, 1]])
    labels: Any = te.tensor([1.0])
    np.testing.assert_array_equal(labels.one_hot(2, axis=0).numpy(), [[0.0], [1.0]])
    with pytest.raises(NotImplementedError, match="erf"):
        EAGER["gelu"](te.tensor([1.0]), approximate=False)
    with pytest.raises(TypeError):
        EAGER["softmax"](te.tensor([1.0]), -1, "extra")
