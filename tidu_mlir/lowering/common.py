"""Type conversion and helpers shared by the conversions to the `llvm` dialect.

The conversions follow MLIR's partial-conversion style: a pattern rewrites one op
into `llvm` ops whose operands and results have *legal* types (`legal_type`),
bridging to not-yet-converted neighbours with `builtin.unrealized_conversion_cast`.
`reconcile-unrealized-casts` removes the cast pairs once every pass has run, so
the passes can run in any order and each stays small.

Legal types: `index` becomes `i64`; every `memref` becomes an opaque `!llvm.ptr`
to its first element (static shapes only, see docs/lowering.md); all other types
are kept.
"""

import ctypes.util
from collections.abc import Sequence

import llvmlite.binding as llvm_binding
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
    ModuleOp,
    UnrealizedConversionCastOp,
    VectorType,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint
from xdsl.traits import SymbolTable


def legal_type(typ: Attribute) -> Attribute:
    """The type `typ` has after lowering to the `llvm` dialect."""
    if isinstance(typ, IndexType):
        return i64
    if isinstance(typ, MemRefType):
        return llvm.LLVMPointerType()
    return typ


def to_legal(value: SSAValue, rewriter: PatternRewriter) -> SSAValue:
    """`value` as a value of its legal type, casting before the matched op if needed."""
    target = legal_type(value.type)
    if target == value.type:
        return value
    owner = value.owner
    if (
        isinstance(owner, UnrealizedConversionCastOp)
        and len(owner.inputs) == 1
        and owner.inputs[0].type == target
    ):
        return owner.inputs[0]
    cast = UnrealizedConversionCastOp.get([value], [target])
    rewriter.insert(cast)
    return cast.results[0]


def legal_operands(op: Operation, rewriter: PatternRewriter) -> list[SSAValue]:
    """All operands of `op`, converted to legal types."""
    return [to_legal(operand, rewriter) for operand in op.operands]


def replace_with_legal(
    op: Operation,
    new_ops: Sequence[Operation],
    rewriter: PatternRewriter,
    new_results: Sequence[SSAValue] | None = None,
) -> None:
    """Replace `op`, casting each new (legal-typed) result back to the old type."""
    results = list(new_ops[-1].results if new_results is None else new_results)
    casts: list[Operation] = []
    for i, (old, new) in enumerate(zip(op.results, results, strict=True)):
        if old.type != new.type:
            cast = UnrealizedConversionCastOp.get([new], [old.type])
            casts.append(cast)
            results[i] = cast.results[0]
    rewriter.replace(op, [*new_ops, *casts], results)


def convert_block_argument_types(block: Block, rewriter: PatternRewriter) -> None:
    """Give the arguments of `block` their legal types; old uses read a cast at its start."""
    for arg in block.args:
        target = legal_type(arg.type)
        if target == arg.type:
            continue
        old_type = arg.type
        new_arg = rewriter.replace_value_with_new_type(arg, target)
        if not new_arg.uses:
            continue
        cast = UnrealizedConversionCastOp.get([new_arg], [old_type])
        rewriter.insert(cast, InsertPoint.at_start(block))
        rewriter.replace_uses_with_if(
            new_arg, cast.results[0], lambda use, cast=cast: use.operation is not cast
        )


def intrinsic_suffix(typ: Attribute) -> str:
    """LLVM's type mangling for overloaded intrinsics: `f64`, `i32`, `v4f64`."""
    match typ:
        case Float16Type():
            return "f16"
        case Float32Type():
            return "f32"
        case Float64Type():
            return "f64"
        case IntegerType():
            return f"i{typ.width.data}"
        case VectorType() if typ.get_num_dims() == 1:
            return f"v{typ.get_shape()[0]}{intrinsic_suffix(typ.element_type)}"
        case _:
            raise ValueError(f"no intrinsic mangling for type {typ}")


def declare_functions(module: ModuleOp, declarations: dict[str, llvm.LLVMFunctionType]) -> None:
    """Declare each external function `name: type` that `module` does not define yet."""
    for name, function_type in declarations.items():
        if SymbolTable.lookup_symbol(module, name) is None:
            decl = llvm.FuncOp(name, function_type, linkage=llvm.LinkageAttr("external"))
            module.body.block.add_op(decl)


def load_system_library(short_name: str) -> bool:
    """Load `lib<short_name>.so` into the process for MCJIT's symbol lookup;
    False when it is missing or cannot be loaded."""
    path = ctypes.util.find_library(short_name)
    if path is None:
        return False
    try:
        llvm_binding.load_library_permanently(path)
    except RuntimeError:
        return False
    return True
