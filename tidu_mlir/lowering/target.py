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
from xdsl.dialects import llvm
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target

from tidu_mlir.dialects.cg import GraphOp
from tidu_mlir.lowering.backend import translate_to_llvm_ir


@dataclass(frozen=True)
class LLVMTarget(Target):
    """Print the module, lowered to the `llvm` dialect, as LLVM IR."""

    name = "llvm"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        _check_something_to_translate(module)
        output.write(translate_to_llvm_ir(module))


def _check_something_to_translate(module: ModuleOp) -> None:
    """A module of `cg.graph` fragments only would print an empty LLVM module:
    say which pass turns a fragment into a function instead."""
    graphs = [op.sym_name.data for op in module.ops if isinstance(op, GraphOp)]
    if graphs and not any(isinstance(op, llvm.FuncOp) for op in module.ops):
        listed = ", ".join(f"@{name}" for name in graphs)
        raise DiagnosticException(
            f"error: nothing to translate to LLVM IR: the module holds only cg.graph fragments "
            f"({listed}); materialize one into a function first, e.g. "
            f"-p 'materialize{{graph=@{graphs[0]} name={graphs[0]}_fn}},lower-to-llvm'"
        )
