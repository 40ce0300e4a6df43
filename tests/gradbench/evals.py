"""GradBench's evals written as its JAX tool writes them (`det`, `lstm`, `ba`
and `ht`, which that tool lacks, in the same style) (the same library calls:
`vmap`, `lax.scan`, `.at[].set`, `repeat(total_repeat_length=)`, `jvp` of a
`grad`, `jax.scipy.special`), once, over the names `jnp`, `jax` and `special`.

`evals(jax.numpy, jax, jax.scipy.special)` is the JAX program and
`evals(tidu_mlir.numpy, tidu_mlir, tidu_mlir.scipy.special)` the same text with
only those names bound to tidu: what the tests compare. Each eval maps `prepare` to
the conversion of GradBench's input dictionary (run once, untimed, as
GradBench's `pre`) and each function name to a function of what `prepare`
returns.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

Eval = dict[str, Callable[[Any], Any]]


def evals(jnp: Any, jax: Any, special: Any) -> dict[str, Eval]:
    """Every eval's functions over the given numpy, transforms and special modules."""
    jax.config.update("jax_enable_x64", True)

    # lse: a stable log-sum-exp and its gradient.
    def logsumexp(x: Any) -> Any:
        top = jnp.max(x)
        return jnp.log(jnp.sum(jnp.exp(x - top))) + top

    lse = {
        "prepare": lambda i: np.asarray(i["x"], np.float64),
        "primal": jax.jit(logsumexp),
        "gradient": jax.jit(jax.grad(logsumexp)),
    }

    # llsq: linear least squares of a polynomial fit, per sample point by vmap.
    def llsq_value(x: Any, n: int) -> Any:
        m = x.shape[0]

        def residual(i: Any) -> Any:
            t = -1.0 + (i * 2.0) / (n - 1.0)
            powers = jnp.cumprod(jnp.full(m, t).at[0].set(1))
            return (jnp.sign(t) + jnp.sum(-x * powers)) ** 2

        return jnp.sum(jax.vmap(residual)(jnp.arange(n))) / 2.0

    llsq_primal = partial(jax.jit, static_argnums=[1])(llsq_value)
    llsq_gradient = partial(jax.jit, static_argnums=[1])(
        lambda x, n: jax.grad(llsq_value, argnums=0)(x, n)
    )
    llsq = {
        "prepare": lambda i: (np.asarray(i["x"], np.float64), i["n"]),
        "primal": lambda args: llsq_primal(*args),
        "gradient": lambda args: llsq_gradient(*args),
    }

    # kmeans: the cost and one Newton direction (a jvp of the gradient).
    def kmeans_cost(points: Any, centers: Any) -> Any:
        point_norms = jnp.sum(points**2, 1)[None, :]
        center_norms = jnp.sum(centers**2, 1)[:, None]
        cross = jnp.matmul(points, centers.T).T
        return jnp.min(point_norms + center_norms - 2 * cross, axis=0).sum()

    def kmeans_direction(points: Any, centers: Any) -> Any:
        gradient = jax.grad(lambda c: kmeans_cost(points, c))
        d, curvature = jax.jvp(gradient, [centers], [jnp.ones(shape=centers.shape)])
        return d / curvature

    kmeans_cost_jit, kmeans_direction_jit = jax.jit(kmeans_cost), jax.jit(kmeans_direction)
    kmeans = {
        "prepare": lambda i: (
            np.asarray(i["points"], np.float64),
            np.asarray(i["centroids"], np.float64),
        ),
        "cost": lambda args: kmeans_cost_jit(*args),
        "dir": lambda args: kmeans_direction_jit(*args),
    }

    # ode: fourth-order Runge-Kutta over a scan, the right-hand side by vmap.
    def ode_value(x: Any, s: int) -> Any:
        def rhs(y: Any) -> Any:
            def component(i: Any, xi: Any, previous: Any) -> Any:
                return jnp.where(i == 0, xi, xi * previous)

            return jax.vmap(component)(jnp.arange(x.shape[0]), x, jnp.roll(y, shift=1))

        h = 2.0 / s

        def step(y: Any, _: Any) -> tuple[Any, Any]:
            k1 = rhs(y)
            k2 = rhs(y + h / 2 * k1)
            k3 = rhs(y + h / 2 * k2)
            k4 = rhs(y + h * k3)
            y_next = y + h / 6 * (k1 + (2 * k2 + 2 * k3 + k4))
            return y_next, y_next

        _, trajectory = jax.lax.scan(step, jnp.zeros_like(x), None, length=s)
        return trajectory[-1]

    ode_primal = partial(jax.jit, static_argnums=[1])(ode_value)
    ode_gradient = partial(jax.jit, static_argnums=[1])(
        lambda x, s: jax.grad(lambda v: ode_value(v, s)[-1])(x)
    )
    ode = {
        "prepare": lambda i: (np.asarray(i["x"], np.float64), i["s"]),
        "primal": lambda args: ode_primal(*args),
        "gradient": lambda args: ode_gradient(*args),
    }

    # gmm: the log-likelihood of a Gaussian mixture with a Wishart prior.
    def wishart_prior(*, k: int, p: int, gamma: Any, m: Any, sum_qs: Any, q_diags: Any,
                      l: Any) -> Any:  # noqa: E741 - GradBench's name  # fmt: skip
        dof = p + m + 1
        out = jnp.sum(
            0.5 * gamma * gamma * (jnp.sum(q_diags**2, axis=1) + jnp.sum(l**2, axis=1)) - m * sum_qs
        )
        c = dof * p * jnp.log(gamma / math.sqrt(2))
        return -out + k * (c - special.multigammaln(0.5 * dof, p))

    def gmm_value(*, d: int, k: int, n: Any, x: Any, m: Any, gamma: Any, alpha: Any, mu: Any,
                  q: Any, l: Any) -> Any:  # noqa: E741 - GradBench's name  # fmt: skip
        q_diags = jnp.exp(q)
        sum_qs = jnp.sum(q, axis=1)
        cols = jnp.repeat(
            jnp.arange(d - 1), jnp.arange(d - 1, 0, -1), total_repeat_length=d * (d - 1) // 2
        )
        rows = jnp.concatenate([jnp.arange(c + 1, d) for c in range(d - 1)])
        ls = jnp.zeros((k, d, d), dtype=l.dtype).at[:, rows, cols].set(l)
        centered = x[:, None, :] - mu[None, ...]
        transformed = q_diags * centered + jnp.einsum("ijk,mik->mij", ls, centered)
        inner = alpha + sum_qs - 0.5 * jnp.sum(transformed**2, axis=2)
        constant = -n * d * 0.5 * math.log(2 * math.pi)
        return (
            constant
            + jnp.sum(special.logsumexp(inner, axis=1))
            - n * special.logsumexp(alpha, axis=0)
            + wishart_prior(k=k, p=d, gamma=gamma, m=m, sum_qs=sum_qs, q_diags=q_diags, l=l)
        )

    gmm_objective = partial(jax.jit, static_argnames=["d", "k"])(
        lambda independent, **fixed: gmm_value(**fixed, **independent)
    )
    gmm_jacobian = partial(jax.jit, static_argnames=["d", "k"])(
        lambda independent, **fixed: jax.grad(lambda ind: gmm_value(**fixed, **ind))(independent)
    )

    def gmm_args(i: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        fixed = {"d": i["d"], "k": i["k"], "n": i["n"], "x": np.asarray(i["x"]), "m": i["m"],
                 "gamma": i["gamma"]}  # fmt: skip
        independent = {name: np.asarray(i[name]) for name in ("alpha", "mu", "q", "l")}
        return fixed, independent

    gmm = {
        "prepare": gmm_args,
        "objective": lambda args: gmm_objective(args[1], **args[0]),
        "jacobian": lambda args: gmm_jacobian(args[1], **args[0]),
    }

    # det: the determinant by expansion by minors (every level's minors at
    # once: an index array picks the columns left after each first-row entry).
    def det_by_minor(a: Any) -> Any:
        ell = a.shape[-1]
        if ell == 1:
            return a[..., 0, 0]
        kept = np.array([[c for c in range(ell) if c != j] for j in range(ell)])
        minors = jnp.moveaxis(a[..., 1:, kept], -2, -3)
        signs = np.array([(-1.0) ** j for j in range(ell)])
        return jnp.sum(signs * a[..., 0, :] * det_by_minor(minors), axis=-1)

    def det_matrix(i: dict[str, Any]) -> np.ndarray:
        return np.asarray(i["A"], np.float64).reshape(i["ell"], i["ell"])

    det = {
        "prepare": det_matrix,
        "primal": jax.jit(det_by_minor),
        "gradient": jax.jit(jax.grad(det_by_minor)),
    }

    # lstm: the average log-likelihood of a character sequence under a stacked
    # LSTM, the sequence walked by a scan (ADBench's model, quirks included:
    # gates from [x, h, x, h] times the weights elementwise, log(2 + sum exp)).
    def lstm_cell(weight: Any, bias: Any, hidden: Any, cell: Any, x: Any) -> tuple[Any, Any]:
        gates = jnp.concatenate([x, hidden, x, hidden]) * weight + bias
        h = hidden.shape[0]
        forget = jax.nn.sigmoid(gates[:h])
        ingate = jax.nn.sigmoid(gates[h : 2 * h])
        outgate = jax.nn.sigmoid(gates[2 * h : 3 * h])
        change = jnp.tanh(gates[3 * h :])
        cell = cell * forget + ingate * change
        return outgate * jnp.tanh(cell), cell

    def lstm_predict(main: Any, extra: Any, state: Any, x: Any) -> tuple[Any, Any]:
        x = x * extra[0]
        layers = []
        for i in range(0, state.shape[0], 2):
            hidden, cell = lstm_cell(main[i], main[i + 1], state[i], state[i + 1], x)
            layers += [hidden, cell]
            x = hidden
        return x * extra[1] + extra[2], jnp.stack(layers)

    def lstm_objective(main: Any, extra: Any, state: Any, sequence: Any) -> Any:
        def step(state: Any, pair: tuple[Any, Any]) -> tuple[Any, Any]:
            x, gold = pair
            prediction, state = lstm_predict(main, extra, state, x)
            normalized = prediction - jnp.log(2.0 + jnp.sum(jnp.exp(prediction)))
            return state, jnp.sum(gold * normalized)

        _, totals = jax.lax.scan(step, state, (sequence[:-1], sequence[1:]))
        return -jnp.sum(totals) / ((sequence.shape[0] - 1) * sequence.shape[1])

    lstm_primal = jax.jit(lstm_objective)
    lstm_jacobian = jax.jit(jax.grad(lstm_objective, argnums=(0, 1)))

    def lstm_args(i: dict[str, Any]) -> tuple[np.ndarray, ...]:
        return tuple(np.asarray(i[k]) for k in ("main_params", "extra_params", "state",
                                                 "sequence"))  # fmt: skip

    lstm = {
        "prepare": lstm_args,
        "objective": lambda args: lstm_primal(*args),
        "jacobian": lambda args: lstm_jacobian(*args),
    }
    # particle and saddle: optimisations whose objectives run loops to
    # convergence and differentiate inside them; each gradient taken forward
    # (`jacfwd`, "f") or in reverse (`grad`, "r"), outer then inner. JAX has
    # no reverse mode through `lax.while_loop`: its "r" outer variants raise.
    derivatives = {"f": jax.jacfwd, "r": jax.grad}

    def multivariate_argmin(grad: Callable[..., Any], f: Callable[..., Any], x: Any) -> Any:
        """Gradient descent with a step that doubles after 10 successes and
        halves after a failure, until the gradient or the step is tiny."""
        g = grad(f)

        def step(state: tuple[Any, ...]) -> tuple[Any, ...]:
            x, fx, gx, eta, i, _ = state
            stop = (x, fx, gx, eta, i, jnp.array(False))

            def descend(_: Any) -> tuple[Any, ...]:
                x_new = x - eta * gx

                def compare(_: Any) -> tuple[Any, ...]:
                    fx_new = f(x_new)
                    better = (x_new, fx_new, g(x_new), eta, i + 1, jnp.array(True))
                    worse = (x, fx, gx, eta / 2.0, jnp.zeros_like(i), jnp.array(True))
                    return jax.lax.cond(fx_new < fx, lambda _: better, lambda _: worse, None)

                moved = jnp.sqrt(jnp.sum((x - x_new) ** 2)) > 1e-5
                return jax.lax.cond(moved, compare, lambda _: stop, None)

            widen = (x, fx, gx, 2.0 * eta, jnp.zeros_like(i), jnp.array(True))
            search = lambda _: jax.lax.cond(i == 10, lambda _: widen, descend, None)  # noqa: E731
            small = jnp.sqrt(jnp.sum(gx**2)) <= 1e-5
            return jax.lax.cond(small, lambda _: stop, search, None)

        start = (x, f(x), g(x), jnp.array(1e-5), jnp.array(0), jnp.array(True))
        return jax.lax.while_loop(lambda state: state[5], step, start)[0]

    def naive_euler(grad: Callable[..., Any], w: Any) -> Any:
        """A particle falling through the field of two charges (one moved by
        `w`), by Euler steps until it crosses y = 0; the squared x there."""
        charges = jnp.stack([jnp.array([10.0, 10.0]) - jnp.array([0.0, 1.0]) * w,
                             jnp.array([10.0, 0.0])])  # fmt: skip

        def potential(x: Any) -> Any:
            return jnp.sum(1.0 / jnp.sqrt(jnp.sum((x - charges) ** 2, axis=1)))

        force = grad(potential)

        def step(state: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
            x, xdot, _ = state
            x_new = x + 0.1 * xdot
            moving = (x_new, xdot - 0.1 * force(x), jnp.array(True))
            return jax.lax.cond(
                x_new[1] > 0.0, lambda _: moving, lambda _: (x, xdot, x_new[1] > 0.0), None
            )

        start = (jnp.array([0.0, 8.0]), jnp.array([0.75, 0.0]), jnp.array(True))
        x, xdot, _ = jax.lax.while_loop(lambda state: state[2], step, start)
        x_final = x + (-x[1] / xdot[1]) * xdot
        return x_final[0] ** 2

    def particle_variant(outer: str, inner: str) -> Callable[[Any], Any]:
        def run(w0: Any) -> Any:
            objective = lambda w: naive_euler(derivatives[inner], w[0])  # noqa: E731
            return multivariate_argmin(derivatives[outer], objective, jnp.stack([w0]))[0]

        return jax.jit(run)

    particle: Eval = {"prepare": lambda i: np.float64(i["w"])}
    saddle: Eval = {"prepare": lambda i: np.asarray(i["start"], np.float64)}

    def saddle_variant(outer: str, inner: str) -> Callable[[Any], Any]:
        def run(start: Any) -> Any:
            def r2_cost(p1: Any) -> Callable[[Any], Any]:
                return lambda p: (p1[0] ** 2 + p1[1] ** 2) - (p[0] ** 2 + p[1] ** 2)

            def r1_cost(p1: Any) -> Any:
                best = multivariate_argmin(derivatives[inner], lambda p: -r2_cost(p1)(p), start)
                return r2_cost(p1)(best)

            r1 = multivariate_argmin(derivatives[outer], r1_cost, start)
            r2 = multivariate_argmin(derivatives[outer], lambda p: -r2_cost(r1)(p), start)
            return jnp.concatenate([r1, r2])

        return jax.jit(run)

    for variant in ("rr", "ff", "fr", "rf"):
        particle[variant] = particle_variant(*variant)
        saddle[variant] = saddle_variant(*variant)

    # ba: bundle adjustment (ADBench's). Each observation's camera (Rodrigues
    # rotation, centre, focal length, principal point, radial distortion k1,
    # k2) projects its point; the residuals are the weighted reprojection
    # errors and 1 - w² per weight (whole: GradBench's output keeps the
    # first of them and their count, its observations being all alike). The
    # Jacobian is a dense 2×15 block per observation (`jacrev`, vmapped) and
    # -2w per weight, laid out as GradBench's sparse matrix (rows and
    # columns fixed by `prepare`).
    def rodrigues_rotate(rotation: Any, x: Any) -> Any:
        squared = jnp.sum(rotation**2)
        zero = squared == 0.0
        angle = jnp.sqrt(jnp.where(zero, 1.0, squared))
        axis = rotation / angle
        cos, sin = jnp.cos(angle), jnp.sin(angle)
        rotated = x * cos + jnp.cross(axis, x) * sin + axis * (jnp.dot(axis, x) * (1.0 - cos))
        return jnp.where(zero, x + jnp.cross(rotation, x), rotated)

    def project(camera: Any, x: Any) -> Any:
        local = rodrigues_rotate(camera[0:3], x - camera[3:6])
        projected = local[:2] / local[2]
        squared = jnp.sum(projected**2)
        distorted = projected * (1.0 + camera[9] * squared + camera[10] * squared * squared)
        return distorted * camera[6] + camera[7:9]

    def reprojection_error(camera: Any, x: Any, w: Any, feature: Any) -> Any:
        return w * (project(camera, x) - feature)

    def weight_error(w: Any) -> Any:
        return 1.0 - w**2

    def ba_objective(cams: Any, xs: Any, ws: Any, feats: Any, obs: Any) -> tuple[Any, Any]:
        errors = jax.vmap(reprojection_error)(cams[obs[:, 0]], xs[obs[:, 1]], ws, feats)
        return errors.reshape(-1), jax.vmap(weight_error)(ws)

    def ba_values(cams: Any, xs: Any, ws: Any, feats: Any, obs: Any) -> Any:
        block = jax.jacrev(reprojection_error, argnums=(0, 1, 2))
        d_cam, d_x, d_w = jax.vmap(block)(cams[obs[:, 0]], xs[obs[:, 1]], ws, feats)
        rows = jnp.concatenate([d_cam, d_x, d_w[..., None]], axis=2)
        return jnp.concatenate([rows.reshape(-1), jax.vmap(jax.grad(weight_error))(ws)])

    ba_objective_jit, ba_values_jit = jax.jit(ba_objective), jax.jit(ba_values)
    ba = {
        "prepare": ba_args,
        "objective": lambda args: ba_objective_jit(*args[0]),
        "jacobian": lambda args: {**args[1], "vals": ba_values_jit(*args[0])},
    }

    # ht: hand tracking (ADBench's). The pose (26 angles) rotates each bone
    # of the model's tree (Euler angles), the bones' transforms compose from
    # the root, linear-blend skinning moves the vertices, and a global
    # angle-axis rotation and translation places the hand. The residuals are
    # the points minus their corresponding vertices ("simple") or points of
    # their triangles at barycentric `us` ("complicated"). The Jacobian is
    # `jacfwd` in theta and, for "complicated", in one shift added to every
    # `us` row: each residual reads only its own row, so that gives the
    # diagonal blocks GradBench reports.
    def euler_rotations(xzy: Any) -> Any:
        """Rz @ Ry @ Rx per row of angles (x, z, y); each factor is
        cos·A + sin·B + C for the constant patterns of `HT_EULER`."""
        cos, sin = jnp.cos(xzy)[:, :, None, None], jnp.sin(xzy)[:, :, None, None]
        factors = cos * HT_EULER[0] + sin * HT_EULER[1] + HT_EULER[2]
        return factors[:, 1] @ factors[:, 2] @ factors[:, 0]

    def angle_axis_rotation(angle_axis: Any) -> Any:
        norm = jnp.sqrt(jnp.sum(angle_axis**2))
        small = norm < 1e-4
        angle = jnp.where(small, 1.0, norm)
        axis = angle_axis / angle
        cross = jnp.cross(jnp.eye(3), axis)  # row i: e_i × axis, so cross @ v = axis × v
        cos = jnp.cos(angle)
        rotation = cos * jnp.eye(3) + (1.0 - cos) * jnp.outer(axis, axis) + jnp.sin(angle) * cross
        return jnp.where(small, jnp.eye(3), rotation)

    def pose_params(theta: Any, bones: int) -> Any:
        """(bones + 3, 3): global rotation, scale (ones), translation, then
        each bone's Euler angles, placed from theta by `HT_POSE_LAYOUT`."""
        rows, cols = HT_POSE_LAYOUT
        return jnp.zeros((bones + 3, 3)).at[1].set(1.0).at[rows, cols].set(theta)

    def relatives_to_absolutes(relatives: Any, parents: Any) -> Any:
        """Each bone's transform composed from the root's, bone by bone
        (parents precede their children; the root's parent is -1)."""

        def compose(bone: Any, absolutes: Any) -> Any:
            parent = parents[bone]
            above = absolutes[parent] @ relatives[bone]
            return absolutes.at[bone].set(jnp.where(parent < 0, relatives[bone], above))

        return jax.lax.fori_loop(0, parents.shape[0], compose, relatives)

    def skinned_vertices(theta: Any, model: dict[str, Any]) -> Any:
        pose = pose_params(theta, model["parents"].shape[0])
        rotations = euler_rotations(pose[3:])
        base = model["base_relatives"]  # posed: base @ [[rotation, 0], [0, 1]]
        relatives = jnp.concatenate([jnp.matmul(base[:, :, :3], rotations), base[:, :, 3:]], axis=2)
        absolutes = relatives_to_absolutes(relatives, model["parents"])
        transforms = jnp.matmul(absolutes, model["inverse_base_absolutes"])
        blended = jnp.einsum("vb,bij->vij", model["weights"], transforms[:, :3, :])
        skinned = jnp.einsum("vij,vj->vi", blended, model["base_positions"]) * model["mirror"]
        scaled = angle_axis_rotation(pose[0]) * pose[1][None, :]
        return jnp.matmul(skinned, scaled.T) + pose[2]

    def ht_residual(theta: Any, us: Any, model: dict[str, Any]) -> Any:
        vertices = skinned_vertices(theta, model)
        if us.shape[0] == 0:
            return (model["points"] - vertices[model["correspondences"]]).reshape(-1)
        corners = vertices[model["triangles"][model["correspondences"]]]
        weights = jnp.stack([us[:, 0], us[:, 1], 1.0 - us[:, 0] - us[:, 1]], axis=1)
        return (model["points"] - jnp.sum(weights[:, :, None] * corners, axis=1)).reshape(-1)

    def ht_jacobian(theta: Any, us: Any, model: dict[str, Any]) -> Any:
        if us.shape[0] == 0:
            return jax.jacfwd(ht_residual)(theta, us, model)
        shifted = lambda shift, t: ht_residual(t, us + shift, model)  # noqa: E731
        d_us, d_theta = jax.jacfwd(shifted, argnums=(0, 1))(jnp.zeros(2), theta)
        return jnp.concatenate([d_us, d_theta], axis=1)

    ht_objective_jit, ht_jacobian_jit = jax.jit(ht_residual), jax.jit(ht_jacobian)
    ht = {
        "prepare": ht_args,
        "objective": lambda args: ht_objective_jit(*args),
        "jacobian": lambda args: ht_jacobian_jit(*args),
    }
    return {"lse": lse, "llsq": llsq, "kmeans": kmeans, "ode": ode, "gmm": gmm, "det": det,
            "lstm": lstm, "particle": particle, "saddle": saddle, "ba": ba, "ht": ht}  # fmt: skip


# --------------------------------------------------------------------------
# ba's and ht's `prepare`: GradBench's input dictionaries as arrays (numpy)
# --------------------------------------------------------------------------

BA_CAMERA = 11
"""Camera parameters: rotation (3), centre (3), focal length, principal point (2), k1, k2."""


def ba_args(i: dict[str, Any]) -> tuple[tuple[np.ndarray, ...], dict[str, np.ndarray]]:
    """(cameras, points, weights, features, observations) and the Jacobian's
    sparse layout. GradBench gives one camera, point, weight and feature that
    all repeat (broadcast here; per-item arrays pass as they are) and
    observation i sees camera i mod n and point i mod m."""
    n, m, p = i["n"], i["m"], i["p"]
    fields = [("cam", (n, BA_CAMERA)), ("x", (m, 3)), ("w", (p,)), ("feat", (p, 2))]
    arrays = [np.broadcast_to(np.asarray(i[k], np.float64), shape).copy() for k, shape in fields]
    obs = np.stack([np.arange(p) % n, np.arange(p) % m], axis=1)
    return (*arrays, obs), ba_layout(n, m, obs)


def ba_layout(n: int, m: int, obs: np.ndarray) -> dict[str, np.ndarray]:
    """GradBench's compressed-row layout: per observation two rows of 15
    entries (its camera's, its point's, its weight's columns), then one row
    per weight error."""
    p = len(obs)
    weight_cols = BA_CAMERA * n + 3 * m + np.arange(p)
    block = np.concatenate([BA_CAMERA * obs[:, :1] + np.arange(BA_CAMERA),
                            BA_CAMERA * n + 3 * obs[:, 1:] + np.arange(3),
                            weight_cols[:, None]], axis=1)  # fmt: skip
    rows = np.concatenate([15 * np.arange(2 * p + 1), 30 * p + np.arange(1, p + 1)])
    return {
        "rows": rows,
        "cols": np.concatenate([np.repeat(block, 2, axis=0).ravel(), weight_cols]),
    }


def _pose_layout() -> tuple[np.ndarray, np.ndarray]:
    """Where each of theta's 26 entries goes among the pose parameters (row,
    column): the global rotation (row 0) and translation (row 2), then per
    finger two angles of its first bone and one of the next two; the root,
    the wrist and the finger tips do not move."""
    entries = [(0, 0), (0, 1), (0, 2), (2, 0), (2, 1), (2, 2)]
    for finger in range(5):
        row = 5 + 4 * finger
        entries += [(row, 0), (row, 1), (row + 1, 0), (row + 2, 0)]
    rows, cols = np.array(entries).T
    return rows, cols


HT_POSE_LAYOUT = _pose_layout()


def _euler_patterns() -> np.ndarray:
    """The elementary rotations about x, z and y (theta's order) as cos·A +
    sin·B + C: A, B, C for each (ADBench's Rx = [[1, 0, 0], [0, c, -s], [0,
    s, c]], Rz = [[c, -s, 0], [s, c, 0], [0, 0, 1]], Ry = [[c, 0, -s], [0, 1,
    0], [s, 0, c]])."""
    patterns = np.zeros((3, 3, 3, 3))
    for axis, (i, j) in enumerate([(1, 2), (0, 1), (0, 2)]):
        patterns[0, axis, [i, j], [i, j]] = 1.0
        patterns[1, axis, [i, j], [j, i]] = [-1.0, 1.0]
        patterns[2, axis, 3 - i - j, 3 - i - j] = 1.0
    return patterns


HT_EULER = _euler_patterns()


def ht_args(i: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """(theta, us (empty for "simple"), the model's and data's arrays). A
    mirrored model negates x before the global transform."""
    model, data = i["data"]["model"], i["data"]
    floats = {k: np.asarray(model[k], np.float64) for k in ("base_relatives",
              "inverse_base_absolutes", "base_positions", "weights")}  # fmt: skip
    ints = {"parents": np.asarray(model["parents"], np.int64),
            "correspondences": np.asarray(data["correspondences"], np.int64),
            "triangles": np.asarray(model["triangles"], np.int64).reshape(-1, 3)}  # fmt: skip
    arrays = {**floats, **ints, "points": np.asarray(data["points"], np.float64),
              "mirror": np.array([-1.0 if model["is_mirrored"] else 1.0, 1.0, 1.0])}  # fmt: skip
    us = np.asarray(i["us"], np.float64).reshape(-1, 2)
    return np.asarray(i["theta"], np.float64), us, arrays


# --------------------------------------------------------------------------
# Inputs, drawn as GradBench's eval scripts draw them (seed 31337)
# --------------------------------------------------------------------------


PARTICLE_INPUT = {"w": 0.0}
"""GradBench's particle input; its expected output is `PARTICLE_OUTPUT`."""
PARTICLE_OUTPUT = 0.2071918746486116
SADDLE_INPUT = {"start": [1.0, 1.0]}
"""GradBench's saddle input; its expected output is `SADDLE_OUTPUT` (r1, then r2)."""
SADDLE_OUTPUT = [8.246324826140356e-06] * 4


def det_input(ell: int) -> dict[str, Any]:
    np.random.seed(31337)
    return {"A": np.random.rand(ell * ell).tolist(), "ell": ell}


def lstm_input(layers: int, chars: int) -> dict[str, Any]:
    """GradBench's lstm input drawn from a fixed text (GradBench reads a text
    file; any text gives the same computation): each character's code point
    as bits, a random state and parameters."""
    np.random.seed(31337)
    words = ["the", "gradient", "of", "a", "loop", "is", "a", "loop", "in", "reverse,"]
    text = " ".join(words[i % len(words)] for i in range(chars))[:chars]
    bits = math.ceil(math.log2(max(ord(c) for c in text)))
    sequence = [[float(b) for b in bin(ord(c))[2:].zfill(bits)] for c in text]
    return {
        "state": np.random.random((2 * layers, bits)).tolist(),
        "main_params": np.random.random((2 * layers, bits * 4)).tolist(),
        "extra_params": np.random.random((3, bits)).tolist(),
        "sequence": sequence,
    }


def lse_input(n: int) -> dict[str, Any]:
    np.random.seed(31337)
    return {"x": np.random.rand(n).tolist()}


def llsq_input(n: int, m: int) -> dict[str, Any]:
    np.random.seed(31337)
    return {"x": np.random.rand(m).tolist(), "n": n}


def kmeans_input(k: int, n: int, d: int) -> dict[str, Any]:
    np.random.seed(31337)
    points = np.random.rand(n, d).tolist()
    return {"points": points, "centroids": points[-k:]}


def ode_input(n: int, s: int) -> dict[str, Any]:
    np.random.seed(31337)
    return {"x": np.random.rand(n).tolist(), "s": s}


def gmm_input(d: int, k: int, n: int, m: int = 0, gamma: float = 1.0) -> dict[str, Any]:
    rng = np.random.default_rng(seed=31337)
    return {
        "d": d,
        "k": k,
        "n": n,
        "x": [list(rng.normal(size=d)) for _ in range(n)],
        "m": m,
        "gamma": gamma,
        "alpha": list(rng.normal(size=k)),
        "mu": [list(rng.uniform(size=d)) for _ in range(k)],
        "q": [list(rng.normal(size=d)) for _ in range(k)],
        "l": [list(rng.normal(size=d * (d - 1) // 2)) for _ in range(k)],
    }


def ba_input(n: int, m: int, p: int, varied: bool = False) -> dict[str, Any]:
    """GradBench's ba input: one camera, point, weight and feature (as in
    ADBench's files, every camera, point and observation repeats them), or with
    `varied` one per camera, point and observation (leading axes n, m, p), so
    that a misplaced index shows. Points lie in front of the cameras."""
    rng = np.random.default_rng(seed=31337)

    def draw(count: int, low: list[float], high: list[float]) -> Any:
        return rng.uniform(low, high, size=(count, len(low)) if varied else len(low)).tolist()

    camera_low = [-0.1] * 6 + [300.0, -10.0, -10.0, -0.1, -0.01]
    camera_high = [0.1] * 6 + [500.0, 10.0, 10.0, 0.1, 0.01]
    w = rng.uniform(0.5, 1.5, size=p if varied else None)
    return {"n": n, "m": m, "p": p, "cam": draw(n, camera_low, camera_high),
            "x": draw(m, [-1.0, -1.0, -3.0], [1.0, 1.0, -1.0]),
            "w": w.tolist() if varied else float(w),
            "feat": draw(p, [-300.0, -300.0], [300.0, 300.0])}  # fmt: skip


HT_PARENTS = [-1, 0, *(parent for b in range(2, 22, 4) for parent in (1, b, b + 1, b + 2))]
"""ADBench's hand skeleton: root, wrist, then five fingers of four bones each."""


def _rotation(angles: np.ndarray) -> np.ndarray:
    """A rotation matrix from three angles (about z, y, x)."""
    c, s = np.cos(angles), np.sin(angles)
    rz = np.array([[c[0], -s[0], 0.0], [s[0], c[0], 0.0], [0.0, 0.0, 1.0]])
    ry = np.array([[c[1], 0.0, s[1]], [0.0, 1.0, 0.0], [-s[1], 0.0, c[1]]])
    rx = np.array([[1.0, 0.0, 0.0], [0.0, c[2], -s[2]], [0.0, s[2], c[2]]])
    return rz @ ry @ rx


def ht_model(vertices: int, rng: np.random.Generator) -> dict[str, Any]:
    """A synthetic hand model with GradBench's fields: each bone a rigid
    transform from its parent (a small rotation, a step along y), the
    inverse absolutes of that rest pose, vertices around the bones skinned
    to a bone and its parent (weights summing to 1), random triangles."""
    bones = len(HT_PARENTS)
    relatives = np.tile(np.eye(4), (bones, 1, 1))
    absolutes = np.empty_like(relatives)
    for bone, parent in enumerate(HT_PARENTS):
        relatives[bone, :3, :3] = _rotation(rng.uniform(-0.3, 0.3, size=3))
        relatives[bone, :3, 3] = [0.0, rng.uniform(0.5, 1.5), 0.0] if parent >= 0 else 0.0
        absolutes[bone] = relatives[bone] if parent < 0 else absolutes[parent] @ relatives[bone]
    owner = rng.integers(bones, size=vertices)
    positions = absolutes[owner, :3, 3] + rng.normal(scale=0.2, size=(vertices, 3))
    share = rng.uniform(0.5, 1.0, size=vertices)
    weights = np.zeros((vertices, bones))
    weights[np.arange(vertices), owner] = share
    parents = np.array(HT_PARENTS)[owner]
    weights[np.arange(vertices), np.where(parents < 0, owner, parents)] += 1.0 - share
    return {"bone_count": bones, "bone_names": [f"bone{b}" for b in range(bones)],
            "parents": HT_PARENTS, "base_relatives": relatives.tolist(),
            "inverse_base_absolutes": np.linalg.inv(absolutes).tolist(),
            "base_positions": np.hstack([positions, np.ones((vertices, 1))]).tolist(),
            "weights": weights.tolist(),
            "triangles": rng.integers(vertices, size=(2 * vertices, 3)).tolist(),
            "is_mirrored": False}  # fmt: skip


def ht_input(vertices: int, points: int, complicated: bool) -> dict[str, Any]:
    """GradBench's ht input (ADBench's `HandInput` as a dictionary) on a
    synthetic model: theta, the model, correspondences (vertices, or for
    "complicated" triangles with barycentric `us`) and points near the hand."""
    rng = np.random.default_rng(seed=31337)
    model = ht_model(vertices, rng)
    targets = len(model["triangles"]) if complicated else vertices
    near = np.asarray(model["base_positions"])[rng.integers(vertices, size=points), :3]
    data = {"model": model, "correspondences": rng.integers(targets, size=points).tolist(),
            "points": (near + rng.normal(scale=0.1, size=(points, 3))).tolist()}  # fmt: skip
    us = rng.uniform(0.0, 0.5, size=(points, 2)).tolist() if complicated else []
    return {"theta": rng.normal(scale=0.3, size=26).tolist(), "data": data, "us": us}
