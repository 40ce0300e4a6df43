"""The `prim` linear-algebra ops: cholesky, triangular_solve and lu.

Each works on the matrices of the trailing two axes; leading axes are batch
axes (the same on every operand), so batching prepends one more.

* `cholesky`: the lower factor `L` of a Hermitian positive-definite matrix,
  `A = L Lᴴ`. Only the lower triangle of `A` is read (numpy, LAPACK); the
  strict upper triangle of `L` is zero. A matrix that is not positive definite
  gives a factor of NaNs (JAX's convention): `tnp.linalg.cholesky` turns that
  into `LinAlgError` with a `prim.check`.
* `triangular_solve`: `X` with `op(A) X = B` for a triangular `A` (the lower
  or upper triangle is read; with `unit_diagonal` the diagonal is taken as
  ones), `op(A)` = `A`, `Aᵀ` (`transpose_a`) or `Aᴴ` (`transpose_a,
  conjugate_a`). Linear in `B`.
* `lu`: the LU factorization with partial pivoting, `A[permutation] = L U`,
  packed into one matrix (unit-diagonal `L` below the diagonal, `U` on and
  above it) as LAPACK's `getrf` gives it, with its row interchanges (`pivots`,
  0-based: row `i` was swapped with row `pivots[i]`) and the permutation they
  make, both i32. A singular matrix is factored all the same (a zero on `U`'s
  diagonal).

The JVP rules are the structured ones (JAX's), built from these ops and the
linear core, so every order composes:

* cholesky: `dL = L Φ(L⁻¹ dA L⁻ᴴ)`, `Φ` the lower triangle with the diagonal
  halved, `dA` the Hermitian matrix made of the tangent's lower triangle;
* triangular_solve: `dX = op(A)⁻¹ (dB - op(dA') X)`, `dA'` the triangle of
  `dA` that is read;
* lu: `L⁻¹ P dA U⁻¹ = M`, `dL = L tril(M, -1)`, `dU = triu(M) U`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType, UnitAttr, i1, i32
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, opt_prop_def, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tidu_mlir.dialects.prim.base import (
    AddOp,
    NotLinear,
    PrimOp,
    Values,
    batch_all,
    emit_value,
)
from tidu_mlir.dialects.prim.contraction import DotGeneralOp
from tidu_mlir.dialects.prim.core import (
    BroadcastInDimOp,
    MulOp,
    NegOp,
    SelectOp,
    SubOp,
    conj_if_complex,
    emit_transpose,
    full_like,
    zeros_like,
)
from tidu_mlir.dialects.prim.elementwise import CompareOp
from tidu_mlir.dialects.prim.indexing import IotaOp
from tidu_mlir.dialects.prim.syntax import (
    RoleSpec,
    parse_types_arrow,
    print_attr_dict,
    print_types_arrow,
    resolve,
    role_attributes,
)
from tidu_mlir.dialects.prim.types import (
    Shape,
    Value,
    check_same_type,
    check_tensor,
    element_type_of,
    fmt_shape,
    is_complex,
    shape_of,
    tensor_type_of,
)
from tidu_mlir.interfaces import BatchContext, RecomputeCost, RuleContext


def square_size(what: str, shape: Shape) -> int:
    """The order `n` of the square matrices of `shape` (`[..., n, n]`)."""
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise VerifyException(
            f"{what} must be a (batch of) square matrices [..., n, n], got shape {fmt_shape(shape)}"
        )
    return shape[-1]


def pivot_type(shape: Shape) -> TensorType:
    """The type of `lu`'s pivots and permutation for matrices of `shape`."""
    return TensorType(i32, shape[:-1])


# --------------------------------------------------------------------------
# Rule helpers: matrix products, transposes and triangle masks
# --------------------------------------------------------------------------


def emit_matmul(ctx: RuleContext, a: SSAValue, b: SSAValue) -> SSAValue:
    """`a @ b` over the trailing two axes, the leading ones batch axes of both."""
    batch = range(len(shape_of(a)) - 2)
    rank = len(batch)
    op = DotGeneralOp(
        a, b, lhs_batch=batch, rhs_batch=batch, lhs_contract=[rank + 1], rhs_contract=[rank]
    )
    return emit_value(ctx, op)


def emit_mT(ctx: RuleContext, x: SSAValue) -> SSAValue:
    """`x` with its trailing two axes swapped."""
    rank = len(shape_of(x))
    return emit_transpose(ctx, x, [*range(rank - 2), rank - 1, rank - 2])


def emit_mH(ctx: RuleContext, x: SSAValue) -> SSAValue:
    """The conjugate transpose of the matrices of `x`."""
    return conj_if_complex(ctx, emit_mT(ctx, x))


def emit_in_triangle(ctx: RuleContext, typ: TensorType, direction: str) -> SSAValue:
    """The i1 tensor of `typ`'s shape `[..., n, n]` true where `column direction row`
    (`le`: the lower triangle, `lt` without the diagonal, `ge`/`gt` the upper one,
    `eq` the diagonal): two iotas and a compare, no n×n constant."""
    shape = typ.get_shape()
    n, rank = shape[-1], len(shape)
    square = TensorType(i32, [n, n])
    rows, columns = emit_value(ctx, IotaOp(square, 0)), emit_value(ctx, IotaOp(square, 1))
    inside = emit_value(ctx, CompareOp(direction, columns, rows))
    if rank == 2:
        return inside
    return emit_value(ctx, BroadcastInDimOp(inside, [rank - 2, rank - 1], TensorType(i1, shape)))


def emit_triangle(ctx: RuleContext, x: SSAValue, direction: str) -> SSAValue:
    """`x` where `column direction row` (`emit_in_triangle`), zero elsewhere:
    linear in `x` (a select against a zero constant)."""
    inside = emit_in_triangle(ctx, tensor_type_of(x), direction)
    return emit_value(ctx, SelectOp(inside, x, zeros_like(ctx, x)))


def emit_phi(ctx: RuleContext, x: SSAValue) -> SSAValue:
    """Φ(x): the lower triangle of `x` with the diagonal halved,
    `(tril(x) + tril(x, -1)) / 2`. `Φ(x) + Φ(x)ᴴ` is the Hermitian matrix made of
    `x`'s lower triangle (the diagonal's real part: LAPACK ignores its imaginary part)."""
    both = emit_value(ctx, AddOp(emit_triangle(ctx, x, "le"), emit_triangle(ctx, x, "lt")))
    return emit_value(ctx, MulOp(both, full_like(ctx, 0.5, tensor_type_of(x))))


def emit_permute_rows(ctx: RuleContext, x: SSAValue, permutation: SSAValue) -> SSAValue:
    """`x[..., permutation[..., i], :]`: a product with the one-hot permutation
    matrix (`P[..., i, j] = permutation[..., i] == j`), so batches need no index
    arithmetic."""
    typ = tensor_type_of(x)
    shape = shape_of(x)
    rank = len(shape)
    square = TensorType(i32, [*shape[:-1], shape[-2]])
    rows = emit_value(ctx, BroadcastInDimOp(permutation, range(rank - 1), square))
    columns = emit_value(ctx, IotaOp(square, rank - 1))
    hit = emit_value(ctx, CompareOp("eq", rows, columns))
    matrix_type = TensorType(typ.get_element_type(), square.get_shape())
    ones, zeros = full_like(ctx, 1.0, matrix_type), full_like(ctx, 0.0, matrix_type)
    one_hot = emit_value(ctx, SelectOp(hit, ones, zeros))
    return emit_matmul(ctx, one_hot, x)


# --------------------------------------------------------------------------
# cholesky
# --------------------------------------------------------------------------


class SquareUnaryOp(PrimOp):
    """An op of one batch of square matrices, printed `%a attr-dict : T`, its
    results typed by `result_types`. Batched by the same op on the batched operand."""

    traits = traits_def(Pure(), RecomputeCost(cheap=False))

    @staticmethod
    def result_types_for(t: TensorType) -> list[Attribute]:
        """The result types for an operand of type `t`."""
        return [t]

    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        return self.emit_batched(ctx, operands)

    def verify_operand(self) -> None:
        """Check the operand is a (batch of) square float or complex matrices and
        the results have the types `result_types_for` gives."""
        (operand,) = self.operands
        check_tensor("operand", operand.type)
        square_size("operand", shape_of(operand))
        expected = self.result_types_for(tensor_type_of(operand))
        for index, (result, typ) in enumerate(zip(self.results, expected, strict=True)):
            check_same_type(f"result #{index}", result.type, typ)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.operands[0])
        print_attr_dict(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.operands[0].type)

    @classmethod
    def parse(cls, parser: Parser) -> SquareUnaryOp:
        operand = parser.parse_unresolved_operand()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        typ = parser.parse_type()
        if not isinstance(typ, TensorType):
            parser.raise_error(f"{cls.name} expects a tensor type, got {typ}")
        return cls.create(
            operands=resolve(parser, [operand], [typ]),
            result_types=cls.result_types_for(typ),
            attributes=attributes,
        )


@irdl_op_definition
class CholeskyOp(NotLinear, SquareUnaryOp):
    """The lower Cholesky factor: `prim.cholesky %a : tensor<3x3xf64>` (reads
    the lower triangle of `a`; NaNs where `a` is not positive definite)."""

    name = "prim.cholesky"

    operand = operand_def()
    result = result_def()

    def __init__(self, operand: Value, *, role: RoleSpec = None):
        super().__init__(
            operands=[operand],
            result_types=[tensor_type_of(operand)],
            attributes=role_attributes(role),
        )

    def verify_types(self) -> None:
        self.verify_operand()

    @staticmethod
    def reference(a: np.ndarray) -> np.ndarray:
        a = np.asarray(a)
        read = (np.tril(a) + np.tril(a, -1)) / 2  # Φ(a), see `emit_phi`
        hermitian = read + np.conj(np.swapaxes(read, -1, -2))
        factor = np.full_like(a, np.nan)
        for index in np.ndindex(a.shape[:-2]):
            with contextlib.suppress(np.linalg.LinAlgError):  # not positive definite: NaNs
                factor[index] = np.linalg.cholesky(hermitian[index])
        return factor

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        (da,) = tangents
        if da is None:
            return [None]
        read = emit_phi(ctx, da)
        hermitian = emit_value(ctx, AddOp(read, emit_mH(ctx, read)))
        factor = self.result
        left = emit_value(ctx, TriangularSolveOp(factor, hermitian, lower=True))
        middle = emit_value(ctx, TriangularSolveOp(factor, emit_mH(ctx, left), lower=True))
        return [emit_matmul(ctx, factor, emit_phi(ctx, middle))]


# --------------------------------------------------------------------------
# triangular_solve
# --------------------------------------------------------------------------

_SOLVE_FLAGS = ("lower", "transpose_a", "conjugate_a", "unit_diagonal")
_READ = {(True, False): "le", (True, True): "lt", (False, False): "ge", (False, True): "gt"}
"""The triangle of `a` a solve reads (`emit_triangle`), by (lower, unit_diagonal)."""


@irdl_op_definition
class TriangularSolveOp(PrimOp):
    """`X` with `op(a) X = b`, `a` triangular:
    `prim.triangular_solve %a, %b, lower, transpose_a : (tensor<3x3xf64>,
    tensor<3x2xf64>) -> tensor<3x2xf64>` (flags: `lower` (else upper),
    `transpose_a`, `conjugate_a` (with `transpose_a`: `aᴴ`), `unit_diagonal`).
    Linear in `b`: its transpose solves with the adjoint `op(a)ᴴ`."""

    name = "prim.triangular_solve"

    traits = traits_def(Pure(), RecomputeCost(cheap=False))
    a = operand_def()
    b = operand_def()
    result = result_def()
    lower = opt_prop_def(UnitAttr)
    transpose_a = opt_prop_def(UnitAttr)
    conjugate_a = opt_prop_def(UnitAttr)
    unit_diagonal = opt_prop_def(UnitAttr)

    def __init__(
        self,
        a: Value,
        b: Value,
        *,
        lower: bool = False,
        transpose_a: bool = False,
        conjugate_a: bool = False,
        unit_diagonal: bool = False,
        role: RoleSpec = None,
    ):
        flags = (lower, transpose_a, conjugate_a, unit_diagonal)
        super().__init__(
            operands=[a, b],
            result_types=[tensor_type_of(b)],
            properties={
                name: UnitAttr() for name, on in zip(_SOLVE_FLAGS, flags, strict=True) if on
            },
            attributes=role_attributes(role),
        )

    @staticmethod
    def from_flags(a: Value, b: Value, flags: Mapping[str, bool]) -> TriangularSolveOp:
        """A triangular_solve with the flags named in `flags` (the others off)."""
        on = {name: bool(flags.get(name, False)) for name in _SOLVE_FLAGS}
        return TriangularSolveOp(
            a,
            b,
            lower=on["lower"],
            transpose_a=on["transpose_a"],
            conjugate_a=on["conjugate_a"],
            unit_diagonal=on["unit_diagonal"],
        )

    def flags(self) -> dict[str, bool]:
        """The four flags by name."""
        return {name: name in self.properties for name in _SOLVE_FLAGS}

    def verify_types(self) -> None:
        check_tensor("a", self.a.type)
        check_tensor("b", self.b.type)
        a_shape, b_shape = shape_of(self.a), shape_of(self.b)
        n = square_size("a", a_shape)
        if len(b_shape) != len(a_shape) or b_shape[:-2] != a_shape[:-2] or b_shape[-2] != n:
            raise VerifyException(
                f"b shape {fmt_shape(b_shape)} does not match a shape {fmt_shape(a_shape)}: "
                f"expected [{', '.join(str(d) for d in a_shape[:-1])}, k]"
            )
        if element_type_of(self.b.type) != element_type_of(self.a.type):
            raise VerifyException(
                f"b element type {element_type_of(self.b.type)} must equal "
                f"{element_type_of(self.a.type)}"
            )
        if self.conjugate_a is not None and self.transpose_a is None:
            raise VerifyException("conjugate_a needs transpose_a (op(a) = aᴴ)")
        check_same_type("result", self.result.type, self.b.type)

    @staticmethod
    def reference(
        a: np.ndarray,
        b: np.ndarray,
        *,
        lower: bool = False,
        transpose_a: bool = False,
        conjugate_a: bool = False,
        unit_diagonal: bool = False,
    ) -> np.ndarray:
        a, b = np.asarray(a), np.asarray(b)
        n = a.shape[-1]
        matrix = np.tril(a) if lower else np.triu(a)
        if unit_diagonal:
            matrix = matrix - matrix * np.eye(n) + np.eye(n)
        if transpose_a:
            matrix = np.swapaxes(matrix, -1, -2)
            lower = not lower
        if conjugate_a:
            matrix = np.conj(matrix)
        x = np.zeros(np.broadcast_shapes(b.shape, matrix.shape[:-1] + b.shape[-1:]), b.dtype)
        with np.errstate(all="ignore"):  # a zero on the diagonal: inf or nan, as trsm
            for i in range(n) if lower else reversed(range(n)):
                known = np.einsum("...j,...jk->...k", matrix[..., i, :], x)
                x[..., i, :] = (b[..., i, :] - known) / matrix[..., i, i, None]
        return x

    def reference_params(self) -> dict[str, Any]:
        return self.flags()

    def _like(self, a: SSAValue, b: SSAValue, **flags: bool) -> TriangularSolveOp:
        """A triangular_solve of `b` by `a`, this op's flags updated by `flags`."""
        return TriangularSolveOp.from_flags(a, b, {**self.flags(), **flags})

    def _op_a(self, ctx: RuleContext, x: SSAValue) -> SSAValue:
        """`op(x)`: `x`, `xᵀ` or `xᴴ` as this op applies it to `a`."""
        if self.transpose_a is None:
            return x
        return emit_mH(ctx, x) if self.conjugate_a is not None else emit_mT(ctx, x)

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        da, db = tangents
        rhs = db
        if da is not None:
            read = _READ[self.lower is not None, self.unit_diagonal is not None]
            change = emit_matmul(ctx, self._op_a(ctx, emit_triangle(ctx, da, read)), self.result)
            rhs = emit_value(ctx, NegOp(change) if db is None else SubOp(db, change))
        if rhs is None:
            return [None]
        return [emit_value(ctx, self._like(self.a, rhs))]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        (ct,) = cotangents
        assert ct is not None
        complex_a = is_complex(self.a.type)
        if self.transpose_a is None:  # op(a)⁻ᴴ: the conjugate transpose
            solve = self._like(self.a, ct, transpose_a=True, conjugate_a=complex_a)
        elif self.conjugate_a is None and complex_a:  # (a⁻ᵀ)ᴴ = conj(a)⁻¹
            solve = self._like(conj_if_complex(ctx, self.a), ct, transpose_a=False)
        else:  # (a⁻ᴴ)ᴴ = a⁻¹ (real: a⁻ᵀ's adjoint)
            solve = self._like(self.a, ct, transpose_a=False, conjugate_a=False)
        return [None, emit_value(ctx, solve)]

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return list(active_mask) == [False, True]

    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        return self.emit_batched(ctx, batch_all(ctx, operands, batched))

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        for name, on in self.flags().items():
            if on:
                printer.print_string(f", {name}")
        print_attr_dict(printer, self)
        print_types_arrow(printer, [self.a.type, self.b.type], self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> TriangularSolveOp:
        a = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        b = parser.parse_unresolved_operand()
        properties: dict[str, Attribute] = {}
        while parser.parse_optional_punctuation(",") is not None:
            flag = parser.parse_identifier(f" (one of: {', '.join(_SOLVE_FLAGS)})")
            if flag not in _SOLVE_FLAGS or flag in properties:
                parser.raise_error(f"unexpected '{flag}' in {cls.name}")
            properties[flag] = UnitAttr()
        attributes = parser.parse_optional_attr_dict()
        inputs, output = parse_types_arrow(parser, 2)
        return cls.create(
            operands=resolve(parser, [a, b], inputs),
            result_types=[output],
            properties=properties,
            attributes=attributes,
        )


# --------------------------------------------------------------------------
# lu
# --------------------------------------------------------------------------


@irdl_op_definition
class LuOp(NotLinear, SquareUnaryOp):
    """LU with partial pivoting: `%lu, %pivots, %perm = prim.lu %a :
    tensor<3x3xf64>` (results: the packed factors, same type; pivots and
    permutation, i32 `[..., n]`). `a[perm] = L U`."""

    name = "prim.lu"

    operand = operand_def()
    lu = result_def()
    pivots = result_def()
    permutation = result_def()

    def __init__(self, operand: Value, *, role: RoleSpec = None):
        super().__init__(
            operands=[operand],
            result_types=self.result_types_for(tensor_type_of(operand)),
            attributes=role_attributes(role),
        )

    @staticmethod
    def result_types_for(t: TensorType) -> list[Attribute]:
        index = pivot_type(tuple(t.get_shape()))
        return [t, index, index]

    def verify_types(self) -> None:
        self.verify_operand()

    @staticmethod
    def reference(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a = np.asarray(a)
        n = a.shape[-1]
        lu = a.copy()
        pivots = np.zeros(a.shape[:-1], np.int32)
        permutation = np.broadcast_to(np.arange(n, dtype=np.int32), a.shape[:-1]).copy()
        for index in np.ndindex(a.shape[:-2]):
            _factor_in_place(lu[index], pivots[index], permutation[index])
        return lu, pivots, permutation

    def evaluate(self, *operands: np.ndarray) -> tuple[np.ndarray, ...]:
        return self.reference(*operands)

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        (da,) = tangents
        if da is None:
            return [None, None, None]
        typ = tensor_type_of(self.lu)
        diagonal = emit_in_triangle(ctx, typ, "eq")
        strict = emit_triangle(ctx, self.lu, "lt")
        unit_lower = emit_value(ctx, SelectOp(diagonal, full_like(ctx, 1.0, typ), strict))
        upper = emit_triangle(ctx, self.lu, "ge")
        permuted = emit_permute_rows(ctx, da, self.permutation)
        left = emit_value(
            ctx, TriangularSolveOp(unit_lower, permuted, lower=True, unit_diagonal=True)
        )
        right = emit_value(ctx, TriangularSolveOp(upper, emit_mT(ctx, left), transpose_a=True))
        middle = emit_mT(ctx, right)  # L⁻¹ P dA U⁻¹
        dl = emit_matmul(ctx, unit_lower, emit_triangle(ctx, middle, "lt"))
        du = emit_matmul(ctx, emit_triangle(ctx, middle, "ge"), upper)
        return [emit_value(ctx, AddOp(dl, du)), None, None]


def _factor_in_place(lu: np.ndarray, pivots: np.ndarray, permutation: np.ndarray) -> None:
    """Doolittle LU with partial pivoting of the matrix `lu`, in place (LAPACK's
    choice of pivot: the first largest `|re| + |im|`)."""
    n = lu.shape[-1]
    for k in range(n):
        column = lu[k:, k]
        pivot = k + int(np.argmax(np.abs(np.real(column)) + np.abs(np.imag(column))))
        pivots[k] = pivot
        if pivot != k:
            lu[[k, pivot]] = lu[[pivot, k]]
            permutation[[k, pivot]] = permutation[[pivot, k]]
        if lu[k, k] != 0:
            lu[k + 1 :, k] /= lu[k, k]
        lu[k + 1 :, k + 1 :] -= np.outer(lu[k + 1 :, k], lu[k, k + 1 :])


OPS: tuple[type[PrimOp], ...] = (CholeskyOp, TriangularSolveOp, LuOp)
"""The op classes of this layer, in the dialect's order."""

__all__ = ["CholeskyOp", "LuOp", "TriangularSolveOp"]
