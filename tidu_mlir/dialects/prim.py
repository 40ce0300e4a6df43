"""The `prim` dialect: the differentiable tensor primitives (docs/design.md).

Every op takes and gives statically shaped ranked tensors of f32, f64,
complex<f32> or complex<f64> (i1 only for the result of `prim.compare` and the
predicate of `prim.select`). Every op is `Pure`, accepts an optional discardable
`role` attribute (`#cg.linearized<[...]>`) and checks it in its verifier.

Constructors infer the result type wherever the operands and properties
determine it, so AD rules can emit ops from Python without computing shapes.
The shape rules (`reduce_shape`, `dot_general_shape`, ...) are shared between
the constructors and the verifiers.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Sequence
from typing import ClassVar, TypeAlias, cast

import numpy as np
from xdsl.dialects.builtin import (
    AnyDenseElement,
    BytesAttr,
    ComplexType,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    f32,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tidu_mlir.dialects import cg, prim_ad
from tidu_mlir.types import numpy_dtype

Value: TypeAlias = SSAValue | Operation
RoleSpec: TypeAlias = cg.LinearizedRoleAttr | Sequence[bool] | None
Shape: TypeAlias = tuple[int, ...]

# --------------------------------------------------------------------------
# Element types and numpy dtypes
# --------------------------------------------------------------------------

FLOAT_TYPES: tuple[Attribute, ...] = (f32, f64)
COMPLEX_TYPES: tuple[Attribute, ...] = (ComplexType(f32), ComplexType(f64))
VALUE_TYPES: tuple[Attribute, ...] = FLOAT_TYPES + COMPLEX_TYPES

_ELEMENT_TYPES_BY_DTYPE: dict[np.dtype, Attribute] = {
    np.dtype(np.float32): f32,
    np.dtype(np.float64): f64,
    np.dtype(np.complex64): ComplexType(f32),
    np.dtype(np.complex128): ComplexType(f64),
    np.dtype(np.bool_): i1,
}


def element_type_of(t: Attribute) -> Attribute:
    """The element type of a tensor type, or `t` itself for a scalar type."""
    return t.get_element_type() if isinstance(t, TensorType) else t


def is_complex(t: Attribute) -> bool:
    """Whether a tensor type (or element type) is complex."""
    return isinstance(element_type_of(t), ComplexType)


def real_element_type(t: Attribute) -> Attribute:
    """The real element type of a tensor or element type (complex<f64> -> f64)."""
    element = element_type_of(t)
    return element.element_type if isinstance(element, ComplexType) else element


def with_element_type(t: TensorType, element: Attribute) -> TensorType:
    """`t` with its element type replaced."""
    return TensorType(element, t.get_shape())


def real_type(t: TensorType) -> TensorType:
    """The real counterpart of a tensor type (itself when already real)."""
    return with_element_type(t, real_element_type(t))


def complex_type(t: TensorType) -> TensorType:
    """The complex counterpart of a real tensor type."""
    element = element_type_of(t)
    assert isinstance(element, Float32Type | Float64Type)
    return with_element_type(t, ComplexType(element))


def tensor_dtype(t: Attribute) -> np.dtype:
    """The numpy dtype of a tensor type (or element type)."""
    return numpy_dtype(element_type_of(t))


def element_type_of_dtype(dtype: np.dtype | type) -> Attribute:
    """The element type of a numpy dtype (float32, float64, complex64, complex128, bool);
    the inverse of `tidu_mlir.types.numpy_dtype`."""
    dtype = np.dtype(dtype)
    if dtype not in _ELEMENT_TYPES_BY_DTYPE:
        raise TypeError(f"dtype {dtype} has no tidu element type")
    return _ELEMENT_TYPES_BY_DTYPE[dtype]


def shape_of(value: Value) -> Shape:
    """The static shape of a tensor-typed value."""
    t = SSAValue.get(value).type
    assert isinstance(t, TensorType), f"expected a tensor value, got {t}"
    return tuple(t.get_shape())


def tensor_type_of(value: Value) -> TensorType:
    t = SSAValue.get(value).type
    assert isinstance(t, TensorType), f"expected a tensor value, got {t}"
    return t


# --------------------------------------------------------------------------
# Shared verification helpers
# --------------------------------------------------------------------------

_KIND_TYPES: dict[str, tuple[Attribute, ...]] = {
    "float or complex": VALUE_TYPES,
    "real": FLOAT_TYPES,
    "complex": COMPLEX_TYPES,
    "i1": (i1,),
}


def _fmt_shape(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def check_tensor(what: str, t: Attribute, kind: str = "float or complex") -> None:
    """`t` is a statically shaped ranked tensor whose element type is of `kind`
    ("float or complex", "real", "complex" or "i1")."""
    if not isinstance(t, TensorType):
        raise VerifyException(f"{what} must be a ranked tensor, got {t}")
    if any(d < 0 for d in t.get_shape()):
        raise VerifyException(f"{what} must have a static shape, got {t}")
    if t.get_element_type() not in _KIND_TYPES[kind]:
        allowed = ", ".join(str(e) for e in _KIND_TYPES[kind])
        raise VerifyException(
            f"{what} must have a {kind} element type ({allowed}), got {t.get_element_type()}"
            if kind != "i1"
            else f"{what} must have element type i1, got {t.get_element_type()}"
        )


def check_same_type(what: str, actual: Attribute, expected: Attribute) -> None:
    if actual != expected:
        raise VerifyException(f"{what} type {actual} must equal {expected}")


def check_shape(what: str, actual: Sequence[int], expected: Sequence[int]) -> None:
    if tuple(actual) != tuple(expected):
        raise VerifyException(
            f"{what} shape {_fmt_shape(actual)} does not match expected {_fmt_shape(expected)}"
        )


def check_same_element_type(what: str, actual: Attribute, expected: Attribute) -> None:
    if element_type_of(actual) != element_type_of(expected):
        raise VerifyException(
            f"{what} element type {element_type_of(actual)} must equal {element_type_of(expected)}"
        )


def _check_axes_in_range(what: str, axes: Sequence[int], rank: int) -> None:
    for axis in axes:
        if not 0 <= axis < rank:
            raise VerifyException(f"{what} {axis} is out of range for rank {rank}")


def _check_strictly_increasing(what: str, values: Sequence[int]) -> None:
    if any(a >= b for a, b in zip(values, values[1:], strict=False)):
        raise VerifyException(
            f"{what} {_fmt_shape(values)} must be strictly increasing (sorted, unique)"
        )


def _check_length(what: str, values: Sequence[int], rank: int) -> None:
    if len(values) != rank:
        raise VerifyException(f"{what} has {len(values)} entries, expected {rank} (the rank)")


# --------------------------------------------------------------------------
# Shape rules (shared by constructors and verifiers)
# --------------------------------------------------------------------------


def broadcast_in_dim_check(operand: Shape, dims: Sequence[int], result: Shape) -> None:
    """Operand axis i goes to result axis dims[i] and has size 1 or the result's."""
    _check_length("dims", dims, len(operand))
    _check_axes_in_range("broadcast dim", dims, len(result))
    _check_strictly_increasing("dims", dims)
    for axis, (size, dim) in enumerate(zip(operand, dims, strict=True)):
        if size not in (1, result[dim]):
            raise VerifyException(
                f"operand dimension {axis} has size {size}, which is neither 1 nor the "
                f"size {result[dim]} of result dimension {dim}"
            )


def reduce_shape(operand: Shape, axes: Sequence[int]) -> Shape:
    """The shape left after reducing `axes` (sorted, unique, in range)."""
    _check_axes_in_range("reduction axis", axes, len(operand))
    _check_strictly_increasing("axes", axes)
    return tuple(d for axis, d in enumerate(operand) if axis not in axes)


def transpose_shape(operand: Shape, permutation: Sequence[int]) -> Shape:
    """result.shape[i] = operand.shape[permutation[i]]."""
    if sorted(permutation) != list(range(len(operand))):
        raise VerifyException(
            f"permutation {_fmt_shape(permutation)} is not a permutation of 0..{len(operand) - 1}"
        )
    return tuple(operand[p] for p in permutation)


def _free_axes(rank: int, batch: Sequence[int], contract: Sequence[int]) -> list[int]:
    return [axis for axis in range(rank) if axis not in batch and axis not in contract]


def _check_dot_side(side: str, rank: int, batch: Sequence[int], contract: Sequence[int]) -> None:
    _check_axes_in_range(f"{side} batch dimension", batch, rank)
    _check_axes_in_range(f"{side} contracting dimension", contract, rank)
    if len(set(batch) | set(contract)) != len(batch) + len(contract):
        raise VerifyException(
            f"{side} batch {_fmt_shape(batch)} and contracting {_fmt_shape(contract)} "
            "dimensions must be unique and disjoint"
        )


def _check_dot_pairs(
    what: str, lhs: Shape, rhs: Shape, ls: Sequence[int], rs: Sequence[int]
) -> None:
    if len(ls) != len(rs):
        raise VerifyException(f"lhs and rhs {what} dimension lists differ in length")
    for left, right in zip(ls, rs, strict=True):
        if lhs[left] != rhs[right]:
            raise VerifyException(
                f"{what} dimension sizes differ: lhs dimension {left} has size {lhs[left]}, "
                f"rhs dimension {right} has size {rhs[right]}"
            )


def dot_general_shape(
    lhs: Shape,
    rhs: Shape,
    lhs_batch: Sequence[int],
    rhs_batch: Sequence[int],
    lhs_contract: Sequence[int],
    rhs_contract: Sequence[int],
) -> Shape:
    """Result shape in XLA order: batch, lhs free, rhs free."""
    _check_dot_side("lhs", len(lhs), lhs_batch, lhs_contract)
    _check_dot_side("rhs", len(rhs), rhs_batch, rhs_contract)
    _check_dot_pairs("batch", lhs, rhs, lhs_batch, rhs_batch)
    _check_dot_pairs("contracting", lhs, rhs, lhs_contract, rhs_contract)
    return (
        tuple(lhs[a] for a in lhs_batch)
        + tuple(lhs[a] for a in _free_axes(len(lhs), lhs_batch, lhs_contract))
        + tuple(rhs[a] for a in _free_axes(len(rhs), rhs_batch, rhs_contract))
    )


def slice_shape(
    operand: Shape, start: Sequence[int], limit: Sequence[int], stride: Sequence[int]
) -> Shape:
    """Size ceil((limit - start) / stride) per axis; 0 <= start <= limit <= dim, stride > 0."""
    for name, values in (("start", start), ("limit", limit), ("stride", stride)):
        _check_length(name, values, len(operand))
    for axis, (dim, lo, hi, step) in enumerate(zip(operand, start, limit, stride, strict=True)):
        if not 0 <= lo <= hi <= dim:
            raise VerifyException(
                f"slice bounds of dimension {axis} must satisfy 0 <= start <= limit <= {dim}, "
                f"got start {lo}, limit {hi}"
            )
        if step <= 0:
            raise VerifyException(f"slice stride of dimension {axis} must be > 0, got {step}")
    return tuple(-(-(hi - lo) // step) for lo, hi, step in zip(start, limit, stride, strict=True))


def pad_shape(
    operand: Shape, low: Sequence[int], high: Sequence[int], interior: Sequence[int]
) -> Shape:
    """Size low + d + (d - 1) * interior + high per axis (all paddings >= 0)."""
    for name, values in (("low", low), ("high", high), ("interior", interior)):
        _check_length(name, values, len(operand))
        if any(v < 0 for v in values):
            raise VerifyException(f"pad {name} {_fmt_shape(values)} must be non-negative")
    return tuple(
        lo + d + max(d - 1, 0) * inner + hi
        for d, lo, hi, inner in zip(operand, low, high, interior, strict=True)
    )


def concatenate_shape(shapes: Sequence[Shape], dimension: int) -> Shape:
    """Inputs of equal rank and equal sizes except along `dimension`, which add up."""
    if not shapes:
        raise VerifyException("concatenate needs at least one input")
    first = shapes[0]
    if not 0 <= dimension < len(first):
        raise VerifyException(
            f"concatenate dimension {dimension} is out of range for rank {len(first)}"
        )
    for index, shape in enumerate(shapes):
        if len(shape) != len(first):
            raise VerifyException(
                f"concatenate input #{index} has rank {len(shape)}, expected {len(first)}"
            )
        for axis, (a, b) in enumerate(zip(shape, first, strict=True)):
            if axis != dimension and a != b:
                raise VerifyException(
                    f"concatenate input #{index} has size {a} in dimension {axis}, expected {b}"
                )
    total = sum(shape[dimension] for shape in shapes)
    return first[:dimension] + (total,) + first[dimension + 1 :]


# --------------------------------------------------------------------------
# Construction and assembly helpers
# --------------------------------------------------------------------------


def _role_attributes(role: RoleSpec) -> dict[str, Attribute]:
    if role is None:
        return {}
    if not isinstance(role, cg.LinearizedRoleAttr):
        role = cg.LinearizedRoleAttr(role)
    return {cg.ROLE_ATTR_NAME: role}


def i64_array(values: Sequence[int]) -> DenseArrayBase:
    """An `array<i64: ...>` property."""
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def array_values(attr: DenseArrayBase) -> tuple[int, ...]:
    """The integers of an i64 array property."""
    return tuple(int(v) for v in cast(DenseArrayBase[IntegerType], attr).get_values())


def _print_int_list(printer: Printer, values: Sequence[int]) -> None:
    printer.print_string("[" + ", ".join(str(v) for v in values) + "]")


def _parse_int_list(parser: Parser) -> list[int]:
    return parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False)
    )


def _parse_keyword_list(parser: Parser, keyword: str) -> list[int]:
    """Parse `keyword = [i, j, ...]`."""
    parser.parse_keyword(keyword)
    parser.parse_punctuation("=")
    return _parse_int_list(parser)


def _print_attr_dict(printer: Printer, op: Operation) -> None:
    printer.print_op_attributes(op.attributes)


def _print_types_arrow(printer: Printer, inputs: Sequence[Attribute], output: Attribute) -> None:
    """Print ` : T -> U` (one input) or ` : (T1, T2) -> U`."""
    printer.print_string(" : ")
    if len(inputs) == 1:
        printer.print_attribute(inputs[0])
    else:
        printer.print_string("(")
        printer.print_list(inputs, printer.print_attribute)
        printer.print_string(")")
    printer.print_string(" -> ")
    printer.print_attribute(output)


def _parse_types_arrow(parser: Parser, count: int) -> tuple[list[Attribute], Attribute]:
    """Parse `: T -> U` (count == 1) or `: (T1, ..., Tn) -> U`."""
    parser.parse_punctuation(":")
    if count == 1 and parser.parse_optional_punctuation("(") is None:
        inputs: list[Attribute] = [parser.parse_type()]
    else:
        if count == 1:
            inputs = [parser.parse_type()]
            parser.parse_punctuation(")")
        else:
            inputs = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
    parser.parse_punctuation("->")
    return inputs, parser.parse_type()


def _print_same_type(printer: Printer, op: Operation, prefix: str = "") -> None:
    """Print `prefix %a, %b attr-dict : T` for an op whose operands and result share T."""
    printer.print_string(" " + prefix)
    printer.print_list(op.operands, printer.print_operand)
    _print_attr_dict(printer, op)
    printer.print_string(" : ")
    printer.print_attribute(op.operands[0].type)


def _parse_same_type(
    parser: Parser, count: int
) -> tuple[list[SSAValue], dict[str, Attribute], Attribute]:
    """Parse `%a, %b attr-dict : T` (count operands, all of type T)."""
    operands = [parser.parse_unresolved_operand()]
    for _ in range(count - 1):
        parser.parse_punctuation(",")
        operands.append(parser.parse_unresolved_operand())
    attributes = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    t = parser.parse_type()
    return _resolve(parser, operands, [t] * count), attributes, t


def _resolve(
    parser: Parser, operands: Sequence[UnresolvedOperand], types: Sequence[Attribute]
) -> list[SSAValue]:
    return list(parser.resolve_operands(operands, types, parser.pos))


# --------------------------------------------------------------------------
# Base classes
# --------------------------------------------------------------------------


class PrimOp(IRDLOperation, abc.ABC):
    """Base of every prim op: Pure, role-checked, with a type-verification hook."""

    traits = traits_def(Pure())

    def verify_(self) -> None:
        cg.verify_role(self)
        self.verify_types()

    def verify_types(self) -> None:
        """Check shapes and element types (overridden per op)."""


class ElementwiseBinaryOp(PrimOp, abc.ABC):
    """`lhs, rhs : T -> T`, printed `%a, %b : T`."""

    lhs = operand_def()
    rhs = operand_def()
    result = result_def()

    KIND: ClassVar[str] = "float or complex"

    def __init__(self, lhs: Value, rhs: Value, *, role: RoleSpec = None):
        super().__init__(
            operands=[lhs, rhs],
            result_types=[SSAValue.get(lhs).type],
            attributes=_role_attributes(role),
        )

    def verify_types(self) -> None:
        check_tensor("lhs", self.lhs.type, self.KIND)
        check_same_type("rhs", self.rhs.type, self.lhs.type)
        check_same_type("result", self.result.type, self.lhs.type)

    def print(self, printer: Printer) -> None:
        _print_same_type(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> ElementwiseBinaryOp:
        operands, attributes, t = _parse_same_type(parser, 2)
        return cls.create(operands=operands, result_types=[t], attributes=attributes)


class ElementwiseUnaryOp(PrimOp, abc.ABC):
    """`operand : T -> T`, printed `%x : T`."""

    operand = operand_def()
    result = result_def()

    def __init__(self, operand: Value, *, role: RoleSpec = None):
        super().__init__(
            operands=[operand],
            result_types=[SSAValue.get(operand).type],
            attributes=_role_attributes(role),
        )

    def verify_types(self) -> None:
        check_tensor("operand", self.operand.type)
        check_same_type("result", self.result.type, self.operand.type)

    def print(self, printer: Printer) -> None:
        _print_same_type(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> ElementwiseUnaryOp:
        operands, attributes, t = _parse_same_type(parser, 1)
        return cls.create(operands=operands, result_types=[t], attributes=attributes)


class TypeChangingUnaryOp(PrimOp, abc.ABC):
    """`operand : T -> U` with the result type printed."""

    operand = operand_def()
    result = result_def()

    assembly_format = "$operand attr-dict `:` type($operand) `->` type($result)"

    def __init__(self, operand: Value, result_type: Attribute, *, role: RoleSpec = None):
        super().__init__(
            operands=[operand], result_types=[result_type], attributes=_role_attributes(role)
        )


class ArrayPropsUnaryOp(PrimOp, abc.ABC):
    """`operand -> result` with i64-array properties, printed
    `%x, name = [..], ... attr-dict : T -> U`."""

    operand = operand_def()
    result = result_def()

    ARRAY_PROPS: ClassVar[tuple[str, ...]] = ()

    def _init(
        self, operand: Value, props: Sequence[Sequence[int]], result_type: Attribute, role: RoleSpec
    ) -> None:
        super().__init__(
            operands=[operand],
            result_types=[result_type],
            properties={
                name: i64_array(values)
                for name, values in zip(self.ARRAY_PROPS, props, strict=True)
            },
            attributes=_role_attributes(role),
        )

    def prop_values(self, name: str) -> tuple[int, ...]:
        return array_values(cast(DenseArrayBase, self.properties[name]))

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.operand)
        for name in self.ARRAY_PROPS:
            printer.print_string(f", {name} = ")
            _print_int_list(printer, self.prop_values(name))
        _print_attr_dict(printer, self)
        _print_types_arrow(printer, [self.operand.type], self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> ArrayPropsUnaryOp:
        operand = parser.parse_unresolved_operand()
        props: dict[str, Attribute] = {}
        for name in cls.ARRAY_PROPS:
            parser.parse_punctuation(",")
            props[name] = i64_array(_parse_keyword_list(parser, name))
        attributes = parser.parse_optional_attr_dict()
        inputs, output = _parse_types_arrow(parser, 1)
        return cls.create(
            operands=_resolve(parser, [operand], inputs),
            result_types=[output],
            properties=props,
            attributes=attributes,
        )

    def verify_operand_and_result(self) -> tuple[Shape, Shape]:
        """Check both types are value tensors of the same element type; return shapes."""
        check_tensor("operand", self.operand.type)
        check_tensor("result", self.result.type)
        check_same_element_type("result", self.result.type, self.operand.type)
        return shape_of(self.operand), shape_of(self.result)


# --------------------------------------------------------------------------
# Elementwise ops
# --------------------------------------------------------------------------


@irdl_op_definition
class AddOp(prim_ad.AddRules, ElementwiseBinaryOp):
    """Elementwise addition (also the accumulation op of `linear-transpose`)."""

    name = "prim.add"


@irdl_op_definition
class SubOp(prim_ad.SubRules, ElementwiseBinaryOp):
    name = "prim.sub"


@irdl_op_definition
class MulOp(prim_ad.MulRules, ElementwiseBinaryOp):
    name = "prim.mul"


@irdl_op_definition
class DivOp(prim_ad.DivRules, ElementwiseBinaryOp):
    name = "prim.div"


@irdl_op_definition
class MaximumOp(prim_ad.MaximumRules, ElementwiseBinaryOp):
    name = "prim.maximum"
    KIND: ClassVar[str] = "real"


@irdl_op_definition
class MinimumOp(prim_ad.MinimumRules, ElementwiseBinaryOp):
    name = "prim.minimum"
    KIND: ClassVar[str] = "real"


@irdl_op_definition
class NegOp(prim_ad.NegRules, ElementwiseUnaryOp):
    name = "prim.neg"


@irdl_op_definition
class ExpOp(prim_ad.ExpRules, ElementwiseUnaryOp):
    name = "prim.exp"


@irdl_op_definition
class LogOp(prim_ad.LogRules, ElementwiseUnaryOp):
    name = "prim.log"


@irdl_op_definition
class SinOp(prim_ad.SinRules, ElementwiseUnaryOp):
    name = "prim.sin"


@irdl_op_definition
class CosOp(prim_ad.CosRules, ElementwiseUnaryOp):
    name = "prim.cos"


@irdl_op_definition
class TanhOp(prim_ad.TanhRules, ElementwiseUnaryOp):
    name = "prim.tanh"


@irdl_op_definition
class SqrtOp(prim_ad.SqrtRules, ElementwiseUnaryOp):
    name = "prim.sqrt"


@irdl_op_definition
class ConjOp(prim_ad.ConjRules, ElementwiseUnaryOp):
    """Complex conjugate; the identity on real tensors."""

    name = "prim.conj"


@irdl_op_definition
class PowOp(prim_ad.PowRules, PrimOp):
    """`operand ** exponent` with a constant f64 exponent: `prim.pow %x, 2.5 : T`."""

    name = "prim.pow"

    operand = operand_def()
    result = result_def()
    exponent = prop_def(FloatAttr)

    def __init__(self, operand: Value, exponent: float | FloatAttr, *, role: RoleSpec = None):
        if not isinstance(exponent, FloatAttr):
            exponent = FloatAttr(float(exponent), f64)
        super().__init__(
            operands=[operand],
            result_types=[SSAValue.get(operand).type],
            properties={"exponent": exponent},
            attributes=_role_attributes(role),
        )

    @property
    def exponent_value(self) -> float:
        return float(self.exponent.value.data)

    def verify_types(self) -> None:
        check_tensor("operand", self.operand.type)
        check_same_type("result", self.result.type, self.operand.type)
        if self.exponent.type != f64:
            raise VerifyException(f"exponent must be an f64 attribute, got {self.exponent.type}")
        if not math.isfinite(self.exponent_value):
            raise VerifyException(f"exponent must be finite, got {self.exponent_value}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.operand)
        printer.print_string(f", {_float_literal(self.exponent_value)}")
        _print_attr_dict(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> PowOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        exponent = float(parser.parse_number())
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        return cls.create(
            operands=_resolve(parser, [operand], [t]),
            result_types=[t],
            properties={"exponent": FloatAttr(exponent, f64)},
            attributes=attributes,
        )


def _float_literal(value: float) -> str:
    """Shortest round-tripping MLIR float literal (always with a '.')."""
    text = repr(float(value))
    mantissa, _, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + ("e" + exponent if exponent else "")


@irdl_op_definition
class AbsOp(prim_ad.AbsRules, TypeChangingUnaryOp):
    """Absolute value; the result is the real type of the operand."""

    name = "prim.abs"

    def __init__(self, operand: Value, *, role: RoleSpec = None):
        super().__init__(operand, real_type(tensor_type_of(operand)), role=role)

    def verify_types(self) -> None:
        check_tensor("operand", self.operand.type)
        check_same_type("result", self.result.type, real_type(cast(TensorType, self.operand.type)))


class _ComplexPartOp(TypeChangingUnaryOp, abc.ABC):
    """Real or imaginary part of a complex tensor."""

    def __init__(self, operand: Value, *, role: RoleSpec = None):
        super().__init__(operand, real_type(tensor_type_of(operand)), role=role)

    def verify_types(self) -> None:
        check_tensor("operand", self.operand.type, "complex")
        check_same_type("result", self.result.type, real_type(cast(TensorType, self.operand.type)))


@irdl_op_definition
class RealOp(prim_ad.RealRules, _ComplexPartOp):
    name = "prim.real"


@irdl_op_definition
class ImagOp(prim_ad.ImagRules, _ComplexPartOp):
    name = "prim.imag"


@irdl_op_definition
class ComplexOp(prim_ad.ComplexRules, PrimOp):
    """`re + i*im`: `prim.complex %re, %im : tensor<3xf64> -> tensor<3xcomplex<f64>>`."""

    name = "prim.complex"

    re = operand_def()
    im = operand_def()
    result = result_def()

    assembly_format = "$re `,` $im attr-dict `:` type($re) `,` type($im) `->` type($result)"

    def __init__(self, re: Value, im: Value, *, role: RoleSpec = None):
        super().__init__(
            operands=[re, im],
            result_types=[complex_type(tensor_type_of(re))],
            attributes=_role_attributes(role),
        )

    def verify_types(self) -> None:
        check_tensor("re", self.re.type, "real")
        check_same_type("im", self.im.type, self.re.type)
        check_same_type("result", self.result.type, complex_type(cast(TensorType, self.re.type)))


@irdl_op_definition
class SelectOp(prim_ad.SelectRules, PrimOp):
    """`pred ? on_true : on_false` elementwise: `prim.select %p, %a, %b : tensor<3xi1>, T`."""

    name = "prim.select"

    pred = operand_def()
    on_true = operand_def()
    on_false = operand_def()
    result = result_def()

    def __init__(self, pred: Value, on_true: Value, on_false: Value, *, role: RoleSpec = None):
        super().__init__(
            operands=[pred, on_true, on_false],
            result_types=[SSAValue.get(on_true).type],
            attributes=_role_attributes(role),
        )

    def verify_types(self) -> None:
        check_tensor("pred", self.pred.type, "i1")
        check_tensor("on_true", self.on_true.type)
        check_same_type("on_false", self.on_false.type, self.on_true.type)
        check_same_type("result", self.result.type, self.on_true.type)
        check_shape("pred", shape_of(self.pred), shape_of(self.on_true))

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        _print_attr_dict(printer, self)
        printer.print_string(" : ")
        printer.print_list([self.pred.type, self.result.type], printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser) -> SelectOp:
        operands = parser.parse_comma_separated_list(
            parser.Delimiter.NONE, parser.parse_unresolved_operand
        )
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pred_type = parser.parse_type()
        parser.parse_punctuation(",")
        t = parser.parse_type()
        return cls.create(
            operands=_resolve(parser, operands, [pred_type, t, t]),
            result_types=[t],
            attributes=attributes,
        )


COMPARE_DIRECTIONS: tuple[str, ...] = ("eq", "ne", "lt", "le", "gt", "ge")


@irdl_op_definition
class CompareOp(prim_ad.CompareRules, PrimOp):
    """Elementwise comparison of real tensors to i1: `prim.compare lt, %a, %b : T`."""

    name = "prim.compare"

    lhs = operand_def()
    rhs = operand_def()
    result = result_def()
    direction = prop_def(StringAttr)

    def __init__(self, direction: str, lhs: Value, rhs: Value, *, role: RoleSpec = None):
        super().__init__(
            operands=[lhs, rhs],
            result_types=[with_element_type(tensor_type_of(lhs), i1)],
            properties={"direction": StringAttr(direction)},
            attributes=_role_attributes(role),
        )

    def verify_types(self) -> None:
        if self.direction.data not in COMPARE_DIRECTIONS:
            raise VerifyException(
                f"direction must be one of {', '.join(COMPARE_DIRECTIONS)}, "
                f"got '{self.direction.data}'"
            )
        check_tensor("lhs", self.lhs.type, "real")
        check_same_type("rhs", self.rhs.type, self.lhs.type)
        check_same_type(
            "result", self.result.type, with_element_type(cast(TensorType, self.lhs.type), i1)
        )

    def print(self, printer: Printer) -> None:
        _print_same_type(printer, self, prefix=f"{self.direction.data}, ")

    @classmethod
    def parse(cls, parser: Parser) -> CompareOp:
        direction = parser.parse_identifier(" (comparison direction)")
        parser.parse_punctuation(",")
        operands, attributes, t = _parse_same_type(parser, 2)
        result_type = with_element_type(t, i1) if isinstance(t, TensorType) else t
        return cls.create(
            operands=operands,
            result_types=[result_type],
            properties={"direction": StringAttr(direction)},
            attributes=attributes,
        )


@irdl_op_definition
class ConvertOp(prim_ad.ConvertRules, TypeChangingUnaryOp):
    """Element type conversion among the four value types (complex -> real keeps
    the real part)."""

    name = "prim.convert"

    def __init__(self, operand: Value, element_type: Attribute, *, role: RoleSpec = None):
        super().__init__(
            operand, with_element_type(tensor_type_of(operand), element_type), role=role
        )

    def verify_types(self) -> None:
        check_tensor("operand", self.operand.type)
        check_tensor("result", self.result.type)
        check_shape("result", shape_of(self.result), shape_of(self.operand))


@irdl_op_definition
class ConstantOp(prim_ad.ConstantRules, PrimOp):
    """A dense constant: `prim.constant dense<[1.0, 2.0]> : tensor<2xf64>`."""

    name = "prim.constant"

    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def()

    def __init__(self, value: DenseIntOrFPElementsAttr, *, role: RoleSpec = None):
        super().__init__(
            result_types=[value.type],
            properties={"value": value},
            attributes=_role_attributes(role),
        )

    @staticmethod
    def from_value(
        value: object, tensor_type: TensorType | None = None, *, role: RoleSpec = None
    ) -> ConstantOp:
        """A constant from an ndarray or scalar, cast (and broadcast) to `tensor_type`,
        which defaults to the array's own shape and dtype (Python floats -> f64)."""
        array = np.asarray(value)
        if tensor_type is None:
            if array.dtype.kind in "iub":
                array = array.astype(np.float64)
            tensor_type = TensorType(element_type_of_dtype(array.dtype), array.shape)
        shape = tuple(tensor_type.get_shape())
        dtype = tensor_dtype(tensor_type).newbyteorder("<")
        data = np.ascontiguousarray(np.broadcast_to(array, shape).astype(dtype))
        attr = DenseIntOrFPElementsAttr(
            cast(TensorType[AnyDenseElement], tensor_type), BytesAttr(data.tobytes())
        )
        return ConstantOp(attr, role=role)

    def to_array(self) -> np.ndarray:
        """The value as an ndarray of the result's dtype and shape."""
        return dense_to_array(self.value)

    def verify_types(self) -> None:
        check_tensor("result", self.result.type)
        check_same_type("value", self.value.type, self.result.type)

    def print(self, printer: Printer) -> None:
        _print_attr_dict(printer, self)
        printer.print_string(" ")
        printer.print_attribute(self.value)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        attributes = parser.parse_optional_attr_dict()
        pos = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error("expected a dense elements attribute", pos, parser.pos)
        return cls.create(
            result_types=[value.type], properties={"value": value}, attributes=attributes
        )


def dense_to_array(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The ndarray of a dense attribute (splats broadcast to the full shape)."""
    shape = tuple(attr.get_shape())
    dtype = numpy_dtype(attr.get_element_type()).newbyteorder("<")
    flat = np.frombuffer(attr.data.data, dtype=dtype).astype(dtype.newbyteorder("="))
    if flat.size == 1:
        return np.broadcast_to(flat.reshape(()), shape).copy()
    return flat.reshape(shape)


# --------------------------------------------------------------------------
# Shape ops
# --------------------------------------------------------------------------


@irdl_op_definition
class BroadcastInDimOp(prim_ad.BroadcastInDimRules, ArrayPropsUnaryOp):
    """Operand axis i goes to result axis dims[i]:
    `prim.broadcast_in_dim %x, dims = [1] : tensor<3xf64> -> tensor<2x3xf64>`."""

    name = "prim.broadcast_in_dim"

    dims = prop_def(DenseArrayBase.constr(i64))
    ARRAY_PROPS: ClassVar[tuple[str, ...]] = ("dims",)

    def __init__(
        self, operand: Value, dims: Sequence[int], result_type: Attribute, *, role: RoleSpec = None
    ):
        self._init(operand, [dims], result_type, role)

    def verify_types(self) -> None:
        operand, result = self.verify_operand_and_result()
        broadcast_in_dim_check(operand, self.prop_values("dims"), result)


class _ReduceOp(ArrayPropsUnaryOp, abc.ABC):
    """Reduction over sorted unique `axes`, which are removed from the shape."""

    axes = prop_def(DenseArrayBase.constr(i64))
    ARRAY_PROPS: ClassVar[tuple[str, ...]] = ("axes",)
    KIND: ClassVar[str] = "float or complex"

    def __init__(self, operand: Value, axes: Sequence[int], *, role: RoleSpec = None):
        operand_type = tensor_type_of(operand)
        shape = reduce_shape(tuple(operand_type.get_shape()), axes)
        self._init(operand, [axes], TensorType(operand_type.get_element_type(), shape), role)

    def verify_types(self) -> None:
        check_tensor("operand", self.operand.type, self.KIND)
        operand, result = self.verify_operand_and_result()
        check_shape("result", result, reduce_shape(operand, self.prop_values("axes")))


@irdl_op_definition
class ReduceSumOp(prim_ad.ReduceSumRules, _ReduceOp):
    name = "prim.reduce_sum"


@irdl_op_definition
class ReduceMaxOp(prim_ad.ReduceMaxRules, _ReduceOp):
    name = "prim.reduce_max"
    KIND: ClassVar[str] = "real"


@irdl_op_definition
class ReshapeOp(prim_ad.ReshapeRules, TypeChangingUnaryOp):
    """Same elements (row-major), new shape: `prim.reshape %x : T -> U`."""

    name = "prim.reshape"

    def __init__(self, operand: Value, shape: Sequence[int], *, role: RoleSpec = None):
        element = tensor_type_of(operand).get_element_type()
        super().__init__(operand, TensorType(element, list(shape)), role=role)

    def verify_types(self) -> None:
        check_tensor("operand", self.operand.type)
        check_tensor("result", self.result.type)
        check_same_element_type("result", self.result.type, self.operand.type)
        before, after = math.prod(shape_of(self.operand)), math.prod(shape_of(self.result))
        if before != after:
            raise VerifyException(f"reshape changes the element count from {before} to {after}")


@irdl_op_definition
class TransposeOp(prim_ad.TransposeRules, ArrayPropsUnaryOp):
    """`result.shape[i] = operand.shape[permutation[i]]`."""

    name = "prim.transpose"

    permutation = prop_def(DenseArrayBase.constr(i64))
    ARRAY_PROPS: ClassVar[tuple[str, ...]] = ("permutation",)

    def __init__(self, operand: Value, permutation: Sequence[int], *, role: RoleSpec = None):
        operand_type = tensor_type_of(operand)
        shape = transpose_shape(tuple(operand_type.get_shape()), permutation)
        self._init(operand, [permutation], TensorType(operand_type.get_element_type(), shape), role)

    def verify_types(self) -> None:
        operand, result = self.verify_operand_and_result()
        check_shape("result", result, transpose_shape(operand, self.prop_values("permutation")))


DOT_PROPS: tuple[str, ...] = ("lhs_batch", "rhs_batch", "lhs_contract", "rhs_contract")


@irdl_op_definition
class DotGeneralOp(prim_ad.DotGeneralRules, PrimOp):
    """Batched tensor contraction, result axes batch, lhs free, rhs free:
    `prim.dot_general %l, %r, batch = [0] x [0], contract = [2] x [1] : (T1, T2) -> T3`."""

    name = "prim.dot_general"

    lhs = operand_def()
    rhs = operand_def()
    result = result_def()
    lhs_batch = prop_def(DenseArrayBase.constr(i64))
    rhs_batch = prop_def(DenseArrayBase.constr(i64))
    lhs_contract = prop_def(DenseArrayBase.constr(i64))
    rhs_contract = prop_def(DenseArrayBase.constr(i64))

    def __init__(
        self,
        lhs: Value,
        rhs: Value,
        *,
        lhs_batch: Sequence[int] = (),
        rhs_batch: Sequence[int] = (),
        lhs_contract: Sequence[int] = (),
        rhs_contract: Sequence[int] = (),
        role: RoleSpec = None,
    ):
        lists = (lhs_batch, rhs_batch, lhs_contract, rhs_contract)
        shape = dot_general_shape(shape_of(lhs), shape_of(rhs), *lists)
        element = tensor_type_of(lhs).get_element_type()
        super().__init__(
            operands=[lhs, rhs],
            result_types=[TensorType(element, shape)],
            properties={name: i64_array(v) for name, v in zip(DOT_PROPS, lists, strict=True)},
            attributes=_role_attributes(role),
        )

    def dims(self) -> tuple[tuple[int, ...], ...]:
        """(lhs_batch, rhs_batch, lhs_contract, rhs_contract)."""
        return tuple(array_values(getattr(self, name)) for name in DOT_PROPS)

    def verify_types(self) -> None:
        check_tensor("lhs", self.lhs.type)
        check_tensor("rhs", self.rhs.type)
        check_tensor("result", self.result.type)
        check_same_element_type("rhs", self.rhs.type, self.lhs.type)
        check_same_element_type("result", self.result.type, self.lhs.type)
        expected = dot_general_shape(shape_of(self.lhs), shape_of(self.rhs), *self.dims())
        check_shape("result", shape_of(self.result), expected)

    def print(self, printer: Printer) -> None:
        lb, rb, lc, rc = self.dims()
        printer.print_string(" ")
        printer.print_operand(self.lhs)
        printer.print_string(", ")
        printer.print_operand(self.rhs)
        for keyword, left, right in (("batch", lb, rb), ("contract", lc, rc)):
            printer.print_string(f", {keyword} = ")
            _print_int_list(printer, left)
            printer.print_string(" x ")
            _print_int_list(printer, right)
        _print_attr_dict(printer, self)
        _print_types_arrow(printer, [self.lhs.type, self.rhs.type], self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> DotGeneralOp:
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        lists: list[list[int]] = []
        for keyword in ("batch", "contract"):
            parser.parse_punctuation(",")
            lists.append(_parse_keyword_list(parser, keyword))
            parser.parse_keyword("x")
            lists.append(_parse_int_list(parser))
        lb, rb, lc, rc = lists
        attributes = parser.parse_optional_attr_dict()
        inputs, output = _parse_types_arrow(parser, 2)
        return cls.create(
            operands=_resolve(parser, [lhs, rhs], inputs),
            result_types=[output],
            properties={
                name: i64_array(v) for name, v in zip(DOT_PROPS, (lb, rb, lc, rc), strict=True)
            },
            attributes=attributes,
        )


@irdl_op_definition
class SliceOp(prim_ad.SliceRules, PrimOp):
    """Strided slice: `prim.slice %x [1:5:2, 0:3:1] : tensor<8x3xf64> -> tensor<2x3xf64>`."""

    name = "prim.slice"

    operand = operand_def()
    result = result_def()
    start = prop_def(DenseArrayBase.constr(i64))
    limit = prop_def(DenseArrayBase.constr(i64))
    stride = prop_def(DenseArrayBase.constr(i64))

    def __init__(
        self,
        operand: Value,
        start: Sequence[int],
        limit: Sequence[int],
        stride: Sequence[int] | None = None,
        *,
        role: RoleSpec = None,
    ):
        if stride is None:
            stride = [1] * len(start)
        operand_type = tensor_type_of(operand)
        shape = slice_shape(tuple(operand_type.get_shape()), start, limit, stride)
        super().__init__(
            operands=[operand],
            result_types=[TensorType(operand_type.get_element_type(), shape)],
            properties={
                "start": i64_array(start),
                "limit": i64_array(limit),
                "stride": i64_array(stride),
            },
            attributes=_role_attributes(role),
        )

    def bounds(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """(start, limit, stride)."""
        return array_values(self.start), array_values(self.limit), array_values(self.stride)

    def verify_types(self) -> None:
        check_tensor("operand", self.operand.type)
        check_tensor("result", self.result.type)
        check_same_element_type("result", self.result.type, self.operand.type)
        check_shape(
            "result", shape_of(self.result), slice_shape(shape_of(self.operand), *self.bounds())
        )

    def print(self, printer: Printer) -> None:
        start, limit, stride = self.bounds()
        ranges = ", ".join(f"{a}:{b}:{c}" for a, b, c in zip(start, limit, stride, strict=False))
        printer.print_string(" ")
        printer.print_operand(self.operand)
        printer.print_string(f" [{ranges}]")
        _print_attr_dict(printer, self)
        _print_types_arrow(printer, [self.operand.type], self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> SliceOp:
        operand = parser.parse_unresolved_operand()
        triples = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: _parse_slice_triple(parser)
        )
        attributes = parser.parse_optional_attr_dict()
        inputs, output = _parse_types_arrow(parser, 1)
        return cls.create(
            operands=_resolve(parser, [operand], inputs),
            result_types=[output],
            properties={
                name: i64_array([t[k] for t in triples])
                for k, name in enumerate(("start", "limit", "stride"))
            },
            attributes=attributes,
        )


def _parse_slice_triple(parser: Parser) -> tuple[int, int, int]:
    """Parse `start:limit:stride`."""
    start = parser.parse_integer(allow_boolean=False)
    parser.parse_punctuation(":")
    limit = parser.parse_integer(allow_boolean=False)
    parser.parse_punctuation(":")
    stride = parser.parse_integer(allow_boolean=False)
    return start, limit, stride


@irdl_op_definition
class PadOp(prim_ad.PadRules, ArrayPropsUnaryOp):
    """Zero padding with interior padding:
    `prim.pad %x, low = [1], high = [0], interior = [2] : T -> U`."""

    name = "prim.pad"

    low = prop_def(DenseArrayBase.constr(i64))
    high = prop_def(DenseArrayBase.constr(i64))
    interior = prop_def(DenseArrayBase.constr(i64))
    ARRAY_PROPS: ClassVar[tuple[str, ...]] = ("low", "high", "interior")

    def __init__(
        self,
        operand: Value,
        low: Sequence[int],
        high: Sequence[int],
        interior: Sequence[int] | None = None,
        *,
        role: RoleSpec = None,
    ):
        if interior is None:
            interior = [0] * len(low)
        operand_type = tensor_type_of(operand)
        shape = pad_shape(tuple(operand_type.get_shape()), low, high, interior)
        self._init(
            operand,
            [low, high, interior],
            TensorType(operand_type.get_element_type(), shape),
            role,
        )

    def paddings(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """(low, high, interior)."""
        return self.prop_values("low"), self.prop_values("high"), self.prop_values("interior")

    def verify_types(self) -> None:
        operand, result = self.verify_operand_and_result()
        check_shape("result", result, pad_shape(operand, *self.paddings()))


@irdl_op_definition
class ConcatenateOp(prim_ad.ConcatenateRules, PrimOp):
    """Join along `dimension`:
    `prim.concatenate %a, %b, dimension = 0 : (T1, T2) -> U`."""

    name = "prim.concatenate"

    inputs = var_operand_def()
    result = result_def()
    dimension = prop_def(IntegerAttr[IntegerType])

    def __init__(self, inputs: Sequence[Value], dimension: int, *, role: RoleSpec = None):
        if not inputs:
            raise VerifyException("concatenate needs at least one input")
        shape = concatenate_shape([shape_of(v) for v in inputs], dimension)
        element = tensor_type_of(inputs[0]).get_element_type()
        super().__init__(
            operands=[list(inputs)],
            result_types=[TensorType(element, shape)],
            properties={"dimension": IntegerAttr(dimension, i64)},
            attributes=_role_attributes(role),
        )

    @property
    def dimension_value(self) -> int:
        return int(self.dimension.value.data)

    def verify_types(self) -> None:
        check_tensor("result", self.result.type)
        for index, value in enumerate(self.inputs):
            check_tensor(f"input #{index}", value.type)
            check_same_element_type(f"input #{index}", value.type, self.result.type)
        expected = concatenate_shape([shape_of(v) for v in self.inputs], self.dimension_value)
        check_shape("result", shape_of(self.result), expected)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.inputs, printer.print_operand)
        printer.print_string(f", dimension = {self.dimension_value}")
        _print_attr_dict(printer, self)
        _print_types_arrow(printer, [v.type for v in self.inputs], self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> ConcatenateOp:
        operands = [parser.parse_unresolved_operand()]
        parser.parse_punctuation(",")
        while parser.parse_optional_keyword("dimension") is None:
            operands.append(parser.parse_unresolved_operand())
            parser.parse_punctuation(",")
        parser.parse_punctuation("=")
        dimension = parser.parse_integer(allow_boolean=False)
        attributes = parser.parse_optional_attr_dict()
        inputs, output = _parse_types_arrow(parser, len(operands))
        return cls.create(
            operands=_resolve(parser, operands, inputs),
            result_types=[output],
            properties={"dimension": IntegerAttr(dimension, i64)},
            attributes=attributes,
        )


PRIM_OPS: tuple[type[PrimOp], ...] = (
    AddOp,
    SubOp,
    MulOp,
    DivOp,
    MaximumOp,
    MinimumOp,
    NegOp,
    ExpOp,
    LogOp,
    SinOp,
    CosOp,
    TanhOp,
    SqrtOp,
    ConjOp,
    PowOp,
    AbsOp,
    RealOp,
    ImagOp,
    ComplexOp,
    SelectOp,
    CompareOp,
    ConvertOp,
    ConstantOp,
    BroadcastInDimOp,
    ReduceSumOp,
    ReduceMaxOp,
    ReshapeOp,
    TransposeOp,
    DotGeneralOp,
    SliceOp,
    PadOp,
    ConcatenateOp,
)

PRIM = Dialect("prim", list(PRIM_OPS), [])
