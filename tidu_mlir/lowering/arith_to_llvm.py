"""`convert-arith-to-llvm`: the `arith` dialect to the `llvm` dialect.

xDSL 0.74 has no such conversion. Ops without an `llvm` dialect counterpart in
xDSL (min/max, fptosi/fptoui) become `llvm.call_intrinsic` with a type-mangled
intrinsic name, because the LLVM backend declares unmangled intrinsics once per
module (see docs/lowering.md). `index` values become `i64`.
"""

import functools
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    i64,
)
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from tidu_mlir.lowering.common import (
    intrinsic_suffix,
    legal_operands,
    legal_type,
    replace_with_legal,
    rewrite_by_type,
    to_legal,
)
from tidu_mlir.lowering.llvm_ops import constant, float_binary, integer_binary

FLOAT_BINARY: dict[type[Operation], type[llvm.AbstractFloatArithOp]] = {
    arith.AddfOp: llvm.FAddOp,
    arith.SubfOp: llvm.FSubOp,
    arith.MulfOp: llvm.FMulOp,
    arith.DivfOp: llvm.FDivOp,
}

INT_BINARY_OVERFLOW: dict[type[Operation], type[llvm.ArithmeticBinOpOverflow]] = {
    arith.AddiOp: llvm.AddOp,
    arith.SubiOp: llvm.SubOp,
    arith.MuliOp: llvm.MulOp,
    arith.ShLIOp: llvm.ShlOp,
}

INT_BINARY: dict[type[Operation], type[Operation]] = {
    arith.DivSIOp: llvm.SDivOp,
    arith.DivUIOp: llvm.UDivOp,
    arith.RemSIOp: llvm.SRemOp,
    arith.RemUIOp: llvm.URemOp,
    arith.AndIOp: llvm.AndOp,
    arith.OrIOp: llvm.OrOp,
    arith.XOrIOp: llvm.XOrOp,
    arith.ShRSIOp: llvm.AShrOp,
    arith.ShRUIOp: llvm.LShrOp,
}

BINARY_INTRINSIC: dict[type[Operation], str] = {
    arith.MinimumfOp: "llvm.minimum",
    arith.MaximumfOp: "llvm.maximum",
    arith.MinnumfOp: "llvm.minnum",
    arith.MaxnumfOp: "llvm.maxnum",
    arith.MinSIOp: "llvm.smin",
    arith.MaxSIOp: "llvm.smax",
    arith.MinUIOp: "llvm.umin",
    arith.MaxUIOp: "llvm.umax",
}

CAST: dict[type[Operation], type[Operation]] = {
    arith.SIToFPOp: llvm.SIToFPOp,
    arith.ExtFOp: llvm.FPExtOp,
    arith.TruncFOp: llvm.FPTruncOp,
    arith.BitcastOp: llvm.BitcastOp,
    arith.ExtSIOp: llvm.SExtOp,
    arith.ExtUIOp: llvm.ZExtOp,
    arith.TruncIOp: llvm.TruncOp,
}

# Saturating conversions: equal to fptosi/fptoui wherever those are defined
# (their out-of-range results are poison), and expressible as intrinsics.
FLOAT_TO_INT_INTRINSIC: dict[type[Operation], str] = {
    arith.FPToSIOp: "llvm.fptosi.sat",
    arith.FPToUIOp: "llvm.fptoui.sat",
}


def _fastmath(op: Operation) -> llvm.FastMathAttr:
    flags = op.properties.get("fastmath")
    assert isinstance(flags, arith.FastMathFlagsAttr)
    return _llvm_fastmath(flags)


@functools.cache
def _llvm_fastmath(flags: arith.FastMathFlagsAttr) -> llvm.FastMathAttr:
    # As enum members: xDSL's LLVM backend reads `flag.value` (plain strings crash it).
    return llvm.FastMathAttr([FastMathFlag(str(f)) for f in flags.data])


@functools.cache
def _llvm_overflow(flags: arith.IntegerOverflowAttr) -> llvm.OverflowAttr:
    return llvm.OverflowAttr([llvm.OverflowFlag(f.value) for f in flags.data])


class ConvertFloatBinary(RewritePattern):
    """addf/subf/mulf/divf -> llvm.fadd/fsub/fmul/fdiv, keeping fastmath flags."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if (new_type := FLOAT_BINARY.get(type(op))) is None:
            return
        lhs, rhs = legal_operands(op, rewriter)
        rewriter.replace(op, float_binary(new_type, lhs, rhs, _fastmath(op)))


class ConvertIntBinary(RewritePattern):
    """Integer arithmetic, keeping nsw/nuw flags; index operands become i64."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if (overflow_type := INT_BINARY_OVERFLOW.get(type(op))) is not None:
            lhs, rhs = legal_operands(op, rewriter)
            flags = op.properties["overflowFlags"]
            assert isinstance(flags, arith.IntegerOverflowAttr)
            new_op = integer_binary(overflow_type, lhs, rhs, _llvm_overflow(flags))
            replace_with_legal(op, [new_op], rewriter)
        elif (plain_type := INT_BINARY.get(type(op))) is not None:
            lhs, rhs = legal_operands(op, rewriter)
            replace_with_legal(
                op, [plain_type.create(operands=[lhs, rhs], result_types=[lhs.type])], rewriter
            )


class ConvertBinaryIntrinsic(RewritePattern):
    """min/max ops -> `llvm.call_intrinsic` of the mangled LLVM intrinsic."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if (name := BINARY_INTRINSIC.get(type(op))) is None:
            return
        lhs, rhs = legal_operands(op, rewriter)
        call = llvm.CallIntrinsicOp(f"{name}.{intrinsic_suffix(lhs.type)}", [lhs, rhs], [lhs.type])
        replace_with_legal(op, [call], rewriter)


class ConvertCast(RewritePattern):
    """Casts with a direct `llvm` counterpart, and fptosi/fptoui as saturating intrinsics."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if (cast_type := CAST.get(type(op))) is not None:
            (value,) = legal_operands(op, rewriter)
            new_op = cast_type.create(operands=[value], result_types=[op.results[0].type])
            rewriter.replace(op, new_op)
        elif (name := FLOAT_TO_INT_INTRINSIC.get(type(op))) is not None:
            (value,) = legal_operands(op, rewriter)
            res_type = op.results[0].type
            full_name = f"{name}.{intrinsic_suffix(res_type)}.{intrinsic_suffix(value.type)}"
            rewriter.replace(op, llvm.CallIntrinsicOp(full_name, [value], [res_type]))


class ConvertIndexCast(RewritePattern):
    """index_cast/index_castui: a no-op, a truncation or an extension of i64."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.IndexCastOp, rewriter: PatternRewriter, /) -> None:
        value = to_legal(op.input, rewriter)
        target = legal_type(op.result.type)
        assert isinstance(value.type, IntegerType) and isinstance(target, IntegerType)
        src_width, dst_width = value.type.width.data, target.width.data
        if src_width == dst_width:
            replace_with_legal(op, [], rewriter, [value])
            return
        cast_type = llvm.TruncOp if dst_width < src_width else llvm.SExtOp
        new_op = cast_type.create(operands=[value], result_types=[target])
        replace_with_legal(op, [new_op], rewriter)


class ConvertNegf(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.NegfOp, rewriter: PatternRewriter, /) -> None:
        rewriter.replace(op, llvm.FNegOp(op.operand, _fastmath(op)))


def _legal_constant_value(value: Attribute, typ: Attribute) -> Attribute:
    if isinstance(value, IntegerAttr) and typ == i64:
        return IntegerAttr(value.value.data, i64)
    return value


class ConvertConstant(RewritePattern):
    """Scalar and dense constants -> `llvm.mlir.constant` (index constants as i64);
    unused ones are dropped."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.ConstantOp, rewriter: PatternRewriter, /) -> None:
        if not op.result.uses:
            rewriter.erase(op)
            return
        value = op.value
        if not isinstance(value, IntegerAttr | FloatAttr | DenseIntOrFPElementsAttr):
            return
        typ = legal_type(op.result.type)
        new_op = constant(_legal_constant_value(value, typ), typ)
        replace_with_legal(op, [new_op], rewriter)


class ConvertCmpi(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpiOp, rewriter: PatternRewriter, /) -> None:
        lhs, rhs = legal_operands(op, rewriter)
        name = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
        predicate = IntegerAttr(llvm.ICmpPredicateFlag(name).to_int(), i64)
        rewriter.replace(op, llvm.ICmpOp(lhs, rhs, predicate))


class ConvertCmpf(RewritePattern):
    """cmpf -> llvm.fcmp; the constant predicates `false`/`true` become i1 constants."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpfOp, rewriter: PatternRewriter, /) -> None:
        name = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
        if name in ("false", "true"):
            value = IntegerAttr(int(name == "true"), IntegerType(1))
            rewriter.replace(op, llvm.ConstantOp(value, IntegerType(1)))
            return
        new_op = llvm.FCmpOp(op.lhs, op.rhs, name)
        new_op.fastmathFlags = _fastmath(op)
        rewriter.replace(op, new_op)


class ConvertSelect(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.SelectOp, rewriter: PatternRewriter, /) -> None:
        cond, lhs, rhs = legal_operands(op, rewriter)
        replace_with_legal(op, [llvm.SelectOp(cond, lhs, rhs)], rewriter)


_FLOAT_BINARY_PATTERN = ConvertFloatBinary()
_INT_BINARY_PATTERN = ConvertIntBinary()
_BINARY_INTRINSIC_PATTERN = ConvertBinaryIntrinsic()
_CAST_PATTERN = ConvertCast()

ARITH_TO_LLVM_PATTERNS: dict[type[Operation], RewritePattern] = {
    **dict.fromkeys(FLOAT_BINARY, _FLOAT_BINARY_PATTERN),
    **dict.fromkeys((*INT_BINARY_OVERFLOW, *INT_BINARY), _INT_BINARY_PATTERN),
    **dict.fromkeys(BINARY_INTRINSIC, _BINARY_INTRINSIC_PATTERN),
    **dict.fromkeys((*CAST, *FLOAT_TO_INT_INTRINSIC), _CAST_PATTERN),
    arith.IndexCastOp: ConvertIndexCast(),
    arith.NegfOp: ConvertNegf(),
    arith.ConstantOp: ConvertConstant(),
    arith.CmpiOp: ConvertCmpi(),
    arith.CmpfOp: ConvertCmpf(),
    arith.SelectOp: ConvertSelect(),
}
"""The pattern converting each `arith` op type."""


@dataclass(frozen=True)
class ConvertArithToLLVMPass(ModulePass):
    """Lower every supported `arith` op to the `llvm` dialect."""

    name = "convert-arith-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_by_type(op, ARITH_TO_LLVM_PATTERNS)
