"""SciPy-named functions (`td.scipy`, as `jax.scipy`): `td.scipy.special` holds
the special functions of `jax.scipy.special` tidu has (`gammaln`, `digamma`,
`logsumexp`, `xlogy`, ...); `td.scipy.linalg` the linear algebra of
`jax.scipy.linalg` tidu has (`solve_triangular`, `cho_factor`/`cho_solve`,
`lu_factor`/`lu_solve`)."""

from __future__ import annotations

from tidu_mlir.scipy import linalg, special

__all__ = ["linalg", "special"]
