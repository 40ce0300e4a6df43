"""`linearize`: forward mode, one new linear fragment per call.

One topological walk over the ops the requested outputs reach (across
enclosing fragments). Each `wrt` key is seeded by a tangent input; each op
with some non-zero operand tangent gets its `jvp_rule` called. Rules reference
primal values directly (the new fragment is nested in the one it
differentiates), so nothing primal is copied.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.ir import Block, Operation, OpResult, SSAValue

from tidu_mlir.ad.context import (
    FragmentBuilder,
    LinearizedGraph,
    Target,
    as_key,
    attach_linear_fragment,
    check_new_symbol,
    discard,
    resolve_target,
)
from tidu_mlir.diagnostics import OpError
from tidu_mlir.dialects.cg import (
    Fragment,
    InputKey,
    InputOp,
    key_spec,
    next_pass_id,
    tangent_of,
)
from tidu_mlir.dialects.prim.types import is_differentiable
from tidu_mlir.graph import (
    enclosing_fragments,
    fragment_inputs,
    fragment_outputs,
    fragment_path,
    reachable_ops,
)
from tidu_mlir.interfaces import ADRuleError, Differentiable


def linearize(
    target: Target,
    outputs: Sequence[int] | None = None,
    wrt: Sequence[InputKey | str] = (),
    aliases: Mapping[InputKey | str, SSAValue] | None = None,
    name: str | None = None,
) -> LinearizedGraph:
    """Build the JVP of a fragment's outputs as a new `cg.linear` fragment.

    `target`: a fragment or `(module, "@f::@jvp1")`. `outputs`: indices of the
    fragment's outputs to differentiate (default all). `wrt`: input keys (or
    their spellings `x`, `tangent(x,1)`), each seeded by one tangent input
    `#cg.tangent<key, N>` in this order, used or not. `aliases`: the
    checkpointing hook; `{key: value}` treats the `cg.input` with that key as
    identical to `value` (an existing value of the fragment or an enclosing
    one) for differentiation: its tangent is the tangent of `value`, computed
    in the same walk. `name`: the new fragment's symbol (default `jvp<N>`).

    The new fragment is inserted just before the target's `cg.output`; the
    pass id N comes from the module (`cg.next_pass_id`).
    """
    module, fragment = resolve_target(target)
    output_values = fragment_outputs(fragment)
    indices = _output_indices(fragment, outputs, len(output_values))
    inputs_by_key = _known_inputs(fragment)
    wrt_keys = _wrt_keys(fragment, wrt, inputs_by_key)
    alias_map = _aliases(fragment, aliases, inputs_by_key, wrt_keys)
    pass_id = next_pass_id(module)  # taken (allocated) only once the fragment is built
    sym_name = name if name is not None else f"jvp{pass_id}"
    check_new_symbol(fragment, sym_name)

    block = Block()
    tangent_inputs: list[tuple[InputKey, SSAValue]] = []
    tangents: dict[SSAValue, SSAValue] = {}
    for key in wrt_keys:
        primal_inputs = inputs_by_key[key]
        seed = InputOp(tangent_of(key, pass_id), primal_inputs[0].result.type)
        seed.result.name_hint = _tangent_hint(key)
        block.add_op(seed)
        tangent_inputs.append((seed.key, seed.result))
        for primal in primal_inputs:
            tangents[primal.result] = seed.result

    builder = FragmentBuilder("jvp", block, active=(seed for _, seed in tangent_inputs))
    requested = [output_values[index] for index in indices]
    try:
        _propagate(requested, alias_map, tangents, builder)
    except BaseException:
        discard(block)
        raise
    tangent_outputs = [tangents.get(value) for value in requested]
    return attach_linear_fragment(
        module, fragment, block, sym_name, pass_id, tangent_inputs, tangent_outputs
    )


def _propagate(
    requested: Sequence[SSAValue],
    aliases: Mapping[InputOp, SSAValue],
    tangents: dict[SSAValue, SSAValue],
    builder: FragmentBuilder,
) -> None:
    """The single topological walk: call each op's JVP rule where a tangent flows."""
    extra: dict[Operation, Sequence[SSAValue]] = {op: (value,) for op, value in aliases.items()}
    done: set[Operation] = set()
    for op in reachable_ops(requested, extra):
        done.add(op)
        if isinstance(op, InputOp):
            if op in aliases:
                _take_alias_tangent(op, aliases[op], tangents, done)
            continue
        operand_tangents = [tangents.get(value) for value in op.operands]
        if all(tangent is None for tangent in operand_tangents) or not any(
            is_differentiable(result.type) for result in op.results
        ):
            continue  # no tangent flows in, or only into integer/boolean results
        if not isinstance(op, Differentiable):
            raise ADRuleError("jvp", op)
        builder.source = op
        result_tangents = builder.check_results(
            op.jvp_rule(builder, operand_tangents), len(op.results), "tangent"
        )
        for result, tangent in zip(op.results, result_tangents, strict=True):
            if tangent is not None and is_differentiable(result.type):
                tangents[result] = tangent


def _take_alias_tangent(
    op: InputOp, value: SSAValue, tangents: dict[SSAValue, SSAValue], done: set[Operation]
) -> None:
    if isinstance(value, OpResult) and value.op not in done:
        raise OpError(
            f"alias of input {key_spec(op.key)} depends on that input (an alias cycle)", op
        )
    if (tangent := tangents.get(value)) is not None:
        tangents[op.result] = tangent


def _output_indices(
    fragment: Fragment, outputs: Sequence[int] | None, count: int
) -> tuple[int, ...]:
    if outputs is None:
        return tuple(range(count))
    for index in outputs:
        if not 0 <= index < count:
            raise OpError(
                f"output index {index} out of range: {fragment_path(fragment)} has "
                f"{count} output(s)",
                fragment,
            )
    return tuple(outputs)


def _known_inputs(fragment: Fragment) -> dict[InputKey, list[InputOp]]:
    """The inputs of the fragment and of those enclosing it, by key."""
    by_key: dict[InputKey, list[InputOp]] = {}
    for enclosing in enclosing_fragments(fragment):
        for op in fragment_inputs(enclosing):
            by_key.setdefault(op.key, []).append(op)
    return by_key


def _unknown_key_error(
    fragment: Fragment, what: str, key: InputKey, known: Mapping[InputKey, object]
) -> OpError:
    existing = ", ".join(key_spec(k) for k in known) or "none"
    return OpError(
        f"unknown {what} key '{key_spec(key)}' for {fragment_path(fragment)}; inputs: {existing}",
        fragment,
    )


def _wrt_keys(
    fragment: Fragment,
    wrt: Sequence[InputKey | str],
    known: Mapping[InputKey, list[InputOp]],
) -> list[InputKey]:
    keys: list[InputKey] = []
    for spec in wrt:
        try:
            key = as_key(spec)
        except ValueError as error:
            raise OpError(str(error), fragment) from error
        if key not in known:
            raise _unknown_key_error(fragment, "wrt", key, known)
        if key in keys:
            raise OpError(f"wrt key '{key_spec(key)}' is given twice", fragment)
        if not is_differentiable(input_type := known[key][0].result.type):
            raise OpError(
                f"wrt key '{key_spec(key)}' has type {input_type}: integer and boolean "
                "inputs have no tangent (differentiate with respect to float or complex inputs)",
                fragment,
            )
        keys.append(key)
    return keys


def _aliases(
    fragment: Fragment,
    aliases: Mapping[InputKey | str, SSAValue] | None,
    known: Mapping[InputKey, list[InputOp]],
    wrt_keys: Sequence[InputKey],
) -> dict[InputOp, SSAValue]:
    """Map each aliased `cg.input` op to the value it stands for."""
    result: dict[InputOp, SSAValue] = {}
    if not aliases:
        return result
    chain = set(enclosing_fragments(fragment))
    for spec, value in aliases.items():
        key = as_key(spec)
        if key not in known:
            raise _unknown_key_error(fragment, "alias", key, known)
        if key in wrt_keys:
            raise OpError(f"key '{key_spec(key)}' is both in wrt and aliased", fragment)
        owner = value.owner.parent_op() if isinstance(value, OpResult) else None
        if owner not in chain:
            raise OpError(
                f"the alias of '{key_spec(key)}' must be a value of "
                f"{fragment_path(fragment)} or of a fragment enclosing it",
                fragment,
            )
        for op in known[key]:
            result[op] = value
    return result


def _tangent_hint(key: InputKey) -> str | None:
    """`dx` for the tangent of user key `x` (a readable SSA name), else None."""
    spec = key_spec(key)
    return f"d{spec}" if spec.isidentifier() else None
