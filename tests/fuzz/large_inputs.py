"""About 1 MB inputs for `tidu-opt` and `tidu-run`: valid modules and malformed
ones whose error xDSL's parser could be slow or deep to reach (used by
`test_large_inputs.py` and `bench/bench_parse.py`).

Each generator returns the text, whether it is valid, and the line the
diagnostic must point at (None for a valid input).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.ir import Attribute, Block, Operation, Region
from xdsl.printer import Printer

MEGABYTE = 1 << 20


@dataclass(frozen=True)
class LargeInput:
    name: str
    text: str
    valid: bool
    error_line: int | None = None
    """The line of the expected `input.mlir:LINE:COL: error:` (None: valid)."""


def _chain(size: int) -> list[str]:
    """A function of `prim.add` ops, about `size` bytes."""
    lines = [
        "func.func @f(%x: tensor<4xf64>) -> tensor<4xf64> {",
        "  %v0 = prim.neg %x : tensor<4xf64>",
    ]
    count = size // 48
    lines += [f"  %v{i} = prim.add %v{i - 1}, %x : tensor<4xf64>" for i in range(1, count)]
    lines += [f"  func.return %v{count - 1} : tensor<4xf64>", "}"]
    return lines


def valid_chain() -> LargeInput:
    """~22,000 ops in one function."""
    return LargeInput("valid op chain", "\n".join(_chain(MEGABYTE)) + "\n", True)


def valid_dense() -> LargeInput:
    """One dense constant of ~50,000 numbers."""
    count = MEGABYTE // 21
    numbers = ", ".join(f"{i * 0.001:.15f}" for i in range(count))
    text = (
        f"func.func @f() -> tensor<{count}xf64> {{\n"
        f"  %c = prim.constant dense<[{numbers}]> : tensor<{count}xf64>\n"
        f"  func.return %c : tensor<{count}xf64>\n}}\n"
    )
    return LargeInput("valid dense literal", text, True)


def unterminated_string() -> LargeInput:
    """A string literal left open on line 2, then 1 MB of ops (xDSL's string
    regex backtracks exponentially on an unterminated literal)."""
    lines = _chain(MEGABYTE)
    lines.insert(1, '  "test.op"() {s = "never closed')
    return LargeInput("unterminated string", "\n".join(lines) + "\n", False, 2)


def deep_brackets() -> LargeInput:
    """An attribute nested a million brackets deep."""
    return LargeInput("deep nesting", '"test.op"() {v = ' + "[" * MEGABYTE + "\n", False, 1)


def error_at_the_end() -> LargeInput:
    """1 MB of valid ops, then a use of an undefined value on the last op."""
    lines = _chain(MEGABYTE)
    lines[-2] = "  func.return %nope : tensor<4xf64>"
    return LargeInput("error at the end", "\n".join(lines) + "\n", False, len(lines) - 1)


def use_before_definition() -> LargeInput:
    """The first op uses the last op's value (the dominance check over 22,000 ops)."""
    lines = _chain(MEGABYTE)
    count = len(lines) - 3
    lines[1] = f"  %v0 = prim.neg %v{count - 1} : tensor<4xf64>"
    return LargeInput("use before definition", "\n".join(lines) + "\n", False, 2)


def _error_after_units(
    name: str, unit: Callable[[int], str], before: str, after: str
) -> LargeInput:
    """`before`, 1 MB of `unit(i)` (a piece of one or more lines, `i` its
    number), then `after`, which uses the undefined value `%nope`."""
    units: list[str] = []
    size = 0
    while size < MEGABYTE:
        units.append(unit(len(units)))
        size += len(units[-1]) + 1
    head = before + "\n".join(units) + "\n"
    error_line = head.count("\n") + after[: after.index("%nope")].count("\n") + 1
    return LargeInput(name, head + after, False, error_line)


def _error_after(name: str, signature: str, line: Callable[[int], str]) -> LargeInput:
    """A function `(%x: T) -> U` (`signature` gives `T` and `U`) of 1 MB of
    `line(i)` ops (`i` their line number), then an undefined value returned."""
    argument, result = signature.split(" -> ")
    return _error_after_units(
        name,
        lambda i: f"  %v{i + 1} = {line(i + 1)}",
        f"func.func @f(%x: {argument}) -> {result} {{\n",
        f"  func.return %nope : {result}\n}}\n",
    )


def error_after_ops_with_attributes() -> LargeInput:
    """1 MB of one op in a custom syntax with attributes (`prim.transpose`:
    read by its `parse` once, then from the form of its line)."""
    op = "prim.transpose %x, permutation = [1, 0] : tensor<4x4xf64> -> tensor<4x4xf64>"
    signature = "tensor<4x4xf64> -> tensor<4x4xf64>"
    return _error_after("error after attributes", signature, lambda i: op)


def error_after_distinct_lines() -> LargeInput:
    """1 MB of ops no two alike (`prim.slice` at a different offset on each
    line: `FastParser` reads no line from the form of another)."""
    return _error_after(
        "error after distinct lines",
        "tensor<100000xf64> -> tensor<3xf64>",
        lambda i: f"prim.slice %x [{i}:{i + 3}:1] : tensor<100000xf64> -> tensor<3xf64>",
    )


def error_after_distinct_constants() -> LargeInput:
    """1 MB of scalar constants, each of another value (`dense<i.25>`)."""
    return _error_after(
        "error after constants",
        "tensor<f64> -> tensor<f64>",
        lambda i: f"prim.constant dense<{i}.25> : tensor<f64>",
    )


def error_after_hexadecimal_splats() -> LargeInput:
    """1 MB of scalar constants, each of other float bits (`dense<0x...>`)."""
    return _error_after(
        "error after hexadecimal splats",
        "tensor<4xf64> -> tensor<4xf64>",
        lambda i: f"prim.constant dense<0x{0x3FF0000000000000 + i:016X}> : tensor<4xf64>",
    )


def error_after_distinct_dense_lists() -> LargeInput:
    """1 MB of vector constants, each a list of other values (`dense<[i.0, ...]>`)."""
    return _error_after(
        "error after dense lists",
        "tensor<3xf64> -> tensor<3xf64>",
        lambda i: f"prim.constant dense<[{i}.0, -1.5, 2.5e-3]> : tensor<3xf64>",
    )


def error_after_located_ops() -> LargeInput:
    """1 MB of ops, each with a location of its own (`loc("f.py":i:3)`), as
    printed with debug information."""
    return _error_after(
        "error after located ops",
        "tensor<4xf64> -> tensor<4xf64>",
        lambda i: f'prim.neg %x : tensor<4xf64> loc("model.py":{i}:3)',
    )


def error_after_generic_slices() -> LargeInput:
    """1 MB of ops in the generic syntax, as `--print-op-generic` prints
    them, each of other properties (slices at distinct offsets)."""
    return _error_after(
        "error after generic ops",
        "tensor<100000xf64> -> tensor<3xf64>",
        lambda i: (
            f'"prim.slice"(%x) <{{start = array<i64: {i}>, limit = array<i64: {i + 3}>, '
            "stride = array<i64: 1>}> : (tensor<100000xf64>) -> tensor<3xf64>"
        ),
    )


def error_after_pads_to_distinct_shapes() -> LargeInput:
    """1 MB of `prim.pad`, each to another shape (a type never seen before)."""
    return _error_after(
        "error after pads",
        "tensor<4xf64> -> tensor<4xf64>",
        lambda i: (
            f"prim.pad %x, low = [{i}], high = [0], interior = [0]"
            f" : tensor<4xf64> -> tensor<{i + 4}xf64>"
        ),
    )


def error_after_broadcasts_to_distinct_shapes() -> LargeInput:
    """1 MB of `prim.broadcast_in_dim`, each to another shape."""
    return _error_after(
        "error after broadcasts",
        "tensor<4xf64> -> tensor<4xf64>",
        lambda i: f"prim.broadcast_in_dim %x, dims = [1] : tensor<4xf64> -> tensor<{i}x4xf64>",
    )


def error_after_reshapes_to_distinct_shapes() -> LargeInput:
    """1 MB of `prim.reshape` (an assembly format), each to another shape."""
    return _error_after(
        "error after reshapes",
        "tensor<4xf64> -> tensor<4xf64>",
        lambda i: f"prim.reshape %x : tensor<4xf64> -> tensor<{i}x4xf64>",
    )


def error_after_distinct_attribute_dictionaries() -> LargeInput:
    """1 MB of `prim.transpose`, each with another attribute dictionary."""
    return _error_after(
        "error after attr dicts",
        "tensor<4x4xf64> -> tensor<4x4xf64>",
        lambda i: (
            f"prim.transpose %x, permutation = [1, 0] {{tag = {i} : i64}}"
            " : tensor<4x4xf64> -> tensor<4x4xf64>"
        ),
    )


def error_after_distinct_comments() -> LargeInput:
    """1 MB of `prim.compare`, each line with a comment of its own."""
    return _error_after(
        "error after comments",
        "tensor<4xf64> -> tensor<4xf64>",
        lambda i: f"prim.compare lt, %x, %x : tensor<4xf64> // line {i}",
    )


def error_after_distinct_index_constants() -> LargeInput:
    """1 MB of `arith.constant` (an xDSL op), each of another value."""
    return _error_after(
        "error after arith constants",
        "tensor<4xf64> -> tensor<4xf64>",
        lambda i: f"arith.constant {i} : index",
    )


def error_after_gathers_to_distinct_shapes() -> LargeInput:
    """1 MB of `prim.gather` (operands before a keyword, a signature of two
    inputs), each to another shape."""
    return _error_after(
        "error after gathers",
        "tensor<4xf64> -> tensor<4xf64>",
        lambda i: (
            f"prim.gather %x, %x, axis = {i} : tensor<4xf64>, tensor<4xf64> -> tensor<{i}xf64>"
        ),
    )


def error_after_concatenations_to_distinct_shapes() -> LargeInput:
    """1 MB of `prim.concatenate` (a parenthesized signature), each to another shape."""
    return _error_after(
        "error after concatenations",
        "tensor<4xf64> -> tensor<4xf64>",
        lambda i: (
            f"prim.concatenate %x, %x, dimension = 0"
            f" : (tensor<4xf64>, tensor<4xf64>) -> tensor<{i}xf64>"
        ),
    )


def error_after_distinct_iotas() -> LargeInput:
    """1 MB of `prim.iota`, each along another dimension."""
    return _error_after(
        "error after iotas",
        "tensor<4xf64> -> tensor<4xf64>",
        lambda i: f"prim.iota dimension = {i} : tensor<2x3xi32>",
    )


_UNDEFINED_RESULT = (
    "func.func @z(%x: tensor<f64>) -> tensor<f64> {\n  func.return %nope : tensor<f64>\n}\n"
)
_GRAPH_HEAD = 'builtin.module {\n  cg.graph @f {\n    %x = cg.input #cg.key<"x"> : tensor<f64>\n'
_GRAPH_UNDEFINED_OUTPUT = "    cg.output %nope : tensor<f64>\n  }\n}\n"


def error_after_functions() -> LargeInput:
    """1 MB of small functions, each of its own name, every other one private."""
    return _error_after_units(
        "error after functions",
        lambda i: (
            f"func.func {'private ' * (i % 2)}@f{i}(%x: tensor<f64>) -> tensor<f64> {{\n"
            "  %y = prim.neg %x : tensor<f64>\n  func.return %y : tensor<f64>\n}"
        ),
        "",
        _UNDEFINED_RESULT,
    )


def error_after_functions_of_distinct_types() -> LargeInput:
    """1 MB of small functions, each of its own type (no line like another)."""
    return _error_after_units(
        "error after distinct functions",
        lambda i: (
            f"func.func @f{i}(%x: tensor<{i + 1}xf64>) -> tensor<{i + 1}xf64> {{\n"
            f"  func.return %x : tensor<{i + 1}xf64>\n}}"
        ),
        "",
        _UNDEFINED_RESULT,
    )


def error_after_function_declarations() -> LargeInput:
    """1 MB of function declarations (no body), each of its own types."""
    return _error_after_units(
        "error after declarations",
        lambda i: f"func.func private @g{i}(tensor<{i + 1}xf64>, f64) -> tensor<{i + 1}xf64>",
        "",
        _UNDEFINED_RESULT,
    )


def error_after_modules() -> LargeInput:
    """1 MB of named modules, each with an attribute of its own value."""
    return _error_after_units(
        "error after modules",
        lambda i: (
            f"builtin.module @m{i} attributes {{t.i = {i} : i64}} {{\n"
            f"  func.func private @g{i}(f64) -> f64\n}}"
        ),
        "",
        _UNDEFINED_RESULT,
    )


def error_after_fragments() -> LargeInput:
    """1 MB of `cg.graph` fragments, each of its own name."""
    return _error_after_units(
        "error after fragments",
        lambda i: (
            f"  cg.graph @f{i} {{\n"
            '    %x = cg.input #cg.key<"x"> : tensor<f64>\n'
            "    %p = prim.mul %x, %x : tensor<f64>\n"
            "    cg.output %p : tensor<f64>\n  }"
        ),
        "builtin.module {\n",
        "  cg.graph @z {\n    cg.output %nope : tensor<f64>\n  }\n}\n",
    )


def error_after_input_keys() -> LargeInput:
    """1 MB of `cg.input`s, each of its own key or tangent."""
    return _error_after_units(
        "error after input keys",
        lambda i: (
            f'    %x{i} = cg.input #cg.key<"x{i}"> : tensor<f64>\n'
            f'    %t{i} = cg.input #cg.tangent<#cg.key<"x{i}">, 1> : tensor<f64>'
        ),
        _GRAPH_HEAD,
        _GRAPH_UNDEFINED_OUTPUT,
    )


def error_after_escaped_input_keys() -> LargeInput:
    """1 MB of `cg.input`s, each of its own key with an escape in its name."""
    return _error_after_units(
        "error after escaped keys",
        lambda i: f'    %x{i} = cg.input #cg.key<"x\\22{i}"> : tensor<f64>',
        _GRAPH_HEAD,
        _GRAPH_UNDEFINED_OUTPUT,
    )


def error_after_roles() -> LargeInput:
    """1 MB of linearized ops, each with a role and a tag of its own."""
    return _error_after_units(
        "error after roles",
        lambda i: (
            f"    %t{i} = prim.mul %x, %x {{role = #cg.linearized<[fixed, active]>, tag = {i} : i64}}"
            " : tensor<f64>"
        ),
        _GRAPH_HEAD,
        _GRAPH_UNDEFINED_OUTPUT,
    )


def error_after_calls() -> LargeInput:
    """1 MB of `func.call`s, each of its own callee, and `arith.constant`s
    of f32 values."""
    return _error_after_units(
        "error after calls",
        lambda i: (
            f"  %c{i} = func.call @g{i}(%x) : (tensor<f64>) -> tensor<f64>\n"
            f"  %s{i} = arith.constant {i}.5 : f32"
        ),
        "func.func @f(%x: tensor<f64>) -> tensor<f64> {\n",
        "  func.return %nope : tensor<f64>\n}\n",
    )


_LLVM_LOOP = """\
llvm.func @f{i}(%x: !llvm.ptr {{llvm.noalias}}, %out: !llvm.ptr {{llvm.noalias}}) {{
  %one = llvm.mlir.constant(1) : i64
  %n = llvm.mlir.constant({n}) : i64
  %zero = llvm.mlir.constant(0) : i64
  llvm.br ^bb{i}(%zero : i64)
^bb{i}(%k: i64):
  %p = llvm.getelementptr inbounds %x[%k] : (!llvm.ptr, i64) -> !llvm.ptr, f64
  %v = llvm.load %p : !llvm.ptr -> f64
  %e = llvm.call_intrinsic "llvm.exp.f64"(%v) : (f64) -> f64
  %q = llvm.getelementptr inbounds %out[%k] : (!llvm.ptr, i64) -> !llvm.ptr, f64
  llvm.store %e, %q : f64, !llvm.ptr
  %next = llvm.add %k, %one : i64
  %more = llvm.icmp "slt" %next, %n : i64
  llvm.cond_br %more, ^bb{i}(%next : i64), ^end{i}
^end{i}:
  llvm.return
}}"""
"""A function of one loop in the llvm dialect, as `lower-to-llvm` prints
them: blocks with arguments, branches, scalar types."""


def error_after_llvm_loops() -> LargeInput:
    """1 MB of functions of one loop in the llvm dialect, each of its own
    name, trip count and block names."""
    return _error_after_units(
        "error after llvm loops",
        lambda i: _LLVM_LOOP.format(i=i, n=i % 97 + 2),
        "",
        _UNDEFINED_RESULT,
    )


def error_after_llvm_constants() -> LargeInput:
    """1 MB of `llvm.mlir.constant`s of distinct values, integers and floats,
    as the lowering prints them."""
    return _error_after_units(
        "error after llvm constants",
        lambda i: (
            f"  %i{i} = llvm.mlir.constant({i}) : i64\n"
            f"  %f{i} = llvm.mlir.constant({i}.5 : f64) : f64"
        ),
        "llvm.func @f() {\n",
        "  llvm.return %nope : i64\n}\n",
    )


def error_after_getelementptrs() -> LargeInput:
    """1 MB of `llvm.getelementptr`s of distinct constant indices and of an
    index operand, as the lowering prints them."""
    return _error_after_units(
        "error after getelementptrs",
        lambda i: (
            f"  %c{i} = llvm.getelementptr inbounds %p[{i}] : (!llvm.ptr) -> !llvm.ptr, i64\n"
            f"  %v{i} = llvm.getelementptr %c{i}[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f64"
        ),
        "llvm.func @f(%p: !llvm.ptr, %i: i64) {\n",
        "  llvm.return %nope : i64\n}\n",
    )


def error_after_call_intrinsics() -> LargeInput:
    """1 MB of `llvm.call_intrinsic`s, each line with a comment of its own."""
    return _error_after_units(
        "error after call intrinsics",
        lambda i: f'  %e{i} = llvm.call_intrinsic "llvm.exp.f64"(%x) : (f64) -> f64  // step {i}',
        "llvm.func @f(%x: f64) {\n",
        "  llvm.return %nope : i64\n}\n",
    )


LOOP_NEST = """\
func.func @f{i}(%x: memref<{n}x3xf64>, %out0: memref<{n}x3xf64>) attributes {{tidu.num_outputs = 1 : i64}} {{
  %0 = arith.constant 0 : index
  %1 = arith.constant 1 : index
  %2 = arith.constant {n} : index
  %3 = arith.constant 3 : index
  scf.for %4 = %0 to %2 step %1 {{
    scf.for %5 = %0 to %3 step %1 {{
      %6 = memref.load %x[%4, %5] : memref<{n}x3xf64>
      %7 = math.exp %6 : f64
      memref.store %7, %out0[%4, %5] : memref<{n}x3xf64>
    }}
  }}
  func.return
}}"""
"""A function of one loop nest, as `convert-prim-to-loops` prints them."""


def error_after_loop_nests() -> LargeInput:
    """1 MB of functions of one loop nest (scf, memref), each of its own name
    and shape."""
    return _error_after_units(
        "error after loop nests",
        lambda i: LOOP_NEST.format(i=i, n=i % 97 + 2),
        "",
        _UNDEFINED_RESULT,
    )


def error_after_a_long_line() -> LargeInput:
    """One `cg.output` of 60,000 operands, the last undefined."""
    count = 60_000
    operands = ", ".join(["%x"] * count)
    types = ", ".join(["tensor<f64>"] * (count + 1))
    line = f"    cg.output {operands}, %nope : {types}\n"
    return LargeInput("error on a long line", f"{_GRAPH_HEAD}{line}  }}\n}}\n", False, 4)


def error_after_each_prim_op(*names: str) -> list[LargeInput]:
    """For each prim op (those `names`, if any), 1 MB of its sample
    (`tests/dialects/test_prim_package.py`'s `CASES`) in copies each with an
    attribute dictionary of its own (no two lines alike), then an undefined
    value."""
    cases = _prim_cases()
    return [
        _error_after_copies(op, *case)
        for op, case in cases.items()
        if not names or op.name in names
    ]


def _prim_cases() -> dict[type[Operation], tuple[Callable[..., Operation], list[Attribute]]]:
    """Each prim op's builder from operand values, and the operands' types."""
    from dialects.test_prim_package import CASES, _type_of  # pyright: ignore[reportMissingImports]

    return {op: (build, [_type_of(a) for a in arrays]) for op, (build, arrays, _) in CASES.items()}


def _error_after_copies(
    op_class: type[Operation], build: Callable[..., Operation], types: list[Attribute]
) -> LargeInput:
    copies = max(1, 10 * MEGABYTE // len(_copies_text(build, types, 10)))
    text = _copies_text(build, types, copies).replace(
        "  func.return\n}", "  func.return %nope : tensor<f64>\n}"
    )
    return LargeInput(op_class.name, text, False, text[: text.index("%nope")].count("\n") + 1)


def _copies_text(build: Callable[..., Operation], types: list[Attribute], copies: int) -> str:
    """A function of `copies` ops `build` makes from its arguments (with the
    new ops they use), the k-th with the attribute `tag = k`."""
    block = Block(arg_types=types)
    for k in range(copies):
        op = build(*block.args)
        op.attributes["tag"] = IntegerAttr(k, i64)
        for new in _with_new_operands(op):
            block.add_op(new)
    block.add_op(func.ReturnOp())
    output = io.StringIO()
    Printer(stream=output).print_op(func.FuncOp("f", (types, []), Region(block)))
    return output.getvalue()


def _with_new_operands(op: Operation) -> list[Operation]:
    """`op` after the ops not yet in a block that make its operands, in order."""
    ops: list[Operation] = []
    for operand in op.operands:
        owner = operand.owner
        if isinstance(owner, Operation) and owner.parent is None:
            ops += [new for new in _with_new_operands(owner) if new not in ops]
    return [*ops, op]


def long_integer() -> LargeInput:
    """A dimension of a million digits."""
    text = f"func.func @f(%a: tensor<{'7' * MEGABYTE}xf64>) {{\n  func.return\n}}\n"
    return LargeInput("million-digit integer", text, False, 1)


def garbage_line() -> LargeInput:
    """One line of 1 MB that is not MLIR."""
    return LargeInput("one garbage line", "%" * MEGABYTE + "\n", False, 1)


GENERATORS: list[Callable[[], LargeInput]] = [
    valid_chain, valid_dense, unterminated_string, deep_brackets, error_at_the_end,
    use_before_definition, error_after_ops_with_attributes, error_after_distinct_lines,
    error_after_distinct_constants, error_after_distinct_dense_lists, error_after_located_ops,
    error_after_hexadecimal_splats,
    error_after_generic_slices,
    error_after_pads_to_distinct_shapes,
    error_after_broadcasts_to_distinct_shapes, error_after_reshapes_to_distinct_shapes,
    error_after_distinct_attribute_dictionaries, error_after_distinct_comments,
    error_after_distinct_index_constants, error_after_gathers_to_distinct_shapes,
    error_after_concatenations_to_distinct_shapes, error_after_distinct_iotas,
    error_after_functions, error_after_functions_of_distinct_types,
    error_after_function_declarations, error_after_modules, error_after_fragments,
    error_after_input_keys, error_after_escaped_input_keys, error_after_roles,
    error_after_calls, error_after_llvm_loops, error_after_llvm_constants,
    error_after_getelementptrs, error_after_call_intrinsics, error_after_loop_nests, error_after_a_long_line,
    long_integer, garbage_line,
]  # fmt: skip
