"""Linear algebra (`td.scipy.linalg`, as `jax.scipy.linalg`): triangular solves,
Cholesky and LU factorizations and the solves that reuse them, the matrix
exponential.

Each is written on `tnp`'s linear-algebra primitives (`prim.triangular_solve`,
`prim.cholesky`, `prim.lu`, lowered to LAPACK), so it traces, differentiates
and batches like any tnp code, and on concrete arrays computes with numpy the
same way. Matrices may carry leading batch axes; a right-hand side is `(n,)`
or `(..., n, k)`. As in JAX, the factors are returned with zeros in the
triangle SciPy leaves unspecified, and there is no `overwrite_*` or
`check_finite` work to skip (the arguments are accepted and ignored).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tidu_mlir.numpy as tnp
from tidu_mlir.control_flow import fori_loop
from tidu_mlir.numpy import (
    _checked,
    _lu,
    _lu_solve,
    _matrix_rhs,
    _nonsingular,
    _square,
    _triangular_solve,
)

__all__ = ["cho_factor", "cho_solve", "expm", "lu_factor", "lu_solve", "solve_triangular"]

_TRANS = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False),
          2: (True, True), "C": (True, True)}  # fmt: skip
"""SciPy's `trans` -> (transpose_a, conjugate_a)."""


def _transpose_flags(trans: Any) -> tuple[bool, bool]:
    """(transpose_a, conjugate_a) for SciPy's `trans` (0/'N', 1/'T', 2/'C')."""
    if trans not in _TRANS:
        raise ValueError(f"trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    return _TRANS[trans]


def _solved(name: str, a: Any, b: Any, solve: Any) -> Any:
    """`solve(a, b2)` on `b` as a matrix `(..., n, k)`, squeezed back for a vector `b`."""
    matrices, rhs, vector = _matrix_rhs(name, _square(name, a), b)
    x = solve(matrices, rhs)
    return x[..., 0] if vector else x


def solve_triangular(a: Any, b: Any, trans: Any = 0, lower: bool = False,
                     unit_diagonal: bool = False, overwrite_b: bool = False,
                     check_finite: bool = True) -> Any:  # fmt: skip
    """`x` with `op(a) x = b`, `a` triangular (its `lower` or upper triangle is
    read; with `unit_diagonal` its diagonal is taken as ones), `op` chosen by
    `trans`: 0/'N' `a`, 1/'T' `aᵀ`, 2/'C' `aᴴ`. Linear in `b`."""
    transpose_a, conjugate_a = _transpose_flags(trans)
    flags = {"lower": lower, "transpose_a": transpose_a, "conjugate_a": conjugate_a,
             "unit_diagonal": unit_diagonal}  # fmt: skip
    return _solved("solve_triangular", a, b, lambda m, r: _triangular_solve(m, r, **flags))


def _factor(a: Any, lower: bool) -> Any:
    """The Cholesky factor of `a`: `L` (`lower`) or `U = Lᴴ`."""
    factor = tnp.linalg.cholesky(a)
    return factor if lower else tnp.conj(tnp.swapaxes(factor, -1, -2))


def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> tuple[Any, bool]:  # fmt: skip
    """`(c, lower)`: the Cholesky factor of the Hermitian positive-definite `a`
    (`c` upper, `a = cᴴ c`, unless `lower`: `a = c cᴴ`), for `cho_solve`.
    LinAlgError when `a` is not positive definite."""
    return _factor(a, lower), lower


def cho_solve(c_and_lower: tuple[Any, bool], b: Any, overwrite_b: bool = False,
              check_finite: bool = True) -> Any:  # fmt: skip
    """`x` with `a x = b` from `cho_factor(a)`: two triangular solves."""
    c, lower = c_and_lower

    def solve(factor: Any, rhs: Any) -> Any:
        first = _triangular_solve(factor, rhs, lower=lower, transpose_a=not lower,
                                  conjugate_a=not lower)  # fmt: skip
        return _triangular_solve(factor, first, lower=lower, transpose_a=lower,
                                 conjugate_a=lower)  # fmt: skip

    return _solved("cho_solve", c, b, solve)


def lu_factor(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> tuple[Any, Any]:
    """`(lu, piv)`: the LU factorization with partial pivoting (LAPACK's getrf):
    `lu` holds the unit-diagonal `L` below the diagonal and `U` on and above it,
    `piv[i]` (int32) the row that row `i` was swapped with. A singular `a`
    factors too (a zero on `U`'s diagonal)."""
    lu, pivots, _ = _lu(_square("lu_factor", a))
    return lu, pivots


def _permutation(pivots: Any) -> Any:
    """The row permutation the interchanges `pivots` (`[..., n]`) make, replayed
    on the identity: step `i` swaps entries `i` and `pivots[i]`."""
    n = pivots.shape[-1]
    positions = np.arange(n, dtype=np.int32)
    start = tnp.broadcast_to(positions, pivots.shape)

    def swap(i: Any, permutation: Any) -> Any:
        target = tnp.take_along_axis(pivots, tnp.broadcast_to(i, (*pivots.shape[:-1], 1)), -1)
        at_i = tnp.take_along_axis(permutation, tnp.broadcast_to(i, (*pivots.shape[:-1], 1)), -1)
        at_target = tnp.take_along_axis(permutation, target, -1)
        moved = tnp.where(positions == target, at_i, permutation)
        return tnp.where(positions == i, at_target, moved)

    return fori_loop(0, n, swap, start)


def lu_solve(lu_and_piv: tuple[Any, Any], b: Any, trans: Any = 0, overwrite_b: bool = False,
             check_finite: bool = True) -> Any:  # fmt: skip
    """`x` with `op(a) x = b` from `lu_factor(a)`, `op` by `trans` (0/'N' `a`,
    1/'T' `aᵀ`, 2/'C' `aᴴ`). LinAlgError for a singular `a` (a zero pivot)."""
    lu, pivots = lu_and_piv
    transpose_a, conjugate_a = _transpose_flags(trans)
    permutation = _permutation(tnp.asarray(pivots))

    def solve(factors: Any, rhs: Any) -> Any:
        if not transpose_a:
            return _lu_solve(factors, permutation, rhs)
        flags = {"transpose_a": True, "conjugate_a": conjugate_a}
        upper = _triangular_solve(factors, rhs, **flags)
        lower = _triangular_solve(factors, upper, lower=True, unit_diagonal=True, **flags)
        inverse = tnp.argsort(permutation, axis=-1)
        rows = tnp.broadcast_to(tnp.expand_dims(inverse, -1), lower.shape)
        return tnp.take_along_axis(lower, rows, -2)

    x = _solved("lu_solve", lu, b, solve)
    return _checked(x, _nonsingular(lu), "Singular matrix")


_PADE13 = (
    64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
    129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
    40840800.0, 960960.0, 16380.0, 182.0, 1.0,
)  # fmt: skip
"""The coefficients `b0 ... b13` of the [13/13] Padé approximant of exp (Higham 2005)."""
_THETA13 = 5.371920351148152
"""The largest 1-norm for which the [13/13] approximant is exact in double precision."""


def _pade13(a: Any) -> Any:
    """`q⁻¹ p` for the [13/13] Padé approximant `p/q` of exp at `a` (`p = V + U`,
    `q = V - U`, `U` odd, `V` even), by Higham's six products and one solve."""
    b = _PADE13
    identity = np.eye(a.shape[-1], dtype=a.dtype)
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    odd = a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2
    u = a @ (odd + b[1] * identity)
    even = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2
    v = even + b[0] * identity
    return tnp.linalg.solve(v - u, v + u)


def expm(A: Any, *, upper_triangular: bool = False, max_squarings: int = 16) -> Any:  # noqa: N803
    """The matrix exponential of the square matrices `A` (batch axes allowed) by
    scaling and squaring (Higham 2005, SciPy's and JAX's algorithm, always the
    [13/13] Padé approximant): `A` scaled by `2⁻ˢ` to a 1-norm of at most 5.37,
    the approximant squared `s` times in a loop (`fori_loop`: `s` depends on the
    values; its matrices stay put once their own `s` is reached). NaNs where more
    than `max_squarings` squarings are needed or `A` is not finite (JAX's).
    `upper_triangular` is accepted and changes nothing."""
    del upper_triangular
    a = _square("expm", A)
    norm = tnp.max(tnp.sum(tnp.abs(a), axis=-2), axis=-1)
    needed = tnp.maximum(tnp.ceil(tnp.log2(norm / _THETA13)), 0.0)
    valid = tnp.isfinite(needed) & (needed <= max_squarings)
    squarings = tnp.where(valid, needed, 0.0).astype(np.int64)
    halvings = np.array([0.5**k for k in range(max_squarings + 1)], dtype=a.dtype)  # exact
    scale = tnp.take(halvings, squarings)[..., None, None]

    def square(i: Any, r: Any) -> Any:
        return tnp.where((i < squarings)[..., None, None], r @ r, r)

    result = fori_loop(0, tnp.max(squarings), square, _pade13(a * scale))
    return tnp.where(valid[..., None, None], result, np.nan)
