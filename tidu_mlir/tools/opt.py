"""`tidu-opt`: xDSL's opt driver with the tidu dialects and passes registered.

Keeps xDSL's flags (`-p`, `--split-input-file`, `--verify-diagnostics`,
`--print-op-generic`, `-t`). Bad input (syntax, unknown op, failed verifier,
bad pass option, a pass refusing its input) is reported as
`file:line:col: error: message` with the source line, and exits 1.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    ParseError,
    PassFailedException,
)
from xdsl.xdsl_opt_main import xDSLOptMain

from tidu_mlir.diagnostics import (
    LocatingParser,
    OpError,
    first_verify_error,
    format_op_error,
    format_parse_error,
)
from tidu_mlir.lowering import LOWERING_TARGETS
from tidu_mlir.passes.options import quote_pass_options
from tidu_mlir.registry import all_passes, make_context


class TiduOptMain(xDSLOptMain):
    """The opt driver; sources are parsed with locations for diagnostics."""

    def __init__(self, args: Sequence[str] | None = None):
        self._source: str | None = None
        super().__init__(description="tidu-mlir modular optimizer driver", args=args)

    def register_all_dialects(self) -> None:
        self.ctx = make_context()

    def register_all_targets(self) -> None:
        self.available_targets.update(LOWERING_TARGETS)  # ours win over xDSL's `llvm`
        super().register_all_targets()

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in all_passes().items():
            self.register_pass(name, factory)

    def setup_pipeline(self) -> None:
        # `graph=@f::@jvp1`, `wrt=tangent(x,1)`: quote what xDSL's lexer rejects.
        self.args.passes = quote_pass_options(self.args.passes)
        super().setup_pipeline()

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        text = chunk.read().decode(errors="replace")
        self._source = (self._source or "") + text
        try:
            parser = LocatingParser(self.ctx, text, self.get_input_name(), start_offset)
            module = parser.parse_module(not self.args.no_implicit_module)
        except ParseError as error:
            error.span = dataclasses.replace(error.span, line_offset=start_offset)
            raise InputDiagnostic(format_parse_error(error)) from error
        if (error := first_verify_error(module)) is not None:
            raise InputDiagnostic(format_op_error(error.message, error.op, self._source))
        return module

    def apply_passes(self, prog: ModuleOp) -> None:
        try:
            super().apply_passes(prog)
        except OpError as error:
            raise InputDiagnostic(format_op_error(error.message, error.op, self._source)) from error
        except (PassFailedException, ValueError) as error:
            raise InputDiagnostic(f"error: {error}") from error


class InputDiagnostic(DiagnosticException):
    """A fully formatted diagnostic about the input (printed as it is)."""


def spec_error_line(error: ArgSpecParseError) -> str:
    """xDSL's multi-line error about a pass pipeline or target spec, in one line."""
    # The lines: a heading, `pass-pipeline:1:COLUMN`, the spec, a caret, the reason.
    lines = str(error).splitlines()
    column = lines[1].rpartition(":")[2]
    return f"{lines[-1].strip()} at column {column} of '{lines[2]}'"


def run(args: Sequence[str] | None = None) -> int:
    """Run tidu-opt; return the exit code."""
    try:
        main_tool = TiduOptMain(args)
    except (ValueError, KeyError, TypeError, DiagnosticException, PassFailedException) as error:
        print(f"tidu-opt: error: {error}", file=sys.stderr)
        return 1
    except ArgSpecParseError as error:  # a BaseException
        print(f"tidu-opt: error: {spec_error_line(error)}", file=sys.stderr)
        return 1
    try:
        main_tool.run()
    except (DiagnosticException, ParseError, PassFailedException) as error:
        print(str(error).strip(), file=sys.stderr)
        return 1
    except OSError as error:
        print(f"tidu-opt: error: {error.strerror}: '{error.filename}'", file=sys.stderr)
        return 1
    return 0


def main() -> None:
    sys.exit(run())
