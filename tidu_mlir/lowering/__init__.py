"""Lowering to the `llvm` dialect and the llvmlite JIT (see docs/lowering.md)."""

from collections.abc import Callable

from xdsl.passes import ModulePass
from xdsl.utils.target import Target


def _arith() -> type[ModulePass]:
    from tidu_mlir.lowering.arith_to_llvm import ConvertArithToLLVMPass

    return ConvertArithToLLVMPass


def _math() -> type[ModulePass]:
    from tidu_mlir.lowering.math_to_llvm import ConvertMathToLLVMPass

    return ConvertMathToLLVMPass


def _func() -> type[ModulePass]:
    from tidu_mlir.lowering.func_to_llvm import ConvertFuncToLLVMPass

    return ConvertFuncToLLVMPass


def _cf() -> type[ModulePass]:
    from tidu_mlir.lowering.cf_to_llvm import ConvertCfToLLVMPass

    return ConvertCfToLLVMPass


def _memref() -> type[ModulePass]:
    from tidu_mlir.lowering.memref_to_llvm import ConvertMemrefToLLVMPass

    return ConvertMemrefToLLVMPass


def _scf_to_cf() -> type[ModulePass]:
    from tidu_mlir.lowering.scf_to_cf import LowerScfToCfPass

    return LowerScfToCfPass


def _fuse_loops() -> type[ModulePass]:
    from tidu_mlir.lowering.fuse_loops import FuseRecordedLoopsPass

    return FuseRecordedLoopsPass


def _bufferize() -> type[ModulePass]:
    from tidu_mlir.lowering.bufferize import PrimBufferizePass

    return PrimBufferizePass


def _prim_to_loops() -> type[ModulePass]:
    from tidu_mlir.lowering.prim_to_loops import ConvertPrimToLoopsPass

    return ConvertPrimToLoopsPass


def _parallelize() -> type[ModulePass]:
    from tidu_mlir.lowering.parallel import ParallelizeLoopsPass

    return ParallelizeLoopsPass


def _split() -> type[ModulePass]:
    from tidu_mlir.lowering.split import SplitFunctionsPass

    return SplitFunctionsPass


def _promote_buffers() -> type[ModulePass]:
    from tidu_mlir.lowering.promote_buffers import PromoteBuffersToStackPass

    return PromoteBuffersToStackPass


def _reconcile_casts() -> type[ModulePass]:
    from tidu_mlir.lowering.reconcile_casts import ReconcileCastsPass

    return ReconcileCastsPass


def _pool_buffers() -> type[ModulePass]:
    from tidu_mlir.lowering.pool_buffers import PoolBuffersPass

    return PoolBuffersPass


def _lower_to_llvm() -> type[ModulePass]:
    from tidu_mlir.lowering.lower_to_llvm import LowerToLLVMPass

    return LowerToLLVMPass


def _llvm_target() -> type[Target]:
    from tidu_mlir.lowering.target import LLVMTarget

    return LLVMTarget


LOWERING_PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "fuse-recorded-loops": _fuse_loops,
    "prim-bufferize": _bufferize,
    "convert-prim-to-loops": _prim_to_loops,
    "parallelize-loops": _parallelize,
    "split-functions": _split,
    "promote-buffers-to-stack": _promote_buffers,
    "pool-buffers": _pool_buffers,
    "lower-to-llvm": _lower_to_llvm,
    "convert-arith-to-llvm": _arith,
    "convert-math-to-llvm": _math,
    "convert-func-to-llvm": _func,
    "lower-scf-to-cf": _scf_to_cf,
    "convert-cf-to-llvm": _cf,
    "convert-memref-to-llvm": _memref,
    "reconcile-casts": _reconcile_casts,
}
"""Command-line pass names -> pass classes, imported lazily (for `tidu-opt`)."""

LOWERING_TARGETS: dict[str, Callable[[], type[Target]]] = {"llvm": _llvm_target}
"""`-t` output targets of `tidu-opt` (`llvm` prints LLVM IR; replaces xDSL's own)."""
