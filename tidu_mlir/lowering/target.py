"""The `llvm` output target of `tidu-opt -t llvm`: LLVM IR text of an `llvm`-dialect module.

Unlike xDSL's own `llvm` target it checks that everything was lowered (a
diagnostic names the first op that was not) and sets the host triple and data
layout. The IR is printed before optimization, as produced by the translation.
`cg.graph` fragments are the AD source that materialized functions were made
from; they stay in the module and are not translated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target

from tidu_mlir.lowering.backend import translate_to_llvm_ir


@dataclass(frozen=True)
class LLVMTarget(Target):
    """Print the module, lowered to the `llvm` dialect, as LLVM IR."""

    name = "llvm"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(translate_to_llvm_ir(module))
