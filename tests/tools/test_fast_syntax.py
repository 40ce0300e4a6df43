"""The fast paths of the tools through xDSL's lexer, parser, verifier and
printer (`tidu_mlir.fast_syntax`, `first_verify_error`; issue 16: 1 MB within
1 s): the same tokens, modules, errors and text as xDSL's own, and work that
grows with the distinct types and kinds of op of an input, not with its ops."""

from __future__ import annotations

import contextlib
import gc
import io
import random
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import SupportsIndex, cast

import pytest
from fuzz.corpus import lit_files  # pyright: ignore[reportMissingImports]
from fuzz.large_inputs import LOOP_NEST  # pyright: ignore[reportMissingImports]
from fuzz.mutators import mutate_text  # pyright: ignore[reportMissingImports]
from xdsl.context import Context
from xdsl.dialects import arith, cf, func
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, IntegerAttr, StringAttr, TensorType
from xdsl.ir import Operation
from xdsl.irdl import IRDLOperation, irdl_op_definition, region_def
from xdsl.parser import Parser
from xdsl.parser.attribute_parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Input
from xdsl.utils.mlir_lexer import MLIRLexer

from tidu_mlir import fast_syntax
from tidu_mlir.diagnostics import LocatingParser, check_string_literals, first_verify_error
from tidu_mlir.dialects import cg, prim
from tidu_mlir.fast_syntax import (
    FastLexer,
    FastParser,
    FastPrinter,
    HexadecimalFloats,
    PlainArrowOp,
    PlainOp,
    file_line_col,
    op_text,
)
from tidu_mlir.tools import opt

MUTANTS = 300
"""Mutations of the lit inputs compared with xDSL (a fixed seed: the same every run)."""

TRICKY_TOKENS = [
    '%12abc %a.b$c-d %-x %0#1 #map #-} {-# ^bb0 !t.x @sym @"quoted" _x',
    "0x1F 0xi32 0x 1.5e+ 1.5e-3 2. 7 -1 -> - ... { } ( ) [ ] < > = + / * ? | : ,",
    "é ½ x",
    "@ x",
    "$ x",
    ".. x",
    '"s\\n\\"" // comment\n  x // comment at the end',
    '"" "a b" "\u00e9\u00bd" "%x = 1" "tab\there" "{}" "v\vt"',
    '"two\nlines"',
]
"""Lines lexed on their own (an error ends a line's tokens): edge cases of
identifiers, numbers and punctuation, non-ASCII letters and digits, errors."""


@pytest.fixture(scope="module")
def inputs() -> list[str]:
    """The lit inputs and mutations of them whose strings are terminated (xDSL's
    lexer backtracks exponentially on the others, which tidu rejects first)."""
    texts = [path.read_text() for path in lit_files()]
    rng = random.Random(16)
    donors = [text.encode() for text in texts]
    texts += [
        mutate_text(rng, rng.choice(donors), donors).decode(errors="replace")
        for _ in range(MUTANTS)
    ]
    return [text for text in texts if _strings_terminated(text)]


def _strings_terminated(text: str) -> bool:
    try:
        check_string_literals(text, "in.mlir")
    except ParseError:
        return False
    return True


def _tokens(lexer: MLIRLexer) -> list[tuple[object, ...]]:
    """Kind and span of every token up to the end, or up to the lexer's error."""
    tokens: list[tuple[object, ...]] = []
    while True:
        try:
            token = lexer.lex()
        except ParseError as error:
            return [*tokens, ("error", error.msg, error.span.start, error.span.end)]
        tokens.append((token.kind, token.span.start, token.span.end))
        if token.kind == token.kind.EOF:
            return tokens


def test_fast_lexer_forms_the_tokens_of_xdsl(inputs: list[str]) -> None:
    for text in [*TRICKY_TOKENS, *inputs]:
        source = Input(text, "in.mlir")
        assert _tokens(FastLexer(source)) == _tokens(MLIRLexer(source)), text


def _outcome(parser: type[Parser], ctx: Context, text: str) -> tuple[object, ...]:
    """The module (generic text) or the error a parser ends with."""
    try:
        module = parser(ctx, text, "in.mlir").parse_module()
    except ParseError as error:
        return ("parse error", error.msg, error.span.start, error.span.end)
    except RecursionError:  # where the stack ends differs a little
        return ("nesting too deep",)
    except Exception as error:  # what xDSL's parser raises on some inputs
        return (type(error).__name__, str(error))
    output = io.StringIO()
    try:
        Printer(stream=output, print_generic_format=True).print_op(module)
    except NotImplementedError:  # xDSL prints no f80 or f128 attribute (tidu-opt rejects them)
        return ("module xDSL cannot print", output.getvalue())
    return ("module", output.getvalue())


def test_fast_parser_reads_what_xdsl_reads(ctx: Context, inputs: list[str]) -> None:
    """(Against xDSL's parser with MLIR's hexadecimal floats,
    `HexadecimalFloats`: the mutated inputs write `dense<0x7FF0000000000000>`.)"""
    for text in inputs:
        assert _outcome(FastParser, ctx, text) == _outcome(HexadecimalFloats, ctx, text), text


_DEFINING_LINE = re.compile(r"^(\s*)%[a-zA-Z0-9_$.-]+( = .*[^{(\[,])$", re.MULTILINE)


def _each_line_twice(text: str) -> str:
    """`text` with each line defining one value followed by a copy of it
    defining a new name: the copy is read from the form of the line before."""
    copies = iter(range(1 << 30))
    return _DEFINING_LINE.sub(lambda m: f"{m[0]}\n{m[1]}%alike{next(copies)}{m[2]}", text)


def test_lines_alike_read_as_xdsl_reads_them(ctx: Context) -> None:
    """Every op line of the lit inputs read a second time from its form
    (`_LineForm`): the module is the one xDSL's parser reads."""
    compared = 0
    for path in lit_files():
        text = _each_line_twice(path.read_text())
        outcome = _outcome(FastParser, ctx, text)
        assert outcome == _outcome(Parser, ctx, text), path
        compared += outcome[0] == "module"
    assert compared > 40


_PRIM_LINE_TYPES = re.compile(
    r"^(\s*%[\w$.-]+(?:, %[\w$.-]+)* = prim\.[a-z_]+ [^{}\n]*?)( : [^\n]*)$", re.MULTILINE
)


def _tagged(text: str) -> str:
    """`text` with each one-line prim op given an attribute dictionary and a
    comment of its own (before its types, at the end)."""
    tags = iter(range(1 << 30))
    return _PRIM_LINE_TYPES.sub(
        lambda m: f"{m[1]} {{tag = {(k := next(tags))} : i64}}{m[2]} // line {k}", text
    )


_REGION_OP_HEADER = re.compile(
    r"^( *)(%[\w$.-]+(?:, %[\w$.-]+)*)( = prim\.(?:scan|cond|while|record_while) .*\{)$"
)
"""The line of a prim op with regions that opens its first one."""


def _each_region_op_twice(text: str) -> str:
    """`text` with each prim op with regions whose header ends its line (and
    whose last region ends on a line `}` of the header's indentation)
    followed by a copy of it defining new names: the copy is read from the
    form of its header line (`_LineForm.separators`)."""
    lines = text.split("\n")
    copies_after: dict[int, list[str]] = {}
    for index, line in enumerate(lines):
        if (header := _REGION_OP_HEADER.match(line)) is None:
            continue
        end = next((j for j in range(index + 1, len(lines)) if lines[j] == f"{header[1]}}}"), None)
        if end is not None:
            names = re.sub(r"%([\w$.-]+)", rf"%\1_alike{index}", header[2])
            copy = [f"{header[1]}{names}{header[3]}", *lines[index + 1 : end + 1]]
            copies_after.setdefault(end, []).extend(copy)
    doubled = [[line, *copies_after.get(index, [])] for index, line in enumerate(lines)]
    return "\n".join(line for group in doubled for line in group)


def test_ops_with_regions_alike_read_as_xdsl_reads_them(ctx: Context) -> None:
    """Every prim op with regions of the lit inputs read a second time from
    the form of its header line: the module is the one xDSL's parser reads."""
    compared = 0
    for path in lit_files():
        text = path.read_text()
        if (variant := _each_region_op_twice(text)) == text:
            continue
        outcome = _outcome(FastParser, ctx, variant)
        assert outcome == _outcome(Parser, ctx, variant), path
        compared += outcome[0] == "module"
    assert compared >= 5


def test_mutants_with_lines_alike_read_as_xdsl_reads_them(ctx: Context, inputs: list[str]) -> None:
    """The lit inputs and their mutants, each op line (and op with regions)
    followed by a copy of it and each prim line given its own dictionary and
    comment: lines read from the forms of others, in contexts the mutations
    make up."""
    modules = 0
    for text in inputs:
        variant = _tagged(_each_line_twice(_each_region_op_twice(text)))
        outcome = _outcome(FastParser, ctx, variant)
        assert outcome == _outcome(Parser, ctx, variant), variant
        modules += outcome[0] == "module" and "{tag = " in variant
    assert modules > 100


def test_a_line_alike_is_not_parsed_by_its_op(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The op of a line like one read before (names aside) is built from what
    that line read to, without the op's `parse`: it runs twice for 1,000
    lines (the last one is followed by another token than the others)."""
    calls = _counting(monkeypatch, prim.TransposeOp, "parse", lambda parser: "parse")
    line = "prim.transpose %x, permutation = [1, 0] : tensor<2x3xf64> -> tensor<3x2xf64>"
    body = "".join(f"  %v{i} = {line}\n" for i in range(1000))
    FastParser(
        ctx, f"func.func @f(%x: tensor<2x3xf64>) {{\n{body}  func.return\n}}\n"
    ).parse_module()
    assert calls["parse"] == 2  # the first line, and the last: `func.return` follows it


def test_lines_differing_in_their_comments_are_alike(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trailing comment is not part of a line's form (names in it aside):
    1,000 lines commented each in its own way are read by two `parse` calls
    (the first line, and the last, followed by `func.return`), to the module
    xDSL reads."""
    line = "prim.transpose %x, permutation = [1, 0] : tensor<2x3xf64> -> tensor<3x2xf64>"
    body = "".join(f"  %v{i} = {line} // line {i}, not %x\n" for i in range(1000))
    text = f"func.func @f(%x: tensor<2x3xf64>) {{\n{body}  func.return\n}}\n"
    _assert_read_by_two_parses(ctx, monkeypatch, prim.TransposeOp, text)


def _assert_read_by_two_parses(
    ctx: Context, monkeypatch: pytest.MonkeyPatch, op_type: type[Operation], text: str
) -> None:
    """`text` reads to the module xDSL reads, its lines of `op_type` by two
    calls of its `parse`: the first line's, and the last's (`func.return`
    follows it, another token than after the others)."""
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)
    calls = _counting(monkeypatch, op_type, "parse", lambda parser: "parse")
    FastParser(ctx, text).parse_module()
    assert calls["parse"] == 2


def _assert_read_without(
    ctx: Context,
    monkeypatch: pytest.MonkeyPatch,
    owner: type,
    method: str,
    text: str,
    reference: type[Parser] = Parser,
) -> None:
    """`text` reads, without `owner.method` (xDSL's parser of its ops) ever
    running, to a module that verifies and is the one `reference` (xDSL's
    parser) reads."""
    calls = _counting(monkeypatch, owner, method, lambda *_: "call")
    module = FastParser(ctx, text).parse_module()
    assert calls["call"] == 0
    assert first_verify_error(module) is None
    assert _outcome(FastParser, ctx, text) == _outcome(reference, ctx, text)


def test_a_line_alike_followed_by_what_continues_its_op_reads_as_xdsl_reads_it(
    ctx: Context,
) -> None:
    """`func.return` with no operand ends at the end of its line before `}`,
    not before a line starting with a name, which xDSL reads as its operand
    (found by the differential fuzzer: the form of the first was applied to
    the second, accepting what xDSL rejects)."""
    first = "func.func @f(%x: tensor<f64>) {\n  func.return\n}\n"
    second = "func.func @g(%x: tensor<f64>) {\n  func.return\n  %y = prim.neg %x : tensor<f64>\n}\n"
    for text in (first + second, first + second.replace("%y = ", "")):
        assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


LINES_WITH_DICTIONARIES = {
    "other entries": ("%a = prim.neg %x {t = 1 : i64} : T", '%b = prim.neg %x {u = "s"} : T'),
    "a repeated name": (
        "%a = prim.neg %x {t = 1 : i64} : T",
        "%b = prim.neg %x {t = 1 : i64, t = 2 : i64} : T",
    ),
    "beyond i8": ("%a = prim.neg %x {t = 1 : i8} : T", "%b = prim.neg %x {t = 300 : i8} : T"),
    "a dictionary in a string": (
        '%a = prim.neg %x {t = 1 : i64, s = "{u = 1 : i64}"} : T',
        '%b = prim.neg %x {t = 2 : i64, s = "{u = 1 : i64}"} : T',
    ),
    "none, then one": ("%a = prim.neg %x : T", "%b = prim.neg %x {t = 1 : i64} : T"),
    "results named in one line": (
        "%a, %b, %c = prim.lu %m {t = 1 : i64} : tensor<3x3xf64>",
        "%d, %e, %f = prim.lu %m {t = 2 : i64} : tensor<3x3xf64>",
    ),
    "a result named twice": (
        "%a, %b, %c = prim.lu %m {t = 1 : i64} : tensor<3x3xf64>",
        "%d, %d, %f = prim.lu %m {t = 2 : i64} : tensor<3x3xf64>",
    ),
    "too few names": (
        "%a, %b, %c = prim.lu %m {t = 1 : i64} : tensor<3x3xf64>",
        "%d, %e = prim.lu %m {t = 2 : i64} : tensor<3x3xf64>",
    ),
    "an xDSL op": (
        "%a = arith.addf %s, %s {t = 1 : i64} : f64",
        "%b = arith.addf %s, %s {t = 2 : i64} : f64",
    ),
    "the same dialect attribute": (
        "%a = prim.neg %x {role = #cg.linearized<[active]>, t = 1 : i64} : T",
        "%b = prim.neg %x {role = #cg.linearized<[active]>, t = 2 : i64} : T",
    ),
    "another dialect attribute": (
        "%a = prim.neg %x {role = #cg.linearized<[active]>} : T",
        "%b = prim.neg %x {role = #cg.linearized<[fixed]>} : T",
    ),
    "a dialect attribute nested, with a string": (
        '%a = prim.neg %x {k = #cg.tangent<#cg.key<"x">, 1>} : T',
        '%b = prim.neg %x {k = #cg.tangent<#cg.key<"x">, 1>, t = 2 : i64} : T',
    ),
    "a dialect attribute read under another name": (
        "%a = prim.neg %x {role = #cg.linearized<[active]>} : T",
        "%b = prim.neg %x {other = #cg.linearized<[active]>} : T",
    ),
    "a dialect attribute made wrong": (
        "%a = prim.neg %x {role = #cg.linearized<[active]>} : T",
        "%b = prim.neg %x {role = #cg.linearized<[active}> : T",
    ),
    "a dialect attribute never seen, malformed": (
        '%a = prim.neg %x {k = #cg.key<"x">} : T',
        "%b = prim.neg %x {k = #cg.key<1>} : T",
    ),
    "a dialect attribute of an unknown dialect": (
        '%a = prim.neg %x {k = #cg.key<"x">} : T',
        "%b = prim.neg %x {k = #nope.key<1>} : T",
    ),
    "two dialect attributes never seen": (
        '%a = prim.neg %x {k = #cg.key<"x">} : T',
        '%b = prim.neg %x {k = #cg.key<"y">, r = #cg.linearized<[fixed]>} : T',
    ),
    "a dialect attribute of an xDSL op": (
        "%a = arith.addf %s, %s {role = #cg.linearized<[active, active]>} : f64",
        "%b = arith.addf %s, %s {role = #cg.linearized<[active, active]>} : f64",
    ),
}
"""Pairs of lines whose second may be read from the form of the first, its
attribute dictionary aside (`T` stands for `tensor<4xf64>`)."""


@pytest.mark.parametrize(
    "pair", LINES_WITH_DICTIONARIES.values(), ids=LINES_WITH_DICTIONARIES.keys()
)
def test_lines_with_their_own_dictionaries_read_as_xdsl_reads_them(
    ctx: Context, pair: tuple[str, str]
) -> None:
    body = "\n".join(f"  {line}".replace(": T", ": tensor<4xf64>") for line in pair)
    header = "func.func @f(%x: tensor<4xf64>, %m: tensor<3x3xf64>, %s: f64) {"
    text = f"{header}\n{body}\n  func.return\n}}\n"
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


def test_lines_differing_in_their_dictionaries_and_results_are_alike(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 lines of a three-result op, each with its own names and
    attribute dictionary, are read by two `parse` calls (the first line and
    the last), to the module xDSL reads."""
    body = "".join(
        f'  %l{i}, %u{i}, %p{i} = prim.lu %m {{tag = {i} : i64, s = "{i}"}} : tensor<3x3xf64>\n'
        for i in range(1000)
    )
    text = f"func.func @f(%m: tensor<3x3xf64>) {{\n{body}  func.return\n}}\n"
    _assert_read_by_two_parses(ctx, monkeypatch, prim.LuOp, text)


def test_lines_differing_in_the_tags_next_to_their_roles_are_alike(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dialect attribute in a line's dictionary (a role) is read once by its
    own parser, then known by its text: 1,000 lines each with its own tag
    next to a role are read by two `parse` calls and one role parse."""
    role = "#cg.linearized<[fixed, active]>"
    body = "".join(
        f"  %v{i} = prim.mul %x, %y {{role = {role}, tag = {i} : i64}} : tensor<3xf64>\n"
        for i in range(1000)
    )
    text = f"func.func @f(%x: tensor<3xf64>, %y: tensor<3xf64>) {{\n{body}  func.return\n}}\n"
    _assert_read_by_two_parses(ctx, monkeypatch, prim.MulOp, text)
    roles = _counting(monkeypatch, cg.LinearizedRoleAttr, "parse_parameters", lambda _: "role")
    FastParser(ctx, text).parse_module()
    assert roles["role"] == 1


def test_lines_each_with_a_dialect_attribute_of_its_own_are_alike(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 lines each with a key of its own in its dictionary: each key is
    read once where it is, the lines from the form of the first (two `parse`
    calls: the first line and the last)."""
    body = "".join(f'  %v{i} = prim.mul %x, %x {{key = #cg.key<"k{i}">}} : tensor<3xf64>\n'
                   for i in range(1000))  # fmt: skip
    text = f"func.func @f(%x: tensor<3xf64>) {{\n{body}  func.return\n}}\n"
    _assert_read_by_two_parses(ctx, monkeypatch, prim.MulOp, text)
    keys = _counting(monkeypatch, cg.KeyAttr, "parse_parameters", lambda _: "key")
    FastParser(ctx, text).parse_module()
    assert keys["key"] == 1000


LINES_WITH_SYMBOLS = {
    "another callee": (
        "%a = func.call @g(%x) : (T) -> T",
        "%b = func.call @h(%x) : (T) -> T",
    ),
    "a callee with dots": (
        "%a = func.call @g(%x) : (T) -> T",
        "%b = func.call @g.h$1(%x) : (T) -> T",
    ),
    "a nested reference": (
        "%a = func.call @g(%x) : (T) -> T",
        "%b = func.call @g::@h(%x) : (T) -> T",
    ),
    "a quoted symbol": (
        "%a = func.call @g(%x) : (T) -> T",
        '%b = func.call @"g h"(%x) : (T) -> T',
    ),
    "the callee in an attribute too": (
        "%a = func.call @g(%x) {other = @g} : (T) -> T",
        "%b = func.call @h(%x) {other = @h} : (T) -> T",
    ),
    "a symbol in a string": (
        '%a = func.call @g(%x) {s = "@g"} : (T) -> T',
        '%b = func.call @g(%x) {s = "@h"} : (T) -> T',
    ),
    "a symbol of a custom syntax": (
        "%a = func.call @g(%x) : (T) -> T",
        "func.func @k(%y: T) -> T {\n  func.return %y : T\n}",
    ),
}
"""Pairs of lines of a function (`T` stands for `tensor<4xf64>`, `@g` and
`@h` are defined) whose second may be read from the form of the first, its
symbol names aside."""


@pytest.mark.parametrize("pair", LINES_WITH_SYMBOLS.values(), ids=LINES_WITH_SYMBOLS.keys())
def test_lines_with_their_own_symbols_read_as_xdsl_reads_them(
    ctx: Context, pair: tuple[str, str]
) -> None:
    body = "\n".join(f"  {line}" for line in pair).replace("T", "tensor<4xf64>")
    callee = "func.func @{}(%x: T) -> T {{\n  func.return %x : T\n}}\n"
    callees = "".join(callee.format(name) for name in ("g", "h")).replace("T", "tensor<4xf64>")
    text = f"{callees}func.func @f(%x: tensor<4xf64>) {{\n{body}\n  func.return\n}}\n"
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


def test_lines_differing_in_their_symbols_are_alike(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 calls of distinct callees are read by two `parse` calls."""
    body = "".join(f"  %c{i} = func.call @g{i}(%x) : (tensor<3xf64>) -> tensor<3xf64>\n"
                   for i in range(1000))  # fmt: skip
    text = f"func.func @f(%x: tensor<3xf64>) {{\n{body}  func.return\n}}\n"
    _assert_read_by_two_parses(ctx, monkeypatch, func.CallOp, text)


def test_fragments_of_their_own_names_are_alike(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 `cg.graph`s, each of its own name: the first header line is
    read by the op's `parse`, the others from its form (their symbol names
    and regions aside)."""
    graph = (
        "  cg.graph @f{} {{\n"
        '    %x = cg.input #cg.key<"x"> : tensor<f64>\n'
        "    %p = prim.mul %x, %x : tensor<f64>\n"
        "    cg.output %p : tensor<f64>\n  }}\n"
    )
    text = "builtin.module {\n" + "".join(graph.format(i) for i in range(1000)) + "}\n"
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)
    calls = _counting(monkeypatch, cg.GraphOp, "parse", lambda parser: "parse")
    module = FastParser(ctx, text).parse_module()
    assert calls["parse"] == 1
    assert first_verify_error(module) is None


BRANCHES_ALIKE = {
    "forward and backward": ("cf.br ^bb2(%a : i64)", "cf.br ^bb1(%b : i64)"),
    "conditional": ("cf.cond_br %c, ^bb2(%a : i64), ^exit", "cf.cond_br %c, ^bb1(%b : i64), ^exit"),
    "to one block twice": (
        "cf.cond_br %c, ^bb2(%a : i64), ^bb2(%a : i64)",
        "cf.cond_br %c, ^bb1(%b : i64), ^bb1(%b : i64)",
    ),
    "to a block declared later": ("cf.br ^bb2(%a : i64)", "cf.br ^later(%b : i64)"),
    "to a block never defined": ("cf.br ^bb2(%a : i64)", "cf.br ^nowhere(%b : i64)"),
    "to a block of another argument type": ("cf.br ^bb2(%a : i64)", "cf.br ^bb1(%c : i1)"),
    "to a numbered block": ("cf.br ^bb2(%a : i64)", "cf.br ^7(%b : i64)"),
    "to the entry block": ("cf.br ^bb2(%a : i64)", "cf.br ^bb0(%b : i64)"),
    "a successor in a string": (
        'cf.br ^bb2(%a : i64) {s = "^bb2"}',
        'cf.br ^bb1(%b : i64) {s = "^bb1"}',
    ),
    "llvm": ("llvm.cond_br %c, ^bb2(%a : i64), ^exit", "llvm.cond_br %c, ^exit, ^bb1(%b : i64)"),
}
"""Pairs of branches, the second in the form of the first but for its
successors (and their operands), ending blocks `^bb1(%a: i64)` and
`^bb2(%b: i64)` of a function with an `^exit` and a `^later(%l: i64)` block."""


@pytest.mark.parametrize("pair", BRANCHES_ALIKE.values(), ids=BRANCHES_ALIKE.keys())
def test_branches_to_their_own_successors_read_as_xdsl_reads_them(
    ctx: Context, pair: tuple[str, str]
) -> None:
    first, second = pair
    text = (
        "func.func @f(%x: i64, %c: i1) {\n  cf.br ^bb1(%x : i64)\n"
        f"^bb1(%a: i64):\n  {first}\n^bb2(%b: i64):\n  {second}\n"
        "^later(%l: i64):\n  cf.br ^exit\n^exit:\n  func.return\n}\n"
    )
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


def _blocks_in_a_chain(count: int) -> str:
    """A function of `count` blocks, each branching to the next with its
    `i64` argument."""
    blocks = "".join(f"^bb{i}(%a{i}: i64):\n  cf.br ^bb{i + 1}(%a{i} : i64)\n"
                     for i in range(1, count + 1))  # fmt: skip
    return (
        f"func.func @f(%x: i64) {{\n  cf.br ^bb1(%x : i64)\n{blocks}"
        f"^bb{count + 1}(%z: i64):\n  func.return\n}}\n"
    )


def test_branches_to_their_own_successors_are_alike(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 blocks branching each to the next: the first branch is read by
    the op's `parse`, the others from its form; no type is parsed twice
    (`i64` block arguments included)."""
    text = _blocks_in_a_chain(1000)
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)
    calls = _counting(monkeypatch, cf.BranchOp, "parse", lambda parser: "parse")
    types = _counting(monkeypatch, AttrParser, "parse_optional_type", lambda parser: "type")
    module = FastParser(ctx, text).parse_module()
    assert calls["parse"] == 1
    assert types["type"] <= 2
    assert first_verify_error(module) is None


def test_a_parser_learns_a_bounded_number_of_forms(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fast_syntax, "MAX_LINE_FORMS", 2)
    calls = _counting(monkeypatch, prim.TransposeOp, "parse", lambda parser: "parse")
    forms = [f"prim.transpose %x, permutation = [{p}] : tensor<2x2x2xf64> -> tensor<2x2x2xf64>"
             for p in ("0, 1, 2", "1, 0, 2", "2, 1, 0")]  # fmt: skip
    body = "".join(f"  %v{i}_{k} = {form}\n" for k in range(2) for i, form in enumerate(forms))
    FastParser(
        ctx, f"func.func @f(%x: tensor<2x2x2xf64>) {{\n{body}  func.return\n}}\n"
    ).parse_module()
    assert calls["parse"] == 4  # the first two forms once each, the third twice


LINES_NOT_ALIKE = {
    "names in strings": ('%a = prim.neg %x {s = "%x"} : T', '%b = prim.neg %x {s = "%y"} : T'),
    "escapes in strings": (
        '%a = prim.neg %x {s = "\\22"} : T',
        '%b = prim.neg %x {s = "\\22"} : T',
    ),
    "a string holding //": ('%a = prim.neg %x {s = "//"} : T', '%b = prim.neg %x {s = "//"} : T'),
    "locations": ('%a = prim.neg %x : T loc("a":1:2)', '%b = prim.neg %x : T loc("a":1:2)'),
    "another operand type": ("%a = prim.neg %x : T", "%b = prim.neg %y : T"),
    "forward use": ("%a = prim.neg %x : T", "%b = prim.neg %c : T"),
}
"""Pairs of lines whose second must not be read from the form of the first
(`T` stands for `tensor<4xf64>`; `%y` is a `tensor<3xf64>`)."""


@pytest.mark.parametrize("pair", LINES_NOT_ALIKE.values(), ids=LINES_NOT_ALIKE.keys())
def test_lines_not_alike_read_as_xdsl_reads_them(ctx: Context, pair: tuple[str, str]) -> None:
    body = "\n".join(f"  {line}".replace(": T", ": tensor<4xf64>") for line in pair)
    text = f"func.func @f(%x: tensor<4xf64>, %y: tensor<3xf64>) {{\n{body}\n  func.return\n}}\n"
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)
    if pair[1].endswith(")"):  # the location of the text, given to each op
        module = FastParser(ctx, text).parse_module()
        ops = list(cast(func.FuncOp, module.body.block.first_op).body.block.ops)
        assert [str(op.location) for op in ops[:2]] == ['loc("a":1:2)'] * 2


@pytest.mark.parametrize(
    "op_type",
    [op for op in prim.PRIM_OPS if issubclass(op, PlainOp)],
    ids=lambda op: op.name,
)
def test_a_plain_op_is_built_as_its_parse_builds_it(ctx: Context, op_type: type[Operation]) -> None:
    """`FastParser` builds a `PlainOp` from its text itself: the op its `parse` reads."""
    assert issubclass(op_type, PlainOp)
    operands = ", ".join(f"%x{i}" for i in range(op_type.PLAIN_OPERANDS))
    arguments = ", ".join(f"%x{i}: tensor<3xf64>" for i in range(op_type.PLAIN_OPERANDS))
    text = (  # the first read after its head, the second from one match of its line
        f"func.func @f({arguments}) {{\n"
        f"  %r = {op_type.name} {operands} : tensor<3xf64>\n"
        f"  %s = {op_type.name} {operands} : tensor<3xf64>\n"
        "  func.return\n}\n"
    )
    built = _outcome(FastParser, ctx, text)
    assert built[0] == "module"
    assert built == _outcome(Parser, ctx, text)


@pytest.mark.parametrize(
    "op_type",
    [op for op in prim.PRIM_OPS if issubclass(op, PlainArrowOp)],
    ids=lambda op: op.name,
)
@pytest.mark.parametrize(
    "arrow",
    [
        ": tensor<3xf64> -> tensor<3xf32>",
        ": tensor<3xf64> -> tensor<5x7xf64>",
        ": (tensor<3xf64>) -> tensor<3xf32>",
    ],
)
def test_a_plain_arrow_op_is_built_as_its_parse_builds_it(
    ctx: Context, op_type: type[Operation], arrow: str
) -> None:
    """`FastParser` builds a `PlainArrowOp` (`%x : T -> U`) from its text itself
    when it knows both types (a type never seen too): the op its `parse`
    reads; other forms (a parenthesized type) are read by its `parse`."""
    text = (
        f"func.func @f(%x: tensor<3xf64>) {{\n  %r = {op_type.name} %x {arrow}\n  func.return\n}}\n"
    )
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


def test_fast_printer_prints_what_xdsl_prints(ctx: Context) -> None:
    for path in lit_files():
        try:
            module = Parser(ctx, path.read_text()).parse_module()
        except (ParseError, ValueError):
            continue  # an input of an error test
        texts = []
        for printer in (Printer, FastPrinter):
            output = io.StringIO()
            printer(stream=output).print_op(module)
            texts.append(output.getvalue())
        assert texts[0] == texts[1], path
        assert op_text(module) == str(module), path


def test_unverified_location_equals_the_verified_one() -> None:
    parameters = (StringAttr("in.mlir"), IntAttr(12), IntAttr(3))
    assert file_line_col(*parameters) == FileLineColLoc(*parameters)


class _CountingText(str):
    """A text that adds up the lengths its `count` calls scan."""

    scanned = 0

    def count(self, sub: str, start: SupportsIndex | None = None,
              end: SupportsIndex | None = None) -> int:  # fmt: skip
        first = 0 if start is None else int(start)
        _CountingText.scanned += (len(self) if end is None else int(end)) - first
        return super().count(sub, start, end)


@pytest.mark.parametrize("ops", [100, 1000])
def test_ops_with_regions_are_located_in_linear_time(ctx: Context, ops: int) -> None:
    """Each op's line is counted from the op located before it (an op with
    a region is located after its body, before it in the text): the text
    between them is scanned, not the text from the top. Lines as xDSL's
    `Span.get_location` gives them."""
    scan = (
        "  %s{k} = prim.scan length 2 init(%x) xs(%y) consts()"
        " : (tensor<3xf64>) (tensor<2x3xf64>) () -> (tensor<3xf64>) () {{\n"
        "  ^bb0(%c{k}: tensor<3xf64>, %e{k}: tensor<3xf64>):\n"
        "    %a{k} = prim.add %c{k}, %e{k} : tensor<3xf64>\n"
        "    prim.yield %a{k} : tensor<3xf64>\n  }}\n"
    )
    body = "".join(scan.format(k=k) for k in range(ops))
    text = f"func.func @f(%x: tensor<3xf64>, %y: tensor<2x3xf64>) {{\n{body}  func.return\n}}\n"
    _CountingText.scanned = 0
    module = LocatingParser(ctx, _CountingText(text), "in.mlir").parse_module()
    assert _CountingText.scanned < 5 * len(text)
    function = cast(func.FuncOp, module.body.block.first_op)
    for op in list(function.body.block.ops)[-3:]:
        location = cast(FileLineColLoc, op.location)
        assert location.line.data == text.count("\n", 0, _op_start(text, op)) + 1


_CONDS = """\
  %r{k} = prim.cond %p, (%x) {{tag = {k} : i64}} : tensor<i1>, (tensor<f64>) -> (tensor<f64>) {{
  ^bb0(%a{k}: tensor<f64>):
    %s{k} = prim.sin %a{k} : tensor<f64>
    prim.yield %s{k} : tensor<f64>
  }}{between}{{
  ^bb0(%b{k}: tensor<f64>):
    prim.yield %b{k} : tensor<f64>
  }}{after}
"""
"""`prim.cond`s, each with its own dictionary, its regions separated by
`between` (as printed: ` else `), `after` (nothing as printed) after them."""

OPS_WITH_REGIONS_ALIKE = {
    "as printed": (" else ", ""),
    "a comment before else": (" // then\n  else ", ""),
    "else on a line of its own": ("\n  else ", ""),
    "a line break after else": (" else\n  ", ""),
    "two blanks before the second region": (" else  ", ""),
    "a location after the last region": (" else ", ' loc("a":1:2)'),
    "no else": (" ", ""),
    "a keyword after the last region": (" else ", " else {\n  }"),
}
"""How the second and later `_CONDS` differ from the first (read as xDSL reads them)."""


def _conds(count: int, between: str, after: str) -> str:
    """`count` `_CONDS` in a function, the first as printed, the others with
    `between` and `after`."""
    ops = [_CONDS.format(k=k, between=" else " if k == 0 else between,
                         after="" if k == 0 else after) for k in range(count)]  # fmt: skip
    return f"func.func @f(%p: tensor<i1>, %x: tensor<f64>) {{\n{''.join(ops)}  func.return\n}}\n"


@pytest.mark.parametrize("edit", OPS_WITH_REGIONS_ALIKE.values(), ids=OPS_WITH_REGIONS_ALIKE.keys())
def test_ops_with_regions_of_forms_met_before_read_as_xdsl_reads_them(
    ctx: Context, edit: tuple[str, str]
) -> None:
    text = _conds(3, *edit)
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)
    if edit[1].startswith(" loc"):  # given to each op but the first
        module = FastParser(ctx, text).parse_module()
        ops = list(cast(func.FuncOp, module.body.block.first_op).body.block.ops)
        assert [str(op.location) for op in ops[1:3]] == ['loc("a":1:2)'] * 2


REGION_BODY_EDITS = {
    "an undefined value": ("prim.sin %a1", "prim.sin %nope"),
    "a value of the outer scope defined later": ("prim.sin %a1", "prim.sin %r2"),
    "an op named without its dialect": ("prim.yield %b1", "yield %b1"),
    "an op of another type": ("%s1 = prim.sin", "%s1 = prim.cos"),
    "a second block": ("prim.yield %b1 : tensor<f64>\n", "prim.yield %b1 : tensor<f64>\n  ^bb1:\n"),
    "a mismatch after a forward use": (
        "prim.sin %a1 : tensor<f64>\n    prim.yield %s1 : tensor<f64>\n  } else {",
        "prim.sin %r2 : tensor<f64>\n    prim.yield %s1 : tensor<f64>\n  } else\n  {",
    ),
}
"""Edits of the body of the second of three `_CONDS` (read from the form of the first)."""


@pytest.mark.parametrize("edit", REGION_BODY_EDITS.values(), ids=REGION_BODY_EDITS.keys())
def test_the_regions_of_an_op_alike_read_as_xdsl_reads_them(
    ctx: Context, edit: tuple[str, str]
) -> None:
    text = _conds(3, " else ", "").replace(*edit)
    assert text != _conds(3, " else ", "")
    outcome = _outcome(FastParser, ctx, text)
    assert outcome == _outcome(Parser, ctx, text)
    if outcome[0] == "module":  # no use left by regions read, then dropped
        module = FastParser(ctx, text).parse_module()
        users = [use.operation for op in module.walk() for r in op.results for use in r.uses]
        assert all(user.get_toplevel_object() is module for user in users)


def test_ops_with_regions_alike_are_not_parsed_by_their_op(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 `prim.cond`s with their own names and dictionaries: the op's
    `parse` (its assembly format) reads the first; the others are built from
    its form, their regions read by the region parser."""
    text = _conds(1000, " else ", "")
    calls = _counting(monkeypatch, prim.CondOp, "parse", lambda parser: "parse")
    module = FastParser(ctx, text).parse_module()
    assert calls["parse"] == 1
    ops = list(cast(func.FuncOp, module.body.block.first_op).body.block.ops)
    assert [op.attributes["tag"] for op in ops[998:1000]] == [
        IntegerAttr(998, 64),
        IntegerAttr(999, 64),
    ]
    assert first_verify_error(module) is None


def test_a_generic_op_with_regions_is_not_read_from_a_form(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The generic form of an op continues after its last region: its header
    line teaches no form."""
    module = FastParser(ctx, _conds(2, " else ", "")).parse_module()
    output = io.StringIO()
    Printer(stream=output, print_generic_format=True).print_op(module)
    text = output.getvalue()
    assert text.count('"prim.cond"') == 2
    calls = _counting(monkeypatch, FastParser, "_parse_regions_alike", lambda *_: "alike")
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)
    assert calls["alike"] == 0


@irdl_op_definition
class RegionThenDictionaryOp(IRDLOperation):
    """An op whose syntax goes on after its region."""

    name = "test_fast_syntax.region_then_dictionary"
    body = region_def()
    assembly_format = "$body attr-dict"


def test_an_op_whose_syntax_goes_on_after_its_last_region_is_not_read_from_a_form(
    ctx: Context,
) -> None:
    local = ctx.clone()
    local.load_op(RegionThenDictionaryOp)
    op = "  test_fast_syntax.region_then_dictionary {\n  }"
    text = f"func.func @f() {{\n{op}\n{op} {{tag = 1 : i64}}\n  func.return\n}}\n"
    outcome = _outcome(FastParser, local, text)
    assert outcome == _outcome(Parser, local, text)
    assert outcome[0] == "module"


def _op_start(text: str, op: Operation) -> int:
    """Where the op named by its first result (or `func.return`) starts."""
    if not op.results:
        return text.rindex("func.return")
    return text.index(f"%{op.results[0].name_hint} = ")


def test_the_collector_runs_again_after_parsing(ctx: Context) -> None:
    for text in ["builtin.module {}", "builtin.module {"]:
        with contextlib.suppress(ParseError):
            FastParser(ctx, text).parse_module()
        assert gc.isenabled()


def test_what_a_parse_builds_joins_the_oldest_generation(ctx: Context) -> None:
    """No young collection walks the module after parsing: it is in the
    oldest generation, and objects frozen before stay frozen."""
    module = FastParser(ctx, _chain(200)).parse_module()
    assert gc.get_count()[0] < 100
    assert any(obj is module for obj in gc.get_objects(generation=2))
    assert gc.get_freeze_count() == 0
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        FastParser(ctx, _chain(200)).parse_module()
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()


# --------------------------------------------------------------------------
# Work per input
# --------------------------------------------------------------------------

TYPES = ["tensor<4xf64>", "tensor<2x3xf32>", "tensor<3xcomplex<f64>>"]


def _chain(ops: int) -> str:
    """A function of `ops` elementwise ops on each of the `TYPES`."""
    arguments = ", ".join(f"%x{k}: {t}" for k, t in enumerate(TYPES))
    lines = [f"func.func @f({arguments}) {{"]
    for k, t in enumerate(TYPES):
        lines.append(f"  %v{k}_0 = prim.neg %x{k} : {t}")
        lines += [f"  %v{k}_{i} = prim.add %v{k}_{i - 1}, %x{k} : {t}" for i in range(1, ops)]
    return "\n".join([*lines, "  func.return", "}", ""])


def _counting(
    monkeypatch: pytest.MonkeyPatch, owner: type, name: str, key: Callable[..., str]
) -> Counter[str]:
    """Calls of `owner.name` from now on, counted by `key(*arguments)`."""
    calls: Counter[str] = Counter()
    original = getattr(owner, name)

    def counted(*args: object, **kwargs: object) -> object:
        calls[key(*args)] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


@pytest.mark.parametrize("ops", [10, 1000])
def test_each_distinct_type_is_parsed_once(
    ctx: Context, monkeypatch: pytest.MonkeyPatch, ops: int
) -> None:
    """Each of the TYPES is built once from its text (plain tensor types, not
    through xDSL's type parser), whatever the number of ops using it."""
    calls = _counting(monkeypatch, AttrParser, "parse_optional_type", lambda parser: "type")
    built = _counting(monkeypatch, fast_syntax, "_plain_tensor_type", lambda text: text)
    FastParser(ctx, _chain(ops)).parse_module()
    assert calls["type"] == 0
    assert built == Counter(TYPES)


def test_one_token_is_lexed_per_plain_op(ctx: Context, monkeypatch: pytest.MonkeyPatch) -> None:
    """An op in its plain syntax (`PlainOp`) is read from one match of its text
    and its cached type: the lexer forms only the token after it."""
    calls = _counting(monkeypatch, FastLexer, "lex", lambda lexer: "token")
    tokens: list[int] = []
    for ops in (10, 1000):
        calls.clear()
        FastParser(ctx, _chain(ops)).parse_module()
        tokens.append(calls["token"])
    assert tokens[1] - tokens[0] == (1000 - 10) * len(TYPES)


def test_dense_lists_of_numbers_are_read_without_xdsl_s_literal_parser(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`dense<[...]> : T` of decimal numbers nested as T's shape is read in one
    match: xDSL's dense-literal parser (token by token) never runs."""
    calls = _counting(
        monkeypatch, AttrParser, "parse_dense_int_or_fp_elements_attr", lambda *_: "dense"
    )
    lines = [
        f"  %c{i} = prim.constant dense<[[{i}.5, 1], [-2, 3.0e-2]]> : tensor<2x2xf64>"
        for i in range(50)
    ]
    text = "func.func @f() {\n" + "\n".join(lines) + "\n  func.return\n}\n"
    FastParser(ctx, text).parse_module()
    assert calls["dense"] == 0


def test_file_locations_are_read_without_xdsl_s_location_parser(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`loc("file":line:column)` after an op is read in one match: xDSL's
    location parser (token by token) never runs, and the file's attribute is
    built once."""
    calls = _counting(monkeypatch, AttrParser, "_parse_location", lambda *_: "location")
    lines = [f'  %v{i} = prim.neg %x : tensor<4xf64> loc("f.py":{i}:3)' for i in range(50)]
    text = "func.func @f(%x: tensor<4xf64>) {\n" + "\n".join(lines) + "\n  func.return\n}\n"
    module = FastParser(ctx, text).parse_module()
    assert calls["location"] == 0
    locations = [cast(FileLineColLoc, op.location) for op in module.walk() if op.name == "prim.neg"]
    assert [(loc.line.data, loc.column.data) for loc in locations] == [(i, 3) for i in range(50)]
    assert len({id(loc.filename) for loc in locations}) == 1


def test_plain_lines_are_built_without_the_generic_constructor(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ops read from a line form or a plain syntax are built directly (`_build`),
    not by `Operation.__init__`: a chain of 10 ops and one of 1,000 call it as
    often."""
    calls = _counting(monkeypatch, Operation, "__init__", lambda op, *_: "init")
    built: list[int] = []
    for ops in (10, 1000):
        calls.clear()
        FastParser(ctx, _chain(ops)).parse_module()
        built.append(calls["init"])
    assert built[0] == built[1]


LINE_ERRORS = {
    "undefined operand": ("%v0_5 = prim.add %v0_4, %x0", "%v0_5 = prim.add %v0_4, %nope"),
    "forward use": ("%v0_5 = prim.add %v0_4, %x0", "%v0_5 = prim.add %v0_4, %v0_7"),
    "defined twice": ("%v0_5 = prim.add %v0_4, %x0", "%v0_4 = prim.add %v0_4, %x0"),
    "operand of another type": ("%v0_5 = prim.add %v0_4, %x0", "%v0_5 = prim.add %v0_4, %x1"),
    "one operand too many": ("%v0_5 = prim.add %v0_4, %x0", "%v0_5 = prim.add %v0_4, %x0, %x0"),
    "unknown op": ("%v0_5 = prim.add %v0_4, %x0", "%v0_5 = prim.plus %v0_4, %x0"),
    "an op of no plain form": ("%v0_5 = prim.add %v0_4, %x0", "%v0_5 = func.call %v0_4, %x0"),
}
"""A line of `_chain(8)` (`prim.add` on `tensor<4xf64>`, of a form met
before) made wrong keeping or changing its form."""


@pytest.mark.parametrize("edit", LINE_ERRORS.values(), ids=LINE_ERRORS.keys())
def test_a_line_fails_as_xdsl_fails(ctx: Context, edit: tuple[str, str]) -> None:
    text = _chain(8).replace(f"  {edit[0]} :", f"  {edit[1]} :")
    assert text != _chain(8)
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


def test_an_undefined_operand_of_a_line_alike_is_reported_at_its_use(ctx: Context) -> None:
    text = _chain(8).replace("%v0_5 = prim.add %v0_4, %x0 :", "%v0_5 = prim.add %v0_4, %nope :")
    with pytest.raises(ParseError) as raised:
        LocatingParser(ctx, text, "in.mlir").parse_module()
    line = text[: text.index("%nope")].count("\n") + 1
    assert raised.value.msg == "use of undefined value %nope"
    assert str(raised.value.span.get_location()) == f"in.mlir:{line}:27"


@pytest.mark.parametrize("ops", [10, 1000])
def test_ops_alike_are_verified_once(
    ctx: Context, monkeypatch: pytest.MonkeyPatch, ops: int
) -> None:
    module = FastParser(ctx, _chain(ops)).parse_module()
    calls = _counting(monkeypatch, Operation, "verify", lambda op, *_: op.name)
    assert first_verify_error(module) is None
    assert calls == Counter(
        {"builtin.module": 1, "func.func": 1, "func.return": 1, "prim.neg": 3, "prim.add": 3}
    )


def test_an_op_unlike_those_verified_is_verified(ctx: Context) -> None:
    """A kind differs by its attributes as well: a bad role after good ops is found."""
    text = _chain(50).replace(
        "%v0_49 = prim.add %v0_48, %x0 :",
        "%v0_49 = prim.add %v0_48, %x0 {role = #cg.linearized<[active]>} :",
    )
    error = first_verify_error(FastParser(ctx, text).parse_module())
    assert error is not None
    assert error.message == "role mask has 1 entries but the op has 2 operands"


def test_the_text_of_a_function_prints_each_distinct_type_once(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`op_text` (the compilation cache's key, an exported function's text)."""
    module = FastParser(ctx, _chain(200)).parse_module()
    calls = _counting(monkeypatch, TensorType, "print_builtin", lambda t, printer: "tensor")
    op_text(module)
    assert calls["tensor"] == len(TYPES)


def test_tidu_opt_prints_each_distinct_type_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = _counting(monkeypatch, TensorType, "print_builtin", lambda t, printer: "tensor")
    (tmp_path / "in.mlir").write_text(_chain(200))
    assert opt.run([str(tmp_path / "in.mlir")]) == 0, capsys.readouterr().err
    assert calls["tensor"] == len(TYPES)


INTEGER_LISTS = {
    "plain": ("[1, 0]", "[0:2:1, 1:3:1]"),
    "blanks and a line break": ("[ 1 ,\n 0 ]", "[ 0 : 2 : 1 ,\n 1:3:1 ]"),
    "negative": ("[-1, 0]", "[-2:2:1, 1:3:1]"),
    "leading zeros": ("[01, 00]", "[00:02:01, 1:3:1]"),
    "out of int64": ("[9223372036854775808, 0]", "[0:9223372036854775808:1, 1:3:1]"),
    "hexadecimal": ("[0x1, 0]", "[0x0:2:1, 1:3:1]"),
    "a comment": ("[1, // c\n 0]", "[0:2:1, // c\n 1:3:1]"),
    "a minus apart": ("[- 1, 0]", "[- 2:2:1, 1:3:1]"),
    "a float": ("[1.0, 0]", "[0.0:2:1, 1:3:1]"),
    "a letter after a digit": ("[1a, 0]", "[0:2a:1, 1:3:1]"),
    "one entry missing": ("[1, ]", "[0:2, 1:3:1]"),
}
"""A permutation and a slice list of `prim.transpose` / `prim.slice` lines:
plain (read by `FastParser.parse_optional_plain_integers` in one match) or
not (read token by token), valid or not."""


@pytest.mark.parametrize("lists", INTEGER_LISTS.values(), ids=INTEGER_LISTS.keys())
def test_integer_lists_read_as_xdsl_reads_them(ctx: Context, lists: tuple[str, str]) -> None:
    permutation, slices = lists
    text = (
        "func.func @f(%x: tensor<3x4xf64>) {\n"
        f"  %t = prim.transpose %x, permutation = {permutation}"
        " : tensor<3x4xf64> -> tensor<4x3xf64>\n"
        f"  %s = prim.slice %x {slices} : tensor<3x4xf64> -> tensor<2x2xf64>\n"
        "  func.return\n}\n"
    )
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


def test_plain_integer_lists_are_read_in_one_match(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 slice lines, no two alike, parse no integer and no punctuation
    token by token (the slices and `: T -> U` are read in one match each)."""
    calls = _counting(monkeypatch, Parser, "parse_integer", lambda parser, *_, **__: "integer")
    punctuation = _counting(monkeypatch, FastParser, "parse_punctuation", lambda *_, **__: "calls")
    body = "".join(
        f"  %v{i} = prim.slice %x [{i}:{i + 3}:1] : tensor<2000xf64> -> tensor<3xf64>\n"
        for i in range(1000)
    )
    FastParser(
        ctx, f"func.func @f(%x: tensor<2000xf64>) {{\n{body}  func.return\n}}\n"
    ).parse_module()
    assert calls["integer"] == 0
    assert punctuation["calls"] < 10  # the function's header and end


ARROWS = {
    "plain": ": tensor<3x4xf64> -> tensor<4x3xf64>",
    "no blanks": ":tensor<3x4xf64>->tensor<4x3xf64>",
    "a line break": ": tensor<3x4xf64>\n    -> tensor<4x3xf64>",
    "parenthesized": ": (tensor<3x4xf64>) -> tensor<4x3xf64>",
    "a wrong result type": ": tensor<3x4xf64> -> tensor<3x4xf64>",
    "a comment": ": tensor<3x4xf64> // c\n -> tensor<4x3xf64>",
    "an unknown type": ": tensor<3x4xf64> -> tensor<4x3xf65>",
}
"""`: T -> U` of a `prim.transpose` line, after a line that parsed both types."""


@pytest.mark.parametrize("arrow", ARROWS.values(), ids=ARROWS.keys())
def test_arrows_read_as_xdsl_reads_them(ctx: Context, arrow: str) -> None:
    line = "prim.transpose %x, permutation = [1, 0] "
    text = (
        "func.func @f(%x: tensor<3x4xf64>) {\n"
        f"  %a = {line}: tensor<3x4xf64> -> tensor<4x3xf64>\n"
        f"  %b = {line}{arrow}\n"
        "  func.return\n}\n"
    )
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


SPLATS = {
    "float": "dense<1.25> : tensor<2x3xf64>",
    "negative float": "dense<-1.25e-3> : tensor<f64>",
    "negative zero": "dense<-0.0> : tensor<f64>",
    "an integer as a float": "dense<3> : tensor<4xf64>",
    "float32": "dense<0.1> : tensor<3xf32>",
    "beyond float32": "dense<4.0e38> : tensor<3xf32>",
    "beyond float64": "dense<1.0e400> : tensor<f64>",
    "many digits": f"dense<{'9' * 500}> : tensor<f64>",
    "integer": "dense<-7> : tensor<2xi64>",
    "beyond i8": "dense<200> : tensor<2xi8>",
    "boolean type": "dense<1> : tensor<2xi1>",
    "a float for an integer type": "dense<1.5> : tensor<2xi32>",
    "index": "dense<3> : tensor<2xindex>",
    "float16": "dense<1.5> : tensor<2xf16>",
    "complex": "dense<1.5> : tensor<2xcomplex<f64>>",
    "a large splat": f"dense<1.5> : tensor<{fast_syntax.MAX_PLAIN_DENSE + 1}xf64>",
    "hexadecimal (an integer type: the number)": "dense<0x10> : tensor<2xi64>",
    "blanks": "dense< 2.5 >:tensor<f64>",
    "a line break": "dense<2.5> :\n tensor<f64>",
    "a type never seen": "dense<2.5> : tensor<7x7xf64>",
    "a dynamic type": "dense<2.5> : tensor<?xf64>",
    "a vector": "dense<2.5> : vector<2xf64>",
    "a list": "dense<[2.5]> : tensor<1xf64>",
    "no type": "dense<2.5>",
    "a list of three": "dense<[1.0, -2.5e-3, 3]> : tensor<3xf64>",
    "nested lists": "dense<[[1, 2, 3], [4, 5, -6]]> : tensor<2x3xi64>",
    "nested lists, blanks": "dense< [ [1.5,2] ,[3 , 4.25] ] >:tensor<2x2xf32>",
    "three levels": "dense<[[[1.0], [2.0]]]> : tensor<1x2x1xf64>",
    "an empty list": "dense<[]> : tensor<0xf64>",
    "empty inner lists": "dense<[[], []]> : tensor<2x0xf64>",
    "too few values": "dense<[1.0, 2.0]> : tensor<3xf64>",
    "too many values": "dense<[1.0, 2.0, 3.0, 4.0]> : tensor<3xf64>",
    "one value in a list for three": "dense<[1.5]> : tensor<3xf64>",
    "a list for a scalar": "dense<[1.5]> : tensor<f64>",
    "nested deeper than the type": "dense<[[1.0, 2.0, 3.0]]> : tensor<3xf64>",
    "ragged lists": "dense<[[1, 2], [3]]> : tensor<2x2xi64>",
    "a trailing comma": "dense<[1.0, 2.0,]> : tensor<2xf64>",
    "an exponent without a point": "dense<[1.0, 4e2]> : tensor<2xf64>",
    "a plus sign": "dense<[+1.0, 2.0]> : tensor<2xf64>",
    "a list beyond i8": "dense<[1, 300]> : tensor<2xi8>",
    "a list beyond float32": "dense<[1.0, 4.0e38]> : tensor<2xf32>",
    "a float in an integer list": "dense<[1, 2.5]> : tensor<2xi32>",
    "a boolean list": "dense<[1, 0]> : tensor<2xi1>",
    "a list of booleans": "dense<[true, false]> : tensor<2xi1>",
    "a list of complex pairs": "dense<[(1.0, 2.0)]> : tensor<1xcomplex<f64>>",
    "a list on two lines": "dense<[1.0,\n 2.0]> : tensor<2xf64>",
}
"""Values of a `prim.constant` line: dense literals read in one match
(`FastParser._plain_dense`) or not (token by token), valid or not. (Hexadecimal
integers of float tensors are read as MLIR reads them, not as xDSL does:
`HEXADECIMAL_DENSES`.)"""


@pytest.mark.parametrize("splat", SPLATS.values(), ids=SPLATS.keys())
def test_dense_literals_read_as_xdsl_reads_them(ctx: Context, splat: str) -> None:
    text = f"func.func @f() {{\n  %c = prim.constant {splat}\n  func.return\n}}\n"
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


LOCATIONS = {
    "file, line, column": 'loc("f.py":12:3)',
    "blanks": 'loc( "f.py" : 12 : 3 )',
    "an escaped quote": 'loc("a\\"b.py":1:2)',
    "an escaped byte": 'loc("a\\62.py":1:2)',
    "leading zeros": 'loc("f.py":012:003)',
    "many digits": f'loc("f.py":{"9" * 19}:1)',
    "hexadecimal": 'loc("f.py":0x10:3)',
    "negative": 'loc("f.py":-1:3)',
    "no column": 'loc("f.py":1)',
    "a line break": 'loc("f.py":1:\n3)',
    "unknown": "loc(unknown)",
    "a name": 'loc("name")',
    "a name and a file": 'loc("name"("f.py":1:2))',
    "fused": 'loc(fused["f.py":1:2, "g.py":3:4])',
    "no parenthesis": 'loc "f.py":1:2',
}
"""Locations after ops: `loc("file":line:column)` read in one match
(`FastParser.parse_optional_location`) or not (token by token), valid or not."""


def _outcome_and_locations(parser: type[Parser], ctx: Context, text: str) -> tuple[object, ...]:
    """`_outcome`, and the locations of the ops if the text parses (the generic
    printer leaves them out)."""
    outcome = _outcome(parser, ctx, text)
    if outcome[0] != "module":
        return outcome
    module = parser(ctx, text, "in.mlir").parse_module()
    return (*outcome, [op.location for op in module.walk()])


@pytest.mark.parametrize("location", LOCATIONS.values(), ids=LOCATIONS.keys())
def test_locations_read_as_xdsl_reads_them(ctx: Context, location: str) -> None:
    text = (
        "func.func @f(%x: tensor<4xf64>) -> tensor<4xf64> {\n"
        f"  %y = prim.neg %x : tensor<4xf64> {location}\n"
        f"  %z = prim.neg %y : tensor<4xf64> {location}\n"
        f"  func.return %z : tensor<4xf64> {location}\n"
        f"}} {location}\n"
    )
    expected = _outcome_and_locations(Parser, ctx, text)
    assert _outcome_and_locations(FastParser, ctx, text) == expected


SIGNATURES = {
    "gather": "prim.gather %x, %i, axis = 0 : tensor<4xf64>, tensor<2xi64> -> tensor<2xf64>",
    "gather, blanks": "prim.gather %x ,%i,axis=0:tensor<4xf64>,tensor<2xi64>->tensor<2xf64>",
    "gather, a type never seen": (
        "prim.gather %x, %i, axis = 0 : tensor<4xf64>, tensor<7x2xi64> -> tensor<7x2xf64>"
    ),
    "gather, a wrong operand type": (
        "prim.gather %x, %i, axis = 0 : tensor<5xf64>, tensor<2xi64> -> tensor<2xf64>"
    ),
    "gather, a type alias": "prim.gather %x, %i, axis = 0 : !t, tensor<2xi64> -> tensor<2xf64>",
    "gather, three types": (
        "prim.gather %x, %i, axis = 0 : tensor<4xf64>, tensor<2xi64>, tensor<2xi64>"
        " -> tensor<2xf64>"
    ),
    "gather, a line break": (
        "prim.gather %x, %i, axis = 0 : tensor<4xf64>,\n tensor<2xi64> -> tensor<2xf64>"
    ),
    "gather, a tuple operand": (
        "prim.gather %x#0, %i, axis = 0 : tensor<4xf64>, tensor<2xi64> -> tensor<2xf64>"
    ),
    "gather, no comma": "prim.gather %x %i, axis = 0 : tensor<4xf64>, tensor<2xi64> -> tensor<2xf64>",
    "gather, an attribute dictionary": (
        "prim.gather %x, %i, axis = 0 {tag} : tensor<4xf64>, tensor<2xi64> -> tensor<2xf64>"
    ),
    "concatenate": (
        "prim.concatenate %x, %x, %x, dimension = 0"
        " : (tensor<4xf64>, tensor<4xf64>, tensor<4xf64>) -> tensor<12xf64>"
    ),
    "concatenate, one type too few": (
        "prim.concatenate %x, %x, %x, dimension = 0 : (tensor<4xf64>, tensor<4xf64>) -> tensor<12xf64>"
    ),
    "concatenate, no parentheses": (
        "prim.concatenate %x, %x, dimension = 0 : tensor<4xf64>, tensor<4xf64> -> tensor<8xf64>"
    ),
    "concatenate, a keyword as a name": (
        "prim.concatenate %dimension, %x, dimension = 0"
        " : (tensor<4xf64>, tensor<4xf64>) -> tensor<8xf64>"
    ),
    "concatenate, a longer keyword": (
        "prim.concatenate %x, %x, dimensions = 0 : (tensor<4xf64>, tensor<4xf64>) -> tensor<8xf64>"
    ),
    "dot_general": (
        "prim.dot_general %x, %x, batch = [] x [], contract = [0] x [0]"
        " : (tensor<4xf64>, tensor<4xf64>) -> tensor<f64>"
    ),
    "dot_general, no blanks": (
        "prim.dot_general %x,%x,batch=[]x[],contract=[0]x[0]:(tensor<4xf64>,tensor<4xf64>)->tensor<f64>"
    ),
    "dot_general, lists of unequal lengths": (
        "prim.dot_general %x, %x, batch = [0] x [], contract = [0] x [0]"
        " : (tensor<4xf64>, tensor<4xf64>) -> tensor<f64>"
    ),
    "dot_general, an entry beyond int64": (
        "prim.dot_general %x, %x, batch = [] x [], contract = [0] x [99999999999999999999]"
        " : (tensor<4xf64>, tensor<4xf64>) -> tensor<f64>"
    ),
    "dot_general, the keywords swapped": (
        "prim.dot_general %x, %x, contract = [0] x [0], batch = [] x []"
        " : (tensor<4xf64>, tensor<4xf64>) -> tensor<f64>"
    ),
    "dot_general, y for x": (
        "prim.dot_general %x, %x, batch = [] y [], contract = [0] x [0]"
        " : (tensor<4xf64>, tensor<4xf64>) -> tensor<f64>"
    ),
}
"""Ops with a type signature and operands before a keyword, read in one match
(`parse_optional_plain_signature`, `parse_optional_plain_operands_before`) or
token by token, valid or not (`%x`: tensor<4xf64>, `%i`: tensor<2xi64>)."""


@pytest.mark.parametrize("line", SIGNATURES.values(), ids=SIGNATURES.keys())
def test_signatures_read_as_xdsl_reads_them(ctx: Context, line: str) -> None:
    text = (
        "func.func @f(%x: tensor<4xf64>, %i: tensor<2xi64>, %dimension: tensor<4xf64>) {\n"
        f"  %r = {line}\n  func.return\n}}\n"
    )
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


def _types_and_punctuation_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[Counter[str], Counter[str]]:
    """Calls of xDSL's type parser and of the punctuation parser, from now on."""
    types = _counting(monkeypatch, AttrParser, "parse_optional_type", lambda *_: "calls")
    punctuation = _counting(monkeypatch, FastParser, "parse_punctuation", lambda *_, **__: "calls")
    return types, punctuation


def test_signatures_of_new_shapes_are_read_in_one_match(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 gathers and 1,000 concatenations, each to a shape of its own (not
    verified here): no type parsed by xDSL, one punctuation token per line
    (the `=`)."""
    types, punctuation = _types_and_punctuation_counted(monkeypatch)
    body = "".join(
        f"  %g{i} = prim.gather %x, %i, axis = 0 : tensor<4xf64>, tensor<1xi64>"
        f" -> tensor<{i + 1}xf64>\n"
        f"  %c{i} = prim.concatenate %x, %x, dimension = 0"
        f" : (tensor<4xf64>, tensor<4xf64>) -> tensor<{i + 8}xf64>\n"
        for i in range(1000)
    )
    text = f"func.func @f(%x: tensor<4xf64>, %i: tensor<1xi64>) {{\n{body}  func.return\n}}\n"
    FastParser(ctx, text).parse_module()
    assert types["calls"] == 0
    assert punctuation["calls"] < 2000 + 10, punctuation


ASSIGNMENTS = {
    "iota": "prim.iota dimension = 1 : tensor<2x3xi32>",
    "iota, no blanks": "prim.iota dimension=1: tensor<2x3xi32>",
    "iota, leading zeros": "prim.iota dimension = 007 : tensor<2x3xi32>",
    "iota, hexadecimal": "prim.iota dimension = 0x1 : tensor<2x3xi32>",
    "iota, negative": "prim.iota dimension = -1 : tensor<2x3xi32>",
    "iota, beyond int64": "prim.iota dimension = 99999999999999999999 : tensor<2x3xi32>",
    "iota, a float": "prim.iota dimension = 1.5 : tensor<2x3xi32>",
    "iota, a line break": "prim.iota dimension =\n 1 : tensor<2x3xi32>",
    "iota, a longer keyword": "prim.iota dimensions = 1 : tensor<2x3xi32>",
    "gather, axis": "prim.gather %x, %i, axis = 0 : tensor<4xf64>, tensor<2xi64> -> tensor<2xf64>",
    "gather, an axis too large": (
        "prim.gather %x, %i, axis = 9223372036854775808"
        " : tensor<4xf64>, tensor<2xi64> -> tensor<2xf64>"
    ),
    "cumsum, axis": "prim.cumsum %x, axis = 0 : tensor<4xf64>",
    "cumsum, an axis and a flag": "prim.cumsum %x, axis = 0, reverse : tensor<4xf64>",
}
"""Ops with an integer after `=`, read in one match (`parse_int64_assignment`)
or token by token, valid or not (`%x`: tensor<4xf64>, `%i`: tensor<2xi64>)."""


@pytest.mark.parametrize("line", ASSIGNMENTS.values(), ids=ASSIGNMENTS.keys())
def test_assignments_read_as_xdsl_reads_them(ctx: Context, line: str) -> None:
    test_signatures_read_as_xdsl_reads_them(ctx, line)


BLOCK_ARGUMENTS = {
    "plain": "(%c: tensor<3xf64>, %e: tensor<3xf64>)",
    "no blanks": "(%c:tensor<3xf64>,%e:tensor<3xf64>)",
    "none": "()",
    "a type never seen": "(%c: tensor<3xf64>, %e: tensor<7x7xf64>)",
    "a scalar type": "(%c: tensor<3xf64>, %e: f64)",
    "a location": "(%c: tensor<3xf64> loc(unknown), %e: tensor<3xf64>)",
    "a name twice": "(%c: tensor<3xf64>, %c: tensor<3xf64>)",
    "a name defined outside": "(%x: tensor<3xf64>, %e: tensor<3xf64>)",
    "a line break": "(%c: tensor<3xf64>,\n  %e: tensor<3xf64>)",
    "no colon": "(%c tensor<3xf64>, %e: tensor<3xf64>)",
    "a trailing comma": "(%c: tensor<3xf64>, %e: tensor<3xf64>,)",
    "a result number": "(%c#0: tensor<3xf64>, %e: tensor<3xf64>)",
}
"""Argument lists of a block (a scan's body), read in one match
(`FastParser._parse_optional_block_arg_list`) or token by token, valid or not."""


@pytest.mark.parametrize("arguments", BLOCK_ARGUMENTS.values(), ids=BLOCK_ARGUMENTS.keys())
def test_block_arguments_read_as_xdsl_reads_them(ctx: Context, arguments: str) -> None:
    text = (
        "func.func @f(%x: tensor<3xf64>, %y: tensor<2x3xf64>) {\n"
        "  %s = prim.scan length 2 init(%x) xs(%y) consts()"
        " : (tensor<3xf64>) (tensor<2x3xf64>) () -> (tensor<3xf64>) () {\n"
        f"  ^bb0{arguments}:\n"
        "    %a = prim.add %c, %c : tensor<3xf64>\n"
        "    prim.yield %a : tensor<3xf64>\n  }\n  func.return\n}\n"
    )
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


def test_plain_block_arguments_are_read_in_one_match(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """100 scans, each body with its arguments on one line: no call to xDSL's
    argument-list parser."""
    calls = _counting(monkeypatch, Parser, "_parse_optional_block_arg_list", lambda *_: "calls")
    scan = (
        "  %s{k} = prim.scan length 2 init(%x) xs(%y) consts()"
        " : (tensor<3xf64>) (tensor<2x3xf64>) () -> (tensor<3xf64>) () {{\n"
        "  ^bb0(%c{k}: tensor<3xf64>, %e{k}: tensor<3xf64>):\n"
        "    prim.yield %c{k} : tensor<3xf64>\n  }}\n"
    )
    body = "".join(scan.format(k=k) for k in range(100))
    text = f"func.func @f(%x: tensor<3xf64>, %y: tensor<2x3xf64>) {{\n{body}  func.return\n}}\n"
    FastParser(ctx, text).parse_module()
    assert calls["calls"] == 0


FUNCTION_HEADERS = {
    "no arguments, no results": "func.func @f() {",
    "a result": "func.func @f(%x: T) -> T {",
    "no results in parentheses": "func.func @f(%x: T) -> () {",
    "one result in parentheses": "func.func @f(%x: T) -> (T) {",
    "two results": "func.func @f(%x: T, %y: U) -> (T, U) {",
    "no blanks": "func.func @f(%x:T,%y:U)->(T,U){",
    "a name with dots and dollars": "func.func @f.g$1(%x: T) {",
    "a quoted name": 'func.func @"f g"(%x: T) {',
    "a scalar argument": "func.func @f(%x: f64) -> f64 {",
    "the same name twice": "func.func @f(%x: T, %x: T) {",
    "private": "func.func private @f(%x: T) {",
    "public, two blanks": "func.func public  @f(%x: T) -> T {",
    "nested": "func.func nested @f() {",
    "another visibility": "func.func hidden @f() {",
    "attributes": "func.func @f(%x: T) attributes {a = 1 : i64} {",
    "attributes, private, a result": 'func.func private @f(%x: T) -> T attributes {s = "t"} {',
    "attributes naming a property": 'func.func @f(%x: T) attributes {sym_name = "g"} {',
    "attributes naming one twice": "func.func @f(%x: T) attributes {a = 1 : i64, a = 2 : i64} {",
    "attributes with a dialect attribute": "func.func @f() attributes {r = #cg.linearized<[fixed]>} {",
    "empty attributes": "func.func @f(%x: T) attributes {} {",
    "attributes without a blank": "func.func @f(%x: T) attributes{a = 1 : i64}{",
    "argument attributes": "func.func @f(%x: T {a = 1 : i64}) {",
    "an argument location": 'func.func @f(%x: T loc("a":1:2)) {',
    "a line break": "func.func @f(%x: T,\n %y: U) {",
    "a comment": "func.func @f(%x: T) // c\n {",
    "a declaration": "func.func @f(%x: T)\n  func.func @g() {",
    "a nested type": "func.func @f(%x: tensor<2xcomplex<f64>>) {",
    "a missing type": "func.func @f(%x) {",
}
"""Headers of a function (`T`, `U` stand for tensor types) whose body returns."""


@pytest.mark.parametrize("header", FUNCTION_HEADERS.values(), ids=FUNCTION_HEADERS.keys())
@pytest.mark.parametrize("after", ["", ' loc("b":3:4)', "\nfunc.func @h() {\n  func.return\n}"])
def test_function_headers_read_as_xdsl_reads_them(ctx: Context, header: str, after: str) -> None:
    header = header.replace("T", "tensor<4xf64>").replace("U", "tensor<2x3xf32>")
    text = f"builtin.module {{\n  {header}\n    func.return\n  }}{after}\n}}\n"
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


DECLARATIONS = {
    "no arguments": "func.func private @g()",
    "types": "func.func private @g(T, U) -> T",
    "results in parentheses": "func.func private @g(T) -> (T, U)",
    "no results in parentheses": "func.func @g(T) -> ()",
    "no blanks": "func.func private @g(T,U)->(T,U)",
    "public": "func.func public @g(T) -> T",
    "attributes": "func.func private @g(T) -> T attributes {a = 1 : i64}",
    "attributes naming a property": 'func.func private @g(T) attributes {sym_name = "h"}',
    "named arguments": "func.func private @g(%a: T, %b: U) -> T",
    "argument attributes": "func.func private @g(T {a = 1 : i64}) -> T",
    "a comment after": "func.func private @g(T) -> T // c",
    "a location after": 'func.func private @g(T) -> T loc("a":1:2)',
    "a trailing comma": "func.func private @g(T,) -> T",
    "a missing parenthesis": "func.func private @g(T -> T",
    "a nested type": "func.func private @g(tensor<2xcomplex<f64>>) -> T",
    "an unknown type": "func.func private @g(!t) -> T",
}
"""Declarations of a function (no body; `T`, `U` stand for tensor types)."""


@pytest.mark.parametrize("declaration", DECLARATIONS.values(), ids=DECLARATIONS.keys())
def test_function_declarations_read_as_xdsl_reads_them(ctx: Context, declaration: str) -> None:
    declaration = declaration.replace("T", "tensor<4xf64>").replace("U", "tensor<2x3xf32>")
    text = f"builtin.module {{\n  {declaration}\n  func.func @f() {{\n    func.return\n  }}\n}}\n"
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


def test_plain_function_declarations_are_read_in_one_match(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 plain declarations of distinct types: none goes through xDSL's
    function parser."""
    text = "".join(
        f"func.func private @g{i}(tensor<{i + 1}xf64>, f64) -> tensor<{i + 1}xf64>\n"
        for i in range(1000)
    )
    _assert_read_without(ctx, monkeypatch, func.FuncOp, "parse", text)


GENERIC_OPS = {
    "an attribute": '%y = "prim.neg"(%x) {tag = 3 : i64} : (T) -> T',
    "no dictionary": '%y = "prim.neg"(%x) : (T) -> T',
    "an array property": '%y = "prim.transpose"(%m) <{permutation = array<i64: 1, 0>}> : (M) -> N',
    "three array properties": (
        '%y = "prim.slice"(%x) <{start = array<i64: 1>, limit = array<i64: 3>, '
        "stride = array<i64: 1>}> : (T) -> tensor<2xf64>"
    ),
    "a property and an attribute": (
        '%y = "prim.transpose"(%m) <{permutation = array<i64: 1, 0>}> {tag = 1 : i64} : (M) -> N'
    ),
    "a property in the attributes": (
        '%y = "prim.transpose"(%m) {permutation = array<i64: 1, 0>} : (M) -> N'
    ),
    "a property in both": (
        '%y = "prim.transpose"(%m) <{permutation = array<i64: 1, 0>}>'
        " {permutation = array<i64: 0, 1>} : (M) -> N"
    ),
    "an empty array": '%y = "prim.transpose"(%s) <{permutation = array<i64>}> : (S) -> S',
    "an array beyond i64": (
        '%y = "prim.transpose"(%m) <{permutation = array<i64: 9999999999999999999, 0>}> : (M) -> N'
    ),
    "two operands": '%y = "prim.add"(%x, %x) : (T, T) -> T',
    "no blanks": '%y="prim.add"(%x,%x){tag=3:i64}:(T,T)->T',
    "blanks inside": '%y = "prim.add"( %x , %x ) : ( T , T ) -> T',
    "a result in parentheses": '%y = "prim.neg"(%x) : (T) -> (T)',
    "a location": '%y = "prim.neg"(%x) : (T) -> T loc("a.py":1:2)',
    "two results for one name": '%y = "prim.neg"(%x) : (T) -> (T, T)',
    "no result for a name": '%y = "prim.neg"(%x) : (T) -> ()',
    "a result without a name": '"prim.neg"(%x) : (T) -> T',
    "one operand too few": '%y = "prim.add"(%x) : (T, T) -> T',
    "an operand of another type": '%y = "prim.neg"(%x) : (U) -> U',
    "an undefined operand": '%y = "prim.neg"(%nope) : (T) -> T',
    "an unknown op": '%y = "prim.nope"(%x) : (T) -> T',
    "an op of another dialect": '%y = "arith.addf"(%f, %f) <{fastmath = #arith.fastmath<none>}> : (f64, f64) -> f64',
    "a repeated attribute": '%y = "prim.neg"(%x) {tag = 1 : i64, tag = 2 : i64} : (T) -> T',
    "a wrong property type": '%y = "prim.transpose"(%m) <{permutation = 3 : i64}> : (M) -> N',
    "a tuple operand": '%y = "prim.neg"(%x#0) : (T) -> T',
    "a region": '%y = "prim.neg"(%x) ({}) : (T) -> T',
    "a comment after": '%y = "prim.neg"(%x) : (T) -> T // c',
    "a line break": '%y = "prim.neg"(%x) :\n (T) -> T',
}
"""Lines in the generic syntax (`T`, `U`, `M`, `N`, `S` stand for tensor
types of the arguments `%x`, `%u`, `%m`, the transpose of `%m`, and `%s`)."""


@pytest.mark.parametrize("line", GENERIC_OPS.values(), ids=GENERIC_OPS.keys())
def test_generic_ops_read_as_xdsl_reads_them(ctx: Context, line: str) -> None:
    types = {"T": "tensor<4xf64>", "U": "tensor<2x3xf32>", "M": "tensor<2x3xf64>",
             "N": "tensor<3x2xf64>", "S": "tensor<f64>"}  # fmt: skip
    for letter, text in types.items():
        line = re.sub(rf"\b{letter}\b", text, line)
    text = (
        "func.func @f(%x: tensor<4xf64>, %u: tensor<2x3xf32>, %m: tensor<2x3xf64>,"
        " %s: tensor<f64>, %f: f64) {\n"
        f"  {line}\n"
        f'  %z = "prim.neg"(%x) : (tensor<4xf64>) -> tensor<4xf64>\n'
        '  "func.return"() : () -> ()\n}\n'
    )
    assert _outcome_and_locations(FastParser, ctx, text) == _outcome_and_locations(
        Parser, ctx, text
    )


def test_plain_generic_ops_are_read_in_one_match(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 ops in the generic syntax, each of other properties (slices at
    distinct offsets, as `--print-op-generic` prints them): none goes through
    xDSL's generic-op parser."""
    lines = [
        f'  %v{i} = "prim.slice"(%x) <{{start = array<i64: {i}>, limit = array<i64: {i + 3}>, '
        f"stride = array<i64: 1>}}> : (tensor<2000xf64>) -> tensor<3xf64>"
        for i in range(1000)
    ]
    text = "func.func @f(%x: tensor<2000xf64>) {\n" + "\n".join(lines) + "\n  func.return\n}\n"
    _assert_read_without(ctx, monkeypatch, Parser, "_parse_generic_operation", text)


REGION_SCOPES = {
    "a value of a region used after it": (
        "%r = scf.if %c -> (f64) {\n  %a = arith.addf %x, %x : f64\n  scf.yield %a : f64\n"
        "} else {\n  scf.yield %x : f64\n}\n%b = arith.addf %a, %a : f64"
    ),
    "one name in both branches": (
        "%r = scf.if %c -> (f64) {\n  %a = arith.addf %x, %x : f64\n  scf.yield %a : f64\n"
        "} else {\n  %a = arith.mulf %x, %x : f64\n  scf.yield %a : f64\n}"
    ),
    "an outer name defined again inside": (
        "%a = arith.addf %x, %x : f64\n%r = scf.if %c -> (f64) {\n"
        "  %a = arith.mulf %x, %x : f64\n  scf.yield %a : f64\n"
        "} else {\n  scf.yield %x : f64\n}"
    ),
    "an outer value used inside": (
        "%a = arith.addf %x, %x : f64\n%r = scf.if %c -> (f64) {\n  scf.yield %a : f64\n"
        "} else {\n  scf.yield %x : f64\n}"
    ),
    "a later outer value used inside": (
        "%r = scf.if %c -> (f64) {\n  scf.yield %a : f64\n} else {\n  scf.yield %x : f64\n}\n"
        "%a = arith.addf %x, %x : f64"
    ),
    "nested regions, one name at each depth": (
        "%r = scf.if %c -> (f64) {\n  %a = arith.addf %x, %x : f64\n"
        "  %s = scf.if %c -> (f64) {\n    %b = arith.addf %a, %a : f64\n    scf.yield %b : f64\n"
        "  } else {\n    %b = arith.mulf %a, %a : f64\n    scf.yield %b : f64\n  }\n"
        "  scf.yield %s : f64\n} else {\n  scf.yield %x : f64\n}\n%z = arith.addf %r, %r : f64"
    ),
    "a block named in a region and missing": ('"test.op"() ({\n  cf.br ^bb1\n}) : () -> ()'),
}
"""Bodies of a function of `%c: i1, %x: f64`: values a region defines are
visible in it only, outer ones in it too."""


@pytest.mark.parametrize("body", REGION_SCOPES.values(), ids=REGION_SCOPES.keys())
def test_region_scopes_as_xdsl_keeps_them(ctx: Context, body: str) -> None:
    body = "\n".join(f"  {line}" for line in body.splitlines())
    text = f"func.func @f(%c: i1, %x: f64) {{\n{body}\n  func.return\n}}\n"
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


def test_regions_do_not_copy_the_scope(ctx: Context, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each region drops the names it defined when it ends: xDSL's region
    parser, which copies every name defined so far for each region (1,000
    small regions after 1,000 values: quadratic), never runs."""
    calls = _counting(monkeypatch, Parser, "parse_optional_region", lambda *_: "xdsl")
    values = "".join(f"  %v{i} = arith.addf %x, %x : f64\n" for i in range(1000))
    regions = "".join(
        f"  %r{i} = scf.if %c -> (f64) {{\n    %k{i} = arith.addf %v{i}, %x : f64\n"
        f"    scf.yield %k{i} : f64\n  }} else {{\n    scf.yield %x : f64\n  }}\n"
        for i in range(1000)
    )
    text = f"func.func @f(%c: i1, %x: f64) {{\n{values}{regions}  func.return\n}}\n"
    parser = FastParser(ctx, text)
    parser.parse_module()
    assert calls["xdsl"] == 0
    assert not any(name.startswith("k") for name in parser.ssa_values)


IFS = {
    "results and else": (
        "%r = scf.if %c -> (f64) {\n  scf.yield %x : f64\n} else {\n  scf.yield %x : f64\n}"
    ),
    "two results": (
        "%r:2 = scf.if %c -> (f64, i1) {\n  scf.yield %x, %c : f64, i1\n"
        "} else {\n  scf.yield %x, %c : f64, i1\n}"
    ),
    "no results, no else, implicit yield": "scf.if %c {\n  %a = arith.addf %x, %x : f64\n}",
    "no results, an else": (
        "scf.if %c {\n  %a = arith.addf %x, %x : f64\n} else {\n  %b = arith.mulf %x, %x : f64\n}"
    ),
    "empty regions": "scf.if %c {\n} else {\n}",
    "results, no else": "%r = scf.if %c -> (f64) {\n  scf.yield %x : f64\n}",
    "a result without parentheses": "%r = scf.if %c -> f64 {\n  scf.yield %x : f64\n}",
    "a condition of another type": "scf.if %x {\n}",
    "an undefined condition": "scf.if %nope {\n}",
    "a later condition": "scf.if %d {\n}\n%d = arith.cmpf oeq, %x, %x : f64",
    "attributes": "scf.if %c {\n} {tag = 1 : i64}",
    "a location": 'scf.if %c {\n} loc("a.py":3:4)',
    "a result and a location": (
        '%r = scf.if %c -> (f64) {\n  scf.yield %x : f64\n} else {\n  scf.yield %x : f64\n} loc("a.py":3:4)'
    ),
    "a labelled block": "scf.if %c {\n^bb0:\n  %a = arith.addf %x, %x : f64\n}",
    "a misspelt else": "scf.if %c {\n} elze {\n}",
    "a region value used after it": "scf.if %c {\n  %a = arith.addf %x, %x : f64\n}\n%b = arith.addf %a, %x : f64",
    "yield unprefixed": "%r = scf.if %c -> (f64) {\n  yield %x : f64\n} else {\n  yield %x : f64\n}",
    "a type never seen": (
        "%r = scf.if %c -> (tensor<7x7xf32>) {\n  %t = tensor.empty() : tensor<7x7xf32>\n"
        "  scf.yield %t : tensor<7x7xf32>\n} else {\n  %u = tensor.empty() : tensor<7x7xf32>\n"
        "  scf.yield %u : tensor<7x7xf32>\n}"
    ),
}
"""Conditionals in a function of `%c: i1, %x: f64`, read in one match of
their header (`FastParser._parse_plain_if`) or not, valid or not."""


@pytest.mark.parametrize("body", IFS.values(), ids=IFS.keys())
def test_conditionals_read_as_xdsl_reads_them(ctx: Context, body: str) -> None:
    body = "\n".join(f"  {line}" for line in body.splitlines())
    text = f"func.func @f(%c: i1, %x: f64) {{\n{body}\n  func.return\n}}\n"
    assert _outcome_and_locations(FastParser, ctx, text) == _outcome_and_locations(
        Parser, ctx, text
    )


def test_plain_conditionals_are_read_without_their_op_s_parser(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 `scf.if`s with results and without: none goes through xDSL's `IfOp.parse`."""
    from xdsl.dialects import scf

    ifs = "".join(
        f"  %r{i} = scf.if %c -> (f64) {{\n    %k{i} = arith.constant {i}.5 : f64\n"
        f"    scf.yield %k{i} : f64\n  }} else {{\n    scf.yield %x : f64\n  }}\n"
        f"  scf.if %c {{\n    %a{i} = arith.addf %r{i}, %x : f64\n  }}\n"
        for i in range(1000)
    )
    text = f"func.func @f(%c: i1, %x: f64) {{\n{ifs}  func.return\n}}\n"
    _assert_read_without(ctx, monkeypatch, scf.IfOp, "parse", text)


LLVM_CONSTANTS = {
    "an integer": "(5) : i64",
    "a negative integer": "(-5) : i64",
    "an integer of another type": "(7) : i32",
    "an index": "(7) : index",
    "a boolean type": "(1) : i1",
    "beyond i64": "(9223372036854775808) : i64",
    "the least i64": "(-9223372036854775808) : i64",
    "a float": "(1.5 : f64) : f64",
    "a float32": "(0.1 : f32) : f32",
    "beyond float32": "(4.0e38 : f32) : f32",
    "an exponent": "(-2.5e-3 : f64) : f64",
    "a float of another type": "(1.5 : f64) : f32",
    "true": "(true) : i1",
    "hexadecimal": "(0x10) : i64",
    "an integer typed in the parentheses": "(5 : i32) : i32",
    "blanks": "( 5 ) :i64",
    "an llvm type": "(5) : !llvm.ptr",
    "a vector type": "(5) : vector<2xi64>",
    "a float for an integer type": "(1.5) : i64",
}
"""Values and types of `llvm.mlir.constant`, read in one match
(`FastParser._parse_plain_llvm_constant`) or not, valid or not."""


@pytest.mark.parametrize("constant", LLVM_CONSTANTS.values(), ids=LLVM_CONSTANTS.keys())
def test_llvm_constants_read_as_xdsl_reads_them(ctx: Context, constant: str) -> None:
    text = f"llvm.func @f() {{\n  %c = llvm.mlir.constant{constant}\n  llvm.return\n}}\n"
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


def test_plain_llvm_constants_are_read_without_their_op_s_parser(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 `llvm.mlir.constant`s of distinct values, integers and floats
    (as the lowering prints them): none goes through xDSL's `ConstantOp.parse`."""
    from xdsl.dialects import llvm

    lines = "".join(
        f"  %i{i} = llvm.mlir.constant({i}) : i64\n  %f{i} = llvm.mlir.constant({i}.5 : f64) : f64\n"
        for i in range(1000)
    )
    text = f"llvm.func @f() {{\n{lines}  llvm.return\n}}\n"
    _assert_read_without(ctx, monkeypatch, llvm.ConstantOp, "parse", text)


GETELEMENTPTRS = {
    "a constant": "inbounds %p[0] : (!llvm.ptr) -> !llvm.ptr, i64",
    "not inbounds": "%p[7] : (!llvm.ptr) -> !llvm.ptr, f64",
    "an index operand": "inbounds %p[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f64",
    "constants and operands": "%p[2, %i, 3, %j] : (!llvm.ptr, i64, i32) -> !llvm.ptr, f64",
    "a negative constant": "%p[-4] : (!llvm.ptr) -> !llvm.ptr, i8",
    "the largest i32": "%p[2147483647] : (!llvm.ptr) -> !llvm.ptr, i8",
    "beyond i32": "%p[2147483648] : (!llvm.ptr) -> !llvm.ptr, i8",
    "the marker of an operand": "%p[-2147483648] : (!llvm.ptr) -> !llvm.ptr, i8",
    "an operand of the wrong type": "%p[%x] : (!llvm.ptr, f64) -> !llvm.ptr, f64",
    "an operand typed other than defined": "%p[%i] : (!llvm.ptr, i32) -> !llvm.ptr, f64",
    "fewer types than operands": "%p[%i, %j] : (!llvm.ptr, i64) -> !llvm.ptr, f64",
    "more types than operands": "%p[%i] : (!llvm.ptr, i64, i32) -> !llvm.ptr, f64",
    "an undefined operand": "%p[%nope] : (!llvm.ptr, i64) -> !llvm.ptr, f64",
    "an undefined pointer": "%q[0] : (!llvm.ptr) -> !llvm.ptr, f64",
    "an array element type": "%p[0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<2 x f64>",
    "blanks": "inbounds  %p [ 1 , %i ] :( !llvm.ptr , i64 )->!llvm.ptr ,f64",
    "an attribute dictionary": "%p[1] {t = 1 : i64} : (!llvm.ptr) -> !llvm.ptr, f64",
    "a pointer element type": "%p[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr",
    "a vector element type": "%p[1] : (!llvm.ptr) -> !llvm.ptr, vector<2xf64>",
    "no indices": "%p[] : (!llvm.ptr) -> !llvm.ptr, f64",
    "a pointer typed as an integer": "%p[1] : (i64) -> !llvm.ptr, f64",
}
"""The rest of `%g = llvm.getelementptr ...`, read in one match
(`FastParser._parse_plain_gep`) or not, valid or not."""


@pytest.mark.parametrize("rest", GETELEMENTPTRS.values(), ids=GETELEMENTPTRS.keys())
def test_getelementptrs_read_as_xdsl_reads_them(ctx: Context, rest: str) -> None:
    text = (
        "llvm.func @f(%p: !llvm.ptr, %i: i64, %j: i32, %x: f64) -> !llvm.ptr {\n"
        f"  %g = llvm.getelementptr {rest}\n  llvm.return %g : !llvm.ptr\n}}\n"
    )
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


def test_plain_getelementptrs_are_read_without_their_op_s_parser(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 `llvm.getelementptr`s of distinct constant indices and 1,000 of an
    index operand (as the lowering prints them): none goes through xDSL's
    `GEPOp.parse`."""
    from xdsl.dialects import llvm

    lines = "".join(
        f"  %c{i} = llvm.getelementptr inbounds %p[{i}] : (!llvm.ptr) -> !llvm.ptr, i64\n"
        f"  %v{i} = llvm.getelementptr %c{i}[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f64\n"
        for i in range(1000)
    )
    text = f"llvm.func @f(%p: !llvm.ptr, %i: i64) {{\n{lines}  llvm.return\n}}\n"
    _assert_read_without(ctx, monkeypatch, llvm.GEPOp, "parse", text)


CALL_INTRINSICS = {
    "one operand": '"llvm.exp.f64"(%x) : (f64) -> f64',
    "two operands": '"llvm.maximum.f64"(%x, %y) : (f64, f64) -> f64',
    "mixed types": '"llvm.powi.f64.i32"(%x, %j) : (f64, i32) -> f64',
    "no operand": '"llvm.readcyclecounter"() : () -> i64',
    "a vector": '"llvm.exp.v2f64"(%v) : (vector<2xf64>) -> vector<2xf64>',
    "blanks": '  "llvm.exp.f64" ( %x ) :( f64 )->f64',
    "a name without the llvm prefix": '"exp.f64"(%x) : (f64) -> f64',
    "an escape in the name": '"llvm.exp\\2Ef64"(%x) : (f64) -> f64',
    "a type other than defined": '"llvm.exp.f32"(%x) : (f32) -> f32',
    "fewer types than operands": '"llvm.maximum.f64"(%x, %y) : (f64) -> f64',
    "more types than operands": '"llvm.exp.f64"(%x) : (f64, f64) -> f64',
    "an undefined operand": '"llvm.exp.f64"(%nope) : (f64) -> f64',
    "fastmath flags": '"llvm.exp.f64"(%x) {fastmathFlags = #llvm.fastmath<fast>} : (f64) -> f64',
    "an operand bundle": '"llvm.exp.f64"(%x) ["b" (%y : f64)] : (f64) -> f64',
    "a pointer operand": '"llvm.ptrmask.p0.i64"(%p, %i) : (!llvm.ptr, i64) -> !llvm.ptr',
    "two results": '"llvm.exp.f64"(%x) : (f64) -> (f64, f64)',
    "no result": '"llvm.exp.f64"(%x) : (f64) -> ()',
}
"""The rest of `%r = llvm.call_intrinsic ...`, read in one match
(`FastParser._parse_plain_call_intrinsic`) or not, valid or not."""


@pytest.mark.parametrize("rest", CALL_INTRINSICS.values(), ids=CALL_INTRINSICS.keys())
def test_call_intrinsics_read_as_xdsl_reads_them(ctx: Context, rest: str) -> None:
    text = (
        "llvm.func @f(%x: f64, %y: f64, %j: i32, %i: i64, %p: !llvm.ptr, %v: vector<2xf64>) {\n"
        f"  %r = llvm.call_intrinsic {rest}\n  llvm.return\n}}\n"
    )
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


def test_plain_call_intrinsics_are_read_without_their_op_s_parser(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 `llvm.call_intrinsic`s, each with a comment of its own (a line
    no other line is like), as the lowering prints them: none goes through
    xDSL's `CallIntrinsicOp.parse`."""
    from xdsl.dialects import llvm

    lines = "".join(
        f'  %e{i} = llvm.call_intrinsic "llvm.exp.f64"(%x) : (f64) -> f64  // step {i}\n'
        f'  %m{i} = llvm.call_intrinsic "llvm.maximum.f64"(%e{i}, %x) : (f64, f64) -> f64\n'
        for i in range(1000)
    )
    text = f"llvm.func @f(%x: f64) {{\n{lines}  llvm.return\n}}\n"
    _assert_read_without(ctx, monkeypatch, llvm.CallIntrinsicOp, "parse", text)


def test_plain_function_headers_are_read_in_one_match(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 functions of plain headers, half of them private, a third with
    attributes: none goes through xDSL's function parser, and their body
    reads the arguments."""
    functions = "".join(
        f"func.func {'private ' * (i % 2)}@f{i}(%x: tensor<3xf64>) -> tensor<3xf64>"
        f"{' attributes {tidu.num_outputs = 0 : i64}' * (i % 3 == 0)} {{\n"
        "  %y = prim.neg %x : tensor<3xf64>\n  func.return %y : tensor<3xf64>\n}\n"
        for i in range(1000)
    )
    _assert_read_without(ctx, monkeypatch, func.FuncOp, "parse", functions)


LLVM_FUNCTION_HEADERS = {
    "no arguments": "llvm.func @f() {",
    "pointers with an attribute": "llvm.func @f(%x: !llvm.ptr {llvm.noalias}, %y: !llvm.ptr {llvm.noalias}) {",
    "an attribute on one argument": "llvm.func @f(%x: !llvm.ptr, %n: i64 {llvm.noundef}) {",
    "two attributes": "llvm.func @f(%x: !llvm.ptr {llvm.noalias, llvm.readonly}) {",
    "an attribute twice": "llvm.func @f(%x: !llvm.ptr {llvm.noalias, llvm.noalias}) {",
    "an attribute with a value": "llvm.func @f(%x: !llvm.ptr {llvm.align = 8 : i64}) {",
    "a scalar result": "llvm.func @f(%n: i64) -> f64 {",
    "a pointer result": "llvm.func @f(%x: !llvm.ptr) -> !llvm.ptr {",
    "no blanks": "llvm.func @f(%x:!llvm.ptr{llvm.noalias},%n:i64)->i64{",
    "a pointer in an address space": "llvm.func @f(%x: !llvm.ptr<1>) {",
    "a linkage": "llvm.func internal @f(%x: !llvm.ptr) {",
    "a visibility": "llvm.func hidden @f(%x: !llvm.ptr) {",
    "attributes": "llvm.func @f(%x: !llvm.ptr) attributes {a = 1 : i64} {",
    "an argument location": 'llvm.func @f(%x: !llvm.ptr loc("a":1:2)) {',
    "variadic": "llvm.func @f(%x: !llvm.ptr, ...) {",
    "a declaration": "llvm.func @f(!llvm.ptr)\n  llvm.func @g() {",
    "the same name twice": "llvm.func @f(%x: i64, %x: i64) {",
}
"""Headers of an `llvm.func` whose body returns."""


@pytest.mark.parametrize("header", LLVM_FUNCTION_HEADERS.values(), ids=LLVM_FUNCTION_HEADERS.keys())
@pytest.mark.parametrize("after", ["", ' loc("b":3:4)', "\nllvm.func @h() {\n  llvm.return\n}"])
def test_llvm_function_headers_read_as_xdsl_reads_them(
    ctx: Context, header: str, after: str
) -> None:
    text = f"builtin.module {{\n  {header}\n    llvm.return\n  }}{after}\n}}\n"
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


@pytest.mark.parametrize(
    "function",
    [
        "func.func @f(%x: tensor<f64>) -> tensor<f64> {\n  return %x : tensor<f64>\n}",
        "llvm.func @f(%x: i64) -> i64 {\n  return %x : i64\n}",
        "func.func @f(%x: tensor<f64>) -> tensor<f64> {\n  yield %x : tensor<f64>\n}",
    ],
    ids=["func.func", "llvm.func", "not the function's dialect"],
)
def test_a_plain_function_body_reads_ops_of_its_dialect_unprefixed(
    ctx: Context, function: str
) -> None:
    """A function's dialect is the default one in its body (`return`), as
    when xDSL reads the function's syntax (found in review: the plain
    headers' bodies were read without it)."""
    text = f"{function}\n"
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


def test_an_alias_of_the_pointer_type_is_read_as_xdsl_reads_it(ctx: Context) -> None:
    text = "!llvm.ptr = i64\nllvm.func @f(%x: !llvm.ptr) {\n  llvm.return\n}\n"
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


def test_plain_llvm_function_headers_are_read_in_one_match(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 functions in the llvm dialect, each of its own name, as
    `lower-to-llvm` prints them: none goes through xDSL's function parser."""
    functions = "".join(
        f"llvm.func @f{i}(%x: !llvm.ptr {{llvm.noalias}}, %n: i64) -> f64 {{\n"
        "  %p = llvm.getelementptr inbounds %x[%n] : (!llvm.ptr, i64) -> !llvm.ptr, f64\n"
        "  %v = llvm.load %p : !llvm.ptr -> f64\n  llvm.return %v : f64\n}\n"
        for i in range(1000)
    )
    assert _outcome(FastParser, ctx, functions) == _outcome(Parser, ctx, functions)
    llvm_func = ctx.get_op("llvm.func")
    calls = _counting(monkeypatch, llvm_func, "parse", lambda parser: "parse")
    module = FastParser(ctx, functions).parse_module()
    assert calls["parse"] == 0
    assert first_verify_error(module) is None


def _graph(lines: str) -> str:
    """A module of one `cg.graph @f` whose body is `lines`."""
    return f"builtin.module {{\n  cg.graph @f {{\n{lines}  }}\n}}\n"


INPUT_KEYS = {
    "plain": '#cg.key<"x">',
    "empty": '#cg.key<"">',
    "an escape": '#cg.key<"a\\"b">',
    "a hexadecimal escape": '#cg.key<"x\\22y\\7e">',
    "a byte beyond ASCII": '#cg.key<"\\ff">',
    "a form feed": '#cg.key<"a\fb">',
    "a letter beyond ASCII": '#cg.key<"\u00e9">',
    "a tangent": '#cg.tangent<#cg.key<"x">, 1>',
    "a tangent of a tangent": '#cg.tangent<#cg.tangent<#cg.key<"x">, 1>, 2>',
    "a tangent without a blank": '#cg.tangent<#cg.key<"x">,1>',
    "a tangent of pass 0": '#cg.tangent<#cg.key<"x">, 0>',
    "a tangent beyond i64": '#cg.tangent<#cg.key<"x">, 99999999999999999999>',
    "a tangent of a negative pass": '#cg.tangent<#cg.key<"x">, -1>',
    "a tangent of a residual": "#cg.tangent<#cg.residual<0, 1>, 2>",
    "a cotangent": "#cg.cotangent<0, 2>",
    "a residual": "#cg.residual<3, 12>",
    "a residual with leading zeros": "#cg.residual<03, 012>",
    "with attributes": '#cg.key<"x"> {a = 1 : i64}',
    "no colon": '#cg.key<"x"> tensor<f64> //',
    "unclosed": '#cg.key<"x" : tensor<f64> //',
    "a brace inside": '#cg.key<"x}"> ',
    "another attribute": "#cg.linearized<[active]>",
    "blanks inside": '#cg.key< "x" >',
}
"""The key and what follows it of a `cg.input` line (then `: tensor<f64>`)."""


@pytest.mark.parametrize("key", INPUT_KEYS.values(), ids=INPUT_KEYS.keys())
def test_input_keys_read_as_xdsl_reads_them(ctx: Context, key: str) -> None:
    text = _graph(f"    %x = cg.input {key} : tensor<f64>\n    cg.output %x : tensor<f64>\n")
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


def test_plain_input_keys_are_read_in_one_match(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = "".join(f'    %x{i} = cg.input #cg.key<"x{i}"> : tensor<f64>\n'
                   f'    %t{i} = cg.input #cg.tangent<#cg.key<"x{i}">, 1> : tensor<f64>\n'
                   f"    %r{i} = cg.input #cg.residual<{i}, 2> : tensor<f64>\n"
                   for i in range(1000))  # fmt: skip
    text = _graph(f"{keys}    cg.output %x0 : tensor<f64>\n")
    calls = [_counting(monkeypatch, key_type, "parse_parameters", lambda parser: "key")
             for key_type in (cg.KeyAttr, cg.TangentKeyAttr, cg.ResidualKeyAttr)]  # fmt: skip
    module = FastParser(ctx, text).parse_module()
    assert [counted["key"] for counted in calls] == [0, 0, 0]
    assert first_verify_error(module) is None
    graph = cast(cg.GraphOp, module.body.block.first_op)
    ops = list(graph.body.block.ops)
    assert [op.properties["key"] for op in ops[2997:3000]] == [
        cg.KeyAttr("x999"),
        cg.TangentKeyAttr(cg.KeyAttr("x999"), 1),
        cg.ResidualKeyAttr(999, 2),
    ]


RETURNS = {
    "one value": "func.return %x : T",
    "two values": "func.return %x, %y : T, U",
    "a type list going on": "func.return %x, %y : T,\n U",
    "a type list going on after its values": "func.return %x : T,\n U",
    "a location on the next line": 'func.return %x : T\n  loc("a":1:2)',
    "a location": 'func.return %x : T loc("a":1:2)',
    "a comment": "func.return %x : T // c",
    "too few types": "func.return %x, %y : T",
    "too many types": "func.return %x : T, U",
    "another type": "func.return %x : U",
    "an undefined value": "func.return %z : T",
    "a scalar type": "func.return %s : f64",
    "a value of a tuple": "func.return %x#0 : T",
    "bare": "func.return",
}
"""The last line of a function returning `(T, U, f64)` (`T`, `U` tensor
types), with arguments `%x: T, %y: U, %s: f64`, valid or not."""


@pytest.mark.parametrize("line", RETURNS.values(), ids=RETURNS.keys())
@pytest.mark.parametrize("after", ["\n}\n", "}"])
def test_returns_read_as_xdsl_reads_them(ctx: Context, line: str, after: str) -> None:
    header = "func.func @f(%x: T, %y: U, %s: f64) -> (T, U, f64) {"
    text = f"{header}\n  {line}{after}".replace("T", "tensor<4xf64>").replace("U", "tensor<2xf32>")
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


def test_plain_returns_are_read_in_one_match(ctx: Context, monkeypatch: pytest.MonkeyPatch) -> None:
    """1,000 functions each of its own type: no `func.return` goes through
    xDSL's parser for its syntax."""
    functions = "".join(
        f"func.func @f{i}(%x: tensor<{i + 1}xf64>) -> tensor<{i + 1}xf64> {{\n"
        f"  func.return %x : tensor<{i + 1}xf64>\n}}\n"
        for i in range(1000)
    )
    calls = _counting(monkeypatch, func.ReturnOp, "parse", lambda parser: "parse")
    module = FastParser(ctx, functions).parse_module()
    assert calls["parse"] == 0
    assert first_verify_error(module) is None


OUTPUTS = {
    "one": "%x : T",
    "two": "%x, %y : T, U",
    "none": "",
    "attributes": "%x : T {a = 1 : i64}",
    "attributes only": "{a = 1 : i64}",
    "types going on": "%x : T,\n T",
    "too few types": "%x, %y : T",
    "another type": "%x : U",
    "no colon": "%x T",
    "an undefined value": "%z : T",
    "a location": '%x : T loc("a":1:2)',
    "a scalar type": "%x : f64",
}
"""What follows `cg.output` (`T`, `U` stand for the types of `%x`, `%y`)."""


@pytest.mark.parametrize("outputs", OUTPUTS.values(), ids=OUTPUTS.keys())
def test_outputs_read_as_xdsl_reads_them(ctx: Context, outputs: str) -> None:
    outputs = outputs.replace("T", "tensor<f64>").replace("U", "tensor<3xf64>")
    text = _graph(
        '    %x = cg.input #cg.key<"x"> : tensor<f64>\n'
        f'    %y = cg.input #cg.key<"y"> : tensor<3xf64>\n    cg.output {outputs}\n'
    )
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


def test_plain_outputs_are_read_in_one_match(ctx: Context, monkeypatch: pytest.MonkeyPatch) -> None:
    outputs = ", ".join(["%x"] * 10_000)
    types = ", ".join(["tensor<f64>"] * 10_000)
    text = _graph(
        f'    %x = cg.input #cg.key<"x"> : tensor<f64>\n    cg.output {outputs} : {types}\n'
    )
    calls = _counting(monkeypatch, FastParser, "parse_optional_unresolved_operand", lambda *_: "op")
    module = FastParser(ctx, text).parse_module()
    assert calls["op"] == 0
    graph = cast(cg.GraphOp, module.body.block.first_op)
    assert len(cast(Operation, graph.body.block.last_op).operands) == 10_000


ARITH_CONSTANTS = {
    "index": "5 : index",
    "the least i64": "-9223372036854775808 : index",
    "beyond i64": "9223372036854775808 : index",
    "i8": "127 : i8",
    "beyond a signed i8": "200 : i8",
    "i1": "1 : i1",
    "i33": "7 : i33",
    "20 digits": "12345678901234567890 : i64",
    "f64": "1.5 : f64",
    "an exponent": "-2.5e-3 : f64",
    "beyond float64": "1.0e400 : f64",
    "an integer for f64": "7 : f64",
    "f32": "1.5 : f32",
    "f32 rounded": "0.1 : f32",
    "beyond f32": "1.0e39 : f32",
    "below the least f32": "1.0e-50 : f32",
    "a negative f32": "-3.25e2 : f32",
    "hexadecimal": "0x10 : i32",
    "blanks": "  3:i32",
    "a location": "3 : i32 loc(unknown)",
    "an attribute dictionary": "{tag} 3 : i32",
    "a type with a suffix": "3 : index2",
    "no type": "3",
}
"""Values of an `arith.constant` line: read in one match
(`FastParser._parse_plain_constant`) or by the op's syntax, valid or not."""


@pytest.mark.parametrize("value", ARITH_CONSTANTS.values(), ids=ARITH_CONSTANTS.keys())
def test_arith_constants_read_as_xdsl_reads_them(ctx: Context, value: str) -> None:
    text = f"func.func @f() {{\n  %c = arith.constant {value}\n  func.return\n}}\n"
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


def test_plain_arith_constants_are_read_in_one_match(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """3,000 constants of distinct values: no call to the op's syntax."""
    calls = _counting(monkeypatch, arith.ConstantOp, "parse", lambda parser: "parse")
    body = "".join(
        f"  %i{i} = arith.constant {i} : index\n  %f{i} = arith.constant {i}.25 : f64\n"
        f"  %s{i} = arith.constant {i}.5 : f32\n"
        for i in range(1000)
    )
    FastParser(ctx, f"func.func @f() {{\n{body}  func.return\n}}\n").parse_module()
    assert calls["parse"] == 0


TENSOR_TYPES = {
    "plain": "tensor<3x4xf64>",
    "a scalar": "tensor<i32>",
    "complex": "tensor<2xcomplex<f32>>",
    "index": "tensor<5xindex>",
    "a zero dimension": "tensor<0x4xf64>",
    "a leading zero": "tensor<04xf64>",
    "a dynamic dimension": "tensor<4x?xf64>",
    "19 digits": "tensor<9223372036854775808xf64>",
    "2^64 elements": "tensor<4294967296x4294967296xf64>",
    "an unknown element": "tensor<4xf65>",
    "an odd integer width": "tensor<4xi3>",
    "an unsigned integer": "tensor<4xui8>",
    "an encoding": 'tensor<4xf64, "enc">',
    "blanks": "tensor< 4x4xf64 >",
}
"""Argument types: plain tensor types (`_plain_tensor_type`, built from their
text) or not (xDSL's type parser), valid or not."""


@pytest.mark.parametrize("tensor_type", TENSOR_TYPES.values(), ids=TENSOR_TYPES.keys())
def test_tensor_types_read_as_xdsl_reads_them(ctx: Context, tensor_type: str) -> None:
    text = (
        f"func.func @f(%x: {tensor_type}) -> {tensor_type} {{\n"
        f"  %y = prim.neg %x : {tensor_type}\n"
        f"  func.return %y : {tensor_type}\n}}\n"
    )
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


ATTRIBUTE_DICTIONARIES = {
    "an integer": "{tag = 5 : i64}",
    "several": '{a = -1 : i8, b.c = "text", $d = 32767 : i16}',
    "no blanks": "{a=5:i32}",
    "an empty string": '{a = ""}',
    "a repeated name": "{a = 1 : i64, a = 2 : i64}",
    "beyond i8": "{a = 128 : i8}",
    "beyond i64": "{a = -9223372036854775809 : i64}",
    "an escape": '{a = "x\\n"}',
    "a hexadecimal escape": '{a = "\\41\\22", tag = 1 : i64}',
    "a byte beyond ASCII": '{a = "\\ff"}',
    "a vertical tab in a string": '{a = "x\vy"}',
    "a form feed in a role": '{role = #cg.linearized<[active]>, s = "\f"}',
    "a unit attribute": "{a}",
    "a quoted name": '{"a" = 1 : i64}',
    "an odd width": "{a = 5 : i7}",
    "a type with a suffix": "{a = 5 : i64x}",
    "no type": "{a = 5}",
    "a trailing comma": "{a = 1 : i64,}",
    "a role": "{role = #cg.linearized<[active]>}",
    "a role and a tag": "{role = #cg.linearized<[active]>, tag = 1 : i64}",
    "an unknown dialect attribute": "{a = #nodialect.x<1>}",
    "an alias never defined": "{a = #map}",
    "a role with a brace": "{role = #cg.linearized<[active}]>}",
    "a line break": "{a = 1 : i64,\n b = 2 : i64}",
}
"""Attribute dictionaries of a `prim.transpose` line: plain ones read in one
match (`FastParser._plain_attr_dict`) or not (token by token), valid or not."""


@pytest.mark.parametrize(
    "attributes", ATTRIBUTE_DICTIONARIES.values(), ids=ATTRIBUTE_DICTIONARIES.keys()
)
def test_attribute_dictionaries_read_as_xdsl_reads_them(ctx: Context, attributes: str) -> None:
    text = (
        "func.func @f(%x: tensor<3x4xf64>) {\n"
        f"  %t = prim.transpose %x, permutation = [1, 0] {attributes}"
        " : tensor<3x4xf64> -> tensor<4x3xf64>\n"
        "  func.return\n}\n"
    )
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


PAD_LISTS = {
    "plain": ", low = [1], high = [0], interior = [2]",
    "line breaks": ",\n low = [1],\n high = [0],\n interior = [2]",
    "no blanks": ",low=[1],high=[0],interior=[2]",
    "a comment": ", low = [1], // c\n high = [0], interior = [2]",
    "another order": ", high = [0], low = [1], interior = [2]",
    "a longer keyword": ", lowest = [1], high = [0], interior = [2]",
    "a keyword missing": ", low = [1], interior = [2]",
    "a list not plain": ", low = [0x1], high = [0], interior = [2]",
    "beyond int64": ", low = [9223372036854775808], high = [0], interior = [2]",
}
"""The keyword lists of a `prim.pad` line: read in one match
(`parse_keyword_lists`) or token by token, valid or not."""


@pytest.mark.parametrize("lists", PAD_LISTS.values(), ids=PAD_LISTS.keys())
def test_keyword_lists_read_as_xdsl_reads_them(ctx: Context, lists: str) -> None:
    text = (
        "func.func @f(%x: tensor<3xf64>) {\n"
        f"  %p = prim.pad %x{lists} : tensor<3xf64> -> tensor<8xf64>\n"
        "  func.return\n}\n"
    )
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


def test_lines_no_two_alike_are_read_without_xdsls_attribute_and_type_parsers(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 lines each of constants of distinct values, pads and reshapes to
    distinct shapes and transposes with distinct attribute dictionaries parse
    no type, dense literal, attribute entry or punctuation token by token."""
    types, punctuation = _types_and_punctuation_counted(monkeypatch)
    dense = _counting(
        monkeypatch, AttrParser, "parse_dense_int_or_fp_elements_attr", lambda *_: "calls"
    )
    entries = _counting(monkeypatch, AttrParser, "_parse_attribute_entry", lambda *_: "calls")
    body = "".join(
        f"  %c{i} = prim.constant dense<{i}.5> : tensor<f64>\n"
        f"  %p{i} = prim.pad %x, low = [{i}], high = [0], interior = [0]"
        f" : tensor<4xf64> -> tensor<{i + 4}xf64>\n"
        f"  %t{i} = prim.transpose %y, permutation = [1, 0] {{tag = {i} : i64}}"
        " : tensor<2x3xf64> -> tensor<3x2xf64>\n"
        f"  %r{i} = prim.reshape %x : tensor<4xf64> -> tensor<{i + 1}x4xf64>\n"
        for i in range(1000)
    )
    FastParser(
        ctx, f"func.func @f(%x: tensor<4xf64>, %y: tensor<2x3xf64>) {{\n{body}  func.return\n}}\n"
    ).parse_module()
    assert (types["calls"], dense["calls"], entries["calls"]) == (0, 0, 0)
    assert punctuation["calls"] < 10  # the function's header and end


LOOPS = {
    "plain": "scf.for %i = %lo to %hi step %one {\n  %v = arith.addi %i, %i : index\n}",
    "an explicit yield": "scf.for %i = %lo to %hi step %one {\n  scf.yield\n}",
    "an unprefixed yield": "scf.for %i = %lo to %hi step %one {\n  yield\n}",
    "an empty body": "scf.for %i = %lo to %hi step %one {\n}",
    "no blanks": "scf.for %i=%lo to %hi step %one{\n}",
    "nested": "scf.for %i = %lo to %hi step %one {\n  scf.for %j = %lo to %i step %one {\n"
    "    %v = arith.addi %i, %j : index\n  }\n}",
    "attributes after the body": "scf.for %i = %lo to %hi step %one {\n} {a = 1 : i64}",
    "a location after the body": 'scf.for %i = %lo to %hi step %one {\n} loc("a":1:2)',
    "another terminator": "scf.for %i = %lo to %hi step %one {\n  func.return\n}",
    "two blocks": "scf.for %i = %lo to %hi step %one {\n  cf.br ^bb1\n^bb1:\n  scf.yield\n}",
    "an undefined bound": "scf.for %i = %lo to %nope step %one {\n}",
    "a bound of another type": "scf.for %i = %lo to %n64 step %one {\n}",
    "a counter of another type": "scf.for %i = %a64 to %n64 step %s64 : i64 {\n}",
    "the counter's name taken": "scf.for %lo = %lo to %hi step %one {\n}",
    "loop-carried values": "%r = scf.for %i = %lo to %hi step %one iter_args(%a = %lo) -> (index) {\n"
    "  scf.yield %a : index\n}",
    "a result without values": "%r = scf.for %i = %lo to %hi step %one {\n}",
    "a numbered bound": "scf.for %i = %lo to %pair#1 step %one {\n}",
}
"""`scf.for` loops; `%lo`, `%hi`, `%one`, `%pair#1` are `index` values, `%a64`,
`%n64`, `%s64` i64 ones."""


@pytest.mark.parametrize("loop", LOOPS.values(), ids=LOOPS.keys())
def test_loops_read_as_xdsl_reads_them(ctx: Context, loop: str) -> None:
    body = "\n".join(f"    {line}" for line in loop.splitlines())
    text = (
        "func.func @f(%lo: index, %hi: index, %one: index, %n64: i64) {\n"
        "    %a64 = arith.constant 0 : i64\n    %s64 = arith.constant 1 : i64\n"
        "    %pair:2 = scf.for %k = %lo to %hi step %one iter_args(%a = %lo, %b = %hi)"
        " -> (index, index) {\n      scf.yield %b, %a : index, index\n    }\n"
        f"{body}\n    func.return\n}}\n"
    )
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


def test_plain_loops_are_built_without_their_parse(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 loop nests of two loops as `convert-prim-to-loops` prints them:
    no loop goes through `scf.for`'s parse or constructor, and each body
    ends with its implicit yield, as xDSL builds it."""
    from xdsl.dialects import scf

    nests = "\n".join(LOOP_NEST.format(i=i, n=i % 7 + 2) for i in range(1000)) + "\n"
    calls = _counting(monkeypatch, scf.ForOp, "parse", lambda parser: "parse")
    inits = _counting(monkeypatch, scf.ForOp, "__init__", lambda *args, **kwargs: "init")
    module = FastParser(ctx, nests).parse_module()
    assert calls["parse"] == 0 and inits["init"] == 0
    loops = [op for op in module.walk() if isinstance(op, scf.ForOp)]
    assert len(loops) == 2000
    assert all(isinstance(loop.body.block.last_op, scf.YieldOp) for loop in loops)
    assert first_verify_error(module) is None
    assert _outcome(FastParser, ctx, nests) == _outcome(Parser, ctx, nests)


HEXADECIMAL_DENSES = {
    "an f64 splat": ("dense<0x4000000000000000> : tensor<2xf64>", [2.0, 2.0]),
    "an f64 list": ("dense<[0x3FF0000000000000, 0x4008000000000000]> : tensor<2xf64>", [1.0, 3.0]),
    "an f32 splat": ("dense<0x40400000> : tensor<f32>", [3.0]),
    "a NaN": ("dense<0x7FF8000000000000> : tensor<f64>", [float("nan")]),
    "an integer tensor (the number)": ("dense<0x10> : tensor<2xi64>", [16, 16]),
    "a string of bytes (xDSL's)": ('dense<"0x0000000000000840"> : tensor<f64>', [3.0]),
}
"""Dense literals of hexadecimal integers and what they hold: for a float
tensor, the bits of each float, as MLIR reads them (xDSL reads the number:
4.6e18 for the first)."""


@pytest.mark.parametrize(
    ("literal", "values"), HEXADECIMAL_DENSES.values(), ids=HEXADECIMAL_DENSES.keys()
)
def test_hexadecimal_integers_of_float_tensors_are_bit_patterns(
    ctx: Context, literal: str, values: list[float]
) -> None:
    text = f"%c = prim.constant {literal}\n"
    op = FastParser(ctx, f"func.func @f() {{\n  {text}  func.return\n}}\n").parse_module()
    constant = next(o for o in op.walk() if isinstance(o, prim.ConstantOp))
    np_values = list(constant.value.get_values())  # pyright: ignore[reportAttributeAccessIssue]
    expanded = np_values * (len(values) // len(np_values))
    assert [str(v) for v in expanded] == [str(v) for v in values]


@pytest.mark.parametrize(
    ("literal", "message"),
    [
        ("dense<0x4000000000000000> : tensor<f32>", "hexadecimal float constant out of range"),
        ("dense<-0x40000000> : tensor<f32>", "should not have a leading minus"),
    ],
)
def test_malformed_hexadecimal_floats_are_parse_errors(
    ctx: Context, literal: str, message: str
) -> None:
    text = f"func.func @f() {{\n  %c = prim.constant {literal}\n  func.return\n}}\n"
    with pytest.raises(ParseError, match=message):
        FastParser(ctx, text).parse_module()


HEXADECIMAL_SPLATS = {
    "f64": "dense<0x3FF4000000000000> : tensor<3xf64>",
    "f32": "dense<0x3FA00000> : tensor<2xf32>",
    "an upper-case X": "dense<0X3FF4000000000000> : tensor<f64>",
    "lower-case digits": "dense<0x3ff4000000000000> : tensor<f64>",
    "an infinity": "dense<0x7FF0000000000000> : tensor<2xf64>",
    "blanks": "dense< 0x3FF4000000000000 > :tensor<f64>",
    "wider than f32": "dense<0x3FF4000000000000> : tensor<f32>",
    "wider than f64": "dense<0x13FF4000000000000> : tensor<f64>",
    "f16": "dense<0x3C00> : tensor<f16>",
    "an integer tensor": "dense<0x10> : tensor<2xi32>",
    "a leading minus": "dense<-0x3FF4000000000000> : tensor<f64>",
    "digits after the literal": "dense<0x3FF4000000000000g> : tensor<f64>",
}
"""Hexadecimal splats read in one match (`_PLAIN_DENSE`, `_float_bits`) or
token by token, valid or not."""


@pytest.mark.parametrize("splat", HEXADECIMAL_SPLATS.values(), ids=HEXADECIMAL_SPLATS.keys())
def test_hexadecimal_splats_read_as_hexadecimal_floats_reads_them(ctx: Context, splat: str) -> None:
    text = f"func.func @f() {{\n  %c = prim.constant {splat}\n  func.return\n}}\n"
    assert _outcome(FastParser, ctx, text) == _outcome(HexadecimalFloats, ctx, text)


def test_hexadecimal_splats_are_read_in_one_match(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 constants of distinct float bits: no tensor literal element goes
    through the token-by-token reader."""
    lines = "".join(
        f"  %c{i} = prim.constant dense<0x{0x3FF0000000000000 + i:016X}> : tensor<4xf64>\n"
        for i in range(1000)
    )
    text = f"func.func @f() {{\n{lines}  func.return\n}}\n"
    _assert_read_without(
        ctx,
        monkeypatch,
        HexadecimalFloats,
        "_parse_tensor_literal_element",
        text,
        HexadecimalFloats,
    )


MODULES = {
    "a name and attributes": 'builtin.module @m attributes {t.i = 3 : i64, s = "x"} {\n}',
    "a name": "builtin.module @m {\n}",
    "attributes": "builtin.module attributes {t.i = 3 : i64} {\n}",
    "neither": "builtin.module {\n}",
    "a body": "builtin.module @m {\n  func.func private @g(f64) -> f64\n}",
    "a nested module": "builtin.module @m {\n  builtin.module @n attributes {k = 1 : i32} {\n  }\n}",
    "an empty dictionary": "builtin.module attributes {} {\n}",
    "a quoted name": 'builtin.module @"m n" {\n}',
    "a float attribute": "builtin.module attributes {t = 1.5 : f64} {\n}",
    "a dialect attribute": 'builtin.module attributes {k = #cg.key<"x">} {\n}',
    "a location": 'builtin.module @m {\n} loc("f.py":1:2)',
    "a repeated attribute": "builtin.module attributes {t = 1 : i64, t = 2 : i64} {\n}",
    "two blocks": "builtin.module @m {\n^a:\n  func.func private @g(f64) -> f64\n^b:\n}",
    "a value in its body": "builtin.module @m {\n  %c = arith.constant 1 : i64\n}",
    "no body": "builtin.module @m attributes {t = 1 : i64}",
    "blanks": "builtin.module  @m   attributes{ t = 1 : i64 }{\n}",
}
"""Modules inside a module: headers read in one match
(`FastParser._parse_plain_module`) or not, valid or not."""


@pytest.mark.parametrize("module", MODULES.values(), ids=MODULES.keys())
def test_modules_read_as_xdsl_reads_them(ctx: Context, module: str) -> None:
    text = f"builtin.module {{\n{module}\n}}\n"
    assert _outcome(FastParser, ctx, text) == _outcome(Parser, ctx, text)


def test_plain_modules_are_read_without_their_op_s_parser(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 named modules, each with an attribute of its own value."""
    from xdsl.dialects.builtin import ModuleOp

    modules = "".join(
        f"builtin.module @m{i} attributes {{t.i = {i} : i64}} {{\n"
        f"  func.func private @g{i}(f64) -> f64\n}}\n"
        for i in range(1000)
    )
    _assert_read_without(ctx, monkeypatch, ModuleOp, "parse", f"builtin.module {{\n{modules}}}\n")
