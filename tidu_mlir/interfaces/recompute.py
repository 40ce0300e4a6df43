"""The recomputation contract: whether an op is cheap enough to recompute
instead of saving its result for the linear part of a derivative.

The rematerialization policies of `unzip` ask only this, never an op name.
A dialect declares it per op class with the `RecomputeCost` trait:
`RecomputeCost(cheap=True)` for elementwise and data-movement ops (work
proportional to the result, no contraction or reduction),
`RecomputeCost(cheap=False)` for contractions and reductions. Op classes that
declare nothing are classified by their shapes (see `is_cheap_to_recompute`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import ShapedType
from xdsl.ir import Attribute, Operation
from xdsl.traits import OpTrait, Pure


@dataclass(frozen=True)
class RecomputeCost(OpTrait):
    """Whether recomputing the op is cheap (elementwise-like) or not (a
    contraction or a reduction, whose result is worth saving)."""

    cheap: bool


def is_recomputable(op: Operation) -> bool:
    """Whether `op` may be run again at all: it is `Pure` (no side effects)."""
    return op.has_trait(Pure)


def is_cheap_to_recompute(op: Operation) -> bool:
    """Whether `op` is pure and cheap to recompute.

    The op class's `RecomputeCost` decides (a class holding several, its
    base's and its own, is cheap only if all say so: the ones overriding a
    base declare the costlier); without one, a pure op counts as
    elementwise, hence cheap, when every result has the shape of every tensor
    operand (or it has no operand, a constant). That fallback cannot tell a
    contraction of square matrices from an elementwise op: dialects with
    contractions should declare `RecomputeCost`.
    """
    if not is_recomputable(op):
        return False
    costs = op.get_traits_of_type(RecomputeCost)
    if costs:
        return all(cost.cheap for cost in costs)
    shapes = {_shape(value.type) for value in (*op.operands, *op.results)}
    return len(shapes) == 1


def _shape(type_: Attribute) -> tuple[int, ...] | None:
    """The static shape of a shaped type (None for other types)."""
    return tuple(type_.get_shape()) if isinstance(type_, ShapedType) else None
