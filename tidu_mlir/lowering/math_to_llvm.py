"""`convert-math-to-llvm`: the `math` dialect to the `llvm` dialect.

Every function with an LLVM intrinsic becomes `llvm.call_intrinsic` with the
type-mangled name (`llvm.exp.f64`, `llvm.exp.f32`, `llvm.exp.v4f64`). xDSL's own
`llvm.intr.*` ops are avoided on purpose: its backend declares them unmangled
(`llvm.exp`), so f32 and f64 uses in one module clash.

`math.tanh` uses the `llvm.tanh` intrinsic (LLVM >= 19; llvmlite 0.50 ships
LLVM 22): it is lowered to libm's correctly rounded-ish `tanh`, stays
vectorizable by the loop vectorizer, and avoids the cancellation of the
`1 - 2/(exp(2x)+1)` formula near zero. Functions without an intrinsic
(expm1, log1p, cbrt, erf) call libm directly.
"""

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import llvm, math
from xdsl.dialects.builtin import AnyFloat, Float32Type, FloatAttr, ModuleOp, VectorType
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.utils.exceptions import DiagnosticException

from tidu_mlir.lowering.common import (
    declare_functions,
    intrinsic_suffix,
    legal_operands,
    rewrite_by_type,
)

INTRINSIC: dict[type[Operation], str] = {
    math.ExpOp: "llvm.exp",
    math.Exp2Op: "llvm.exp2",
    math.LogOp: "llvm.log",
    math.Log2Op: "llvm.log2",
    math.Log10Op: "llvm.log10",
    math.SinOp: "llvm.sin",
    math.CosOp: "llvm.cos",
    math.TanOp: "llvm.tan",
    math.AsinOp: "llvm.asin",
    math.AcosOp: "llvm.acos",
    math.AtanOp: "llvm.atan",
    math.SinhOp: "llvm.sinh",
    math.CoshOp: "llvm.cosh",
    math.TanhOp: "llvm.tanh",
    math.SqrtOp: "llvm.sqrt",
    math.AbsFOp: "llvm.fabs",
    math.FloorOp: "llvm.floor",
    math.CeilOp: "llvm.ceil",
    math.TruncOp: "llvm.trunc",
    math.RoundOp: "llvm.round",
    math.RoundEvenOp: "llvm.roundeven",
    math.PowFOp: "llvm.pow",
    math.CopySignOp: "llvm.copysign",
    math.Atan2Op: "llvm.atan2",
}

LIBM: dict[type[Operation], str] = {
    math.ExpM1Op: "expm1",
    math.Log1pOp: "log1p",
    math.CbrtOp: "cbrt",
    math.ErfOp: "erf",
}


class ConvertIntrinsic(RewritePattern):
    """A math op with an LLVM intrinsic -> `llvm.call_intrinsic` of its mangled name."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if (name := INTRINSIC.get(type(op))) is None:
            return
        operands = legal_operands(op, rewriter)
        typ = op.results[0].type
        call = llvm.CallIntrinsicOp(f"{name}.{intrinsic_suffix(typ)}", operands, [typ])
        rewriter.replace(op, call)


class ConvertFma(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: math.FmaOp, rewriter: PatternRewriter, /) -> None:
        rewriter.replace(op, llvm.FMAOp(op.a, op.b, op.c))


class ConvertRsqrt(RewritePattern):
    """rsqrt(x) = 1 / sqrt(x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: math.RsqrtOp, rewriter: PatternRewriter, /) -> None:
        typ = op.result.type
        if not isinstance(typ, AnyFloat):
            raise DiagnosticException("math.rsqrt is lowered on scalars only")
        sqrt = llvm.CallIntrinsicOp(f"llvm.sqrt.{intrinsic_suffix(typ)}", [op.operand], [typ])
        one = llvm.ConstantOp(FloatAttr(1.0, typ), typ)
        rewriter.replace(op, [sqrt, one, llvm.FDivOp(one, sqrt)])


class ConvertFPowI(RewritePattern):
    """fpowi -> `llvm.powi.<float>.<int>`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: math.FPowIOp, rewriter: PatternRewriter, /) -> None:
        lhs, rhs = legal_operands(op, rewriter)
        name = f"llvm.powi.{intrinsic_suffix(lhs.type)}.{intrinsic_suffix(rhs.type)}"
        rewriter.replace(op, llvm.CallIntrinsicOp(name, [lhs, rhs], [lhs.type]))


@dataclass
class ConvertLibmCall(RewritePattern):
    """expm1/log1p/cbrt/erf -> `llvm.call` of the libm function (`expm1f` for f32).

    The functions called are collected in `declarations`, to be declared after the walk.
    """

    declarations: dict[str, llvm.LLVMFunctionType] = field(
        default_factory=dict[str, llvm.LLVMFunctionType]
    )

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if (base := LIBM.get(type(op))) is None:
            return
        typ = op.results[0].type
        if isinstance(typ, VectorType):
            raise DiagnosticException(f"{op.name} on vectors is not supported")
        name = base + "f" if isinstance(typ, Float32Type) else base
        self.declarations[name] = llvm.LLVMFunctionType([typ], typ)
        rewriter.replace(op, llvm.CallOp(name, *op.operands, return_type=typ))


@dataclass(frozen=True)
class ConvertMathToLLVMPass(ModulePass):
    """Lower every supported `math` op to the `llvm` dialect."""

    name = "convert-math-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        libm = ConvertLibmCall()
        patterns: dict[type[Operation], RewritePattern] = {
            **dict.fromkeys(INTRINSIC, ConvertIntrinsic()),
            **dict.fromkeys(LIBM, libm),
            math.FmaOp: ConvertFma(),
            math.RsqrtOp: ConvertRsqrt(),
            math.FPowIOp: ConvertFPowI(),
        }
        rewrite_by_type(op, patterns)
        declare_functions(op, libm.declarations)
