"""`lower-to-llvm`: the whole lowering, prim on tensors to the `llvm` dialect, as one pass.

Steps: `fuse-recorded-loops` (forward-mode while loops in one loop),
`prim-bufferize` (buffer calling convention), `convert-prim-to-loops`
(fused loop nests), `parallelize-loops` (large nests on all cores),
`split-functions` (large functions cut into bounded-size parts),
`promote-buffers-to-stack` (small temporaries in the frame), then the
bottom half (`pipeline.llvm_lowering_passes`: scf/memref/math/arith/cf/func to
llvm, reconcile casts). `tidu-opt -p
lower-to-llvm -t llvm FILE` prints the resulting LLVM IR.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tidu_mlir.lowering.bufferize import PrimBufferizePass
from tidu_mlir.lowering.fuse_loops import FuseRecordedLoopsPass
from tidu_mlir.lowering.parallel import ParallelizeLoopsPass
from tidu_mlir.lowering.pipeline import lower_to_llvm_dialect
from tidu_mlir.lowering.pool_buffers import PoolBuffersPass
from tidu_mlir.lowering.prim_to_loops import ConvertPrimToLoopsPass
from tidu_mlir.lowering.promote_buffers import PromoteBuffersToStackPass
from tidu_mlir.lowering.split import SplitFunctionsPass


def lower_prim_to_loops(module: ModuleOp, ctx: Context | None = None) -> None:
    """Bufferize and lower the prim ops of `module` to loop nests (recorded
    loops fused with their forward replay, large nests parallel, large
    functions split into parts, small temporaries on the stack, the other
    small ones in one allocation per function), in place."""
    ctx = ctx if ctx is not None else Context(allow_unregistered=True)
    FuseRecordedLoopsPass().apply(ctx, module)
    PrimBufferizePass().apply(ctx, module)
    ConvertPrimToLoopsPass().apply(ctx, module)
    ParallelizeLoopsPass().apply(ctx, module)
    SplitFunctionsPass().apply(ctx, module)
    PromoteBuffersToStackPass().apply(ctx, module)
    PoolBuffersPass().apply(ctx, module)


@dataclass(frozen=True)
class LowerToLLVMPass(ModulePass):
    """Run every lowering step from prim on tensors to the `llvm` dialect."""

    name = "lower-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower_prim_to_loops(op, ctx)
        lower_to_llvm_dialect(op, ctx)
