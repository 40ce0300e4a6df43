"""Walking fragments: lookup by path, reachable ops, the documented input order.

A derived fragment references values of the fragments that enclose it, so
"the graph" of a fragment is everything its outputs reach, across nesting.
All walks here are iterative, so graphs of any depth work.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.traits import SymbolTable

from tidu_mlir.dialects.cg import Fragment, GraphOp, InputOp, LinearOp, OutputOp


class FragmentNotFoundError(LookupError):
    """A fragment path names nothing in the module."""


def fragment_path(fragment: Fragment) -> str:
    """The nested symbol path of a fragment, e.g. `@f::@jvp1`."""
    names: list[str] = []
    current: Operation | None = fragment
    while isinstance(current, GraphOp | LinearOp):
        names.append("@" + current.sym_name.data)
        current = current.parent_op()
    return "::".join(reversed(names))


def all_fragments(module: ModuleOp) -> Iterator[Fragment]:
    """Every fragment of the module, outer ones first, in program order."""
    for op in module.walk():
        if isinstance(op, GraphOp | LinearOp):
            yield op


def parse_fragment_path(path: str) -> SymbolRefAttr:
    """Turn `@f::@jvp1` (the leading @ optional) into a nested symbol reference."""
    parts = [part.strip().removeprefix("@") for part in path.strip().split("::")]
    if not path.strip() or any(not part for part in parts):
        raise FragmentNotFoundError(f"malformed fragment path '{path}'")
    return SymbolRefAttr(parts[0], parts[1:])


def lookup_fragment(module: ModuleOp, path: str) -> Fragment:
    """The fragment at `path`; the error lists the fragments that exist."""
    found = SymbolTable.lookup_symbol(module, parse_fragment_path(path))
    if isinstance(found, GraphOp | LinearOp):
        return found
    existing = ", ".join(fragment_path(f) for f in all_fragments(module)) or "none"
    raise FragmentNotFoundError(f"no fragment '{path}' in the module; fragments: {existing}")


def fragment_output_op(fragment: Fragment) -> OutputOp:
    """The `cg.output` that ends a fragment."""
    terminator = fragment.body.block.last_op
    assert isinstance(terminator, OutputOp), "a verified fragment ends with cg.output"
    return terminator


def fragment_outputs(fragment: Fragment) -> tuple[SSAValue, ...]:
    """The values a fragment returns."""
    return tuple(fragment_output_op(fragment).outputs)


def fragment_inputs(fragment: Fragment) -> list[InputOp]:
    """The `cg.input` ops directly in a fragment, in program order."""
    return [op for op in fragment.body.block.ops if isinstance(op, InputOp)]


def enclosing_fragments(fragment: Fragment) -> list[Fragment]:
    """The fragment and those around it, outermost first."""
    chain: list[Fragment] = []
    current: Operation | None = fragment
    while isinstance(current, GraphOp | LinearOp):
        chain.append(current)
        current = current.parent_op()
    return chain[::-1]


def reachable_ops(
    values: Iterable[SSAValue],
    extra_operands: Mapping[Operation, Sequence[SSAValue]] | None = None,
    stop: Callable[[SSAValue], bool] | None = None,
) -> list[Operation]:
    """The ops `values` depend on, in a topological order (defs before uses).

    An iterative post-order depth-first walk over operands; each op once.
    `extra_operands` adds dependencies that are not operands (an aliased
    `cg.input` depends on the value it aliases). A value for which `stop` is
    true is a boundary: the walk does not enter the op defining it.
    """
    order: list[Operation] = []
    visited: set[Operation] = set()
    stack: list[tuple[Operation, int]] = []
    for value in values:
        if stop is not None and stop(value):
            continue
        if isinstance(value, OpResult) and value.op not in visited:
            visited.add(value.op)
            stack.append((value.op, 0))
        while stack:
            op, next_operand = stack.pop()
            pushed_child = False
            operands: Sequence[SSAValue] = op.operands
            if extra_operands is not None and op in extra_operands:
                operands = (*op.operands, *extra_operands[op])
            for index in range(next_operand, len(operands)):
                operand = operands[index]
                if stop is not None and stop(operand):
                    continue
                if isinstance(operand, OpResult) and operand.op not in visited:
                    visited.add(operand.op)
                    stack.append((op, index + 1))
                    stack.append((operand.op, 0))
                    pushed_child = True
                    break
            if not pushed_child:
                order.append(op)
    return order


def fragment_signature(fragment: Fragment, extra_outputs: Sequence[SSAValue] = ()) -> list[InputOp]:
    """The inputs of a fragment in the documented order (docs/design.md).

    First the inputs of enclosing fragments that the outputs (and
    `extra_outputs`, values of enclosing fragments computed alongside) reach,
    outermost fragment first, program order within one; then all of the
    fragment's own inputs in program order.
    """
    outputs = [*extra_outputs, *fragment_outputs(fragment)]
    reached = {op for op in reachable_ops(outputs) if isinstance(op, InputOp)}
    signature: list[InputOp] = []
    for enclosing in enclosing_fragments(fragment)[:-1]:
        signature.extend(op for op in fragment_inputs(enclosing) if op in reached)
    signature.extend(fragment_inputs(fragment))
    return signature
