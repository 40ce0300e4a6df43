"""Complex inputs: the JVP is the R-linear derivative; the gradient is the adjoint
for the real inner product Re(conj(a)·b) (docs/complex.md), so grad |z|² = 2z."""

import numpy as np

import tidu_mlir as td
import tidu_mlir.numpy as tnp

z = np.array([1 + 2j, 0.5 - 1j])
grad = td.grad(lambda z: tnp.sum(tnp.real(z * tnp.conj(z))))(z)
print("grad sum |z|^2 at", z, "=", grad)
assert np.allclose(grad, 2 * z)
