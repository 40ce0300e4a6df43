"""`verify-linearity{graph=@f::@jvp1}`: prove linear fragments linear in their
tangent inputs, or name the offending op (see `tidu_mlir.ad.linearity`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from tidu_mlir.ad.linearity import verify_linearity, verify_module_linearity
from tidu_mlir.dialects.cg import LinearOp
from tidu_mlir.graph import FragmentNotFoundError, lookup_fragment
from tidu_mlir.passes.options import fragment_lookup_failed


@dataclass(frozen=True)
class VerifyLinearityPass(ModulePass):
    """Option: `graph` (one `cg.linear`; default every `cg.linear` of the module)."""

    name = "verify-linearity"

    graph: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.graph is None:
            verify_module_linearity(op)
            return
        try:
            fragment = lookup_fragment(op, self.graph)
        except FragmentNotFoundError as error:
            raise fragment_lookup_failed(error) from error
        if not isinstance(fragment, LinearOp):
            raise PassFailedException(
                f"verify-linearity checks cg.linear fragments; '{self.graph}' is a cg.graph"
            )
        verify_linearity(fragment)
