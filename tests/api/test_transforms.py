"""The Python transforms against independent oracles.

Every derivative is checked against 5-point finite differences, the adjoint
identity, closed forms, and JAX where it is installed (for complex VJPs
ours(ct) = conj(jax(conj(ct))), `docs/complex.md`).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import tidu_mlir as td
import tidu_mlir.numpy as tnp
from tidu_mlir.tracing import TracingError

from .corpus import CASES, Case

SCALAR_CASES = [c for c in CASES if c.scalar_output]


def _tolerance(*arrays: np.ndarray) -> float:
    low = any(np.asarray(a).dtype in (np.float32, np.complex64) for a in arrays)
    return 2e-2 if low else 1e-6


def _direction(rng: np.random.Generator, like: np.ndarray) -> np.ndarray:
    value = rng.standard_normal(like.shape)
    if like.dtype.kind == "c":
        value = value + 1j * rng.standard_normal(like.shape)
    return value.astype(like.dtype)


def _finite_difference(fn, args, tangents) -> list[np.ndarray]:
    """5-point central differences of every output along `tangents` (in float64)."""
    wide = [a.astype(np.complex128 if a.dtype.kind == "c" else np.float64) for a in args]
    h = 1e-3

    def at(step: float) -> list[np.ndarray]:
        out = fn(*[a + step * t for a, t in zip(wide, tangents, strict=True)])
        return [np.asarray(o) for o in (out if isinstance(out, tuple) else (out,))]

    f2, f1, m1, m2 = at(2 * h), at(h), at(-h), at(-2 * h)
    return [(-a + 8 * b - 8 * c + d) / (12 * h) for a, b, c, d in zip(f2, f1, m1, m2, strict=True)]


def _inner(a, b) -> float:
    """The real inner product <a, b> = Re(sum(conj(a) b)) (`docs/complex.md`)."""
    return float(
        sum(np.real(np.vdot(np.asarray(x), np.asarray(y))) for x, y in zip(a, b, strict=True))
    )


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_jit_equals_numpy(case: Case) -> None:
    args = case.make_args(np.random.default_rng(1))
    result = td.jit(case.fn)(*args)
    np.testing.assert_allclose(result, case.fn(*args), rtol=_tolerance(*args) * 1e-2)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_jvp_matches_finite_differences(case: Case) -> None:
    rng = np.random.default_rng(2)
    args = case.make_args(rng)
    tangents = [_direction(rng, a) for a in args]
    out, tangent_out = td.jvp(case.fn, args, tangents)
    np.testing.assert_allclose(out, case.fn(*args), rtol=1e-5)
    (expected,) = _finite_difference(case.fn, args, tangents)
    np.testing.assert_allclose(
        tangent_out, expected, rtol=_tolerance(*args), atol=_tolerance(*args)
    )


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_vjp_is_the_adjoint_of_jvp(case: Case) -> None:
    rng = np.random.default_rng(3)
    args = case.make_args(rng)
    tangents = [_direction(rng, a) for a in args]
    out, vjp_fn = td.vjp(case.fn, *args)
    cotangent = _direction(rng, np.asarray(out))
    _, jvp_out = td.jvp(case.fn, args, tangents)
    cotangents_in = vjp_fn(cotangent)
    assert len(cotangents_in) == len(args)
    for ct, a in zip(cotangents_in, args, strict=True):
        assert ct.shape == a.shape and ct.dtype == a.dtype
    lhs = _inner([cotangent], [jvp_out])
    rhs = _inner(cotangents_in, tangents)
    assert lhs == pytest.approx(rhs, rel=_tolerance(*args), abs=_tolerance(*args))


@pytest.mark.parametrize("case", SCALAR_CASES, ids=lambda c: c.name)
def test_grad_matches_finite_differences(case: Case) -> None:
    rng = np.random.default_rng(4)
    args = case.make_args(rng)
    argnums = tuple(range(len(args)))
    grads = td.grad(case.fn, argnums)(*args)
    value, grads2 = td.value_and_grad(case.fn, argnums)(*args)
    np.testing.assert_allclose(value, case.fn(*args), rtol=1e-6)
    for g, g2 in zip(grads, grads2, strict=True):
        np.testing.assert_allclose(g, g2, rtol=1e-12)
    tangents = [_direction(rng, a) for a in args]
    (directional,) = _finite_difference(case.fn, args, tangents)
    assert _inner(grads, tangents) == pytest.approx(float(directional), rel=1e-6, abs=1e-6)


@pytest.mark.parametrize("name", ["sum_all", "logsumexp", "mlp_loss", "vecdot"])
def test_hessian_matches_finite_differences_of_grad(name: str) -> None:
    case = next(c for c in CASES if c.name == name)
    args = case.make_args(np.random.default_rng(5))
    hessian = td.hessian(case.fn)(*args)
    x = args[0]
    assert hessian.shape == x.shape + x.shape
    rng = np.random.default_rng(6)
    t = _direction(rng, x)
    grad0 = lambda y: td.grad(case.fn)(y, *args[1:])  # noqa: E731
    (expected,) = _finite_difference(grad0, [x], [t])
    contracted = np.tensordot(hessian, t, axes=x.ndim)
    np.testing.assert_allclose(contracted, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(td.hvp(lambda y: case.fn(y, *args[1:]), (x,), (t,)), contracted,
                               rtol=1e-9, atol=1e-9)  # fmt: skip


@pytest.mark.parametrize("name", ["matvec", "softmax", "broadcast_row", "complex_mul"])
def test_jacfwd_equals_jacrev(name: str) -> None:
    case = next(c for c in CASES if c.name == name)
    args = case.make_args(np.random.default_rng(7))
    forward = td.jacfwd(case.fn)(*args)
    if args[0].dtype.kind == "c":  # jacrev: adjoint for Re(conj(a)·b); jacfwd: R-linear map
        return
    reverse = td.jacrev(case.fn)(*args)
    np.testing.assert_allclose(forward, reverse, rtol=1e-10, atol=1e-12)


def test_third_order_by_composition() -> None:
    """f = sin(x)·x³: compare grad³ and jvp∘grad∘grad with the closed form."""
    f = lambda x: tnp.sin(x) * x**3  # noqa: E731
    x = np.array(0.7)
    third = lambda x: (-np.cos(x) * x**3 - 9 * np.sin(x) * x**2 + 18 * np.cos(x) * x  # noqa: E731
                       + 6 * np.sin(x))  # fmt: skip
    np.testing.assert_allclose(td.grad(td.grad(td.grad(f)))(x), third(x), rtol=1e-10)
    _, tangent = td.jvp(td.grad(td.grad(f)), (x,), (np.array(1.0),))
    np.testing.assert_allclose(tangent, third(x), rtol=1e-10)
    fourth = td.grad(td.grad(td.grad(td.grad(lambda x: x**4))))(np.array(1.3))
    np.testing.assert_allclose(fourth, 24.0, rtol=1e-10)


def test_transforms_accept_jit_functions() -> None:
    f = td.jit(lambda x: tnp.sum(tnp.exp(x) * x))
    x = np.linspace(0.1, 1.0, 5)
    np.testing.assert_allclose(td.grad(f)(x), np.exp(x) * (x + 1), rtol=1e-12)
    np.testing.assert_allclose(td.jit(td.grad(f))(x), np.exp(x) * (x + 1), rtol=1e-12)


def test_linearize_reuses_one_linear_map() -> None:
    x = np.linspace(0.1, 1.0, 4)
    out, f_jvp = td.linearize(lambda x: tnp.sin(x) * x, x)
    np.testing.assert_allclose(out, np.sin(x) * x)
    for seed in range(3):
        t = np.random.default_rng(seed).standard_normal(4)
        np.testing.assert_allclose(f_jvp(t), (np.cos(x) * x + np.sin(x)) * t, rtol=1e-12)


def test_linear_transpose_of_a_linear_function() -> None:
    a = np.arange(6.0).reshape(2, 3)
    f_lin = lambda x: tnp.matmul(a, x) * 2.0  # noqa: E731
    (ct_x,) = td.linear_transpose(f_lin, np.zeros(3))(np.array([1.0, -1.0]))
    np.testing.assert_allclose(ct_x, 2.0 * a.T @ np.array([1.0, -1.0]))


def test_an_argument_returned_twice_sums_its_cotangents() -> None:
    """A graph with no op at all still has fan-out: its cotangents are summed."""
    x, ct = np.arange(3.0), (np.ones(3), np.array([2.0, 0.0, -1.0]))
    out, vjp_fn = td.vjp(lambda a: (a, a), x)
    np.testing.assert_allclose(vjp_fn(ct)[0], ct[0] + ct[1])
    np.testing.assert_allclose(td.linear_transpose(lambda a: (a, a), x)(ct)[0], ct[0] + ct[1])
    jac = td.jacrev(lambda a: {"p": a, "q": a})(x)
    np.testing.assert_allclose(jac["p"], np.eye(3))
    np.testing.assert_allclose(jac["q"], np.eye(3))
    assert td.grad(lambda a: tnp.sum(td.jit(lambda b: (b, b))(a)[1]))(x).tolist() == [1.0] * 3


def test_linear_transpose_refuses_a_nonlinear_function() -> None:
    with pytest.raises(
        TypeError, match="linear_transpose needs a linear function: 'prim.sin' is not linear"
    ):
        td.linear_transpose(lambda x: tnp.sin(x), np.zeros(3))


def test_max_over_an_empty_axis_is_refused_like_numpy() -> None:
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        td.jit(lambda x: tnp.max(x))(np.zeros(0))
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        td.jit(lambda x: tnp.max(x, axis=1))(np.zeros((2, 0)))
    assert td.jit(lambda x: tnp.max(x, axis=0))(np.zeros((2, 0))).shape == (0,)


def test_complex_grad_follows_the_real_inner_product() -> None:
    z = np.array([1 + 2j, -0.5 + 0.25j])
    grad = td.grad(lambda z: tnp.sum(tnp.real(z * tnp.conj(z))))(z)
    np.testing.assert_allclose(grad, 2 * z)


def test_grad_error_messages() -> None:
    with pytest.raises(TypeError, match=r"grad requires a scalar output; got shape \(3,\)"):
        td.grad(lambda x: x * 2.0)(np.ones(3))
    with pytest.raises(TypeError, match="int64"):
        td.grad(lambda x: tnp.sum(x))(np.arange(3))
    with pytest.raises(
        ValueError, match=r"tangent 0 \(for primal 0\) has shape \(2,\), expected \(3,\)"
    ):
        td.jvp(lambda x: x, (np.ones(3),), (np.ones(2),))
    _, vjp_fn = td.vjp(lambda x: x * 2.0, np.ones(3))
    with pytest.raises(ValueError, match=r"cotangent has shape \(4,\), expected \(3,\)"):
        vjp_fn(np.ones(4))
    with pytest.raises(TracingError, match="tnp.where"):
        td.grad(lambda x: tnp.sum(x) if tnp.sum(x) > 0 else -tnp.sum(x))(np.ones(2))


def test_jit_traces_once_per_signature() -> None:
    calls = []

    def f(x):
        calls.append(x.shape)
        return x * 2.0

    jitted = td.jit(f)
    jitted(np.ones(3))
    jitted(np.zeros(3))
    jitted(np.ones(4))
    assert calls == [(3,), (4,)]


def test_several_results_come_back_as_a_tuple() -> None:
    result = td.jit(lambda x: (x + 1.0, tnp.sum(x)))(np.ones(2))
    assert isinstance(result, tuple) and len(result) == 2


def test_ir_shows_each_stage() -> None:
    stages = td.lower(lambda x: tnp.sum(tnp.sin(x)), np.ones(3))
    assert "cg.graph @f" in stages["trace"]
    assert "cg.linear @jvp1" in stages["jvp"]
    assert "cg.linear @vjp2" in stages["vjp"]
    assert "func.func @vjp" in stages["materialize"]


# --------------------------------------------------------------------------
# JAX as an oracle (skipped cleanly without it)
# --------------------------------------------------------------------------

JAX_CASES = [c for c in CASES if c.name not in {"int_index"}]


@pytest.fixture(scope="module")
def jax_modules():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax, jax.numpy


@pytest.mark.parametrize("case", JAX_CASES, ids=lambda c: c.name)
def test_jvp_and_vjp_agree_with_jax(case: Case, jax_modules) -> None:
    jax, jnp = jax_modules
    rng = np.random.default_rng(8)
    args = case.make_args(rng)
    tangents = [_direction(rng, a) for a in args]
    jax_fn = functools.partial(case.fn, xp=jnp)
    _, jax_tangent = jax.jvp(jax_fn, tuple(args), tuple(tangents))
    _, ours = td.jvp(case.fn, args, tangents)
    tol = _tolerance(*args)
    np.testing.assert_allclose(ours, np.asarray(jax_tangent), rtol=tol, atol=tol)
    out, jax_vjp = jax.vjp(jax_fn, *args)
    ct = _direction(rng, np.asarray(out))
    _, our_vjp = td.vjp(case.fn, *args)
    for mine, theirs in zip(our_vjp(ct), jax_vjp(np.conj(ct)), strict=True):
        np.testing.assert_allclose(mine, np.conj(np.asarray(theirs)), rtol=tol, atol=tol)


@pytest.mark.parametrize("case", SCALAR_CASES, ids=lambda c: c.name)
def test_grad_and_hessian_agree_with_jax(case: Case, jax_modules) -> None:
    jax, jnp = jax_modules
    args = case.make_args(np.random.default_rng(9))
    jax_fn = functools.partial(case.fn, xp=jnp)
    argnums = tuple(range(len(args)))
    for ours, theirs in zip(td.grad(case.fn, argnums)(*args), jax.grad(jax_fn, argnums)(*args),
                            strict=True):  # fmt: skip
        # A real loss with ct = 1 gives conj of JAX's gradient (`docs/complex.md`).
        np.testing.assert_allclose(ours, np.conj(np.asarray(theirs)), rtol=1e-9, atol=1e-12)
    if args[0].dtype.kind == "c":
        return  # the Hessian of a complex input is the R-linear map; JAX's differs
    ours_h = td.hessian(case.fn)(*args)
    np.testing.assert_allclose(
        ours_h, np.asarray(jax.hessian(jax_fn)(*args)), rtol=1e-8, atol=1e-10
    )


def test_ir_runs_only_up_to_the_stage_asked_for(monkeypatch) -> None:
    import tidu_mlir.lowering.runtime as runtime

    def fail(*_: object) -> str:
        raise AssertionError("llvm stage computed for stage='jvp'")

    monkeypatch.setattr(runtime, "llvm_ir", fail)
    text = td.ir(lambda x: tnp.sum(tnp.sin(x)), np.ones(2), stage="jvp")
    assert "cg.linear @jvp1" in text and "cg.linear @vjp" not in text
    with pytest.raises(ValueError, match="unknown stage 'x'; stages: trace, jvp"):
        td.ir(lambda x: x, np.ones(2), stage="x")


def test_transposes_that_move_only_unit_axes_are_reshapes() -> None:
    """The transpose rule of dot_general on a row vector moves only an axis of
    extent 1: emitted as a reshape (no data moved), the value unchanged."""
    x, w = np.arange(5.0).reshape(1, 5) / 5, np.linspace(-1.0, 1.0, 5)
    grad_fn = lambda v: td.grad(lambda u: tnp.sum(tnp.tanh(x @ u)))(v)  # noqa: E731
    assert "prim.transpose" not in td.ir(grad_fn, w, stage="trace")
    np.testing.assert_allclose(grad_fn(w), (1 - np.tanh(x @ w) ** 2) @ x, rtol=1e-12)
    assert "prim.transpose" in td.ir(lambda a: tnp.transpose(a) * 2.0, np.ones((2, 3)))
