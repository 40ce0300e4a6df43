"""`tidu-run`: evaluate a fragment or function of a module and print its results.

The `mlir-cpu-runner` role, so lit tests can check numbers:

    tidu-run FILE --entry @f::@jvp1 --arg '[1.0, 2.0]' --arg 3.0

Arguments follow the entry's documented input order (docs/design.md); each is
a Python literal (numbers, nested lists, complex like `1+2j`). Each result is
printed on its own line as `TYPE VALUES` with 6 significant digits.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import DiagnosticException, ParseError

from tidu_mlir.diagnostics import (
    LocatingParser,
    first_verify_error,
    format_op_error,
    format_parse_error,
    out_of_memory,
)
from tidu_mlir.dialects.cg import GraphOp, LinearOp, key_spec
from tidu_mlir.graph import FragmentNotFoundError, fragment_signature, lookup_fragment
from tidu_mlir.registry import make_context
from tidu_mlir.tools import exit_process

if TYPE_CHECKING:
    import numpy as np

# The input is read and checked first: numpy, the prim dialect, the
# interpreter and the AD passes are imported once it is accepted (inside the
# functions below), so a malformed input is reported ~60 ms sooner.


class RunError(Exception):
    """A problem with the command line or the input, reported without a traceback."""


class SourceDiagnostic(RunError):
    """A `file:line:col: error: ...` diagnostic about the input file, printed as it is."""


def load_module(path: str) -> ModuleOp:
    """Parse and verify a file, turning bad input into a `RunError`."""
    try:
        # As tidu-opt: bytes that are not UTF-8 become U+FFFD, which the parser
        # reports where it meets one (outside comments and strings).
        with open(path, encoding="utf-8", errors="replace") as handle:
            source = handle.read()
    except OSError as error:
        raise RunError(f"cannot read '{path}': {error.strerror}") from error
    try:
        module = LocatingParser(make_context(), source, path).parse_module()
    except ParseError as error:
        raise SourceDiagnostic(format_parse_error(error)) from error
    if (error := first_verify_error(module)) is not None:
        raise SourceDiagnostic(format_op_error(error.message, error.op, source))
    return module


def entry_function(module: ModuleOp, entry: str) -> FuncOp | None:
    """The `func.func` the entry names, or None for a fragment path."""
    if "::" in entry:
        return None
    found = SymbolTable.lookup_symbol(module, entry.removeprefix("@"))
    return found if isinstance(found, FuncOp) else None


def entry_signature(module: ModuleOp, entry: str) -> tuple[list[str], list[TensorType]]:
    """Names and types of the entry's inputs, in the documented order."""
    if (function := entry_function(module, entry)) is not None:
        types = list(function.function_type.inputs.data)
        return [f"arg{i}" for i in range(len(types))], _tensor_types(types)
    fragment = lookup_fragment(module, entry)
    inputs = fragment_signature(fragment)
    return [key_spec(op.key) for op in inputs], _tensor_types([op.result.type for op in inputs])


def _tensor_types(types: Sequence[Attribute]) -> list[TensorType]:
    result: list[TensorType] = []
    for index, type_ in enumerate(types):
        if not isinstance(type_, TensorType):
            raise RunError(f"input {index} has type {type_}; tidu-run passes tensors only")
        result.append(type_)
    return result


def parse_argument(text: str, name: str, type_: TensorType) -> np.ndarray:
    """A command-line literal as an array of the input's shape and dtype."""
    import numpy as np

    from tidu_mlir.types import numpy_dtype

    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError) as error:
        raise RunError(f"argument '{name}': cannot read '{text}' as a number or list") from error
    dtype = numpy_dtype(type_.element_type)
    try:
        array = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as error:
        raise RunError(f"argument '{name}': '{text}' does not convert to {dtype}") from error
    shape = tuple(type_.get_shape())
    if array.shape != shape:
        raise RunError(f"argument '{name}': expected shape {shape} ({type_}), got {array.shape}")
    return array


def format_number(value: complex | float | bool) -> str:
    """A number (a Python scalar, as `ndarray.item` gives) with 6 significant
    digits; complex as `a+bj`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, complex):
        return f"{value.real:.6g}{value.imag:+.6g}j"
    return f"{value:.6g}"


def format_array(array: np.ndarray) -> str:
    """Nested brackets like numpy's `tolist()`, numbers by `format_number`."""
    if array.ndim == 0:
        return format_number(array.item())
    return "[" + ", ".join(format_array(row) for row in array) + "]"


def run_entry(
    module: ModuleOp, entry: str, arguments: Sequence[str], backend: str = "llvm"
) -> list[str]:
    """Evaluate the entry and return one printed line per result."""
    from tidu_mlir.ad import materialize
    from tidu_mlir.interp import evaluate_fragment, evaluate_func

    names, types = entry_signature(module, entry)
    if len(arguments) != len(types):
        expected = ", ".join(f"{n}: {t}" for n, t in zip(names, types, strict=True)) or "none"
        raise RunError(f"{entry} takes {len(types)} arguments ({expected}), got {len(arguments)}")
    arrays = [parse_argument(a, n, t) for a, n, t in zip(arguments, names, types, strict=True)]
    native = backend == "llvm"
    if (function := entry_function(module, entry)) is not None:
        outputs = run_native(function, arrays) if native else evaluate_func(function, arrays)
        return [format_array(r) for r in outputs]
    fragment = lookup_fragment(module, entry)
    if native:
        # The lowering compiles functions only: materialize the fragment (and what
        # it references) into a function of a copy of the module.
        outputs = run_native(materialize((module.clone(), entry), name="__tidu_entry"), arrays)
    else:
        outputs = evaluate_fragment(fragment, arrays)
    return ["inactive" if r is None else format_array(r) for r in _with_inactive(fragment, outputs)]


def run_native(function: FuncOp, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The results of `function` compiled to native code and called on `arrays`."""
    # Imported here: loading LLVM takes ~0.3 s that `--backend interp` does not need.
    from tidu_mlir.lowering.runtime import compile_function

    result = compile_function(function)(*arrays)
    if result is None:
        return []
    return list(result) if isinstance(result, tuple) else [result]


def _with_inactive(
    fragment: GraphOp | LinearOp, results: Sequence[np.ndarray]
) -> list[np.ndarray | None]:
    """Results per requested output, None where a linear fragment's output is inactive."""
    if isinstance(fragment, GraphOp):
        return list(results)
    remaining = iter(results)
    return [next(remaining) if flag else None for flag in fragment.active_flags]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tidu-run", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("file", help="an .mlir file")
    parser.add_argument("--entry", required=True, help="a fragment path (@f::@jvp1) or @func")
    parser.add_argument("--arg", action="append", default=[], help="one argument (repeatable)")
    parser.add_argument("--backend", choices=["llvm", "interp"], default="llvm")
    return parser


def run(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        module = load_module(args.file)
        for line in run_entry(module, args.entry, args.arg, args.backend):
            print(line)
    except SourceDiagnostic as error:
        print(error, file=sys.stderr)
        return 1
    except (RunError, FragmentNotFoundError, DiagnosticException) as error:
        print(f"tidu-run: {error}", file=sys.stderr)
        return 1
    except _evaluation_errors() as error:
        print(f"tidu-run: error: {error}", file=sys.stderr)
        return 1
    except MemoryError as error:  # the entry's tensors are too large for this machine
        print(f"tidu-run: error: {out_of_memory(error)}", file=sys.stderr)
        return 1
    return 0


def _evaluation_errors() -> tuple[type[Exception], ...]:
    """Errors of evaluating an entry reported as they are: a failed `prim.check`
    and a singular matrix (imported when an exception is raised)."""
    import numpy as np

    from tidu_mlir.dialects.prim.check import CheckFailedError

    return (CheckFailedError, np.linalg.LinAlgError)


def main() -> None:
    exit_process(run())
