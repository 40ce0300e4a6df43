"""GradBench's evals (tests/gradbench/evals.py), the JAX program with only the
names `jnp`, `jax` and `special` bound to tidu, checked on GradBench's own
inputs against JAX (values and derivatives within 1e-8 relative; skipped
without JAX), and on small inputs against central differences of a separate
numpy evaluation of the same text (always run)."""

from __future__ import annotations

import math
from collections.abc import Callable
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np
import pytest

import tidu_mlir as td
import tidu_mlir.numpy as tnp
import tidu_mlir.scipy.special as td_special

from . import evals as gradbench

OURS = gradbench.evals(tnp, td, td_special)

# (eval, function, input): GradBench's smallest sizes for each eval.
CASES: list[tuple[str, str, Callable[[], dict[str, Any]]]] = [
    ("lse", "primal", lambda: gradbench.lse_input(2500)),
    ("lse", "gradient", lambda: gradbench.lse_input(2500)),
    ("llsq", "primal", lambda: gradbench.llsq_input(16, 128)),
    ("llsq", "gradient", lambda: gradbench.llsq_input(16, 128)),
    ("kmeans", "cost", lambda: gradbench.kmeans_input(10, 1000, 8)),
    ("kmeans", "dir", lambda: gradbench.kmeans_input(10, 1000, 8)),
    ("ode", "primal", lambda: gradbench.ode_input(1000, 10)),
    ("ode", "gradient", lambda: gradbench.ode_input(1000, 10)),
    ("gmm", "objective", lambda: gradbench.gmm_input(2, 5, 1000)),
    ("gmm", "jacobian", lambda: gradbench.gmm_input(2, 5, 1000)),
    ("gmm", "jacobian", lambda: gradbench.gmm_input(10, 5, 1000)),
    ("det", "gradient", lambda: gradbench.det_input(5)),
    ("lstm", "objective", lambda: gradbench.lstm_input(2, 64)),
    ("lstm", "jacobian", lambda: gradbench.lstm_input(2, 64)),
]


@pytest.fixture(scope="module")
def theirs() -> dict[str, Any]:
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    special = pytest.importorskip("jax.scipy.special")
    return gradbench.evals(jnp, jax, special)


def _leaves(value: Any) -> list[np.ndarray]:
    if isinstance(value, dict):
        return [np.asarray(value[k]) for k in sorted(value)]
    if isinstance(value, tuple):
        return [np.asarray(v) for v in value]
    return [np.asarray(value)]


@pytest.mark.parametrize("case", range(len(CASES)), ids=lambda c: f"{CASES[c][0]}-{CASES[c][1]}")
def test_matches_jax_on_gradbench_inputs(case: int, theirs: dict[str, Any]) -> None:
    name, function, make_input = CASES[case]
    data = make_input()
    ours = OURS[name][function](OURS[name]["prepare"](data))
    expected = theirs[name][function](theirs[name]["prepare"](data))
    for a, b in zip(_leaves(ours), _leaves(expected), strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-12 * max(1.0, np.max(np.abs(b))))


# --------------------------------------------------------------------------
# Without JAX: the same text evaluated by numpy, and central differences
# --------------------------------------------------------------------------


class _NumpyTransforms(SimpleNamespace):
    """Enough of `jax`'s transforms for evaluating the primal functions with numpy."""

    config = SimpleNamespace(update=lambda *_: None)

    @staticmethod
    def jit(fn: Callable[..., Any], **_: Any) -> Callable[..., Any]:
        return fn

    @staticmethod
    def grad(fn: Callable[..., Any], **_: Any) -> Callable[..., Any]:
        """Built by the evals, never called here: numpy has no derivatives."""

        def unavailable(*args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the numpy evaluation computes values only")

        return unavailable

    jacfwd = grad

    @staticmethod
    def vmap(fn: Callable[..., Any]) -> Callable[..., Any]:
        return lambda *args: np.stack([fn(*row) for row in zip(*args, strict=True)])

    lax = SimpleNamespace(scan=lambda step, carry, xs, length=None: _scan(step, carry, xs, length))
    nn = SimpleNamespace(sigmoid=lambda x: 1.0 / (1.0 + np.exp(-x)))


def _scan(step: Callable[..., Any], carry: Any, xs: Any, length: int | None) -> tuple[Any, Any]:
    """`lax.scan` by a Python loop over the leading axis of `xs` (a tuple of
    arrays) or `length` times without."""
    count = len(xs[0]) if xs is not None else length
    assert count is not None, "scan: give xs or length"
    ys = []
    for t in range(count):
        carry, y = step(carry, None if xs is None else tuple(x[t] for x in xs))
        ys.append(y)
    return carry, np.stack(ys)


class _NumpyWithAt(ModuleType):
    """numpy, with `zeros` giving arrays that have `.at` (tnp's constructors)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(tnp, name) if name in ("zeros", "full", "repeat") else getattr(np, name)


def _logsumexp(a: np.ndarray, axis: int) -> np.ndarray:
    top = np.max(a, axis=axis, keepdims=True)
    return np.log(np.sum(np.exp(a - top), axis=axis)) + np.squeeze(top, axis)


def _multigammaln(a: float, d: int) -> float:
    return d * (d - 1) / 4 * math.log(math.pi) + sum(math.lgamma(a - j / 2) for j in range(d))


def _numpy_evals() -> dict[str, Any]:
    special = SimpleNamespace(logsumexp=_logsumexp, multigammaln=_multigammaln)
    return gradbench.evals(_NumpyWithAt("numpy"), _NumpyTransforms(), special)


SMALL: list[tuple[str, str, str, Callable[[], dict[str, Any]], list[str]]] = [
    ("lse", "primal", "gradient", lambda: gradbench.lse_input(30), ["x"]),
    ("llsq", "primal", "gradient", lambda: gradbench.llsq_input(8, 5), ["x"]),
    ("ode", "primal", "gradient", lambda: gradbench.ode_input(6, 3), ["x"]),
    ("gmm", "objective", "jacobian", lambda: gradbench.gmm_input(3, 2, 10),
     ["alpha", "l", "mu", "q"]),
    ("lstm", "objective", "jacobian", lambda: gradbench.lstm_input(1, 6),
     ["main_params", "extra_params"]),
]  # fmt: skip


def _last(value: Any) -> float:
    return float(np.ravel(value)[-1])


@pytest.mark.parametrize("case", range(len(SMALL)), ids=lambda c: SMALL[c][0])
def test_derivatives_match_central_differences_of_numpy(case: int) -> None:
    name, primal, derivative, make_input, keys = SMALL[case]
    numpy_eval = _numpy_evals()[name]

    def reference(data: dict[str, Any]) -> Any:
        return numpy_eval[primal](numpy_eval["prepare"](data))

    data = make_input()
    ours = OURS[name][derivative](OURS[name]["prepare"](data))
    scalar = _last if name == "ode" else float  # ode differentiates its last component
    value = OURS[name][primal](OURS[name]["prepare"](data))
    np.testing.assert_allclose(np.asarray(value), np.asarray(reference(data)), rtol=1e-12)
    if isinstance(ours, tuple):  # one gradient per key, in order
        gradients = dict(zip(keys, ours, strict=True))
    else:
        gradients = ours if isinstance(ours, dict) else {keys[0]: ours}
    for key in keys:
        base = np.asarray(data[key], dtype=np.float64)
        numeric = np.zeros_like(base)
        for index in np.ndindex(base.shape):
            up, down = base.copy(), base.copy()
            up[index] += 1e-6
            down[index] -= 1e-6
            numeric[index] = (
                scalar(reference({**data, key: up.tolist()}))
                - scalar(reference({**data, key: down.tolist()}))
            ) / 2e-6
        np.testing.assert_allclose(gradients[key], numeric, rtol=1e-6, atol=1e-6, err_msg=key)


def test_det_by_minor_against_linear_algebra() -> None:
    """det's values and gradient against numpy's LU determinant and the
    cofactor matrix det(A)·inv(A)^T (an oracle independent of the expansion)."""
    det = OURS["det"]
    for ell in (1, 2, 4):
        a = det["prepare"](gradbench.det_input(ell))
        np.testing.assert_allclose(det["primal"](a), np.linalg.det(a), rtol=1e-12)
        cofactors = np.linalg.det(a) * np.linalg.inv(a).T
        np.testing.assert_allclose(det["gradient"](a), cofactors, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize(("name", "variant"), [("particle", "rr"), ("particle", "rf"),
                                               ("saddle", "rr")])  # fmt: skip
def test_nested_optimisations_reach_gradbench_outputs(name: str, variant: str) -> None:
    """particle and saddle differentiate in reverse through while loops that
    run to convergence (JAX refuses particle's "r" variants): GradBench's own
    expected outputs, to its tolerance."""
    data, expected = {
        "particle": (gradbench.PARTICLE_INPUT, gradbench.PARTICLE_OUTPUT),
        "saddle": (gradbench.SADDLE_INPUT, gradbench.SADDLE_OUTPUT),
    }[name]
    output = OURS[name][variant](OURS[name]["prepare"](data))
    np.testing.assert_allclose(output, expected, rtol=1e-10)
