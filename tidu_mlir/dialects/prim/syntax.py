"""Construction and assembly-format helpers of the `prim` ops: the optional
`role` attribute, i64 array properties, and the printers and parsers of the
custom formats (`%a, %b : T`, `name = [..]`, `: (T1, T2) -> U`, ...)."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import TypeAlias, cast

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, IntegerType, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer

from tidu_mlir.diagnostics import parse_int64
from tidu_mlir.dialects import cg
from tidu_mlir.fast_syntax import (
    FastParser,
    i64_array,
    integer_attr,
)

RoleSpec: TypeAlias = cg.LinearizedRoleAttr | Sequence[bool] | None


def role_attributes(role: RoleSpec) -> dict[str, Attribute]:
    """The discardable attributes of a new op: `role` as `#cg.linearized<...>`
    (given as the attribute or as its active mask), none for a primary op."""
    if role is None:
        return {}
    if not isinstance(role, cg.LinearizedRoleAttr):
        role = cg.LinearizedRoleAttr(role)
    return {cg.ROLE_ATTR_NAME: role}


def array_values(attr: DenseArrayBase) -> tuple[int, ...]:
    """The integers of an i64 array property."""
    return tuple(int(v) for v in cast(DenseArrayBase[IntegerType], attr).get_values())


def float_literal(value: float) -> str:
    """Shortest round-tripping MLIR float literal (always with a '.')."""
    text = repr(float(value))
    mantissa, _, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + ("e" + exponent if exponent else "")


def print_int_list(printer: Printer, values: Sequence[int]) -> None:
    """Print `[i, j, ...]`."""
    printer.print_string("[" + ", ".join(str(v) for v in values) + "]")


_PLAIN_INT_LIST = re.compile(r"\[\s*(?:-?[0-9]+(?:\s*,\s*-?[0-9]+)*)?\s*\]", re.ASCII)
"""`[i, j, ...]` of decimal integers and blanks only (read by `FastParser` in one match)."""


def parse_int_list(parser: Parser, what: str = "entry") -> list[int]:
    """Parse `[i, j, ...]`; each fits in i64 (`what` names an entry in errors)."""
    if (
        isinstance(parser, FastParser)
        and (lists := parser.parse_optional_plain_integers(_PLAIN_INT_LIST)) is not None
    ):
        return lists[0]
    return parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE, lambda: parse_int64(parser, what)
    )


def parse_types_after_colon(parser: Parser) -> tuple[list[Attribute], Attribute]:
    """Parse `: T1, T2, ... -> U` (no parentheses)."""
    if isinstance(parser, FastParser) and (
        types := parser.parse_optional_plain_signature(None, parenthesized=False)
    ):
        return types
    parser.parse_punctuation(":")
    inputs: list[Attribute] = list(
        parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
    )
    parser.parse_punctuation("->")
    return inputs, parser.parse_type()


def parse_operands_until(parser: Parser, keyword: str) -> list[UnresolvedOperand]:
    """Parse `%a, %b, ..., keyword` (consuming the keyword)."""
    if isinstance(parser, FastParser) and (
        operands := parser.parse_optional_plain_operands_before(keyword)
    ):
        return operands
    operands = [parser.parse_unresolved_operand()]
    parser.parse_punctuation(",")
    while parser.parse_optional_keyword(keyword) is None:
        operands.append(parser.parse_unresolved_operand())
        parser.parse_punctuation(",")
    return operands


@functools.cache
def _assignment(keyword: str | None) -> re.Pattern[str]:
    """`keyword = 5` (`= 5` if no keyword), the integer a group."""
    head = "" if keyword is None else rf"{re.escape(keyword)}[ \t]*"
    return re.compile(rf"{head}=[ \t]*(-?[0-9]+)(?![0-9a-zA-Z_$.])", re.ASCII)


def parse_int64_assignment(
    parser: Parser, keyword: str, *, keyword_read: bool = False
) -> IntegerAttr:
    """Parse `keyword = 5` (`= 5` if the keyword was read already) as an i64
    attribute (an axis, a dimension), built unverified once `parse_int64`
    checked its range."""
    pattern = _assignment(None if keyword_read else keyword)
    if isinstance(parser, FastParser) and (found := parser.parse_optional_plain_integers(pattern)):
        return integer_attr(found[0][0], i64)
    if not keyword_read:
        parser.parse_keyword(keyword)
    parser.parse_punctuation("=")
    return integer_attr(parse_int64(parser, keyword), i64)


def parse_keyword_list(parser: Parser, keyword: str) -> list[int]:
    """Parse `keyword = [i, j, ...]`."""
    parser.parse_keyword(keyword)
    parser.parse_punctuation("=")
    return parse_int_list(parser, f"'{keyword}' entry")


@functools.cache
def _plain_keyword_lists(keywords: tuple[str, ...], pairs: bool) -> re.Pattern[str]:
    """`, k1 = [i, ...], k2 = [...]` (with `pairs`: `, k1 = [i, ...] x [j, ...],
    ...`) of plain integer lists, read in one match, a group per list."""
    second = rf"\s*x\s*({_PLAIN_INT_LIST.pattern})" if pairs else ""
    lists = (
        rf"\s*,\s*{re.escape(keyword)}(?![a-zA-Z0-9_$.])\s*=\s*({_PLAIN_INT_LIST.pattern})" + second
        for keyword in keywords
    )
    return re.compile("".join(lists).removeprefix(r"\s*"), re.ASCII)


def parse_keyword_lists(
    parser: Parser, keywords: tuple[str, ...], *, pairs: bool = False
) -> list[list[int]]:
    """Parse `, k1 = [i, j, ...], k2 = [...]`, the `keywords` in order (with
    `pairs`, two lists per keyword: `, k1 = [i, ...] x [j, ...], ...`)."""
    if (
        keywords
        and isinstance(parser, FastParser)
        and (lists := parser.parse_optional_plain_integers(_plain_keyword_lists(keywords, pairs)))
        is not None
    ):
        return lists
    lists = []
    for keyword in keywords:
        parser.parse_punctuation(",")
        lists.append(parse_keyword_list(parser, keyword))
        if pairs:
            parser.parse_keyword("x")
            lists.append(parse_int_list(parser, f"'{keyword}' entry"))
    return lists


def print_attr_dict(printer: Printer, op: Operation) -> None:
    """Print the op's discardable attributes (`{role = ...}`), if any."""
    printer.print_op_attributes(op.attributes)


def print_types_arrow(printer: Printer, inputs: Sequence[Attribute], output: Attribute) -> None:
    """Print ` : T -> U` (one input) or ` : (T1, T2) -> U`."""
    printer.print_string(" : ")
    if len(inputs) == 1:
        printer.print_attribute(inputs[0])
    else:
        printer.print_string("(")
        printer.print_list(inputs, printer.print_attribute)
        printer.print_string(")")
    printer.print_string(" -> ")
    printer.print_attribute(output)


def parse_types_arrow(parser: Parser, count: int) -> tuple[list[Attribute], Attribute]:
    """Parse `: T -> U` (count == 1) or `: (T1, ..., Tn) -> U`."""
    if isinstance(parser, FastParser) and (
        types := parser.parse_optional_plain_signature(count, parenthesized=count > 1)
    ):
        return types
    parser.parse_punctuation(":")
    if count == 1 and parser.parse_optional_punctuation("(") is None:
        inputs: list[Attribute] = [parser.parse_type()]
    else:
        if count == 1:
            inputs = [parser.parse_type()]
            parser.parse_punctuation(")")
        else:
            inputs = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
    parser.parse_punctuation("->")
    return inputs, parser.parse_type()


def print_same_type(printer: Printer, op: Operation, prefix: str = "") -> None:
    """Print `prefix %a, %b attr-dict : T` for an op whose operands and result share T."""
    printer.print_string(" " + prefix)
    printer.print_list(op.operands, printer.print_operand)
    print_attr_dict(printer, op)
    printer.print_string(" : ")
    printer.print_attribute(op.operands[0].type)


def parse_same_type(
    parser: Parser, count: int
) -> tuple[list[SSAValue], dict[str, Attribute], Attribute]:
    """Parse `%a, %b attr-dict : T` (count operands, all of type T)."""
    if isinstance(parser, FastParser) and (plain := parser.parse_optional_plain_operands(count)):
        operands, t = plain
        return resolve(parser, operands, [t] * count), {}, t
    operands = [parser.parse_unresolved_operand()]
    for _ in range(count - 1):
        parser.parse_punctuation(",")
        operands.append(parser.parse_unresolved_operand())
    attributes = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    t = parser.parse_type()
    return resolve(parser, operands, [t] * count), attributes, t


def resolve(
    parser: Parser, operands: Sequence[UnresolvedOperand], types: Sequence[Attribute]
) -> list[SSAValue]:
    """The parsed operands, resolved against their parsed types."""
    return list(parser.resolve_operands(operands, types, parser.pos))


__all__ = [
    "RoleSpec",
    "array_values",
    "i64_array",
]
