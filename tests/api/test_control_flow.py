"""`td.lax.scan` and `td.lax.fori_loop`: values and derivatives against a
Python loop in numpy, finite differences and JAX (skipped without it), and
the IR staying the same size whatever the trip count."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tidu_mlir as td
import tidu_mlir.numpy as tnp
from tidu_mlir import lax
from tidu_mlir.dialects import prim
from tidu_mlir.tracing import ArraySpec, trace_function

RNG = np.random.default_rng(7)


def rnn_loss(params: dict[str, Any], xs: Any, xp: Any = tnp, scan: Any = lax.scan) -> Any:
    """A pytree carry (h, s), pytree params closed over, ys, reverse order."""

    def body(carry: Any, x: Any) -> Any:
        h, s = carry
        h = xp.tanh(params["W"] @ h + x * params["b"])
        return (h, s + xp.sum(h**2)), xp.sum(h)

    (h, s), ys = scan(body, (np.zeros(3), 0.0), xs, reverse=True)
    return s + xp.sum(ys * ys) + xp.sum(h)


def rnn_loss_numpy(params: dict[str, np.ndarray], xs: np.ndarray) -> float:
    h, s, ys = np.zeros(3), 0.0, [0.0] * len(xs)
    for i in reversed(range(len(xs))):
        h = np.tanh(params["W"] @ h + xs[i] * params["b"])
        s += np.sum(h**2)
        ys[i] = np.sum(h)
    return float(s + np.sum(np.square(ys)) + np.sum(h))


def _params() -> dict[str, np.ndarray]:
    return {"W": RNG.normal(size=(3, 3)) / 2, "b": RNG.normal(size=3)}


def _fd_grad(f: Any, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    flat = x.ravel()
    out = np.empty_like(flat)
    for i in range(flat.size):
        e = np.zeros_like(flat)
        e[i] = eps
        out[i] = (f((flat + e).reshape(x.shape)) - f((flat - e).reshape(x.shape))) / (2 * eps)
    return out.reshape(x.shape)


def test_scan_values_match_a_python_loop() -> None:
    params, xs = _params(), RNG.normal(size=(6, 3))
    assert float(td.jit(rnn_loss)(params, xs)) == pytest.approx(rnn_loss_numpy(params, xs))
    assert float(rnn_loss(params, xs)) == pytest.approx(rnn_loss_numpy(params, xs))  # concrete


def test_scan_gradient_matches_finite_differences() -> None:
    params, xs = _params(), RNG.normal(size=(6, 3))
    grads = td.grad(rnn_loss)(params, xs)
    for name in params:

        def vary(value: np.ndarray, name: str = name) -> float:
            return rnn_loss_numpy({**params, name: value}, xs)

        np.testing.assert_allclose(grads[name], _fd_grad(vary, params[name]), atol=1e-7)
    dxs = td.grad(rnn_loss, argnums=1)(params, xs)
    np.testing.assert_allclose(dxs, _fd_grad(lambda v: rnn_loss_numpy(params, v), xs), atol=1e-7)


def test_scan_jvp_linearize_vjp_and_vmap() -> None:
    params, xs = _params(), RNG.normal(size=(5, 3))
    direction = RNG.normal(size=xs.shape)
    expected = (
        rnn_loss_numpy(params, xs + 1e-6 * direction)
        - rnn_loss_numpy(params, xs - 1e-6 * direction)
    ) / 2e-6
    _, tangent = td.jvp(lambda v: rnn_loss(params, v), (xs,), (direction,))
    assert float(tangent) == pytest.approx(expected, rel=1e-6)
    _, f_jvp = td.linearize(lambda v: rnn_loss(params, v), xs)
    assert float(f_jvp(direction)) == pytest.approx(expected, rel=1e-6)
    _, vjp_fn = td.vjp(lambda v: rnn_loss(params, v), xs)
    (cotangent,) = vjp_fn(np.float64(1.0))
    assert float(np.sum(cotangent * direction)) == pytest.approx(expected, rel=1e-6)
    batch = np.stack([xs, 0.5 * xs, -xs])
    mapped = td.vmap(lambda v: rnn_loss(params, v))(batch)
    np.testing.assert_allclose(mapped, [rnn_loss_numpy(params, v) for v in batch], rtol=1e-12)


def test_hessian_through_scan() -> None:
    params, xs = _params(), RNG.normal(size=(4, 3))

    def flat(v: Any) -> Any:
        return rnn_loss(params, tnp.reshape(v, (4, 3)))

    hessian = td.hessian(flat)(xs.ravel())

    def gradient(v: np.ndarray) -> np.ndarray:
        return _fd_grad(lambda u: rnn_loss_numpy(params, u.reshape(4, 3)), v)

    expected = np.stack(
        [
            (gradient(xs.ravel() + 1e-4 * e) - gradient(xs.ravel() - 1e-4 * e)) / 2e-4
            for e in np.eye(12)
        ]
    )
    np.testing.assert_allclose(hessian, expected, atol=1e-4)
    np.testing.assert_allclose(hessian, hessian.T, atol=1e-12)


def test_nested_scan_and_grad_inside_the_loop() -> None:
    """A scan in a scan's body, and a gradient taken inside a loop body (the
    shape of GradBench's `particle`), differentiated again from outside."""

    def inner_energy(p: Any, w: Any) -> Any:
        return tnp.sum(tnp.sin(p * w) ** 2)

    def simulate(w: Any) -> Any:
        def step(p: Any, _: Any) -> Any:
            force = td.grad(inner_energy)(p, w)

            def substep(q: Any, __: Any) -> Any:
                return q - 0.01 * force + 0.001 * q * q, None

            p, _ = lax.scan(substep, p, None, length=3)
            return p, tnp.sum(p)

        p, trail = lax.scan(step, np.full(2, 0.5), None, length=5)
        return tnp.sum(p * p) + tnp.sum(trail)

    def simulate_numpy(w: np.ndarray) -> float:
        p, trail = np.full(2, 0.5), 0.0
        for _ in range(5):
            force = 2 * np.sin(p * w) * np.cos(p * w) * w
            for _ in range(3):
                p = p - 0.01 * force + 0.001 * p * p
            trail += np.sum(p)
        return float(np.sum(p * p) + trail)

    w = np.array([0.7, -1.3])
    assert float(td.jit(simulate)(w)) == pytest.approx(simulate_numpy(w))
    np.testing.assert_allclose(td.grad(simulate)(w), _fd_grad(simulate_numpy, w), atol=1e-7)


def test_fori_loop_and_scan_without_xs() -> None:
    def power_sum(x: Any) -> Any:
        return lax.fori_loop(2, 7, lambda i, acc: acc * x + i, x)

    def power_sum_numpy(x: float) -> float:
        acc = x
        for i in range(2, 7):
            acc = acc * x + i
        return acc

    x = np.float64(0.9)
    assert float(td.jit(power_sum)(x)) == pytest.approx(power_sum_numpy(0.9))
    assert float(td.grad(power_sum)(x)) == pytest.approx(
        (power_sum_numpy(0.9 + 1e-6) - power_sum_numpy(0.9 - 1e-6)) / 2e-6, rel=1e-6
    )
    final, ys = lax.scan(lambda c, _: (c * 2.0, c), np.float64(1.0), None, length=4)
    assert float(final) == 16.0
    np.testing.assert_array_equal(ys, [1.0, 2.0, 4.0, 8.0])
    empty_final, empty_ys = td.jit(lambda c: lax.scan(lambda c, x: (c + x, c), c, np.ones((0,))))(
        np.float64(3.0)
    )
    assert float(empty_final) == 3.0 and empty_ys.shape == (0,)


@pytest.mark.parametrize("dtype", [np.complex128, np.float32])
def test_scan_dtypes(dtype: type) -> None:
    xs = RNG.normal(size=(5, 2)) + (1j * RNG.normal(size=(5, 2)) if dtype is np.complex128 else 0)
    xs = xs.astype(dtype)

    def f(c: Any, xs: Any) -> Any:
        return lax.scan(lambda c, x: (c * x + 1.0, c), c, xs)

    c0 = np.ones(2, dtype)
    final, ys = td.jit(f)(c0, xs)
    c, expected_ys = c0, []
    for x in xs:
        expected_ys.append(c)
        c = c * x + 1
    tolerance = 1e-5 if dtype is np.float32 else 1e-12
    np.testing.assert_allclose(final, c, rtol=tolerance)
    np.testing.assert_allclose(ys, np.stack(expected_ys), rtol=tolerance)
    assert final.dtype == dtype and ys.dtype == dtype


def test_the_ir_does_not_grow_with_the_trip_count() -> None:
    """Tracing, the gradient's IR: the same number of ops for 10 and 10⁴ steps."""

    def loss(x: Any, steps: int) -> Any:
        return tnp.sum(lax.fori_loop(0, steps, lambda i, v: tnp.sin(v) * 0.9 + v, x))

    def op_count(steps: int) -> int:
        grad_ir = td.ir(lambda v: loss(v, steps), np.ones(3), stage="vjp")
        return grad_ir.count("prim.")

    assert op_count(10) == op_count(10_000)
    traced = trace_function(lambda v: loss(v, 10_000), [ArraySpec((3,), np.dtype(np.float64))])
    assert sum(isinstance(op, prim.ScanOp) for op in traced.graph.walk()) == 1


def test_bad_carries_are_named() -> None:
    x = np.ones(3)
    with pytest.raises(
        TypeError, match=r"carry leaf #0 of shape \(\) .* initial carry leaf has shape \(3,\)"
    ):
        td.jit(lambda v: lax.scan(lambda c, _: (tnp.sum(c), None), v, None, length=2))(x)
    with pytest.raises(TypeError, match="structure"):
        td.jit(lambda v: lax.scan(lambda c, _: ((c, c), None), v, None, length=2))(x)
    with pytest.raises(TypeError, match="must return a pair"):
        td.jit(lambda v: lax.scan(lambda c, _: c, v, None, length=2))(x)
    with pytest.raises(ValueError, match="disagree"):
        td.jit(lambda v: lax.scan(lambda c, x: (c, x), v, np.ones((4, 3)), length=5))(x)
    with pytest.raises(ValueError, match="give xs or length"):
        lax.scan(lambda c, _: (c, None), x, None)
    with pytest.raises(TypeError, match="fori_loop bounds must be ints or 0-d integer or real"):
        td.jit(lambda v: lax.fori_loop(0, v, lambda i, c: c, v))(x)


def test_against_jax() -> None:
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    jax.config.update("jax_enable_x64", True)
    params, xs = _params(), RNG.normal(size=(6, 3))
    ours = td.value_and_grad(rnn_loss)(params, xs)
    theirs = jax.value_and_grad(lambda p, v: rnn_loss(p, v, xp=jnp, scan=jax.lax.scan))(params, xs)
    assert float(ours[0]) == pytest.approx(float(theirs[0]))
    for name in params:
        np.testing.assert_allclose(ours[1][name], np.asarray(theirs[1][name]), rtol=1e-10)


# --------------------------------------------------------------------------
# cond and switch
# --------------------------------------------------------------------------

W = np.array([0.3, -0.2])


def branchy(x: Any, y: Any, xp: Any = tnp, cond: Any = lax.cond) -> Any:
    """A traced predicate, a closure in one branch, two operands."""
    return cond(xp.sum(x) > 0.0, lambda a, b: xp.sin(a) * b + W, lambda a, b: xp.exp(b) * a, x, y)


def branchy_numpy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.sin(x) * y + W if np.sum(x) > 0 else np.exp(y) * x


@pytest.mark.parametrize("x", [np.array([0.5, 0.2]), np.array([-0.5, 0.2])], ids=["true", "false"])
def test_cond_values_gradients_and_hessian(x: np.ndarray) -> None:
    y = np.array([1.5, -0.7])
    np.testing.assert_allclose(td.jit(branchy)(x, y), branchy_numpy(x, y), rtol=1e-14)

    def loss(u: Any, v: Any) -> Any:
        return tnp.sum(branchy(u, v) ** 2)

    def loss_numpy(u: np.ndarray, v: np.ndarray) -> float:
        return float(np.sum(branchy_numpy(u, v) ** 2))

    dx, dy = td.grad(loss, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(dx, _fd_grad(lambda u: loss_numpy(u, y), x), atol=1e-7)
    np.testing.assert_allclose(dy, _fd_grad(lambda v: loss_numpy(x, v), y), atol=1e-7)
    hessian = td.hessian(lambda u: loss(u, y))(x)
    expected = np.stack(
        [
            (
                _fd_grad(lambda u: loss_numpy(u, y), x + 1e-4 * e)
                - _fd_grad(lambda u: loss_numpy(u, y), x - 1e-4 * e)
            )
            / 2e-4
            for e in np.eye(2)
        ]
    )
    np.testing.assert_allclose(hessian, expected, atol=1e-4)


def test_cond_with_a_batched_predicate_and_inside_a_scan() -> None:
    xs = np.array([[0.5, 0.2], [-0.5, 0.2], [1.0, -2.0]])
    y = np.array([1.5, -0.7])
    mapped = td.vmap(branchy, in_axes=(0, None))(xs, y)
    np.testing.assert_allclose(mapped, [branchy_numpy(x, y) for x in xs], rtol=1e-14)

    def clipped_walk(x0: Any) -> Any:
        def step(x: Any, _: Any) -> Any:
            nxt = lax.cond(x > 1.0, lambda v: v * 0.5, lambda v: v * 1.7 + 0.1, x)
            return nxt, nxt

        return tnp.sum(lax.scan(step, x0, None, length=6)[1])

    def clipped_walk_numpy(x: float) -> float:
        total = 0.0
        for _ in range(6):
            x = x * 0.5 if x > 1.0 else x * 1.7 + 0.1
            total += x
        return total

    x0 = np.float64(0.3)
    assert float(td.jit(clipped_walk)(x0)) == pytest.approx(clipped_walk_numpy(0.3))
    assert float(td.grad(clipped_walk)(x0)) == pytest.approx(
        (clipped_walk_numpy(0.3 + 1e-7) - clipped_walk_numpy(0.3 - 1e-7)) / 2e-7, rel=1e-6
    )


def test_switch_clamps_its_index_and_differentiates() -> None:
    def pick(i: Any, x: Any) -> Any:
        return lax.switch(i, [lambda v: v * 2.0, tnp.sin, lambda v: -v], x)

    x = np.array([0.3])
    for index, value, slope in [
        (-1.0, 0.6, 2.0),
        (0.0, 0.6, 2.0),
        (1.0, np.sin(0.3), np.cos(0.3)),
        (2.0, -0.3, -1.0),
        (7.0, -0.3, -1.0),
    ]:
        np.testing.assert_allclose(td.jit(pick)(np.float64(index), x), [value], rtol=1e-14)
        np.testing.assert_allclose(td.jit(pick)(np.int32(index), x), [value], rtol=1e-14)
        grad = td.grad(lambda v, i=index: tnp.sum(pick(np.float64(i), v)))(x)
        np.testing.assert_allclose(grad, [slope], rtol=1e-14)
        assert pick(int(index), x)[0] == pytest.approx(value)  # a static index: one branch


def test_cond_bad_input_is_named() -> None:
    x = np.ones(2)
    with pytest.raises(TypeError, match="0-d boolean predicate"):
        td.jit(lambda v: lax.cond(tnp.sum(v), tnp.sin, tnp.cos, v))(x)
    with pytest.raises(TypeError, match="0-d boolean predicate"):
        td.jit(lambda v: lax.cond(v > 0.0, tnp.sin, tnp.cos, v))(x)
    with pytest.raises(TypeError, match=r"output leaf #0: shape \(2,\) .* shape \(\)"):
        td.jit(lambda v: lax.cond(tnp.sum(v) > 0.0, tnp.sin, tnp.sum, v))(x)
    with pytest.raises(TypeError, match="different structures"):
        td.jit(lambda v: lax.cond(tnp.sum(v) > 0.0, lambda a: (a, a), lambda a: a, v))(x)
    with pytest.raises(TypeError, match="0-d integer or real index"):
        td.jit(lambda v: lax.switch(v > 0.0, [tnp.sin], v))(x)


def test_cond_against_jax() -> None:
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    jax.config.update("jax_enable_x64", True)
    y = np.array([1.5, -0.7])
    for x in (np.array([0.5, 0.2]), np.array([-0.5, 0.2])):
        ours = td.grad(lambda u: tnp.sum(branchy(u, y) ** 3))(x)
        theirs = jax.grad(lambda u: jnp.sum(branchy(u, y, xp=jnp, cond=jax.lax.cond) ** 3))(x)
        np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-12)


# --------------------------------------------------------------------------
# while_loop
# --------------------------------------------------------------------------


def newton_sqrt(a: Any) -> Any:
    """Newton's iterations for sqrt(a) to convergence, counting the steps."""

    def keep_going(state: Any) -> Any:
        x, _ = state
        return tnp.abs(x * x - a) > 1e-12

    def step(state: Any) -> Any:
        x, count = state
        return 0.5 * (x + a / x), count + 1.0

    return lax.while_loop(keep_going, step, (a, 0.0))


def newton_sqrt_numpy(a: float) -> tuple[float, int]:
    x, count = a, 0
    while abs(x * x - a) > 1e-12:
        x, count = 0.5 * (x + a / x), count + 1
    return x, count


def test_while_loop_values_and_trip_counts() -> None:
    for a in (2.0, 7.0, 100.0):
        root, count = td.jit(newton_sqrt)(np.float64(a))
        expected_root, expected_count = newton_sqrt_numpy(a)
        assert float(root) == expected_root and float(count) == expected_count
    root, count = newton_sqrt(np.float64(7.0))  # concrete: traced, then evaluated
    assert (float(root), float(count)) == newton_sqrt_numpy(7.0)


def test_while_loop_forward_mode_and_vmap_with_per_example_trip_counts() -> None:
    a = np.float64(7.0)
    _, tangent = td.jvp(lambda v: newton_sqrt(v)[0], (a,), (np.float64(1.0),))
    assert float(tangent) == pytest.approx(0.5 / np.sqrt(7.0), rel=1e-10)
    jacobian = td.jacfwd(lambda v: newton_sqrt(v)[0])(a)
    assert float(jacobian) == pytest.approx(0.5 / np.sqrt(7.0), rel=1e-10)
    batch = np.array([2.0, 7.0, 100.0])
    roots, counts = td.vmap(newton_sqrt)(batch)
    expected = [newton_sqrt_numpy(v) for v in batch]
    np.testing.assert_array_equal(roots, [r for r, _ in expected])
    np.testing.assert_array_equal(counts, [c for _, c in expected])


def test_fori_loop_with_a_traced_bound_is_a_while_loop() -> None:
    def power(x: Any, n: Any) -> Any:
        return lax.fori_loop(0, n, lambda i, acc: acc * x, x * 0.0 + 1.0)

    for n in (0, 1, 5):
        value = td.jit(power)(np.float64(1.5), np.float64(n))
        assert float(value) == pytest.approx(1.5**n)
    _, slope = td.jvp(lambda x: power(x, np.float64(5)), (np.float64(1.5),), (np.float64(1.0),))
    assert float(slope) == pytest.approx(5 * 1.5**4)
    traced = trace_function(power, [ArraySpec((), np.dtype(np.float64))] * 2)
    assert any(isinstance(op, prim.WhileOp) for op in traced.graph.walk())


def unrolled_newton(v: Any, steps: int) -> Any:
    x = v
    for _ in range(steps):
        x = 0.5 * (x + v / x)
    return x


def test_while_loop_differentiates_in_reverse_without_a_bound() -> None:
    """grad/vjp/linearize/jacrev through a loop whose trip count only the run
    knows (the forward loop records its iterations in growable tapes): equal
    to the analytic gradient and to the same iterations unrolled by hand."""
    for a in (2.0, 7.0, 100.0):
        _, count = newton_sqrt_numpy(a)
        grad = float(td.grad(lambda v: newton_sqrt(v)[0])(np.float64(a)))
        by_hand = td.grad(lambda v, n=count: unrolled_newton(v, n))(np.float64(a))
        assert grad == pytest.approx(float(by_hand), rel=1e-12)
        assert grad == pytest.approx(0.5 / np.sqrt(a), rel=1e-10)
    seven = np.float64(7.0)
    root, vjp_fn = td.vjp(lambda v: newton_sqrt(v)[0], seven)
    assert float(vjp_fn(np.float64(2.0))[0]) == pytest.approx(1.0 / np.sqrt(7.0))
    _, f_jvp = td.linearize(lambda v: newton_sqrt(v)[0], seven)
    assert float(f_jvp(np.float64(1.0))) == pytest.approx(0.5 / np.sqrt(7.0))
    jacobian = td.jacrev(lambda v: newton_sqrt(v)[0] * tnp.arange(1.0, 4.0))(seven)
    np.testing.assert_allclose(jacobian, 0.5 / np.sqrt(7.0) * np.arange(1.0, 4.0))
    traced = trace_function(td.grad(lambda v: newton_sqrt(v)[0]), [ArraySpec((), np.dtype("f8"))])
    ops = list(traced.graph.walk())
    assert any(isinstance(op, prim.RecordWhileOp) for op in ops)
    assert any(isinstance(op, prim.ScanOp) and op.count is not None for op in ops)


def drift(p: Any, horizon: float = 60.0) -> Any:
    """A vector carried until a clock advanced by the parameter passes `horizon`:
    about `horizon / p` iterations, so the tapes grow past their first block."""

    def step(state: Any) -> Any:
        v, t = state
        return v * (1.0 - 0.01 * p) + 0.02 * tnp.sin(v * p), t + p

    v, _ = lax.while_loop(lambda s: s[1] < horizon, step, (tnp.linspace(0.5, 1.5, 3) * p, 0.0))
    return tnp.sum(v**2)


def drift_numpy(p: float, horizon: float = 60.0) -> float:
    v, t = np.linspace(0.5, 1.5, 3) * p, 0.0
    while t < horizon:
        v, t = v * (1.0 - 0.01 * p) + 0.02 * np.sin(v * p), t + p
    return float(np.sum(v**2))


@pytest.mark.parametrize("backend", ["llvm", "interp"])
def test_reverse_mode_through_a_long_while_loop(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """~100-200 iterations (tapes regrown several times): the gradient matches
    central differences of a numpy loop, compiled and in the evaluator."""
    if backend == "interp":
        monkeypatch.setenv("TIDU_BACKEND", backend)
    for p in (0.37, 0.53):  # 162 and 113 iterations, far from a change of trip count
        grad = float(td.grad(drift)(np.float64(p)))
        h = 1e-6
        expected = (drift_numpy(p + h) - drift_numpy(p - h)) / (2 * h)
        assert grad == pytest.approx(expected, rel=1e-6)


def test_vmap_of_grad_through_while_with_per_example_trip_counts() -> None:
    """The batched loop runs while any example's predicate holds; its linear
    loop leaves the tangents of the examples that had stopped alone."""
    batch = np.array([2.0, 7.0, 100.0, 1.0])
    steps = [newton_sqrt_numpy(a)[1] for a in batch]
    assert len(set(steps)) > 1
    root = lambda v: newton_sqrt(v)[0]  # noqa: E731
    grads = td.vmap(td.grad(root))(batch)
    np.testing.assert_allclose(grads, [td.grad(root)(a) for a in batch], rtol=1e-14)
    np.testing.assert_allclose(grads[:3], 0.5 / np.sqrt(batch[:3]), rtol=1e-10)
    assert grads[3] == 1.0  # no iteration: the result is the start, a itself


def test_second_derivatives_through_while() -> None:
    """Forward over reverse (`hessian`) and reverse over reverse (`grad` of
    `grad`) through a loop whose trip count only the run knows: the JVP of
    the recorded loop and of the scan over its tapes are loops themselves."""
    root = lambda v: newton_sqrt(v)[0]  # noqa: E731
    assert float(td.hessian(root)(np.float64(7.0))) == pytest.approx(-0.25 * 7.0**-1.5, rel=1e-9)
    p, h = np.float64(0.37), 1e-5
    numeric = (td.grad(drift)(p + h) - td.grad(drift)(p - h)) / (2 * h)
    assert float(td.grad(td.grad(drift))(p)) == pytest.approx(float(numeric), rel=1e-6)
    assert float(td.hessian(drift)(p)) == pytest.approx(float(numeric), rel=1e-6)


def test_while_loop_refuses_a_non_boolean_condition() -> None:
    with pytest.raises(TypeError, match="cond_fun must return a 0-d boolean"):
        td.jit(lambda v: lax.while_loop(lambda s: s > 0.0, lambda s: s - 1.0, v))(np.ones(2))


def bounded_root(a: Any, max_steps: int = 50) -> Any:
    """Newton's sqrt(a) as a while loop with a step bound: reverse mode works."""
    return lax.while_loop(
        lambda x: tnp.abs(x * x - a) > 1e-12, lambda x: 0.5 * (x + a / x), a, max_steps=max_steps
    )


def test_while_loop_with_max_steps_differentiates_in_reverse() -> None:
    """The gradient of a loop whose trip count depends on the data equals the
    analytic one and that of the same iterations unrolled by hand."""
    for a in (2.0, 7.0, 100.0):
        _, count = newton_sqrt_numpy(a)

        def unrolled(v: Any, steps: int = count) -> Any:
            x = v
            for _ in range(steps):
                x = 0.5 * (x + v / x)
            return x

        grad = float(td.grad(bounded_root)(np.float64(a)))
        assert grad == pytest.approx(float(td.grad(unrolled)(np.float64(a))), rel=1e-12)
        assert grad == pytest.approx(0.5 / np.sqrt(a), rel=1e-10)
    hessian = float(td.hessian(bounded_root)(np.float64(7.0)))
    assert hessian == pytest.approx(-0.25 * 7.0**-1.5, rel=1e-8)
    batch = np.array([2.0, 7.0, 100.0])
    np.testing.assert_allclose(td.vmap(td.grad(bounded_root))(batch), 0.5 / np.sqrt(batch))


RAN_OUT = r"while_loop: the condition still holds after max_steps=3 steps; raise max_steps"


def test_while_loop_past_max_steps_raises_not_a_truncated_result() -> None:
    """Past `max_steps` every use of the result raises `RuntimeError` (a
    `prim.check`): the values, and every derivative taken through the loop."""
    seven = np.float64(7.0)
    short = td.jit(lambda a: bounded_root(a, 3))
    with pytest.raises(RuntimeError, match=RAN_OUT):
        short(seven)
    assert float(short(np.float64(1.0))) == 1.0  # still usable; 1 converges at once
    assert float(td.jit(bounded_root)(seven)) == pytest.approx(np.sqrt(7.0))
    derived: dict[str, Callable[[], Any]] = {
        "grad": lambda: td.grad(lambda a: bounded_root(a, 3))(seven),
        "vjp": lambda: td.vjp(lambda a: bounded_root(a, 3), seven)[1](np.float64(1.0)),
        "jvp": lambda: td.jvp(lambda a: bounded_root(a, 3), (seven,), (np.float64(1.0),))[1],
        "linearize": lambda: td.linearize(lambda a: bounded_root(a, 3), seven)[1](np.float64(1.0)),
        "hessian": lambda: td.hessian(lambda a: bounded_root(a, 3))(seven),
        "vmap": lambda: td.vmap(lambda a: bounded_root(a, 3))(np.array([1.0, 7.0, 4.0])),
        "vmap-grad": lambda: td.vmap(td.grad(lambda a: bounded_root(a, 3)))(np.array([1.0, 7.0])),
        "eager": lambda: bounded_root(seven, 3),
    }
    for name, run in derived.items():
        try:
            run()
        except RuntimeError as error:
            assert re.fullmatch(RAN_OUT, str(error)), (name, str(error))
        else:
            pytest.fail(f"{name} did not raise")
    np.testing.assert_allclose(td.vmap(lambda a: bounded_root(a, 3))(np.array([1.0, 1.0])), 1.0)


def test_while_loop_past_max_steps_raises_in_the_interpreter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TIDU_BACKEND", "interp")
    seven = np.float64(7.0)
    with pytest.raises(RuntimeError, match=RAN_OUT):
        td.jit(lambda a: bounded_root(a, 3))(seven)
    with pytest.raises(RuntimeError, match=RAN_OUT):
        td.grad(lambda a: bounded_root(a, 3))(seven)
    assert float(td.grad(bounded_root)(seven)) == pytest.approx(0.5 / np.sqrt(7.0))


def test_fori_loop_index_is_a_weak_integer() -> None:
    """The index indexes (`x[i]`, `.at[i]`) and promotes like a Python int: a
    float32 carry times `i` stays float32, as with JAX's weak int32."""
    xs = np.arange(1.0, 6.0, dtype=np.float32)
    total = td.jit(lambda v: lax.fori_loop(0, 5, lambda i, acc: acc + v[i] * i, np.float32(0)))(xs)
    assert total.dtype == np.float32 and total == np.sum(xs * np.arange(5))
    filled = td.jit(lambda v: lax.fori_loop(1, 4, lambda i, c: c.at[i].set(i * 0.5), v))(xs)
    np.testing.assert_array_equal(filled, [1.0, 0.5, 1.0, 1.5, 5.0])
    assert filled.dtype == np.float32
    g = td.grad(lambda v: lax.fori_loop(0, 5, lambda i, acc: acc + v[i] ** 2 * i, 0.0))(
        np.arange(5.0)
    )
    np.testing.assert_array_equal(g, 2 * np.arange(5.0) * np.arange(5))
    powers = td.jit(lambda n, x: lax.fori_loop(0, n, lambda i, acc: acc * x, x * 0.0 + 1.0))
    assert powers(np.int64(3), np.array(2.0)) == 8.0 == powers(np.float64(3), np.array(2.0))
