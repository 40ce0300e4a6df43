"""GradBench's evals written as its JAX tool writes them (`det` and `lstm`,
which that tool lacks, in the same style) (the same library calls:
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
    return {"lse": lse, "llsq": llsq, "kmeans": kmeans, "ode": ode, "gmm": gmm, "det": det,
            "lstm": lstm, "particle": particle, "saddle": saddle}  # fmt: skip


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
