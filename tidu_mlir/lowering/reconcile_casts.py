"""`reconcile-casts`: remove the `builtin.unrealized_conversion_cast` chains the
partial conversions to the `llvm` dialect leave behind.

A chain starts at a cast of values `x` and follows the casts using its results
(each must take exactly the previous cast's results). It goes away when every
cast in it whose results something else uses (a *live* cast) gives back the
types of `x`: those uses then take `x` itself, and every cast of the chain is
erased. A chain that does not close that way is left as it is (the check of
the lowered module then names the op that still needs it).

The rule is that of xDSL's `reconcile-unrealized-casts`; this pass applies it
to each cast once, in program order, instead of driving xDSL's pattern walker
over every op of the module (its worklist cost more than the removals: 0.22
of 0.25 s on the 27,000 ops of a 250-step chain's gradient).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnrealizedConversionCastOp
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

Casts = list[UnrealizedConversionCastOp]


def _chain(root: UnrealizedConversionCastOp) -> tuple[Casts, Casts] | None:
    """The casts of the chain starting at `root`: those whose results are used
    by other ops or not at all (`live`), and those used by casts only
    (`inner`, users before their producers); None if it does not close."""
    live: Casts = []
    inner: Casts = []
    to_visit = [root]
    while to_visit:
        cast = to_visit.pop()
        used_by_others = used = False
        for result in cast.results:
            for use in result.uses:
                used = True
                user = use.operation
                if not isinstance(user, UnrealizedConversionCastOp):
                    used_by_others = True
                elif tuple(user.inputs) != tuple(cast.results):
                    return None
                else:
                    to_visit.append(user)
        if used_by_others and cast.result_types != root.inputs.types:
            return None
        if used_by_others or not used:
            live.append(cast)
        else:
            inner.insert(0, cast)
    return live, inner


def remove_cast_chain(root: UnrealizedConversionCastOp) -> bool:
    """Remove the chain starting at `root` if it closes; whether it did."""
    chain = _chain(root)
    if chain is None:
        return False
    live, inner = chain
    inputs = list(root.inputs)
    for cast in live:
        for result, value in zip(cast.results, inputs, strict=True):
            result.replace_all_uses_with(value)
        Rewriter.erase_op(cast)
    for cast in inner:
        Rewriter.erase_op(cast)
    return True


@dataclass(frozen=True)
class ReconcileCastsPass(ModulePass):
    """Remove the cast chains that close (see the module docstring)."""

    name = "reconcile-casts"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        casts = [c for c in op.walk() if isinstance(c, UnrealizedConversionCastOp)]
        while casts:  # a removal can let an earlier chain close: try those again
            kept = [c for c in casts if c.parent is not None and not remove_cast_chain(c)]
            if len(kept) == len(casts):
                return
            casts = kept
