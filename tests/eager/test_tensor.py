"""The `Tensor` frontend: gradients of eager versions of tests/api/corpus.py
functions against finite differences and the traced transforms (`td.vjp`),
PyTorch-style `.grad` semantics, no_grad, detach, complex gradients
(`docs/complex.md`), error messages, and compile-once caching."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from api.corpus import CASES, Case  # tests/api (pytest puts tests/ on sys.path)

import tidu_mlir as td
import tidu_mlir.eager as te
from tidu_mlir.eager import Tensor
from tidu_mlir.eager.functions import GRAPHS


def _softmax(x: Tensor) -> Tensor:
    e = te.exp(x - te.max(x, axis=-1, keepdims=True))
    return e / te.sum(e, axis=-1, keepdims=True)


def _logsumexp(x: Tensor) -> Tensor:
    m = te.max(x)
    return m + te.log(te.sum(te.exp(x - m)))


def _mlp_loss(x: Tensor, w1: Tensor, w2: Tensor, y: Tensor) -> Tensor:
    pred = te.tanh(x @ w1) @ w2
    return te.mean((pred - y) ** 2)


EAGER: dict[str, Callable[..., Tensor]] = {
    "sin_times_x": lambda x: te.sin(x) * x,
    "exp_log_chain": lambda x: te.log(te.exp(x) + 1.0) / x,
    "poly": lambda x: 3.0 * x**3 - 2.0 * x + 1.0,
    "sqrt_tanh": lambda x: te.sqrt(x) + te.tanh(x),
    "cos_neg": lambda x: -te.cos(x),
    "div_sub": lambda x, y: (x - y) / (x + y),
    "broadcast_col": lambda x, b: x * b,
    "sum_all": lambda x: te.sum(x * x),
    "sum_keepdims": lambda x: x / te.sum(x, axis=1, keepdims=True),
    "mean": lambda x: te.mean(x, axis=1),
    "max_axis": lambda x: te.max(x, axis=1),
    "maximum_relu": lambda x: te.maximum(x - 1.0, 0.0),
    "where": lambda x: te.where(x > 1.0, x * x, -x),
    "matmul": lambda a, b: a @ b,
    "vecdot": lambda u, v: te.dot(u, v),
    "einsum_bij": lambda a, b: te.einsum("bij,bjk->bik", a, b),
    "transpose": lambda a: te.transpose(a) @ a,
    "reshape": lambda a: te.reshape(a, (4, -1)).sum(axis=1),
    "broadcast_to": lambda v: te.broadcast_to(v, (3, 4)) * 2.0,
    "slicing": lambda x: x[1:, ::2] * x[:-1, 1::2],
    "int_index": lambda x: x[2] + x[..., 0][1] + x[None, 0, :][0],
    "concatenate": lambda x, y: te.concatenate([x, y * 2.0, x], axis=1),
    "softmax": _softmax,
    "logsumexp": _logsumexp,
    "mlp_loss": _mlp_loss,
    "pow_scalar_base": lambda x: 2.0**x + x**x,
    "f32_chain": lambda x: te.exp(x) * 2.0 + te.sin(x),
    "complex_mul": lambda z, w: z * w + te.conj(z),
    "complex_abs2": lambda z: te.sum(te.real(z * te.conj(z))),
    "complex_abs": lambda z: te.abs(z) + te.real(z),
    "real_to_complex": lambda x, z: x * z,
}
CORPUS = {case.name: case for case in CASES}


@pytest.fixture
def interp() -> Iterator[None]:
    te.set_backend("interp")
    yield
    te.set_backend(None)


def _direction(rng: np.random.Generator, like: np.ndarray) -> np.ndarray:
    value = rng.standard_normal(like.shape)
    if like.dtype.kind == "c":
        value = value + 1j * rng.standard_normal(like.shape)
    return value.astype(like.dtype)


def _inner(a: np.ndarray, b: np.ndarray) -> float:
    """The real inner product <a, b> = Re(sum(conj(a)·b)) (`docs/complex.md`)."""
    return float(np.real(np.sum(np.conj(a) * b)))


def _finite_difference_vjp(fn: Callable[..., Any], args: list[np.ndarray], seed: np.ndarray
                           ) -> list[np.ndarray]:  # fmt: skip
    """d<seed, fn(args)>/d(args) by central differences in double precision,
    one real (and for complex arguments one imaginary) direction per element."""
    wide = [a.astype(np.complex128 if a.dtype.kind == "c" else np.float64) for a in args]
    h = 1e-5

    def loss(values: list[np.ndarray]) -> float:
        return _inner(seed.astype(np.complex128), np.asarray(fn(*values)))

    grads = []
    for index, arg in enumerate(wide):
        grad = np.zeros(arg.shape, dtype=arg.dtype)
        units = (1.0, 1j) if arg.dtype.kind == "c" else (1.0,)
        for position in np.ndindex(arg.shape):
            for unit in units:
                plus, minus = list(wide), list(wide)
                plus[index], minus[index] = arg.copy(), arg.copy()
                plus[index][position] += h * unit
                minus[index][position] -= h * unit
                grad[position] += unit * (loss(plus) - loss(minus)) / (2 * h)
        grads.append(grad)
    return grads


def _tolerance(args: list[np.ndarray]) -> float:
    return 2e-3 if any(a.dtype in (np.float32, np.complex64) for a in args) else 1e-6


def _eager_vjp(name: str, args: list[np.ndarray], seed: np.ndarray | None
               ) -> tuple[Tensor, list[np.ndarray]]:  # fmt: skip
    tensors = [te.tensor(a, requires_grad=True) for a in args]
    out = EAGER[name](*tensors)
    out.backward(seed)
    grads = [t.grad.numpy() if t.grad is not None else np.zeros_like(t.data) for t in tensors]
    return out, grads


@pytest.mark.parametrize("name", sorted(EAGER))
def test_corpus_gradients_match_finite_differences(name: str, backend: str) -> None:
    case: Case = CORPUS[name]
    rng = np.random.default_rng(7)
    args = list(case.make_args(rng))
    expected = np.asarray(case.fn(*args))
    seed = None if case.scalar_output else _direction(rng, expected)
    out, grads = _eager_vjp(name, args, seed)
    tolerance = _tolerance(args)
    np.testing.assert_allclose(out.numpy(), expected, rtol=tolerance, atol=tolerance)
    assert out.dtype == expected.dtype
    reference = _finite_difference_vjp(case.fn, args, np.ones(()) if seed is None else seed)
    for grad, arg, ref in zip(grads, args, reference, strict=True):
        assert grad.dtype == arg.dtype and grad.shape == arg.shape
        np.testing.assert_allclose(grad, ref, rtol=10 * tolerance, atol=10 * tolerance)


@pytest.mark.parametrize("name", sorted(EAGER))
def test_corpus_gradients_match_td_vjp(name: str, interp: None) -> None:
    case = CORPUS[name]
    rng = np.random.default_rng(11)
    args = list(case.make_args(rng))
    out, vjp_fn = td.vjp(case.fn, *args)
    seed = (
        np.ones((), dtype=np.asarray(out).dtype)
        if case.scalar_output
        else _direction(rng, np.asarray(out))
    )
    expected = vjp_fn(seed)
    _, grads = _eager_vjp(name, args, seed)
    tolerance = _tolerance(args)
    for grad, ref in zip(grads, expected, strict=True):
        np.testing.assert_allclose(grad, ref, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("name", sorted(n for n in EAGER if CORPUS[n].scalar_output))
def test_scalar_corpus_gradients_match_td_grad(name: str, interp: None) -> None:
    case = CORPUS[name]
    args = list(case.make_args(np.random.default_rng(5)))
    expected = td.grad(case.fn, argnums=tuple(range(len(args))))(*args)
    _, grads = _eager_vjp(name, args, None)
    for grad, ref in zip(grads, expected, strict=True):
        np.testing.assert_allclose(grad, ref, rtol=1e-6, atol=1e-6)


def test_grad_accumulates_across_backward_calls(interp: None) -> None:
    x = te.tensor([0.5, 1.5, -2.0], requires_grad=True)
    y = (te.sin(x) * x).sum()
    y.backward()
    first = x.grad.numpy().copy()  # type: ignore[union-attr]
    (te.sin(x) * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first)  # type: ignore[union-attr]
    y.backward()  # the tape stays usable
    np.testing.assert_allclose(x.grad.numpy(), 3 * first)  # type: ignore[union-attr]
    x.grad = None
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), first)  # type: ignore[union-attr]


def test_same_tensor_used_twice_and_fan_out(interp: None) -> None:
    x = te.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    z = (y * x + y).sum()  # x³ + x²
    z.backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * x.data**2 + 2 * x.data)  # type: ignore[union-attr]


def test_no_grad_records_nothing(interp: None) -> None:
    x = te.tensor([1.0, 2.0], requires_grad=True)
    with te.no_grad():
        assert not te.is_grad_enabled()
        y = te.exp(x) * 2.0
    assert te.is_grad_enabled()
    assert not y.requires_grad and y.is_leaf
    np.testing.assert_allclose(y.numpy(), 2 * np.exp(x.data))
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.sum().backward()


def test_detach_cuts_the_tape(interp: None) -> None:
    x = te.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.data is y.data
    (d * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.numpy())  # type: ignore[union-attr]


def test_complex_gradient_of_abs_squared_is_2z(interp: None) -> None:
    """grad |z|² at 1+2i is 2+4i: ∂L/∂x + i∂L/∂y (`docs/complex.md`)."""
    z = te.tensor([1 + 2j, -0.5 + 0.25j], requires_grad=True)
    (z * z.conj()).real.sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), 2 * z.data)  # type: ignore[union-attr]
    z.grad = None
    (te.abs(z) ** 2).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), 2 * z.data)  # type: ignore[union-attr]


def test_holomorphic_vjp_conjugates_the_derivative(interp: None) -> None:
    """For holomorphic f, ct_z = ct · conj(f'(z))."""
    z = te.tensor([0.3 + 0.7j], requires_grad=True)
    te.exp(z).backward(np.array([1.0 + 0j]))
    np.testing.assert_allclose(z.grad.numpy(), np.conj(np.exp(z.data)))  # type: ignore[union-attr]


def test_backward_errors() -> None:
    x = te.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ValueError, match="backward needs a seed for a non-scalar output"):
        (x * 2.0).backward()
    with pytest.raises(RuntimeError, match="backward on a tensor that does not require grad"):
        te.tensor([1.0]).backward()
    with pytest.raises(ValueError, match=r"seed has shape \(3,\)"):
        (x * 2.0).backward(np.ones(3))
    with pytest.raises(TypeError, match="only float and complex tensors can require grad"):
        te.tensor([True, False], requires_grad=True)
    with pytest.raises(TypeError, match=r"only float and complex tensors .* \(dtype int64\)"):
        te.tensor([1, 2], requires_grad=True)
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 2"):
        x[np.array([5])]


def test_integer_tensors_and_array_indexing() -> None:
    """Integer tensors keep their dtype (PyTorch's `tensor([1, 2])` is int64);
    index arrays, integer tensors and concrete masks index with a gradient."""
    n = te.tensor([0, 1, 1])
    assert n.dtype == np.int64 and (n * 2 + 1).numpy().tolist() == [1, 3, 3]
    x = te.tensor([[3.0, 1.0, 2.0], [0.5, -1.0, 4.0]], requires_grad=True)
    total = x[n[:2], 1].sum() + x[x.numpy() > 2].sum() + te.sort(x, axis=1)[:, -1].sum()
    total.backward()
    expected = np.array([[2.0, 1.0, 0.0], [0.0, 1.0, 2.0]])
    np.testing.assert_array_equal(x.grad.numpy(), expected)  # type: ignore[union-attr]


def test_leaf_backward_and_non_leaf_grad(interp: None) -> None:
    x = te.tensor([1.0, 2.0], requires_grad=True)
    x.backward(np.array([3.0, 4.0]))
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 4.0])  # type: ignore[union-attr]
    y = x * 2.0
    y.sum().backward()
    assert y.grad is None and not y.is_leaf
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad = False


def test_numpy_operands_comparisons_and_methods(interp: None) -> None:
    x = te.tensor(np.arange(6.0).reshape(2, 3) + 1.0, requires_grad=True)
    mask = x > 2.0
    assert mask.dtype == np.bool_ and not mask.requires_grad
    y = np.full((2, 3), 2.0) * x  # ndarray on the left defers to Tensor
    assert isinstance(y, Tensor) and y.requires_grad
    z = (y.T.reshape(3, 2).transpose() + x.mean(axis=0)).max()
    assert z.shape == ()
    z.backward()
    assert x.grad is not None and x.grad.shape == (2, 3)
    w = te.tensor([1 + 1j, 2 - 1j], requires_grad=True)
    (w.real * w.imag).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [1 + 1j, -1 + 2j])  # type: ignore[union-attr]


def test_graphs_and_backward_code_are_built_once(backend: str) -> None:
    x = te.tensor(np.linspace(0.1, 1.0, 8), requires_grad=True)

    def step() -> None:
        y = x
        for _ in range(20):
            y = te.tanh(y) * 1.5
        y.sum().backward()

    step()
    graphs, compiled = len(GRAPHS), len(te.RUNTIME.executor.compiled)
    plans = len(te.RUNTIME.context.plans)
    step()
    assert (len(GRAPHS), len(te.RUNTIME.executor.compiled)) == (graphs, compiled)
    assert len(te.RUNTIME.context.plans) == plans


def test_chain_of_1000_tensor_ops(interp: None) -> None:
    x = te.tensor([0.5, 0.25], requires_grad=True)
    y = x
    for _ in range(1000):
        y = y * 1.001
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(2, 1.001**1000))  # type: ignore[union-attr]


def test_identity_ops_and_constant_paths(backend: str) -> None:
    """Ops whose graph returns an input unchanged, and outputs no input reaches."""
    x = te.tensor([1.0, 2.0], requires_grad=True)
    y = te.reshape(x, (2,)) * te.real(x) + te.conj(x) + te.transpose(x)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.data + 2)  # type: ignore[union-attr]
    x.grad = None
    (te.imag(x) + 1.0).sum().backward()  # imag of a real tensor is a constant
    assert x.grad is None


def test_compiled_fast_path_matches_evaluator_on_views() -> None:
    """The compiled executor's by-position fast path (non-contiguous views,
    a value used twice) gives the evaluator's cotangents."""
    from tidu_mlir.eager import EvaluatorExecutor, try_backward

    base = te.tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=True)
    y = (te.sin(base.T) * base.T).sum()
    assert y._trace is not None
    fast = try_backward(y.key, y._trace, np.ones(()), te.RUNTIME.executor, te.RUNTIME.context)
    slow = try_backward(y.key, y._trace, np.ones(()), EvaluatorExecutor())
    assert fast.keys() == slow.keys()
    for key, value in fast.items():
        np.testing.assert_allclose(value, slow[key])
    x = base.data
    np.testing.assert_allclose(fast[base.key], np.cos(x) * x + np.sin(x))


def test_eager_records_are_immutable() -> None:
    from dataclasses import FrozenInstanceError

    value = te.EagerInput("k", None, True, np.ones(2))
    with pytest.raises(FrozenInstanceError):
        value.key = "other"  # type: ignore[misc]
    assert "EagerInput(key='k'" in repr(value)


def test_sgd_updates_under_no_grad_keep_the_leaf(backend: str) -> None:
    """PyTorch's training loop: `with no_grad(): w -= lr * w.grad`, then
    `w.grad.zero_()` or `w.grad = None`; the iterates equal td.grad's."""
    import tidu_mlir as td
    import tidu_mlir.numpy as tnp

    x = np.linspace(-1.0, 1.0, 4)
    w = te.tensor(np.full(4, 0.3), requires_grad=True)
    reference = np.full(4, 0.3)
    loss_of = lambda v, xp: xp.sum(xp.tanh(v * x) ** 2 + v**2)  # noqa: E731
    for step in range(4):
        loss_of(w, te).backward()
        with te.no_grad():
            w -= 0.1 * w.grad
            w *= 1.0
        if step % 2:
            w.grad.zero_()  # type: ignore[union-attr]
            np.testing.assert_array_equal(w.grad.numpy(), 0.0)  # type: ignore[union-attr]
        w.grad = None
        reference = reference - 0.1 * td.grad(lambda v: loss_of(v, tnp))(reference)
        assert w.is_leaf and w.requires_grad
        np.testing.assert_allclose(w.numpy(), reference, rtol=1e-12)


def test_in_place_rules(interp: None) -> None:
    w = te.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="in-place operation"):
        w += 1.0
    y = w * 2.0
    before = y
    y += 1.0  # a recorded tensor: a new recorded result
    assert y is not before and not y.is_leaf
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [2.0, 2.0])  # type: ignore[union-attr]
    loss = (w * w).sum()
    with te.no_grad():
        w /= 2.0  # after recording: the recorded graph keeps the values it saw
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), [2.0 + 2.0, 2.0 + 4.0])  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="in-place update of a tensor of shape"), te.no_grad():
        w += np.ones((2, 2))
    plain = te.tensor([1.0, 4.0])
    plain -= 1.0  # outside autograd: in place, no_grad or not
    np.testing.assert_allclose(plain.numpy(), [0.0, 3.0])
    assert w.requires_grad_(False) is w and not w.requires_grad


def test_method_forms(interp: None) -> None:
    x = te.tensor([0.5, -1.0], requires_grad=True)
    y = x.tanh().exp() * x.sin() + x.maximum(0.0)
    np.testing.assert_allclose(
        y.numpy(), np.exp(np.tanh(x.numpy())) * np.sin(x.numpy()) + np.maximum(x.numpy(), 0.0)
    )
    y.sum().backward()
    assert x.grad is not None and x.grad.shape == (2,)
    np.testing.assert_allclose(x.matmul(te.tensor([1.0, 1.0])).item(), -0.5)
