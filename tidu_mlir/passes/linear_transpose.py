"""`linear-transpose{graph=@f::@jvp1 name=vjp}`: transpose a linear fragment
into a new `cg.linear` nested in it (a wrapper over
`tidu_mlir.ad.linear_transpose`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import PassFailedException

from tidu_mlir.ad.transpose import linear_transpose
from tidu_mlir.dialects.cg import LinearOp
from tidu_mlir.graph import FragmentNotFoundError, lookup_fragment
from tidu_mlir.passes.options import SymNameOptionPass, fragment_lookup_failed


@dataclass(frozen=True)
class LinearTransposePass(SymNameOptionPass):
    """Options: `graph` (path of a `cg.linear`), `name` (default `vjp<N>`)."""

    name = "linear-transpose"

    graph: str
    sym_name: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            fragment = lookup_fragment(op, self.graph)
        except FragmentNotFoundError as error:
            raise fragment_lookup_failed(error) from error
        if not isinstance(fragment, LinearOp):
            raise PassFailedException(
                f"linear-transpose needs a cg.linear fragment; '{self.graph}' is a cg.graph"
            )
        linear_transpose(fragment, self.sym_name)
