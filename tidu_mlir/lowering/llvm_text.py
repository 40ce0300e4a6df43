"""LLVM IR text written directly from loop-level IR, for the JIT.

The JIT's usual path lowers a loop-level module (`func`, `scf`, `arith`,
`math`, `memref` and the few `llvm` ops the loop builders make) to the `llvm`
dialect with seven xDSL passes, then translates that to llvmlite's IR builder
and prints it: ~16 xDSL ops created per primitive, most of a large program's
lowering time. This module writes the same LLVM IR as text in one walk over
the loop-level ops, creating none; each op's rule below is its conversion
pattern's (`memref_to_llvm`, `arith_to_llvm`, `math_to_llvm`, `scf_to_cf`,
`func_to_llvm`), so the two paths compute the same numbers
(`tests/lowering/test_llvm_text.py` compares them). The `llvm`-dialect path
stays what `tidu-opt -p lower-to-llvm` and `td.ir` show, and what the JIT
falls back on for a module this writer does not know (`NotWritten`).

Differences that do not change the result: constants are written in place
(no op per constant) and constant parts of a memref's linear index are summed
here; loop counters, block arguments and `scf.if` results become `phi`s.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from llvmlite import ir
from xdsl.dialects import arith, builtin, func, llvm, math, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnrealizedConversionCastOp,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from tidu_mlir.dialects.cg import GraphOp
from tidu_mlir.lowering.allocation_guard import (
    CHECK_FAILED_PREFIX,
    CHECKED_MALLOC,
    CHECKED_REALLOC,
    ProgramGuards,
    add_allocation_guards,
)
from tidu_mlir.lowering.arith_to_llvm import (
    BINARY_INTRINSIC,
    CAST,
    FLOAT_BINARY,
    FLOAT_TO_INT_INTRINSIC,
    INT_BINARY,
    INT_BINARY_OVERFLOW,
)
from tidu_mlir.lowering.backend import host_target_machine
from tidu_mlir.lowering.common import intrinsic_suffix, legal_type
from tidu_mlir.lowering.math_to_llvm import INTRINSIC, LIBM
from tidu_mlir.lowering.memref_to_llvm import (
    VIEWS,
    alloca_alignment,
    buffer_bytes,
    buffer_elements,
    is_contiguous,
    static_layout,
)
from tidu_mlir.lowering.scf_to_cf import runs_at_least_once
from tidu_mlir.lowering.split import NO_INLINE_ATTR


class NotWritten(Exception):
    """The module holds an op or type this writer does not know; lower it
    through the `llvm` dialect instead."""


@functools.cache
def _type_text(typ: Attribute) -> str:
    """The LLVM type of a loop-level type (memrefs are pointers, `index` is i64)."""
    match typ:
        case Float64Type():
            return "double"
        case Float32Type():
            return "float"
        case Float16Type():
            return "half"
        case IntegerType():
            return f"i{typ.width.data}"
        case IndexType():
            return "i64"
        case MemRefType() | llvm.LLVMPointerType():
            return "ptr"
        case llvm.LLVMVoidType():
            return "void"
        case VectorType() if typ.get_num_dims() == 1 and not typ.get_scalable_dims()[0]:
            return f"<{typ.get_shape()[0]} x {_type_text(typ.element_type)}>"
        case _:
            raise NotWritten(f"type {typ}")


def _float_text(value: float, typ: Attribute) -> str:
    """An LLVM float literal: the bits of the value as a double, in hex (LLVM's
    exact form; an f32 value is rounded to f32 first)."""
    if isinstance(typ, Float32Type):
        try:
            value = struct.unpack("<f", struct.pack("<f", value))[0]
        except OverflowError:
            raise NotWritten(f"{value} is out of f32's range") from None
    elif not isinstance(typ, Float64Type):
        raise NotWritten(f"float literal of type {typ}")
    return f"0x{struct.unpack('<Q', struct.pack('<d', value))[0]:016X}"


def _literal(value: Attribute, typ: Attribute) -> str:
    """The LLVM literal of a scalar constant attribute."""
    if isinstance(value, IntegerAttr):
        return str(value.value.data)
    if isinstance(value, FloatAttr):
        return _float_text(value.value.data, typ)
    raise NotWritten(f"constant {value}")


@functools.cache
def _fastmath_text(flags: Attribute | None) -> str:
    """`fastmath<...>` flags as LLVM's instruction flags, with a trailing blank."""
    if not isinstance(flags, arith.FastMathFlagsAttr | llvm.FastMathAttr):
        return ""
    names = sorted(str(flag) for flag in flags.data)
    return "".join(f"{name} " for name in names)


@functools.cache
def _overflow_text(flags: Attribute | None) -> str:
    if not isinstance(flags, arith.IntegerOverflowAttr):
        return ""
    return "".join(f"{flag.value} " for flag in sorted(flags.data, key=str))


def _global_name(name: str) -> str:
    escaped = name.replace("\\", "\\5C").replace('"', "\\22")
    return f'@"{escaped}"'


@dataclass
class _Module:
    """What the functions of a module share while they are written."""

    declarations: dict[str, str] = field(default_factory=dict[str, str])
    """The `declare` line of each callee, by name."""

    globals: list[str] = field(default_factory=list[str])
    """The definitions of the module's globals."""

    def declare(self, name: str, result: str, arguments: Sequence[str]) -> None:
        self.declarations.setdefault(
            name, f"declare {result} {_global_name(name)}({', '.join(arguments)})"
        )

    def call(self, name: str, result: str, arguments: Sequence[tuple[str, str]]) -> str:
        """`call` text of `name` with typed `arguments`, declaring it."""
        self.declare(name, result, [typ for typ, _ in arguments])
        args = ", ".join(f"{typ} {text}" for typ, text in arguments)
        return f"call {result} {_global_name(name)}({args})"


@dataclass
class _FunctionWriter:
    """Writes one function's body: each op's instructions, one walk."""

    module: _Module
    lines: list[str | None] = field(default_factory=list[str | None])
    names: dict[SSAValue, str] = field(default_factory=dict[SSAValue, str])
    integers: dict[SSAValue, int] = field(default_factory=dict[SSAValue, int])
    """Values known to be integer constants (summed into memref offsets)."""
    block: str = "entry"
    counter: int = 0

    # -- values -------------------------------------------------------------

    def fresh(self) -> str:
        self.counter += 1
        return f"%v{self.counter}"

    def label(self) -> str:
        self.counter += 1
        return f"b{self.counter}"

    def value(self, value: SSAValue) -> str:
        try:
            return self.names[value]
        except KeyError:
            raise NotWritten(f"%{value.name_hint} used before its definition") from None

    def typed(self, value: SSAValue) -> str:
        return f"{_type_text(value.type)} {self.value(value)}"

    def define(self, result: SSAValue, instruction: str) -> str:
        """`%name = instruction` for `result`; its name."""
        name = self.names[result] = self.define_anonymous(instruction)
        return name

    def define_anonymous(self, instruction: str) -> str:
        """`%name = instruction` for a value of no op; its name."""
        name = self.fresh()
        self.lines.append(f"  {name} = {instruction}")
        return name

    def alias(self, result: SSAValue, text: str) -> None:
        self.names[result] = text

    def emit(self, instruction: str) -> None:
        self.lines.append(f"  {instruction}")

    def start_block(self, label: str) -> None:
        self.lines.append(f"{label}:")
        self.block = label

    # -- walking ------------------------------------------------------------

    def ops(self, block: Block) -> Operation | None:
        """Write the ops of `block` up to its terminator; that terminator."""
        for op in block.ops:
            if op is block.last_op and isinstance(
                op, scf.YieldOp | scf.ConditionOp | func.ReturnOp
            ):
                if isinstance(op, func.ReturnOp):
                    self.write_return(op)
                return op
            rule = _RULES.get(type(op))
            if rule is None:
                raise NotWritten(f"'{op.name}'")
            rule(self, op)
        return None

    def write_return(self, op: func.ReturnOp) -> None:
        if not op.arguments:
            self.emit("ret void")
        elif len(op.arguments) == 1:
            self.emit(f"ret {self.typed(op.arguments[0])}")
        else:
            raise NotWritten("a function with several results")

    def region_body(self, block: Block) -> Operation:
        terminator = self.ops(block)
        if terminator is None:
            raise NotWritten("a region without a terminator")
        return terminator

    def phis(self, at: int, rows: Iterable[tuple[str, str, list[tuple[str, str]]]]) -> None:
        """Fill placeholder line `at` with `phi`s: (name, type, [(value, block)])."""
        self.lines[at] = "\n".join(
            f"  {name} = phi {typ} " + ", ".join(f"[{v}, %{b}]" for v, b in incoming)
            for name, typ, incoming in rows
        )

    def placeholder(self) -> int:
        self.lines.append(None)
        return len(self.lines) - 1


# -- rules: one per op type -----------------------------------------------------


def _constant(w: _FunctionWriter, op: Operation) -> None:
    """A scalar constant (`arith.constant`, `llvm.mlir.constant`): written in
    place where it is used; integers are kept for memref offsets."""
    value = op.properties.get("value")
    result = op.results[0]
    if value is None:
        raise NotWritten(f"{op.name} without a value")
    if isinstance(value, IntegerAttr) and isinstance(result.type, IntegerType | IndexType):
        w.integers[result] = value.value.data
    w.alias(result, _literal(value, result.type))


def _float_binary(w: _FunctionWriter, op: Operation) -> None:
    lhs, rhs = op.operands
    flags = _fastmath_text(op.properties.get("fastmath"))
    instruction = FLOAT_BINARY[type(op)].name.removeprefix("llvm.")
    w.define(op.results[0], f"{instruction} {flags}{w.typed(lhs)}, {w.value(rhs)}")


def _integer_binary(w: _FunctionWriter, op: Operation) -> None:
    lhs, rhs = op.operands
    if (overflow_type := INT_BINARY_OVERFLOW.get(type(op))) is not None:
        name = overflow_type.name.removeprefix("llvm.")
        flags = _overflow_text(op.properties.get("overflowFlags"))
    else:
        name, flags = INT_BINARY[type(op)].name.removeprefix("llvm."), ""
    w.define(op.results[0], f"{name} {flags}{w.typed(lhs)}, {w.value(rhs)}")


def _binary_intrinsic(w: _FunctionWriter, op: Operation) -> None:
    lhs, rhs = op.operands
    typ = _type_text(lhs.type)
    name = f"{BINARY_INTRINSIC[type(op)]}.{intrinsic_suffix(legal_type(lhs.type))}"
    args = [(typ, w.value(lhs)), (typ, w.value(rhs))]
    w.define(op.results[0], w.module.call(name, typ, args))


def _cast(w: _FunctionWriter, op: Operation) -> None:
    (value,) = op.operands
    result = op.results[0]
    if (cast_type := CAST.get(type(op))) is not None:
        name = cast_type.name.removeprefix("llvm.")
        w.define(result, f"{name} {w.typed(value)} to {_type_text(result.type)}")
        return
    base = FLOAT_TO_INT_INTRINSIC[type(op)]
    name = f"{base}.{intrinsic_suffix(result.type)}.{intrinsic_suffix(value.type)}"
    call = w.module.call(name, _type_text(result.type), [(_type_text(value.type), w.value(value))])
    w.define(result, call)


def _index_cast(w: _FunctionWriter, op: Operation) -> None:
    (value,) = op.operands
    result = op.results[0]
    source, target = legal_type(value.type), legal_type(result.type)
    if not isinstance(source, IntegerType) or not isinstance(target, IntegerType):
        raise NotWritten(f"index_cast of {value.type}")
    if source.width.data == target.width.data:
        w.alias(result, w.value(value))
        if value in w.integers:
            w.integers[result] = w.integers[value]
        return
    name = "trunc" if target.width.data < source.width.data else "sext"
    w.define(result, f"{name} {w.typed(value)} to {_type_text(target)}")


def _negf(w: _FunctionWriter, op: arith.NegfOp) -> None:
    flags = _fastmath_text(op.fastmath)
    w.define(op.result, f"fneg {flags}{w.typed(op.operand)}")


def _cmpi(w: _FunctionWriter, op: arith.CmpiOp) -> None:
    predicate = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
    w.define(op.result, f"icmp {predicate} {w.typed(op.lhs)}, {w.value(op.rhs)}")


def _cmpf(w: _FunctionWriter, op: arith.CmpfOp) -> None:
    predicate = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
    if predicate in ("false", "true"):
        w.alias(op.result, predicate)
        return
    flags = _fastmath_text(op.fastmath)
    w.define(op.result, f"fcmp {flags}{predicate} {w.typed(op.lhs)}, {w.value(op.rhs)}")


def _select(w: _FunctionWriter, op: arith.SelectOp) -> None:
    instruction = f"select {w.typed(op.cond)}, {w.typed(op.lhs)}, {w.typed(op.rhs)}"
    w.define(op.result, instruction)


def _math_intrinsic(w: _FunctionWriter, op: Operation) -> None:
    typ = op.results[0].type
    name = f"{INTRINSIC[type(op)]}.{intrinsic_suffix(typ)}"
    args = [(_type_text(v.type), w.value(v)) for v in op.operands]
    w.define(op.results[0], w.module.call(name, _type_text(typ), args))


def _libm(w: _FunctionWriter, op: Operation) -> None:
    typ = op.results[0].type
    if isinstance(typ, VectorType):
        raise NotWritten(f"{op.name} on vectors")
    name = LIBM[type(op)] + ("f" if isinstance(typ, Float32Type) else "")
    args = [(_type_text(v.type), w.value(v)) for v in op.operands]
    w.define(op.results[0], w.module.call(name, _type_text(typ), args))


def _fma(w: _FunctionWriter, op: math.FmaOp) -> None:
    typ = _type_text(op.result.type)
    name = f"llvm.fma.{intrinsic_suffix(op.result.type)}"
    args = [(typ, w.value(v)) for v in (op.a, op.b, op.c)]
    w.define(op.result, w.module.call(name, typ, args))


def _rsqrt(w: _FunctionWriter, op: math.RsqrtOp) -> None:
    typ = op.result.type
    if isinstance(typ, VectorType):
        raise NotWritten("math.rsqrt on vectors")
    text = _type_text(typ)
    root = w.fresh()
    call = w.module.call(f"llvm.sqrt.{intrinsic_suffix(typ)}", text, [(text, w.value(op.operand))])
    w.emit(f"{root} = {call}")
    w.define(op.result, f"fdiv {text} {_float_text(1.0, typ)}, {root}")


def _fpowi(w: _FunctionWriter, op: math.FPowIOp) -> None:
    lhs, rhs = op.operands
    name = f"llvm.powi.{intrinsic_suffix(lhs.type)}.{intrinsic_suffix(legal_type(rhs.type))}"
    typ = _type_text(lhs.type)
    args = [(typ, w.value(lhs)), (_type_text(rhs.type), w.value(rhs))]
    w.define(op.results[0], w.module.call(name, typ, args))


# memref ---------------------------------------------------------------------


def _element_pointer(w: _FunctionWriter, ref: SSAValue, indices: Sequence[SSAValue]) -> str:
    """A pointer to element `indices` of the memref `ref`: its base pointer, or
    an `inbounds` GEP at `offset + sum(index * stride)` (nsw i64 arithmetic;
    constant terms summed here)."""
    typ, strides, offset = static_layout(ref.type)
    base = w.value(ref)
    constant = offset
    total: str | None = None
    for index, stride in zip(indices, strides, strict=True):
        if index in w.integers:
            constant += w.integers[index] * stride
            continue
        term = w.value(index)
        if stride != 1:
            term = w.define_anonymous(f"mul nsw i64 {term}, {stride}")
        total = term if total is None else w.define_anonymous(f"add nsw i64 {total}, {term}")
    if constant and total is not None:
        total = w.define_anonymous(f"add nsw i64 {total}, {constant}")
    elif total is None:
        if not constant:
            return base
        total = str(constant)
    element = _type_text(typ.element_type)
    return w.define_anonymous(f"getelementptr inbounds {element}, ptr {base}, i64 {total}")


def _load(w: _FunctionWriter, op: memref.LoadOp) -> None:
    pointer = _element_pointer(w, op.memref, op.indices)
    w.define(op.res, f"load {_type_text(op.res.type)}, ptr {pointer}")


def _store(w: _FunctionWriter, op: memref.StoreOp) -> None:
    pointer = _element_pointer(w, op.memref, op.indices)
    w.emit(f"store {w.typed(op.value)}, ptr {pointer}")


def _alloca(w: _FunctionWriter, op: memref.AllocaOp) -> None:
    typ = op.memref.type
    assert isinstance(typ, MemRefType)
    count = buffer_elements(typ)
    alignment = _align(alloca_alignment(op))
    w.define(op.memref, f"alloca {_type_text(typ.element_type)}, i64 {count}{alignment}")


def _alloc(w: _FunctionWriter, op: memref.AllocOp) -> None:
    typ = op.memref.type
    assert isinstance(typ, MemRefType)
    if op.dynamic_sizes or op.symbol_operands:
        raise NotWritten("memref.alloc of dynamic size")
    w.define(op.memref, w.module.call(CHECKED_MALLOC, "ptr", [("i64", str(buffer_bytes(typ)))]))


def _dealloc(w: _FunctionWriter, op: memref.DeallocOp) -> None:
    w.emit(w.module.call("free", "void", [("ptr", w.value(op.memref))]))


def _copy(w: _FunctionWriter, op: memref.CopyOp) -> None:
    source = op.source.type
    if source != op.destination.type or not isinstance(source, MemRefType):
        raise NotWritten("memref.copy between different types")
    args = [
        ("ptr", w.value(op.destination)),
        ("ptr", w.value(op.source)),
        ("i64", str(buffer_bytes(source))),
        ("i1", "false"),
    ]
    w.emit(w.module.call("llvm.memcpy.p0.p0.i64", "void", args))


def _view(w: _FunctionWriter, op: Operation) -> None:
    static_layout(op.results[0].type)
    if len(op.operands) != 1:
        raise NotWritten(f"{op.name} with dynamic operands")
    w.alias(op.results[0], w.value(op.operands[0]))


def _byte_view(w: _FunctionWriter, op: memref.ViewOp) -> None:
    static_layout(op.result.type)
    if op.sizes:
        raise NotWritten("memref.view with dynamic sizes")
    instruction = f"getelementptr inbounds i8, ptr {w.value(op.source)}, {w.typed(op.byte_shift)}"
    w.define(op.result, instruction)


def _get_global(w: _FunctionWriter, op: memref.GetGlobalOp) -> None:
    w.alias(op.memref, _global_name(op.name_.string_value()))


def _conversion_cast(w: _FunctionWriter, op: UnrealizedConversionCastOp) -> None:
    if len(op.inputs) != 1 or len(op.outputs) != 1:
        raise NotWritten("a cast of several values")
    (source,), (result,) = op.inputs, op.outputs
    if _type_text(source.type) != _type_text(result.type):
        raise NotWritten(f"a cast from {source.type} to {result.type}")
    w.alias(result, w.value(source))
    if source in w.integers:
        w.integers[result] = w.integers[source]


# func -------------------------------------------------------------------------


def _call(w: _FunctionWriter, op: func.CallOp) -> None:
    if len(op.res) > 1:
        raise NotWritten("a call with several results")
    result = _type_text(op.res[0].type) if op.res else "void"
    args = [(_type_text(v.type), w.value(v)) for v in op.arguments]
    call = w.module.call(op.callee.string_value(), result, args)
    if op.res:
        w.define(op.res[0], call)
    else:
        w.emit(call)


# scf --------------------------------------------------------------------------


def _loop_header(w: _FunctionWriter, block: Block) -> tuple[str, str, int, list[str]]:
    """A branch to a new block starting a loop, the `phi`s of `block`'s
    arguments to fill in its first line (`_FunctionWriter.phis`): the block
    it was entered from, the new block, that line and the `phi`s' names."""
    entry, header = w.block, w.label()
    w.emit(f"br label %{header}")
    w.start_block(header)
    at = w.placeholder()
    names = [w.fresh() for _ in block.args]
    for arg, name in zip(block.args, names, strict=True):
        w.alias(arg, name)
    return entry, header, at, names


def _for(w: _FunctionWriter, loop: scf.ForOp) -> None:
    """A rotated loop (body, then step, test and branch back) when it runs at
    least once, else a header testing the counter before the body."""
    rotated = runs_at_least_once(loop)
    body = loop.body.block
    carried = body.args[1:]
    entry, header, at, names = _loop_header(w, body)
    exit_label = w.label()
    if not rotated:
        more = w.define_anonymous(f"icmp slt i64 {names[0]}, {w.value(loop.ub)}")
        first = w.label()
        w.emit(f"br i1 {more}, label %{first}, label %{exit_label}")
        w.start_block(first)
    yielded = w.region_body(body)
    step = w.define_anonymous(f"add i64 {names[0]}, {w.value(loop.step)}")
    latch = w.block
    if rotated:
        more = w.define_anonymous(f"icmp slt i64 {step}, {w.value(loop.ub)}")
        w.emit(f"br i1 {more}, label %{header}, label %{exit_label}")
    else:
        w.emit(f"br label %{header}")
    values = [w.value(v) for v in yielded.operands]
    inits = [w.value(v) for v in loop.iter_args]
    rows = [(names[0], "i64", [(w.value(loop.lb), entry), (step, latch)])]
    for arg, name, init, value in zip(carried, names[1:], inits, values, strict=True):
        rows.append((name, _type_text(arg.type), [(init, entry), (value, latch)]))
    w.phis(at, rows)
    w.start_block(exit_label)
    for result, value in zip(loop.res, values if rotated else names[1:], strict=True):
        w.alias(result, value)


def _if(w: _FunctionWriter, branch: scf.IfOp) -> None:
    """A conditional branch to the regions, joined in a block taking the results."""
    join = w.label()
    arms: list[str] = []
    ends: list[tuple[list[str], str]] = []
    condition = w.value(branch.cond)
    at = w.placeholder()
    for region in (branch.true_region, branch.false_region):
        if not region.blocks:
            arms.append(join)
            continue
        label = w.label()
        arms.append(label)
        w.start_block(label)
        yielded = w.region_body(region.block)
        ends.append(([w.value(v) for v in yielded.operands], w.block))
        w.emit(f"br label %{join}")
    w.lines[at] = f"  br i1 {condition}, label %{arms[0]}, label %{arms[1]}"
    w.start_block(join)
    if branch.results:
        if len(ends) != 2:
            raise NotWritten("scf.if with results and one region")
        at = w.placeholder()
        rows: list[tuple[str, str, list[tuple[str, str]]]] = []
        for k, result in enumerate(branch.results):
            name = w.fresh()
            rows.append(
                (
                    name,
                    _type_text(result.type),
                    [(ends[0][0][k], ends[0][1]), (ends[1][0][k], ends[1][1])],
                )
            )
            w.alias(result, name)
        w.phis(at, rows)


def _while(w: _FunctionWriter, loop: scf.WhileOp) -> None:
    """The before block (phis of the carried values, then a conditional branch to
    the after block or the exit), the after block branching back, the exit."""
    before, after = loop.before_region.block, loop.after_region.block
    entry, header, at, names = _loop_header(w, before)
    condition = w.region_body(before)
    assert isinstance(condition, scf.ConditionOp)
    forwarded = [w.value(v) for v in condition.args]
    body, exit_label = w.label(), w.label()
    w.emit(f"br i1 {w.value(condition.condition)}, label %{body}, label %{exit_label}")
    w.start_block(body)
    for arg, value in zip(after.args, forwarded, strict=True):
        w.alias(arg, value)
    yielded = w.region_body(after)
    values = [w.value(v) for v in yielded.operands]
    latch = w.block
    w.emit(f"br label %{header}")
    inits = [w.value(v) for v in loop.arguments]
    w.phis(
        at,
        [
            (name, _type_text(arg.type), [(init, entry), (value, latch)])
            for arg, name, init, value in zip(before.args, names, inits, values, strict=True)
        ],
    )
    w.start_block(exit_label)
    for result, value in zip(loop.res, forwarded, strict=True):
        w.alias(result, value)


# llvm ops made by the loop builders -------------------------------------------


def _llvm_alloca(w: _FunctionWriter, op: llvm.AllocaOp) -> None:
    alignment = _align(op.alignment.value.data) if op.alignment is not None else ""
    w.define(op.res, f"alloca {_type_text(op.elem_type)}, {w.typed(op.size)}{alignment}")


def _gep(w: _FunctionWriter, op: llvm.GEPOp) -> None:
    dynamic = iter(op.ssa_indices)
    indices = [
        w.typed(next(dynamic)) if index == llvm.GEP_USE_SSA_VAL else f"i32 {index}"
        for index in op.rawConstantIndices.iter_values()
    ]
    inbounds = "inbounds " if op.inbounds is not None else ""
    element = _type_text(op.elem_type)
    w.define(
        op.result, f"getelementptr {inbounds}{element}, ptr {w.value(op.ptr)}, {', '.join(indices)}"
    )


def _align(alignment: int) -> str:
    """`, align N`, or nothing for 0 (no alignment asked)."""
    return f", align {alignment}" if alignment else ""


def _alignment(op: llvm.LoadOp | llvm.StoreOp) -> str:
    return _align(op.alignment.value.data) if op.alignment is not None else ""


def _llvm_load(w: _FunctionWriter, op: llvm.LoadOp) -> None:
    if op.ordering.value.data != 0:
        raise NotWritten("an atomic llvm.load")
    typ = _type_text(op.dereferenced_value.type)
    w.define(op.dereferenced_value, f"load {typ}, ptr {w.value(op.ptr)}{_alignment(op)}")


def _llvm_store(w: _FunctionWriter, op: llvm.StoreOp) -> None:
    if (
        op.volatile_ is not None
        or op.nontemporal is not None
        or (op.ordering is not None and op.ordering.value.data != 0)
    ):
        raise NotWritten("a volatile, non-temporal or atomic llvm.store")
    w.emit(f"store {w.typed(op.value)}, ptr {w.value(op.ptr)}{_alignment(op)}")


def _ptr_to_int(w: _FunctionWriter, op: llvm.PtrToIntOp) -> None:
    w.define(op.output, f"ptrtoint ptr {w.value(op.input)} to {_type_text(op.output.type)}")


def _int_to_ptr(w: _FunctionWriter, op: llvm.IntToPtrOp) -> None:
    w.define(op.output, f"inttoptr {w.typed(op.input)} to ptr")


def _address_of(w: _FunctionWriter, op: llvm.AddressOfOp) -> None:
    w.alias(op.result, _global_name(op.global_name.string_value()))


def _llvm_call(w: _FunctionWriter, op: llvm.CallOp) -> None:
    if op.callee is None or op.op_bundle_operands:
        raise NotWritten("an indirect llvm.call or one with bundles")
    result = _type_text(op.returned.type) if op.returned is not None else "void"
    args = [(_type_text(v.type), w.value(v)) for v in op.args]
    call = w.module.call(op.callee.string_value(), result, args)
    if op.returned is not None:
        w.define(op.returned, call)
    else:
        w.emit(call)


_RULES: dict[type[Operation], Callable[..., None]] = {
    arith.ConstantOp: _constant,
    **dict.fromkeys(FLOAT_BINARY, _float_binary),
    **dict.fromkeys((*INT_BINARY_OVERFLOW, *INT_BINARY), _integer_binary),
    **dict.fromkeys(BINARY_INTRINSIC, _binary_intrinsic),
    **dict.fromkeys((*CAST, *FLOAT_TO_INT_INTRINSIC), _cast),
    arith.IndexCastOp: _index_cast,
    arith.NegfOp: _negf,
    arith.CmpiOp: _cmpi,
    arith.CmpfOp: _cmpf,
    arith.SelectOp: _select,
    **dict.fromkeys(INTRINSIC, _math_intrinsic),
    **dict.fromkeys(LIBM, _libm),
    math.FmaOp: _fma,
    math.RsqrtOp: _rsqrt,
    math.FPowIOp: _fpowi,
    memref.LoadOp: _load,
    memref.StoreOp: _store,
    memref.AllocaOp: _alloca,
    memref.AllocOp: _alloc,
    memref.DeallocOp: _dealloc,
    memref.CopyOp: _copy,
    **dict.fromkeys(VIEWS, _view),
    memref.ViewOp: _byte_view,
    memref.GetGlobalOp: _get_global,
    UnrealizedConversionCastOp: _conversion_cast,
    func.CallOp: _call,
    scf.ForOp: _for,
    scf.IfOp: _if,
    scf.WhileOp: _while,
    llvm.ConstantOp: _constant,
    llvm.AllocaOp: _llvm_alloca,
    llvm.GEPOp: _gep,
    llvm.LoadOp: _llvm_load,
    llvm.StoreOp: _llvm_store,
    llvm.PtrToIntOp: _ptr_to_int,
    llvm.IntToPtrOp: _int_to_ptr,
    llvm.AddressOfOp: _address_of,
    llvm.CallOp: _llvm_call,
}
"""The rule writing each op type (`_FunctionWriter` and the op)."""


# functions, globals and the module ---------------------------------------------


@dataclass
class _Definition:
    """A written function: its `define` line without attributes, and its body."""

    name: str
    head: str
    body: str
    public: bool
    no_inline: bool
    signature: tuple[str, list[str]]


def _arguments(op: func.FuncOp) -> list[str]:
    inputs = [_type_text(t) for t in op.function_type.inputs.data]
    if op.arg_attrs is not None:
        for attrs in op.arg_attrs.data:
            if any(key.startswith("llvm.") for key in attrs.data):
                raise NotWritten(f"argument attributes of @{op.sym_name.data}")
    return inputs


def _result(op: func.FuncOp) -> str:
    outputs = op.function_type.outputs.data
    if len(outputs) > 1:
        raise NotWritten(f"@{op.sym_name.data} has several results")
    return _type_text(outputs[0]) if outputs else "void"


def _define(module: _Module, op: func.FuncOp) -> _Definition:
    """`op`'s body as LLVM text; pointer arguments are `noalias` (the JIT's
    calling convention: outputs are fresh buffers, inputs read-only)."""
    if len(op.body.blocks) != 1:
        raise NotWritten(f"@{op.sym_name.data} has several blocks")
    writer = _FunctionWriter(module)
    arguments, result = _arguments(op), _result(op)
    params: list[str] = []
    for index, (arg, typ) in enumerate(zip(op.body.block.args, arguments, strict=True)):
        name = f"%a{index}"
        writer.alias(arg, name)
        params.append(f"{typ} noalias {name}" if typ == "ptr" else f"{typ} {name}")
    writer.start_block("entry")
    if writer.ops(op.body.block) is None:
        raise NotWritten(f"@{op.sym_name.data} does not end in func.return")
    public = op.sym_visibility != StringAttr("private")
    linkage = "" if public else "internal "
    name = op.sym_name.data
    return _Definition(
        name=name,
        head=f"define {linkage}{result} {_global_name(name)}({', '.join(params)})",
        body="\n".join(line for line in writer.lines if line is not None),
        public=public,
        no_inline=NO_INLINE_ATTR in op.attributes,
        signature=(result, arguments),
    )


_ZEROS = ("0", _float_text(0.0, builtin.f64))
"""The literals of a zero element (not -0.0)."""


def _element_text(value: float | tuple[float, float], typ: Attribute) -> str:
    if isinstance(value, tuple):
        raise NotWritten("a global of complex numbers")
    return str(int(value)) if isinstance(typ, IntegerType) else _float_text(float(value), typ)


def _global(op: memref.GlobalOp) -> str:
    """`memref.global` as an internal array of its elements, in order."""
    typ, value = op.type, op.initial_value
    if not isinstance(value, DenseIntOrFPElementsAttr):
        raise NotWritten(f"memref.global @{op.sym_name.data} without a dense value")
    if not is_contiguous(typ):
        raise NotWritten(f"memref.global @{op.sym_name.data} is not contiguous")
    if DYNAMIC_INDEX in typ.get_shape():
        raise NotWritten(f"memref.global @{op.sym_name.data} of dynamic shape")
    element = _type_text(typ.element_type)
    count = typ.element_count()
    values = list(value.get_values())
    if len(values) == 1 and count != 1:
        values *= count
    texts = [_element_text(v, typ.element_type) for v in values]
    if all(text in _ZEROS for text in texts):
        initializer = "zeroinitializer"
    else:
        initializer = "[" + ", ".join(f"{element} {t}" for t in texts) + "]"
    kind = "constant" if op.constant is not None else "global"
    alignment = _align(op.alignment.value.data) if op.alignment is not None else ""
    name = _global_name(op.sym_name.data)
    return f"{name} = internal {kind} [{count} x {element}] {initializer}{alignment}"


def _llvm_declaration(module: _Module, op: llvm.FuncOp) -> None:
    if op.body.blocks:
        raise NotWritten(f"llvm.func @{op.sym_name.data} with a body")
    function_type = op.function_type
    if function_type.is_variadic:
        raise NotWritten(f"variadic llvm.func @{op.sym_name.data}")
    result = _type_text(function_type.output)
    module.declare(op.sym_name.data, result, [_type_text(t) for t in function_type.inputs.data])


_IR_TYPES: dict[str, ir.Type] = {
    "ptr": ir.PointerType(),
    "double": ir.DoubleType(),
    "float": ir.FloatType(),
    "half": ir.HalfType(),
    "void": ir.VoidType(),
}


def _ir_type(text: str) -> ir.Type:
    if text in _IR_TYPES:
        return _IR_TYPES[text]
    if text.startswith("i") and text[1:].isdigit():
        return ir.IntType(int(text[1:]))
    raise NotWritten(f"an entry point taking or returning {text}")


def _guards(
    module: _Module,
    definitions: list[_Definition],
    failures: dict[str, tuple[str, list[str]]],
    program: ProgramGuards | None,
) -> tuple[ir.Module, set[str]]:
    """The allocation guards of the written module (`allocation_guard`), built
    with llvmlite in a module of their own that declares the entry points;
    the entries given a guard."""
    guards = ir.Module()
    entries = {d.name: d.signature for d in definitions if d.public}
    wanted = dict(entries)
    if CHECKED_MALLOC in module.declarations:  # (declared by the calls too)
        wanted[CHECKED_MALLOC] = ("ptr", ["i64"])
    if CHECKED_REALLOC in module.declarations:
        wanted[CHECKED_REALLOC] = ("ptr", ["ptr", "i64"])
    wanted.update(failures)
    for name, (result, arguments) in wanted.items():
        function_type = ir.FunctionType(_ir_type(result), [_ir_type(a) for a in arguments])
        ir.Function(guards, function_type, name)
    guarded = add_allocation_guards(guards, program, defined_elsewhere=frozenset(entries))
    return guards, guarded


@functools.cache
def _target_header() -> str:
    """The module's target triple and data layout: the host's."""
    machine = host_target_machine()
    return f'target triple = "{machine.triple}"\ntarget datalayout = "{machine.target_data}"\n'


def llvm_ir_text(module: ModuleOp, program: ProgramGuards | None = None) -> str:
    """LLVM IR text of a loop-level `module` for the host target, with its
    allocation guards; `program` when it is one module of a program compiled
    in parts (`allocation_guard.ProgramGuards`). Raises `NotWritten` on an op
    or type this writer does not know (nothing is changed: lower the module
    through the `llvm` dialect instead)."""
    shared = _Module()
    definitions: list[_Definition] = []
    failures: dict[str, tuple[str, list[str]]] = {}
    for op in module.ops:
        if isinstance(op, func.FuncOp):
            if op.is_declaration:
                name, signature = op.sym_name.data, (_result(op), _arguments(op))
                shared.declare(name, *signature)
                if name.startswith(CHECK_FAILED_PREFIX):
                    failures[name] = signature
            else:
                definitions.append(_define(shared, op))
        elif isinstance(op, memref.GlobalOp):
            shared.globals.append(_global(op))
        elif isinstance(op, llvm.FuncOp):
            _llvm_declaration(shared, op)
        elif not isinstance(op, GraphOp):
            raise NotWritten(f"'{op.name}' at the top of a module")
    guards, guarded = _guards(shared, definitions, failures, program)
    defined = {d.name for d in definitions}
    lines = [_target_header(), *shared.globals]
    lines += [str(value) for name, value in guards.globals.items() if name not in defined]
    for definition in definitions:
        no_inline = definition.no_inline or definition.name in guarded
        lines.append(
            f"{definition.head}{' noinline' if no_inline else ''} {{\n{definition.body}\n}}"
        )
    lines += [
        text
        for name, text in shared.declarations.items()
        if name not in defined and name not in guards.globals
    ]
    lines += [line for line in str(guards).splitlines() if line.startswith("!")]
    return "\n".join(lines) + "\n"
