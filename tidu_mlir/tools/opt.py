"""`tidu-opt`: xDSL's opt driver with the tidu dialects and passes registered.

Keeps xDSL's flags (`-p`, `--split-input-file`, `--verify-diagnostics`,
`--print-op-generic`, `-t`). Bad input (syntax, unknown op, failed verifier,
bad pass option, a pass refusing its input) is reported as
`file:line:col: error: message` with the source line, and exits 1.

`--help` names the tidu passes (among xDSL's); `--help-passes` documents them.
A pass documents itself in its class docstring: the first paragraph says what
it does, and an `Options:` section has one entry per option, as written in a
pipeline (`name` for the `sym_name` field), in the Google style:

    Options:
        graph: the fragment to linearize, by path (`@f`, `@f::@vjp2`).
        name: the new fragment's symbol; unset: `jvp<N>` (N the pass id).

Types and defaults come from the dataclass fields. `-t dot` prints the
module's fragments as a Graphviz graph (`tidu_mlir.tools.dot`).
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
import sys
import textwrap
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipelineCallbackType
from xdsl.targets.mlir import MLIRTarget
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    ParseError,
    PassFailedException,
)
from xdsl.utils.target import Target
from xdsl.xdsl_opt_main import xDSLOptMain

from tidu_mlir.diagnostics import (
    LocatingParser,
    OpError,
    first_verify_error,
    format_op_error,
    format_parse_error,
    out_of_memory,
)
from tidu_mlir.fast_syntax import FastPrinter
from tidu_mlir.lowering import LOWERING_TARGETS
from tidu_mlir.passes.options import SymNameOptionPass, quote_pass_options
from tidu_mlir.registry import all_passes, make_context, xdsl_universe
from tidu_mlir.tools import exit_process


class TiduOptMain(xDSLOptMain):
    """The opt driver; sources are parsed with locations for diagnostics."""

    def __init__(self, args: Sequence[str] | None = None):
        self._source: str | None = None
        tidu_passes = ", ".join(all_passes())
        description = (
            f"tidu-mlir modular optimizer driver. tidu passes: {tidu_passes} (see --help-passes)."
        )
        super().__init__(description=description, args=args)

    def register_all_dialects(self) -> None:
        self.ctx = make_context()

    def register_all_targets(self) -> None:
        self.available_targets.update(LOWERING_TARGETS)  # ours win over xDSL's `llvm`
        self.available_targets.update(TOOL_TARGETS)
        for name, factory in xdsl_universe().all_targets.items():
            self.available_targets.setdefault(name, factory)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.formatter_class = HelpFormatter
        arg_parser.add_argument(
            "--help-passes",
            action=HelpPassesAction,
            passes=all_passes(),
            help="Document the tidu passes (what each does, its options) and exit",
        )

    def register_all_passes(self) -> None:
        for name, factory in {**xdsl_universe().all_passes, **all_passes()}.items():
            self.register_pass(name, factory)

    def setup_pipeline(self) -> None:
        # `graph=@f::@jvp1`, `wrt=tangent(x,1)`: quote what xDSL's lexer rejects.
        self.args.passes = quote_pass_options(self.args.passes)
        super().setup_pipeline()
        callback = self.pipeline.callback
        if callback is not None:
            self.pipeline = dataclasses.replace(
                self.pipeline, callback=self._unverified_start(callback)
            )

    def _unverified_start(self, callback: PassPipelineCallbackType) -> PassPipelineCallbackType:
        """xDSL's callback between passes, minus its verification before the first
        pass: `parse_chunk` has just verified the module (`first_verify_error`),
        and a second pass over a 1 MB input costs 0.8 s."""

        def call(previous: ModulePass | None, module: ModuleOp, next_: ModulePass | None) -> None:
            if previous is not None:
                return callback(previous, module, next_)
            disable_verify, self.args.disable_verify = self.args.disable_verify, True
            try:  # still called: it starts the `--time-passes` timer
                callback(previous, module, next_)
            finally:
                self.args.disable_verify = disable_verify

        return call

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
        except (DiagnosticException, ValueError) as error:  # the lowering's, xDSL's passes'
            raise InputDiagnostic(f"error: {error}") from error


class InputDiagnostic(DiagnosticException):
    """A fully formatted diagnostic about the input (printed as it is)."""


@dataclasses.dataclass(frozen=True)
class FastMLIRTarget(MLIRTarget):
    """xDSL's `mlir` target (the default output) printing with `FastPrinter`,
    which prints each type once (xDSL's own printer when highlighting syntax)."""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        if self.syntax_highlight:
            return super().emit(ctx, module, output)
        printer = FastPrinter(
            stream=output,
            print_generic_format=self.print_generic_format,
            print_properties_as_attributes=self.print_properties_as_attributes,
            print_debuginfo=self.print_debuginfo,
        )
        printer.print_op(module)
        printer.print_metadata(ctx.loaded_dialects)
        print("\n", file=output)


def _dot_target() -> type[Target]:
    from tidu_mlir.tools.dot import DotTarget

    return DotTarget


TOOL_TARGETS: dict[str, Callable[[], type[Target]]] = {
    "dot": _dot_target,
    "mlir": lambda: FastMLIRTarget,
}
"""`-t` output targets of tidu-opt defined by the tools (`dot`: a Graphviz
picture; `mlir`, the default: xDSL's, printed faster)."""


def spec_error_line(error: ArgSpecParseError) -> str:
    """xDSL's multi-line error about a pass pipeline or target spec, in one line."""
    # The lines: a heading, `pass-pipeline:1:COLUMN`, the spec, a caret, the reason.
    lines = str(error).splitlines()
    column = lines[1].rpartition(":")[2]
    return f"{lines[-1].strip()} at column {column} of '{lines[2]}'"


def diagnostic_text(error: Exception) -> str:
    """The printed form of a diagnostic: formatted ones as they are, others (a
    `-t` target refusing the module) as `error: message`."""
    text = str(error).strip()
    if isinstance(error, InputDiagnostic) or "error:" in text.partition("\n")[0]:
        return text
    return f"error: {text}"


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
        print(diagnostic_text(error), file=sys.stderr)
        return 1
    except OSError as error:
        print(f"tidu-opt: error: {error.strerror}: '{error.filename}'", file=sys.stderr)
        return 1
    except MemoryError as error:  # a tensor too large for this machine (a splat expanded)
        print(f"tidu-opt: error: {out_of_memory(error)}", file=sys.stderr)
        return 1
    return 0


def main() -> None:
    exit_process(run())


# --------------------------------------------------------------------------
# --help-passes
# --------------------------------------------------------------------------

HELP_WIDTH = 79
_OPTION_ENTRY = re.compile(r"^ {4}(\w+): ?(.*)$")


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help layout; the description does not break pass names at
    their hyphens (xDSL's comma-joined lists in the flags' help still do)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return textwrap.fill(
            " ".join(text.split()),
            width,
            initial_indent=indent,
            subsequent_indent=indent,
            break_on_hyphens=False,
        )


class HelpPassesAction(argparse.Action):
    """`--help-passes`: print `pass_help` of the tidu passes and exit 0."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str,
        passes: Mapping[str, Callable[[], type[ModulePass]]],
        help: str | None = None,
    ):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)
        self.passes = passes

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(pass_help(self.passes), end="")
        parser.exit()


@dataclasses.dataclass(frozen=True)
class PassOption:
    """One option of a pass as `--help-passes` shows it."""

    name: str
    type: str
    default: str
    description: str


def pass_help(passes: Mapping[str, Callable[[], type[ModulePass]]]) -> str:
    """The help text of `passes`: per pass its name, description and options."""
    heading = "tidu passes (run as -p 'NAME{OPTION=VALUE ...}'; list values comma-separated):"
    sections = [heading, *(_pass_section(name, factory()) for name, factory in passes.items())]
    return "\n\n".join(sections) + "\n"


def _pass_section(name: str, cls: type[ModulePass]) -> str:
    lines = [name, _fill(pass_description(cls), 4)]
    if options := pass_options(cls):
        lines.append("    options:")
    for option in options:
        lines.append(f"      {option.name} ({option.type}, {option.default})")
        lines.append(_fill(option.description, 10))
    return "\n".join(lines)


def _fill(text: str, indent: int) -> str:
    """`text` wrapped to `HELP_WIDTH`, every line indented by `indent`."""
    margin = " " * indent
    return textwrap.fill(
        text, HELP_WIDTH, initial_indent=margin, subsequent_indent=margin, break_on_hyphens=False
    )


def pass_description(cls: type) -> str:
    """The first paragraph of the pass class docstring, on one line."""
    paragraph = inspect.cleandoc(cls.__doc__ or "").split("\n\n")[0]
    return " ".join(paragraph.split())


def documented_options(cls: type) -> dict[str, str]:
    """Option name -> description, from the `Options:` section of the class docstring."""
    lines = inspect.cleandoc(cls.__doc__ or "").splitlines()
    if "Options:" not in lines:
        return {}
    found: dict[str, list[str]] = {}
    entry: list[str] = []
    for line in lines[lines.index("Options:") + 1 :]:
        if match := _OPTION_ENTRY.match(line):
            entry = found[match.group(1)] = [match.group(2)]
        elif line.startswith(" " * 8) and entry:
            entry.append(line.strip())  # a continuation line
        else:
            break  # a blank line or a new section ends the options
    return {option: " ".join(words) for option, words in found.items()}


def pass_options(cls: type[ModulePass]) -> list[PassOption]:
    """The options of a pass (its init fields) with type, default and description."""
    documented = documented_options(cls)
    hints = _type_hints(cls)
    options: list[PassOption] = []
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        name = option_name(cls, field.name)
        hint = hints.get(field.name, field.type)
        description = documented.get(name, "(undocumented)")
        options.append(PassOption(name, _type_name(hint), _default(field), description))
    return options


def option_name(cls: type[ModulePass], field_name: str) -> str:
    """How the option of field `field_name` is written in a pipeline."""
    if issubclass(cls, SymNameOptionPass) and field_name == "sym_name":
        return "name"
    return field_name


def _type_hints(cls: type[ModulePass]) -> dict[str, Any]:
    """The resolved field annotations (the strings as written if they do not resolve)."""
    try:
        return typing.get_type_hints(cls)
    except (NameError, TypeError):
        return {}


def _type_name(hint: Any) -> str:
    """A pass option type in command-line terms: `list of int`, `str`."""
    args = typing.get_args(hint)
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return " or ".join(_type_name(arg) for arg in args if arg is not type(None))
    if typing.get_origin(hint) is tuple and args:
        return f"list of {_type_name(args[0])}"
    if isinstance(hint, type):
        return hint.__name__
    return str(hint)


def _default(field: dataclasses.Field[Any]) -> str:
    """`required`, or the default as written in a pipeline (`unset` for None)."""
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return "required"
    if value is None:
        return "default: unset"
    if isinstance(value, bool):
        return f"default: {str(value).lower()}"
    if isinstance(value, tuple):
        return f"default: {','.join(map(str, value))}" if value else "default: empty"
    return f"default: {value}"
