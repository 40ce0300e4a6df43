"""`materialize{graph=@f::@jvp1 name=f_jvp}`: a fragment and everything it
references as one `func.func` (a wrapper over `tidu_mlir.ad.materialize`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from tidu_mlir.ad.materialization import materialize
from tidu_mlir.passes.options import SymNameOptionPass, find_fragment


@dataclass(frozen=True)
class MaterializePass(SymNameOptionPass):
    """Materialize a fragment as a self-contained `func.func`: it and every
    value it references from enclosing fragments, its arguments in the
    documented input order (what `lower-to-llvm` and `tidu-run` take).

    Options:
        graph: the fragment to materialize, by path (`@f::@jvp1::@vjp2`).
        name: the function's symbol; unset: the path with `::` as `_`
            (`@f::@jvp1` gives `f_jvp1`).
    """

    name = "materialize"

    graph: str
    sym_name: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        materialize(find_fragment(op, self.graph), self.sym_name)
