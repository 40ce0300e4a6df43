"""An LSTM loss written with `lax.scan` (GradBench's / ADBench's `lstm`), its
gradient against JAX: compile time of the first call and run time, in one run.

    python bench/bench_lstm.py [--layers 2] [--chars 1024] [--repeat 10]

The model (ADBench): `layers` LSTM layers of `B = 14` units with elementwise
gate weights (main params `(2 layers, 4 B)`), extra params `(3, B)` scaling
the input and the output, a state `(2 layers, B)`, a one-hot-like sequence
`(chars, B)`; the loss is minus the mean log-softmax score of each next
character. The time loop is one `lax.scan` (the same code runs on `jax.lax`
with `xp=jnp`), so the IR holds one copy of the step whatever `chars` is.
Columns: first call (trace + AD + compile + run) and best run time of
`grad` w.r.t. the main and extra params, for tidu and `jax.jit(jax.grad)`.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
from bench_api import best_time, jax, jnp

import tidu_mlir as td
import tidu_mlir.numpy as tnp

B = 14


def sigmoid(x: Any, xp: Any) -> Any:
    return 1.0 / (1.0 + xp.exp(-x))


def lstm_cell(weight: Any, bias: Any, hidden: Any, cell: Any, x: Any, xp: Any) -> Any:
    gates = xp.concatenate([x, hidden, x, hidden]) * weight + bias
    forget = sigmoid(gates[0:B], xp)
    ingate = sigmoid(gates[B : 2 * B], xp)
    outgate = sigmoid(gates[2 * B : 3 * B], xp)
    change = xp.tanh(gates[3 * B :])
    cell = cell * forget + ingate * change
    return outgate * xp.tanh(cell), cell


def lstm_loss(
    main: Any, extra: Any, state: Any, sequence: Any, xp: Any = tnp, lax: Any = td.lax
) -> Any:
    layers = main.shape[0] // 2

    def step(carry: Any, pair: Any) -> Any:
        hidden_cells, total = carry
        x, target = pair
        x = x * extra[0]
        new_states = []
        for layer in range(layers):
            hidden, cell = lstm_cell(
                main[2 * layer],
                main[2 * layer + 1],
                hidden_cells[2 * layer],
                hidden_cells[2 * layer + 1],
                x,
                xp,
            )
            new_states += [hidden, cell]
            x = hidden
        prediction = x * extra[1] + extra[2]
        normalized = prediction - xp.log(xp.sum(xp.exp(prediction)) + 2.0)
        return (tuple(new_states), total + xp.sum(target * normalized)), None

    states = tuple(state[i] for i in range(state.shape[0]))
    (_, total), _ = lax.scan(step, (states, 0.0), (sequence[:-1], sequence[1:]))
    return -total / ((sequence.shape[0] - 1) * B)


def inputs(layers: int, chars: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(0)
    main = rng.uniform(-0.5, 0.5, (2 * layers, 4 * B))
    extra = rng.uniform(-0.5, 0.5, (3, B))
    state = rng.uniform(-0.5, 0.5, (2 * layers, B))
    sequence = np.eye(B)[rng.integers(0, B, chars)]
    return main, extra, state, sequence


def first_and_best(
    fn: Any, args: tuple[np.ndarray, ...], repeat: int, block: Any
) -> tuple[float, float]:
    start = time.perf_counter()
    block(fn(*args))
    first = time.perf_counter() - start
    return first, best_time(lambda: block(fn(*args)), repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--chars", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    data = inputs(args.layers, args.chars)
    ours = td.grad(lstm_loss, argnums=(0, 1))
    first, best = first_and_best(ours, data, args.repeat, lambda r: r)
    name = f"lstm l={args.layers} c={args.chars}"
    print(f"{name}: tidu first call {first:.2f} s, run {best * 1e3:.2f} ms")
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
        theirs = jax.jit(jax.grad(lambda *a: lstm_loss(*a, xp=jnp, lax=jax.lax), argnums=(0, 1)))
        j_first, j_best = first_and_best(theirs, data, args.repeat, jax.block_until_ready)
        print(f"{name}: JAX  first call {j_first:.2f} s, run {j_best * 1e3:.2f} ms")
        ours_value = ours(*data)
        theirs_value = theirs(*data)
        error = max(
            float(np.max(np.abs(np.asarray(o) - np.asarray(t))))
            for o, t in zip(ours_value, theirs_value, strict=True)
        )
        ratios = f"first call {first / j_first:.2f}, run {best / j_best:.2f}"
        print(f"ratios tidu/JAX: {ratios}; max |grad difference| {error:.1e}")


if __name__ == "__main__":
    main()
