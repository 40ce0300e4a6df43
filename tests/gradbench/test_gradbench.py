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

# (eval, function, input): GradBench's smallest sizes for each eval; ba's
# repeats one observation, so a small input with distinct ones instead; ht a
# synthetic model of 300 vertices with GradBench's 100 correspondences.
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
    ("ba", "objective", lambda: gradbench.ba_input(3, 5, 8, varied=True)),
    ("ba", "jacobian", lambda: gradbench.ba_input(3, 5, 8, varied=True)),
    ("ht", "objective", lambda: gradbench.ht_input(300, 100, complicated=False)),
    ("ht", "jacobian", lambda: gradbench.ht_input(300, 100, complicated=False)),
    ("ht", "objective", lambda: gradbench.ht_input(300, 100, complicated=True)),
    ("ht", "jacobian", lambda: gradbench.ht_input(300, 100, complicated=True)),
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


def _same_worker(name: str) -> list[pytest.MarkDecorator]:
    """ba's and ht's tests share compiled functions (seconds each): one
    worker runs all of an eval's (`--dist loadgroup`), so each compiles once."""
    return [pytest.mark.xdist_group(f"gradbench-{name}")] if name in ("ba", "ht") else []


@pytest.mark.parametrize(
    "case",
    [pytest.param(i, id=f"{name}-{function}", marks=_same_worker(name))
     for i, (name, function, _) in enumerate(CASES)],
)  # fmt: skip
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

    jacfwd = jacrev = grad

    @staticmethod
    def vmap(fn: Callable[..., Any]) -> Callable[..., Any]:
        return lambda *args: np.stack([fn(*row) for row in zip(*args, strict=True)])

    lax = SimpleNamespace(
        scan=lambda step, carry, xs, length=None: _scan(step, carry, xs, length),
        fori_loop=lambda lower, upper, body, init: _fori_loop(lower, upper, body, init),
    )
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


def _fori_loop(lower: int, upper: int, body: Callable[[int, Any], Any], init: Any) -> Any:
    """`lax.fori_loop` by a Python loop, the carry an array with `.at`."""
    value = tnp.asarray(init)
    for i in range(lower, upper):
        value = body(i, value)
    return value


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


# --------------------------------------------------------------------------
# ba and ht: whole Jacobians against central differences of numpy, and
# values against closed forms
# --------------------------------------------------------------------------


Problem = tuple[np.ndarray, Callable[[np.ndarray], np.ndarray], Callable[[Any], np.ndarray]]
"""A point, the residuals (numpy) as a function of a flat vector, and the
conversion of the eval's Jacobian output to a dense matrix."""


def _ba_problem(data: dict[str, Any]) -> Problem:
    """ba's residuals as a function of every camera, point and weight."""
    numpy_ba = _numpy_evals()["ba"]
    (cams, xs, ws, feats, obs), layout = numpy_ba["prepare"](data)
    splits = [cams.size, cams.size + xs.size]

    def residuals(v: np.ndarray) -> np.ndarray:
        c, x, w = np.split(v, splits)
        args = (c.reshape(cams.shape), x.reshape(xs.shape), w, feats, obs)
        return np.concatenate(numpy_ba["objective"]((args, layout)))

    def dense(sparse: dict[str, np.ndarray]) -> np.ndarray:
        rows = np.repeat(np.arange(len(sparse["rows"]) - 1), np.diff(sparse["rows"]))
        out = np.zeros((len(sparse["rows"]) - 1, splits[1] + ws.size))
        out[rows, sparse["cols"]] = sparse["vals"]
        return out

    return np.concatenate([cams.ravel(), xs.ravel(), ws]), residuals, dense


def _ht_problem(data: dict[str, Any]) -> Problem:
    """ht's residuals as a function of theta, after (for "complicated") a
    shift added to every `us` row, as the eval's Jacobian is laid out."""
    numpy_ht = _numpy_evals()["ht"]
    theta, us, model = numpy_ht["prepare"](data)
    if us.size == 0:
        return theta, lambda v: numpy_ht["objective"]((v, us, model)), np.asarray
    start = np.concatenate([np.zeros(2), theta])
    return start, lambda v: numpy_ht["objective"]((v[2:], us + v[:2], model)), np.asarray


JACOBIANS: list[tuple[str, Callable[[], dict[str, Any]], Callable[[dict[str, Any]], Problem]]] = [
    ("ba", lambda: gradbench.ba_input(3, 5, 8, varied=True), _ba_problem),
    ("ht", lambda: gradbench.ht_input(300, 100, complicated=False), _ht_problem),
    ("ht", lambda: gradbench.ht_input(300, 100, complicated=True), _ht_problem),
]


@pytest.mark.parametrize(
    "case",
    [pytest.param(i, id=label, marks=_same_worker(JACOBIANS[i][0]))
     for i, label in enumerate(["ba", "ht-simple", "ht-complicated"])],
)  # fmt: skip
def test_jacobians_match_central_differences_of_numpy(case: int) -> None:
    """The whole Jacobian (ba's sparse one made dense), every entry, against
    central differences of the numpy evaluation; the values against it too."""
    name, make_input, problem = JACOBIANS[case]
    data = make_input()
    start, residuals, dense = problem(data)
    args = OURS[name]["prepare"](data)
    value = np.concatenate([np.ravel(v) for v in _leaves(OURS[name]["objective"](args))])
    np.testing.assert_allclose(value, residuals(start), rtol=1e-12, atol=1e-12)
    steps = 1e-6 * np.maximum(1.0, np.abs(start))
    numeric = np.stack([(residuals(start + h * e) - residuals(start - h * e)) / (2 * h)
                        for h, e in zip(steps, np.eye(start.size), strict=True)], axis=1)  # fmt: skip
    jacobian = dense(OURS[name]["jacobian"](args))
    scale = np.max(np.abs(numeric))
    np.testing.assert_allclose(jacobian, numeric, rtol=1e-6, atol=1e-7 * scale)


@pytest.mark.xdist_group("gradbench-ba")
def test_ba_reprojection_about_the_optical_axis() -> None:
    """Cameras rotated by an angle a about z: each residual is w (f p (1 +
    k1 r² + k2 r⁴) + principal point - feature), p the point moved by -centre,
    turned by a about z, divided by its z (an oracle written without Rodrigues)."""
    data = gradbench.ba_input(3, 5, 8, varied=True)
    cams = np.asarray(data["cam"])
    cams[:, :3] = [0.0, 0.0, 0.7]
    (_, xs, ws, feats, obs), _ = gradbench.ba_args(data)
    reprojection, weights = OURS["ba"]["objective"](OURS["ba"]["prepare"]({**data, "cam": cams}))
    camera, local = cams[obs[:, 0]], xs[obs[:, 1]] - cams[obs[:, 0], 3:6]
    c, s = math.cos(0.7), math.sin(0.7)
    turned = np.stack([c * local[:, 0] - s * local[:, 1], s * local[:, 0] + c * local[:, 1]], 1)
    p = turned / local[:, 2:]
    r2 = np.sum(p**2, axis=1, keepdims=True)
    projected = camera[:, 6:7] * p * (1 + camera[:, 9:10] * r2 + camera[:, 10:11] * r2**2)
    expected = ws[:, None] * (projected + camera[:, 7:9] - feats)
    np.testing.assert_allclose(reprojection, expected.ravel(), rtol=1e-12)
    np.testing.assert_allclose(weights, 1 - ws**2, rtol=1e-12)


@pytest.mark.xdist_group("gradbench-ht")
@pytest.mark.parametrize(("complicated", "mirrored"), [(False, False), (True, False), (False, True)],
                         ids=["simple", "complicated", "mirrored"])  # fmt: skip
def test_ht_rest_pose_gives_the_base_positions(complicated: bool, mirrored: bool) -> None:
    """With every angle zero (the global rotation below the angle-axis
    threshold) each bone's transform is the identity, so the skinned
    vertices are the model's base positions (x negated for a mirrored
    model), moved by theta's translation."""
    data = gradbench.ht_input(300, 100, complicated=complicated)
    data["data"]["model"]["is_mirrored"] = mirrored
    translation = [0.5, -1.0, 2.0]
    theta, us, arrays = gradbench.ht_args(data)
    mirror = [-1.0 if mirrored else 1.0, 1.0, 1.0]
    vertices = arrays["base_positions"][:, :3] * mirror + translation
    if complicated:
        corners = vertices[arrays["triangles"][arrays["correspondences"]]]
        weights = np.concatenate([us, 1.0 - us.sum(axis=1, keepdims=True)], axis=1)
        expected = arrays["points"] - np.einsum("pc,pcx->px", weights, corners)
    else:
        expected = arrays["points"] - vertices[arrays["correspondences"]]
    rest = {**data, "theta": [0.0] * 3 + translation + [0.0] * (theta.size - 6)}
    residuals = OURS["ht"]["objective"](OURS["ht"]["prepare"](rest))
    np.testing.assert_allclose(residuals, expected.ravel(), rtol=1e-12, atol=1e-12)
