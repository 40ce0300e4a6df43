"""The numpy surface of `tnp` built from other `tnp` functions: constructors,
shape functions, math and products, and `tnp.linalg.norm`.

Each function is checked against numpy on several shapes (0-d and size 0
where numpy allows) in float32 and float64 under `td.jit`; its gradient (of a
weighted sum of the output) against central differences in float64 and
against `jax.grad` when JAX is installed; the shape functions under `td.vmap`;
the numerically delicate ones at extreme arguments; and bad arguments raise
errors naming them.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import tidu_mlir as td
import tidu_mlir.numpy as tnp


def _rng(*key: object) -> np.random.Generator:
    """A generator seeded by `key`: each test sees the same inputs in any order or process."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


@dataclass(frozen=True)
class Case:
    """`fn(xp, *arrays)` for xp = numpy, tnp or jax.numpy, on inputs of `shapes`."""

    fn: Callable[..., Any]
    shapes: Sequence[tuple[tuple[int, ...], ...]]
    domain: str = "any"
    """Where inputs are drawn: "any" (normal), "unit" (|x| < 0.9), "positive" (0.5 to 2)."""


def _one(*shapes: tuple[int, ...]) -> list[tuple[tuple[int, ...], ...]]:
    return [(s,) for s in shapes]


SHAPES_1 = _one((), (0,), (5,), (3, 4))
SHAPE_CASES: dict[str, Case] = {
    "squeeze": Case(lambda xp, x: xp.squeeze(x), _one((1, 3, 1), (1,), (0, 1))),
    "squeeze_axis": Case(lambda xp, x: xp.squeeze(x, axis=-1), _one((3, 1), (2, 1, 1))),
    "expand_dims": Case(lambda xp, x: xp.expand_dims(x, 0), SHAPES_1),
    "expand_dims_tuple": Case(lambda xp, x: xp.expand_dims(x, (0, -1)), _one((), (3,), (2, 3))),
    "ravel": Case(lambda xp, x: xp.ravel(x), SHAPES_1),
    "moveaxis": Case(lambda xp, x: xp.moveaxis(x, 0, -1), _one((2, 3, 4), (0, 3))),
    "moveaxis_many": Case(lambda xp, x: xp.moveaxis(x, (0, 1), (-1, 0)), _one((2, 3, 4))),
    "swapaxes": Case(lambda xp, x: xp.swapaxes(x, 0, 2), _one((2, 3, 4), (2, 0, 1))),
    "split": Case(lambda xp, x: xp.split(x, 2)[1], _one((4,), (4, 3), (0,))),
    "split_indices": Case(lambda xp, x: xp.split(x, [1, 3], axis=1)[1], _one((2, 5), (2, 3))),
    "flip": Case(lambda xp, x: xp.flip(x), SHAPES_1),
    "flip_axis": Case(lambda xp, x: xp.flip(x, axis=-1), _one((5,), (3, 4), (3, 0))),
    "roll": Case(lambda xp, x: xp.roll(x, 2), SHAPES_1),
    "roll_axes": Case(lambda xp, x: xp.roll(x, (1, -3), axis=(0, 1)), _one((3, 4))),
    "tile": Case(lambda xp, x: xp.tile(x, 2), SHAPES_1),
    "tile_more": Case(lambda xp, x: xp.tile(x, (2, 1, 3)), _one((3,), (2, 3))),
    "repeat": Case(lambda xp, x: xp.repeat(x, 3), SHAPES_1),
    "repeat_axis": Case(lambda xp, x: xp.repeat(x, 2, axis=1), _one((3, 4), (2, 0))),
    "diag_vector": Case(lambda xp, x: xp.diag(x), _one((4,), (1,), (0,))),
    "diag_vector_k": Case(lambda xp, x: xp.diag(x, -2), _one((3,), (0,))),
    "diag_matrix": Case(lambda xp, x: xp.diag(x, 1), _one((3, 4), (4, 2), (0, 3))),
    "diagonal": Case(lambda xp, x: xp.diagonal(x, -1), _one((3, 4), (4, 3))),
    "diagonal_axes": Case(lambda xp, x: xp.diagonal(x, 0, 2, 0), _one((3, 2, 4))),
    "trace": Case(lambda xp, x: xp.trace(x), _one((3, 4), (0, 2))),
    "trace_offset": Case(lambda xp, x: xp.trace(x, 1, 1, 2), _one((2, 3, 4))),
    "triu": Case(lambda xp, x: xp.triu(x, 1), _one((3, 4), (2, 3, 3))),
    "tril": Case(lambda xp, x: xp.tril(x, -1), _one((3, 4), (2, 3, 3), (0, 2))),
    "stack": Case(lambda xp, x, y: xp.stack([x, y], axis=-1), [((), ()), ((2, 3), (2, 3))]),
    "hstack": Case(lambda xp, x, y: xp.hstack([x, y]), [((), ()), ((3,), (2,)), ((2, 3), (2, 1))]),
    "vstack": Case(lambda xp, x, y: xp.vstack([x, y]), [((3,), (3,)), ((2, 3), (1, 3))]),
    "array": Case(lambda xp, x, y: xp.array([x, y]), [((), ()), ((2, 3), (2, 3))]),
    "asarray": Case(lambda xp, x: xp.asarray(x), SHAPES_1),
}
MATH_CASES: dict[str, Case] = {
    "square": Case(lambda xp, x: xp.square(x), SHAPES_1),
    "reciprocal": Case(lambda xp, x: xp.reciprocal(x), SHAPES_1, "positive"),
    "sign": Case(lambda xp, x: xp.sign(x), SHAPES_1),
    "clip": Case(lambda xp, x: xp.clip(x, -0.5, 0.5), SHAPES_1),
    "clip_low": Case(lambda xp, x: xp.clip(x, -0.5, None), SHAPES_1),
    "clip_arrays": Case(lambda xp, x, lo: xp.clip(x, lo, 0.8), [((3, 4), (4,))]),
    "min": Case(lambda xp, x: xp.min(x), _one((), (5,), (3, 4))),
    "min_axis": Case(lambda xp, x: xp.min(x, axis=1, keepdims=True), _one((3, 4), (2, 3, 2))),
    "amin": Case(lambda xp, x: xp.amin(x, axis=0), _one((3, 4))),
    "amax": Case(lambda xp, x: xp.amax(x, axis=(0, 1)), _one((3, 4), (2, 3, 2))),
    "var": Case(lambda xp, x: xp.var(x), _one((), (5,), (3, 4))),
    "var_axis": Case(lambda xp, x: xp.var(x, axis=0, ddof=1, keepdims=True), _one((3, 4))),
    "std": Case(lambda xp, x: xp.std(x), _one((5,), (3, 4))),
    "std_axis": Case(lambda xp, x: xp.std(x, axis=(0, 2), ddof=1), _one((3, 2, 4))),
    "log1p": Case(lambda xp, x: xp.log1p(x), SHAPES_1, "positive"),
    "expm1": Case(lambda xp, x: xp.expm1(x), SHAPES_1),
    "log2": Case(lambda xp, x: xp.log2(x), SHAPES_1, "positive"),
    "log10": Case(lambda xp, x: xp.log10(x), SHAPES_1, "positive"),
    "exp2": Case(lambda xp, x: xp.exp2(x), SHAPES_1),
    "sinh": Case(lambda xp, x: xp.sinh(x), SHAPES_1),
    "cosh": Case(lambda xp, x: xp.cosh(x), SHAPES_1),
    "arctan": Case(lambda xp, x: xp.arctan(x), SHAPES_1),
    "arcsin": Case(lambda xp, x: xp.arcsin(x), SHAPES_1, "unit"),
    "arccos": Case(lambda xp, x: xp.arccos(x), SHAPES_1, "unit"),
    "arcsinh": Case(lambda xp, x: xp.arcsinh(3.0 * x), SHAPES_1),
    "arctanh": Case(lambda xp, x: xp.arctanh(x), SHAPES_1, "unit"),
    "hypot": Case(lambda xp, x, y: xp.hypot(x, y), [((), ()), ((3, 4), (4,)), ((0,), ())]),
    "logaddexp": Case(lambda xp, x, y: xp.logaddexp(x, 3.0 * y), [((), ()), ((3, 4), (4,))]),
    "outer": Case(lambda xp, x, y: xp.outer(x, y), [((3,), (4,)), ((2, 2), (3,)), ((0,), (2,))]),
    "inner": Case(lambda xp, x, y: xp.inner(x, y), [((), (3,)), ((4,), (4,)), ((2, 4), (3, 4))]),
    "vdot": Case(lambda xp, x, y: xp.vdot(x, y), [((4,), (4,)), ((2, 3), (3, 2))]),
    "tensordot": Case(lambda xp, x, y: xp.tensordot(x, y), [((2, 3, 4), (3, 4, 2))]),
    "tensordot_pairs": Case(
        lambda xp, x, y: xp.tensordot(x, y, ([0, 2], [2, 1])), [((2, 3, 4), (3, 4, 2))]
    ),  # fmt: skip
    "tensordot_outer": Case(lambda xp, x, y: xp.tensordot(x, y, 0), [((2,), (3, 2)), ((), (3,))]),
    "kron": Case(lambda xp, x, y: xp.kron(x, y), [((2,), (3,)), ((2, 3), (2, 2)), ((2,), (2, 3))]),
    "cross": Case(
        lambda xp, x, y: xp.cross(x, y), [((3,), (3,)), ((4, 3), (3,)), ((2, 1, 3), (4, 3))]
    ),
    "norm": Case(lambda xp, x: xp.linalg.norm(x), _one((5,), (3, 4), (2, 3, 2))),
    "norm_1": Case(lambda xp, x: xp.linalg.norm(x, 1), _one((5,), (3, 4))),
    "norm_inf": Case(lambda xp, x: xp.linalg.norm(x, np.inf), _one((5,), (3, 4))),
    "norm_minus_inf": Case(
        lambda xp, x: xp.linalg.norm(x, -np.inf), _one((5,), (3, 4))
    ),  # fmt: skip
    "norm_fro": Case(
        lambda xp, x: xp.linalg.norm(x, "fro", axis=(1, 0), keepdims=True), _one((3, 4), (2, 3, 2))
    ),  # fmt: skip
    "norm_3": Case(lambda xp, x: xp.linalg.norm(x, 3, axis=-1), _one((3, 4))),
    "norm_0": Case(lambda xp, x: xp.linalg.norm(x, 0), _one((5,))),
    "norm_vector_axis": Case(
        lambda xp, x: xp.linalg.norm(x, axis=0, keepdims=True), _one((3, 4))
    ),  # fmt: skip
}
INDEX_CASES: dict[str, Case] = {
    "sort": Case(lambda xp, x: xp.sort(x), _one((5,), (3, 4), (0,))),
    "sort_axis0": Case(lambda xp, x: xp.sort(x, axis=0), _one((3, 4))),
    "cumsum": Case(lambda xp, x: xp.cumsum(x, axis=-1), _one((5,), (3, 4), (0,))),
    "cumsum_flat": Case(lambda xp, x: xp.cumsum(x), _one((), (3, 4))),
    "cumprod": Case(lambda xp, x: xp.cumprod(x, axis=0), _one((5,), (3, 4), (7, 2))),
    "prod": Case(lambda xp, x: xp.prod(x), _one((), (5,), (3, 4), (0,))),
    "prod_axis": Case(lambda xp, x: xp.prod(x, axis=1, keepdims=True), _one((3, 5), (2, 0))),
    "take": Case(lambda xp, x: xp.take(x, np.array([[0, -1], [2, 2]]), axis=0), _one((3,), (3, 4))),
    "take_flat": Case(lambda xp, x: xp.take(x, np.array([5, 0, -3])), _one((2, 3))),
    "take_along_axis": Case(
        lambda xp, x: xp.take_along_axis(x, xp.argsort(x, axis=1)[:, ::-1], axis=1), _one((3, 4))
    ),  # fmt: skip
    "index_array": Case(lambda xp, x: x[np.array([2, 0, 2]), 1:], _one((3, 4))),
    "index_arrays": Case(lambda xp, x: x[np.array([[0], [2]]), np.array([1, 3, -1])], _one((3, 4))),
    "index_apart": Case(lambda xp, x: x[[1, 0], :, 1], _one((2, 3, 4))),
    "index_mask": Case(lambda xp, x: x[np.array([True, False, True])], _one((3,), (3, 4))),
    "negative_step": Case(lambda xp, x: x[::-1, 3:0:-2], _one((3, 4))),
}
CASES = {**SHAPE_CASES, **MATH_CASES, **INDEX_CASES}
FLOAT_TESTS = ("isfinite", "isnan", "isinf")


def _inputs(case: Case, shapes: tuple[tuple[int, ...], ...], dtype: Any) -> list[np.ndarray]:
    rng = _rng(shapes, case.domain)
    arrays = []
    for s in shapes:
        if case.domain == "unit":
            values = rng.uniform(-0.9, 0.9, size=s)
        elif case.domain == "positive":
            values = rng.uniform(0.5, 2.0, size=s)
        else:
            values = rng.normal(size=s)
        arrays.append(np.asarray(values, dtype=dtype))
    return arrays


# --------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", list(CASES))
def test_values_match_numpy_under_jit(name: str, dtype: Any) -> None:
    case = CASES[name]
    for shapes in case.shapes:
        inputs = _inputs(case, shapes, dtype)
        expected = np.asarray(case.fn(np, *inputs))
        actual = td.jit(lambda *xs: case.fn(tnp, *xs))(*inputs)
        assert actual.shape == expected.shape, f"{name} {shapes}: {actual.shape}"
        assert actual.dtype == expected.dtype, f"{name} {shapes}: {actual.dtype}"
        rtol = 1e-5 if dtype == np.float32 else 1e-13
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol, err_msg=name)
        concrete = np.asarray(case.fn(tnp, *inputs))  # numpy itself, no tracer
        np.testing.assert_array_equal(concrete, expected)


@pytest.mark.parametrize("name", ["square", "var", "std", "sinh", "cosh", "vdot", "outer",
                                  "kron", "flip", "diag_vector", "trace", "norm"])  # fmt: skip
def test_complex_values_match_numpy(name: str) -> None:
    case = CASES[name]
    for shapes in case.shapes:
        inputs = [x + 1j * np.flip(x) for x in _inputs(case, shapes, np.float64)]
        expected = np.asarray(case.fn(np, *inputs))
        actual = td.jit(lambda *xs: case.fn(tnp, *xs))(*inputs)
        assert actual.dtype == expected.dtype
        np.testing.assert_allclose(actual, expected, rtol=1e-13, atol=1e-13, err_msg=name)


@pytest.mark.parametrize("name", FLOAT_TESTS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_float_tests_match_numpy(name: str, dtype: Any) -> None:
    specials = np.array([0.0, -1.5, 3e38, np.inf, -np.inf, np.nan])
    x = specials.astype(dtype)
    if np.dtype(dtype).kind == "c":
        x = np.zeros((6, 6), dtype)
        x.real, x.imag = specials[:, None], specials[None, :]  # no inf * 1j (nan parts)
    expected = getattr(np, name)(x)
    actual = td.jit(getattr(tnp, name))(x)
    assert actual.dtype == np.bool_
    np.testing.assert_array_equal(actual, expected)


# --------------------------------------------------------------------------
# Derivatives
# --------------------------------------------------------------------------


def _weights(case: Case, inputs: Sequence[np.ndarray]) -> np.ndarray:
    shape = np.shape(case.fn(np, *inputs))
    return _rng("weights", shape).uniform(0.5, 1.5, size=shape)


def _central_differences(fn: Callable[..., Any], inputs: list[np.ndarray], step: float = 1e-6
                         ) -> list[np.ndarray]:  # fmt: skip
    gradients = []
    for k, x in enumerate(inputs):
        gradient = np.zeros_like(x)
        for index in np.ndindex(x.shape):
            up, down = [a.copy() for a in inputs], [a.copy() for a in inputs]
            up[k][index] += step
            down[k][index] -= step
            gradient[index] = (fn(*up) - fn(*down)) / (2 * step)
        gradients.append(gradient)
    return gradients


def _grad(case: Case, inputs: list[np.ndarray], w: np.ndarray) -> list[np.ndarray]:
    argnums = tuple(range(len(inputs)))
    grads = td.grad(lambda *xs: tnp.sum(case.fn(tnp, *xs) * w), argnums=argnums)(*inputs)
    return [np.asarray(g) for g in grads]


@pytest.fixture
def interp_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """Derivatives of the composites evaluated by the reference interpreter: what
    they check is the AD of the composition (the lowering of every primitive is
    tested on its own, and the values tests above compile each composite), and
    it skips an LLVM compilation per case."""
    monkeypatch.setenv("TIDU_BACKEND", "interp")


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.usefixtures("interp_backend")
def test_gradients_match_finite_differences(name: str) -> None:
    case = CASES[name]
    for shapes in case.shapes:
        inputs = _inputs(case, shapes, np.float64)
        w = _weights(case, inputs)
        expected = _central_differences(lambda *xs, w=w: np.sum(case.fn(np, *xs) * w), inputs)
        for actual, numeric in zip(_grad(case, inputs, w), expected, strict=True):
            assert actual.shape == numeric.shape
            np.testing.assert_allclose(actual, numeric, rtol=1e-6, atol=1e-7, err_msg=name)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.usefixtures("interp_backend")
def test_gradients_match_jax(name: str, jax_numpy: ModuleType) -> None:
    import jax

    case = CASES[name]
    for shapes in case.shapes[:1]:  # every shape is checked against finite differences
        inputs = _inputs(case, shapes, np.float64)
        w = _weights(case, inputs)
        argnums = tuple(range(len(inputs)))
        theirs = jax.grad(lambda *xs, w=w: jax_numpy.sum(case.fn(jax_numpy, *xs) * w),
                          argnums=argnums)(*inputs)  # fmt: skip
        for actual, expected in zip(_grad(case, inputs, w), theirs, strict=True):
            np.testing.assert_allclose(actual, np.asarray(expected), rtol=1e-10, atol=1e-12,
                                       err_msg=name)  # fmt: skip


@pytest.fixture
def jax_numpy() -> ModuleType:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return pytest.importorskip("jax.numpy")


def test_sign_has_derivative_zero() -> None:
    x = np.array([-2.0, 0.0, 3.0])
    np.testing.assert_array_equal(td.grad(lambda v: tnp.sum(tnp.sign(v)))(x), np.zeros(3))
    np.testing.assert_array_equal(td.jit(tnp.sign)(np.array([-0.5, 0.0, np.nan]))[:2], [-1, 0])
    assert np.isnan(td.jit(tnp.sign)(np.array([np.nan]))[0])


def test_clip_gradient_is_one_inside_and_zero_outside() -> None:
    x = np.array([-2.0, 0.1, 2.0])
    gradient = td.grad(lambda v: tnp.sum(tnp.clip(v, -1.0, 1.0)))(x)
    np.testing.assert_array_equal(gradient, [0.0, 1.0, 0.0])


# --------------------------------------------------------------------------
# Numerically delicate arguments
# --------------------------------------------------------------------------


EXTREMES: dict[str, tuple[Callable[..., Any], Callable[..., Any], list[np.ndarray]]] = {
    "sinh": (tnp.sinh, np.sinh, [np.array([1e-10, -3e-8, 0.5, 1.0, 20.0, -710.0, 711.0])]),
    "cosh": (tnp.cosh, np.cosh, [np.array([0.0, 1e-9, -20.0, 710.0])]),
    "expm1": (tnp.expm1, np.expm1,
              [np.array([0.0, 1e-300, -1e-10, 0.0999, 0.1, 0.1001, -0.1, 700.0, -800.0])]),
    "arcsinh": (tnp.arcsinh, np.arcsinh,
                [np.array([0.0, 1e-12, -1e-5, 0.09, 0.2, -3.0, 1e7, -1e9, 1e300, np.inf])]),
    "arctanh": (tnp.arctanh, np.arctanh, [np.array([0.0, 1e-12, -0.05, 0.1, 0.5, -0.999999])]),
    "arcsin": (tnp.arcsin, np.arcsin, [np.array([1e-12, -1.0, 1.0, 0.999999])]),
    "arccos": (tnp.arccos, np.arccos, [np.array([-1.0, 1.0, 0.999999, 1e-12])]),
    "hypot": (tnp.hypot, np.hypot,
              [np.array([3e200, 1e-300, 0.0, np.inf, 3.0]), np.array([4e200, 1e-300, 0.0, 1.0, -4.0])]),
    "logaddexp": (tnp.logaddexp, np.logaddexp,
                  [np.array([1000.0, -1000.0, 0.0, 1e-20, np.inf, -np.inf, 2.0]),
                   np.array([1000.0, -999.0, -50.0, 0.0, np.inf, -np.inf, -np.inf])]),
}  # fmt: skip


@pytest.mark.parametrize("name", list(EXTREMES))
def test_extreme_arguments_match_numpy(name: str) -> None:
    ours, theirs, inputs = EXTREMES[name]
    with np.errstate(over="ignore"):
        expected = theirs(*inputs)
    rtol = 2e-13 if name in ("sinh", "cosh") else 4e-15  # exp(x) near 710: condition 710
    np.testing.assert_allclose(td.jit(ours)(*inputs), expected, rtol=rtol, atol=0)


def test_outside_the_domain_is_nan_as_in_numpy() -> None:
    x = np.array([1.5, -2.0])
    for name in ("arcsin", "arccos", "arctanh"):
        assert np.isnan(td.jit(getattr(tnp, name))(x)).all(), name
    assert np.isnan(td.jit(tnp.log2)(np.array([-1.0])))[0]


GRADIENT_POINTS = {
    "arcsinh": (tnp.arcsinh, lambda v: 1.0 / np.sqrt(1.0 + v * v),
                np.array([0.0, 1e-12, -0.05, 0.3, -40.0, 1e9])),
    "arctanh": (tnp.arctanh, lambda v: 1.0 / (1.0 - v * v), np.array([0.0, 1e-12, 0.0999, -0.5])),
    "sinh": (tnp.sinh, np.cosh, np.array([0.0, 1e-9, 0.999, -1.0, 30.0])),
    "cosh": (tnp.cosh, np.sinh, np.array([0.0, 1e-9, -30.0])),
    "arctan": (tnp.arctan, lambda v: 1.0 / (1.0 + v * v), np.array([0.0, -3.0, 1e10])),
    "log2": (tnp.log2, lambda v: 1.0 / (v * np.log(2.0)), np.array([1e-300, 1.0, 1e300])),
    "exp2": (tnp.exp2, lambda v: np.exp2(v) * np.log(2.0), np.array([-1000.0, 0.0, 1000.0])),
}  # fmt: skip


@pytest.mark.parametrize("name", list(GRADIENT_POINTS))
def test_gradients_at_delicate_points(name: str) -> None:
    """Finite and accurate derivatives where a naive formula cancels or overflows."""
    fn, derivative, x = GRADIENT_POINTS[name]
    gradient = td.grad(lambda v: tnp.sum(fn(v)))(x)
    np.testing.assert_allclose(gradient, derivative(x), rtol=1e-12)


def test_hypot_and_logaddexp_gradients_at_special_points() -> None:
    x, y = np.array([3e200, 1e-300, 3.0]), np.array([4e200, 1e-300, -4.0])
    gx, gy = td.grad(lambda a, b: tnp.sum(tnp.hypot(a, b)), argnums=(0, 1))(x, y)
    h = np.hypot(x, y)
    np.testing.assert_allclose(gx, x / h, rtol=1e-14)
    np.testing.assert_allclose(gy, y / h, rtol=1e-14)
    gx, gy = td.grad(lambda a, b: tnp.sum(tnp.logaddexp(a, b)), argnums=(0, 1))(
        np.array([1000.0, 2.0, -800.0]), np.array([1000.0, 2.0, 5.0])
    )
    np.testing.assert_allclose(gx, [0.5, 0.5, 0.0], atol=1e-300)
    np.testing.assert_allclose(gy, [0.5, 0.5, 1.0])
    # at a tie, the second derivative is sigmoid'(0) = 1/4 (a tie formula would give 0)
    second = td.hessian(lambda a: tnp.logaddexp(a, 0.3))(np.array(0.3))
    np.testing.assert_allclose(second, 0.25, rtol=1e-14)


# --------------------------------------------------------------------------
# vmap of the shape functions
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", [*SHAPE_CASES, *INDEX_CASES])
def test_shape_functions_under_vmap(name: str) -> None:
    case = CASES[name]
    for shapes in case.shapes:
        inputs = [np.stack([x, 2.0 * x, -x]) for x in _inputs(case, shapes, np.float64)]
        actual = td.vmap(lambda *xs: case.fn(tnp, *xs))(*inputs)
        expected = np.stack([case.fn(np, *(x[i] for x in inputs)) for i in range(3)])
        assert actual.shape == expected.shape, f"{name} {shapes}"
        np.testing.assert_allclose(actual, expected, rtol=1e-15, err_msg=name)


# --------------------------------------------------------------------------
# Constructors and constants
# --------------------------------------------------------------------------


def test_constructors_are_numpy() -> None:
    for ours, theirs in [
        (tnp.zeros(3), np.zeros(3)), (tnp.ones((2, 3), tnp.float32), np.ones((2, 3), np.float32)),
        (tnp.full((2,), 1.5), np.full((2,), 1.5)), (tnp.eye(3, 4, 1), np.eye(3, 4, 1)),
        (tnp.identity(2, tnp.complex64), np.identity(2, np.complex64)),
        (tnp.arange(1.0, 2.0, 0.25), np.arange(1.0, 2.0, 0.25)), (tnp.arange(4), np.arange(4)),
        (tnp.linspace(0.0, 1.0, 5), np.linspace(0.0, 1.0, 5)),
        (tnp.linspace(0.0, 1.0, 4, endpoint=False), np.linspace(0.0, 1.0, 4, endpoint=False)),
        (tnp.zeros_like(np.ones((2, 2), np.float32)), np.zeros((2, 2), np.float32)),
        (tnp.full_like(np.ones(2), 3.0), np.full(2, 3.0)), (tnp.array([1.0, 2.0]), np.ones(2) * [1, 2]),
    ]:  # fmt: skip
        assert isinstance(ours, np.ndarray) and ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours, theirs)
    assert (
        tnp.empty((2, 3)).shape == (2, 3)
        and tnp.empty_like(np.ones(2, np.float32)).dtype == np.float32
    )
    assert tnp.zeros(2).dtype == np.float64  # numpy's default


def test_constants_are_numpy_s() -> None:
    assert (tnp.pi, tnp.e, tnp.inf) == (np.pi, np.e, np.inf) and np.isnan(tnp.nan)
    assert (tnp.float32, tnp.float64, tnp.complex64, tnp.complex128) == (
        np.float32, np.float64, np.complex64, np.complex128)  # fmt: skip
    assert tnp.newaxis is None
    np.testing.assert_array_equal(td.jit(lambda x: x[:, tnp.newaxis])(np.ones(2)), np.ones((2, 1)))


def test_like_constructors_of_a_tracer_are_constants_of_its_shape_and_dtype() -> None:
    x = np.array([[1.0, 2.0, 3.0]], dtype=np.float32)

    def f(v: Any) -> Any:
        return (v * tnp.ones_like(v) + tnp.zeros_like(v) + tnp.full_like(v, 2.0)
                + tnp.empty_like(v))  # fmt: skip

    result = td.jit(f)(x)
    assert result.dtype == np.float32
    np.testing.assert_array_equal(result, x + 2.0)
    np.testing.assert_array_equal(td.grad(lambda v: tnp.sum(f(v)))(x.astype(np.float64)),
                                  np.ones((1, 3)))  # fmt: skip
    assert td.jit(lambda v: v + tnp.zeros_like(v, dtype=np.float64))(x).dtype == np.float64


def _linspace_of(endpoint: bool, axis: int) -> Callable[[Any, Any], Any]:
    return lambda a, b: tnp.linspace(a, b, 5, endpoint=endpoint, axis=axis)


def test_traced_fill_values_and_endpoints_are_differentiated() -> None:
    s = np.array(0.5)
    np.testing.assert_allclose(td.jit(lambda v: tnp.full((2, 3), v))(s), np.full((2, 3), 0.5))
    np.testing.assert_allclose(td.grad(lambda v: tnp.sum(tnp.full((2, 3), v)))(s), 6.0)
    np.testing.assert_allclose(td.grad(lambda v: tnp.sum(tnp.full_like(np.ones(4), v)))(s), 4.0)
    start, stop = np.array([0.0, 1.0]), np.array([1.0, 3.0])
    for endpoint, axis in [(True, 0), (False, 1), (True, -1)]:
        expected = np.linspace(start, stop, 5, endpoint=endpoint, axis=axis)
        actual = td.jit(_linspace_of(endpoint, axis))(start, stop)
        np.testing.assert_allclose(actual, expected, rtol=1e-15)
        assert actual.dtype == expected.dtype
    grad_start, grad_stop = td.grad(lambda a, b: tnp.sum(tnp.linspace(a, b, 5)), argnums=(0, 1))(
        start, stop
    )
    np.testing.assert_allclose(grad_start, [2.5, 2.5])  # the fractions 0, 1/4, ..., 1 sum to 2.5
    np.testing.assert_allclose(grad_stop, [2.5, 2.5])


def test_array_of_traced_values_stacks_them() -> None:
    def f(x: Any) -> Any:
        return tnp.array([[x[0], 2.0 * x[1]], [x[1], 1.0]])

    x = np.array([3.0, 4.0], dtype=np.float32)
    result = td.jit(f)(x)
    np.testing.assert_array_equal(result, [[3.0, 8.0], [4.0, 1.0]])
    assert result.dtype == np.array([[np.float32(3.0), 1.0]]).dtype  # numpy's promotion
    np.testing.assert_array_equal(td.grad(lambda v: tnp.sum(f(v)))(x.astype(np.float64)), [1, 3])
    assert td.jit(lambda v: tnp.asarray(v, tnp.float32))(np.ones(2)).dtype == np.float32
    assert (
        td.jit(lambda v: tnp.array([v, v], dtype=np.complex128))(np.ones(2)).dtype == np.complex128
    )


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


ERRORS: list[tuple[Callable[[Any], Any], type[Exception], str]] = [
    (lambda x: tnp.squeeze(x, axis=0), ValueError, "axis 0 of shape \\(2, 3\\)"),
    (lambda x: tnp.squeeze(x, axis=5), ValueError, "axis 5 is out of bounds"),
    (lambda x: tnp.expand_dims(x, 4), ValueError, "axis 4 is out of bounds"),
    (lambda x: tnp.moveaxis(x, 0, 3), ValueError, "axis 3 is out of bounds"),
    (lambda x: tnp.moveaxis(x, (0, 1), 0), ValueError, "same number of elements"),
    (lambda x: tnp.swapaxes(x, 0, -3), ValueError, "axis -3 is out of bounds"),
    (lambda x: tnp.split(x, 2, axis=1), ValueError, "axis 1 of size 3 into 2 sections"),
    (lambda x: tnp.split(x, 2, axis=2), ValueError, "axis 2 is out of bounds"),
    (lambda x: tnp.flip(x, 2), ValueError, "axis 2 is out of bounds"),
    (lambda x: tnp.roll(x, 1, axis=-4), ValueError, "axis -4 is out of bounds"),
    (lambda x: tnp.repeat(x, np.array([1, 2])), ValueError, "could not be broadcast"),
    (lambda x: tnp.repeat(x, -1), ValueError, "non-negative integers"),
    (lambda x: tnp.repeat(x, 2, axis=3), ValueError, "axis 3 is out of bounds"),
    (lambda x: tnp.tile(x, -1), ValueError, "negative repetitions"),
    (lambda x: tnp.diag(x[None]), ValueError, "1- or 2-d, got shape \\(1, 2, 3\\)"),
    (lambda x: tnp.diagonal(x[0]), ValueError, "at least two dimensions, got \\(3,\\)"),
    (lambda x: tnp.trace(x, 0, 0, 0), ValueError, "repeated axis"),
    (lambda x: tnp.triu(x[0, 0]), ValueError, "triu: input must be at least 1-d"),
    (lambda x: tnp.min(x, axis=2), ValueError, "axis 2 is out of bounds"),
    (lambda x: tnp.min(x[:0]), ValueError, "zero-size array to reduction operation minimum"),
    (lambda x: tnp.var(x, axis=(0, 0)), ValueError, "repeated axis"),
    (lambda x: tnp.std(x, out=x), TypeError, "out= is not supported"),
    (lambda x: tnp.stack([x, x[0]]), ValueError, "must have the same shape"),
    (lambda x: tnp.stack([x], axis=3), ValueError, "axis 3 is out of bounds"),
    (lambda x: tnp.tensordot(x, x, 3), ValueError, "axes=3 for shapes \\(2, 3\\) and \\(2, 3\\)"),
    (lambda x: tnp.tensordot(x, x, ([0], [1])), ValueError, "shape-mismatch"),
    (lambda x: tnp.vdot(x, x[0]), ValueError, "different sizes"),
    (lambda x: tnp.cross(x[:, :2], x), ValueError, "3-vectors only, got shapes \\(2, 2\\)"),
    (lambda x: tnp.cross(x[:, :2], x[:, :2]), ValueError, "3-vectors only"),
    (lambda x: tnp.cross(x, x, axis=0), ValueError, "last axis only"),
    (lambda x: tnp.sign(x.astype(np.complex128)), TypeError, "sign is defined for real"),
    (lambda x: tnp.arcsin(x.astype(np.complex128)), TypeError, "arcsin is defined for real"),
    (lambda x: tnp.hypot(x, 1j), TypeError, "hypot is defined for real"),
    (lambda x: tnp.linalg.norm(x, 3), ValueError, "Invalid norm order 3 for matrices"),
    (lambda x: tnp.linalg.norm(x[0], "fro"), ValueError, "Invalid norm order 'fro' for vectors"),
    (lambda x: tnp.linalg.norm(x[None], 1), ValueError, "Improper number of dimensions"),
    (lambda x: tnp.linalg.norm(x, axis=2), ValueError, "axis 2 is out of bounds"),
    (lambda x: tnp.arange(x[0, 0]), TypeError, "start, stop and step must be concrete"),
    (lambda x: tnp.linspace(x[0, 0], 1.0, 3, retstep=True), TypeError, "retstep"),
]  # fmt: skip


@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_bad_arguments_raise_errors_naming_them(index: int) -> None:
    fn, error, message = ERRORS[index]
    with pytest.raises(error, match=message):
        td.jit(fn)(np.ones((2, 3)))


def test_unknown_names_point_to_the_coverage_table() -> None:
    with pytest.raises(AttributeError, match="tidu_mlir.numpy has no 'fft'; see the coverage"):
        _ = tnp.fft
    assert not hasattr(tnp, "frobnicate")


def test_eager_functions_match_and_record() -> None:
    import tidu_mlir.eager as eager

    te: Any = eager  # the functions are generated (tnp.__all__)

    x = te.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    total = (te.var(x, 1, ddof=1).sum() + te.trace(x) + te.flip(x, 1)[0, 0]
             + te.split(x, 3, axis=1)[1].sum() + te.clip(x, None, 2.5).sum())  # fmt: skip
    total.backward()
    expected = (2.0 * (x.numpy() - x.numpy().mean(1, keepdims=True)) / 2.0 + np.eye(2, 3)
                + np.array([[0, 0, 1], [0, 0, 0]]) + np.array([[0, 1, 0], [0, 1, 0]])
                + (x.numpy() < 2.5))  # fmt: skip
    np.testing.assert_allclose(x.grad.numpy(), expected)  # type: ignore[union-attr]
    assert type(te.zeros(3)) is te.Tensor and not te.arange(3).requires_grad
    np.testing.assert_array_equal(te.eye(2).numpy(), np.eye(2))
    stacked = te.stack([x, x], axis=0)
    assert stacked.shape == (2, 2, 3) and stacked.requires_grad


LOGICAL = ("logical_and", "logical_or", "logical_xor")


@pytest.mark.parametrize("name", LOGICAL)
def test_logical_functions_match_numpy(name: str) -> None:
    """Truth values of booleans and of numbers (nonzero is true), broadcast."""
    a = np.array([[True, False, True, False]])
    b = np.array([[True], [False]])
    x = np.array([0.0, 2.0, -1.0, 0.0])
    for left, right in ((a, b), (x, b), (a, np.float64(0.0))):
        expected = getattr(np, name)(left, right)
        np.testing.assert_array_equal(td.jit(getattr(tnp, name))(left, right), expected)
    np.testing.assert_array_equal(td.jit(tnp.logical_not)(x), np.logical_not(x))


def test_boolean_operators_on_traced_arrays() -> None:
    """`& | ^ ~` on boolean tracers (numpy's bitwise functions on booleans);
    integers are refused with a clear error."""
    x = np.array([-1.0, 0.5, 2.0, 3.0])
    inside = td.jit(lambda v: ((v > 0.0) & (v < 2.5)) | ~(v != 3.0) ^ (v < 0.0))(x)
    np.testing.assert_array_equal(inside, ((x > 0.0) & (x < 2.5)) | ~(x != 3.0) ^ (x < 0.0))
    with pytest.raises(TypeError, match="boolean arrays only"):
        td.jit(lambda v: v & 1)(np.array([1, 2]))
