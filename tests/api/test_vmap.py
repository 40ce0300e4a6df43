"""`td.vmap`: one batched function from the `batch` pass, checked against a
Python loop over examples and against `jax.vmap` where JAX is installed."""

from __future__ import annotations

import numpy as np
import pytest

import tidu_mlir as td
import tidu_mlir.numpy as tnp

RNG = np.random.default_rng(3)


def loss(params, x, y):
    w, b = params["w"], params["b"]
    z = x @ w + b
    return tnp.log(1.0 + tnp.exp(-y * z))


def test_per_example_gradients_equal_a_loop():
    params = {"w": RNG.normal(size=4), "b": np.float64(0.3)}
    xs, ys = RNG.normal(size=(6, 4)), np.sign(RNG.normal(size=6))
    grads = td.vmap(td.grad(loss), in_axes=(None, 0, 0))(params, xs, ys)
    assert set(grads) == {"w", "b"} and grads["w"].shape == (6, 4) and grads["b"].shape == (6,)
    single = td.grad(loss)
    for i in range(6):
        expected = single(params, xs[i], ys[i])
        np.testing.assert_allclose(grads["w"][i], expected["w"], rtol=1e-12)
        np.testing.assert_allclose(grads["b"][i], expected["b"], rtol=1e-12)


@pytest.mark.parametrize("in_axes", [0, 1, -1, (1, None)])
def test_in_axes_forms(in_axes):
    x, w = RNG.normal(size=(4, 4)), RNG.normal(size=(4,))
    f = lambda a, b: tnp.sum(tnp.sin(a) * b)
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes, None)
    result = td.vmap(f, in_axes=axes)(x, w)
    xs = np.moveaxis(x, axes[0], 0)
    np.testing.assert_allclose(result, [np.sum(np.sin(xi) * w) for xi in xs], rtol=1e-12)


def test_out_axes_unbatched_outputs_and_nesting():
    x, w = RNG.normal(size=(4, 3)), RNG.normal(size=(3,))
    a, b = td.vmap(lambda u: (u * w, tnp.cos(w)), out_axes=(1, None))(x)
    np.testing.assert_allclose(a, (x * w).T)
    np.testing.assert_allclose(b, np.cos(w))
    c = td.vmap(lambda u: tnp.cos(w))(x)  # unbatched output, broadcast to the batch
    np.testing.assert_allclose(c, np.broadcast_to(np.cos(w), (4, 3)))
    outer = td.vmap(td.vmap(lambda p, q: p * q + 1.0, in_axes=(0, None)), in_axes=(None, 0))
    np.testing.assert_allclose(outer(w, x), w[None, :, None] * x[:, None, :] + 1.0)


def test_grad_of_vmap_and_matmul_batching():
    x, w = RNG.normal(size=(5, 3)), RNG.normal(size=(3, 2))
    total = lambda m: tnp.sum(td.vmap(lambda r: tnp.tanh(r @ m))(x))
    np.testing.assert_allclose(td.grad(total)(w), x.T @ (1 - np.tanh(x @ w) ** 2), rtol=1e-10)


def test_bad_input_is_named():
    x, y = np.ones((3, 2)), np.ones((4, 2))
    with pytest.raises(
        ValueError, match=r"inconsistent sizes for the mapped axes: argument 0: 3, argument 1: 4"
    ):
        td.vmap(lambda a, b: a + b)(x, y)
    with pytest.raises(ValueError, match="in_axes has 1 entries for 2 arguments"):
        td.vmap(lambda a, b: a + b, in_axes=(0,))(x, x)
    with pytest.raises(ValueError, match="in_axes 2 is out of range for argument 0 of rank 2"):
        td.vmap(lambda a: a, in_axes=2)(x)
    with pytest.raises(ValueError, match="does not match the structure"):
        td.vmap(lambda p: p["a"], in_axes=({"b": 0},))({"a": x})
    with pytest.raises(ValueError, match="needs a mapped argument"):
        td.vmap(lambda a: a, in_axes=None)(x)


def test_against_jax():
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    jax.config.update("jax_enable_x64", True)
    x, w = RNG.normal(size=(4, 3)), RNG.normal(size=(3, 2))
    ours = td.vmap(
        td.grad(lambda r, m: tnp.sum(tnp.tanh(r @ m) ** 2), argnums=1), in_axes=(0, None)
    )(x, w)
    theirs = jax.vmap(
        jax.grad(lambda r, m: jnp.sum(jnp.tanh(r @ m) ** 2), argnums=1), in_axes=(0, None)
    )(x, w)
    np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-10)


@pytest.mark.parametrize("transform", ["jacfwd", "jacrev", "hessian"])
def test_jacobians_are_one_batched_call(monkeypatch, transform):
    """jacfwd/jacrev/hessian run one compiled function per call, not one per
    basis element (counted on the concrete calls of staged functions)."""
    from tidu_mlir import api
    from tidu_mlir.tracing import current_trace

    calls = []
    original = api.Staged.call

    def counting(self, values):
        if current_trace(*values.values()) is None:
            calls.append(self.func.sym_name.data)
        return original(self, values)

    monkeypatch.setattr(api.Staged, "call", counting)
    a = RNG.normal(size=(6, 6))
    x = RNG.normal(size=6)
    if transform == "hessian":
        g = lambda v: tnp.sum(tnp.tanh(a @ v) ** 2)
        result = td.hessian(g)(x)
        t = np.tanh(a @ x)
        expected = a.T @ np.diag(2 * (1 - t**2) ** 2 - 4 * t**2 * (1 - t**2)) @ a
    else:
        result = getattr(td, transform)(lambda v: tnp.tanh(a @ v) * v)(x)
        t = np.tanh(a @ x)
        expected = np.diag(t) + ((1 - t**2) * x)[:, None] * a
    np.testing.assert_allclose(result, expected, rtol=1e-9, atol=1e-12)
    assert calls == ["batched"]


def test_ir_batch_stage_is_the_batch_pass_on_the_trace(parse, ctx):
    """`td.ir(f, *batched_args, stage="batch")` shows what `vmap(f)` compiles:
    the `batch` pass run on the trace of one example (the same text as
    `tidu-opt -p 'batch{graph=@f axes=0,0 size=4}'` on the trace)."""
    from tidu_mlir.passes.batch import BatchPass

    def f(x, y):
        return tnp.sin(x) @ y

    xs, ys = np.ones((4, 3)), np.ones((4, 3, 2))
    text = td.ir(f, xs, ys, stage="batch")
    assert "cg.graph @f_batched" in text
    assert "batch = [0] x [0]" in text and "tensor<4x3x2xf64>" in text
    module = parse(td.ir(f, xs[0], ys[0], stage="trace"))
    BatchPass(graph="@f", size=4, axes=(0, 0)).apply(ctx, module)
    assert str(module) == text
    assert str(parse(text)) == text
    with pytest.raises(ValueError, match="stages: trace, .*, batch"):
        td.ir(f, xs, ys, stage="batched")


# One function per op family, written once for numpy-like modules: vmap of it
# (with the second argument mapped, unmapped, or both) against a Python loop
# and, where installed, jax.vmap.
FAMILIES = {
    "elementwise": lambda xp, a, b: xp.exp(xp.sin(a) * b) / (1.0 + b**2) - xp.maximum(a, b),
    "compare_select": lambda xp, a, b: xp.where(a > b, a * 2.0, xp.abs(b)),
    "reductions": lambda xp, a, b: xp.sum(a * b, axis=0) + xp.max(a, axis=1)[0] + xp.mean(b),
    "transpose_reshape": lambda xp, a, b: xp.reshape(xp.transpose(a) * b.T, (12,)),
    "slice_concat": lambda xp, a, b: xp.concatenate([a[1:, ::2], b[:2, 1:3] * 3.0], axis=0),
    "broadcast": lambda xp, a, b: a[:, None, :] + xp.broadcast_to(b[0], (3, 2, 4)),
    "dot": lambda xp, a, b: xp.tanh(a @ b.T) @ a,
    "complex": lambda xp, a, b: xp.real(xp.exp(1j * a) * xp.conj(b + 1j)),
}


def _family_inputs(axes):
    a, b = RNG.normal(size=(5, 3, 4)), RNG.normal(size=(5, 3, 4))
    return (a if axes[0] == 0 else a[0]), (b if axes[1] == 0 else b[0])


AXES = [(0, 0), (0, None), (None, 0)]


@pytest.mark.parametrize("axes", AXES, ids=str)
@pytest.mark.parametrize("family", FAMILIES)
def test_op_families_against_a_loop(family, axes):
    fn = FAMILIES[family]
    a, b = _family_inputs(axes)
    ours = td.vmap(lambda u, v: fn(tnp, u, v), in_axes=axes)(a, b)
    loop = [fn(np, a[i] if axes[0] == 0 else a, b[i] if axes[1] == 0 else b) for i in range(5)]
    np.testing.assert_allclose(ours, np.stack(loop), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("axes", AXES, ids=str)
@pytest.mark.parametrize("family", FAMILIES)
def test_op_families_against_jax(family, axes):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    fn = FAMILIES[family]
    a, b = _family_inputs(axes)
    ours = td.vmap(lambda u, v: fn(tnp, u, v), in_axes=axes)(a, b)
    theirs = jax.vmap(lambda u, v: fn(jax.numpy, u, v), in_axes=axes)(a, b)
    np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("transform", ["jacfwd", "jacrev"])
def test_jacobians_never_multiply_by_the_basis(transform):
    """The basis travels as one-hot rows: the Jacobian of `tanh(a @ v) * v`
    has the forward product only (the rows or columns of `a` are picked and
    scaled, no second contraction with the n x n basis)."""
    a = RNG.normal(size=(40, 40))
    x = RNG.normal(size=40)
    f = lambda v: tnp.tanh(a @ v) * v  # noqa: E731
    text = td.ir(getattr(td, transform)(f), x)
    assert text.count("prim.dot_general") == 1
    t = np.tanh(a @ x)
    expected = np.diag(t) + ((1 - t**2) * x)[:, None] * a
    np.testing.assert_allclose(getattr(td, transform)(f)(x), expected, rtol=1e-9, atol=1e-12)
