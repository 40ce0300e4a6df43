"""Lowering to the `llvm` dialect and the llvmlite JIT (see docs/lowering.md)."""

from collections.abc import Callable

from xdsl.passes import ModulePass


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


LOWERING_PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "convert-arith-to-llvm": _arith,
    "convert-math-to-llvm": _math,
    "convert-func-to-llvm": _func,
    "convert-cf-to-llvm": _cf,
    "convert-memref-to-llvm": _memref,
}
"""Command-line pass names -> pass classes, imported lazily (for `tidu-opt`)."""
