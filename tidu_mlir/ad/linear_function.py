"""Turning a traced function that should be linear into a `cg.linear` fragment.

`td.linear_transpose(f_lin, ...)` traces an ordinary Python function; to
transpose it, its graph becomes a linear fragment: the chosen inputs are its
tangent inputs and every op gets the role that dependence on them implies.
`linear_transpose` then runs `verify-linearity` first, so a function that is
not linear is refused with the verifier's message naming the op.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Block, Region, SSAValue

from tidu_mlir.dialects.cg import (
    NEXT_PASS_ID_ATTR,
    GraphOp,
    InputKey,
    InputOp,
    LinearOp,
    OutputOp,
    allocate_pass_id,
    set_linearized_role,
)
from tidu_mlir.graph import fragment_output_op


def linear_fragment_from_graph(
    module: ModuleOp, graph: GraphOp, linear_keys: Sequence[InputKey], name: str = "linear"
) -> LinearOp:
    """Move the body of `graph` into a new `cg.linear @name` nested in it.

    Inputs keyed by `linear_keys` become the fragment's tangent inputs; other
    inputs stay in `graph` as fixed values. Ops that depend on a tangent input
    are tagged `#cg.linearized<mask>` (mask = which operands depend on one).
    The fragment's outputs are the graph's outputs; `graph` then returns nothing.
    """
    if NEXT_PASS_ID_ATTR not in module.attributes:
        module.attributes[NEXT_PASS_ID_ATTR] = IntegerAttr(1, i64)
    pass_id = allocate_pass_id(module)
    old_output = fragment_output_op(graph)
    outputs = list(old_output.outputs)
    old_output.detach()
    old_output.erase()
    keys = set(linear_keys)
    body = Block()
    dependent: set[SSAValue] = set()
    for op in list(graph.body.block.ops):
        if isinstance(op, InputOp) and op.key not in keys:
            continue
        op.detach()
        body.add_op(op)
        if isinstance(op, InputOp):
            dependent.add(op.result)
            continue
        mask = [operand in dependent for operand in op.operands]
        if any(mask):
            set_linearized_role(op, mask)
            dependent.update(op.results)
    body.add_op(OutputOp(outputs))
    linear = LinearOp(name, pass_id, [True] * len(outputs), Region(body))
    graph.body.block.add_op(linear)
    graph.body.block.add_op(OutputOp([]))
    return linear
