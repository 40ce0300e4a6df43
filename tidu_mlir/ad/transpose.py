"""`linear_transpose`: reverse a linear fragment.

After the linearity check, one reverse walk over the fragment's own ops:
primary ops are fixed values (referenced as they are), each linear op with a
cotangent on some result gets its `transpose_rule` called, and contributions
to the same value are summed by SSA value identity (never by structure) with
the dialect's `accumulate` op, tagged `#cg.linearized<[active, active]>`.
The new fragment is nested in the transposed one, so it can reference the
transposed fragment's fixed values and everything enclosing it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from xdsl.ir import Block, Operation, SSAValue
from xdsl.transforms.dead_code_elimination import is_trivially_dead

from tidu_mlir.ad.context import (
    FragmentBuilder,
    LinearizedGraph,
    attach_linear_fragment,
    check_new_symbol,
    discard,
    module_of,
)
from tidu_mlir.ad.linearity import verify_linearity
from tidu_mlir.diagnostics import OpError
from tidu_mlir.dialects.cg import (
    CotangentKeyAttr,
    GraphOp,
    InputKey,
    InputOp,
    LinearOp,
    OutputOp,
    next_pass_id,
    role_of,
)
from tidu_mlir.graph import (
    enclosing_fragments,
    fragment_inputs,
    fragment_output_op,
    fragment_path,
)
from tidu_mlir.interfaces import ADRuleError, Differentiable

Accumulator = type[Differentiable]


def linear_transpose(
    linear: LinearizedGraph | LinearOp,
    name: str | None = None,
    accumulator: Accumulator | None = None,
) -> LinearizedGraph:
    """Transpose a linear fragment into a new `cg.linear` nested in it.

    Inputs of the result: one cotangent seed `#cg.cotangent<i, N>` per output
    of `linear`'s `cg.output` (its active outputs, in order). Outputs: one per
    input of `linear` (its tangent inputs, in program order), None (inactive)
    where no cotangent flows. `name` defaults to `vjp<N>`; `accumulator` is
    the op class whose `accumulate` sums cotangents when the fragments hold no
    differentiable op to take it from. Raises `OpError` when `linear` is not
    linear (see `verify_linearity`), `ADRuleError` when an op has no transpose
    rule.
    """
    fragment = linear.fragment if isinstance(linear, LinearizedGraph) else linear
    dependent = verify_linearity(fragment)
    module = module_of(fragment)
    pass_id = next_pass_id(module)  # taken (allocated) only once the fragment is built
    sym_name = name if name is not None else f"vjp{pass_id}"
    check_new_symbol(fragment, sym_name)

    block = Block()
    builder = FragmentBuilder("transpose", block, forbidden=dependent)
    try:
        seeds = _seed(fragment, pass_id, builder)
        cotangents = _reverse_walk(fragment, seeds, builder, fallback=accumulator)
    except BaseException:
        discard(block)
        raise
    tangent_outputs = [cotangents.get(op.result) for op in fragment_inputs(fragment)]
    return attach_linear_fragment(
        module, fragment, block, sym_name, pass_id, seeds, tangent_outputs
    )


def _seed(
    fragment: LinearOp, pass_id: int, builder: FragmentBuilder
) -> list[tuple[InputKey, SSAValue]]:
    """One cotangent input per output of the fragment, first in the new block."""
    seeds: list[tuple[InputKey, SSAValue]] = []
    for index, value in enumerate(fragment_output_op(fragment).outputs):
        seed = InputOp(CotangentKeyAttr(index, pass_id), value.type)
        seed.result.name_hint = "ct"
        builder.block.add_op(seed)
        builder.active.add(seed.result)
        seeds.append((seed.key, seed.result))
    return seeds


def _reverse_walk(
    fragment: LinearOp,
    seeds: Sequence[tuple[InputKey, SSAValue]],
    builder: FragmentBuilder,
    fallback: Accumulator | None,
) -> dict[SSAValue, SSAValue]:
    """Propagate cotangents from the outputs back to the fragment's inputs."""
    cotangents = _Cotangents(builder)
    output_op = fragment_output_op(fragment)
    builder.source = output_op
    seed_accumulator = _FallbackAccumulator(fragment, fallback)
    for value, (_, seed) in zip(output_op.outputs, seeds, strict=True):
        owner = value.owner
        accumulator = type(owner) if isinstance(owner, Differentiable) else seed_accumulator
        cotangents.add(value, seed, accumulator)
    for op in reversed(fragment.body.block.ops):
        if isinstance(op, InputOp | OutputOp | GraphOp | LinearOp):
            continue
        role = role_of(op)
        if role is None or not any(role.active_mask):
            continue
        builder.source = op
        result_cotangents = [cotangents.total(result) for result in op.results]
        if all(cotangent is None for cotangent in result_cotangents):
            continue
        if not isinstance(op, Differentiable):
            raise ADRuleError("transpose", op)
        operand_cotangents = builder.check_results(
            op.transpose_rule(builder, result_cotangents), len(op.operands), "cotangent"
        )
        mask = role.active_mask
        for index, (operand, cotangent) in enumerate(
            zip(op.operands, operand_cotangents, strict=True)
        ):
            if cotangent is None:
                continue
            if not mask[index]:
                raise builder.error(f"the rule returned a cotangent for fixed operand #{index}")
            cotangents.add(operand, cotangent, type(op))
    return {
        op.result: total
        for op in fragment_inputs(fragment)
        if (total := cotangents.total(op.result)) is not None
    }


class _Cotangents:
    """The cotangents reaching each value, summed when first read (the walk
    has visited every use of a value by then), all at once by the dialect
    (`accumulate_all`) rather than one addition per use."""

    def __init__(self, builder: FragmentBuilder):
        self.builder = builder
        self.parts: dict[SSAValue, list[SSAValue]] = {}
        self.accumulators: dict[SSAValue, Accumulator | _FallbackAccumulator] = {}
        self.totals: dict[SSAValue, SSAValue] = {}
        self.pending: Counter[SSAValue] = Counter()
        """How many unsummed contributions each value is (a rule may return
        one value as the cotangent of several operands)."""

    def add(
        self,
        value: SSAValue,
        contribution: SSAValue,
        accumulator: Accumulator | _FallbackAccumulator,
    ) -> None:
        assert value not in self.totals, "a cotangent arrived after its sum was read"
        self.parts.setdefault(value, []).append(contribution)
        self.accumulators.setdefault(value, accumulator)
        self.pending[contribution] += 1

    def total(self, value: SSAValue) -> SSAValue | None:
        """The sum of what reached `value`; None when nothing did."""
        if value in self.totals:
            return self.totals[value]
        parts = self.parts.pop(value, None)
        if parts is None:
            return None
        self.pending.subtract(parts)
        total = parts[0]
        if len(parts) > 1:
            accumulator = self.accumulators[value]
            if isinstance(accumulator, _FallbackAccumulator):
                accumulator = accumulator.get()
            total = accumulator.accumulate_all(self.builder, parts)
            self._erase_unused(parts, total)
        self.totals[value] = total
        return total

    def _erase_unused(self, parts: Sequence[SSAValue], total: SSAValue) -> None:
        """Erase the contributions the dialect summed without using them (it
        read their operands instead) and nothing else will read."""
        for part in parts:
            owner = part.owner
            if (
                part is not total
                and not self.pending[part]
                and isinstance(owner, Operation)
                and owner.parent is self.builder.block
                and is_trivially_dead(owner)
            ):
                owner.detach()
                owner.erase()


class _FallbackAccumulator:
    """The accumulator for seeds of outputs not defined by a differentiable op
    (an input returned twice): the class of the first differentiable op in the
    fragment or the fragments enclosing it, else the one the caller gave (a
    graph of no op at all names no dialect)."""

    def __init__(self, fragment: LinearOp, given: Accumulator | None):
        self.fragment = fragment
        self.given = given

    def get(self) -> Accumulator:
        for enclosing in reversed(enclosing_fragments(self.fragment)):
            for op in enclosing.body.block.ops:
                if isinstance(op, Differentiable):
                    return type(op)
        if self.given is not None:
            return self.given
        raise OpError(
            f"cannot accumulate cotangents in {fragment_path(self.fragment)}: no "
            "differentiable op names the dialect's addition (name it with the "
            "pass option add=<op>, e.g. add=prim.add)",
            self.fragment,
        )
