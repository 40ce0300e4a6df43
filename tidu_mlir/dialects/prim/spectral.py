"""The `prim` spectral ops: eigh (Hermitian eigendecomposition) and svd.

Like the `linalg` ops, each works on the matrices of the trailing two axes,
the leading axes being batch axes, and is batched by the same op on the
batched operand.

* `eigh`: the eigenvalues (real, ascending, `[..., n]`) and orthonormal
  eigenvectors (the columns of `[..., n, n]`) of the Hermitian matrix made of
  the lower triangle of `a` (numpy's `UPLO='L'`, LAPACK's `syevd`/`heevd`).
  A matrix whose iteration does not converge gives NaNs: `tnp.linalg.eigh`
  turns them into `LinAlgError` with a `prim.check`.
* `svd`: `a = u diag(s) vh`, the singular values real and descending
  (LAPACK's `gesdd`), NaNs where it does not converge.

The JVP rules are JAX's, built from the linear core and `linalg`'s helpers:

* eigh: `M = Vᴴ dA V` (`dA` the Hermitian matrix of the tangent's lower
  triangle), `dw = Re diag(M)`, `dV = V (F ∘ M)` with `F[i, j] = 1/(w[j] - w[i])`
  off the diagonal and 0 on it: eigenvalues that coincide give infinities in
  the eigenvector tangents, as in JAX (they are not differentiable there);
* svd: `dS = Uᴴ dA V`, `ds = Re diag(dS)`, `dU` and `dV` with
  `F[i, j] = 1/(s[j]² - s[i]²)` (`SvdOp.jvp_rule`): repeated singular values
  give infinities in `dU` and `dV`, as in JAX.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType, UnitAttr
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, opt_prop_def, result_def

from tidu_mlir.dialects.prim.base import AddOp, NotLinear, PrimOp, Values, emit_value
from tidu_mlir.dialects.prim.core import (
    BroadcastInDimOp,
    ConvertOp,
    MulOp,
    RealOp,
    ReduceSumOp,
    SelectOp,
    SubOp,
    full_like,
    zeros_like,
)
from tidu_mlir.dialects.prim.elementwise import CompareOp, DivOp
from tidu_mlir.dialects.prim.linalg import (
    MatrixUnaryOp,
    emit_hermitian_sum,
    emit_in_triangle,
    emit_matmul,
    emit_mH,
    emit_phi,
    emit_triangle,
)
from tidu_mlir.dialects.prim.syntax import RoleSpec
from tidu_mlir.dialects.prim.types import (
    Shape,
    Value,
    is_complex,
    real_element_type,
    shape_of,
    tensor_type_of,
)
from tidu_mlir.interfaces import ADRuleError, RuleContext


def emit_diagonal(ctx: RuleContext, x: SSAValue) -> SSAValue:
    """The diagonals `[..., n]` of the matrices `[..., n, n]` of `x` (linear)."""
    return emit_value(ctx, ReduceSumOp(emit_triangle(ctx, x, "eq"), [len(shape_of(x)) - 1]))


def emit_spread(ctx: RuleContext, w: SSAValue, like: TensorType, axis: int) -> SSAValue:
    """The real vectors `w` `[..., k]` spread over the matrices of `like`'s shape
    `[..., r, c]`: `[..., i, j] = w[..., j]` for `axis = -1` (along each row, so
    a product scales columns), `w[..., i]` for `axis = -2`."""
    rank = len(like.get_shape())
    square = TensorType(real_element_type(like), like.get_shape())
    return emit_value(ctx, BroadcastInDimOp(w, [*range(rank - 2), rank + axis], square))


def emit_as(ctx: RuleContext, x: SSAValue, like: TensorType) -> SSAValue:
    """The real tensor `x` converted to `like`'s (complex) element type, if it differs."""
    element = like.get_element_type()
    if tensor_type_of(x).get_element_type() == element:
        return x
    return emit_value(ctx, ConvertOp(x, element))


def emit_safe_reciprocal(ctx: RuleContext, x: SSAValue, zero: SSAValue) -> SSAValue:
    """`1/x` where `zero` is false, 0 where it is true (no division by zero there)."""
    typ = tensor_type_of(x)
    ones, zeros = full_like(ctx, 1.0, typ), full_like(ctx, 0.0, typ)
    safe = emit_value(ctx, SelectOp(zero, ones, x))
    return emit_value(ctx, SelectOp(zero, zeros, emit_value(ctx, DivOp(ones, safe))))


def emit_gap_reciprocals(ctx: RuleContext, w: SSAValue, like: TensorType) -> SSAValue:
    """`F[..., i, j] = 1/(w[j] - w[i])` off the diagonal, 0 on it, of `like`'s
    element type (JAX's `1/(I + w[j] - w[i]) - I`, without dividing by zero)."""
    columns, rows = emit_spread(ctx, w, like, -1), emit_spread(ctx, w, like, -2)
    gaps = emit_value(ctx, SubOp(columns, rows))
    diagonal = emit_in_triangle(ctx, tensor_type_of(gaps), "eq")
    return emit_as(ctx, emit_safe_reciprocal(ctx, gaps, diagonal), like)


# --------------------------------------------------------------------------
# eigh
# --------------------------------------------------------------------------


@irdl_op_definition
class EighOp(NotLinear, MatrixUnaryOp):
    """The Hermitian eigendecomposition: `%w, %v = prim.eigh %a :
    tensor<3x3xcomplex<f64>>` (results: the real eigenvalues `[..., n]`,
    ascending, and the eigenvectors, `a`'s type, as columns; `a`'s lower
    triangle is read). `H v[:, i] = w[i] v[:, i]`."""

    name = "prim.eigh"

    operand = operand_def()
    eigenvalues = result_def()
    eigenvectors = result_def()

    def __init__(self, operand: Value, *, role: RoleSpec = None):
        super().__init__(**self.init_arguments(operand, role))

    @staticmethod
    def result_types_for(t: TensorType, flags: Mapping[str, bool]) -> list[Attribute]:
        return [TensorType(real_element_type(t), t.get_shape()[:-1]), t]

    @staticmethod
    def reference(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a = np.asarray(a)
        vectors = np.full_like(a, np.nan)
        values = np.full(a.shape[:-1], np.nan, np.real(a).dtype)
        for index in np.ndindex(a.shape[:-2]):
            with contextlib.suppress(np.linalg.LinAlgError):  # no convergence: NaNs
                values[index], vectors[index] = np.linalg.eigh(a[index], UPLO="L")
        return values, vectors

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        (da,) = tangents
        if da is None:
            return [None, None]
        v = self.eigenvectors
        hermitian = emit_hermitian_sum(ctx, emit_phi(ctx, da))  # read as the op reads `a`
        rotated = emit_matmul(ctx, emit_mH(ctx, v), hermitian)
        m = emit_matmul(ctx, rotated, v)  # Vᴴ dA V
        dw = emit_diagonal(ctx, m)
        if is_complex(v.type):
            dw = emit_value(ctx, RealOp(dw))
        gaps = emit_gap_reciprocals(ctx, self.eigenvalues, tensor_type_of(v))
        dv = emit_matmul(ctx, v, emit_value(ctx, MulOp(gaps, m)))
        return [dw, dv]


# --------------------------------------------------------------------------
# svd
# --------------------------------------------------------------------------


def svd_sizes(shape: Shape, full_matrices: bool) -> tuple[int, int, int]:
    """(k, rows of vh, columns of u): `k = min(m, n)` singular values of
    `[..., m, n]` matrices, `u` `m×m` and `vh` `n×n` with `full_matrices`, else
    `u` `m×k` and `vh` `k×n`."""
    m, n = shape[-2], shape[-1]
    k = min(m, n)
    return (k, n, m) if full_matrices else (k, k, k)


@irdl_op_definition
class SvdOp(NotLinear, MatrixUnaryOp):
    """The singular value decomposition (LAPACK's `gesdd`): `%u, %s, %vh =
    prim.svd %a, full_matrices : tensor<5x3xf64>`, `a = u diag(s) vh`, the
    real singular values `s` `[..., k]` descending, `k = min(m, n)`, `u` and
    `vh` with orthonormal columns and rows (`m×m` and `n×n` with
    `full_matrices`, else `m×k` and `k×n`)."""

    name = "prim.svd"

    FLAGS: ClassVar[tuple[str, ...]] = ("full_matrices",)
    SQUARE: ClassVar[bool] = False
    operand = operand_def()
    u = result_def()
    s = result_def()
    vh = result_def()
    full_matrices = opt_prop_def(UnitAttr)

    def __init__(self, operand: Value, *, full_matrices: bool = False, role: RoleSpec = None):
        super().__init__(**self.init_arguments(operand, role, full_matrices=full_matrices))

    @staticmethod
    def result_types_for(t: TensorType, flags: Mapping[str, bool]) -> list[Attribute]:
        shape = tuple(t.get_shape())
        batch, (m, n) = list(shape[:-2]), shape[-2:]
        k, vh_rows, u_columns = svd_sizes(shape, flags.get("full_matrices", False))
        element = t.get_element_type()
        return [
            TensorType(element, [*batch, m, u_columns]),
            TensorType(real_element_type(t), [*batch, k]),
            TensorType(element, [*batch, vh_rows, n]),
        ]

    @staticmethod
    def reference(
        a: np.ndarray, *, full_matrices: bool = False
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a = np.asarray(a)
        batch, (m, n) = a.shape[:-2], a.shape[-2:]
        k, vh_rows, u_columns = svd_sizes(a.shape, full_matrices)
        u = np.full((*batch, m, u_columns), np.nan, a.dtype)
        s = np.full((*batch, k), np.nan, np.real(a).dtype)
        vh = np.full((*batch, vh_rows, n), np.nan, a.dtype)
        for index in np.ndindex(a.shape[:-2]):
            with contextlib.suppress(np.linalg.LinAlgError):  # no convergence: NaNs
                u[index], s[index], vh[index] = np.linalg.svd(a[index], full_matrices)
        return u, s, vh

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        """JAX's `svd_jvp_rule`: `dS = Uᴴ dA V`, `ds = Re diag(dS)`,
        `F[i, j] = 1/(s[j]² - s[i]²)` (0 on the diagonal),
        `dU = U (F ∘ (dS S + S dSᴴ) + diag(i Im dS[i, i] / s[i]))`,
        `dV = V (F ∘ (S dS + dSᴴ S))`, plus `(I - U Uᴴ) dA V S⁻¹` for `m > n`
        and `(I - V Vᴴ) dAᴴ U S⁻¹` for `n > m`. `full_matrices` of a non-square
        matrix has no derivative (JAX's refusal too)."""
        (da,) = tangents
        if da is None:
            return [None, None, None]
        m, n = shape_of(self.operand)[-2:]
        if self.full_matrices is not None and m != n:
            raise ADRuleError("jvp", self, "full_matrices of a non-square matrix (m != n)")
        u, s, v = self.u, self.s, emit_mH(ctx, self.vh)
        ds_matrix = emit_matmul(ctx, emit_matmul(ctx, emit_mH(ctx, u), da), v)  # dS
        typ = tensor_type_of(ds_matrix)
        ds = emit_diagonal(ctx, ds_matrix)
        if is_complex(typ):
            ds = emit_value(ctx, RealOp(ds))
        gaps = emit_gap_reciprocals(ctx, emit_value(ctx, MulOp(s, s)), typ)
        ds_s = emit_value(ctx, MulOp(_scales(ctx, s, typ, -1), ds_matrix))  # dS S
        s_ds = emit_value(ctx, MulOp(_scales(ctx, s, typ, -2), ds_matrix))  # S dS
        u_part = emit_value(ctx, MulOp(gaps, emit_hermitian_sum(ctx, ds_s)))
        if is_complex(typ):
            u_part = emit_value(ctx, AddOp(u_part, _phase(ctx, ds_matrix, s)))
        du = emit_matmul(ctx, u, u_part)
        dv = emit_matmul(ctx, v, emit_value(ctx, MulOp(gaps, emit_hermitian_sum(ctx, s_ds))))
        if m > n:
            du = emit_value(ctx, AddOp(du, _complement(ctx, u, da, v, s)))
        if n > m:
            dv = emit_value(ctx, AddOp(dv, _complement(ctx, v, emit_mH(ctx, da), u, s)))
        return [du, ds, emit_mH(ctx, dv)]


def _scales(ctx: RuleContext, s: SSAValue, like: TensorType, axis: int) -> SSAValue:
    """`s` spread over `like`'s matrices along `axis` (`emit_spread`), of its type."""
    return emit_as(ctx, emit_spread(ctx, s, like, axis), like)


def _phase(ctx: RuleContext, ds_matrix: SSAValue, s: SSAValue) -> SSAValue:
    """`diag((dS - dSᴴ)[i, i] / (2 s[i]))` (0 where `s[i]` is 0): the phase
    change of `u`'s columns that leaves `v`'s unchanged."""
    zero = emit_value(ctx, CompareOp("eq", s, zeros_like(ctx, s)))
    halved = emit_value(
        ctx, MulOp(emit_safe_reciprocal(ctx, s, zero), full_like(ctx, 0.5, tensor_type_of(s)))
    )
    typ = tensor_type_of(ds_matrix)
    skew = emit_value(ctx, SubOp(ds_matrix, emit_mH(ctx, ds_matrix)))
    return emit_triangle(ctx, emit_value(ctx, MulOp(_scales(ctx, halved, typ, -1), skew)), "eq")


def _complement(
    ctx: RuleContext, basis: SSAValue, da: SSAValue, other: SSAValue, s: SSAValue
) -> SSAValue:
    """`(dA W - B Bᴴ dA W) / s` (columns divided by `s`, JAX's: infinite for a zero
    singular value): the tangent's part outside the span of `basis` `B`, for
    `dA` = `da`, `W` = `other`."""
    moved = emit_matmul(ctx, da, other)
    inside = emit_matmul(ctx, basis, emit_matmul(ctx, emit_mH(ctx, basis), moved))
    outside = emit_value(ctx, SubOp(moved, inside))
    return emit_value(ctx, DivOp(outside, _scales(ctx, s, tensor_type_of(outside), -1)))


OPS: tuple[type[PrimOp], ...] = (EighOp, SvdOp)
"""The op classes of this layer, in the dialect's order."""

__all__ = ["EighOp", "SvdOp"]
