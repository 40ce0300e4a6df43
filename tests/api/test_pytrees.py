"""Pytree arguments and results, `has_aux`, `argnums` tuples, static arguments
and Python scalars in the transforms.

Every transform is checked for structure and values against finite
differences (numpy, always run) and against JAX where it is installed."""

from __future__ import annotations

import collections
import dataclasses
import functools
from typing import Any

import numpy as np
import pytest

import tidu_mlir as td
import tidu_mlir.numpy as tnp
from tidu_mlir.tree_util import (
    register_dataclass,
    tree_leaves,
    tree_map,
    tree_structure,
)

Point = collections.namedtuple("Point", "x y")


@register_dataclass
@dataclasses.dataclass
class Layer:
    w: Any
    b: Any
    act: str = dataclasses.field(default="tanh", metadata={"static": True})


def _params(rng: np.random.Generator) -> dict[str, Any]:
    """A dict holding a registered dataclass, a namedtuple, a tuple with a None
    and a list: every kind of node."""
    return {
        "layer": Layer(w=rng.standard_normal(3), b=rng.standard_normal(())),
        "point": Point(x=rng.standard_normal(3), y=(rng.standard_normal(2), None)),
        "scale": [rng.standard_normal(())],
    }


def loss(params: dict[str, Any], x: Any, xp: Any = tnp) -> Any:
    layer, point = params["layer"], params["point"]
    h = xp.tanh(layer.w * x + layer.b)
    return xp.sum(h * point.x) + xp.sum(point.y[0] ** 2) * params["scale"][0]


def model(params: dict[str, Any], x: Any, xp: Any = tnp) -> Any:
    """A pytree-valued function: a dict holding a tuple and a None."""
    layer, point = params["layer"], params["point"]
    h = xp.sin(layer.w * x) + layer.b
    return {"h": h, "pair": (h * point.x, point.y[0] * params["scale"][0]), "none": None}


def loss_with_aux(params: dict[str, Any], x: Any, xp: Any = tnp) -> Any:
    value = loss(params, x, xp)
    return value, {"twice": 2.0 * value, "h": params["layer"].w * x, "none": None}


def linear(params: dict[str, Any], xp: Any = tnp) -> Any:
    layer, point = params["layer"], params["point"]
    return {"a": layer.w * 2.0 + point.x, "b": (point.y[0] * 3.0,)}


def _args(seed: int = 0) -> tuple[dict[str, Any], np.ndarray]:
    rng = np.random.default_rng(seed)
    return _params(rng), rng.standard_normal(3)


def _like(tree: Any, seed: int) -> Any:
    rng = np.random.default_rng(seed)
    return tree_map(lambda a: rng.standard_normal(np.shape(a)), tree)


def _assert_trees_close(ours: Any, expected: Any, rtol: float = 1e-9, atol: float = 1e-12) -> None:
    assert tree_structure(ours) == tree_structure(expected), (ours, expected)
    for a, b in zip(tree_leaves(ours), tree_leaves(expected), strict=True):
        assert np.shape(a) == np.shape(b)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def _vdot(a: Any, b: Any) -> float:
    return float(sum(np.vdot(x, y) for x, y in zip(tree_leaves(a), tree_leaves(b), strict=True)))


def _finite_difference(fn: Any, args: tuple[Any, ...], tangents: tuple[Any, ...]) -> Any:
    """5-point central differences of the pytree `fn(*args)` along `tangents`."""
    h = 1e-3

    def at(step: float) -> Any:
        return fn(*tree_map(lambda a, t: a + step * t, args, tangents))

    f2, f1, m1, m2 = at(2 * h), at(h), at(-h), at(-2 * h)
    return tree_map(lambda a, b, c, d: (-a + 8 * b - 8 * c + d) / (12 * h), f2, f1, m1, m2)


numpy_loss = functools.partial(loss, xp=np)
numpy_model = functools.partial(model, xp=np)

# --------------------------------------------------------------------------
# Structure and values against finite differences (no JAX needed)
# --------------------------------------------------------------------------


def test_grad_has_the_structure_of_its_argument() -> None:
    params, x = _args()
    g = td.grad(loss)(params, x)
    assert isinstance(g, dict) and set(g) == {"layer", "point", "scale"}
    assert isinstance(g["layer"], Layer) and isinstance(g["point"], Point)
    assert g["point"].y[1] is None and isinstance(g["scale"], list)
    assert tree_structure(g) == tree_structure(params)
    tangent = _like(params, 1)
    expected = _finite_difference(numpy_loss, (params, x), (tangent, np.zeros(3)))
    assert _vdot(g, tangent) == pytest.approx(float(expected), rel=1e-7)


def test_argnums_tuple_gives_a_tuple_of_structured_gradients() -> None:
    params, x = _args()
    g_params, g_x = td.grad(loss, argnums=(0, 1))(params, x)
    _assert_trees_close(g_params, td.grad(loss)(params, x))
    expected = _finite_difference(lambda y: numpy_loss(params, y), (x,), (np.ones(3),))
    assert float(np.sum(g_x)) == pytest.approx(float(expected), rel=1e-7)
    (only_x,) = td.grad(loss, argnums=(-1,))(params, x)
    np.testing.assert_allclose(only_x, g_x, rtol=1e-12)
    value, grads = td.value_and_grad(loss, argnums=(1, 0))(params, x)
    assert value == pytest.approx(float(numpy_loss(params, x)), rel=1e-12)
    assert isinstance(grads, tuple) and tree_structure(grads[1]) == tree_structure(params)


def test_jvp_linearize_vjp_on_pytrees_match_finite_differences() -> None:
    params, x = _args()
    t_params, t_x = _like(params, 2), _like(x, 3)
    expected = _finite_difference(numpy_model, (params, x), (t_params, t_x))
    out, tangent_out = td.jvp(model, (params, x), (t_params, t_x))
    _assert_trees_close(out, numpy_model(params, x))
    _assert_trees_close(tangent_out, expected, rtol=1e-7, atol=1e-9)
    out2, f_jvp = td.linearize(model, params, x)
    _assert_trees_close(out2, out)
    _assert_trees_close(f_jvp(t_params, t_x), tangent_out, rtol=1e-12)
    out3, vjp_fn = td.vjp(model, params, x)
    ct = _like(out3, 4)
    ct_params, ct_x = vjp_fn(ct)
    assert tree_structure(ct_params) == tree_structure(params) and ct_x.shape == x.shape
    # the adjoint identity <ct, J t> = <J^T ct, t>
    assert _vdot(ct, tangent_out) == pytest.approx(
        _vdot(ct_params, t_params) + _vdot(ct_x, t_x), rel=1e-10
    )


def test_jit_hvp_and_linear_transpose_on_pytrees() -> None:
    params, x = _args()
    _assert_trees_close(td.jit(model)(params, x), numpy_model(params, x))
    t = _like(params, 5)
    product = td.hvp(lambda p: loss(p, x), (params,), (t,))
    grad_fd = _finite_difference(lambda p: td.grad(loss)(p, x), (params,), (t,))
    _assert_trees_close(product, grad_fd, rtol=1e-6, atol=1e-8)
    ct = {"a": np.ones(3), "b": (np.arange(2.0),)}
    (transposed,) = td.linear_transpose(linear, params)(ct)
    assert tree_structure(transposed) == tree_structure(params)
    np.testing.assert_allclose(transposed["layer"].w, 2.0 * np.ones(3))
    np.testing.assert_allclose(transposed["point"].x, np.ones(3))
    np.testing.assert_allclose(transposed["point"].y[0], 3.0 * np.arange(2.0))
    np.testing.assert_allclose(transposed["scale"][0], 0.0)  # unused: zero


def test_nested_transforms_on_pytrees() -> None:
    params, x = _args()
    expected = td.grad(loss)(params, x)
    _assert_trees_close(td.jit(td.grad(loss))(params, x), expected, rtol=1e-12)
    second = td.grad(lambda p: tnp.sum(td.grad(loss, argnums=1)(p, x)))(params)
    assert tree_structure(second) == tree_structure(params)


@pytest.mark.parametrize("transform", ["jacfwd", "jacrev"])
def test_jacobian_of_pytrees_matches_finite_differences(transform: str) -> None:
    """Each block `jac[out][arg][in]` has shape `out.shape + in.shape` and its
    contraction with a tangent of `in` is the directional derivative."""
    params, x = _args(11)
    jac = getattr(td, transform)(model, argnums=(0, 1))(params, x)
    outputs = numpy_model(params, x)
    entries = tree_structure(outputs).flatten_up_to(jac)  # raises unless jac has outputs' structure
    tangents = (_like(params, 12), _like(x, 13))
    expected = _finite_difference(numpy_model, (params, x), tangents)
    for entry, out, derivative in zip(
        entries, tree_leaves(outputs), tree_leaves(expected), strict=True
    ):
        assert tree_structure(entry) == tree_structure((params, x))
        total = np.zeros(np.shape(out))
        for block, t in zip(tree_leaves(entry), tree_leaves(tangents), strict=True):
            assert block.shape == np.shape(out) + np.shape(t)
            total = total + np.tensordot(block, t, axes=np.ndim(t))
        np.testing.assert_allclose(total, derivative, rtol=1e-7, atol=1e-9)


def test_jacobians_and_hessian_with_aux() -> None:
    params, x = _args(14)
    for transform in (td.jacfwd, td.jacrev):
        jac, aux = transform(loss_with_aux, argnums=1, has_aux=True)(params, x)
        np.testing.assert_allclose(jac, td.grad(loss, argnums=1)(params, x), rtol=1e-12)
        np.testing.assert_allclose(aux["twice"], 2 * numpy_loss(params, x), rtol=1e-12)
        assert aux["none"] is None
    hess, aux = td.hessian(loss_with_aux, argnums=1, has_aux=True)(params, x)
    t = _like(x, 15)
    expected = _finite_difference(lambda v: td.grad(loss, argnums=1)(params, v), (x,), (t,))
    np.testing.assert_allclose(hess @ t, expected, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(aux["h"], params["layer"].w * x)
    with pytest.raises(TypeError, match="has_aux=True requires the function to return a pair"):
        td.jacrev(loss, has_aux=True)(params, x)


def test_jacobians_of_empty_inputs_are_empty() -> None:
    empty = np.zeros(0)
    assert td.jacfwd(lambda v: v * 2.0)(empty).shape == (0, 0)
    assert td.jacrev(lambda v: v * 2.0)(empty).shape == (0, 0)
    assert td.hessian(lambda v: tnp.sum(v**2))(empty).shape == (0, 0)


def test_tuples_of_equal_arrays_are_never_stacked() -> None:
    a, b = np.ones(2), np.arange(2.0)
    result = td.jit(lambda t: t)((a, b))
    assert isinstance(result, tuple) and len(result) == 2
    g = td.grad(lambda t: tnp.sum(t[0] * t[1]))((a, b))
    assert isinstance(g, tuple) and len(g) == 2
    np.testing.assert_allclose(g[0], b)
    np.testing.assert_allclose(g[1], a)
    g_list = td.grad(lambda t: tnp.sum(t[0] * t[1]))([a, b])
    assert isinstance(g_list, list)
    jac = td.jacfwd(lambda t: t[0])((a, b))
    assert isinstance(jac, tuple) and len(jac) == 2
    np.testing.assert_allclose(jac[0], np.eye(2))
    np.testing.assert_allclose(jac[1], np.zeros((2, 2)))


def test_none_outputs_and_leaves() -> None:
    x = np.ones(2)
    assert td.jit(lambda x: None)(x) is None
    out = td.jit(lambda x: (x * 2.0, None, {"n": None}))(x)
    assert out[1] is None and out[2] == {"n": None}
    g = td.grad(lambda p: tnp.sum(p[0] ** 2))((x, None))
    assert g[1] is None
    np.testing.assert_allclose(g[0], 2 * x)


def test_the_structure_is_part_of_the_cache_key() -> None:
    calls: list[Any] = []

    def f(tree):
        calls.append(tree_structure(tree))
        return tree_leaves(tree)[0] * 2.0

    jitted = td.jit(f)
    jitted({"a": np.ones(2)})
    jitted({"a": np.zeros(2)})
    jitted({"b": np.ones(2)})
    jitted((np.ones(2),))
    jitted([np.ones(2)])
    assert len(calls) == 4


# --------------------------------------------------------------------------
# has_aux
# --------------------------------------------------------------------------


def test_has_aux_for_grad_value_and_grad_and_vjp() -> None:
    params, x = _args()
    g, aux = td.grad(loss_with_aux, has_aux=True)(params, x)
    _assert_trees_close(g, td.grad(loss)(params, x), rtol=1e-12)
    value = float(numpy_loss(params, x))
    expected_aux = {"twice": 2.0 * value, "h": params["layer"].w * x, "none": None}
    _assert_trees_close(aux, expected_aux)
    assert all(isinstance(leaf, np.ndarray) for leaf in tree_leaves(aux))
    (value2, aux2), (g2, g_x) = td.value_and_grad(loss_with_aux, (0, 1), has_aux=True)(params, x)
    assert value2 == pytest.approx(value, rel=1e-12)
    _assert_trees_close(aux2, expected_aux)
    _assert_trees_close(g2, g, rtol=1e-12)
    out, vjp_fn, aux3 = td.vjp(loss_with_aux, params, x, has_aux=True)
    assert out == pytest.approx(value, rel=1e-12)
    _assert_trees_close(aux3, expected_aux)
    ct_params, ct_x = vjp_fn(np.array(1.0))
    _assert_trees_close(ct_params, g, rtol=1e-12)
    np.testing.assert_allclose(ct_x, g_x, rtol=1e-12)


def test_has_aux_requires_a_pair() -> None:
    with pytest.raises(TypeError, match=r"has_aux=True requires .* pair"):
        td.grad(lambda x: tnp.sum(x), has_aux=True)(np.ones(2))
    with pytest.raises(TypeError, match="a tuple of 3"):
        td.vjp(lambda x: (x, x, x), np.ones(2), has_aux=True)


def test_aux_is_not_differentiated_under_an_outer_transform() -> None:
    def outer(x):
        g, aux = td.grad(lambda y: (tnp.sum(y**2), y * 3.0), has_aux=True)(x)
        return tnp.sum(g) + tnp.sum(aux)

    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(td.grad(outer)(x), 2.0 + 3.0)


# --------------------------------------------------------------------------
# Static arguments
# --------------------------------------------------------------------------


def test_static_argnums_trace_once_per_distinct_value() -> None:
    calls: list[Any] = []

    def power(x, n):
        calls.append(n)
        out = x
        for _ in range(n - 1):  # Python control flow on the static value
            out = out * x
        return out

    jitted = td.jit(power, static_argnums=1)
    x = np.array([1.5, 2.0])
    np.testing.assert_allclose(jitted(x, 3), x**3)
    np.testing.assert_allclose(jitted(x * 2, 3), (x * 2) ** 3)
    np.testing.assert_allclose(jitted(x, 2), x**2)
    np.testing.assert_allclose(jitted(x, 3), x**3)
    assert calls == [3, 2]
    # the name of a static position is static too; passed by keyword it is
    # another call signature (as in JAX): traced once more, then cached
    np.testing.assert_allclose(jitted(x, n=2), x**2)
    np.testing.assert_allclose(jitted(x, n=2), x**2)
    assert calls == [3, 2, 2]


def test_static_argnames_and_keyword_pytrees() -> None:
    calls: list[Any] = []

    def f(x, *, scale, mode):
        calls.append(mode)
        y = x["a"] * scale["s"]
        return y if mode == "plain" else tnp.sin(y)

    jitted = td.jit(f, static_argnames="mode")
    x, scale = {"a": np.ones(3)}, {"s": np.array(2.0)}
    np.testing.assert_allclose(jitted(x, scale=scale, mode="plain"), 2.0)
    np.testing.assert_allclose(jitted(x, mode="plain", scale={"s": 3.0}), 3.0)
    np.testing.assert_allclose(jitted(x, scale=scale, mode="sin"), np.sin(2.0))
    assert calls == ["plain", "sin"]


def test_grad_forwards_keyword_arguments() -> None:
    """Keywords reach `fn` undifferentiated: arrays and numbers traced (a new
    value is no new trace), other values static (one trace per value)."""
    calls: list[str] = []

    def f(x, *, scale=1.0, mode="sin"):
        calls.append(mode)
        return tnp.sum((tnp.sin(x) if mode == "sin" else tnp.cos(x)) * scale)

    x = np.linspace(0.0, 1.0, 3)
    np.testing.assert_allclose(td.grad(f)(x, scale=2.0), 2.0 * np.cos(x))
    np.testing.assert_allclose(td.grad(f)(x, scale=np.float64(3.0)), 3.0 * np.cos(x))
    np.testing.assert_allclose(td.grad(f)(x, scale=3.0, mode="cos"), -3.0 * np.sin(x))
    value, g = td.value_and_grad(f)(x, scale=np.ones(3), mode="cos")
    np.testing.assert_allclose(value, np.sum(np.cos(x)))
    np.testing.assert_allclose(g, -np.sin(x))
    grad_f = td.grad(f)
    for scale in (1.0, 2.0, 5.0):
        grad_f(x, scale=scale)
    # one trace per signature (cached on f, shared by every td.grad(f)): the
    # float scales share one; mode="cos" with a 0-d and with a (3,) scale.
    assert calls == ["sin", "cos", "cos"]
    with pytest.raises(TypeError, match="static arguments must be hashable"):
        td.grad(f)(x, mode=["cos"])


def test_jit_decorator_forms() -> None:
    @td.jit
    def plain(x):
        return x + 1.0

    @functools.partial(td.jit, static_argnums=(1,))
    def shifted(x, k):
        return x + float(k)

    np.testing.assert_allclose(plain(np.zeros(2)), 1.0)
    np.testing.assert_allclose(shifted(np.zeros(2), 4), 4.0)
    assert plain.__name__ == "plain"


def test_unhashable_static_argument_is_a_type_error() -> None:
    jitted = td.jit(lambda x, opts: x * float(len(opts)), static_argnums=1)
    with pytest.raises(
        TypeError, match=r"static arguments must be hashable: argument 1 \('opts'\)"
    ):
        jitted(np.ones(2), [1, 2])
    named = td.jit(lambda x, opts=(): x, static_argnames="opts")
    with pytest.raises(TypeError, match="must be hashable: argument 'opts' is a dict"):
        named(np.ones(2), opts={"a": 1})
    np.testing.assert_allclose(jitted(np.ones(2), (1, 2)), 2.0)


# --------------------------------------------------------------------------
# Python scalars and numpy scalars
# --------------------------------------------------------------------------


def test_python_and_numpy_scalars_become_0d_arrays() -> None:
    f = td.jit(lambda a, b, c, d: (a * b, c, d))
    ab, c, d = f(2, 3.0, True, 1 + 2j)
    assert ab.shape == () and ab.dtype == np.float64 and ab == 6.0
    assert c.dtype == np.bool_ and c
    assert d.dtype == np.complex128 and d == 1 + 2j
    (single,) = td.jit(lambda x: (x * 2.0,))(np.float32(1.5))
    assert single.dtype == np.float32 and single == 3.0
    assert td.jit(lambda x: x)(np.int32(4)).dtype == np.int32
    assert td.jit(lambda k: k * 2)(3).dtype == np.int64
    assert td.grad(lambda x: x**3)(2.0) == pytest.approx(12.0)
    assert td.grad(lambda x: x * x)(np.float64(3.0)) == pytest.approx(6.0)
    _, tangent = td.jvp(lambda x: x**2, (3.0,), (1.0,))
    assert tangent == pytest.approx(6.0)
    # an integer argument not differentiated is an int64 0-d array
    assert td.grad(lambda x, n: x * n, argnums=0)(2.0, 5) == pytest.approx(5.0)
    value, g = td.value_and_grad(lambda p: p["a"] * p["b"])({"a": 2.0, "b": np.array(4.0)})
    assert value == 8.0 and g == {"a": 4.0, "b": 2.0}


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


def test_wrong_tangent_structure_names_both_structures() -> None:
    params, x = _args()
    wrong = {"layer": params["layer"], "point": params["point"]}
    with pytest.raises(ValueError, match=r"tangent 0 has structure .*'layer'.* but primal 0 has"):
        td.jvp(loss, (params, x), (wrong, x))
    with pytest.raises(ValueError, match=r"\(\*, \*\).* but primal 0 has structure .*\[\*, \*\]"):
        td.jvp(lambda t: t[0], ([np.ones(1), np.ones(1)],), ((np.ones(1), np.ones(1)),))
    _, f_jvp = td.linearize(loss, params, x)
    with pytest.raises(ValueError, match="a tangent must have the structure of its primal"):
        f_jvp(wrong, x)
    with pytest.raises(ValueError, match=r"expected 2 tangents \(one per primal\), got 1"):
        f_jvp(params)


def test_wrong_cotangent_structure_names_both_structures() -> None:
    params, x = _args()
    out, vjp_fn = td.vjp(model, params, x)
    ct = _like(out, 1)
    ct["pair"] = list(ct["pair"])
    with pytest.raises(
        ValueError, match=r"cotangent has structure .* but the output has structure"
    ):
        vjp_fn(ct)
    transpose_fn = td.linear_transpose(linear, params)
    with pytest.raises(ValueError, match="a cotangent must have the structure of the output"):
        transpose_fn({"a": np.ones(3)})


def test_grad_of_integer_arguments_is_refused() -> None:
    with pytest.raises(TypeError, match=r"grad requires real- or complex-valued inputs.*int"):
        td.grad(lambda x: x * 2.0)(3)
    with pytest.raises(TypeError, match=r"argument 0\['w'\] is int64"):
        td.grad(lambda p: tnp.sum(p["w"]))({"w": np.arange(3)})
    with pytest.raises(TypeError, match=r"argument 1 is bool"):
        td.value_and_grad(lambda x, y: x * y, argnums=(0, 1))(1.0, True)


def test_leaves_that_are_not_arrays_name_their_path() -> None:
    with pytest.raises(TypeError, match=r"argument 0\['w'\] is a str, not an array"):
        td.grad(lambda p: tnp.sum(p["b"]))({"w": "hello", "b": np.ones(2)})
    with pytest.raises(TypeError, match=r"argument 1\[0\]\.y is a object, not an array"):
        td.jit(lambda x, t: x)(np.ones(1), [Point(1.0, object())])
    with pytest.raises(TypeError, match=r"argument 'cfg'\['k'\] is a str"):
        td.jit(lambda x, cfg: x)(np.ones(1), cfg={"k": "v"})
    with pytest.raises(TypeError, match=r"argument 0 has dtype uint64"):
        td.jit(lambda x: x)(np.arange(3, dtype=np.uint64))


# --------------------------------------------------------------------------
# JAX as an oracle (skipped cleanly without it)
# --------------------------------------------------------------------------

_JAX_REGISTERED: list[bool] = []


@pytest.fixture(scope="module")
def jax_modules():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    if not _JAX_REGISTERED:
        jax.tree_util.register_dataclass(Layer, data_fields=["w", "b"], meta_fields=["act"])
        _JAX_REGISTERED.append(True)
    return jax, jax.numpy


def _numpy_tree(jax: Any, tree: Any) -> Any:
    return jax.tree_util.tree_map(np.asarray, tree)


TRANSFORMS = ["jit", "grad", "value_and_grad", "jvp", "vjp", "linearize", "linear_transpose",
              "hvp", "grad_has_aux", "value_and_grad_has_aux", "vjp_has_aux", "argnums",
              "jvp_has_aux", "jacfwd", "jacrev", "jacfwd_has_aux_argnums",
              "jacrev_has_aux_argnums", "hessian", "hessian_argnums"]  # fmt: skip


@pytest.mark.parametrize("transform", TRANSFORMS)
def test_pytree_transforms_agree_with_jax(transform: str, jax_modules) -> None:
    jax, jnp = jax_modules
    params, x = _args(7)
    t_params, t_x = _like(params, 8), _like(x, 9)
    j_loss = functools.partial(loss, xp=jnp)
    j_model = functools.partial(model, xp=jnp)
    j_aux = functools.partial(loss_with_aux, xp=jnp)
    if transform == "jit":
        ours, theirs = td.jit(model)(params, x), jax.jit(j_model)(params, x)
    elif transform == "grad":
        ours, theirs = td.grad(loss)(params, x), jax.grad(j_loss)(params, x)
    elif transform == "value_and_grad":
        ours = td.value_and_grad(loss)(params, x)
        theirs = jax.value_and_grad(j_loss)(params, x)
    elif transform == "argnums":
        ours = td.grad(loss, argnums=(1, 0))(params, x)
        theirs = jax.grad(j_loss, argnums=(1, 0))(params, x)
    elif transform == "jvp":
        ours = td.jvp(model, (params, x), (t_params, t_x))
        theirs = jax.jvp(j_model, (params, x), (t_params, t_x))
    elif transform == "linearize":
        out, f_jvp = td.linearize(model, params, x)
        j_out, j_f_jvp = jax.linearize(j_model, params, x)
        ours, theirs = (out, f_jvp(t_params, t_x)), (j_out, j_f_jvp(t_params, t_x))
    elif transform == "vjp":
        out, vjp_fn = td.vjp(model, params, x)
        j_out, j_vjp_fn = jax.vjp(j_model, params, x)
        ct = _like(out, 10)
        ours, theirs = (out, vjp_fn(ct)), (j_out, j_vjp_fn(ct))
    elif transform == "linear_transpose":
        ct = {"a": np.arange(3.0), "b": (np.ones(2),)}
        ours = td.linear_transpose(linear, params)(ct)
        theirs = jax.linear_transpose(functools.partial(linear, xp=jnp), params)(ct)
    elif transform == "hvp":
        ours = td.hvp(loss, (params, x), (t_params, t_x))
        theirs = jax.jvp(jax.grad(j_loss, argnums=(0, 1)), (params, x), (t_params, t_x))[1]
    elif transform == "grad_has_aux":
        ours = td.grad(loss_with_aux, has_aux=True)(params, x)
        theirs = jax.grad(j_aux, has_aux=True)(params, x)
    elif transform == "value_and_grad_has_aux":
        ours = td.value_and_grad(loss_with_aux, argnums=(0, 1), has_aux=True)(params, x)
        theirs = jax.value_and_grad(j_aux, argnums=(0, 1), has_aux=True)(params, x)
    elif transform == "jvp_has_aux":
        ours = td.jvp(loss_with_aux, (params, x), (t_params, t_x), has_aux=True)
        theirs = jax.jvp(j_aux, (params, x), (t_params, t_x), has_aux=True)
    elif transform in ("jacfwd", "jacrev"):
        ours = getattr(td, transform)(model)(params, x)
        theirs = getattr(jax, transform)(j_model)(params, x)
    elif transform in ("jacfwd_has_aux_argnums", "jacrev_has_aux_argnums"):
        name = transform.split("_")[0]
        ours = getattr(td, name)(loss_with_aux, argnums=(1, 0), has_aux=True)(params, x)
        theirs = getattr(jax, name)(j_aux, argnums=(1, 0), has_aux=True)(params, x)
    elif transform == "hessian":
        ours, theirs = td.hessian(loss)(params, x), jax.hessian(j_loss)(params, x)
    elif transform == "hessian_argnums":
        ours = td.hessian(loss_with_aux, argnums=(0, 1), has_aux=True)(params, x)
        theirs = jax.hessian(j_aux, argnums=(0, 1), has_aux=True)(params, x)
    else:
        assert transform == "vjp_has_aux"
        out, vjp_fn, aux = td.vjp(loss_with_aux, params, x, has_aux=True)
        j_out, j_vjp_fn, j_aux_value = jax.vjp(j_aux, params, x, has_aux=True)
        ours = (out, vjp_fn(np.array(1.0)), aux)
        theirs = (j_out, j_vjp_fn(jnp.array(1.0)), j_aux_value)
    _assert_trees_close(ours, _numpy_tree(jax, theirs), rtol=1e-9, atol=1e-12)


def test_python_scalars_agree_with_jax(jax_modules) -> None:
    jax, jnp = jax_modules

    def f(x, y, xp=tnp):
        return xp.sin(x) * y + x**2

    for args in [(0.5, 2.0), (np.float64(0.5), 3.0), (1.5, 2)]:
        ours = td.value_and_grad(f)(*args)
        theirs = jax.value_and_grad(functools.partial(f, xp=jnp))(*args)
        _assert_trees_close(ours, _numpy_tree(jax, theirs), rtol=1e-12)
    with pytest.raises(TypeError, match="grad requires real- or complex-valued inputs"):
        jax.grad(lambda x: x * 2.0)(3)  # the behaviour ours follows
