"""`convert-cf-to-llvm`: `cf.br` / `cf.cond_br` to `llvm.br` / `llvm.cond_br`.

Successor blocks get legal argument types (an `index` loop counter from
`lower-scf-to-cf` becomes `i64`), so the LLVM backend can build its phi nodes.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import cf, llvm
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from tidu_mlir.lowering.common import convert_block_argument_types, rewrite_by_type, to_legal


def _legal(values: Sequence[SSAValue], rewriter: PatternRewriter) -> list[SSAValue]:
    return [to_legal(value, rewriter) for value in values]


class ConvertBranch(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cf.BranchOp, rewriter: PatternRewriter, /) -> None:
        convert_block_argument_types(op.successor, rewriter)
        rewriter.replace(op, llvm.BrOp(op.successor, *_legal(op.arguments, rewriter)))


class ConvertCondBranch(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cf.ConditionalBranchOp, rewriter: PatternRewriter, /) -> None:
        convert_block_argument_types(op.then_block, rewriter)
        convert_block_argument_types(op.else_block, rewriter)
        new_op = llvm.CondBrOp(
            op.cond,
            op.then_block,
            _legal(op.then_arguments, rewriter),
            op.else_block,
            _legal(op.else_arguments, rewriter),
        )
        rewriter.replace(op, new_op)


@dataclass(frozen=True)
class ConvertCfToLLVMPass(ModulePass):
    """Lower unconditional and conditional branches to the `llvm` dialect."""

    name = "convert-cf-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_by_type(
            op, {cf.BranchOp: ConvertBranch(), cf.ConditionalBranchOp: ConvertCondBranch()}
        )
