"""Errors that point at an op, and their rendering as `file:line:col` diagnostics.

Verifiers and passes raise `OpError` with the offending op; `tidu-opt` prints
it against the source text (ops parsed by `LocatingParser` carry their
`FileLineColLoc`, and passes copy the location of the op they derive from).
`LocatingParser` also turns the malformed inputs xDSL's parser mishandles
(unterminated strings, integers and dimensions beyond 64 bits, numbers beyond
their float type, dense literals it cannot store, nesting deeper than Python's
stack, integers of more digits than Python converts, an op's `parse` failing
with a `ValueError` or `IndexError`, a block defined twice after a branch to
it) into parse errors, and
`first_verify_error` adds the checks verifying op by op misses: dominance, and
empty blocks that need a terminator. Both are fast enough for 1 MB inputs
within 1 s: `LocatingParser` is a `FastParser` (`tidu_mlir.fast_syntax`), and
`first_verify_error` verifies one op of each kind (`VerifiesLocally`).
"""

from __future__ import annotations

import functools
import math
import re
import sys
from typing import NoReturn

from xdsl.context import Context
from xdsl.dialects.builtin import (
    AnyDenseElement,
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    Float80Type,
    Float128Type,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    ModuleOp,
    RankedStructure,
    StringAttr,
)
from xdsl.ir import (
    AttributeInvT,
    Block,
    BlockArgument,
    Operation,
    OpResult,
    Region,
    SSAValue,
)
from xdsl.irdl.dominance import DominanceInfo
from xdsl.parser import BaseParser
from xdsl.parser.core import UnresolvedOperand
from xdsl.traits import NoTerminator, OpTrait
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Input, Position, Span

from tidu_mlir.fast_syntax import I64_MAX, I64_MIN, FastParser, file_line_col, int_attr

"""The largest dimension, element count, array entry or pass id (MLIR stores them as int64)."""


class OpError(VerifyException):
    """An error about one op (bad IR, a missing AD rule, a failed check)."""

    def __init__(self, message: str, op: Operation | None = None):
        super().__init__(message)
        self.message = message
        self.op = op


_DIGITS = "0123456789"
_QUOTE_OR_COMMENT = re.compile(r'"|//')
_STRING_STOP = re.compile(r'["\\\n\v\f]')
_HEX_ESCAPE = re.compile(r"[0-9A-Fa-f]{2}")


def check_string_literals(text: str, name: str) -> None:
    """Raise a `ParseError` at the first unterminated or badly escaped string literal.

    xDSL's string regex backtracks exponentially on such a literal (minutes
    for 30 characters), so this linear scan runs before its lexer. Outside
    comments, `"` only starts string literals; the escapes are the lexer's.
    """
    source = Input(text, name)
    pos = 0
    while (match := _QUOTE_OR_COMMENT.search(text, pos)) is not None:
        start = match.start()
        if match.group() == "//":
            end = text.find("\n", start)
            pos = len(text) if end < 0 else end + 1
            continue
        pos = start + 1
        while (stop := _STRING_STOP.search(text, pos)) is not None and stop.group() == "\\":
            if text[stop.end() : stop.end() + 1] in ('"', "n", "t", "\\"):
                pos = stop.end() + 1
            elif _HEX_ESCAPE.match(text, stop.end()):
                pos = stop.end() + 2
            else:
                raise ParseError(
                    Span(stop.start(), stop.end() + 1, source),
                    'invalid escape in string literal (use \\", \\n, \\t, \\\\ or two hex digits)',
                )
        if stop is None or stop.group() != '"':
            raise ParseError(Span(start, start + 1, source), "unterminated string literal")
        pos = stop.end()


class LocatingParser(FastParser):
    """A parser that gives every op it reads a `FileLineColLoc` (MLIR does the same)
    and reports as parse errors the inputs xDSL's parser would crash or hang on."""

    def __init__(self, ctx: Context, text: str, name: str = "<input>", line_offset: int = 0):
        check_string_literals(text, name)
        super().__init__(ctx, text, name)
        self._file = StringAttr(name)
        self._columns: dict[int, IntAttr] = {}
        self._line_offset = line_offset
        self._last_line = (0, 1)  # (position, its line): lines are counted from there
        self._first_forward_use: dict[str, Span] = {}

    def resolve_other_operand(
        self, operand: UnresolvedOperand, type: AttributeInvT
    ) -> SSAValue[AttributeInvT]:
        # Remember where a name is first used before its definition: xDSL reports
        # a name never defined at the end of the input, we report it at its use.
        name = operand.operand_name
        if name not in self.ssa_values and name not in self.forward_ssa_references:
            self._first_forward_use[name] = operand.span  # a new forward reference
        return super().resolve_other_operand(operand, type)

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        try:
            return self._parse_module(allow_implicit_module)
        except ParseError as error:
            if "values used but not defined" not in error.msg or not self.forward_ssa_references:
                raise
            self._raise_at_first_undefined_use()

    def _raise_at_first_undefined_use(self) -> NoReturn:
        undefined = [self._first_forward_use[name] for name in self.forward_ssa_references]
        first = min(undefined, key=lambda span: span.start)
        others = len(undefined) - 1
        more = f" (and {others} more undefined value{'s' * (others > 1)})" if others else ""
        raise ParseError(first, f"use of undefined value {first.text}{more}")

    def _parse_module(self, allow_implicit_module: bool) -> ModuleOp:
        # Errors of xDSL's parser that are about the input, reported where the
        # parser stopped: nesting deeper than its recursion allows (it recurses
        # per region, type, attribute and bracket), and integer literals beyond
        # Python's limit on the digits `int()` converts.
        try:
            return super().parse_module(allow_implicit_module)
        except RecursionError:
            message = "the input nests too deeply to parse"
            span = None
        except ValueError as error:
            if "integer string conversion" not in str(error):
                raise
            message = f"integer literals are limited to {sys.get_int_max_str_digits()} digits"
            span = _digits_before(self._text, self.pos)  # the lexer is past the literal
        at = min(self.pos, max(len(self._text) - 1, 0))
        self.raise_error(message, *(span or (at, at + 1)))  # here: the deep stack is unwound

    def parse_operation(self) -> Operation:
        start = self.pos
        try:
            op = super().parse_operation()
        except VerifyException as error:  # an attribute verified while it is built
            raise_since(self, _strip_prefix(str(error)), start)
        except (ValueError, IndexError) as error:  # an xDSL op's `parse` on malformed input
            if "integer string conversion" in str(error):  # (reported where it is)
                raise
            raise_since(self, f"malformed op: {error}", start)
        return self._located(op, start)

    def _parse_block(self) -> Block:
        # xDSL's, the definition of a block named before it (a successor)
        # recorded: xDSL leaves it unrecorded, so a second block of that name
        # raised a KeyError instead of its "re-declaration" error.
        label = self._current_token.span
        block = super()._parse_block()
        if self.blocks.get(label.text[1:], (None,))[0] is block:
            self.blocks[label.text[1:]] = (block, label)
        return block

    def _located(self, op: Operation, start: int) -> Operation:
        if not isinstance(op.location, FileLineColLoc):
            line, column = self._line_and_column(start)
            op.location = file_line_col(
                self._file, int_attr(line + self._line_offset), self._column(column)
            )
        return op

    def _column(self, column: int) -> IntAttr:
        # Ops share a few columns (their indentations): one attribute each.
        if (attribute := self._columns.get(column)) is None:
            attribute = self._columns[column] = IntAttr(column)
        return attribute

    def _line_and_column(self, pos: int) -> tuple[int, int]:
        # Counting the newlines between this op and the one located before
        # keeps this linear (`Span.get_location` counts from the top): ops are
        # located in the order they end, so an op with regions, located after
        # the ops of its body, starts a little before the previous one.
        last_pos, last_line = self._last_line
        if last_pos <= pos:
            line = last_line + self._text.count("\n", last_pos, pos)
        else:
            line = last_line - self._text.count("\n", pos, last_pos)
        self._last_line = (pos, line)
        return line, pos - self._text.rfind("\n", 0, pos)

    def parse_shape_dimension(self, allow_dynamic: bool = True) -> int:
        start = self.pos
        dimension = super().parse_shape_dimension(allow_dynamic)
        if dimension > I64_MAX:
            raise_since(self, f"dimension {dimension} is larger than {I64_MAX}", start)
        return dimension

    def parse_dimension_list(self) -> list[int]:
        start = self.pos
        dimensions = super().parse_dimension_list()
        if (count := math.prod(d for d in dimensions if d >= 0)) > I64_MAX:
            shape = "x".join(map(str, dimensions))
            raise_since(self, f"shape {shape} has {count} elements, more than {I64_MAX}", start)
        return dimensions

    def parse_optional_builtin_int_or_float_attr(self) -> IntegerAttr | FloatAttr | None:
        # `1000...0 : f64` (beyond the float range) and a hexadecimal float wider
        # than its type make xDSL's conversions raise OverflowError; it can
        # neither unpack (NotImplementedError) nor print f80 and f128 values.
        start = self.pos
        try:
            attribute = super().parse_optional_builtin_int_or_float_attr()
        except OverflowError:
            raise_since(self, "the number does not fit in its floating-point type", start)
        except NotImplementedError:
            raise_since(self, "f80 and f128 attributes are not supported", start)
        if isinstance(attribute, FloatAttr) and isinstance(
            attribute.type, Float80Type | Float128Type
        ):
            raise_since(self, "f80 and f128 attributes are not supported", start)
        return attribute

    def parse_dense_int_or_fp_elements_attr(
        self, type: RankedStructure[AnyDenseElement] | None
    ) -> DenseIntOrFPElementsAttr:
        # xDSL packs the values with `struct`: f80, f128 and integers wider than
        # 64 bits raise NotImplementedError, an integer outside its type ValueError,
        # an integer beyond the float range for a float type OverflowError; it
        # asserts that a complex element is a pair.
        start = self.pos
        try:
            return super().parse_dense_int_or_fp_elements_attr(type)
        except AssertionError:
            raise_since(self, "a complex dense element must be a pair `(re, im)`", start)
        except NotImplementedError:
            raise_since(
                self,
                "dense literals of element type f80, f128 or integers wider than "
                "64 bits are not supported",
                start,
            )
        except ValueError as error:
            raise_since(self, str(error), start)
        except OverflowError:
            raise_since(self, "an integer in the dense literal is too large for a float", start)


def _digits_before(text: str, pos: int) -> tuple[int, int] | None:
    """The span of the digits that end at `pos` (blanks before it skipped), if any."""
    end = len(text[:pos].rstrip())
    start = len(text[:end].rstrip(_DIGITS))
    return (start, end) if start < end else None


def parse_int64(parser: BaseParser, what: str, *, allow_negative: bool = True) -> int:
    """An integer literal that fits in int64 (index arrays, pass ids): a larger
    one is a parse error at the literal instead of xDSL's `ValueError` later."""
    start = parser.pos
    value = parser.parse_integer(allow_boolean=False, allow_negative=allow_negative)
    if not I64_MIN <= value <= I64_MAX:
        raise_since(parser, f"{what} {value} does not fit in 64 bits", start)
    return value


def raise_since(parser: BaseParser, message: str, start: Position) -> NoReturn:
    """Raise a parse error spanning what was parsed since `start` (the blanks
    before the next token excluded)."""
    parsed = parser.lexer.input.content[start : parser.pos].rstrip()
    parser.raise_error(message, start, start + max(len(parsed), 1))


def located_ancestor(op: Operation | None) -> Operation | None:
    """The op itself or its closest ancestor that has a source location."""
    while op is not None and not isinstance(op.location, FileLineColLoc):
        op = op.parent_op()
    return op


def format_op_error(message: str, op: Operation | None, source: str | None = None) -> str:
    """`file:line:col: error: message`, the source line and a caret, MLIR style."""
    anchor = located_ancestor(op)
    if anchor is None:
        return f"error: {message}" + (f"\n  in op: {op.name}" if op is not None else "")
    location = anchor.location
    assert isinstance(location, FileLineColLoc)
    line, col = location.line.data, location.column.data
    text = f"{location.filename.data}:{line}:{col}: error: {message}"
    if source is not None:
        lines = source.splitlines()
        if 0 < line <= len(lines):
            text += f"\n{lines[line - 1]}\n{' ' * (col - 1)}^"
    if op is not None and anchor is not op:
        text += f"\n  (in '{op.name}' derived from the op at this location)"
    return text


class DominanceCheck:
    """Finds operands whose definition does not dominate their use, which xDSL's
    verifier never checks: defined later in the block, or in a block or region
    the use cannot be reached through. Positions in a block and the dominators
    of a multi-block region are computed once per check."""

    def __init__(self) -> None:
        self._positions: dict[Block, dict[Operation, int]] = {}
        self._dominance: dict[Region, DominanceInfo] = {}

    def first_undominated(self, user: Operation) -> int | None:
        """The index of the first operand of `user` that does not dominate it, or None."""
        for index, value in enumerate(user.operands):
            if not self._dominates(value, user):
                return index
        return None

    def _dominates(self, value: SSAValue, user: Operation) -> bool:
        definer: Operation | None = None
        if isinstance(value, OpResult):
            definer, block = value.op, value.op.parent_block()
        elif isinstance(value, BlockArgument):
            block = value.block
        else:
            return True  # an erased value: the verifier reports it
        if block is None:
            return True  # a detached definition: nothing to compare with
        region = block.parent
        anchor: Operation | None = user  # `user` or its ancestor next to the definition
        while anchor is not None:
            anchor_block = anchor.parent_block()
            if anchor_block is block:
                positions = self._positions_in(block)
                return definer is None or positions[definer] < positions[anchor]
            if anchor_block is not None and region is not None and anchor_block.parent is region:
                if region not in self._dominance:
                    self._dominance[region] = DominanceInfo(region)
                return self._dominance[region].dominates(block, anchor_block)
            anchor = anchor.parent_op()
        return False

    def _positions_in(self, block: Block) -> dict[Operation, int]:
        # Block.get_operation_index is a linear scan: index each block once.
        if block not in self._positions:
            self._positions[block] = {op: index for index, op in enumerate(block.ops)}
        return self._positions[block]


class VerifiesLocally:
    """Mixin for op classes whose verifier (`verify_`: their constraints, their
    custom checks) reads only the op's operand and result types, properties
    and attributes, so that ops alike in all of them verify alike:
    `first_verify_error` verifies one of each kind (if the op's traits verify
    nothing)."""


class VerifiedKinds:
    """The kinds of `VerifiesLocally` ops verified so far in one walk over a
    module: class, and the identities of the types, properties and attributes
    (alive as long as the module, which the walk does not change)."""

    def __init__(self) -> None:
        self._kinds: set[tuple[object, ...]] = set()

    def seen(self, op: Operation) -> bool:
        """Whether an op of the kind of `op` passed verification in this walk."""
        kind = self._kind(op)
        return kind is not None and kind in self._kinds

    def add(self, op: Operation) -> None:
        """Record that `op`, just verified, passed."""
        if (kind := self._kind(op)) is not None:
            self._kinds.add(kind)

    @staticmethod
    def _kind(op: Operation) -> tuple[object, ...] | None:
        # Outside `verify_`, `Operation.verify` checks successors and the
        # terminator (the last op of a block): those ops are always verified.
        # It also rejects erased operands: the classes of the operands are part
        # of the kind, so that an erased one makes a kind never recorded.
        if not _verifies_locally(type(op)) or op.successors or op.regions or op.next_op is None:
            return None
        kind: list[object] = [type(op)]
        for operand in op.operands:
            kind += (type(operand), id(operand.type))
        kind += [id(result.type) for result in op.results]
        if op.properties:
            kind.append(tuple([(name, id(value)) for name, value in op.properties.items()]))
        kind.append(None)  # properties before, attributes after
        if op.attributes:
            kind.append(tuple([(name, id(value)) for name, value in op.attributes.items()]))
        return tuple(kind)


LOCAL_LLVM_OPS = frozenset(
    {
        *("LoadOp", "StoreOp", "GEPOp", "ConstantOp", "AllocaOp", "CallIntrinsicOp"),
        *("FAddOp", "FSubOp", "FMulOp", "FDivOp", "FNegOp", "FCmpOp", "ICmpOp", "SelectOp"),
        *("AddOp", "SubOp", "MulOp", "SDivOp", "UDivOp", "SRemOp", "URemOp"),
        *("AndOp", "OrOp", "XOrOp", "ShlOp", "LShrOp", "AShrOp"),
        *("BitcastOp", "PtrToIntOp", "IntToPtrOp", "SExtOp", "ZExtOp", "TruncOp"),
        *("SIToFPOp", "FPExtOp", "FPTruncOp"),
    }
)
"""The classes of xDSL 0.74's `llvm` dialect (by name: the dialect is not
imported for it) that verify locally as `VerifiesLocally` says: their IRDL
constraints, and a custom check of the op's own types (`ICmpOp`: vector
operands, vector result) or properties (`GEPOp`: the indices into the element
type; `CallIntrinsicOp`: the `llvm.` prefix) or none. Their ops make most of a
module lowered to the llvm dialect."""

_LOCAL_TRAITS = ("SameOperandsAndResultType",)
"""Traits whose verifier reads only the op's own operand and result types."""


@functools.cache
def _verifies_locally(op_type: type[Operation]) -> bool:
    """Whether `op_type` is `VerifiesLocally` (or in `LOCAL_LLVM_OPS`) and its
    traits verify nothing beyond the op's own types."""
    local = issubclass(op_type, VerifiesLocally) or (
        op_type.__module__ == "xdsl.dialects.llvm" and op_type.__name__ in LOCAL_LLVM_OPS
    )
    return local and all(
        type(trait).verify is OpTrait.verify or type(trait).__name__ in _LOCAL_TRAITS
        for trait in op_type.traits
    )


def first_verify_error(module: ModuleOp) -> OpError | None:
    """Verify op by op (outer first), with dominance and empty bodies, and
    return the first failure as an `OpError`. Of the `VerifiesLocally` ops
    alike (`VerifiedKinds`), one is verified."""
    dominance = DominanceCheck()
    verified = VerifiedKinds()
    for op in module.walk():
        # Before the op's verifier: verifiers may read the terminator of a body.
        if (region := _empty_single_block(op)) is not None:
            return OpError(
                f"region #{region} of '{op.name}' is a single empty block; "
                "it needs at least a terminator",
                op,
            )
        if not verified.seen(op):
            try:
                op.verify(verify_nested_ops=False)
            except OpError as error:
                return error
            except VerifyException as error:
                return OpError(_strip_prefix(str(error)), op)
            except Exception as error:
                if not type(op).__module__.startswith("xdsl."):
                    raise  # (ours report with VerifyException: anything else is a bug)
                return OpError(_xdsl_verifier_failure(op, error), op)
            verified.add(op)
        if (index := dominance.first_undominated(op)) is not None:
            return OpError(
                f"operand #{index} of '{op.name}' does not dominate its use "
                "(it is not defined before the use on every path to it)",
                op,
            )
    return None


def _xdsl_verifier_failure(op: Operation, error: Exception) -> str:
    """What the verifier of an xDSL op reported by another exception than
    `VerifyException`: a bare `Exception` (memref.load/store, scf.while) says
    what is wrong; others (an `IndexError` of scf.while's on too few block
    arguments) are named."""
    if type(error) is Exception:
        return str(error)
    return f"'{op.name}' is malformed: its verifier failed ({type(error).__name__}: {error})"


def _empty_single_block(op: Operation) -> int | None:
    """The index of a region of `op` that is one block without ops, where `op`
    requires a terminator (xDSL checks it in `Block.verify`, which verifying
    op by op skips)."""
    if not op.regions or op.has_trait(NoTerminator):
        return None
    for index, region in enumerate(op.regions):
        if len(region.blocks) == 1 and region.block.first_op is None:
            return index
    return None


def _strip_prefix(message: str) -> str:
    """xDSL decorates verifier messages with a printout of the op; keep the first line."""
    first = message.strip().splitlines()[0] if message.strip() else message
    return first.removeprefix("Operation does not verify: ")


def format_parse_error(error: ParseError) -> str:
    """A parse error in the same `file:line:col: error: message` form."""
    context = error.span.print_with_context().splitlines()[1:]
    text = f"{error.span.get_location()}: error: {_unformatted_placeholders_filled(error)}"
    return "\n".join([text, *(line for line in context if line.strip())])


def _unformatted_placeholders_filled(error: ParseError) -> str:
    """xDSL 0.74's lexer says "Expected suffix identifier after {first_char}"
    (a missing f-string prefix); name the character it means."""
    if "{first_char}" not in error.msg:
        return error.msg
    return error.msg.replace("{first_char}", repr(error.span.text[:1]))


def out_of_memory(error: MemoryError) -> str:
    """The message for an input whose tensors need more memory than there is."""
    detail = str(error)  # numpy's says what it could not allocate
    return "out of memory" + (f": {detail}" if detail else " (the input's tensors are too large)")
