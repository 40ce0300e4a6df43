"""SciPy-named functions (`td.scipy`, as `jax.scipy`): `td.scipy.special` holds
the special functions of `jax.scipy.special` tidu has (`gammaln`, `digamma`,
`logsumexp`, `xlogy`, ...)."""

from __future__ import annotations

from tidu_mlir.scipy import special

__all__ = ["special"]
