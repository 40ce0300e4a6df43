"""`linearize{graph=@f wrt=x,y outputs=0 name=jvp}`: the JVP of a fragment as a
new `cg.linear` fragment (a wrapper over `tidu_mlir.ad.linearize`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from tidu_mlir.ad.jvp import linearize
from tidu_mlir.passes.options import SymNameOptionPass, find_fragment


@dataclass(frozen=True)
class LinearizePass(SymNameOptionPass):
    """Linearize a fragment (JVP, forward mode): a new `cg.linear` fragment,
    nested in it, maps tangents of the chosen inputs to tangents of its outputs.

    Options:
        graph: the fragment to linearize, by path (`@f`, `@f::@vjp2`).
        wrt: the input keys to differentiate with respect to, each seeding
            one tangent input in this order: `x`, `tangent(x,1)`,
            `cotangent(0,2)`, `residual(0,3)`.
        outputs: the indices of the outputs to linearize; unset: all.
        name: the new fragment's symbol; unset: `jvp<N>` (N the pass id).
    """

    name = "linearize"

    graph: str
    wrt: tuple[str, ...] = ()
    outputs: tuple[int, ...] | None = None
    sym_name: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fragment = find_fragment(op, self.graph)
        linearize(fragment, self.outputs, self.wrt, name=self.sym_name)
