"""Higher-order derivatives by composing transforms: grad of grad, hessian, hvp."""

import numpy as np

import tidu_mlir as td
import tidu_mlir.numpy as tnp


def f(x):
    return tnp.sum(x**4) + tnp.sum(tnp.sin(x)) * x[0]


x = np.array([0.5, -1.0, 2.0])
print("hessian:\n", td.hessian(f)(x))
print("hvp with e0:", td.hvp(f, (x,), (np.array([1.0, 0.0, 0.0]),)))

g = lambda t: t**3 * tnp.cos(t)  # noqa: E731
third = td.grad(td.grad(td.grad(g)))
print("d³/dt³ (t³ cos t) at t=1:", third(np.array(1.0)))
