"""Forward and reverse mode: td.jvp, td.vjp, td.linearize (one linearization, many tangents)."""

import numpy as np

import tidu_mlir as td
import tidu_mlir.numpy as tnp


def f(x):
    return tnp.sin(x) * tnp.exp(-x)


x = np.linspace(0.0, 2.0, 5)
y, dy = td.jvp(f, (x,), (np.ones_like(x),))
print("f(x) =", y)
print("J·1  =", dy)

y, vjp_fn = td.vjp(f, x)
(ct_x,) = vjp_fn(np.ones_like(y))
print("1ᵀ·J =", ct_x)

_, f_jvp = td.linearize(f, x)
for k in range(3):
    e = np.eye(5)[k]
    print(f"column {k} of J:", f_jvp(e))
