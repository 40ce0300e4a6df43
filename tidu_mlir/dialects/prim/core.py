"""The linear core of `prim`: the ops whose AD rules emit only ops of this file
(and `prim.add`), and the rule helpers that emit them.

sub, neg, mul, conj, real, imag, complex, convert, select, constant,
broadcast_in_dim, reduce_sum, reshape and transpose. Every rule of the files
above (elementwise, structural, contraction) builds on these.

AD conventions of every prim rule (docs/complex.md):
* JVP is the full R-linear derivative; for a holomorphic f it is `f'(z)·dz`.
* Transpose is the adjoint for the real inner product `<a, b> = Re(conj(a)·b)`:
  multiplication by a fixed `a` transposes to multiplication by `conj(a)`,
  `conj` to `conj`, `real` to `complex(ct, 0)`, `imag` to `complex(0, ct)`.
* Fixed factors (`cos(x)` for `sin`, ...) are computed on the primal side and
  enter the linear graph only as the fixed operand of a `mul`/`div`.
* A symbolic-zero operand that an op needs (a branch of `select`, a part of
  `complex`, an input of `concatenate`) is a zero constant, a fixed operand;
  `is_linear_in` accepts such a fixed operand only when it is a zero constant
  (possibly broadcast), so the op stays linear.
* Rules emit ops only through `ctx.emit`, reference primal operands and
  results directly (never copies), and every op they emit has rules itself
  (closure), so derivatives of any order work.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, cast

import numpy as np
from xdsl.dialects.builtin import (
    AnyDenseElement,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from tidu_mlir.dialects.prim.base import (
    AddOp,
    ArrayPropsUnaryOp,
    Elementwise,
    ElementwiseBinaryOp,
    ElementwiseUnaryOp,
    NotLinear,
    PrimOp,
    ReduceOp,
    TypeChangingUnaryOp,
    UnaryLinear,
    Values,
    broadcast_to_batch,
    emit_value,
    for_active,
    shift_axes,
)
from tidu_mlir.dialects.prim.shapes import broadcast_in_dim_check, kept_axes, transpose_shape
from tidu_mlir.dialects.prim.syntax import (
    RoleSpec,
    print_attr_dict,
    resolve,
    role_attributes,
)
from tidu_mlir.dialects.prim.types import (
    Value,
    check_same_element_type,
    check_same_type,
    check_shape,
    check_tensor,
    complex_type,
    element_type_of_dtype,
    is_complex,
    real_type,
    shape_of,
    tensor_dtype,
    tensor_type_of,
    with_element_type,
)
from tidu_mlir.fast_syntax import build_operation
from tidu_mlir.interfaces import BatchContext, OneHot, RuleContext, active_mask_of
from tidu_mlir.types import numpy_dtype

# --------------------------------------------------------------------------
# Rule helpers
# --------------------------------------------------------------------------


def full_like(ctx: RuleContext, value: float | complex, t: TensorType) -> SSAValue:
    """A constant tensor of type `t` filled with `value`: a scalar constant,
    broadcast (so a zero stays recognisable and costs no storage)."""
    scalar = TensorType(t.get_element_type(), [])
    constant = emit_value(ctx, ConstantOp.from_value(np.asarray(value), scalar))
    if not t.get_shape():
        return constant
    return emit_value(ctx, BroadcastInDimOp(constant, [], t))


def zeros_like(ctx: RuleContext, value: SSAValue) -> SSAValue:
    """The zero tensor of `value`'s type (a fixed operand standing for a symbolic zero)."""
    return full_like(ctx, 0.0, tensor_type_of(value))


def or_zeros(ctx: RuleContext, tangent: SSAValue | None, like: SSAValue) -> SSAValue:
    """`tangent`, or the zero tensor of `like`'s type for a symbolic zero."""
    return tangent if tangent is not None else zeros_like(ctx, like)


def conj_if_complex(ctx: RuleContext, value: SSAValue) -> SSAValue:
    """`conj(value)` for a complex tensor, `value` itself for a real one."""
    return emit_value(ctx, ConjOp(value)) if is_complex(value.type) else value


def scale(ctx: RuleContext, factor: SSAValue, tangent: SSAValue | None) -> SSAValue:
    """`factor · tangent` with a fixed factor (the JVP of a holomorphic unary op)."""
    assert tangent is not None
    return emit_value(ctx, MulOp(factor, tangent))


def is_zero_constant(value: SSAValue) -> bool:
    """Whether `value` is a zero constant, possibly broadcast, reshaped,
    transposed or converted (a fixed operand that keeps an op linear)."""
    owner = value.owner
    while isinstance(owner, BroadcastInDimOp | ReshapeOp | TransposeOp | ConvertOp):
        owner = owner.operand.owner
    return isinstance(owner, ConstantOp) and not owner.to_array().any()


def active_or_zero(op: Operation, active_mask: Sequence[bool], first: int = 0) -> bool:
    """Operands from `first` on are active or zero constants (and some is active)."""
    operands = op.operands[first:]
    mask = active_mask[first:]
    return any(mask) and all(
        active or is_zero_constant(value) for active, value in zip(mask, operands, strict=True)
    )


def inverse_permutation(permutation: Sequence[int]) -> list[int]:
    """The permutation undoing `permutation`."""
    return [int(i) for i in np.argsort(permutation)]


def sum_to_shape(
    ctx: RuleContext, ct: SSAValue, dims: Sequence[int], operand_type: TensorType
) -> SSAValue:
    """The transpose of `broadcast_in_dim(operand, dims)`: sum `ct` over the
    result axes the operand does not occupy and over the size-1 operand axes
    that were expanded, then reshape to the operand's shape."""
    result_shape = shape_of(ct)
    operand_shape = tuple(operand_type.get_shape())
    expanded = [
        dim
        for size, dim in zip(operand_shape, dims, strict=True)
        if size == 1 and result_shape[dim] != 1
    ]
    axes = sorted(set(kept_axes(len(result_shape), dims)) | set(expanded))
    summed = emit_value(ctx, ReduceSumOp(ct, axes)) if axes else ct
    if shape_of(summed) != operand_shape:
        summed = emit_value(ctx, ReshapeOp(summed, operand_shape))
    return summed


def select_jvp(ctx: RuleContext, pred: SSAValue, tangents: Values, like: SSAValue) -> SSAValue:
    """select(pred, da, db) with a zero constant for a missing tangent."""
    da, db = tangents
    return emit_value(ctx, SelectOp(pred, or_zeros(ctx, da, like), or_zeros(ctx, db, like)))


# --------------------------------------------------------------------------
# Elementwise arithmetic
# --------------------------------------------------------------------------


@irdl_op_definition
class SubOp(ElementwiseBinaryOp):
    """Elementwise a - b. d(a - b) = da - db; transpose: (ct, -ct)."""

    name = "prim.sub"
    KIND: ClassVar[str] = "numeric"

    reference = staticmethod(np.subtract)

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        left, right = tangents
        if right is None:
            return [left]
        if left is None:
            return [emit_value(ctx, NegOp(right))]
        return [emit_value(ctx, SubOp(left, right))]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        (ct,) = cotangents
        assert ct is not None
        if not active_mask_of(self)[1]:
            return [ct, None]
        return for_active(self, [ct, emit_value(ctx, NegOp(ct))])

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return all(active_mask)


def product_jvp(
    ctx: RuleContext,
    op: Operation,
    tangents: Values,
    product: Callable[[SSAValue, SSAValue], Operation],
) -> SSAValue:
    """The JVP of a product bilinear in `op`'s two operands: `a·db + da·b`,
    emitted in that order (the fixed operand first), one term when a tangent
    is a symbolic zero."""
    lhs, rhs = op.operands
    dlhs, drhs = tangents
    terms: list[SSAValue] = []
    if drhs is not None:
        terms.append(emit_value(ctx, product(lhs, drhs)))
    if dlhs is not None:
        terms.append(emit_value(ctx, product(dlhs, rhs)))
    if len(terms) == 1:
        return terms[0]
    return emit_value(ctx, AddOp(terms[0], terms[1]))


@irdl_op_definition
class MulOp(ElementwiseBinaryOp):
    """Elementwise a·b. d(a·b) = a·db + da·b, emitted in that order; linear in
    exactly one operand; transpose: conj(fixed)·ct."""

    name = "prim.mul"
    KIND: ClassVar[str] = "numeric"

    reference = staticmethod(np.multiply)

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        return [product_jvp(ctx, self, tangents, MulOp)]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        (ct,) = cotangents
        assert ct is not None
        lhs_active = active_mask_of(self)[0]
        fixed = self.operands[1] if lhs_active else self.operands[0]
        contribution = emit_value(ctx, MulOp(conj_if_complex(ctx, fixed), ct))
        return [contribution, None] if lhs_active else [None, contribution]

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return sum(active_mask) == 1


@irdl_op_definition
class NegOp(UnaryLinear, ElementwiseUnaryOp):
    """Elementwise -x. d(-x) = -dx; transpose: -ct."""

    name = "prim.neg"
    KIND: ClassVar[str] = "numeric"

    reference = staticmethod(np.negative)

    def apply_to(self, tangent: SSAValue) -> Operation:
        return NegOp(tangent)

    def emit_adjoint(self, ctx: RuleContext, cotangent: SSAValue) -> SSAValue:
        return emit_value(ctx, NegOp(cotangent))


@irdl_op_definition
class ConjOp(UnaryLinear, ElementwiseUnaryOp):
    """Complex conjugate; the identity on real tensors.
    d conj(z) = conj(dz) (R-linear); transpose: conj(ct)."""

    name = "prim.conj"

    reference = staticmethod(np.conj)

    def apply_to(self, tangent: SSAValue) -> Operation:
        return ConjOp(tangent)

    def emit_adjoint(self, ctx: RuleContext, cotangent: SSAValue) -> SSAValue:
        return emit_value(ctx, ConjOp(cotangent))


# --------------------------------------------------------------------------
# Complex parts and conversions
# --------------------------------------------------------------------------


class ComplexPartOp(Elementwise, UnaryLinear, TypeChangingUnaryOp):
    """Real or imaginary part of a complex tensor."""

    def __init__(self, operand: Value, *, role: RoleSpec = None):
        super().__init__(operand, real_type(tensor_type_of(operand)), role=role)

    def verify_types(self) -> None:
        check_tensor("operand", self.operand.type, "complex")
        check_same_type("result", self.result.type, real_type(cast(TensorType, self.operand.type)))


@irdl_op_definition
class RealOp(ComplexPartOp):
    """d Re(z) = Re(dz); transpose: complex(ct, 0)."""

    name = "prim.real"

    reference = staticmethod(np.real)

    def apply_to(self, tangent: SSAValue) -> Operation:
        return RealOp(tangent)

    def emit_adjoint(self, ctx: RuleContext, cotangent: SSAValue) -> SSAValue:
        return emit_value(ctx, ComplexOp(cotangent, zeros_like(ctx, cotangent)))


@irdl_op_definition
class ImagOp(ComplexPartOp):
    """d Im(z) = Im(dz); transpose: complex(0, ct)."""

    name = "prim.imag"

    reference = staticmethod(np.imag)

    def apply_to(self, tangent: SSAValue) -> Operation:
        return ImagOp(tangent)

    def emit_adjoint(self, ctx: RuleContext, cotangent: SSAValue) -> SSAValue:
        return emit_value(ctx, ComplexOp(zeros_like(ctx, cotangent), cotangent))


@irdl_op_definition
class ComplexOp(Elementwise):
    """`re + i*im`: `prim.complex %re, %im : tensor<3xf64> -> tensor<3xcomplex<f64>>`.
    d complex(re, im) = complex(dre, dim) (zeros for a missing part);
    transpose: (Re ct, Im ct). Linear when each fixed part is a zero constant."""

    name = "prim.complex"

    re = operand_def()
    im = operand_def()
    result = result_def()

    assembly_format = "$re `,` $im attr-dict `:` type($re) `,` type($im) `->` type($result)"

    def __init__(self, re: Value, im: Value, *, role: RoleSpec = None):
        super().__init__(
            operands=[re, im],
            result_types=[complex_type(tensor_type_of(re))],
            attributes=role_attributes(role),
        )

    def verify_types(self) -> None:
        check_tensor("re", self.re.type, "real")
        check_same_type("im", self.im.type, self.re.type)
        check_same_type("result", self.result.type, complex_type(cast(TensorType, self.re.type)))

    @staticmethod
    def reference(re: np.ndarray, im: np.ndarray) -> np.ndarray:
        """Assembled part by part (`re + 1j * im` would turn an infinite `im`
        into a nan real part)."""
        re, im = np.asarray(re), np.asarray(im)
        out = np.empty(np.broadcast_shapes(re.shape, im.shape), np.result_type(re, im, 1j))
        out.real = re
        out.imag = im
        return out

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        re, im = self.operands
        dre, dim = tangents
        return [emit_value(ctx, ComplexOp(or_zeros(ctx, dre, re), or_zeros(ctx, dim, im)))]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        (ct,) = cotangents
        assert ct is not None
        re_active, im_active = active_mask_of(self)
        return [
            emit_value(ctx, RealOp(ct)) if re_active else None,
            emit_value(ctx, ImagOp(ct)) if im_active else None,
        ]

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return active_or_zero(self, active_mask)


@irdl_op_definition
class ConvertOp(Elementwise, UnaryLinear, TypeChangingUnaryOp):
    """Element type conversion among the four value types (complex -> real keeps
    the real part), or from i1 (a comparison result: false -> 0, true -> 1; never
    active, since booleans have no tangent). d convert(x) = convert(dx). Transpose: convert back;
    real -> complex transposes to the real part, complex -> real (the real
    part) to complex(ct, 0)."""

    name = "prim.convert"

    def __init__(self, operand: Value, element_type: Attribute, *, role: RoleSpec = None):
        super().__init__(
            operand, with_element_type(tensor_type_of(operand), element_type), role=role
        )

    def verify_types(self) -> None:
        check_tensor("operand", self.operand.type, "any")
        check_tensor("result", self.result.type, "any")
        check_shape("result", shape_of(self.result), shape_of(self.operand))

    @staticmethod
    def reference(x: np.ndarray, *, dtype: np.dtype) -> np.ndarray:
        x = np.asarray(x)
        if np.iscomplexobj(x) and np.dtype(dtype).kind != "c":
            x = np.real(x)
        return x.astype(dtype)

    def reference_params(self) -> dict[str, Any]:
        return {"dtype": tensor_dtype(self.result.type)}

    def apply_to(self, tangent: SSAValue) -> Operation:
        return ConvertOp(tangent, tensor_type_of(self.results[0]).get_element_type())

    def emit_adjoint(self, ctx: RuleContext, cotangent: SSAValue) -> SSAValue:
        operand_type = tensor_type_of(self.operands[0])
        if is_complex(cotangent.type) and not is_complex(operand_type):
            cotangent = emit_value(ctx, RealOp(cotangent))
        if cotangent.type == operand_type:
            return cotangent
        return emit_value(ctx, ConvertOp(cotangent, operand_type.get_element_type()))


# --------------------------------------------------------------------------
# Selection and constants
# --------------------------------------------------------------------------


@irdl_op_definition
class SelectOp(Elementwise):
    """`pred ? on_true : on_false` elementwise: `prim.select %p, %a, %b : tensor<3xi1>, T`.
    d select(p, a, b) = select(p, da, db); transpose: (select(p, ct, 0),
    select(p, 0, ct)). Linear in the branches when a fixed branch is a zero constant."""

    name = "prim.select"

    pred = operand_def()
    on_true = operand_def()
    on_false = operand_def()
    result = result_def()

    def __init__(self, pred: Value, on_true: Value, on_false: Value, *, role: RoleSpec = None):
        super().__init__(
            operands=[pred, on_true, on_false],
            result_types=[SSAValue.get(on_true).type],
            attributes=role_attributes(role),
        )

    def verify_types(self) -> None:
        check_tensor("pred", self.pred.type, "i1")
        check_tensor("on_true", self.on_true.type, "any")
        check_same_type("on_false", self.on_false.type, self.on_true.type)
        check_same_type("result", self.result.type, self.on_true.type)
        check_shape("pred", shape_of(self.pred), shape_of(self.on_true))

    reference = staticmethod(np.where)

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        pred, on_true, _ = self.operands
        if tangents[1] is None and tangents[2] is None:
            return [None]
        return [select_jvp(ctx, pred, tangents[1:], on_true)]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        (ct,) = cotangents
        assert ct is not None
        pred = self.operands[0]
        _, true_active, false_active = active_mask_of(self)
        zero = zeros_like(ctx, ct)
        return [
            None,
            emit_value(ctx, SelectOp(pred, ct, zero)) if true_active else None,
            emit_value(ctx, SelectOp(pred, zero, ct)) if false_active else None,
        ]

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return not active_mask[0] and active_or_zero(self, active_mask, first=1)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        print_attr_dict(printer, self)
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
        return build_operation(
            cls, resolve(parser, operands, [pred_type, t, t]), [t], {}, attributes
        )


@irdl_op_definition
class ConstantOp(NotLinear):
    """A dense constant: `prim.constant dense<[1.0, 2.0]> : tensor<2xf64>`.
    It has no operands, so no tangent."""

    name = "prim.constant"

    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def()

    def __init__(self, value: DenseIntOrFPElementsAttr, *, role: RoleSpec = None):
        super().__init__(
            result_types=[value.type],
            properties={"value": value},
            attributes=role_attributes(role),
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
        check_tensor("result", self.result.type, "any")
        check_same_type("value", self.value.type, self.result.type)

    @staticmethod
    def reference(*, value: np.ndarray) -> np.ndarray:
        return np.array(value)

    def reference_params(self) -> dict[str, Any]:
        return {"value": self.to_array()}

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        return [None]

    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        """Never called by `batch` (no operands, so none is batched): the same
        constant broadcast along the batch axis."""
        return [broadcast_to_batch(ctx, emit_value(ctx, ConstantOp(self.value)))]

    def print(self, printer: Printer) -> None:
        print_attr_dict(printer, self)
        printer.print_string(" ")
        printer.print_attribute(self.value)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        attributes = parser.parse_optional_attr_dict()
        pos = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error("expected a dense elements attribute", pos, parser.pos)
        return build_operation(cls, [], [value.type], {"value": value}, attributes)


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
class BroadcastInDimOp(UnaryLinear, ArrayPropsUnaryOp):
    """Operand axis i goes to result axis dims[i]:
    `prim.broadcast_in_dim %x, dims = [1] : tensor<3xf64> -> tensor<2x3xf64>`.
    d broadcast(x) = broadcast(dx); transpose: sum back to the operand's shape.
    Also broadcasts i1 tensors (a predicate shared by a batch of examples)."""

    name = "prim.broadcast_in_dim"

    dims = prop_def(DenseArrayBase.constr(i64))
    ARRAY_PROPS: ClassVar[tuple[str, ...]] = ("dims",)

    def __init__(
        self, operand: Value, dims: Sequence[int], result_type: Attribute, *, role: RoleSpec = None
    ):
        self._init(operand, [dims], result_type, role)

    def verify_types(self) -> None:
        operand, result = self.verify_operand_and_result("any")
        broadcast_in_dim_check(operand, self.prop_values("dims"), result)

    def batched_props(self) -> Sequence[Sequence[int]]:
        return [[0, *shift_axes(self.prop_values("dims"))]]

    @staticmethod
    def reference(x: np.ndarray, *, dims: Sequence[int], shape: Sequence[int]) -> np.ndarray:
        x = np.asarray(x)
        expanded = [1] * len(shape)
        for size, dim in zip(x.shape, dims, strict=True):
            expanded[dim] = size
        return np.broadcast_to(x.reshape(expanded), tuple(shape)).copy()

    def reference_params(self) -> dict[str, Any]:
        return {"dims": self.prop_values("dims"), "shape": shape_of(self.result)}

    def apply_to(self, tangent: SSAValue) -> Operation:
        return BroadcastInDimOp(tangent, self.prop_values("dims"), self.result.type)

    def emit_adjoint(self, ctx: RuleContext, cotangent: SSAValue) -> SSAValue:
        return sum_to_shape(ctx, cotangent, self.prop_values("dims"), tensor_type_of(self.operand))


PrimOp.BROADCAST_IN_DIM = BroadcastInDimOp


@irdl_op_definition
class ReduceSumOp(UnaryLinear, ReduceOp):
    """Sum over `axes`. d sum(x) = sum(dx); transpose: broadcast ct over the
    reduced axes."""

    name = "prim.reduce_sum"
    KIND: ClassVar[str] = "numeric"

    @staticmethod
    def reference(x: np.ndarray, *, axes: Sequence[int]) -> np.ndarray:
        return np.sum(x, axis=tuple(axes))

    def apply_to(self, tangent: SSAValue) -> Operation:
        return ReduceSumOp(tangent, self.prop_values("axes"))

    def emit_adjoint(self, ctx: RuleContext, cotangent: SSAValue) -> SSAValue:
        operand_type = tensor_type_of(self.operand)
        kept = kept_axes(len(operand_type.get_shape()), self.prop_values("axes"))
        return emit_value(ctx, BroadcastInDimOp(cotangent, kept, operand_type))


@irdl_op_definition
class ReshapeOp(UnaryLinear, TypeChangingUnaryOp):
    """Same elements (row-major), new shape: `prim.reshape %x : T -> U`.
    d reshape(x) = reshape(dx); transpose: reshape back."""

    name = "prim.reshape"

    def __init__(self, operand: Value, shape: Sequence[int], *, role: RoleSpec = None):
        element = tensor_type_of(operand).get_element_type()
        super().__init__(operand, TensorType(element, list(shape)), role=role)

    def verify_types(self) -> None:
        check_tensor("operand", self.operand.type, "any")
        check_tensor("result", self.result.type, "any")
        check_same_element_type("result", self.result.type, self.operand.type)
        before, after = math.prod(shape_of(self.operand)), math.prod(shape_of(self.result))
        if before != after:
            raise VerifyException(f"reshape changes the element count from {before} to {after}")

    @staticmethod
    def reference(x: np.ndarray, *, shape: Sequence[int]) -> np.ndarray:
        return np.reshape(x, tuple(shape))

    def reference_params(self) -> dict[str, Any]:
        return {"shape": shape_of(self.result)}

    def apply_to(self, tangent: SSAValue) -> Operation:
        return ReshapeOp(tangent, shape_of(self.result))

    def emit_adjoint(self, ctx: RuleContext, cotangent: SSAValue) -> SSAValue:
        return emit_value(ctx, ReshapeOp(cotangent, shape_of(self.operand)))

    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        (operand,) = operands
        return [emit_value(ctx, ReshapeOp(operand, [ctx.size, *shape_of(self.result)]))]

    def one_hot_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue | OneHot], batched: Sequence[bool]
    ) -> Sequence[SSAValue | OneHot] | None:
        """A reshape keeps every element's flat position: the rows stay one-hot."""
        (rows,) = operands
        assert isinstance(rows, OneHot)
        return [OneHot(emit_reshape(ctx, rows.scale, shape_of(self.result)), rows.offset)]


@irdl_op_definition
class TransposeOp(UnaryLinear, ArrayPropsUnaryOp):
    """`result.shape[i] = operand.shape[permutation[i]]`.
    d transpose(x) = transpose(dx); transpose: the inverse permutation."""

    name = "prim.transpose"

    permutation = prop_def(DenseArrayBase.constr(i64))
    ARRAY_PROPS: ClassVar[tuple[str, ...]] = ("permutation",)

    def __init__(self, operand: Value, permutation: Sequence[int], *, role: RoleSpec = None):
        operand_type = tensor_type_of(operand)
        shape = transpose_shape(tuple(operand_type.get_shape()), permutation)
        self._init(operand, [permutation], TensorType(operand_type.get_element_type(), shape), role)

    def verify_types(self) -> None:
        operand, result = self.verify_operand_and_result("any")
        check_shape("result", result, transpose_shape(operand, self.prop_values("permutation")))

    def batched_props(self) -> Sequence[Sequence[int]]:
        return [[0, *shift_axes(self.prop_values("permutation"))]]

    @staticmethod
    def reference(x: np.ndarray, *, permutation: Sequence[int]) -> np.ndarray:
        return np.transpose(x, tuple(permutation))

    def apply_to(self, tangent: SSAValue) -> Operation:
        return TransposeOp(tangent, self.prop_values("permutation"))

    def emit_adjoint(self, ctx: RuleContext, cotangent: SSAValue) -> SSAValue:
        inverse = inverse_permutation(self.prop_values("permutation"))
        return emit_transpose(ctx, cotangent, inverse)


def emit_reshape(
    ctx: RuleContext | BatchContext, value: SSAValue, shape: Sequence[int]
) -> SSAValue:
    """`value` reshaped to `shape` (itself when it has that shape)."""
    if list(shape_of(value)) == list(shape):
        return value
    return emit_value(ctx, ReshapeOp(value, shape))


def emit_transpose(
    ctx: RuleContext | BatchContext, value: SSAValue, permutation: Sequence[int]
) -> SSAValue:
    """`value` transposed by `permutation`, as the cheapest op that does it:
    none for the identity, a `reshape` (free: no data moves) when only axes of
    extent 1 change places, a `transpose` otherwise."""
    permutation = list(permutation)
    if permutation == sorted(permutation):
        return value
    shape = shape_of(value)
    moved = [axis for axis in permutation if shape[axis] != 1]
    if moved == sorted(moved):
        return emit_value(ctx, ReshapeOp(value, transpose_shape(shape, permutation)))
    return emit_value(ctx, TransposeOp(value, permutation))


OPS: tuple[type[PrimOp], ...] = (
    SubOp,
    MulOp,
    NegOp,
    ConjOp,
    RealOp,
    ImagOp,
    ComplexOp,
    ConvertOp,
    SelectOp,
    ConstantOp,
    BroadcastInDimOp,
    ReduceSumOp,
    ReshapeOp,
    TransposeOp,
)
"""The op classes of this layer, in the dialect's order."""

__all__ = [
    "BroadcastInDimOp",
    "ComplexOp",
    "ConjOp",
    "ConstantOp",
    "ConvertOp",
    "ImagOp",
    "MulOp",
    "NegOp",
    "RealOp",
    "ReduceSumOp",
    "ReshapeOp",
    "SelectOp",
    "SubOp",
    "TransposeOp",
    "conj_if_complex",
    "dense_to_array",
    "full_like",
    "is_zero_constant",
    "sum_to_shape",
    "zeros_like",
]
