"""`verify-linearity{graph=@f::@jvp1}`: prove linear fragments linear in their
tangent inputs, or name the offending op (see `tidu_mlir.ad.linearity`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tidu_mlir.ad.linearity import verify_linearity, verify_module_linearity
from tidu_mlir.passes.options import find_linear_fragment


@dataclass(frozen=True)
class VerifyLinearityPass(ModulePass):
    """Prove linear fragments linear in their tangent inputs, or fail naming the
    first op that is not (a check; the module is not changed).

    Options:
        graph: the `cg.linear` to check, by path; unset: every `cg.linear`.
    """

    name = "verify-linearity"

    graph: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.graph is None:
            verify_module_linearity(op)
            return
        requirement = "verify-linearity checks cg.linear fragments"
        verify_linearity(find_linear_fragment(op, self.graph, requirement))
