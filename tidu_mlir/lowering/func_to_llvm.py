"""`convert-func-to-llvm`: `func.func` / `func.return` / `func.call` to the `llvm` dialect.

Signatures get legal types (memref -> `!llvm.ptr`, index -> `i64`). With
`noalias=true` every pointer argument of a function with a body is marked
`llvm.noalias`, which is what the JIT calling convention guarantees (outputs are
fresh buffers, inputs are read-only) and what lets LLVM vectorize without
runtime overlap checks. A `no_inline` unit attribute (`split-functions` parts)
becomes the `no_inline` property of the `llvm.func`.
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr, UnitAttr
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.utils.exceptions import DiagnosticException

from tidu_mlir.lowering.common import (
    convert_block_argument_types,
    legal_operands,
    legal_type,
    replace_with_legal,
    rewrite_by_type,
)
from tidu_mlir.lowering.split import NO_INLINE_ATTR


def _llvm_function_type(op: func.FuncOp) -> llvm.LLVMFunctionType:
    outputs = op.function_type.outputs.data
    if len(outputs) > 1:
        raise DiagnosticException(
            f"func.func @{op.sym_name.data}: more than one result cannot be lowered; "
            "return results through output buffers instead"
        )
    inputs = [legal_type(t) for t in op.function_type.inputs.data]
    output = legal_type(outputs[0]) if outputs else llvm.LLVMVoidType()
    return llvm.LLVMFunctionType(inputs, output)


def _arg_attrs(
    op: func.FuncOp, function_type: llvm.LLVMFunctionType, noalias: bool
) -> ArrayAttr[DictionaryAttr] | None:
    """The argument attributes of `op`, plus `llvm.noalias` on pointers if asked."""
    if op.arg_attrs is None and not noalias:
        return op.arg_attrs
    old = op.arg_attrs.data if op.arg_attrs is not None else ()
    dicts: list[DictionaryAttr] = []
    for i, typ in enumerate(function_type.inputs.data):
        attrs: dict[str, Attribute] = dict(old[i].data) if old else {}
        if noalias and isinstance(typ, llvm.LLVMPointerType):
            attrs["llvm.noalias"] = UnitAttr()
        dicts.append(DictionaryAttr(attrs))
    return ArrayAttr(dicts)


def _linkage(op: func.FuncOp, is_declaration: bool) -> str:
    """`internal` for private definitions (helpers: LLVM drops them once inlined)."""
    private = op.sym_visibility == StringAttr("private") and not is_declaration
    return "internal" if private else "external"


@dataclass
class ConvertFunc(RewritePattern):
    noalias: bool

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.FuncOp, rewriter: PatternRewriter, /) -> None:
        function_type = _llvm_function_type(op)
        is_declaration = op.is_declaration
        body = rewriter.move_region_contents_to_new_regions(op.body)
        if body.blocks:
            convert_block_argument_types(body.blocks[0], rewriter)
        arg_attrs = _arg_attrs(op, function_type, self.noalias and not is_declaration)
        props: dict[str, Attribute | None] = {"arg_attrs": arg_attrs}
        if NO_INLINE_ATTR in op.attributes:
            props["no_inline"] = UnitAttr()
        new_op = llvm.FuncOp(
            op.sym_name.data,
            function_type,
            linkage=llvm.LinkageAttr(_linkage(op, is_declaration)),
            body=body,
            other_props=props,
        )
        rewriter.replace(op, new_op)


class ConvertReturn(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.ReturnOp, rewriter: PatternRewriter, /) -> None:
        operands = legal_operands(op, rewriter)
        rewriter.replace(op, llvm.ReturnOp(operands[0] if operands else None))


class ConvertCall(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.CallOp, rewriter: PatternRewriter, /) -> None:
        if len(op.res) > 1:
            raise DiagnosticException(f"func.call @{op.callee.string_value()}: several results")
        return_type = legal_type(op.res[0].type) if op.res else None
        call = llvm.CallOp(op.callee, *legal_operands(op, rewriter), return_type=return_type)
        replace_with_legal(op, [call], rewriter)


@dataclass(frozen=True)
class ConvertFuncToLLVMPass(ModulePass):
    """Lower functions, returns and direct calls to the `llvm` dialect.

    Options:
        noalias: mark the pointer arguments of defined functions `llvm.noalias`.
    """

    name = "convert-func-to-llvm"

    noalias: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns: dict[type[Operation], RewritePattern] = {
            func.FuncOp: ConvertFunc(self.noalias),
            func.ReturnOp: ConvertReturn(),
            func.CallOp: ConvertCall(),
        }
        rewrite_by_type(op, patterns)
