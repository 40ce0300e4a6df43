"""`prim.while`: a loop whose trip count is known only at run time (see `WhileOp`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType, f64, i1
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    irdl_op_definition,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import IsolatedFromAbove, Pure
from xdsl.utils.exceptions import VerifyException

from tidu_mlir.dialects.prim.base import PrimOp, Values, broadcast_to_batch
from tidu_mlir.dialects.prim.control.bodies import (
    YieldOp,
    argument_types,
    broadcast_yields,
    cast_results,
    check_types,
    clone_into,
    linearize_carried,
    padded_yields,
    region_from,
    run_region,
    yield_types,
)
from tidu_mlir.dialects.prim.core import (
    BroadcastInDimOp,
    ConstantOp,
    ConvertOp,
    SelectOp,
    or_zeros,
)
from tidu_mlir.dialects.prim.elementwise import CompareOp
from tidu_mlir.dialects.prim.structural import ReduceMaxOp
from tidu_mlir.dialects.prim.syntax import RoleSpec, role_attributes
from tidu_mlir.dialects.prim.types import tensor_type_of
from tidu_mlir.interfaces import (
    ADRuleError,
    BatchContext,
    RecomputeCost,
    RuleContext,
)

_WHILE_REVERSE = (
    "reverse mode (grad, vjp, linearize) through a while loop is not supported yet: its "
    "trip count is known only at run time; forward mode (jvp, jacfwd) works, or use "
    "lax.scan / lax.fori_loop with static bounds"
)


@irdl_op_definition
class WhileOp(PrimOp):
    """`while cond(carries, consts): carries = body(carries, consts)`.

        %r = prim.while init(%c0) consts(%k) : (T) (K) -> (T) cond {
        ^bb0(%c: T, %k: K):
          ...
          prim.yield %p : tensor<i1>
        } do {
        ^bb0(%c: T, %k: K):
          ...
          prim.yield %c_next : T
        }

    The trip count is known only at run time. Both regions are isolated from
    above. JVP: one while loop carrying the primal and the tangent carries
    (its body is the body's JVP): forward mode works, but that loop is not
    linear (its primal carries evolve), so `linear-transpose` and `unzip`
    refuse it: reverse mode through a while loop needs its residuals stored
    per iteration, which is not built yet. Batched on the predicate: the loop
    runs while any example's predicate holds, and an example whose predicate
    is false keeps its carries (`prim.select`).
    """

    name = "prim.while"

    init = var_operand_def()
    consts = var_operand_def()
    carries = var_result_def()
    before = region_def("single_block")
    body = region_def("single_block")

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(Pure(), RecomputeCost(cheap=False), IsolatedFromAbove())

    assembly_format = (
        "`init` `(` $init `)` `consts` `(` $consts `)` attr-dict `:` `(` type($init) `)` "
        "`(` type($consts) `)` `->` `(` type($carries) `)` `cond` $before `do` $body"
    )

    def __init__(
        self,
        init: Sequence[SSAValue],
        consts: Sequence[SSAValue],
        before: Region,
        body: Region,
        *,
        role: RoleSpec = None,
    ):
        super().__init__(
            operands=[list(init), list(consts)],
            result_types=[[v.type for v in init]],
            regions=[before, body],
            attributes=role_attributes(role),
        )

    @staticmethod
    def from_regions(
        init: Sequence[SSAValue],
        consts: Sequence[SSAValue],
        before: Callable[..., Sequence[SSAValue | Operation]],
        body: Callable[..., Sequence[SSAValue | Operation]],
    ) -> WhileOp:
        """A while loop whose regions are built by `before(*arguments)` (returning
        the predicate) and `body(*arguments)` (see `ScanOp.from_body`)."""
        types = [v.type for v in (*init, *consts)]
        return WhileOp(init, consts, region_from(types, before), region_from(types, body))

    def verify_types(self) -> None:
        expected = [v.type for v in (*self.init, *self.consts)]
        carries = [v.type for v in self.init]
        for label, region in (("cond", self.before), ("body", self.body)):
            check_types(f"{label} argument", [a.type for a in region.block.args], expected)
            if not isinstance(region.block.last_op, YieldOp):
                raise VerifyException(f"the {label} region of prim.while must end with prim.yield")
        predicate = yield_types(self.before)
        if len(predicate) != 1 or predicate[0] != TensorType(i1, []):
            raise VerifyException(
                f"the cond region must yield one tensor<i1>, got {', '.join(map(str, predicate))}"
            )
        check_types("carry returned by the body", yield_types(self.body), carries)
        check_types("carry result", [r.type for r in self.carries], carries)

    # ----- semantics ----------------------------------------------------------

    @staticmethod
    def reference(
        *operands: Any,
        carries: int,
        cond: Callable[..., Sequence[Any]],
        body: Callable[..., Sequence[Any]],
    ) -> tuple[Any, ...]:
        """`while cond(*carry, *consts): carry = body(*carry, *consts)`; the carry."""
        carry, consts = list(operands[:carries]), operands[carries:]
        while bool(cond(*carry, *consts)[0]):
            carry = list(body(*carry, *consts))
        return tuple(carry)

    def reference_params(self) -> dict[str, Any]:
        return {
            "carries": len(self.init),
            "cond": lambda *a: run_region(self.before, a, self.name),
            "body": lambda *a: run_region(self.body, a, self.name),
        }

    def evaluate(self, *operands: np.ndarray) -> tuple[np.ndarray, ...]:
        results = self.reference(*operands, **self.reference_params())
        return cast_results(results, self.results)

    # ----- AD -------------------------------------------------------------------

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        carries = len(self.init)
        linearized, active = linearize_carried(ctx, self.body, tangents, carries)
        carry_types = [v.type for v in self.init]
        linear = padded_yields(
            linearized.linear, carry_types, linearized.active_results, active[:carries]
        )
        tangent_init = [
            or_zeros(ctx, tangents[i], self.init[i]) for i in range(carries) if active[i]
        ]
        const_tangents = [t for t in tangents[carries:] if t is not None]
        loop = ctx.emit(
            WhileOp(
                [*self.init, *tangent_init],
                [*self.consts, *const_tangents],
                _extended_cond(self.before, carries, active),
                _jvp_loop_body(linearized.forward, linear, carries, active),
            )
        )
        tangent_results = iter(loop.carries[carries:])
        return [next(tangent_results) if flag else None for flag in active[:carries]]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        raise ADRuleError("transpose", self, _WHILE_REVERSE)

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return False  # its JVP carries the primal along (see the class docstring)

    def nonlinearity_note(self) -> str:
        return _WHILE_REVERSE

    # ----- batching ---------------------------------------------------------------

    def batch_rule(
        self, ctx: BatchContext, operands: Sequence[SSAValue], batched: Sequence[bool]
    ) -> Sequence[SSAValue]:
        carries = len(self.init)
        init = [
            v if b else broadcast_to_batch(ctx, v)
            for v, b in zip(operands[:carries], batched[:carries], strict=True)
        ]
        flags = [True] * carries + list(batched[carries:])
        before, before_batched = ctx.batch_body(self.before, flags)
        body, body_batched = ctx.batch_body(self.body, flags)
        body = broadcast_yields(body, body_batched, ctx.size)
        consts = list(operands[carries:])
        if not before_batched[0]:
            loop = ctx.emit(WhileOp(init, consts, before, body))
            return list(loop.carries)
        loop = ctx.emit(WhileOp(init, consts, _any_cond(before), _masked_body(before, body)))
        return list(loop.carries)


def _loop_layout(
    types: Sequence[Attribute], carries: int, active: Sequence[bool]
) -> list[Attribute]:
    """Argument types of a JVP loop: carries, active carries' tangents, consts,
    active consts' tangents (`types`: the original carries, then consts)."""
    tangents = [t for t, flag in zip(types, active, strict=True) if flag]
    active_carries = sum(active[:carries])
    return [
        *types[:carries],
        *tangents[:active_carries],
        *types[carries:],
        *tangents[active_carries:],
    ]


def _split_layout(
    args: Sequence[SSAValue], carries: int, active: Sequence[bool]
) -> tuple[list[SSAValue], list[SSAValue]]:
    """(primal arguments, tangent arguments) of a JVP loop's region."""
    active_carries, tangents = sum(active[:carries]), sum(active)
    consts = len(active) - carries
    primal = [*args[:carries], *args[carries + active_carries : carries + active_carries + consts]]
    tangent = [
        *args[carries : carries + active_carries],
        *args[len(args) - (tangents - active_carries) :],
    ]
    return primal, tangent


def _extended_cond(before: Region, carries: int, active: Sequence[bool]) -> Region:
    """The cond region of a JVP loop: it reads the primal arguments only."""
    block = Block(arg_types=_loop_layout(argument_types(before), carries, active))
    primal, _ = _split_layout(block.args, carries, active)
    block.add_op(YieldOp(clone_into(block, before, primal)))
    return Region(block)


def _jvp_loop_body(forward: Region, linear: Region, carries: int, active: Sequence[bool]) -> Region:
    """The body of a JVP loop: the forward body (new carries, residuals), then
    the linear body on the tangents and those residuals."""
    block = Block(arg_types=_loop_layout(argument_types(forward), carries, active))
    primal, tangent = _split_layout(block.args, carries, active)
    forward_out = clone_into(block, forward, primal)
    linear_out = clone_into(block, linear, [*tangent, *forward_out[carries:]])
    block.add_op(YieldOp([*forward_out[:carries], *linear_out]))
    return Region(block)


def _any_cond(before: Region) -> Region:
    """A batched cond region (a predicate per example) yielding whether any holds."""
    block = Block(arg_types=argument_types(before))
    (flags,) = clone_into(block, before, block.args)
    as_real = ConvertOp(flags, f64)
    largest = ReduceMaxOp(as_real, [0])
    half = ConstantOp.from_value(np.asarray(0.5))
    any_true = CompareOp("gt", largest, half)
    block.add_ops([as_real, largest, half, any_true])
    block.add_op(YieldOp([any_true.result]))
    return Region(block)


def _masked_body(before: Region, body: Region) -> Region:
    """A batched body that leaves the carries of the examples whose predicate is
    false unchanged (`prim.select` on the broadcast predicate)."""
    block = Block(arg_types=argument_types(body))
    (flags,) = clone_into(block, before, block.args)
    updated = clone_into(block, body, block.args)
    kept: list[SSAValue] = []
    for new, old in zip(updated, block.args, strict=False):
        target = TensorType(i1, tensor_type_of(new).get_shape())
        mask = BroadcastInDimOp(flags, [0], target)
        select = SelectOp(mask, new, old)
        block.add_ops([mask, select])
        kept.append(select.result)
    block.add_op(YieldOp(kept))
    return Region(block)
