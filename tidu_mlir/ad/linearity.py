"""The linearity check (`verify-linearity`): a linear fragment is linear in its
own inputs, op by op.

One forward walk over the fragment's own ops propagates "depends on an input
of this fragment" (its inputs are the tangent or cotangent seeds). Then:
an op with a dependent operand must carry `#cg.linearized<mask>` with mask =
exactly its dependent operands, and its class must say `is_linear_in(mask)`;
an op without a role must have no dependent operand; every output must depend
on an input (a constant output would make the map affine, not linear).
Nested fragments are checked on their own; ops of enclosing fragments never
depend on this fragment's inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from tidu_mlir.diagnostics import OpError
from tidu_mlir.dialects.cg import GraphOp, InputOp, LinearOp, OutputOp, role_of
from tidu_mlir.graph import all_fragments, fragment_inputs, fragment_path
from tidu_mlir.interfaces import Differentiable


def verify_linearity(fragment: LinearOp) -> set[SSAValue]:
    """Check `fragment` is linear in its inputs; raise `OpError` naming the
    offending op otherwise. Returns the values that depend on the inputs."""
    dependent: set[SSAValue] = {op.result for op in fragment_inputs(fragment)}
    path = fragment_path(fragment)
    for op in fragment.body.block.ops:
        if isinstance(op, InputOp | GraphOp | LinearOp):
            continue
        if isinstance(op, OutputOp):
            _check_outputs(op, dependent, path)
            continue
        depends = tuple(value in dependent for value in op.operands)
        role = role_of(op)
        if role is None:
            if any(depends):
                raise OpError(
                    f"'{op.name}' has no linearized role (it is primary) but "
                    f"{_depend(depends)} on a tangent input of {path}",
                    op,
                )
            continue
        mask = role.active_mask
        if mask != depends:
            raise OpError(
                f"the role of '{op.name}' marks {_operand_list(mask)} active, but "
                f"{_depend(depends)} on a tangent input of {path}",
                op,
            )
        if not any(mask):
            continue
        if not isinstance(op, Differentiable):
            raise OpError(f"'{op.name}' has no AD rules, so it is not known to be linear", op)
        if not op.is_linear_in(mask):
            note = op.nonlinearity_note()
            detail = f": {note}" if note else ""
            raise OpError(f"'{op.name}' is not linear in {_operand_list(mask)}{detail}", op)
        dependent.update(op.results)
    return dependent


def verify_module_linearity(module: ModuleOp) -> None:
    """Check every `cg.linear` fragment of the module."""
    for fragment in all_fragments(module):
        if isinstance(fragment, LinearOp):
            verify_linearity(fragment)


def _check_outputs(op: OutputOp, dependent: set[SSAValue], path: str) -> None:
    for index, value in enumerate(op.outputs):
        if value not in dependent:
            raise OpError(
                f"output #{index} of {path} does not depend on a tangent input "
                "(a constant output is not linear)",
                op,
            )


def _operand_list(flags: Sequence[bool]) -> str:
    """`operands #0, #2` for the set flags (`no operand` when none)."""
    indices = [f"#{index}" for index, flag in enumerate(flags) if flag]
    if not indices:
        return "no operand"
    return ("operand " if len(indices) == 1 else "operands ") + ", ".join(indices)


def _depend(flags: Sequence[bool]) -> str:
    """`operand #1 depends` / `operands #0, #1 depend` / `no operand depends`."""
    return _operand_list(flags) + (" depend" if sum(flags) > 1 else " depends")
