"""`materialize`: turn a fragment and everything it references into one
self-contained `func.func`.

Arguments follow `graph.fragment_signature` (docs/design.md): each carries its
input key in its argument attributes (`{cg.key = #cg.key<"x">}`). Results are
the fragment's `cg.output` values. Every op the outputs reach, in any
fragment, is cloned once in topological order, then xDSL's CSE runs on the
function: ops that are structurally identical (name, properties, operands and
attributes, so the role too) across fragments are merged. Roles stay on the
cloned ops (lowering ignores them); keeping them means CSE never merges a
primary op with a linearized one (a linear op must stay linear).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FunctionType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region, SSAValue
from xdsl.transforms.common_subexpression_elimination import cse

from tidu_mlir.ad.context import Target, check_new_symbol, resolve_target
from tidu_mlir.dialects.cg import Fragment, InputOp, KeyAttr
from tidu_mlir.graph import fragment_outputs, fragment_path, fragment_signature, reachable_ops

KEY_ARG_ATTR = "cg.key"
"""The argument attribute of a materialized function that holds the input key."""


def default_function_name(fragment: Fragment) -> str:
    """`f_jvp1` for `@f::@jvp1`."""
    return fragment_path(fragment).replace("::", "_").replace("@", "")


def materialize(
    target: Target, name: str | None = None, extra_outputs: Sequence[SSAValue] = ()
) -> FuncOp:
    """Add `func.func @name` computing the fragment's outputs from its signature
    inputs at the end of the module, and return it.

    `extra_outputs` (values of enclosing fragments, e.g. the primal outputs of
    a JVP) are returned first, computed in the same function so the work they
    share with the fragment's outputs is done once.
    """
    module, fragment = resolve_target(target)
    sym_name = name if name is not None else default_function_name(fragment)
    check_new_symbol(module, sym_name)
    signature = fragment_signature(fragment, extra_outputs)
    outputs = [*extra_outputs, *fragment_outputs(fragment)]
    block = Block(arg_types=[op.result.type for op in signature])
    mapping: dict[SSAValue, SSAValue] = {}
    for op, argument in zip(signature, block.args, strict=True):
        mapping[op.result] = argument
        if isinstance(op.key, KeyAttr) and op.key.key_name.data.isidentifier():
            argument.name_hint = op.key.key_name.data
    for op in reachable_ops(outputs):
        if isinstance(op, InputOp):
            assert op.result in mapping, "the signature holds every reachable input"
            continue
        block.add_op(op.clone(value_mapper=mapping))
    results = [mapping[value] for value in outputs]
    block.add_op(ReturnOp(*results))
    function = FuncOp(
        sym_name,
        FunctionType.from_lists(block.arg_types, [value.type for value in results]),
        Region(block),
        arg_attrs=ArrayAttr(DictionaryAttr({KEY_ARG_ATTR: op.key}) for op in signature),
    )
    function.location = fragment.location
    module.body.block.add_op(function)
    cse(function)
    return function
