"""`linear-transpose{graph=@f::@jvp1 name=vjp add=prim.add}`: transpose a
linear fragment into a new `cg.linear` nested in it (a wrapper over
`tidu_mlir.ad.linear_transpose`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import PassFailedException

from tidu_mlir.ad.transpose import Accumulator, linear_transpose
from tidu_mlir.interfaces import Differentiable
from tidu_mlir.passes.options import SymNameOptionPass, find_linear_fragment


@dataclass(frozen=True)
class LinearTransposePass(SymNameOptionPass):
    """Transpose a linear fragment (reverse mode): a new `cg.linear`, nested in
    it, maps cotangents of its outputs to cotangents of its tangent inputs;
    fan-out is summed by adds.

    Options:
        graph: the `cg.linear` to transpose, by path (`@f::@jvp1`).
        name: the new fragment's symbol; unset: `vjp<N>` (N the pass id).
        add: the op summing cotangents (`prim.add`), needed only when the
            fragments hold no differentiable op to take the dialect's addition
            from (e.g. an input returned twice).
    """

    name = "linear-transpose"

    graph: str
    sym_name: str | None = None
    add: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        requirement = "linear-transpose needs a cg.linear fragment"
        fragment = find_linear_fragment(op, self.graph, requirement)
        linear_transpose(fragment, self.sym_name, _accumulator(ctx, self.add))


def _accumulator(ctx: Context, name: str | None) -> Accumulator | None:
    """The differentiable op class called `name`, whose `accumulate` sums cotangents."""
    if name is None:
        return None
    op_class = ctx.get_optional_op(name)
    if op_class is None or not issubclass(op_class, Differentiable):
        raise PassFailedException(f"add={name} is not a differentiable op of a loaded dialect")
    return op_class
