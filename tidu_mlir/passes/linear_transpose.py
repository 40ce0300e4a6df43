"""`linear-transpose{graph=@f::@jvp1 name=vjp}`: transpose a linear fragment
into a new `cg.linear` nested in it (a wrapper over
`tidu_mlir.ad.linear_transpose`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from tidu_mlir.ad.transpose import linear_transpose
from tidu_mlir.passes.options import SymNameOptionPass, find_linear_fragment


@dataclass(frozen=True)
class LinearTransposePass(SymNameOptionPass):
    """Options: `graph` (path of a `cg.linear`), `name` (default `vjp<N>`)."""

    name = "linear-transpose"

    graph: str
    sym_name: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        requirement = "linear-transpose needs a cg.linear fragment"
        linear_transpose(find_linear_fragment(op, self.graph, requirement), self.sym_name)
