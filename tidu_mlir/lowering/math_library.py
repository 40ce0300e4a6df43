"""Scalar math kernels emitted once per module as private functions, called from loops.

The real `tanh` kernel (`scalar.py`) expands to about 25 scalar ops. Inlined
at every use, a function with hundreds of them costs thousands of ops in
every xDSL pass below; as a private `func.func` per (kernel, type) each use is
one `func.call`. LLVM inlines these small functions
at O3 before the loop vectorizer runs, so the loops are vectorized as if the
kernel had been written inline (checked in tests: no call is left).
"""

from __future__ import annotations

from xdsl.builder import Builder
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from tidu_mlir.lowering.common import intrinsic_suffix
from tidu_mlir.lowering.scalar import Expansion, ScalarBuilder

KERNEL_PREFIX = "__tidu_"


class MathLibrary:
    """The kernel functions of one module, created on first use (a `scalar.KernelLibrary`)."""

    def __init__(self, module: ModuleOp):
        self.module = module
        self._names: set[str] = set()

    def call(self, b: Builder, name: str, a: SSAValue, expand: Expansion) -> SSAValue:
        """A call of kernel `name` on `a`, defining it with `expand` the first time."""
        symbol = f"{KERNEL_PREFIX}{name}_{intrinsic_suffix(a.type)}"
        if symbol not in self._names:
            self._names.add(symbol)
            self._define(symbol, a, expand)
        return b.insert(func.CallOp(symbol, [a], [a.type])).res[0]

    def _define(self, symbol: str, a: SSAValue, expand: Expansion) -> None:
        block = Block(arg_types=[a.type])
        body = ScalarBuilder(Builder(InsertPoint.at_end(block)), library=self)
        block.add_op(func.ReturnOp(expand(body, block.args[0])))
        function = func.FuncOp(
            symbol, ((a.type,), (a.type,)), Region(block), visibility=StringAttr("private")
        )
        self.module.body.block.add_op(function)
