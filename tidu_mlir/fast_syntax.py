"""Faster paths through xDSL's parser, printer and verifier for the text
tidu's tools read and write (a 1 MB module within 1 s; xDSL 0.74 parses such
a module at about 4 k ops/s, re-parsing and re-printing the same few types
for every op).

`FastParser` is xDSL's `Parser` with:

* `FastLexer`: one regular-expression match per token for the common tokens
  (identifiers, numbers, punctuation, strings without escapes); the others
  go to xDSL's lexer;
* a type cache: the text of a compact type (`tensor<4xf64>`,
  `tensor<2x3xcomplex<f64>>`) maps to the immutable attribute it parsed to
  the first time, so each distinct type is parsed once per input, and a
  plain tensor type (`tensor<4x5xf64>`) is built from its text, not parsed;
* one match for `%name = dialect.op`, the common head of an op (one result,
  a custom syntax), and for the operands and colon of a `PlainOp`
  (`%a, %b : T`) or the whole of a `PlainArrowOp` (`%x : T -> U`), which it
  then builds itself;
* line forms: a line holding one op, read once by the op's own `parse`,
  teaches its form (`_LineForm`: the line with its SSA names left out); a
  later line of the same form whose names are defined with the same types
  is read to the same op (class, properties, attributes, result types) on
  its own operands without parsing, the op built directly (`build_operation`, not
  through xDSL's generic constructor), and the block's loop resumed at the
  next line (generated modules repeat a few forms: 12,000 lines of
  `prim.transpose %x, permutation = [1, 0] : ...` parse in 0.25 s, 1.5 s
  token by token); the line that opens the first region of an op whose
  assembly format ends with its regions (`prim.scan`, `prim.cond`, ...) has
  a form too: the op of a later line alike is built from it, its regions
  read by the region parser, when the texts between them are those read
  with the form (`_RegionsRead`); a line's symbol names are holes in its
  form when a declarative format read each to a property or attribute of
  its own (`_symbol_targets`: `cg.graph @f {`, `func.call @g(...)`), and a
  prim line's attribute dictionary is one (its dialect attributes, such as
  roles, known by their text once read);
* plain pieces of the prim syntaxes in one match each: integer lists
  (`[1, 0]`, `[0:2:1, 1:3:1]`, `, low = [1], high = [0]`, through
  `parse_optional_plain_integers`), `: T -> U` of known types
  (`parse_optional_plain_signature`), dense literals of decimal numbers
  (`dense<1.25> : T`, `dense<[[1.0, 2], [3, 4.5]]> : T`) and
  attribute dictionaries of integers, strings and dialect attributes read
  before (`{tag = 5 : i64}`); function headers and returns
  (`func.func private @f(%x: T) -> U {`, `func.return %a, %b : T, U`) and
  `arith.constant`s of integers and f32/f64 values;
  anything else in them (comments, hexadecimal, out-of-range integers,
  other types or attributes) goes token by token, so errors are xDSL's;
* the attributes and ops read that way built without xDSL's verifying
  constructors (`unverified_attribute`, `build_operation`);
* punctuation matched by one lookup of its token kind (xDSL checks the
  spelling and searches the kinds on every call);
* xDSL's check of a dense literal's type with its constraint built once
  (xDSL builds it for every literal, 2.5 ms each);
* operands defined before with the very type object resolved by one lookup;
* the cyclic garbage collector paused while it builds the module.

The tokens, the modules and the errors on malformed input are those of
xDSL's parser (tests/tools/test_fast_syntax.py compares them on the lit
inputs and mutations of them). `FastPrinter` is xDSL's `Printer` printing
each distinct type once and reusing its text, and writing one-line strings
directly; `file_line_col` builds a location without re-verifying it.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import io
import itertools
import math
import re
import struct
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple, NoReturn, TypeAlias, TypeVar, cast

from xdsl.context import Context
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    UNKNOWN_LOC,
    AnyFloat,
    ArrayAttr,
    BFloat16Type,
    BytesAttr,
    ComplexType,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FileLineColLoc,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    FloatData,
    FunctionType,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    LocationAttr,
    ModuleOp,
    NoneAttr,
    RankedStructure,
    Signedness,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    i32,
    i64,
)
from xdsl.ir import (
    Attribute,
    AttributeInvT,
    Block,
    Data,
    Operation,
    OpResult,
    ParametrizedAttribute,
    Region,
    SSAValue,
    SSAValues,
    TypeAttribute,
    Use,
)
from xdsl.irdl import AttrConstraint, IRDLOperation, base
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import IsTerminator, SingleBlockImplicitTerminator, ensure_terminator
from xdsl.utils.exceptions import MultipleSpansParseError
from xdsl.utils.lexer import Input, Span, Token
from xdsl.utils.mlir_lexer import (
    MLIRLexer,
    MLIRToken,
    MLIRTokenKind,
    PunctuationSpelling,
    StringLiteral,
)

AttributeT = TypeVar("AttributeT", bound=ParametrizedAttribute)
DataT = TypeVar("DataT", bound=Data[Any])
OperationT = TypeVar("OperationT", bound=Operation)

_SUFFIX_ID = r"(?:[0-9]+|[a-zA-Z$._-][a-zA-Z0-9$._-]*)"
_COMMON_TOKEN = re.compile(
    rf"""(?:\s+|//[^\n]*)*+
    (?:(?P<BARE_IDENT>[a-zA-Z_][a-zA-Z0-9_$.]*)
    |(?P<PERCENT_IDENT>%{_SUFFIX_ID})
    |(?P<AT_IDENT>@[a-zA-Z_][a-zA-Z0-9_$.]*)
    |(?P<HASH_IDENT>\#(?!-}}){_SUFFIX_ID})
    |(?P<CARET_IDENT>\^{_SUFFIX_ID})
    |(?P<EXCLAMATION_IDENT>!{_SUFFIX_ID})
    |(?P<HEX_INTEGER_LIT>0x[0-9a-fA-F]+)
    |(?P<FLOAT_LIT>[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?)
    |(?P<INTEGER_LIT>[0-9]+)
    |(?P<STRING_LIT>"[^"\\\n\v\f]*")
    |(?P<PUNCTUATION>->|[:,()}}\[\]<>=+/*?|-]|\{{(?!-\#)))""",
    re.ASCII | re.VERBOSE,
)
"""Blanks and comments (as `MLIRLexer._whitespace_regex`, but possessive: no
backtracking into long runs of them), then one of the tokens `FastLexer`
forms itself, each group named after its kind, spelled as `MLIRLexer` lexes
them (ASCII letters only: a non-ASCII one goes to `MLIRLexer`, as do strings
with escapes, `...`, `{-#`, `#-}`, the end and errors)."""

_KINDS: dict[str, MLIRTokenKind] = {
    **{kind.name: kind for kind in MLIRTokenKind},
    "HEX_INTEGER_LIT": MLIRTokenKind.INTEGER_LIT,
}
_PUNCTUATION: dict[str, MLIRTokenKind] = {
    kind.value: kind for kind in MLIRTokenKind if isinstance(kind.value, str)
}


class FastLexer(MLIRLexer):
    """`MLIRLexer` with one regular-expression match for the common tokens."""

    def lex(self) -> MLIRToken:
        match = _COMMON_TOKEN.match(self.input.content, self.pos)
        if match is None:
            return super().lex()
        group = match.lastgroup
        assert group is not None
        start, end = match.span(group)
        kind = _PUNCTUATION[match[group]] if group == "PUNCTUATION" else _KINDS[group]
        self.pos = end
        if kind is MLIRTokenKind.STRING_LIT:
            return Token(kind, StringLiteral(start, end, self.input))
        return Token(kind, Span(start, end, self.input))


_COMPACT_TYPE = re.compile(
    r"(?:[a-z][a-z0-9]*<[a-z0-9?]*(?:<[a-z0-9]+>)?>"
    r"|(?:f16|bf16|f32|f64|i1|i8|i16|i32|i64|index)(?![a-zA-Z0-9_$.]))",
    re.ASCII,
)
"""A builtin type in one piece, ending with its closing `>` (at most one
nested `<...>`) or a scalar element type (`f64`, `i64`, `index`), whose value
depends on its text only (no aliases, no dialect types): cached when the
parser ended it where this match ends."""

_SKIPPED = r"(?:\s|//[^\n]*)*"
"""What the lexer skips: blanks and comments."""

_BLANK = re.compile(_SKIPPED, re.ASCII)

_ARROW = re.compile(
    rf":[ \t]*({_COMPACT_TYPE.pattern})[ \t]*->[ \t]*({_COMPACT_TYPE.pattern})", re.ASCII
)
"""`: T -> U` of two compact types on one line."""


_TYPE_LIST = rf"({_COMPACT_TYPE.pattern}(?:[ \t]*,[ \t]*{_COMPACT_TYPE.pattern})*)"
_SIGNATURE = re.compile(rf":[ \t]*{_TYPE_LIST}[ \t]*->[ \t]*({_COMPACT_TYPE.pattern})", re.ASCII)
"""`: T1, ..., Tn -> U` of compact types on one line: the inputs, the result."""

_PARENTHESIZED_SIGNATURE = re.compile(
    rf":[ \t]*\([ \t]*{_TYPE_LIST}[ \t]*\)[ \t]*->[ \t]*({_COMPACT_TYPE.pattern})", re.ASCII
)
"""`: (T1, ..., Tn) -> U` of compact types on one line: the inputs, the result."""

_INTEGER = re.compile(r"-?[0-9]+", re.ASCII)

I64_MIN, I64_MAX = -(2**63), 2**63 - 1
"""The range of an int64 (index arrays, dimensions, pass ids)."""

_ELEMENT_TYPES: dict[str, TypeAttribute] = {
    "f16": Float16Type(),
    "bf16": BFloat16Type(),
    "f32": Float32Type(),
    "f64": Float64Type(),
    **{f"i{width}": IntegerType(width) for width in (1, 8, 16, 32, 64)},
    "index": IndexType(),
    "complex<f32>": ComplexType(Float32Type()),
    "complex<f64>": ComplexType(Float64Type()),
}
"""The element types a plain tensor type is built with, by their text."""

_PLAIN_TENSOR_TYPE = re.compile(
    rf"tensor<((?:[1-9][0-9]{{0,17}}x)*)({'|'.join(map(re.escape, _ELEMENT_TYPES))})>", re.ASCII
)
"""`tensor<4x5xf64>`: dimensions of 1 to 18 digits (below 2^63, no leading
zero, no 0x that could read as hexadecimal), a builtin element type."""

_DECIMAL = r"-?[0-9]+(?:\.[0-9]*(?:[eE][+-]?[0-9]+)?)?"
"""A decimal number as the values of a dense literal are plainly written."""

_HEX_BITS = r"0x[0-9a-fA-F]+(?![0-9a-zA-Z_$.])"
"""`0x3FF4000000000000`: a hexadecimal integer (the bits of a float)."""

_PLAIN_DENSE = re.compile(
    rf"dense<[ \t]*({_HEX_BITS}|{_DECIMAL}|\[[-+0-9.eE, \t\[\]]*\])[ \t]*>[ \t]*:[ \t]*",
    re.ASCII,
)
"""`dense<1.25> : ` (a splat), `dense<0x3FF4000000000000> : ` (a splat of
float bits) or `dense<[[1.0, 2], [3, 4.5]]> : ` (nested lists of numbers, on
one line): the values of a dense literal (the type follows)."""

_DECIMALS = re.compile(_DECIMAL, re.ASCII)

_FLOAT_LITERAL = r"-?[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?"
"""A decimal float as constants write it plainly (a point, an exponent if any)."""

_PLAIN_ARITH_CONSTANT = re.compile(
    r"[ \t]+(?:(-?[0-9]{1,19})[ \t]*:[ \t]*(index|i8|i16|i32|i64)"
    rf"|({_FLOAT_LITERAL})[ \t]*:[ \t]*(f64|f32))(?![a-zA-Z0-9_$.<])",
    re.ASCII,
)
"""The operands of `arith.constant` in its plain forms: `5 : index`, an
integer of i8 to i64 or index, or `1.5 : f64`, a decimal f64 or f32."""

_PLAIN_LLVM_CONSTANT = re.compile(
    rf"\((?:(-?[0-9]{{1,19}})|({_FLOAT_LITERAL})[ \t]*:[ \t]*(f64|f32))\)"
    r"[ \t]*:[ \t]*(i1|i8|i16|i32|i64|index|f32|f64)(?![a-zA-Z0-9_$.<])",
    re.ASCII,
)
"""The rest of `llvm.mlir.constant` in its plain forms: `(5) : i64`, an
integer (an i64 value) of a builtin scalar type, or `(1.5 : f64) : f64`."""

PLAIN_STRING = r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-7][0-9A-Fa-f]))*"'
"""A string literal on one line whose escapes (`\\n`, `\\"`, `\\22`) stand for
ASCII characters: its value is text (as xDSL's parser reads it)."""

_DIALECT_ATTRIBUTE = (
    rf"#[a-zA-Z_][a-zA-Z0-9_$.]*+(?:<(?:[^<>{{}}\"\n]|{PLAIN_STRING}"
    rf"|<(?:[^<>{{}}\"\n]|{PLAIN_STRING})*+>)*+>)?+(?![a-zA-Z0-9_$.<])"
)
"""`#dialect.name<...>`: a dialect attribute on one line, plain strings
(`PLAIN_STRING`) and at most one nested `<...>` in its parameters."""

_I64_ARRAY = r"array<i64(?::[ \t]*-?[0-9]{1,19}(?:[ \t]*,[ \t]*-?[0-9]{1,19})*)?>"
"""`array<i64: 1, -2>` (or `array<i64>`): an i64 array attribute."""

_ATTR_ENTRY = (
    r"([a-zA-Z_][a-zA-Z0-9_$.]*)[ \t]*=[ \t]*"
    rf"(?:(-?[0-9]{{1,19}})[ \t]*:[ \t]*i(8|16|32|64)(?![a-zA-Z0-9_$.])|({PLAIN_STRING})"
    rf"|({_DIALECT_ATTRIBUTE})|({_I64_ARRAY}))"
)
"""`name = 5 : i64`, `name = "text"`, `name = #dialect.name<...>` or
`name = array<i64: 1, 2>`: an entry of a plain attribute dictionary."""

_PLAIN_ATTR_DICT = re.compile(
    rf"\{{[ \t]*{_ATTR_ENTRY}(?:[ \t]*,[ \t]*{_ATTR_ENTRY})*[ \t]*\}}", re.ASCII
)
_PLAIN_ATTR_ENTRY = re.compile(_ATTR_ENTRY, re.ASCII)

_PLAIN_MODULE_HEADER = re.compile(
    r"builtin\.module(?:[ \t]+@(?P<name>[a-zA-Z_][a-zA-Z0-9_$.]*+))?"
    rf"(?:[ \t]+attributes[ \t]*(?P<attributes>{_PLAIN_ATTR_DICT.pattern}))?[ \t]*(?=\{{)",
    re.ASCII,
)
"""`builtin.module @name attributes {plain dictionary} ` before its body (the
name and the attributes optional)."""

_PLAIN_LOCATION = re.compile(
    rf"loc[ \t]*\([ \t]*({PLAIN_STRING})"
    r"[ \t]*:[ \t]*([0-9]{1,18})[ \t]*:[ \t]*([0-9]{1,18})[ \t]*\)",
    re.ASCII,
)
"""`loc("file":line:column)`, a file location of decimal line and column."""

MAX_PLAIN_DENSE = 1 << 16
"""The most elements a dense literal read in one match has (larger ones go
token by token: xDSL expands a splat to every element)."""


_SSA_NAME = rf"%{_SUFFIX_ID}(?![a-zA-Z0-9$._-])"
"""An SSA value name as one `%` token (the suffix lexes no further)."""

_SINGLE_RESULT_OP = re.compile(
    rf"({_SSA_NAME})[ \t]*=[ \t]*([a-zA-Z_][a-zA-Z0-9_$.]*+)(?![a-zA-Z0-9_$.])", re.ASCII
)
"""`%name = dialect.op`: the result list and the name of a single-result op
in a custom syntax."""


_OP_STARTS = (MLIRTokenKind.PERCENT_IDENT, MLIRTokenKind.BARE_IDENT, MLIRTokenKind.STRING_LIT)
"""The tokens an op starts with (its results, its name, a generic op's quoted
name): any other ends a block, as xDSL's `parse_optional_operation` decides."""

_LINE_HEAD = re.compile(rf"((?:{_SSA_NAME}[ \t]*,[ \t]*)*{_SSA_NAME})[ \t]*=[ \t]*", re.ASCII)
"""`%a, %b = `, the head of a line naming the results of its op (one name each)."""

_SSA_NAMES = re.compile(f"({_SSA_NAME})", re.ASCII)
"""Splits a line into its text between SSA names and the names."""

_BLOCK_ARGUMENT = re.compile(rf"({_SSA_NAME})[ \t]*:[ \t]*({_COMPACT_TYPE.pattern})", re.ASCII)
"""`%a: T`, a block argument of a compact type: its name, its type."""

_PLAIN_BLOCK_ARGUMENTS = re.compile(
    rf"\([ \t]*((?:{_BLOCK_ARGUMENT.pattern}[ \t]*,[ \t]*)*{_BLOCK_ARGUMENT.pattern})?[ \t]*\)",
    re.ASCII,
)
"""`(%a: T, %b: U)`, a block's argument list on one line (group 1: the arguments)."""

_FUNC_NAME = (
    r"func\.func[ \t]+(?:(?P<visibility>private|public|nested)[ \t]+)?"
    r"@(?P<name>[a-zA-Z_][a-zA-Z0-9_$.]*)[ \t]*"
)
"""`func.func private @name`: the start of a function in its plain form."""

_FUNC_RESULTS_AND_ATTRIBUTES = (
    rf"(?:[ \t]*->[ \t]*(?:(?P<result>{_COMPACT_TYPE.pattern})"
    rf"|\((?P<results>[ \t]*{_TYPE_LIST}?[ \t]*)\)))?"
    rf"(?:[ \t]+attributes[ \t]*(?P<attributes>{_PLAIN_ATTR_DICT.pattern}))?[ \t]*"
)
"""`-> V attributes {a = 1 : i64}`: the end of a function's plain header."""

_PLAIN_FUNC_HEADER = re.compile(
    rf"{_FUNC_NAME}(?P<arguments>{_PLAIN_BLOCK_ARGUMENTS.pattern}){_FUNC_RESULTS_AND_ATTRIBUTES}(?=\{{)",
    re.ASCII,
)
"""`func.func private @name(%a: T, %b: U) -> V attributes {a = 1 : i64}`
before `{`: a function's header in its plain form (compact types, a plain
attribute dictionary if any, no argument attributes or locations)."""

_PLAIN_FUNC_DECLARATION = re.compile(
    rf"{_FUNC_NAME}\((?P<inputs>[ \t]*{_TYPE_LIST}?[ \t]*)\){_FUNC_RESULTS_AND_ATTRIBUTES}(?=\n)",
    re.ASCII,
)
"""`func.func private @name(T, U) -> V` ending its line: the declaration of a
function without a body, in its plain form (as MLIR prints it)."""

_PLAIN_GENERIC_OP = re.compile(
    rf"(?:(?P<result_name>{_SSA_NAME})[ \t]*=[ \t]*)?"
    rf'"(?P<name>[a-zA-Z_][a-zA-Z0-9_$.]*)"'
    rf"\((?P<operands>[ \t]*(?:{_SSA_NAME}(?:[ \t]*,[ \t]*{_SSA_NAME})*)?[ \t]*)\)"
    rf"(?:[ \t]*<(?P<properties>{_PLAIN_ATTR_DICT.pattern})>)?"
    rf"(?:[ \t]*(?P<attributes>{_PLAIN_ATTR_DICT.pattern}))?"
    rf"[ \t]*:[ \t]*\((?P<inputs>[ \t]*{_TYPE_LIST}?[ \t]*)\)[ \t]*->[ \t]*"
    rf"(?:(?P<result>{_COMPACT_TYPE.pattern})|\((?P<results>[ \t]*{_TYPE_LIST}?[ \t]*)\))"
    r"(?=[ \t]*(?:\n|loc))",
    re.ASCII,
)
"""`%r = "dialect.op"(%a, %b) <{p = array<i64: 1>}> {a = 1 : i64} : (T, U) -> V`
ending its line (or before its location): an op in the generic syntax, in its
plain form (one result or none, plain property and attribute dictionaries,
compact types; no regions or successors)."""

_PLAIN_FOR_HEADER = re.compile(
    rf"scf\.for[ \t]+(?P<variable>{_SSA_NAME})[ \t]*=[ \t]*(?P<lower>{_SSA_NAME})[ \t]+to"
    rf"[ \t]+(?P<upper>{_SSA_NAME})[ \t]+step[ \t]+(?P<step>{_SSA_NAME})[ \t]*(?=\{{)",
    re.ASCII,
)
"""`scf.for %i = %a to %b step %c` before `{`: a loop's header in its plain
form (an `index` counter, no loop-carried values)."""

_PLAIN_IF_HEADER = re.compile(
    rf"[ \t]+(?P<condition>{_SSA_NAME})"
    rf"(?:[ \t]*->[ \t]*\((?P<results>[ \t]*{_TYPE_LIST}[ \t]*)\))?[ \t]*(?=\{{)",
    re.ASCII,
)
"""` %c -> (T, U)` after `scf.if`, before `{`: the rest of a conditional's
header in its plain form (compact result types)."""

_FUNC_PROPERTY_NAMES = frozenset({"sym_name", "function_type", "sym_visibility"})
"""Names a function's `attributes {...}` may not use (xDSL's parser rejects them)."""

_LLVM_TYPE = rf"(?:!llvm\.ptr(?![a-zA-Z0-9_$.<])|{_COMPACT_TYPE.pattern})"
"""An opaque pointer or a compact builtin type."""

_GEP_INDEX = rf"(?:-?[0-9]+|{_SSA_NAME})"

_PLAIN_LLVM_GEP = re.compile(
    rf"[ \t]+(inbounds[ \t]+)?({_SSA_NAME})[ \t]*"
    rf"\[[ \t]*({_GEP_INDEX}(?:[ \t]*,[ \t]*{_GEP_INDEX})*)[ \t]*\][ \t]*:[ \t]*"
    rf"\([ \t]*!llvm\.ptr((?:[ \t]*,[ \t]*{_COMPACT_TYPE.pattern})*)[ \t]*\)[ \t]*"
    rf"->[ \t]*!llvm\.ptr[ \t]*,[ \t]*({_COMPACT_TYPE.pattern})",
    re.ASCII,
)
"""` inbounds %p[0, %i] : (!llvm.ptr, i64) -> !llvm.ptr, f64`: the rest of an
`llvm.getelementptr` (inbounds or not, its pointer, its indices, the types of
its index operands and its element type) without an attribute dictionary."""

_COMPACT_TYPES = rf"(?:{_COMPACT_TYPE.pattern}(?:[ \t]*,[ \t]*{_COMPACT_TYPE.pattern})*)?"
"""`f64, i64`: compact types, none or more."""

_PLAIN_CALL_INTRINSIC = re.compile(
    rf"[ \t]+\"(llvm\.[a-zA-Z0-9_.]+)\"[ \t]*"
    rf"\([ \t]*((?:{_SSA_NAME}(?:[ \t]*,[ \t]*{_SSA_NAME})*)?)[ \t]*\)[ \t]*:[ \t]*"
    rf"\([ \t]*({_COMPACT_TYPES})[ \t]*\)[ \t]*->[ \t]*({_COMPACT_TYPE.pattern})",
    re.ASCII,
)
"""` "llvm.exp.f64"(%x) : (f64) -> f64`: the rest of an `llvm.call_intrinsic`
of one result without operand bundles, attributes or fastmath flags, its
operands' and result's types compact."""

_GEP_OPERAND = -(2**31)
"""What `rawConstantIndices` holds for an index operand (xDSL's
`llvm.GEP_USE_SSA_VAL`; the llvm dialect is not imported for it)."""

_GEP_CONSTANT_RANGE = range(_GEP_OPERAND + 1, 2**31)
"""The constant indices read plainly: the other i32 values."""

_OPAQUE_POINTER = re.compile(r"!llvm\.ptr(?![a-zA-Z0-9_$.<])", re.ASCII)
"""`!llvm.ptr`: read by xDSL the first time, then one object (as compact
types are), so that ops on pointers are alike for `VerifiedKinds`."""

_UNIT_NAMES = r"[a-zA-Z_][a-zA-Z0-9_$.]*(?:[ \t]*,[ \t]*[a-zA-Z_][a-zA-Z0-9_$.]*)*"
"""`a.b, c`: names of unit attributes."""

_LLVM_ARGUMENT = re.compile(
    rf"({_SSA_NAME})[ \t]*:[ \t]*({_LLVM_TYPE})(?:[ \t]*\{{[ \t]*({_UNIT_NAMES})[ \t]*\}})?",
    re.ASCII,
)
"""`%a: T {unit.attribute, ...}`, an argument of an `llvm.func` (its name,
type and unit attributes)."""

_PLAIN_LLVM_FUNC_HEADER = re.compile(
    rf"llvm\.func[ \t]+@(?P<name>[a-zA-Z_][a-zA-Z0-9_$.]*)[ \t]*"
    rf"\((?P<arguments>[ \t]*(?:{_LLVM_ARGUMENT.pattern}"
    rf"(?:[ \t]*,[ \t]*{_LLVM_ARGUMENT.pattern})*)?[ \t]*)\)"
    rf"(?:[ \t]*->[ \t]*(?P<result>{_LLVM_TYPE}))?[ \t]*(?=\{{)",
    re.ASCII,
)
"""`llvm.func @name(%a: !llvm.ptr {llvm.noalias}, %n: i64) -> T` before `{`:
a function's header in its plain form (no linkage, visibility or calling
convention keywords, attributes or locations)."""

_PLAIN_VALUES = re.compile(
    rf"[ \t]*((?:{_SSA_NAME}[ \t]*,[ \t]*)*{_SSA_NAME})[ \t]*:[ \t]*{_TYPE_LIST}", re.ASCII
)
"""`%a, %b : T, U`, values and their compact types on one line."""

_COMMENT_OR_LOCATION = re.compile(r"//|\bloc\b", re.ASCII)

MAX_LINE_FORMS = 4096
"""The most line forms a parser keeps (inputs of ever new forms learn no more)."""


def _form_may_be_learnt(line: str) -> bool:
    """Whether the form of `line` may be learnt: it has no comment and no
    explicit location (given to one op only), and its strings (if any) hold no
    `%`, `@`, `^` and no escape, so that its names are those of its values,
    symbols and successors."""
    if _COMMENT_OR_LOCATION.search(line) is not None:
        return False
    if '"' not in line:
        return True
    strings = line.split('"')[1::2]
    return "\\" not in line and not any(
        "%" in text or "@" in text or "^" in text for text in strings
    )


@functools.cache
def _operands_before(keyword: str) -> re.Pattern[str]:
    """`%a, %b, keyword`: one or more operands, the names in group 1."""
    names = rf"((?:{_SSA_NAME}[ \t]*,[ \t]*)+)"
    return re.compile(rf"[ \t]*{names}{re.escape(keyword)}(?![a-zA-Z0-9_$.])", re.ASCII)


@functools.cache
def _operands_colon(count: int) -> re.Pattern[str]:
    """`%a, %b :` for `count` operands, each name a group (blanks: spaces, tabs)."""
    names = [f"({_SSA_NAME})"] * count
    return re.compile(r"[ \t]*" + r"[ \t]*,[ \t]*".join(names) + r"[ \t]*:[ \t]*", re.ASCII)


class PlainOp:
    """Mixin for op classes whose custom syntax is, in its plain form,
    `%a, %b : T`: `PLAIN_OPERANDS` operands and, after a colon, the type of
    each of them and of the one result; their `parse` reads it to
    `create(operands=..., result_types=[T])`. `FastParser` builds such an op
    from one match of that text (the other forms, with an attribute
    dictionary, go to the op's `parse`)."""

    PLAIN_OPERANDS: ClassVar[int]


class PlainArrowOp:
    """Mixin for op classes whose syntax is, in its plain form, `%x : T -> U`:
    one operand of type T, one result of type U, nothing else (an assembly
    format `$operand attr-dict : type($operand) -> type($result)`).
    `FastParser` builds such an op from one match of that text when it knows
    both types (the other forms go to the op's `parse`)."""


_OPERAND_ARROW = re.compile(rf"[ \t]*({_SSA_NAME})[ \t]*{_ARROW.pattern}", re.ASCII)
"""`%x : T -> U` of two compact types on one line."""


def _create_plain(
    op_type: type[Operation], operands: Sequence[SSAValue], result_type: Attribute
) -> Operation:
    """`op_type.create(operands=operands, result_types=[result_type])`, built
    directly (`build_operation`) when `create` would set nothing more."""
    if not _builds_plainly(op_type):
        return op_type.create(operands=operands, result_types=[result_type])
    return build_operation(op_type, operands, (result_type,), {}, {})


def _end_with_yield(loop: Operation, yield_type: type[Operation]) -> None:
    """Give the body of `loop` (of one block, without loop-carried values)
    its implicit `scf.yield`, as xDSL's `ensure_terminator` does, built
    directly; the other cases, errors among them, are xDSL's."""
    blocks = loop.regions[0].blocks
    last = blocks.first.last_op if len(blocks) == 1 and blocks.first is not None else None
    if isinstance(last, yield_type):
        return
    if len(blocks) == 1 and (
        last is None or not last.has_trait(IsTerminator, value_if_unregistered=False)
    ):
        blocks.first.add_op(build_operation(yield_type, [], [], {}, {}))  # pyright: ignore[reportOptionalMemberAccess]
        return
    for trait in loop.get_traits_of_type(SingleBlockImplicitTerminator):
        ensure_terminator(loop, trait)


def build_operation(
    op_type: type[OperationT],
    operands: Sequence[SSAValue],
    result_types: Sequence[Attribute],
    properties: Mapping[str, Attribute],
    attributes: Mapping[str, Attribute],
) -> OperationT:
    """`op_type.create(...)` of an op without regions and successors, built
    directly: `create`'s generic path costs about 6 of the 8.5 µs it takes,
    paid for each op a parser reads (ops' `parse` methods use it too)."""
    op = op_type.__new__(op_type)
    uses = tuple([Use(op, index) for index in range(len(operands))])
    for operand, use in zip(operands, uses, strict=True):
        operand.add_use(use)
    op._operands = SSAValues(operands)  # pyright: ignore[reportPrivateUsage]
    op._operand_uses = uses  # pyright: ignore[reportPrivateUsage]
    op.results = SSAValues(OpResult(t, op, index) for index, t in enumerate(result_types))
    op.properties = dict(properties)
    op.attributes = dict(attributes)
    op.location = UNKNOWN_LOC
    return op


_Successor: TypeAlias = tuple[str, Span]
"""A successor named on a line: its name (without its `^`) and where it is."""

_Line: TypeAlias = tuple[
    re.Match[str] | None, list[str], int, str | None, list[str], list[_Successor]
]
"""A line as `FastParser._split_line` splits it: its `%name = ` head (if
any), the rest's texts and SSA names alternating (a plain attribute
dictionary in them replaced by `_DICTIONARY_HOLE`, each symbol name by `@`,
each successor by `^`), its end, the text of that dictionary (None: it has
none), its symbol names (without their `@`) and its successors."""

_SYMBOL = re.compile(r"@([a-zA-Z_][a-zA-Z0-9_$.]*+)", re.ASCII)
"""A bare symbol name, `@f`."""

_SUCCESSOR = re.compile(rf"\^({_SUFFIX_ID})(?![a-zA-Z0-9$._-])", re.ASCII)
"""A block named as a successor, `^bb3`."""


@dataclass(frozen=True)
class _SymbolTarget:
    """Where the symbol name of a line goes in the op it reads to: the
    property (or attribute) `name`, as a `StringAttr` (a symbol's own name) or
    a `SymbolRefAttr` (a reference)."""

    in_properties: bool
    name: str
    reference: bool

    def value(self, symbol: str) -> Attribute:
        """What the op of a line naming `symbol` holds there."""
        return SymbolRefAttr(symbol) if self.reference else unverified_data(StringAttr, symbol)


_FOLLOWER = re.compile(rf"{_SKIPPED}+([a-zA-Z_][a-zA-Z0-9_$.]*|->|\S?)", re.ASCII)
"""What starts the token after a position: a bare identifier (a keyword may
continue an op: `loc`, `else`), `->`, or its first character ("" at the end)."""

_DICTIONARY_HOLE = "{}"
"""What stands for a plain attribute dictionary in the texts of a line."""


@dataclass(frozen=True)
class _LineForm:
    """What a line reads to whatever its SSA names: an op of `op_type` with
    these properties, attributes and result types, its operands the values
    the names of the line (in their order) give, when they have
    `operand_types`. Learnt from a line read by the op's own `parse`."""

    op_type: type[Operation]
    operand_types: tuple[Attribute, ...]
    result_types: tuple[Attribute, ...]
    properties: dict[str, Attribute]
    attributes: dict[str, Attribute]
    separators: tuple[str, ...] | None = None
    """For the line that opens the first region of an op (`_RegionsRead`):
    the texts between its regions (None: an op without regions)."""
    symbol_targets: tuple[_SymbolTarget, ...] = ()
    """Where each symbol name of the line goes."""

    def build(
        self,
        operands: Sequence[SSAValue],
        attributes: Mapping[str, Attribute] | None = None,
        regions: Sequence[Region] = (),
        symbols: Sequence[str] = (),
        successors: Sequence[Block] = (),
    ) -> Operation:
        """The op of this form with `operands`, `attributes` (None: the
        form's, for a line without an attribute dictionary), `regions`,
        `symbols` (the symbol names of its line) and `successors`."""
        properties = self.properties
        if attributes is None:
            attributes = self.attributes
        if self.symbol_targets:
            properties, attributes = dict(properties), dict(attributes)
            for target, symbol in zip(self.symbol_targets, symbols, strict=True):
                table = properties if target.in_properties else attributes
                table[target.name] = target.value(symbol)
        op = build_operation(self.op_type, operands, self.result_types, properties, attributes)
        for region in regions:
            op.add_region(region)
        if successors:
            op.successors = successors
        return op


@dataclass
class _RegionsRead:
    """Where the regions an op's `parse` read directly lie in the text: the
    position of each one's `{` and of the token after its `}`."""

    spans: list[tuple[int, int]] = field(default_factory=list[tuple[int, int]])

    def separators(self, text: str) -> tuple[str, ...]:
        """The texts between the regions (from the token after one's `}` to
        the next one's `{`)."""
        ends = [end for _, end in self.spans[:-1]]
        starts = [start for start, _ in self.spans[1:]]
        return tuple(text[end:start] for end, start in zip(ends, starts, strict=True))


@functools.cache
def _assembly_format(op_type: type[Operation]) -> str | None:
    """The declarative assembly format of `op_type`'s syntax (None: it has
    another)."""
    if not issubclass(op_type, IRDLOperation):
        return None
    return op_type.get_irdl_definition().assembly_format


@functools.cache
def _format_ends_with_region(op_type: type[Operation]) -> bool:
    """Whether `op_type`'s syntax is a declarative assembly format that ends
    with its last region: what opens its first region at the end of a line,
    and the text between the regions, then determine the op (regions aside),
    and nothing follows its last region."""
    if (assembly_format := _assembly_format(op_type)) is None:
        return False
    regions = cast(type[IRDLOperation], op_type).get_irdl_definition().regions
    return bool(regions) and assembly_format.rstrip().endswith(f"${regions[-1][0]}")


def _symbol_targets(op: Operation, symbols: Sequence[str]) -> tuple[_SymbolTarget, ...] | None:
    """Where the symbol names `symbols` of the line `op` was read from went,
    if its syntax is a declarative assembly format (which reads a symbol name
    to a property or attribute of its own, a `StringAttr` or a
    `SymbolRefAttr`) and each went to one place, no other holding the same
    (None otherwise)."""
    if not symbols:
        return ()
    if _assembly_format(type(op)) is None:
        return None
    targets: list[_SymbolTarget] = []
    for symbol in symbols:
        values = {unverified_data(StringAttr, symbol): False, SymbolRefAttr(symbol): True}
        found = [_SymbolTarget(in_properties, name, values[value])
                 for in_properties, table in ((True, op.properties), (False, op.attributes))
                 for name, value in table.items() if value in values]  # fmt: skip
        if len(found) != 1 or found[0] in targets:
            return None
        targets.append(found[0])
    return tuple(targets)


@functools.cache
def _builds_plainly(op_type: type[Operation]) -> bool:
    """Whether `create` would set no more than `_create_plain` does itself."""
    if not issubclass(op_type, IRDLOperation):
        return False
    definition = op_type.get_irdl_definition()
    return not (
        definition.properties
        or definition.attributes
        or definition.regions
        or definition.successors
        or len(definition.results) != 1
    )


@functools.cache
def _dense_literal_types() -> AttrConstraint[
    RankedStructure[IntegerType | IndexType | AnyFloat | ComplexType]
]:
    """The types a dense literal may have (as xDSL's parser checks them)."""
    return base(RankedStructure[IntegerType | IndexType | AnyFloat | ComplexType])


_NO_ENCODING = NoneAttr()
"""A tensor type's encoding when it has none (the constructor costs 2.5 µs)."""


def unverified_data(attribute_type: type[DataT], data: object) -> DataT:
    """`attribute_type(data)` of a data attribute (`IntAttr`, `ArrayAttr`),
    without the check of `data`, known to be right (half of what the
    constructor costs or more)."""
    attribute = attribute_type.__new__(attribute_type)
    object.__setattr__(attribute, "data", data)
    return attribute


def string_value(literal: str) -> str:
    """The value of the string literal `literal` (`PLAIN_STRING`, quotes
    included) as xDSL's parser reads it."""
    if "\\" not in literal:
        return literal[1:-1]
    return StringLiteral(0, len(literal), Input(literal, "<string>")).string_contents


def int_attr(value: int) -> IntAttr:
    """`IntAttr(value)` for an int, unverified (`unverified_data`)."""
    return unverified_data(IntAttr, value)


def integer_attr(value: int, value_type: TypeAttribute) -> IntegerAttr:
    """`IntegerAttr(value, value_type)` for a value the type holds as it is
    (checked by the caller), unverified."""
    return unverified_attribute(IntegerAttr, int_attr(value), value_type)


def unverified_attribute(attribute_type: type[AttributeT], *parameters: Attribute) -> AttributeT:
    """`attribute_type(*parameters)` for parameters known to verify, built as
    xDSL's `ParametrizedAttribute.new` builds attributes, minus the
    verification (most of what the constructor costs)."""
    attribute = attribute_type.__new__(attribute_type)
    definition = attribute_type.get_irdl_definition()
    for (name, _), parameter in zip(definition.parameters, parameters, strict=True):
        object.__setattr__(attribute, name, parameter)
    return attribute


def i64_array(values: Sequence[int]) -> DenseArrayBase:
    """An `array<i64: ...>` property (one object per distinct array: they are
    immutable, and building one costs ~15 µs)."""
    return _i64_array(tuple(int(v) for v in values))


@functools.lru_cache(maxsize=4096)
def _i64_array(values: tuple[int, ...]) -> DenseArrayBase:
    if all(I64_MIN <= v <= I64_MAX for v in values):
        # Packed here: `from_list` normalizes each value first (~3x the time).
        data = unverified_data(BytesAttr, struct.pack(f"<{len(values)}q", *values))
        return unverified_attribute(DenseArrayBase, i64, data)
    return DenseArrayBase.from_list(i64, values)


@functools.lru_cache(maxsize=4096)
def _i32_array(values: tuple[int, ...]) -> DenseArrayBase:
    """`array<i32: ...>` of `values` (i32 values), made once per distinct list."""
    return DenseArrayBase.from_list(i32, values)


_NO_WRAP = IntegerAttr(0, 32)
"""The `noWrapFlags` of a getelementptr read plainly (xDSL's default)."""


def _plain_tensor_type(text: str) -> TensorType | None:
    """The tensor type `text` spells in its plain form (None: another form),
    as xDSL's parser reads it, when it has fewer than 2^63 elements."""
    match = _PLAIN_TENSOR_TYPE.fullmatch(text)
    if match is None:
        return None
    shape = [int(dimension) for dimension in match[1].split("x")[:-1]]
    if math.prod(shape) > I64_MAX:
        return None
    dimensions = unverified_data(ArrayAttr, tuple([int_attr(n) for n in shape]))
    return unverified_attribute(TensorType, dimensions, _ELEMENT_TYPES[match[2]], _NO_ENCODING)


def _dense(literal_type: TypeAttribute, values: str) -> DenseIntOrFPElementsAttr | None:
    """`dense<values> : literal_type` as xDSL's parser reads it (`values` a
    number, a splat, or nested lists of numbers shaped as the type), for a
    tensor of at most `MAX_PLAIN_DENSE` floats (f32, f64) or signless
    integers (i8 to i64) that hold the values as written (None otherwise:
    the token-by-token path decides, errors included)."""
    if not isinstance(literal_type, TensorType):
        return None
    shape = tuple(literal_type.get_shape())
    count = math.prod(shape)
    if count > MAX_PLAIN_DENSE:
        return None
    splat = not values.startswith("[")
    numbers = [values] if splat else _nested_numbers(values, shape)
    element = literal_type.element_type
    if numbers is None:
        return None
    if values.startswith("0x"):
        float_type = isinstance(element, Float32Type | Float64Type)
        data = _float_bits(element, int(values, 16)) if float_type else None
    elif isinstance(element, Float32Type | Float64Type):
        data = _float_data(element, numbers)
    elif isinstance(element, IntegerType) and element.signedness.data == Signedness.SIGNLESS:
        data = _integer_data(element, numbers)
    else:
        return None
    if data is None:
        return None
    if splat:
        data *= count  # (its one value repeated)
    return unverified_attribute(DenseIntOrFPElementsAttr, literal_type, BytesAttr(data))


def _nested_numbers(values: str, shape: tuple[int, ...]) -> list[str] | None:
    """The numbers of the nested lists `values`, in order, if the lists nest
    as `shape` (None otherwise, or for a rank-0 shape)."""
    compact = values.replace(" ", "").replace("\t", "")
    if not shape or _DECIMALS.sub("n", compact) != _list_skeleton(shape):
        return None
    return _DECIMALS.findall(compact)


@functools.lru_cache(maxsize=256)
def _list_skeleton(shape: tuple[int, ...]) -> str:
    """Nested lists shaped `shape` written without blanks, `n` for each number."""
    length, *inner_shape = shape
    inner = _list_skeleton(tuple(inner_shape)) if inner_shape else "n"
    return "[" + ",".join([inner] * length) + "]"


def _float_data(element: Float32Type | Float64Type, numbers: list[str]) -> bytes | None:
    """The finite float `numbers` packed as `element`s."""
    values = [float(number) if len(number) < 400 else math.inf for number in numbers]
    if not all(map(math.isfinite, values)):
        return None
    try:
        return element.pack(values)
    except OverflowError:  # beyond f32
        return None


def _float_bits(element: AnyFloat, bits: int) -> bytes | None:
    """The float whose bit pattern is `bits` (`HexadecimalFloats`), packed as
    an `element`, if they fit its width (None otherwise)."""
    size = element.compile_time_size
    return bits.to_bytes(size, "little") if bits < 1 << (8 * size) else None


def _integer_data(element: IntegerType, numbers: list[str]) -> bytes | None:
    """The decimal integer `numbers` packed as `element`s, if they fit their
    signed range (8 bits or more)."""
    width = element.width.data
    if width < 8 or any("." in number or len(number) > 20 for number in numbers):
        return None
    values = [int(number) for number in numbers]
    if not all(_fits_signed(value, width) for value in values):
        return None
    return element.pack(values)


def _plain_number(
    integer: str | None, integer_type: str, real: str | None, real_type: str | None
) -> IntegerAttr | FloatAttr | None:
    """The constant `integer : integer_type` (an integer type or index) or
    `real : real_type` (f32, f64) as xDSL reads it, when the type holds it as
    written (a signed integer, a finite float) (None otherwise)."""
    if real is not None:
        value_type = cast(Float32Type | Float64Type, _ELEMENT_TYPES[cast(str, real_type)])
        if (data := _float_data(value_type, [real])) is None:
            return None
        return unverified_attribute(FloatAttr, FloatData(value_type.unpack(data, 1)[0]), value_type)
    number = int(cast(str, integer))
    width = 64 if integer_type == "index" else int(integer_type[1:])
    if not _fits_signed(number, width):
        return None
    return integer_attr(number, _ELEMENT_TYPES[integer_type])


def _plain_attr_entries(text: str, known: Mapping[str, Attribute]) -> dict[str, Attribute] | None:
    """The entries of the plain attribute dictionary `text` (`_PLAIN_ATTR_DICT`)
    as xDSL reads them, its dialect attributes those `known` by their text
    (None: one is not, a repeated name, or an integer its type or array does
    not hold, which xDSL reports)."""
    entries: dict[str, Attribute] = {}
    for name, value, width, string, other, array in _PLAIN_ATTR_ENTRY.findall(text):
        if name in entries:
            return None
        if array:
            values = [int(v) for v in _INTEGER.findall(array.partition(":")[2])]
            if not all(I64_MIN <= v <= I64_MAX for v in values):
                return None
            entries[name] = i64_array(values)
        elif other:
            if (attribute := known.get(other)) is None:
                return None
            entries[name] = attribute
        elif not value:
            entries[name] = unverified_data(StringAttr, string_value(string))
        elif _fits_signed(number := int(value), int(width)):
            entries[name] = integer_attr(number, _ELEMENT_TYPES[f"i{width}"])
        else:
            return None
    return entries


class _LlvmDefaults(NamedTuple):
    """What a plain `llvm.func` header is built with."""

    void: Attribute
    pointer: Attribute
    """The opaque pointer type, `!llvm.ptr`."""
    zero: Attribute
    """`0 : i64`, no `unnamed_addr`."""
    properties: dict[str, Attribute]
    """The last properties xDSL's `llvm.func` parser gives a function without
    keywords: the C calling convention, external linkage, default visibility."""
    no_fastmath: Attribute
    """`#llvm.fastmath<none>`, the flags of a call without them."""


@functools.cache
def _llvm_defaults() -> _LlvmDefaults:
    """The `_LlvmDefaults`, made once (the llvm dialect is imported when an
    input uses it)."""
    from xdsl.dialects import llvm

    zero = IntegerAttr(0, 64)
    properties = {
        "CConv": llvm.CallingConventionAttr("ccc"),
        "linkage": llvm.LinkageAttr("external"),
        "visibility_": zero,
    }
    return _LlvmDefaults(
        llvm.LLVMVoidType(), llvm.LLVMPointerType(), zero, properties, llvm.FastMathAttr(None)
    )


def _llvm_func_properties(
    name: str, inputs: list[Attribute], output: Attribute, arg_attrs: list[DictionaryAttr]
) -> dict[str, Attribute]:
    """The properties of the `llvm.func` `name` of a plain header (see
    `_llvm_defaults`), in the order xDSL's parser sets them."""
    from xdsl.dialects import llvm

    properties: dict[str, Attribute] = {}
    if any(attributes.data for attributes in arg_attrs):
        properties["arg_attrs"] = ArrayAttr(arg_attrs)
    defaults = _llvm_defaults()
    properties["unnamed_addr"] = defaults.zero
    properties["sym_name"] = unverified_data(StringAttr, name)
    properties["function_type"] = llvm.LLVMFunctionType(inputs, output)
    return properties | defaults.properties


def _unit_attributes(names: str | None) -> DictionaryAttr | None:
    """The dictionary of unit attributes named in `names` (`a.b, c`; None: none),
    None if a name is repeated."""
    entries = [] if names is None else [name.strip() for name in names.split(",")]
    if len(set(entries)) != len(entries):
        return None
    return DictionaryAttr({name: UnitAttr() for name in entries})


def _fits_signed(value: int, width: int) -> bool:
    """Whether `value` is in the range of a signed `width`-bit integer."""
    return -(1 << (width - 1)) <= value < 1 << (width - 1)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector (if it runs) within the block.
    What the block built joins the oldest generation when it ends (unless
    objects are frozen, which that would unfreeze): the first young
    collection after it would otherwise walk every object of the module
    (0.03-0.1 s for 1 MB of text), long-lived or, after a parse error,
    garbage left to a later full collection."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


_HEXADECIMAL = re.compile(r"-?[ \t]*0x", re.ASCII)
"""A hexadecimal integer literal starts here (after an optional minus)."""


class _HexadecimalElement(AttrParser._TensorLiteralElement):  # pyright: ignore[reportPrivateUsage]
    """A hexadecimal integer of a tensor literal: for a float element type,
    the bit pattern of the float (MLIR's meaning), of at most its width."""

    def to_type(
        self,
        parser: AttrParser,
        type: AnyFloat | IntegerType | IndexType | ComplexType,
    ) -> int | float | tuple[int, int] | tuple[float, float]:
        if not isinstance(type, AnyFloat) or isinstance(self.value, bool | float | tuple):
            return super().to_type(parser, type)
        if self.is_negative:
            parser.raise_error(
                "hexadecimal float literal should not have a leading minus", self.span
            )
        if (data := _float_bits(type, self.value)) is None:
            parser.raise_error(f"hexadecimal float constant out of range for {type}", self.span)
        return next(type.iter_unpack(data))


class HexadecimalFloats(Parser):
    """xDSL's parser reading a hexadecimal integer of a float tensor literal
    as the bit pattern of its float (`_HexadecimalElement`), as MLIR does and
    as xDSL does for a scalar `0x... : f64`; xDSL 0.74 reads the number
    (`dense<0x4000000000000000> : tensor<f64>`: 4.6e18, not 2.0)."""

    def _parse_tensor_literal_element(self) -> AttrParser._TensorLiteralElement:
        hexadecimal = _HEXADECIMAL.match(self.lexer.input.content, self.pos) is not None
        element = super()._parse_tensor_literal_element()
        if not hexadecimal:
            return element
        return _HexadecimalElement(element.is_negative, element.value, element.span)


class FastParser(HexadecimalFloats):
    """xDSL's parser with the fast paths of this module (see its docstring)."""

    def __init__(self, ctx: Context, text: str, name: str = "<unknown>"):
        super().__init__(ctx, text, name)
        state = self._parser_state
        state.lexer = FastLexer(state.lexer.input)
        state.current_token = state.lexer.lex()
        self._text = text
        self._types: dict[str, TypeAttribute] = {}
        self._line_forms: dict[tuple[object, ...], _LineForm] = {}
        self._attribute_texts: dict[str, Attribute] = {}
        self._location_files: dict[str, StringAttr] = {}
        self._regions_read = _RegionsRead()

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        # Every object the parser builds lives on: the cyclic garbage collector,
        # run every 700 allocations, would only walk them again and again.
        with _collector_paused():
            return super().parse_module(allow_implicit_module)

    def _consume_token(self, expected_kind: MLIRTokenKind | None = None) -> MLIRToken:
        # xDSL 0.74's, without its assertion on the kind (its callers test it).
        state = self._parser_state
        token = state.current_token
        state.current_token = state.lexer.lex()
        return token

    def parse_optional_punctuation(
        self, punctuation: PunctuationSpelling
    ) -> PunctuationSpelling | None:
        # xDSL 0.74's, the kind found by one lookup (xDSL checks the spelling
        # and searches the kinds on every call: most of a comma's cost).
        if self._parser_state.current_token.kind is not _PUNCTUATION[punctuation]:
            return None
        self._consume_token()
        return punctuation

    def parse_punctuation(
        self, punctuation: PunctuationSpelling, context_msg: str = ""
    ) -> PunctuationSpelling:
        if self.parse_optional_punctuation(punctuation) is None:
            self.raise_error(f"Expected '{punctuation}'" + context_msg, self._current_token.span)
        return punctuation

    def parse_optional_type(self) -> TypeAttribute | None:
        if (cached := self._cached_type(self.pos)) is not None:
            return cached
        match = _COMPACT_TYPE.match(self._text, self.pos) or _OPAQUE_POINTER.match(
            self._text, self.pos
        )
        parsed = super().parse_optional_type()
        if match is not None and parsed is not None and self._ends_at(match.end()):
            self._types[match.group()] = parsed
        return parsed

    def _cached_type(self, pos: int) -> TypeAttribute | None:
        """The type at `pos`, consumed, if `_known_type` knows its text (None:
        nothing consumed)."""
        match = _COMPACT_TYPE.match(self._text, pos) or _OPAQUE_POINTER.match(self._text, pos)
        if match is None or (known := self._known_type(match.group())) is None:
            return None
        self._resume_from(match.end())
        return known

    def _ends_at(self, end: int) -> bool:
        """Whether the last token consumed ends at `end` (only blanks up to the next)."""
        blank = _BLANK.match(self._text, end)
        return blank is not None and blank.end() == self.pos

    def parse_optional_attribute(self) -> Attribute | None:
        if self._text.startswith("dense<", self.pos) and (dense := self._plain_dense()):
            return dense
        return super().parse_optional_attribute()

    def _plain_dense(self) -> DenseIntOrFPElementsAttr | None:
        """`dense<values> : T` at the current token, consumed, read in one
        match when T is known or plain and `_dense` builds it (None, nothing
        consumed, otherwise)."""
        match = _PLAIN_DENSE.match(self._text, self.pos)
        if match is None:
            return None
        type_match = _COMPACT_TYPE.match(self._text, match.end())
        if type_match is None:
            return None
        literal_type = self._known_type(type_match.group())
        if literal_type is None or (dense := _dense(literal_type, match[1])) is None:
            return None
        self._resume_from(type_match.end())
        return dense

    def parse_optional_location(self) -> LocationAttr | None:
        # xDSL's, a plain `loc("file":line:column)` read in one match (its
        # file attribute shared by the locations naming that file).
        match = _PLAIN_LOCATION.match(self._text, self.pos)
        if match is None:
            return super().parse_optional_location()
        file = self._location_files.get(match[1])
        if file is None:
            file = self._location_files[match[1]] = StringAttr(string_value(match[1]))
        self._resume_from(match.end())
        return file_line_col(file, int_attr(int(match[2])), int_attr(int(match[3])))

    def parse_optional_dictionary_attr_dict(self) -> dict[str, Attribute]:
        if not self._text.startswith("{", self.pos):  # (most ops have none)
            return {}
        if entries := self._plain_attr_dict():
            return entries
        return super().parse_optional_dictionary_attr_dict()

    def _plain_attr_dict(self) -> dict[str, Attribute] | None:
        """`{a = 5 : i64, b = "text"}` at the current token, consumed, read in
        one match: entries of integers fitting their signed type, and strings
        without escapes (None, nothing consumed, otherwise or on a repeated
        name: the token-by-token path decides, errors included)."""
        match = _PLAIN_ATTR_DICT.match(self._text, self.pos)
        if (
            match is None
            or (entries := _plain_attr_entries(match[0], self._attribute_texts)) is None
        ):
            return None
        self._resume_from(match.end())
        return entries

    def _parse_dense_literal_type(
        self,
    ) -> RankedStructure[IntegerType | IndexType | AnyFloat | ComplexType]:
        # xDSL 0.74's, with its check of the type built once: xDSL builds the
        # constraint anew for every dense literal, 2.5 ms each.
        literal_type = self.expect(self.parse_optional_type, "Dense attribute must be typed!")
        if not _dense_literal_types().verifies(literal_type):
            self.raise_error(
                "Expected memref, vector or tensor type of integer, index, float, or complex type"
            )
        if DYNAMIC_INDEX in literal_type.get_shape():
            self.raise_error("Dense literal attribute should have a static shape.")
        return literal_type

    def parse_operation(self) -> Operation:
        # xDSL 0.74's `parse_operation` for its common case, one result and a
        # custom syntax (`%name = dialect.op ...`), the result and the name in one
        # match, a `PlainOp` built from the match of its operands; the other
        # cases and the errors are xDSL's.
        match = _SINGLE_RESULT_OP.match(self._text, self.pos)
        stack = self._parser_state.dialect_stack
        op_type = None if match is None else self.ctx.get_optional_op(match[2], dialect_stack=stack)
        if match is None and self._text.startswith("func.", self.pos):
            plain = self._parse_plain_func() or self._parse_plain_return()
            return plain or super().parse_operation()
        if match is None and self._text.startswith("builtin.module", self.pos):
            return self._parse_plain_module() or super().parse_operation()
        if match is None and self._text.startswith("llvm.func", self.pos):
            return self._parse_plain_llvm_func() or super().parse_operation()
        if match is None and self._text.startswith("scf.for", self.pos):
            return self._parse_plain_for() or super().parse_operation()
        if match is None and self._text.startswith("scf.if", self.pos):
            return self._parse_plain_if(self.pos + len("scf.if")) or super().parse_operation()
        if match is None and (generic := self._parse_plain_generic()) is not None:
            return generic
        if match is None or op_type is None:
            return super().parse_operation()
        start = self._current_token.span
        if (op := self._parse_plain_op(op_type, match)) is None:
            self._resume_from(match.end())
            stack.append(op_type.dialect_name())
            op = op_type.parse(self)
            stack.pop()
        # `loc(...)` after the op: its token is the current one, tested cheaply first.
        looks_located = self._text.startswith("loc", self.pos)
        if looks_located and (location := self.parse_optional_location()) is not None:
            op.location = location
        if len(op.results) != 1:
            self.raise_error(
                f"Operation has {len(op.results)} results, but was given 1 to bind.", start
            )
        result = Span(*match.span(1), self.lexer.input)
        self._register_ssa_definition(match[1][1:], op.results, result)
        return op

    def _parse_plain_op(self, op_type: type[Operation], head: re.Match[str]) -> Operation | None:
        """The `PlainOp` or `PlainArrowOp` `head` starts, in its plain form
        (None, nothing consumed, otherwise or for other ops)."""
        if issubclass(op_type, PlainOp):
            return self._parse_plain(op_type, op_type.PLAIN_OPERANDS, head)
        if issubclass(op_type, PlainArrowOp) and _builds_plainly(op_type):
            return self._parse_plain_arrow(op_type, head)
        if op_type.name == "arith.constant":  # (xDSL's arith loads when a module uses it)
            return self._parse_plain_constant(op_type, head)
        if op_type.name == "scf.if":
            return self._parse_plain_if(head.end())
        if op_type.name == "llvm.mlir.constant":
            return self._parse_plain_llvm_constant(op_type, head)
        if op_type.name == "llvm.getelementptr":
            return self._parse_plain_gep(op_type, head)
        if op_type.name == "llvm.call_intrinsic":
            return self._parse_plain_call_intrinsic(op_type, head)
        return None

    def _parse_plain_if(self, header: int) -> Operation | None:
        """The `scf.if` whose header goes on at `header` if it is plain
        (`_PLAIN_IF_HEADER`, of known types), as xDSL reads it: the header read
        in one match, the op built directly, its regions read by the region
        parser and given their implicit `scf.yield` (None, nothing consumed,
        otherwise)."""
        match = _PLAIN_IF_HEADER.match(self._text, header)
        op_type = self.ctx.get_optional_op("scf.if")
        yield_type = self.ctx.get_optional_op("scf.yield")
        if match is None or op_type is None or yield_type is None:
            return None
        types = self._known_types(match.span("results")) if match["results"] else []
        if None in types:
            return None
        condition = self._plain_operand(match.span("condition"), _ELEMENT_TYPES["i1"])
        self._resume_from(match.end())
        regions = [self._region_with_yield(op_type, yield_type)]
        regions.append(
            self._region_with_yield(op_type, yield_type)
            if self.parse_optional_keyword("else")
            else Region()
        )
        attributes = self.parse_optional_attr_dict()
        op = build_operation(op_type, [condition], cast(list[Attribute], types), {}, attributes)
        for region in regions:
            op.add_region(region)
        if (location := self.parse_optional_location()) is not None:
            op.location = location
        return op

    def _region_with_yield(self, op_type: type[Operation], yield_type: type[Operation]) -> Region:
        """The region at the current token (its op's dialect the default one),
        ending with an `scf.yield` if its last block has no terminator, as
        xDSL's `IfOp.parse_region_with_yield` reads it."""
        region = self._region_of(op_type, None)
        if (block := region.blocks.last) is None:
            region.add_block(block := Block())
        last = block.last_op
        if last is None or not last.has_trait(IsTerminator):
            block.add_op(build_operation(yield_type, [], [], {}, {}))
        return region

    def _parse_plain_generic(self) -> Operation | None:
        """The op at the current token in the plain generic syntax
        (`_PLAIN_GENERIC_OP`) of a known op and known types, as xDSL reads
        it (properties named in the attribute dictionary moved to the
        properties, as xDSL does for older texts) (None, nothing consumed,
        otherwise)."""
        match = _PLAIN_GENERIC_OP.match(self._text, self.pos)
        if match is None or (op_type := self.ctx.get_optional_op(match["name"])) is None:
            return None
        inputs = self._known_types(match.span("inputs"))
        outputs = self._results_of(match)
        names = list(_SSA_NAMES.finditer(self._text, *match.span("operands")))
        properties = self._plain_dictionary(match["properties"])
        attributes = self._plain_dictionary(match["attributes"])
        if None in inputs or None in outputs or properties is None or attributes is None:
            return None
        if len(names) != len(inputs) or len(outputs) != (match["result_name"] is not None):
            return None
        if issubclass(op_type, IRDLOperation):
            for name in op_type.get_irdl_definition().properties.keys() - properties.keys():
                if name in attributes:
                    properties[name] = attributes.pop(name)
        operands = [self._plain_operand(name.span(), cast(Attribute, t))
                    for name, t in zip(names, inputs, strict=True)]  # fmt: skip
        self._resume_from(match.end())
        op = build_operation(
            op_type, operands, cast(list[Attribute], outputs), properties, attributes
        )
        if self._text.startswith("loc", self.pos) and (location := self.parse_optional_location()):
            op.location = location
        if match["result_name"] is not None:
            result = Span(*match.span("result_name"), self.lexer.input)
            self._register_ssa_definition(match["result_name"][1:], op.results, result)
        return op

    def _known_types(self, span: tuple[int, int]) -> list[TypeAttribute | None]:
        """The types of the compact type texts in `span` of the text (None for
        each that `_known_type` does not know)."""
        return [self._known_type(t[0]) for t in _COMPACT_TYPE.finditer(self._text, *span)]

    def _results_of(self, match: re.Match[str]) -> list[TypeAttribute | None]:
        """The result types of a plain signature `match` read: its `result`
        group (one type) or its `results` group (a list in parentheses)."""
        if match["result"]:
            return [self._known_type(match["result"])]
        return self._known_types(match.span("results"))

    def _plain_dictionary(self, text: str | None) -> dict[str, Attribute] | None:
        """The entries of the plain dictionary `text` (none if absent; None if
        `_plain_attr_entries` cannot read it)."""
        return {} if text is None else _plain_attr_entries(text, self._attribute_texts)

    def _parse_plain_module(self) -> Operation | None:
        """The `builtin.module` at the current token if its header is plain
        (`_PLAIN_MODULE_HEADER`), as xDSL reads it: the header in one match,
        the body by the region parser, an empty body given its block (None,
        nothing consumed, otherwise)."""
        match = _PLAIN_MODULE_HEADER.match(self._text, self.pos)
        if match is None or (attributes := self._plain_dictionary(match["attributes"])) is None:
            return None
        name = match["name"]
        properties: dict[str, Attribute] = {}
        if name is not None:
            properties["sym_name"] = unverified_data(StringAttr, name)
        module = self._op_with_body(ModuleOp, match.end(), None, properties, attributes)
        if not module.regions[0].blocks:
            module.regions[0].add_block(Block())
        return module

    def _parse_plain_func(self) -> Operation | None:
        """The `func.func` at the current token if its header is plain
        (`_PLAIN_FUNC_HEADER`, of known types) and a body follows, or if it is
        a plain declaration (`_PLAIN_FUNC_DECLARATION`), as xDSL reads it:
        the header read in one match, the op built directly, its body read by
        the region parser (None, nothing consumed, otherwise)."""
        op_type = self.ctx.get_optional_op("func.func")
        if op_type is None:
            return None
        if (match := _PLAIN_FUNC_HEADER.match(self._text, self.pos)) is None:
            return self._parse_plain_func_declaration(op_type)
        arguments = self._known_arguments(match.span("arguments"))
        if (
            arguments is None
            or (header := self._func_header(match, [t for _, t in arguments])) is None
        ):
            return None
        entry = [Parser.Argument(name, t) for name, t in arguments]
        return self._op_with_body(op_type, match.end(), entry, *header)

    def _parse_plain_func_declaration(self, op_type: type[Operation]) -> Operation | None:
        """The plain `func.func` declaration at the current token (None,
        nothing consumed, otherwise)."""
        match = _PLAIN_FUNC_DECLARATION.match(self._text, self.pos)
        if match is None:
            return None
        inputs = self._known_types(match.span("inputs"))
        if (
            None in inputs
            or (header := self._func_header(match, cast(list[TypeAttribute], inputs))) is None
        ):
            return None
        self._resume_from(match.end())
        op = build_operation(op_type, [], [], *header)
        op.add_region(Region())
        return op

    def _func_header(
        self, match: re.Match[str], inputs: list[TypeAttribute]
    ) -> tuple[dict[str, Attribute], dict[str, Attribute]] | None:
        """The properties and attributes of the function of `inputs` whose plain
        header `match` read (None: a result type `_known_type` does not know,
        or a property name among the attributes, which xDSL rejects)."""
        outputs = self._results_of(match)
        attributes = self._plain_dictionary(match["attributes"])
        if None in outputs or attributes is None:
            return None
        if not _FUNC_PROPERTY_NAMES.isdisjoint(attributes):
            return None
        function_type = unverified_attribute(
            FunctionType, unverified_data(ArrayAttr, tuple(inputs)),
            unverified_data(ArrayAttr, tuple(outputs)),
        )  # fmt: skip
        properties = {"sym_name": unverified_data(StringAttr, match["name"]),
                      "function_type": function_type}  # fmt: skip
        if match["visibility"] is not None:
            properties["sym_visibility"] = unverified_data(StringAttr, match["visibility"])
        return properties, attributes

    def _parse_plain_llvm_func(self) -> Operation | None:
        """The `llvm.func` at the current token if its header is plain
        (`_PLAIN_LLVM_FUNC_HEADER`, of known types) and a body follows, as
        xDSL reads it: the header read in one match, the op built directly,
        its body read by the region parser (None, nothing consumed, otherwise)."""
        match = _PLAIN_LLVM_FUNC_HEADER.match(self._text, self.pos)
        op_type = self.ctx.get_optional_op("llvm.func")
        if match is None or op_type is None or self.attribute_aliases:
            return None  # (an alias could be named `!llvm.ptr`)
        arguments = list(_LLVM_ARGUMENT.finditer(self._text, *match.span("arguments")))
        types = [self._llvm_type(argument[2]) for argument in arguments]
        output = self._llvm_type(match["result"]) if match["result"] else _llvm_defaults().void
        attributes = [_unit_attributes(argument[3]) for argument in arguments]
        if None in types or output is None or None in attributes:
            return None
        properties = _llvm_func_properties(
            match["name"], cast(list[Attribute], types), output,
            cast(list[DictionaryAttr], attributes),
        )  # fmt: skip
        source = self.lexer.input
        entry = [Parser.Argument(Span(*argument.span(1), source), cast(Attribute, argument_type))
                 for argument, argument_type in zip(arguments, types, strict=True)]  # fmt: skip
        return self._op_with_body(op_type, match.end(), entry, properties, {})

    def _parse_plain_for(self) -> Operation | None:
        """The `scf.for` at the current token if its header is plain
        (`_PLAIN_FOR_HEADER`), as xDSL reads it: the header read in one match,
        the loop and its implicit `scf.yield` built directly, its body read by
        the region parser (None, nothing consumed, otherwise)."""
        match = _PLAIN_FOR_HEADER.match(self._text, self.pos)
        op_type = self.ctx.get_optional_op("scf.for")
        yield_type = self.ctx.get_optional_op("scf.yield")
        if match is None or op_type is None or yield_type is None:
            return None
        index = IndexType()
        bounds = [self._plain_operand(match.span(group), index)
                  for group in ("lower", "upper", "step")]  # fmt: skip
        variable = Parser.Argument(Span(*match.span("variable"), self.lexer.input), index)
        self._resume_from(match.end())
        body = self._region_of(op_type, [variable])
        op = build_operation(op_type, bounds, [], {}, self.parse_optional_attr_dict())
        op.add_region(body)
        _end_with_yield(op, yield_type)
        if (location := self.parse_optional_location()) is not None:
            op.location = location
        return op

    def _op_with_body(
        self,
        op_type: type[Operation],
        header_end: int,
        entry: list[Parser.Argument] | None,
        properties: dict[str, Attribute],
        attributes: dict[str, Attribute],
    ) -> Operation:
        """The op (a function, a module) of a plain header ending at
        `header_end`: its body read there (`_region_of`, its entry block's
        arguments `entry`, if any), the op built directly, and a location
        after it."""
        self._resume_from(header_end)
        region = self._region_of(op_type, entry)
        op = build_operation(op_type, [], [], properties, attributes)
        op.add_region(region)
        if (location := self.parse_optional_location()) is not None:
            op.location = location
        return op

    def _region_of(
        self, op_type: type[Operation], arguments: list[Parser.Argument] | None
    ) -> Region:
        """The region at the current token (its entry block's `arguments`, if
        given), read as an op's `parse` reads it: the op's dialect the default
        one (its body may say `return`, `yield`)."""
        stack = self._parser_state.dialect_stack
        stack.append(op_type.dialect_name())
        try:
            return self.parse_region(arguments)
        finally:
            stack.pop()

    def _llvm_type(self, text: str) -> Attribute | None:
        """The type of `text` in an `llvm.func` header: an opaque pointer or
        a compact type `_known_type` knows."""
        return self._pointer_type() if text == "!llvm.ptr" else self._known_type(text)

    def _parse_plain_return(self) -> Operation | None:
        """The `func.return` at the current token if its operands are plain
        (`parse_optional_plain_values`) and no location follows, as xDSL reads
        it (None, nothing consumed, otherwise)."""
        if not self._text.startswith("func.return ", self.pos):
            return None
        if (op_type := self.ctx.get_optional_op("func.return")) is None:
            return None
        start = self.pos
        self._resume_from(start + len("func.return"))
        if (operands := self.parse_optional_plain_values(followers=(",", "loc"))) is None:
            self._resume_from(start)
            return None
        return build_operation(op_type, operands, [], {}, {})

    def parse_optional_plain_values(
        self, followers: tuple[str, ...] = (",",)
    ) -> list[SSAValue] | None:
        """`%a, %b : T, U`, values and as many known types, resolved, in one
        match, when none of `followers` (`,`: more types) follows the types
        (None, nothing consumed, otherwise)."""
        match = _PLAIN_VALUES.match(self._text, self.pos)
        if match is None:
            return None
        after = _BLANK.match(self._text, match.end()).end()  # pyright: ignore[reportOptionalMemberAccess]
        operands = self._typed_operands(match.span(1), self._known_types(match.span(2)))
        if operands is None or self._text.startswith(followers, after):
            return None
        values = [self._plain_operand(*operand) for operand in operands]
        self._resume_from(match.end())
        return values

    def _typed_operands(
        self, names: tuple[int, int], types: list[TypeAttribute | None]
    ) -> list[tuple[tuple[int, int], Attribute]] | None:
        """Each operand name in the span `names` of the text (its span) with
        its type in `types`, if there is one known type per name (None
        otherwise); nothing is resolved yet (`_plain_operand`)."""
        spans = [name.span() for name in _SSA_NAMES.finditer(self._text, *names)]
        if len(spans) != len(types) or None in types:
            return None
        return list(zip(spans, cast(list[Attribute], types), strict=True))

    def _parse_plain_constant(
        self, op_type: type[Operation], head: re.Match[str]
    ) -> Operation | None:
        """The `arith.constant` `head` starts, if its value is in a plain form
        (`_PLAIN_ARITH_CONSTANT`; an integer the type holds as a signed number,
        a float it holds as a finite number) (None, nothing consumed,
        otherwise)."""
        match = _PLAIN_ARITH_CONSTANT.match(self._text, head.end())
        if (
            match is None
            or (value := _plain_number(match[1], match[2], match[3], match[4])) is None
        ):
            return None
        self._resume_from(match.end())
        return build_operation(op_type, [], [value.type], {"value": value}, {})

    def _parse_plain_llvm_constant(
        self, op_type: type[Operation], head: re.Match[str]
    ) -> Operation | None:
        """The `llvm.mlir.constant` `head` starts, if its value is in a plain
        form (`_PLAIN_LLVM_CONSTANT`: an integer, read as an i64, or a typed
        float) and its type a builtin scalar (None, nothing consumed, otherwise)."""
        match = _PLAIN_LLVM_CONSTANT.match(self._text, head.end())
        if match is None or (value := _plain_number(match[1], "i64", match[2], match[3])) is None:
            return None
        self._resume_from(match.end())
        return build_operation(op_type, [], [_ELEMENT_TYPES[match[4]]], {"value": value}, {})

    def _parse_plain_gep(self, op_type: type[Operation], head: re.Match[str]) -> Operation | None:
        """The `llvm.getelementptr` `head` starts, if plain (`_PLAIN_LLVM_GEP`:
        i32 constants, index operands of known types, one per type, a compact
        element type), as xDSL reads it (None, nothing consumed, otherwise)."""
        match = _PLAIN_LLVM_GEP.match(self._text, head.end())
        if match is None:
            return None
        index_types = self._known_types(match.span(4)) if match[4] else []
        element_type = self._known_type(match[5])
        indices = [text.strip() for text in match[3].split(",")]
        constants = [int(text) for text in indices if not text.startswith("%")]
        operands = self._typed_operands(match.span(3), index_types)
        if (
            element_type is None
            or operands is None
            or any(value not in _GEP_CONSTANT_RANGE for value in constants)
        ):
            return None
        raw = tuple(_GEP_OPERAND if text.startswith("%") else int(text) for text in indices)
        properties = {
            "rawConstantIndices": _i32_array(raw),
            "elem_type": element_type,
            "noWrapFlags": _NO_WRAP,
        }
        if match[1]:
            properties["inbounds"] = UnitAttr()
        pointer = self._pointer_type()
        values = [self._plain_operand(match.span(2), pointer)]
        values += [self._plain_operand(*operand) for operand in operands]
        self._resume_from(match.end())
        return build_operation(op_type, values, [pointer], properties, {})

    def _parse_plain_call_intrinsic(
        self, op_type: type[Operation], head: re.Match[str]
    ) -> Operation | None:
        """The `llvm.call_intrinsic` `head` starts, if plain
        (`_PLAIN_CALL_INTRINSIC`: as many operands as known types), as xDSL
        reads it (None, nothing consumed, otherwise)."""
        match = _PLAIN_CALL_INTRINSIC.match(self._text, head.end())
        if match is None:
            return None
        operands = self._typed_operands(match.span(2), self._known_types(match.span(3)))
        result = self._known_type(match[4])
        if result is None or operands is None:
            return None
        values = [self._plain_operand(*operand) for operand in operands]
        properties = {
            "intrin": unverified_data(StringAttr, match[1]),
            "operandSegmentSizes": _i32_array((len(values), 0)),
            "fastmathFlags": _llvm_defaults().no_fastmath,
            "op_bundle_sizes": _i32_array(()),
        }
        self._resume_from(match.end())
        return build_operation(op_type, values, [result], properties, {})

    def _parse_plain_arrow(self, op_type: type[Operation], head: re.Match[str]) -> Operation | None:
        """The `PlainArrowOp` `head` starts (`%name = dialect.op`), if `%x : T -> U`
        follows with types known (None, nothing consumed, otherwise)."""
        match = _OPERAND_ARROW.match(self._text, head.end())
        if match is None:
            return None
        operand_type, result_type = self._known_type(match[2]), self._known_type(match[3])
        if operand_type is None or result_type is None:
            return None
        operand = self._plain_operand(match.span(1), operand_type)
        self._resume_from(match.end())
        return build_operation(op_type, [operand], [result_type], {}, {})

    def _parse_plain(
        self, op_type: type[Operation], count: int, head: re.Match[str]
    ) -> Operation | None:
        """The `PlainOp` `head` starts (`%name = dialect.op`), if its `count`
        operands and its type follow in their plain form (None, nothing
        consumed, otherwise)."""
        match = _operands_colon(count).match(self._text, head.end())
        if match is None:
            return None
        t = self._type_at(match.end())
        names = [match.span(group) for group in range(1, count + 1)]
        return _create_plain(op_type, [self._plain_operand(name, t) for name in names], t)

    def _parse_optional_block_arg_list(self, block: Block) -> Block | None:
        # xDSL 0.74's, its plain form `(%a: T, %b: U)` of known types read in one
        # match (no locations); the other forms and the errors are xDSL's.
        match = _PLAIN_BLOCK_ARGUMENTS.match(self._text, self.pos)
        if match is None or (arguments := self._known_arguments(match.span())) is None:
            return super()._parse_optional_block_arg_list(block)
        self._resume_from(match.end())
        for name, argument_type in arguments:
            value = block.insert_arg(argument_type, len(block.args))
            self._register_ssa_definition(name.text[1:], (value,), name)
        return block

    def _known_arguments(self, span: tuple[int, int]) -> list[tuple[Span, TypeAttribute]] | None:
        """The names and types of the arguments `%a: T` in `span` of the
        text, a plain argument list (None: a type `_known_type` does not know)."""
        arguments = list(_BLOCK_ARGUMENT.finditer(self._text, *span))
        types = [self._known_type(argument[2]) for argument in arguments]
        if None in types:
            return None
        source = self.lexer.input
        return [(Span(*argument.span(1), source), cast(TypeAttribute, argument_type))
                for argument, argument_type in zip(arguments, types, strict=True)]  # fmt: skip

    def _parse_block_body(self, block: Block) -> None:
        # xDSL's loop over the ops of a block, a line like one read before built
        # from what that line read to.
        while (op := self._parse_next_op()) is not None:
            block.add_op(op)

    def _parse_next_op(self) -> Operation | None:
        """The op on the line of the current token (None at the end of the
        block): built from the form of a line read before if one matches
        (`_parse_line_alike`), otherwise read by xDSL's path, and the form of
        its line learnt."""
        if self._current_token.kind not in _OP_STARTS:  # (the `}` that ends the block)
            return None
        start = self.pos
        if (line := self._split_line(start)) is None:
            return self._parse_op_and_its_regions()[0]
        key = self._line_key(line)
        if (op := self._parse_line_alike(start, line, key)) is None:
            op, regions_read = self._parse_op_and_its_regions()
            if op is not None:
                self._learn_line_form(op, start, line, key, regions_read)
        return op

    def _parse_op_and_its_regions(self) -> tuple[Operation | None, _RegionsRead]:
        """The op at the current token, read by xDSL's path (None at the end
        of the block), and where the regions its `parse` read lie."""
        outer, self._regions_read = self._regions_read, _RegionsRead()
        try:
            return self.parse_optional_operation(), self._regions_read
        finally:
            self._regions_read = outer

    def parse_optional_region(
        self, arguments: Iterable[Parser.Argument] | None = None
    ) -> Region | None:
        # xDSL 0.74's, with two changes: where the region lies is kept for the
        # op being read (`_RegionsRead`), and the values the region defined
        # leave the scope when it ends, instead of the scope being copied when
        # it starts (a copy of every value defined so far, per region, made an
        # input of many small regions quadratic: 1 MB of `scf.if`s, 2.3 s).
        start, regions_read = self.pos, self._regions_read
        if self.parse_optional_punctuation("{") is None:
            return None
        values, defined_before = self.ssa_values, len(self.ssa_values)
        outer_blocks, outer_forward_blocks = self.blocks, self.forward_block_references
        self.blocks, self.forward_block_references = {}, defaultdict(list)
        region = Region()
        if arguments is not None:
            region.add_block(self._entry_block_of(arguments))
        elif self._current_token.kind not in (MLIRTokenKind.CARET_IDENT, MLIRTokenKind.R_BRACE):
            block = Block()
            self._parse_block_body(block)
            region.add_block(block)
        while self.parse_optional_punctuation("}") is None:
            region.add_block(self._parse_block())
        if self.forward_block_references:
            self._raise_missing_blocks()
        for _ in range(len(values) - defined_before):  # (names are only ever added)
            values.popitem()
        self.blocks, self.forward_block_references = outer_blocks, outer_forward_blocks
        regions_read.spans.append((start, self.pos))
        return region

    def _entry_block_of(self, arguments: Iterable[Parser.Argument]) -> Block:
        """The entry block of a region given its `arguments` (xDSL 0.74's): no
        label, the arguments defined, its ops read."""
        arguments = list(arguments)
        if self._current_token.kind == MLIRTokenKind.CARET_IDENT:
            self.raise_error("invalid block name in region with named arguments")
        block = Block(arg_types=[argument.type for argument in arguments])
        for block_argument, argument in zip(block.args, arguments, strict=True):
            self._register_ssa_definition(argument.name.text[1:], (block_argument,), argument.name)
            if argument.location is not None:
                block_argument.location = argument.location
        self._parse_block_body(block)
        return block

    def _raise_missing_blocks(self) -> NoReturn:
        """xDSL 0.74's error for a region that ends with blocks named and never defined."""
        pos = self.pos
        references = self.forward_block_references
        raise MultipleSpansParseError(
            Span(pos, pos + 1, self.lexer.input),
            "region ends with missing block declarations for block(s) {}".format(
                ", ".join(references.keys())
            ),
            "dangling block references:",
            [
                (span, f'reference to block "{span.text}" without implementation')
                for span in itertools.chain(*references.values())
            ],
        )

    def _parse_line_alike(
        self, start: int, line: _Line, key: tuple[object, ...]
    ) -> Operation | None:
        """The op on `line` if a line of its form (`key`, `_LineForm`) was read
        before and its names are defined with the types of that form (None,
        nothing consumed, otherwise)."""
        head, parts, end, dictionary, symbols, successors = line
        form = self._line_forms.get(key)
        if form is None and symbols:  # (the form of a line with these very symbols)
            form = self._line_forms.get((*key, *symbols))
        if form is None or (operands := self._values_of(parts[1::2], form)) is None:
            return None
        attributes = None
        if dictionary is not None:
            attributes = _plain_attr_entries(dictionary, self._attribute_texts)
            if attributes is None and self._learn_attribute_texts(dictionary, start, end):
                attributes = _plain_attr_entries(dictionary, self._attribute_texts)
            if attributes is None:
                return None
        if form.separators is None:
            blocks = [self._successor(name, span) for name, span in successors]
            op = form.build(operands, attributes, (), symbols, blocks)
            self._resume_from(end)
        elif (regions := self._parse_regions_alike(form.op_type, end - 1, form.separators)) is None:
            self._resume_from(start)
            return None
        else:
            op = form.build(operands, attributes, regions, symbols)
        op = self._located(op, start)
        if head is not None:
            self._register_results(head, op)
        return op

    def _parse_regions_alike(
        self, op_type: type[Operation], opening: int, separators: tuple[str, ...]
    ) -> list[Region] | None:
        """The regions of an `op_type` op, the first opened at `opening`,
        read as the op's `parse` reads them (its dialect the default one),
        when the texts between them are `separators` and no location follows
        the last (None otherwise, the regions read dropped)."""
        self._resume_from(opening)
        stack = self._parser_state.dialect_stack
        stack.append(op_type.dialect_name())
        regions = [self.parse_region()]
        for separator in separators:
            if not self._text.startswith(separator, self.pos):
                break
            self._resume_from(self.pos + len(separator))
            regions.append(self.parse_region())
        stack.pop()
        if len(regions) == len(separators) + 1 and not self._text.startswith("loc", self.pos):
            return regions
        for region in regions:
            region.drop_all_references()
        return None

    def _learn_attribute_texts(self, dictionary: str, start: int, end: int) -> bool:
        """Learn the dialect attributes of the plain attribute dictionary
        `dictionary` (of the line from `start` to `end`) not known yet, each
        read where it is (`_attribute_at`); whether there was one and each
        was read. The parser's position is left as it was."""
        at = self._text.find(dictionary, start, end)
        entries = _PLAIN_ATTR_ENTRY.finditer(self._text, at, at + len(dictionary))
        unknown = [e.span(5) for e in entries if e[5] and e[5] not in self._attribute_texts]
        try:
            for span in unknown:
                if (attribute := self._attribute_at(*span)) is None:
                    return False
                self._attribute_texts[self._text[slice(*span)]] = attribute
        finally:
            self._resume_from(start)
        return bool(unknown)

    def _attribute_at(self, start: int, end: int) -> Attribute | None:
        """The attribute whose text lies from `start` to `end`, read there
        (None: it does not read to one attribute of exactly that text, or its
        parser fails: the line is then read token by token, which reports it)."""
        self._resume_from(start)
        try:
            attribute = self.parse_optional_attribute()
        except Exception:  # noqa: BLE001 (whatever an attribute's parser raises)
            return None
        return attribute if attribute is not None and self._ends_at(end) else None

    def _register_results(self, head: re.Match[str], op: Operation) -> None:
        """Define the names of `head` (`%a = ` or `%a, %b = `) as the results of `op`."""
        if "," not in head[1]:  # (one name: most lines)
            result = Span(*head.span(1), self.lexer.input)
            self._register_ssa_definition(head[1][1:], op.results, result)
            return
        names = _SSA_NAMES.finditer(self._text, *head.span(1))
        for name, result in zip(names, op.results, strict=True):
            self._register_ssa_definition(
                name[0][1:], [result], Span(*name.span(), self.lexer.input)
            )

    def _learn_line_form(
        self,
        op: Operation,
        start: int,
        line: _Line,
        key: tuple[object, ...],
        regions_read: _RegionsRead,
    ) -> None:
        """Keep the form (`key`) of `line`, from `start`, that read to `op`, if the op
        fills the line (or the line opens its regions: `_region_separators`),
        has no explicit location, its operands are the values
        of the line's names in their order (then each name of the line is an
        operand: its results, if any, are named by its head), its successors
        those the line names; a form for lines of any symbol names if each
        went to one place (`_symbol_targets`), else for lines of these
        symbols."""
        if len(self._line_forms) >= MAX_LINE_FORMS:
            return
        _, parts, end, dictionary, symbols, successors = line
        if not self._are_successors(op, successors):
            return
        separators = None
        if op.regions:
            if (separators := self._region_separators(op, end, regions_read)) is None:
                return
        elif not self._ends_at(end):
            return
        if not _form_may_be_learnt(self._text[start:end]):
            return
        if dictionary is not None and not self._dictionary_is_attributes(op, dictionary):
            return
        named = [self.ssa_values.get(name[1:]) for name in parts[1::2]]
        if [values[0] if values else None for values in named] != list(op.operands):
            return  # (SSA values compare by identity)
        if (symbol_targets := _symbol_targets(op, symbols)) is None:
            key, symbol_targets = (*key, *symbols), ()  # (a form for these symbols only)
        self._line_forms[key] = _LineForm(
            type(op),
            tuple(operand.type for operand in op.operands),
            tuple(result.type for result in op.results),
            dict(op.properties),
            dict(op.attributes),
            separators,
            symbol_targets,
        )

    def _are_successors(self, op: Operation, successors: list[_Successor]) -> bool:
        """Whether `successors`, named on the line `op` was read from, are its
        successors, in their order (then `op` has no regions)."""
        if len(successors) != len(op.successors) or (successors and op.regions):
            return False
        named = zip(successors, op.successors, strict=True)
        return all(self.blocks.get(name, (None,))[0] is block for (name, _), block in named)

    def _successor(self, name: str, span: Span) -> Block:
        """The block `^name` a line names as a successor at `span` (declared
        forward if not defined yet), as xDSL's `parse_optional_successor` gives it."""
        if name not in self.blocks:
            self.forward_block_references[name].append(span)
            block = Block()
            if not Block.is_default_block_name(name):
                block.name_hint = name
            self.blocks[name] = (block, None)
        return self.blocks[name][0]

    def _dictionary_is_attributes(self, op: Operation, dictionary: str) -> bool:
        """Whether the plain attribute dictionary `dictionary` of the line `op`
        was read from is its attribute dictionary and nothing else, so that lines
        of its form with other dictionaries are `op` with other attributes: `prim`
        ops (whose syntaxes read `{...}` only as that) whose attributes are its
        entries. If so, the texts of its dialect attributes are learnt as the
        attributes they read to."""
        if op.dialect_name() != "prim":
            return False
        texts = {other: op.attributes.get(name) for name, _, _, _, other, _ in
                 _PLAIN_ATTR_ENTRY.findall(dictionary) if other}  # fmt: skip
        if None in texts.values():
            return False
        known = cast(dict[str, Attribute], texts)  # (every dialect attribute of the line)
        if op.attributes != _plain_attr_entries(dictionary, known):
            return False
        self._attribute_texts |= known
        return True

    def _region_separators(
        self, op: Operation, end: int, regions_read: _RegionsRead
    ) -> tuple[str, ...] | None:
        """The texts between the regions of `op`, just read (`regions_read`),
        if the line that ends at `end` ends with the `{` of its first, and
        `op` ends with its last (`_format_ends_with_region`) (None otherwise)."""
        spans = regions_read.spans
        if len(spans) != len(op.regions) or not _format_ends_with_region(type(op)):
            return None
        if spans[0][0] != end - 1 or spans[-1][1] != self.pos:
            return None
        return regions_read.separators(self._text)

    def _split_line(self, start: int) -> _Line | None:
        """The line from `start`: its `%name = ` head, the rest split into its
        texts and SSA names (alternating), and its end, a trailing comment left
        out (None: the last line of the input, without a newline)."""
        end = self._text.find("\n", start)
        if end < 0:
            return None
        comment = self._text.find("//", start, end)
        if comment >= 0 and '"' not in self._text[start:comment]:  # (not in a string)
            end = start + len(self._text[start:comment].rstrip())
        head = _LINE_HEAD.match(self._text, start, end)
        body = self._text[start if head is None else head.end() : end]
        prim_dictionary = "{" in body and body.startswith("prim.")
        dictionary = _PLAIN_ATTR_DICT.search(body) if prim_dictionary else None
        if dictionary is not None:
            body = body[: dictionary.start()] + _DICTIONARY_HOLE + body[dictionary.end() :]
        successors: list[_Successor] = []
        if "^" in body and dictionary is None:  # (then the body is the line's text)
            offset = end - len(body)
            successors = [
                (found[1], Span(found.start() + offset, found.end() + offset, self.lexer.input))
                for found in _SUCCESSOR.finditer(body)
            ]
            body = _SUCCESSOR.sub("^", body)
        symbols = _SYMBOL.findall(body) if "@" in body else []
        if symbols:
            body = _SYMBOL.sub("@", body)
        return head, _SSA_NAMES.split(body), end, dictionary and dictionary[0], symbols, successors

    def _line_key(self, line: _Line) -> tuple[object, ...]:
        """What identifies the form of a line: its texts between names (its
        attribute dictionary aside), how many values it names, whether it has
        an attribute dictionary, the dialects that name its op, and what
        follows the line (an op with optional parts, such as `func.return`
        and its operands, reads on into the next line when it can)."""
        head, parts, end, dictionary, *_ = line
        return (
            tuple(self._parser_state.dialect_stack),
            0 if head is None else head[1].count("%"),
            dictionary is not None,
            _FOLLOWER.match(self._text, end)[1],  # pyright: ignore[reportOptionalSubscript]
            *parts[::2],
        )

    def _values_of(self, names: list[str], form: _LineForm) -> list[SSAValue] | None:
        """The values `names` were defined as, if they have the operand types of
        `form` (None: one is not defined yet, or has another type)."""
        values: list[SSAValue] = []
        for name, operand_type in zip(names, form.operand_types, strict=True):
            if (value := self._defined(name[1:], 0, operand_type)) is None:
                return None
            values.append(value)
        return values

    def _located(self, op: Operation, start: int) -> Operation:
        """`op`, read from `start`, with the location this parser gives the ops
        it reads (none: the one in the text, or unknown)."""
        return op

    def _plain_operand(self, name: tuple[int, int], type: Attribute) -> SSAValue:
        """The operand whose name spans `name` in the text, used with `type`."""
        if (value := self._defined(self._text[name[0] + 1 : name[1]], 0, type)) is not None:
            return value
        return self.resolve_operand(UnresolvedOperand(Span(*name, self.lexer.input), 0), type)

    def _defined(self, name: str, index: int, type: Attribute) -> SSAValue | None:
        """Value `index` of `name` if defined before with `type` (the very
        object, or an equal one): what xDSL's lookup returns, without its
        checks, which pass."""
        values = self.ssa_values.get(name)
        if values is None or index >= len(values):
            return None
        value = values[index]
        return value if value.type is type or value.type == type else None

    def resolve_operand(
        self, operand: UnresolvedOperand, type: AttributeInvT
    ) -> SSAValue[AttributeInvT]:
        if (value := self._defined(operand.operand_name, operand.index, type)) is not None:
            return cast("SSAValue[AttributeInvT]", value)
        return self.resolve_other_operand(operand, type)

    def resolve_other_operand(
        self, operand: UnresolvedOperand, type: AttributeInvT
    ) -> SSAValue[AttributeInvT]:
        """`resolve_operand` for an operand not defined before (a forward
        reference) or of another type object: xDSL's."""
        return super().resolve_operand(operand, type)

    def parse_optional_plain_operands(
        self, count: int
    ) -> tuple[list[UnresolvedOperand], TypeAttribute] | None:
        """`count` operands, a colon and a type, `%a, %b : T`, in one match
        (None, nothing consumed, when the operands are not in that plain form:
        tuple indices, comments or line breaks between them, another count)."""
        match = _operands_colon(count).match(self._text, self.pos)
        if match is None:
            return None
        source = self.lexer.input
        operands = [UnresolvedOperand(Span(*match.span(g), source), 0) for g in range(1, count + 1)]
        return operands, self._type_at(match.end())

    def parse_optional_plain(self, pattern: re.Pattern[str]) -> re.Match[str] | None:
        """The match of `pattern` at the next token, consumed (None, nothing
        consumed, when it does not match): a plain piece of a syntax, such as
        `#cg.key<"x">`, read in one match instead of a parser call per token."""
        match = pattern.match(self._text, self.pos)
        if match is not None:
            self._resume_from(match.end())
        return match

    def parse_optional_plain_integers(self, pattern: re.Pattern[str]) -> list[list[int]] | None:
        """The integers of the text `pattern` matches at the next token, one
        list per group of `pattern` (the whole match's if it has none), that
        text consumed, when it matches and each integer fits in int64 (None,
        nothing consumed, otherwise: the caller then parses token by token, so
        errors are the token-by-token path's). For a syntax's plain pieces,
        such as `[1, 0]`: one match instead of a parser call per token."""
        match = pattern.match(self._text, self.pos)
        if match is None:
            return None
        texts = match.groups() or (match[0],)
        lists = [[int(digits) for digits in _INTEGER.findall(text)] for text in texts]
        if not all(I64_MIN <= value <= I64_MAX for values in lists for value in values):
            return None
        self._resume_from(match.end())
        return lists

    def parse_optional_plain_signature(
        self, count: int | None, parenthesized: bool
    ) -> tuple[list[Attribute], Attribute] | None:
        """`: (T1, ..., Tn) -> U` (not `parenthesized`: `: T1, ..., Tn -> U`) of
        `count` inputs (None: any number) in one match when every type is known
        (`_known_type`) (None, nothing consumed, otherwise)."""
        pattern = _PARENTHESIZED_SIGNATURE if parenthesized else _SIGNATURE
        match = pattern.match(self._text, self.pos)
        if match is None:
            return None
        texts = [t.group() for t in _COMPACT_TYPE.finditer(self._text, *match.span(1))]
        if count is not None and len(texts) != count:
            return None
        types = [self._known_type(text) for text in (*texts, match[2])]
        if None in types:
            return None
        self._resume_from(match.end())
        known = cast(list[Attribute], types)
        return known[:-1], known[-1]

    def parse_optional_plain_operands_before(self, keyword: str) -> list[UnresolvedOperand] | None:
        """`%a, %b, ..., keyword`, the operands and the keyword consumed in one
        match (None, nothing consumed, when not in that plain form)."""
        match = _operands_before(keyword).match(self._text, self.pos)
        if match is None:
            return None
        source = self.lexer.input
        names = _SSA_NAMES.finditer(self._text, match.start(1), match.end(1))
        operands = [UnresolvedOperand(Span(*name.span(), source), 0) for name in names]
        self._resume_from(match.end())
        return operands

    def _pointer_type(self) -> TypeAttribute:
        """`!llvm.ptr`, the object every pointer type read by this parser is."""
        return self._types.setdefault("!llvm.ptr", cast(TypeAttribute, _llvm_defaults().pointer))

    def _known_type(self, text: str) -> TypeAttribute | None:
        """The type of the compact type text `text`: parsed before, or an
        element type or a plain tensor type built now and kept (None: neither)."""
        if (known := self._types.get(text)) is not None:
            return known
        if (known := _ELEMENT_TYPES.get(text) or _plain_tensor_type(text)) is not None:
            self._types[text] = known
        return known

    def _type_at(self, pos: int) -> TypeAttribute:
        """The type at `pos`, consumed: the cached one, or parsed."""
        if (cached := self._cached_type(pos)) is not None:
            return cached
        self._resume_from(pos)
        return self.parse_type()


def file_line_col(file: StringAttr, line: IntAttr, column: IntAttr) -> FileLineColLoc:
    """`FileLineColLoc(file, line, column)` without verifying its parameters,
    which have the types it requires: the verification takes 90 % of the 7 µs
    it costs, paid for every op a parser locates."""
    return unverified_attribute(FileLineColLoc, file, line, column)


def op_text(op: Operation) -> str:
    """`str(op)`, printed by `FastPrinter` (on a 13,000-op gradient function,
    0.23-0.35 s instead of 0.46-0.55 s)."""
    output = io.StringIO()
    FastPrinter(stream=output).print_op(op)
    return output.getvalue()


@dataclass(eq=False, repr=False)
class FastPrinter(Printer):
    """xDSL's printer, printing each distinct type object once: its text is
    kept (with the object, so that its `id` stays its own) and reused."""

    _type_texts: dict[int, tuple[Attribute, str]] = field(
        default_factory=dict[int, tuple[Attribute, str]], init=False
    )

    def print_string(self, text: str, *, indent: int | None = None) -> None:
        # xDSL's, for text on one line: written as it is (its `print` call costs
        # more than the writing, for the ~10 strings of each op).
        if "\n" in text:
            return super().print_string(text, indent=indent)
        self._current_column += len(text)
        (sys.stdout if self.stream is None else self.stream).write(text)

    def print_attribute(self, attribute: Attribute) -> None:
        if not isinstance(attribute, TypeAttribute):
            return super().print_attribute(attribute)
        if (known := self._type_texts.get(id(attribute))) is None:
            text = self._text_of(attribute)
            if "\n" in text:  # indented where it is printed: not reusable
                return super().print_attribute(attribute)
            known = self._type_texts[id(attribute)] = (attribute, text)
        self.print_string(known[1])

    def _text_of(self, attribute: Attribute) -> str:
        """The text of `attribute` as this printer prints it (nothing printed)."""
        stream, column, self.stream = self.stream, self._current_column, io.StringIO()
        try:
            super().print_attribute(attribute)
            return self.stream.getvalue()
        finally:
            self.stream, self._current_column = stream, column
