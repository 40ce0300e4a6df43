"""The AD contract: what an op class provides to be differentiated.

An op class of any dialect becomes differentiable by inheriting `Differentiable`
and implementing its methods. The AD passes call only these methods; they
never name a concrete primitive.

Rules see the primal op itself: `self.operands` and `self.results` are primal
values the derived fragment may reference directly (derived fragments are
nested in the fragment they reference, so the SSA uses are valid). Rules build
new ops and hand each to `ctx.emit`, which inserts it into the fragment being
built and tags its role: `#cg.linearized<mask>` when an operand is a tangent
(or cotangent) value of the running pass, primary otherwise.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

from xdsl.ir import Operation, Region, SSAValue

from tidu_mlir.diagnostics import OpError
from tidu_mlir.dialects.cg import role_of

RuleKind = Literal["jvp", "transpose"]

OpT = TypeVar("OpT", bound=Operation)


class ADRuleError(OpError):
    """A primitive has no rule of the requested kind (or the rule refused the op)."""

    def __init__(self, rule: RuleKind, op: Operation, detail: str | None = None):
        message = f"unsupported {rule} AD rule for {op.name}"
        if detail:
            message += f": {detail}"
        super().__init__(message, op)
        self.rule: RuleKind = rule
        self.op_name: str = op.name


@dataclass
class LinearizedBody:
    """A body region (block arguments in, a terminator's operands out) split by
    `RuleContext.linearize_body` into a forward part and a linear part, as
    `linearize` then `unzip` split a fragment.

    `forward`: the body's arguments in; the body's results, then the residuals
    out. `residual_arguments[i]`: the index of the body argument that residual
    `i` is, or None for a value the forward part computes. `linear`: the
    tangents of the active arguments (in argument order), then the residuals,
    in; the tangents of the results flagged in `active_results` (those with a
    non-zero tangent) out.
    """

    forward: Region
    residual_arguments: list[int | None]
    linear: Region
    active_results: list[bool]


class RuleContext(Protocol):
    """What a rule uses to add ops to the fragment being built."""

    def emit(self, op: OpT) -> OpT:
        """Insert `op` at the end of the new fragment, tag its role, copy the
        source location of the op being differentiated; return `op`."""
        ...

    def is_active(self, value: SSAValue) -> bool:
        """Whether `value` is a tangent (linearize) or cotangent (transpose) value
        of the running pass."""
        ...

    def linearize_body(self, body: Region, active: Sequence[bool]) -> LinearizedBody:
        """Linearize and unzip the body of an op with a region (a loop body):
        `active` flags its arguments that have tangents. The body is left
        unchanged."""
        ...

    def transpose_body(self, body: Region, linear: Sequence[bool]) -> tuple[Region, list[bool]]:
        """The transpose of a linear body: `linear` flags the arguments it is
        linear in (the others are fixed). The new region takes one cotangent per
        body result (those of results that depend on no linear argument are
        unused), then the fixed arguments in order, and returns the cotangents
        of the linear arguments that receive one; the flags say which do."""
        ...


class Differentiable(ABC):
    """Mixin for op classes that carry their own AD rules."""

    @abstractmethod
    def jvp_rule(
        self, ctx: RuleContext, tangents: Sequence[SSAValue | None]
    ) -> Sequence[SSAValue | None]:
        """The JVP rule: one tangent per operand (None = symbolic zero) in, one
        tangent per result (None = zero) out. Called only when some tangent is
        not None. What it emits must be linear in the tangents."""

    @abstractmethod
    def transpose_rule(
        self, ctx: RuleContext, cotangents: Sequence[SSAValue | None]
    ) -> Sequence[SSAValue | None]:
        """The transpose rule of an op with a linearized role: one cotangent per
        result (None = zero) in, one cotangent per operand out (None for fixed
        operands and where nothing flows). Called only when some cotangent is
        not None. Reads the op's `active_mask` to know which operands are linear.
        Complex numbers: the adjoint for <a, b> = Re(conj(a)·b) (docs/complex.md)."""

    @abstractmethod
    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        """Whether the op is linear in the operands flagged active, jointly
        (e.g. mul: exactly one active; add: any; exp: none)."""

    def nonlinearity_note(self) -> str | None:
        """Why the op is not linear although its role marks operands active (an
        op whose JVP is not separable, like a while loop's), added to the error
        of the linearity check; None for none."""
        return None

    @classmethod
    @abstractmethod
    def accumulate(cls, lhs: SSAValue, rhs: SSAValue) -> Operation:
        """The dialect's addition op, used by `linear-transpose` to sum cotangents
        that reach the same value (fan-out). Not yet inserted anywhere."""

    @classmethod
    def accumulate_all(cls, ctx: RuleContext, values: Sequence[SSAValue]) -> SSAValue:
        """The sum of the cotangents `values` (two or more) reaching one value,
        emitted with `ctx`: `accumulate` folded in order by default. A dialect
        may sum them at once (pieces of one array into one buffer)."""
        total = values[0]
        for value in values[1:]:
            total = ctx.emit(cls.accumulate(total, value)).results[0]
        return total


def active_mask_of(op: Operation) -> tuple[bool, ...]:
    """The active mask of a linearized op (all fixed for a primary op)."""
    role = role_of(op)
    return role.active_mask if role is not None else (False,) * len(op.operands)
