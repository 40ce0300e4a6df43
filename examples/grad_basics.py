"""Gradients of a scalar function: td.grad, td.value_and_grad, argnums."""

import numpy as np

import tidu_mlir as td
import tidu_mlir.numpy as tnp


def loss(w, x):
    return tnp.sum(tnp.tanh(x @ w) ** 2)


w = np.linspace(-1.0, 1.0, 6).reshape(3, 2)
x = np.linspace(0.0, 1.0, 12).reshape(4, 3)

value, dw = td.value_and_grad(loss)(w, x)
dw2, dx = td.grad(loss, argnums=(0, 1))(w, x)
print("loss:", value)
print("d loss / d w:\n", dw)
print("d loss / d x has shape", dx.shape)
assert np.allclose(dw, dw2)
