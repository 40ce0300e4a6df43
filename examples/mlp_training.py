"""A few steps of gradient descent on a small MLP, with a jit-compiled gradient."""

import numpy as np

import tidu_mlir as td
import tidu_mlir.numpy as tnp

rng = np.random.default_rng(0)
x = rng.standard_normal((64, 8))
y = np.sin(x.sum(axis=1, keepdims=True))
w1 = rng.standard_normal((8, 16)) * 0.3
w2 = rng.standard_normal((16, 1)) * 0.3


def loss(w1, w2):
    hidden = tnp.tanh(x @ w1)
    return tnp.mean((hidden @ w2 - y) ** 2)


step = td.jit(td.value_and_grad(loss, argnums=(0, 1)))
for i in range(20):
    value, (g1, g2) = step(w1, w2)
    w1, w2 = w1 - 0.1 * g1, w2 - 0.1 * g2
    if i % 5 == 0:
        print(f"step {i:2d}  loss {float(value):.5f}")
