"""Errors that point at an op, and their rendering as `file:line:col` diagnostics.

Verifiers and passes raise `OpError` with the offending op; `tidu-opt` prints
it against the source text (ops parsed by `LocatingParser` carry their
`FileLineColLoc`, and passes copy the location of the op they derive from).
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException


class OpError(VerifyException):
    """An error about one op (bad IR, a missing AD rule, a failed check)."""

    def __init__(self, message: str, op: Operation | None = None):
        super().__init__(message)
        self.message = message
        self.op = op


class LocatingParser(Parser):
    """A parser that gives every op it reads a `FileLineColLoc` (MLIR does the same)."""

    def __init__(self, ctx: Context, text: str, name: str = "<input>", line_offset: int = 0):
        super().__init__(ctx, text, name)
        self._line_offset = line_offset

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        op = super().parse_operation()
        if not isinstance(op.location, FileLineColLoc):
            where = span.get_location()
            op.location = FileLineColLoc(
                StringAttr(where.file),
                IntAttr(where.line + self._line_offset),
                IntAttr(where.col),
            )
        return op


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


def first_verify_error(module: ModuleOp) -> OpError | None:
    """Verify op by op (outer first) and return the first failure as an `OpError`."""
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except OpError as error:
            return error
        except VerifyException as error:
            return OpError(_strip_prefix(str(error)), op)
    return None


def _strip_prefix(message: str) -> str:
    """xDSL decorates verifier messages with a printout of the op; keep the first line."""
    first = message.strip().splitlines()[0] if message.strip() else message
    return first.removeprefix("Operation does not verify: ")


def format_parse_error(error: ParseError) -> str:
    """A parse error in the same `file:line:col: error: message` form."""
    context = error.span.print_with_context().splitlines()[1:]
    text = f"{error.span.get_location()}: error: {error.msg}"
    return "\n".join([text, *(line for line in context if line.strip())])
