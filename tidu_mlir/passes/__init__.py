"""The AD passes, one module each, by command-line name."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def _batch() -> type[ModulePass]:
    from tidu_mlir.passes.batch import BatchPass

    return BatchPass


def _linearize() -> type[ModulePass]:
    from tidu_mlir.passes.linearize import LinearizePass

    return LinearizePass


def _linear_transpose() -> type[ModulePass]:
    from tidu_mlir.passes.linear_transpose import LinearTransposePass

    return LinearTransposePass


def _materialize() -> type[ModulePass]:
    from tidu_mlir.passes.materialize import MaterializePass

    return MaterializePass


def _unzip() -> type[ModulePass]:
    from tidu_mlir.passes.unzip import UnzipPass

    return UnzipPass


def _verify_linearity() -> type[ModulePass]:
    from tidu_mlir.passes.verify_linearity import VerifyLinearityPass

    return VerifyLinearityPass


AD_PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "batch": _batch,
    "linearize": _linearize,
    "linear-transpose": _linear_transpose,
    "materialize": _materialize,
    "unzip": _unzip,
    "verify-linearity": _verify_linearity,
}
