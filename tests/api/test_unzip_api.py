"""`td.linearize` and `td.vjp` through `unzip`: the forward function runs once,
`f_jvp` / `vjp_fn` run only the linear (transposed) map on stored residuals,
under the policy `td.checkpoint` sets; `td.saved_residuals` lists them.

Results are checked against the fused transforms (`td.jvp`, `td.grad`).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.func import FuncOp

import tidu_mlir as td
import tidu_mlir.api as api
import tidu_mlir.numpy as tnp
from tidu_mlir import ad

from .corpus import CASES, Case
from .test_transforms import _direction, _inner, _tolerance

POLICIES = list(ad.POLICIES)
SOME = ["sin_times_x", "where", "maximum_relu", "mlp_loss", "softmax", "complex_exp"]


def _close(actual: Any, expected: Any, tol: float) -> None:
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=tol, atol=tol)


def _check_against_fused(fn: Callable[..., Any], case: Case) -> None:
    """linearize equals the fused `td.jvp`; vjp is its adjoint (and `td.grad`)."""
    rng = np.random.default_rng(11)
    args = case.make_args(rng)
    tangents = [_direction(rng, a) for a in args]
    tol = _tolerance(*args)
    fused_out, fused_tangent = td.jvp(case.fn, args, tangents)
    out, f_jvp = td.linearize(fn, *args)
    _close(out, fused_out, tol)
    _close(f_jvp(*tangents), fused_tangent, tol)
    out, vjp_fn = td.vjp(fn, *args)
    _close(out, fused_out, tol)
    ct = _direction(rng, np.asarray(out))
    cts = vjp_fn(ct)
    assert _inner([ct], [fused_tangent]) == pytest.approx(_inner(cts, tangents), rel=tol, abs=tol)
    if case.scalar_output:
        grads = td.grad(case.fn, tuple(range(len(args))))(*args)
        for mine, fused in zip(vjp_fn(np.ones((), np.asarray(out).dtype)), grads, strict=True):
            _close(mine, fused, tol)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_linearize_and_vjp_equal_the_fused_transforms(case: Case) -> None:
    _check_against_fused(case.fn, case)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("name", SOME)
def test_every_policy_gives_the_same_derivatives(name: str, policy: str) -> None:
    case = next(c for c in CASES if c.name == name)
    _check_against_fused(td.checkpoint(case.fn, policy=policy), case)


def _counting_executables(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count the calls of every compiled function, by function name."""
    calls: Counter[str] = Counter()
    original = api.executable

    def counted(func: FuncOp) -> Callable[..., list[Any]]:
        run = original(func)
        name = func.sym_name.data

        def call(*args: Any) -> list[Any]:
            calls[name] += 1
            return run(*args)

        return call

    monkeypatch.setattr(api, "executable", counted)
    return calls


def test_f_jvp_and_vjp_fn_do_not_run_the_forward_function(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _counting_executables(monkeypatch)
    traced: list[int] = []

    def f(x: Any) -> Any:
        traced.append(1)
        return tnp.sum(tnp.tanh(x) * tnp.sin(x))

    x = np.linspace(0.1, 1.0, 6)
    _, f_jvp = td.linearize(f, x)
    _, vjp_fn = td.vjp(f, x)
    assert calls == {"forward": 2}
    for _ in range(3):
        f_jvp(np.ones(6))
        vjp_fn(np.ones(()))
    assert calls == {"forward": 2, "linear": 3, "transposed": 3}
    assert len(traced) == 2  # once per transform, never by f_jvp / vjp_fn


@pytest.mark.parametrize("policy", POLICIES)
def test_residuals_are_owned_by_the_linearization(policy: str) -> None:
    f = td.checkpoint(lambda x: tnp.sin(x) * x, policy=policy)
    x = np.linspace(0.1, 1.0, 5)
    t = np.ones(5)
    expected = np.cos(x) * x + np.sin(x)
    _, f_jvp = td.linearize(f, x)
    _, vjp_fn = td.vjp(f, x)
    x[:] = 7.0
    _close(f_jvp(t), expected, 1e-12)
    _close(vjp_fn(t)[0], expected, 1e-12)


def _summary(fn: Callable[..., Any], *args: Any) -> list[tuple[tuple[int, ...], str, int, str]]:
    return [(r.shape, r.dtype.name, r.nbytes, r.source) for r in td.saved_residuals(fn, *args)]


def test_saved_residuals_of_sin_times_x() -> None:
    """d(sin x · x) = cos x · x · dx + sin x · dx: save-all keeps cos x, sin x, x."""
    f = lambda x: tnp.sin(x) * x  # noqa: E731
    x = np.ones(5)
    assert _summary(f, x) == [
        ((5,), "float64", 40, "prim.cos"),
        ((5,), "float64", 40, "prim.sin"),
        ((5,), "float64", 40, "input arg0"),
    ]
    assert _summary(td.checkpoint(f, policy="save-nothing"), x) == [
        ((5,), "float64", 40, "input arg0")
    ]


def test_saved_residuals_of_tanh_of_a_matvec() -> None:
    """d tanh(A x) = (1 - t²) · (dA x + A dx): save-all keeps A, x (as a column)
    and 1 - t²; recompute-elementwise keeps the contraction A x instead of
    1 - t²; save-nothing the inputs only."""
    a, x = np.ones((3, 4)), np.ones(4)
    f = lambda a, x: tnp.tanh(a @ x)  # noqa: E731
    assert _summary(f, a, x) == [
        ((3, 4), "float64", 96, "input arg0"),
        ((4, 1), "float64", 32, "prim.reshape"),
        ((3,), "float64", 24, "prim.sub"),
    ]
    assert _summary(td.checkpoint(f, policy="recompute-elementwise"), a, x) == [
        ((4,), "float64", 32, "input arg1"),
        ((3, 1), "float64", 24, "prim.dot_general"),
        ((3, 4), "float64", 96, "input arg0"),
    ]
    assert _summary(td.checkpoint(f, policy="save-nothing"), a, x) == [
        ((4,), "float64", 32, "input arg1"),
        ((3, 4), "float64", 96, "input arg0"),
    ]


def test_saved_residuals_of_relu_keep_no_constant() -> None:
    """d max(x - 1, 0) = w·dx with w = 1, 0 or 1/2 (ties): save-all keeps the
    weight only; the constants it selects from are recomputed by every policy,
    and recompute-elementwise keeps the input instead."""
    f = lambda x: tnp.maximum(x - 1.0, 0.0)  # noqa: E731
    x = np.ones(6)
    assert _summary(f, x) == [((6,), "float64", 48, "prim.select")]
    assert _summary(td.checkpoint(f, policy="recompute-elementwise"), x) == [
        ((6,), "float64", 48, "input arg0")
    ]
    assert _summary(td.checkpoint(f, policy="save-nothing"), x) == [
        ((6,), "float64", 48, "input arg0")
    ]


@pytest.mark.parametrize("policy", POLICIES)
def test_complex_inputs(policy: str) -> None:
    z = np.array([0.3 + 0.2j, -0.5 + 1.0j, 1.2 - 0.4j])
    f = td.checkpoint(lambda z: tnp.exp(z) * tnp.conj(z), policy=policy)
    dz = np.array([1.0 - 0.5j, 0.2j, -1.0 + 0.0j])
    out, f_jvp = td.linearize(f, z)
    _close(out, np.exp(z) * np.conj(z), 1e-12)
    _close(f_jvp(dz), np.exp(z) * dz * np.conj(z) + np.exp(z) * np.conj(dz), 1e-12)
    _, vjp_fn = td.vjp(f, z)
    ct = np.array([0.5 + 1.0j, -1.0j, 2.0 + 0.0j])
    (ct_z,) = vjp_fn(ct)
    assert _inner([ct], [f_jvp(dz)]) == pytest.approx(_inner([ct_z], [dz]), rel=1e-12)
    residuals = td.saved_residuals(f, z)
    assert residuals and all(r.dtype == np.complex128 for r in residuals)


def test_unknown_policy_lists_the_valid_names() -> None:
    with pytest.raises(ValueError, match="valid policies: save-all, recompute-elementwise, save"):
        td.checkpoint(lambda x: x, policy="save-some")


def test_checkpoint_forms() -> None:
    @td.checkpoint
    def default(x: Any) -> Any:
        return tnp.exp(tnp.sin(x))

    @functools.partial(td.checkpoint, policy="save-nothing")
    def nothing(x: Any) -> Any:
        return tnp.exp(tnp.sin(x))

    direct = td.checkpoint(lambda x: tnp.exp(tnp.sin(x)), policy="save-nothing")
    x = np.linspace(0.1, 1.0, 4)
    assert default.policy == "save-all" and default.__name__ == "default"
    np.testing.assert_allclose(default(x), np.exp(np.sin(x)))  # called like the function
    assert [r.source for r in td.saved_residuals(default, x)] == ["prim.cos", "prim.exp"]
    for fn in (nothing, direct, td.checkpoint(default, policy="save-nothing")):
        assert [r.source for r in td.saved_residuals(fn, x)] == ["input arg0"]
        _, f_jvp = td.linearize(fn, x)
        _close(f_jvp(np.ones(4)), np.exp(np.sin(x)) * np.cos(x), 1e-12)


def test_checkpoint_composes_with_other_transforms() -> None:
    f = td.checkpoint(lambda x: tnp.sum(tnp.sin(x) ** 2), policy="save-nothing")
    x = np.linspace(0.1, 1.0, 3)
    expected = np.diag(2.0 * np.cos(2.0 * x))
    _close(td.hessian(f)(x), expected, 1e-10)
    _close(td.jacfwd(td.grad(f))(x), expected, 1e-10)
    _close(td.jit(td.grad(f))(x), np.sin(2.0 * x), 1e-12)


def test_checkpoint_inside_a_traced_function_marks_a_region() -> None:
    """Like `jax.checkpoint`: the layers called through `td.checkpoint` are
    recomputed from their inputs; the rest of the function keeps its policy."""
    rng = np.random.default_rng(5)
    weights = [rng.standard_normal((6, 6)) / 3 for _ in range(3)]
    layer = lambda w, h: tnp.tanh(w @ h)  # noqa: E731
    saved_layer = td.checkpoint(layer, policy="save-nothing")

    def net(x: Any, step: Any) -> Any:
        h = x
        for w in weights:
            h = step(w, h)
        return tnp.sum(tnp.sin(h) * h)

    x = rng.standard_normal(6)
    plain, regions = (functools.partial(net, step=s) for s in (layer, saved_layer))
    # save-all keeps 1 - t² of every layer (and cos h, sin h, h for sin(h)·h);
    # with the layers checkpointed, their outputs t (the enclosing policy's to
    # save, as in JAX) and 1 - t² is recomputed from t.
    assert [r.source for r in td.saved_residuals(plain, x)] == [
        "prim.sub", "prim.sub", "prim.sub", "prim.cos", "prim.sin", "prim.tanh",
    ]  # fmt: skip
    assert [r.source for r in td.saved_residuals(regions, x)] == [
        "prim.tanh", "prim.tanh", "prim.tanh", "prim.cos", "prim.sin",
    ]  # fmt: skip
    gradient = td.grad(plain)(x)
    out, vjp_fn = td.vjp(regions, x)
    _close(vjp_fn(np.float64(1.0))[0], gradient, 1e-12)
    _, f_jvp = td.linearize(regions, x)
    t = rng.standard_normal(6)
    _close(f_jvp(t), gradient @ t, 1e-12)
    assert 'cg.policy = "save-nothing"' in td.ir(regions, x, stage="trace")


def test_region_policy_overrides_the_function_policy() -> None:
    """A `save-all` region inside a `save-nothing` function keeps its interior
    (sin x, and cos x derived from it); its output exp(sin x) is the enclosing
    policy's, recomputed from sin x."""
    inner = td.checkpoint(lambda x: tnp.exp(tnp.sin(x)))  # the default policy
    f = td.checkpoint(lambda x: tnp.sin(inner(x)), policy="save-nothing")
    x = np.linspace(0.1, 1.0, 4)
    assert [r.source for r in td.saved_residuals(f, x)] == ["prim.sin", "prim.cos"]
    _, f_jvp = td.linearize(f, x)
    e = np.exp(np.sin(x))
    _close(f_jvp(np.ones(4)), np.cos(e) * e * np.cos(x), 1e-12)


def test_linearize_of_tracers_inlines_both_parts() -> None:
    """Inside a trace, the forward and linear functions are inlined."""

    def directional(x: Any) -> Any:
        _, f_jvp = td.linearize(lambda x: tnp.sin(x) * x, x)
        return f_jvp(np.ones(4))

    x = np.linspace(0.1, 1.0, 4)
    _close(td.jit(directional)(x), np.cos(x) * x + np.sin(x), 1e-12)


def test_linear_transpose_of_f_jvp() -> None:
    """`f_jvp` is traced again (on the stored residuals) by `linear_transpose`."""
    x = np.linspace(0.1, 1.0, 4)
    _, f_jvp = td.linearize(td.checkpoint(lambda x: tnp.sin(x) * x, policy="save-nothing"), x)
    (ct,) = td.linear_transpose(f_jvp, x)(np.ones(4))
    _close(ct, np.cos(x) * x + np.sin(x), 1e-12)


def test_ir_unzip_stage_shows_both_fragments_and_leaves_the_others() -> None:
    f = td.checkpoint(lambda x: tnp.sum(tnp.sin(x)), policy="save-nothing")
    stages = td.lower(f, np.ones(3))
    assert "cg.graph @f_fwd2 attributes {cg.residuals = #cg.residuals<1, 2>}" in stages["unzip"]
    assert "cg.graph @f_lin2" in stages["unzip"]
    assert "@f_fwd" not in stages["vjp"] and "cg.linear @vjp2" in stages["vjp"]
