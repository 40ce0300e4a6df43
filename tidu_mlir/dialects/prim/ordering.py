"""The `prim` ops along one axis: argmax, argmin, cumsum and argsort.

Each takes one tensor and an `axis` property (an i64 integer) and works on the
1-d lanes of the operand along that axis:

* `argmax` / `argmin`: the index (i64) of the largest / smallest entry of each
  lane, the axis removed from the shape; ties give the first index and a NaN
  wins (the first NaN), as in numpy.
* `cumsum`: the running sum of each lane (from the end with `reverse`), same
  type as the operand; linear: its JVP is the cumsum of the tangent, its
  transpose the cumsum in the opposite direction (the transpose of a lower
  triangular matrix of ones is an upper triangular one).
* `argsort`: the indices (i64) that sort each lane, stably (numpy's
  `kind='stable'`: equal entries keep their order), NaNs last.

The integer results of argmax, argmin and argsort carry no tangent (their JVP
is the symbolic zero). Batching shifts the axis past the new leading batch
axis (`axis + 1`).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, IntegerType, TensorType, UnitAttr, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tidu_mlir.dialects.prim.base import NotLinear, PrimOp, UnaryLinear, Values, emit_value
from tidu_mlir.dialects.prim.syntax import (
    RoleSpec,
    parse_int64_assignment,
    parse_types_arrow,
    print_attr_dict,
    print_types_arrow,
    resolve,
    role_attributes,
)
from tidu_mlir.dialects.prim.types import (
    Shape,
    Value,
    check_axes_in_range,
    check_same_type,
    check_shape,
    check_tensor,
    element_type_of,
    shape_of,
    tensor_type_of,
)
from tidu_mlir.fast_syntax import build_operation
from tidu_mlir.interfaces import BatchContext, RecomputeCost, RuleContext


def without_axis(shape: Shape, axis: int) -> Shape:
    """`shape` with `axis` (checked in range) removed."""
    check_axes_in_range("axis", [axis], len(shape))
    return shape[:axis] + shape[axis + 1 :]


class AxisOp(PrimOp, abc.ABC):
    """`operand -> result` along one `axis`, printed
    `%x, axis = 1 attr-dict : T -> U` (`: T` when `SAME_TYPE`, the result type
    being the operand's). Batched by the same op on the batched operand, along
    `axis + 1`."""

    operand = operand_def()
    result = result_def()
    axis = prop_def(IntegerAttr[IntegerType])

    KIND: ClassVar[str] = "real or integer"
    """The verifier kind of the operand's element type."""
    SAME_TYPE: ClassVar[bool] = False
    """Whether the result type is the operand's (printed once)."""
    FLAGS: ClassVar[tuple[str, ...]] = ()
    """The names of the op's optional unit properties, printed as keywords after the axis."""

    def _init(
        self,
        operand: Value,
        axis: int,
        result_type: Attribute,
        role: RoleSpec,
        flags: Mapping[str, bool] | None = None,
    ) -> None:
        properties: dict[str, Attribute] = {"axis": IntegerAttr(axis, i64)}
        properties.update({name: UnitAttr() for name, on in (flags or {}).items() if on})
        super().__init__(
            operands=[operand],
            result_types=[result_type],
            properties=properties,
            attributes=role_attributes(role),
        )

    @property
    def axis_value(self) -> int:
        return int(self.axis.value.data)

    def has_flag(self, name: str) -> bool:
        """Whether the unit property `name` is set."""
        return name in self.properties

    def verify_operand(self) -> Shape:
        """Check the operand (a tensor of `KIND`, rank >= 1) and the axis; its shape."""
        check_tensor("operand", self.operand.type, self.KIND)
        shape = shape_of(self.operand)
        if self.axis.type != i64:
            raise VerifyException(f"axis must be an i64 integer, got {self.axis.type}")
        check_axes_in_range("axis", [self.axis_value], len(shape))
        return shape

    def verify_index_result(self, expected: Sequence[int]) -> None:
        """Check the result is an i64 tensor of shape `expected`."""
        check_tensor("result", self.result.type, "integer")
        if element_type_of(self.result.type) != i64:
            raise VerifyException(
                f"result must have element type i64, got {element_type_of(self.result.type)}"
            )
        check_shape("result", shape_of(self.result), expected)

    def reference_params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"axis": self.axis_value}
        params.update({name: self.has_flag(name) for name in self.FLAGS})
        return params

    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        properties = dict(self.properties)
        properties["axis"] = IntegerAttr(self.axis_value + 1, i64)
        return self.emit_batched(ctx, operands, properties)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.operand)
        printer.print_string(f", axis = {self.axis_value}")
        for name in self.FLAGS:
            if self.has_flag(name):
                printer.print_string(f", {name}")
        print_attr_dict(printer, self)
        if self.SAME_TYPE:
            printer.print_string(" : ")
            printer.print_attribute(self.operand.type)
        else:
            print_types_arrow(printer, [self.operand.type], self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> AxisOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        properties: dict[str, Attribute] = {"axis": parse_int64_assignment(parser, "axis")}
        while parser.parse_optional_punctuation(",") is not None:
            flag = parser.parse_identifier(f" (one of: {', '.join(cls.FLAGS) or 'none'})")
            if flag not in cls.FLAGS or flag in properties:
                parser.raise_error(f"unexpected '{flag}' in {cls.name}")
            properties[flag] = UnitAttr()
        attributes = parser.parse_optional_attr_dict()
        if cls.SAME_TYPE:
            parser.parse_punctuation(":")
            inputs = [parser.parse_type()]
            output = inputs[0]
        else:
            inputs, output = parse_types_arrow(parser, 1)
        return build_operation(
            cls, resolve(parser, [operand], inputs), [output], properties, attributes
        )


# --------------------------------------------------------------------------
# argmax, argmin
# --------------------------------------------------------------------------


class ArgReduceOp(NotLinear, AxisOp, abc.ABC):
    """The index of the extreme entry of each lane: `prim.argmax %x, axis = 1 :
    tensor<3x4xf64> -> tensor<3xi64>`. The axis must not be empty (numpy raises
    for it). No tangent: the result is an integer. Worth saving rather than
    recomputing (a reduction: its work exceeds its result)."""

    traits = traits_def(Pure(), RecomputeCost(cheap=False))

    def __init__(self, operand: Value, axis: int, *, role: RoleSpec = None):
        shape = without_axis(shape_of(operand), axis)
        self._init(operand, axis, TensorType(i64, shape), role)

    def verify_types(self) -> None:
        shape = self.verify_operand()
        if shape[self.axis_value] == 0:
            raise VerifyException(
                f"{self.name} needs a non-empty axis: axis {self.axis_value} of "
                f"{self.operand.type} has extent 0"
            )
        self.verify_index_result(without_axis(shape, self.axis_value))


@irdl_op_definition
class ArgMaxOp(ArgReduceOp):
    """The index of the largest entry along `axis` (numpy's `argmax`: the first
    of equal maxima; the first NaN where there is one)."""

    name = "prim.argmax"

    @staticmethod
    def reference(x: np.ndarray, *, axis: int) -> np.ndarray:
        return np.argmax(x, axis=axis)

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        return [None]


@irdl_op_definition
class ArgMinOp(ArgReduceOp):
    """The index of the smallest entry along `axis` (numpy's `argmin`: the first
    of equal minima; the first NaN where there is one)."""

    name = "prim.argmin"

    @staticmethod
    def reference(x: np.ndarray, *, axis: int) -> np.ndarray:
        return np.argmin(x, axis=axis)

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        return [None]


# --------------------------------------------------------------------------
# cumsum
# --------------------------------------------------------------------------


@irdl_op_definition
class CumsumOp(UnaryLinear, AxisOp):
    """Running sum along `axis`: `prim.cumsum %x, axis = 0 : tensor<4x3xf64>`, with
    `reverse` from the last entry (`prim.cumsum %x, axis = 0, reverse : T`:
    `out[i] = sum(x[i:])`). Any numeric element type; integers wrap around like
    numpy's `cumsum(x, dtype=x.dtype)`. d cumsum(x) = cumsum(dx); transpose:
    the cumsum in the opposite direction."""

    name = "prim.cumsum"

    reverse = opt_prop_def(UnitAttr)

    KIND: ClassVar[str] = "numeric"
    SAME_TYPE: ClassVar[bool] = True
    FLAGS: ClassVar[tuple[str, ...]] = ("reverse",)

    def __init__(self, operand: Value, axis: int, reverse: bool = False, *, role: RoleSpec = None):
        self._init(operand, axis, tensor_type_of(operand), role, {"reverse": reverse})

    @property
    def is_reverse(self) -> bool:
        return self.reverse is not None

    def verify_types(self) -> None:
        self.verify_operand()
        check_same_type("result", self.result.type, self.operand.type)

    @staticmethod
    def reference(x: np.ndarray, *, axis: int, reverse: bool) -> np.ndarray:
        x = np.asarray(x)
        if reverse:
            flipped = np.flip(x, axis)
            return np.flip(np.cumsum(flipped, axis=axis, dtype=x.dtype), axis)
        return np.cumsum(x, axis=axis, dtype=x.dtype)

    def apply_to(self, tangent: SSAValue) -> Operation:
        return CumsumOp(tangent, self.axis_value, self.is_reverse)

    def emit_adjoint(self, ctx: RuleContext, cotangent: SSAValue) -> SSAValue:
        return emit_value(ctx, CumsumOp(cotangent, self.axis_value, not self.is_reverse))


# --------------------------------------------------------------------------
# argsort
# --------------------------------------------------------------------------


@irdl_op_definition
class ArgsortOp(NotLinear, AxisOp):
    """The indices sorting each lane along `axis`:
    `prim.argsort %x, axis = 1 : tensor<3x4xf64> -> tensor<3x4xi64>`. Stable
    (equal entries keep their order: numpy's `kind='stable'`), NaNs last, -0.0
    equal to 0.0. No tangent: the result is an integer (a sort is this
    permutation applied by a gather, which carries the gradient). Worth saving
    rather than recomputing (O(n log n) per lane)."""

    name = "prim.argsort"

    traits = traits_def(Pure(), RecomputeCost(cheap=False))

    def __init__(self, operand: Value, axis: int, *, role: RoleSpec = None):
        self._init(operand, axis, TensorType(i64, shape_of(operand)), role)

    def verify_types(self) -> None:
        shape = self.verify_operand()
        self.verify_index_result(shape)

    @staticmethod
    def reference(x: np.ndarray, *, axis: int) -> np.ndarray:
        return np.argsort(x, axis=axis, kind="stable")

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        return [None]


OPS: tuple[type[PrimOp], ...] = (
    ArgMaxOp,
    ArgMinOp,
    CumsumOp,
    ArgsortOp,
)
"""The op classes of this layer, in the dialect's order."""

__all__ = [
    "ArgMaxOp",
    "ArgMinOp",
    "ArgsortOp",
    "AxisOp",
    "CumsumOp",
]
