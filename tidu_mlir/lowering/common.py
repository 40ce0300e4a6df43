"""Type conversion and helpers shared by the conversions to the `llvm` dialect.

The conversions follow MLIR's partial-conversion style: a pattern rewrites one op
into `llvm` ops whose operands and results have *legal* types (`legal_type`),
bridging to not-yet-converted neighbours with `builtin.unrealized_conversion_cast`.
`reconcile-casts` removes the cast chains once every pass has run, so
the passes can run in any order and each stays small.

Legal types: `index` becomes `i64`; every `memref` becomes an opaque `!llvm.ptr`
to its first element (static shapes only, see docs/lowering.md); all other types
are kept.
"""

import ctypes.util
from collections.abc import Mapping, Sequence

import llvmlite.binding as llvm_binding
from xdsl.builder import Builder
from xdsl.dialects import func, llvm
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
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint
from xdsl.traits import SymbolTable

from tidu_mlir.lowering.llvm_ops import POINTER


def rewrite_by_type(root: Operation, patterns: Mapping[type[Operation], RewritePattern]) -> None:
    """Apply to each op nested in `root`, once and in order, the pattern of its type.

    A direct walk instead of xDSL's `PatternRewriteWalker`, whose worklist, dead-op
    checks and trial of every pattern on every op cost more than the conversions
    themselves (docs/lowering.md). The patterns replace the matched op, possibly
    inserting ops before it; the ops they create are not visited.
    """
    for op in list(root.walk()):
        if (pattern := patterns.get(type(op))) is not None:
            pattern.match_and_rewrite(op, PatternRewriter(op))


def cast_to(value: SSAValue, typ: Attribute) -> UnrealizedConversionCastOp:
    """`builtin.unrealized_conversion_cast` of `value` to `typ` (built with
    `create`, without the IRDL constructor's argument checks: the conversions
    make thousands)."""
    return UnrealizedConversionCastOp.create(operands=[value], result_types=[typ])


def legal_type(typ: Attribute) -> Attribute:
    """The type `typ` has after lowering to the `llvm` dialect."""
    if isinstance(typ, IndexType):
        return i64
    if isinstance(typ, MemRefType):
        return POINTER
    return typ


def _is_cast(op: Operation, source: Attribute, target: Attribute) -> bool:
    """Whether `op` is a cast of one value of type `source` to `target`."""
    return (
        isinstance(op, UnrealizedConversionCastOp)
        and len(op.inputs) == 1
        and op.inputs[0].type == source
        and op.results[0].type == target
    )


def to_legal(value: SSAValue, rewriter: PatternRewriter) -> SSAValue:
    """`value` as a value of its legal type, casting if needed.

    The cast goes right where `value` is defined (after its op, or at the start of
    its block), so it serves every later use: a loop counter or a buffer read by
    many ops is cast once, not once per use. The cast made last is the value's
    first use, where the next call finds it.
    """
    target = legal_type(value.type)
    if target == value.type:
        return value
    owner = value.owner
    if isinstance(owner, Operation) and _is_cast(owner, target, value.type):
        return owner.operands[0]
    if (use := value.first_use) is not None and _is_cast(use.operation, value.type, target):
        cast = use.operation
        if cast.parent is owner if isinstance(owner, Block) else cast.prev_op is owner:
            return cast.results[0]
    cast = cast_to(value, target)
    at = InsertPoint.at_start(owner) if isinstance(owner, Block) else InsertPoint.after(owner)
    rewriter.insert(cast, at)
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
            cast = cast_to(new, old.type)
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
        cast = cast_to(new_arg, old_type)
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


def call_external(
    module: ModuleOp,
    b: Builder,
    symbol: str,
    args: Sequence[SSAValue],
    results: Sequence[Attribute] = (),
) -> func.CallOp:
    """Insert at `b` a call of the external function `symbol`, declaring it in
    `module` (from the argument and result types) on first use."""
    if SymbolTable.lookup_symbol(module, symbol) is None:
        module.body.block.add_op(
            func.FuncOp.external(symbol, [a.type for a in args], list(results))
        )
    return b.insert(func.CallOp(symbol, list(args), list(results)))


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
