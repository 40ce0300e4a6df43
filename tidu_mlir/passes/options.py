"""Pass-option plumbing shared by the AD passes.

xDSL's pipeline lexer takes option values made of `[A-Za-z0-9_-]`, numbers or
quoted strings, so `graph=@f::@jvp1` and `wrt=x,tangent(x,1)` need quotes.
`quote_pass_options` adds them (tidu-opt applies it to `-p`), so the
documented spellings work unquoted. `name` is a class attribute of every
`ModulePass`, so a `name=` option is stored in the field `sym_name`.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Self

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec
from xdsl.utils.exceptions import PassFailedException

from tidu_mlir.dialects.cg import Fragment, LinearOp
from tidu_mlir.graph import FragmentNotFoundError, lookup_fragment

_PLAIN_VALUE = re.compile(r"[A-Za-z0-9_-]+|[-+]?[0-9]+(\.[0-9]*([eE][-+]?[0-9]+)?)?")
_VALUE_END = ", \t\n}"


class PipelineSyntaxError(ValueError):
    """A malformed pass pipeline, in one line naming the pass and the option."""


def quote_pass_options(pipeline: str) -> str:
    """Quote the option values of a pipeline that xDSL's lexer would reject.

    A value element ends at a comma, blank or `}` outside parentheses, so
    `wrt=x,tangent(x, 1)` gives the elements `x` and `"tangent(x, 1)"`.
    Already quoted values and `[...]` (MLIR pipelines) are kept as they are.
    An empty value element, an unterminated quoted one or a missing `}` is a
    `PipelineSyntaxError` (xDSL would raise a multi-line `ArgSpecParseError`).
    """
    out: list[str] = []
    pos, depth = 0, 0  # depth: nesting of `{` option blocks
    pass_name = ""
    while pos < len(pipeline):
        char = pipeline[pos]
        if char == "[" and depth:
            end = pipeline.find("]", pos)
            end = len(pipeline) if end < 0 else end + 1
            out.append(pipeline[pos:end])
            pos = end
            continue
        out.append(char)
        pos += 1
        if char == "{":
            if not depth:
                pass_name = _name_before(pipeline, pos - 1)
            depth += 1
        elif char == "}":
            depth = max(depth - 1, 0)
        elif char == "=" and depth:
            option = f"option '{_name_before(pipeline, pos - 1)}' of pass '{pass_name}'"
            pos = _quote_value(pipeline, pos, out, option)
    if depth and pass_name:
        raise PipelineSyntaxError(f"the options of pass '{pass_name}' lack a closing '}}'")
    return "".join(out)


def _name_before(text: str, end: int) -> str:
    """The pass or option name (letters, digits, `_`, `-`) that ends at `end`."""
    start = end
    while start and (text[start - 1].isalnum() or text[start - 1] in "_-"):
        start -= 1
    return text[start:end]


def _quote_value(text: str, pos: int, out: list[str], option: str) -> int:
    """Copy the comma-separated value elements starting at `pos`, quoting as needed;
    `option` names the option in errors."""
    while True:
        if pos < len(text) and text[pos] == '"':
            end = pos + 1
            while end < len(text) and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            if end >= len(text):
                raise PipelineSyntaxError(f"{option}: unterminated string {text[pos:]}")
            out.append(text[pos : end + 1])
            pos = end + 1
        else:
            end, parens = pos, 0
            while end < len(text) and (parens or text[end] not in _VALUE_END):
                parens += {"(": 1, ")": -1}.get(text[end], 0)
                end += 1
            element = text[pos:end]
            if not element:
                raise PipelineSyntaxError(f"{option} has an empty value")
            if not _PLAIN_VALUE.fullmatch(element):
                element = '"' + element.replace("\\", "\\\\").replace('"', '\\"') + '"'
            out.append(element)
            pos = end
        if pos < len(text) and text[pos] == ",":
            out.append(",")
            pos += 1
            continue
        return pos


@dataclass(frozen=True)
class SymNameOptionPass(ModulePass):
    """A pass whose `name=` option (the symbol it creates) lives in `sym_name`."""

    @classmethod
    def option_names(cls) -> list[str]:
        """The options as written in a pipeline (`name`, not `sym_name`)."""
        fields = (f.name for f in dataclasses.fields(cls) if f.init)
        return ["name" if field == "sym_name" else field for field in fields]

    @classmethod
    def from_spec(cls, spec: ArgSpec) -> Self:
        parameters = dict(spec.normalize_parameter_names().parameters)
        # Checked first: xDSL would report `graf=@f` as a missing `graph`.
        valid = cls.option_names()
        if unknown := [option for option in parameters if option not in valid]:
            raise PipelineSyntaxError(
                f"pass '{cls.name}' has no option{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(map(repr, unknown))}; its options are {', '.join(valid)}"
            )
        if "name" in parameters:
            parameters["sym_name"] = parameters.pop("name")
        return super().from_spec(ArgSpec(spec.name, parameters))

    def spec(self, *, include_default: bool = False) -> ArgSpec:
        spec = super().spec(include_default=include_default)
        parameters = dict(spec.parameters)
        if "sym_name" in parameters:
            parameters["name"] = parameters.pop("sym_name")
        return ArgSpec(spec.name, parameters)


def find_fragment(module: ModuleOp, path: str) -> Fragment:
    """The fragment at `path`; a missing one is the pass failure tidu-opt
    reports (its message lists the fragments that exist)."""
    try:
        return lookup_fragment(module, path)
    except FragmentNotFoundError as error:
        raise PassFailedException(str(error)) from error


def find_linear_fragment(module: ModuleOp, path: str, requirement: str) -> LinearOp:
    """The `cg.linear` fragment at `path`; `requirement` says why a `cg.graph`
    is refused (e.g. "linear-transpose needs a cg.linear fragment")."""
    fragment = find_fragment(module, path)
    if not isinstance(fragment, LinearOp):
        raise PassFailedException(f"{requirement}; '{path}' is a cg.graph")
    return fragment
