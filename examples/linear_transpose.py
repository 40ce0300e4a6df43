"""td.linear_transpose: the transpose of a linear function, checked by the verifier."""

import numpy as np

import tidu_mlir as td
import tidu_mlir.numpy as tnp

a = np.arange(6.0).reshape(2, 3)
(ct,) = td.linear_transpose(lambda v: a @ v, np.zeros(3))(np.array([1.0, 1.0]))
print("Aᵀ·[1, 1] =", ct)

try:
    td.linear_transpose(lambda v: tnp.sin(v), np.zeros(3))
except Exception as error:  # not linear: the verifier names the op
    print("refused:", error)
