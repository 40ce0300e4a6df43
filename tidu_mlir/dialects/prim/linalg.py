"""The `prim` linear-algebra ops: cholesky, triangular_solve, lu and qr.

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
* `qr`: the Householder QR factorization `A = Q R` of `[..., m, n]` matrices,
  `Q` `m×k` with orthonormal columns, `R` `k×n` upper triangular, `k = m`
  with `full_matrices`, else `min(m, n)` (LAPACK's `geqrf`: numpy's signs).

The JVP rules are the structured ones (JAX's), built from these ops and the
linear core, so every order composes:

* cholesky: `dL = L Φ(L⁻¹ dA L⁻ᴴ)`, `Φ` the lower triangle with the diagonal
  halved, `dA` the Hermitian matrix made of the tangent's lower triangle;
* triangular_solve: `dX = op(A)⁻¹ (dB - op(dA') X)`, `dA'` the triangle of
  `dA` that is read;
* lu: `L⁻¹ P dA U⁻¹ = M`, `dL = L tril(M, -1)`, `dU = triu(M) U`;
* qr: `C = Qᴴ dA R⁻¹`, `Ω = Φ(C) - Φ(C)ᴴ`, `dQ = Q (Ω - C) + dA R⁻¹`,
  `dR = (C - Ω) R` (`m ≥ n`; `QrOp.jvp_rule` for `m < n` and for the
  further columns of a square `Q`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

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
from tidu_mlir.dialects.prim.structural import ConcatenateOp, SliceOp
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
    tensor_dtype,
    tensor_type_of,
)
from tidu_mlir.fast_syntax import build_operation
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


def emit_hermitian_sum(ctx: RuleContext, x: SSAValue) -> SSAValue:
    """`x + xᴴ` (linear in `x`)."""
    return emit_value(ctx, AddOp(x, emit_mH(ctx, x)))


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


def emit_permutation_matrix(
    ctx: RuleContext, permutation: SSAValue, element: Attribute
) -> SSAValue:
    """The one-hot permutation matrices `P[..., i, j] = permutation[..., i] == j`
    of `element` type (`P x = x[..., permutation, :]`), so batches need no index
    arithmetic."""
    shape = shape_of(permutation)
    rank = len(shape) + 1
    square = TensorType(i32, [*shape, shape[-1]])
    rows = emit_value(ctx, BroadcastInDimOp(permutation, range(rank - 1), square))
    columns = emit_value(ctx, IotaOp(square, rank - 1))
    hit = emit_value(ctx, CompareOp("eq", rows, columns))
    matrix_type = TensorType(element, square.get_shape())
    ones, zeros = full_like(ctx, 1.0, matrix_type), full_like(ctx, 0.0, matrix_type)
    return emit_value(ctx, SelectOp(hit, ones, zeros))


def emit_permute_rows(ctx: RuleContext, x: SSAValue, permutation: SSAValue) -> SSAValue:
    """`x[..., permutation[..., i], :]`: `P x` (`emit_permutation_matrix`)."""
    one_hot = emit_permutation_matrix(ctx, permutation, element_type_of(x.type))
    return emit_matmul(ctx, one_hot, x)


# --------------------------------------------------------------------------
# cholesky
# --------------------------------------------------------------------------


class MatrixUnaryOp(PrimOp):
    """An op of one batch of matrices (square ones if `SQUARE`), printed
    `%a(, flag)* attr-dict : T` with the `FLAGS` that are set (unit
    properties), its results typed by `result_types_for`. Batched by the same
    op, same flags, on the batched operand."""

    traits = traits_def(Pure(), RecomputeCost(cheap=False))
    FLAGS: ClassVar[tuple[str, ...]] = ()
    SQUARE: ClassVar[bool] = True

    @staticmethod
    def result_types_for(t: TensorType, flags: Mapping[str, bool]) -> list[Attribute]:
        """The result types for an operand of type `t` with `flags` set."""
        return [t]

    def flags(self) -> dict[str, bool]:
        """The `FLAGS` by name."""
        return {name: name in self.properties for name in self.FLAGS}

    def reference_params(self) -> dict[str, Any]:
        return self.flags()

    def evaluate(self, *operands: np.ndarray) -> tuple[np.ndarray, ...]:
        results = self.reference(*operands, **self.reference_params())
        results = results if isinstance(results, tuple) else (results,)
        return tuple(
            np.asarray(r).astype(tensor_dtype(v.type), copy=False)
            for r, v in zip(results, self.results, strict=True)
        )

    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        return self.emit_batched(ctx, operands)

    def verify_types(self) -> None:
        """Check the operand is a (batch of) float or complex matrices, square
        if `SQUARE`, and the results have the types `result_types_for` gives."""
        (operand,) = self.operands
        check_tensor("operand", operand.type)
        shape = shape_of(operand)
        if self.SQUARE:
            square_size("operand", shape)
        elif len(shape) < 2:
            raise VerifyException(
                f"operand must be a (batch of) matrices [..., m, n], got shape {fmt_shape(shape)}"
            )
        expected = self.result_types_for(tensor_type_of(operand), self.flags())
        for index, (result, typ) in enumerate(zip(self.results, expected, strict=True)):
            check_same_type(f"result #{index}", result.type, typ)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.operands[0])
        for name, on in self.flags().items():
            if on:
                printer.print_string(f", {name}")
        print_attr_dict(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.operands[0].type)

    @classmethod
    def parse(cls, parser: Parser) -> MatrixUnaryOp:
        operand = parser.parse_unresolved_operand()
        properties = parse_flags(parser, cls.name, cls.FLAGS)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        typ = parser.parse_type()
        if not isinstance(typ, TensorType):
            parser.raise_error(f"{cls.name} expects a tensor type, got {typ}")
        flags = {name: name in properties for name in cls.FLAGS}
        return build_operation(
            cls,
            resolve(parser, [operand], [typ]),
            cls.result_types_for(typ, flags),
            properties,
            attributes,
        )

    @classmethod
    def init_arguments(cls, operand: Value, role: RoleSpec, **flags: bool) -> dict[str, Any]:
        """The `create` arguments of this op on `operand` with `flags` set."""
        return {
            "operands": [operand],
            "result_types": cls.result_types_for(tensor_type_of(operand), flags),
            "properties": {name: UnitAttr() for name in cls.FLAGS if flags.get(name)},
            "attributes": role_attributes(role),
        }


def parse_flags(parser: Parser, op_name: str, names: Sequence[str]) -> dict[str, Attribute]:
    """Parse `(, flag)*`, each one of `names` at most once, as unit properties."""
    properties: dict[str, Attribute] = {}
    while parser.parse_optional_punctuation(",") is not None:
        flag = parser.parse_identifier(f" (one of: {', '.join(names)})")
        if flag not in names or flag in properties:
            parser.raise_error(f"unexpected '{flag}' in {op_name}")
        properties[flag] = UnitAttr()
    return properties


@irdl_op_definition
class CholeskyOp(NotLinear, MatrixUnaryOp):
    """The lower Cholesky factor: `prim.cholesky %a : tensor<3x3xf64>` (reads
    the lower triangle of `a`; NaNs where `a` is not positive definite)."""

    name = "prim.cholesky"

    operand = operand_def()
    result = result_def()

    def __init__(self, operand: Value, *, role: RoleSpec = None):
        super().__init__(**self.init_arguments(operand, role))

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
        hermitian = emit_hermitian_sum(ctx, emit_phi(ctx, da))
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
        properties = parse_flags(parser, cls.name, _SOLVE_FLAGS)
        attributes = parser.parse_optional_attr_dict()
        inputs, output = parse_types_arrow(parser, 2)
        return build_operation(
            cls, resolve(parser, [a, b], inputs), [output], properties, attributes
        )


# --------------------------------------------------------------------------
# lu
# --------------------------------------------------------------------------


@irdl_op_definition
class LuOp(NotLinear, MatrixUnaryOp):
    """LU with partial pivoting: `%lu, %pivots, %perm = prim.lu %a :
    tensor<3x3xf64>` (results: the packed factors, same type; pivots and
    permutation, i32 `[..., n]`). `a[perm] = L U`."""

    name = "prim.lu"

    operand = operand_def()
    lu = result_def()
    pivots = result_def()
    permutation = result_def()

    def __init__(self, operand: Value, *, role: RoleSpec = None):
        super().__init__(**self.init_arguments(operand, role))

    @staticmethod
    def result_types_for(t: TensorType, flags: Mapping[str, bool]) -> list[Attribute]:
        index = pivot_type(tuple(t.get_shape()))
        return [t, index, index]

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


# --------------------------------------------------------------------------
# qr
# --------------------------------------------------------------------------


def qr_sizes(shape: Shape, full_matrices: bool) -> tuple[int, int, int]:
    """(m, n, k) of a QR of `[..., m, n]` matrices: `q` is `m×k`, `r` is `k×n`,
    `k = m` with `full_matrices`, else `min(m, n)`."""
    m, n = shape[-2], shape[-1]
    return m, n, m if full_matrices else min(m, n)


@irdl_op_definition
class QrOp(NotLinear, MatrixUnaryOp):
    """The QR factorization (Householder, LAPACK's `geqrf`):
    `%q, %r = prim.qr %a, full_matrices : tensor<5x3xf64>`, `a = q r`, `q`
    `m×k` with orthonormal columns, `r` `k×n` upper triangular, `k = m` with
    `full_matrices` (numpy's mode 'complete'), else `min(m, n)` ('reduced')."""

    name = "prim.qr"

    FLAGS: ClassVar[tuple[str, ...]] = ("full_matrices",)
    SQUARE: ClassVar[bool] = False
    operand = operand_def()
    q = result_def()
    r = result_def()
    full_matrices = opt_prop_def(UnitAttr)

    def __init__(self, operand: Value, *, full_matrices: bool = False, role: RoleSpec = None):
        super().__init__(**self.init_arguments(operand, role, full_matrices=full_matrices))

    @staticmethod
    def result_types_for(t: TensorType, flags: Mapping[str, bool]) -> list[Attribute]:
        shape = tuple(t.get_shape())
        m, n, k = qr_sizes(shape, flags.get("full_matrices", False))
        element = t.get_element_type()
        return [TensorType(element, [*shape[:-2], m, k]), TensorType(element, [*shape[:-2], k, n])]

    @staticmethod
    def reference(a: np.ndarray, *, full_matrices: bool = False) -> tuple[np.ndarray, np.ndarray]:
        q, r = np.linalg.qr(np.asarray(a), mode="complete" if full_matrices else "reduced")
        return q, r

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        """`emit_thin_qr_jvp` on the leading `m×min(m, n)` block; wide (`m < n`,
        `Q` square): `dQ = Q Ω`, `dR = Qᴴ dA - Ω R`; `full_matrices` with
        `m > n`: Q's further columns by `emit_completion_jvp` (JAX's)."""
        (da,) = tangents
        if da is None:
            return [None, None]
        m, n, k = qr_sizes(shape_of(self.operand), self.full_matrices is not None)
        q, r = self.q, self.r
        if n > m:
            square_da = emit_columns(ctx, da, 0, m)
            dq, _, omega = emit_thin_qr_jvp(ctx, q, emit_columns(ctx, r, 0, m), square_da)
            qh_da = emit_matmul(ctx, emit_mH(ctx, q), da)
            return [dq, emit_value(ctx, SubOp(qh_da, emit_matmul(ctx, omega, r)))]
        if k == n:
            dq, dr, _ = emit_thin_qr_jvp(ctx, q, r, da)
            return [dq, dr]
        dq_mn, dr_nn, _ = emit_thin_qr_jvp(
            ctx, emit_columns(ctx, q, 0, n), emit_rows(ctx, r, 0, n), da
        )
        dq = ConcatenateOp([dq_mn, emit_completion_jvp(ctx, q, dq_mn)], len(shape_of(q)) - 1)
        below = full_like(
            ctx, 0.0, TensorType(element_type_of(r.type), [*shape_of(r)[:-2], m - n, n])
        )
        dr = ConcatenateOp([dr_nn, below], len(shape_of(r)) - 2)
        return [emit_value(ctx, dq), emit_value(ctx, dr)]


def emit_thin_qr_jvp(
    ctx: RuleContext, q: SSAValue, r: SSAValue, da: SSAValue
) -> tuple[SSAValue, SSAValue, SSAValue]:
    """`(dQ, dR, Ω)` of the thin QR `A = Q R` (`m ≥ n`, `R` square):
    `X = dA R⁻¹`, `C = Qᴴ X`, `Ω = Φ(C) - Φ(C)ᴴ` (skew-Hermitian, the imaginary
    part of C's diagonal kept), `dQ = Q (Ω - C) + X`, `dR = (C - Ω) R`."""
    x_t = TriangularSolveOp(r, emit_mT(ctx, da), transpose_a=True)
    x = emit_mT(ctx, emit_value(ctx, x_t))  # dA R⁻¹
    c = emit_matmul(ctx, emit_mH(ctx, q), x)
    phi = emit_phi(ctx, c)
    omega = emit_value(ctx, SubOp(phi, emit_mH(ctx, phi)))
    rotation = emit_value(ctx, SubOp(omega, c))
    dq = emit_value(ctx, AddOp(emit_matmul(ctx, q, rotation), x))
    return dq, emit_matmul(ctx, emit_value(ctx, NegOp(rotation)), r), omega


def emit_completion_jvp(ctx: RuleContext, q: SSAValue, dq_mn: SSAValue) -> SSAValue:
    """The tangent of the last `m - n` columns `Q_mp` of a square Householder
    `Q` (`m×m`) given that of its first `n`, `dQ_mn` (arXiv 2409.13374, eq. 32
    and 33, as JAX): `Z = Q_pn (Q_nn - I)⁻¹` (an LU solve; `Q_nn`, `Q_pn` the
    top `n` and bottom `m - n` rows of `Q_mn`), `dQ_mp = dQ_mn Zᴴ - (Q_mn +
    Q_mp Z) (dQ_pn - Z dQ_nn)ᴴ`."""
    m, n = shape_of(q)[-1], shape_of(dq_mn)[-1]
    q_mn = emit_columns(ctx, q, 0, n)
    q_mp = emit_columns(ctx, q, n, m)
    q_nn, q_pn = emit_rows(ctx, q_mn, 0, n), emit_rows(ctx, q_mn, n, m)
    z = emit_right_solve(ctx, q_pn, emit_value(ctx, SubOp(q_nn, emit_identity(ctx, q_nn))))
    dq_nn, dq_pn = emit_rows(ctx, dq_mn, 0, n), emit_rows(ctx, dq_mn, n, m)
    moved = emit_value(ctx, SubOp(dq_pn, emit_matmul(ctx, z, dq_nn)))
    basis = emit_value(ctx, AddOp(q_mn, emit_matmul(ctx, q_mp, z)))
    first = emit_matmul(ctx, dq_mn, emit_mH(ctx, z))
    return emit_value(ctx, SubOp(first, emit_matmul(ctx, basis, emit_mH(ctx, moved))))


def emit_rows(ctx: RuleContext, x: SSAValue, start: int, stop: int) -> SSAValue:
    """`x[..., start:stop, :]`."""
    shape = shape_of(x)
    first = [0] * len(shape)
    first[-2] = start
    return emit_value(ctx, SliceOp(x, first, [*shape[:-2], stop, shape[-1]]))


def emit_columns(ctx: RuleContext, x: SSAValue, start: int, stop: int) -> SSAValue:
    """`x[..., :, start:stop]`."""
    shape = shape_of(x)
    first = [0] * len(shape)
    first[-1] = start
    return emit_value(ctx, SliceOp(x, first, [*shape[:-1], stop]))


def emit_identity(ctx: RuleContext, like: SSAValue) -> SSAValue:
    """Identity matrices of `like`'s type (`[..., n, n]`)."""
    typ = tensor_type_of(like)
    diagonal = emit_in_triangle(ctx, typ, "eq")
    return emit_value(ctx, SelectOp(diagonal, full_like(ctx, 1.0, typ), full_like(ctx, 0.0, typ)))


def emit_right_solve(ctx: RuleContext, b: SSAValue, a: SSAValue) -> SSAValue:
    """`b a⁻¹` for square `a`: with `a[perm] = L U` (`prim.lu`), `b a⁻¹ =
    b U⁻¹ L⁻¹ P` (right solves as transposed `triangular_solve`s)."""
    lu, _, permutation = ctx.emit(LuOp(a)).results
    upper = TriangularSolveOp(lu, emit_mT(ctx, b), transpose_a=True)  # (b U⁻¹)ᵀ
    lower = TriangularSolveOp(
        lu, emit_value(ctx, upper), lower=True, transpose_a=True, unit_diagonal=True
    )  # (b U⁻¹ L⁻¹)ᵀ
    one_hot = emit_permutation_matrix(ctx, permutation, element_type_of(a.type))
    return emit_matmul(ctx, emit_mT(ctx, emit_value(ctx, lower)), one_hot)


OPS: tuple[type[PrimOp], ...] = (CholeskyOp, TriangularSolveOp, LuOp, QrOp)
"""The op classes of this layer, in the dialect's order."""

__all__ = ["CholeskyOp", "LuOp", "QrOp", "TriangularSolveOp"]
