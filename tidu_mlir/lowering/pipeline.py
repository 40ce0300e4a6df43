"""The bottom half of the lowering pipeline: func/scf/arith/math/memref to `llvm`."""

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tidu_mlir.lowering.arith_to_llvm import ConvertArithToLLVMPass
from tidu_mlir.lowering.backend import check_llvm_module
from tidu_mlir.lowering.cf_to_llvm import ConvertCfToLLVMPass
from tidu_mlir.lowering.func_to_llvm import ConvertFuncToLLVMPass
from tidu_mlir.lowering.math_to_llvm import ConvertMathToLLVMPass
from tidu_mlir.lowering.memref_to_llvm import ConvertMemrefToLLVMPass
from tidu_mlir.lowering.reconcile_casts import ReconcileCastsPass
from tidu_mlir.lowering.scf_to_cf import LowerScfToCfPass


def llvm_lowering_passes() -> list[ModulePass]:
    """The passes of `LLVM_LOWERING_PIPELINE`, in order.

    Structured control flow goes first (it creates the `cf` branches and `index`
    block arguments the later passes convert); `reconcile-casts` last
    removes the casts bridging the partial conversions.
    """
    return [
        LowerScfToCfPass(),
        ConvertMemrefToLLVMPass(),
        ConvertMathToLLVMPass(),
        ConvertArithToLLVMPass(),
        ConvertCfToLLVMPass(),
        ConvertFuncToLLVMPass(noalias=True),
        ReconcileCastsPass(),
    ]


LLVM_LOWERING_PIPELINE = ",".join(str(p.pipeline_pass_spec()) for p in llvm_lowering_passes())
"""The same pipeline in `tidu-opt -p` syntax."""


def lower_to_llvm_dialect(module: ModuleOp, ctx: Context | None = None) -> None:
    """Lower a module of func/scf/cf/arith/math/memref ops, in place, to the `llvm` dialect.

    Raises `DiagnosticException` naming the first op left unconverted.
    """
    ctx = ctx if ctx is not None else Context(allow_unregistered=True)
    for lowering_pass in llvm_lowering_passes():
        lowering_pass.apply(ctx, module)
    check_llvm_module(module)
