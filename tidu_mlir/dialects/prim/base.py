"""The bases of the `prim` ops, and `prim.add`.

`PrimOp` is the base of every prim op: Pure, role-checked (an optional
discardable `#cg.linearized<[...]>` attribute), `Differentiable`, `Evaluable`
and `Batchable`. Each concrete op class carries, in its own body or through
a base, its verifier (`verify_types`), its AD rules (`jvp_rule`,
`transpose_rule`, `is_linear_in`), its batching rule (`batch_rule`) and its
numpy semantics (the `reference` staticmethod); `PrimOp.evaluate`
calls `reference` with the op's parameters (`reference_params`).

Three rule-shape bases spare the op classes repeated rules:
* `NotLinear`: linear in no operand, so no transpose rule. Inheriting it is
  the explicit statement that an op has none (a guard test checks every op
  has a transpose rule or this base).
* `UnaryLinear`: a single-operand linear op; its JVP applies the op to the
  tangent (`apply_to`), its transpose emits the adjoint map (`emit_adjoint`).
* `Elementwise`: operands and results of one shape; its batching rule
  broadcasts the unbatched operands and applies the op to the batched shape.

The structural bases (`ElementwiseBinaryOp`, `ArrayPropsUnaryOp`, ...) hold
the operand/result definitions, constructors and assembly formats shared by
ops of one shape, and the batching rules that follow from that shape.

Batching (`Batchable.batch_rule`): a batched value carries the batch as a new
leading axis of extent `ctx.size` (its type: `interfaces.batched_type`); the
helpers `shift_axes`, `broadcast_to_batch` and `batch_all` serve the rules of
every layer.

`prim.add` is defined here, not with the other linear ops in `core.py`:
`PrimOp.accumulate` (the dialect's addition, used by `linear-transpose` to
sum cotangents) must name it, and no file of this package imports a file
above it. Its AD rules emit only `prim.add`; its batching rule (from
`Elementwise`) broadcasts with `PrimOp.BROADCAST_IN_DIM`, which `core` sets.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, TypeAlias, cast

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, TensorType, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure

from tidu_mlir.diagnostics import VerifiesLocally
from tidu_mlir.dialects import cg
from tidu_mlir.dialects.prim.shapes import reduce_shape
from tidu_mlir.dialects.prim.syntax import (
    RoleSpec,
    array_values,
    i64_array,
    parse_keyword_lists,
    parse_same_type,
    parse_types_arrow,
    print_attr_dict,
    print_int_list,
    print_same_type,
    print_types_arrow,
    resolve,
    role_attributes,
)
from tidu_mlir.dialects.prim.types import (
    Shape,
    Value,
    check_same_element_type,
    check_same_type,
    check_shape,
    check_tensor,
    shape_of,
    tensor_dtype,
    tensor_type_of,
)
from tidu_mlir.fast_syntax import PlainArrowOp, PlainOp, build_operation
from tidu_mlir.interfaces import (
    ADRuleError,
    Batchable,
    BatchContext,
    Differentiable,
    Evaluable,
    OneHot,
    RecomputeCost,
    RuleContext,
    active_mask_of,
    batched_type,
)

Values: TypeAlias = Sequence[SSAValue | None]


def emit_value(ctx: RuleContext | BatchContext, op: Operation) -> SSAValue:
    """Emit a single-result op in a rule (AD or batching); its result."""
    return ctx.emit(op).results[0]


def for_active(op: Operation, values: Sequence[SSAValue]) -> Values:
    """`values[i]` for the active operands of `op`, None for the fixed ones."""
    mask = active_mask_of(op)
    return [value if active else None for active, value in zip(mask, values, strict=True)]


def shift_axes(axes: Sequence[int]) -> list[int]:
    """`axes` of an unbatched value as axes of its batched form (each + 1)."""
    return [axis + 1 for axis in axes]


def broadcast_to_batch(ctx: BatchContext, value: SSAValue) -> SSAValue:
    """An unbatched value broadcast along a new leading axis of extent `ctx.size`
    (`prim.broadcast_in_dim`, dims 1..rank)."""
    rank = len(shape_of(value))
    op = PrimOp.BROADCAST_IN_DIM(value, range(1, rank + 1), batched_type(value.type, ctx.size))
    return emit_value(ctx, op)


def batch_all(
    ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
) -> list[SSAValue]:
    """Every operand in batched form: the unbatched ones broadcast (`broadcast_to_batch`)."""
    return [
        value if is_batched else broadcast_to_batch(ctx, value)
        for value, is_batched in zip(operands, batched, strict=True)
    ]


# --------------------------------------------------------------------------
# PrimOp and the rule-shape bases
# --------------------------------------------------------------------------


class PrimOp(IRDLOperation, Differentiable, Evaluable, Batchable, VerifiesLocally):
    """Base of every prim op: Pure, role-checked, differentiable, evaluable,
    batchable, and cheap to recompute (work proportional to its result) unless
    it overrides `traits` (contractions and reductions). Its verifier reads
    only its own types, properties and attributes (`VerifiesLocally`)."""

    traits = traits_def(Pure(), RecomputeCost(cheap=True))

    BROADCAST_IN_DIM: ClassVar[Callable[[SSAValue, Sequence[int], TensorType], Operation]]
    SUM_STRATEGIES: ClassVar[list[Callable[[RuleContext, list[SSAValue]], list[SSAValue]]]] = []
    """How the op layers sum several cotangents of one value at once
    (`accumulate_all`): each strategy returns the contributions with those
    it recognizes replaced by fewer values (`structural`: single elements
    into one buffer; `contraction`: products into one product); additions
    sum what is left."""
    ONE_HOT_ROWS: ClassVar[Callable[[BatchContext, OneHot], SSAValue]]
    """How the dialect builds one-hot rows (`emit_one_hot_rows`): with padding,
    so `structural`, where `prim.pad` is, sets it."""
    """The constructor of `prim.broadcast_in_dim`, which the batching rules of
    this file broadcast unbatched operands with (`broadcast_to_batch`). The op
    needs rule helpers of `core`, so it is defined there, and `core` sets this
    right after it (the package `__init__` imports `core` before any op is used)."""

    def verify_(self) -> None:
        cg.verify_role(self)
        self.verify_types()

    @abc.abstractmethod
    def verify_types(self) -> None:
        """Check shapes and element types (raise VerifyException)."""

    @classmethod
    def accumulate(cls, lhs: SSAValue, rhs: SSAValue) -> Operation:
        """`prim.add` sums the cotangents of every prim op."""
        return AddOp(lhs, rhs)

    @classmethod
    def accumulate_all(cls, ctx: RuleContext, values: Sequence[SSAValue]) -> SSAValue:
        parts = list(values)
        for strategy in PrimOp.SUM_STRATEGIES:
            parts = strategy(ctx, parts)
        return super().accumulate_all(ctx, parts)

    @classmethod
    def emit_one_hot_rows(cls, ctx: BatchContext, rows: OneHot) -> SSAValue | None:
        return PrimOp.ONE_HOT_ROWS(ctx, rows)

    @staticmethod
    @abc.abstractmethod
    def reference(*operands: Any, **params: Any) -> Any:
        """The op's numpy semantics: operand arrays in (positionally), the op's
        parameters by keyword (`reference_params`), one array (or numpy scalar)
        out. Elementwise references are numpy's own functions: they broadcast,
        and warn on floating-point errors as numpy does (the evaluator ignores
        those errors: inf and nan are results like any other)."""

    def reference_params(self) -> dict[str, Any]:
        """The keyword arguments `evaluate` passes to `reference` (none by default)."""
        return {}

    def evaluate(self, *operands: np.ndarray) -> tuple[np.ndarray, ...]:
        """`reference` on `operands`, cast to the result's element type (so f32
        stays f32 where numpy would promote)."""
        result = self.reference(*operands, **self.reference_params())
        return (np.asarray(result).astype(tensor_dtype(self.results[0].type), copy=False),)

    def emit_batched(
        self,
        ctx: BatchContext,
        operands: Sequence[SSAValue],
        properties: Mapping[str, Attribute] | None = None,
    ) -> list[SSAValue]:
        """Emit this op's class on `operands` with each result type given a
        leading batch axis, with `properties` (default: this op's own) and no
        role attribute; its results."""
        op = type(self).create(
            operands=list(operands),
            result_types=[batched_type(r.type, ctx.size) for r in self.results],
            properties=dict(self.properties if properties is None else properties),
        )
        return list(ctx.emit(op).results)


class NotLinear(PrimOp, abc.ABC):
    """An op linear in no operand: it has no transpose rule."""

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        raise ADRuleError("transpose", self, f"{self.name} is not linear")

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return not any(active_mask)


class UnaryLinear(PrimOp, abc.ABC):
    """A single-operand linear op: its JVP applies the op to the tangent
    (`apply_to`), its transpose emits the adjoint map (`emit_adjoint`)."""

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        (tangent,) = tangents
        assert tangent is not None
        return [emit_value(ctx, self.apply_to(tangent))]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        (cotangent,) = cotangents
        assert cotangent is not None
        return [self.emit_adjoint(ctx, cotangent)]

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return True

    @abc.abstractmethod
    def apply_to(self, tangent: SSAValue) -> Operation:
        """The op itself applied to `tangent` (not yet emitted)."""

    @abc.abstractmethod
    def emit_adjoint(self, ctx: RuleContext, cotangent: SSAValue) -> SSAValue:
        """Emit the adjoint map applied to `cotangent`."""


# --------------------------------------------------------------------------
# Structural bases: operands, constructors, assembly formats
# --------------------------------------------------------------------------


class Elementwise(PrimOp, abc.ABC):
    """An elementwise op: operands and results of one shape. Batched by
    broadcasting the unbatched operands along the batch axis and applying the
    op (same class, same properties) to the batched shape `[size, *shape]`."""

    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        return self.emit_batched(ctx, batch_all(ctx, operands, batched))

    def one_hot_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue | OneHot], batched: Sequence[bool]
    ) -> Sequence[SSAValue | OneHot] | None:
        """Rows at one offset stay one-hot through an op linear in them whose
        other operands are unbatched: element `i` of example `b` depends only on
        element `i` of the operands, all zero but at `b - offset`."""
        rows = [value for value in operands if isinstance(value, OneHot)]
        hot = [isinstance(value, OneHot) for value in operands]
        if any(batched) or len({r.offset for r in rows}) != 1 or not self.is_linear_in(hot):
            return None
        scales = [value.scale if isinstance(value, OneHot) else value for value in operands]
        op = type(self).create(
            operands=scales,
            result_types=[r.type for r in self.results],
            properties=dict(self.properties),
        )
        return [OneHot(result, rows[0].offset) for result in ctx.emit(op).results]


class ElementwiseBinaryOp(Elementwise, PlainOp, abc.ABC):
    """`lhs, rhs : T -> T`, printed `%a, %b : T`."""

    PLAIN_OPERANDS: ClassVar[int] = 2

    lhs = operand_def()
    rhs = operand_def()
    result = result_def()

    KIND: ClassVar[str] = "float or complex"

    def __init__(self, lhs: Value, rhs: Value, *, role: RoleSpec = None):
        super().__init__(
            operands=[lhs, rhs],
            result_types=[SSAValue.get(lhs).type],
            attributes=role_attributes(role),
        )

    def verify_types(self) -> None:
        check_tensor("lhs", self.lhs.type, self.KIND)
        check_same_type("rhs", self.rhs.type, self.lhs.type)
        check_same_type("result", self.result.type, self.lhs.type)

    def print(self, printer: Printer) -> None:
        print_same_type(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> ElementwiseBinaryOp:
        operands, attributes, t = parse_same_type(parser, 2)
        return build_operation(cls, operands, [t], {}, attributes)


class ElementwiseUnaryOp(Elementwise, PlainOp, abc.ABC):
    """`operand : T -> T`, printed `%x : T`."""

    PLAIN_OPERANDS: ClassVar[int] = 1

    operand = operand_def()
    result = result_def()

    KIND: ClassVar[str] = "float or complex"

    def __init__(self, operand: Value, *, role: RoleSpec = None):
        super().__init__(
            operands=[operand],
            result_types=[SSAValue.get(operand).type],
            attributes=role_attributes(role),
        )

    def verify_types(self) -> None:
        check_tensor("operand", self.operand.type, self.KIND)
        check_same_type("result", self.result.type, self.operand.type)

    def print(self, printer: Printer) -> None:
        print_same_type(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> ElementwiseUnaryOp:
        operands, attributes, t = parse_same_type(parser, 1)
        return build_operation(cls, operands, [t], {}, attributes)


class TypeChangingUnaryOp(PrimOp, PlainArrowOp, abc.ABC):
    """`operand : T -> U` with the result type printed."""

    operand = operand_def()
    result = result_def()

    assembly_format = "$operand attr-dict `:` type($operand) `->` type($result)"

    def __init__(self, operand: Value, result_type: Attribute, *, role: RoleSpec = None):
        super().__init__(
            operands=[operand], result_types=[result_type], attributes=role_attributes(role)
        )


class ArrayPropsUnaryOp(PrimOp, abc.ABC):
    """`operand -> result` with i64-array properties, printed
    `%x, name = [..], ... attr-dict : T -> U`; the properties are also the
    parameters of its `reference`. Batched by the same op on the batched
    operand, with the properties `batched_props` gives."""

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
            attributes=role_attributes(role),
        )

    def prop_values(self, name: str) -> tuple[int, ...]:
        """The integers of the i64-array property `name`."""
        return array_values(cast(DenseArrayBase, self.properties[name]))

    def reference_params(self) -> dict[str, Any]:
        return {name: self.prop_values(name) for name in self.ARRAY_PROPS}

    @abc.abstractmethod
    def batched_props(self) -> Sequence[Sequence[int]]:
        """The `ARRAY_PROPS` values (in order) of this op applied to the batched
        operand, so that its result is this op's result with a leading batch axis."""

    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        props = {
            name: i64_array(values)
            for name, values in zip(self.ARRAY_PROPS, self.batched_props(), strict=True)
        }
        return self.emit_batched(ctx, operands, props)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.operand)
        for name in self.ARRAY_PROPS:
            printer.print_string(f", {name} = ")
            print_int_list(printer, self.prop_values(name))
        print_attr_dict(printer, self)
        print_types_arrow(printer, [self.operand.type], self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> ArrayPropsUnaryOp:
        operand = parser.parse_unresolved_operand()
        lists = parse_keyword_lists(parser, cls.ARRAY_PROPS)
        props = {
            name: i64_array(values) for name, values in zip(cls.ARRAY_PROPS, lists, strict=True)
        }
        attributes = parser.parse_optional_attr_dict()
        inputs, output = parse_types_arrow(parser, 1)
        return build_operation(cls, resolve(parser, [operand], inputs), [output], props, attributes)

    def verify_operand_and_result(self, kind: str = "float or complex") -> tuple[Shape, Shape]:
        """Check both types are tensors of one element type of `kind` (value
        tensors by default); return their shapes."""
        check_tensor("operand", self.operand.type, kind)
        check_tensor("result", self.result.type, kind)
        check_same_element_type("result", self.result.type, self.operand.type)
        return shape_of(self.operand), shape_of(self.result)


class ReduceOp(ArrayPropsUnaryOp, abc.ABC):
    """Reduction over sorted unique `axes`, which are removed from the shape
    (worth saving rather than recomputing: its work exceeds its result)."""

    traits = traits_def(Pure(), RecomputeCost(cheap=False))
    axes = prop_def(DenseArrayBase.constr(i64))
    ARRAY_PROPS: ClassVar[tuple[str, ...]] = ("axes",)
    KIND: ClassVar[str] = "float or complex"

    def __init__(self, operand: Value, axes: Sequence[int], *, role: RoleSpec = None):
        operand_type = tensor_type_of(operand)
        shape = reduce_shape(tuple(operand_type.get_shape()), axes)
        self._init(operand, [axes], TensorType(operand_type.get_element_type(), shape), role)

    def verify_types(self) -> None:
        operand, result = self.verify_operand_and_result(self.KIND)
        check_shape("result", result, reduce_shape(operand, self.prop_values("axes")))

    def batched_props(self) -> Sequence[Sequence[int]]:
        return [shift_axes(self.prop_values("axes"))]


# --------------------------------------------------------------------------
# prim.add: the accumulation op
# --------------------------------------------------------------------------


@irdl_op_definition
class AddOp(ElementwiseBinaryOp):
    """Elementwise addition (also the accumulation op of `linear-transpose`).
    d(a + b) = da + db; transpose: ct to each active operand."""

    name = "prim.add"
    KIND: ClassVar[str] = "numeric"

    reference = staticmethod(np.add)

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        left, right = tangents
        if left is None or right is None:
            return [left if left is not None else right]
        return [emit_value(ctx, AddOp(left, right))]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        (ct,) = cotangents
        assert ct is not None
        return for_active(self, [ct, ct])

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return all(active_mask)


OPS: tuple[type[PrimOp], ...] = (AddOp,)
"""The op classes of this layer, in the dialect's order."""

__all__ = [
    "AddOp",
    "ArrayPropsUnaryOp",
    "Elementwise",
    "ElementwiseBinaryOp",
    "ElementwiseUnaryOp",
    "NotLinear",
    "PrimOp",
    "ReduceOp",
    "TypeChangingUnaryOp",
    "UnaryLinear",
    "batch_all",
    "broadcast_to_batch",
    "shift_axes",
]
