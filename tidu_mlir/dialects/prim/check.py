"""`prim.check`: a run-time assertion on the data path.

`prim.check %ok, %x, message = "..." : T` is `%x` unchanged when the 0-d
boolean `%ok` holds, and a run-time failure with `message` otherwise (numpy
reference and interpreter: `CheckFailedError(message)`, a `RuntimeError`, or
numpy's `LinAlgError`
for a message starting with `LinAlgError: `, see `check_failure`; native code:
a jump back to the entry point's guard, which `JitFunction` turns into the
same error).

It sits on the data path (its result is its operand), so whatever is computed
from a checked value can only be obtained through the check: the op stays as
long as a user of the value does. Its derivatives keep the predicate: the
tangent and the cotangent are checked too (JVP: `check(ok, dx)`; transpose:
`check(ok, ct)`), so no derivative flows out of a failed check either. It is
linear in `x` (the predicate is a boolean, never active). Batched with a
batched predicate, every example must pass: the predicate is reduced with an
`all` (the count of true examples equals the batch size).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import StringAttr, TensorType, i1, i32
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.parser import Parser
from xdsl.printer import Printer

from tidu_mlir.dialects.prim.base import PrimOp, Values, broadcast_to_batch, emit_value
from tidu_mlir.dialects.prim.core import ConstantOp, ConvertOp, ReduceSumOp
from tidu_mlir.dialects.prim.elementwise import CompareOp
from tidu_mlir.dialects.prim.syntax import RoleSpec, print_attr_dict, resolve, role_attributes
from tidu_mlir.dialects.prim.types import (
    Value,
    check_same_type,
    check_shape,
    check_tensor,
    shape_of,
    tensor_type_of,
)
from tidu_mlir.fast_syntax import build_operation
from tidu_mlir.interfaces import BatchContext, RuleContext

OK_TYPE = TensorType(i1, [])
"""The type of the predicate of `prim.check`: a 0-d boolean."""

LINALG_ERROR = "LinAlgError: "
"""The prefix of the messages of checks that raise `numpy.linalg.LinAlgError`
(a singular matrix, one not positive definite), as numpy does."""


class CheckFailedError(RuntimeError):
    """A `prim.check` found its predicate false at run time (the check's message)."""


def check_failure(message: str) -> Exception:
    """The error a failed check with `message` raises: `LinAlgError` (the message
    without its prefix) for a `LINALG_ERROR` message, else `CheckFailedError`."""
    if message.startswith(LINALG_ERROR):
        return np.linalg.LinAlgError(message.removeprefix(LINALG_ERROR))
    return CheckFailedError(message)


@irdl_op_definition
class CheckOp(PrimOp):
    """`x` if the 0-d boolean `ok` holds, else a run-time failure with
    `message`: `prim.check %ok, %x, message = "..." : tensor<3xf64>`."""

    name = "prim.check"

    ok = operand_def()
    x = operand_def()
    result = result_def()
    message = prop_def(StringAttr)

    KIND: ClassVar[str] = "any"

    def __init__(self, ok: Value, x: Value, message: str, *, role: RoleSpec = None):
        super().__init__(
            operands=[ok, x],
            result_types=[tensor_type_of(x)],
            properties={"message": StringAttr(message)},
            attributes=role_attributes(role),
        )

    @property
    def message_text(self) -> str:
        return self.message.data

    def verify_types(self) -> None:
        check_tensor("ok", self.ok.type, "i1")
        check_shape("ok", shape_of(self.ok), ())
        check_tensor("x", self.x.type, self.KIND)
        check_same_type("result", self.result.type, self.x.type)

    @staticmethod
    def reference(ok: np.ndarray, x: np.ndarray, *, message: str) -> np.ndarray:
        if not bool(np.asarray(ok)):
            raise check_failure(message)
        return np.asarray(x)

    def reference_params(self) -> dict[str, Any]:
        return {"message": self.message_text}

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        _, dx = tangents
        if dx is None:
            return [None]
        return [emit_value(ctx, CheckOp(self.ok, dx, self.message_text))]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        (ct,) = cotangents
        assert ct is not None
        return [None, emit_value(ctx, CheckOp(self.ok, ct, self.message_text))]

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return not active_mask[0] and active_mask[1]

    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        ok, x = operands
        ok_batched, x_batched = batched
        if ok_batched:
            count = emit_value(ctx, ReduceSumOp(emit_value(ctx, ConvertOp(ok, i32)), [0]))
            size = emit_value(ctx, ConstantOp.from_value(np.int32(ctx.size), TensorType(i32, [])))
            ok = emit_value(ctx, CompareOp("eq", count, size))
        if not x_batched:
            x = broadcast_to_batch(ctx, x)
        return [emit_value(ctx, CheckOp(ok, x, self.message_text))]

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        printer.print_string(", message = ")
        printer.print_string_literal(self.message_text)
        print_attr_dict(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.x.type)

    @classmethod
    def parse(cls, parser: Parser) -> CheckOp:
        ok = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        x = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        parser.parse_keyword("message")
        parser.parse_punctuation("=")
        message = parser.parse_str_literal()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        return build_operation(
            cls,
            resolve(parser, [ok, x], [OK_TYPE, t]),
            [t],
            {"message": StringAttr(message)},
            attributes,
        )


OPS: tuple[type[PrimOp], ...] = (CheckOp,)
"""The op classes of this layer, in the dialect's order."""

__all__ = ["LINALG_ERROR", "CheckFailedError", "CheckOp", "check_failure"]
