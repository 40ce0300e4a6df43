"""Reverse mode over a recorded tape (`docs/eager.md`, "try_backward").

`try_backward` walks the tape from one output in reverse topological order
(iteratively: tapes of any length). For each node it linearizes the recorded
graph for the seeded output slots with respect to the inputs that require
grad, transposes that linear fragment, and drives a `BackwardExecutor`:
`execute_forward` recovers primal values, `run_transposed_linear` runs the
transposed fragment on the incoming cotangents, `add_operands` sums
cotangents reaching the same user-visible key. Linearizing and transposing
happen once per (graph, seeded slots, inputs requiring grad): the
`BackwardContext` keeps the result.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from xdsl.ir import SSAValue

from tidu_mlir.ad import LinearizedGraph, linear_transpose, linearize
from tidu_mlir.config import LRUCache
from tidu_mlir.dialects import cg
from tidu_mlir.eager.recording import Operand, RecordedGraph, ValueKey
from tidu_mlir.graph import fragment_inputs, fragment_outputs, reachable_ops
from tidu_mlir.interp import evaluate_ops
from tidu_mlir.types import numpy_dtype


@dataclass(frozen=True)
class BackwardPlan:
    """The transposed linear map of one graph for some seeded outputs.

    `linear.tangent_inputs` are the cotangent seeds, one per slot of
    `seed_slots` (the seeded outputs a tangent reaches); `linear.tangent_outputs`
    one per index of `wrt_inputs` (graph inputs requiring grad), None where
    nothing flows.
    """

    linear: LinearizedGraph
    seed_slots: tuple[int, ...]
    wrt_inputs: tuple[int, ...]


PlanKey = tuple[cg.GraphOp, tuple[int, ...], tuple[bool, ...]]


class _NoPlan:
    """What the plan cache holds for "no cotangent flows" (a plan of None)."""


_NO_PLAN = _NoPlan()


@dataclass
class BackwardContext:
    """State shared by backward passes: the plans built so far (the AD context
    of `docs/eager.md`), the least recently used out beyond
    `td.config.eager_cache_size`. Reusing one context never linearizes a
    cached graph twice."""

    plans: LRUCache[PlanKey, BackwardPlan | _NoPlan] = field(
        default_factory=lambda: LRUCache("eager_cache_size")
    )

    def plan(self, node: RecordedGraph, slots: tuple[int, ...]) -> BackwardPlan | None:
        """The plan for seeding `slots` of `node` (None: no cotangent flows)."""
        key = (node.graph, slots, node.requires_grad_mask)
        plan = self.plans.get(key)
        if plan is None:
            plan = build_plan(node.graph, slots, key[2]) or _NO_PLAN
            self.plans[key] = plan
        return plan if isinstance(plan, BackwardPlan) else None


def build_plan(
    graph: cg.GraphOp, slots: tuple[int, ...], requires_grad: tuple[bool, ...]
) -> BackwardPlan | None:
    """Linearize `graph` for `slots` w.r.t. the inputs requiring grad, transpose.

    Raises `ADRuleError` when an op lacks a rule.
    """
    inputs = fragment_inputs(graph)
    wrt = tuple(index for index, flag in enumerate(requires_grad) if flag)
    jvp = linearize(graph, outputs=slots, wrt=[inputs[index].key for index in wrt])
    seed_slots = tuple(
        slot
        for slot, tangent in zip(slots, jvp.tangent_outputs, strict=True)
        if tangent is not None
    )
    if not seed_slots:
        graph.body.block.erase_op(jvp.fragment)  # nothing flows: drop the empty fragment
        return None
    return BackwardPlan(linear_transpose(jvp), seed_slots, wrt)


class BackwardExecutor(Protocol):
    """What the downstream runtime provides to `try_backward`."""

    def execute_forward(
        self, graph: RecordedGraph, initial_data: Mapping[SSAValue, Operand]
    ) -> Mapping[SSAValue, Operand]:
        """Replay a recorded graph: the concrete primal values transpose needs."""
        ...

    def run_transposed_linear(
        self,
        linear: LinearizedGraph,
        cotangent_out: Sequence[Operand | None],
        external_data: Mapping[SSAValue, Operand],
        ctx: BackwardContext,
    ) -> Sequence[Operand | None]:
        """Run a transposed fragment: one cotangent per `linear.tangent_inputs`
        in (None = zero), one per `linear.tangent_outputs` out (None = zero)."""
        ...

    def add_operands(self, a: Operand, b: Operand) -> Operand:
        """Sum two cotangents where several paths meet."""
        ...


def try_backward(
    output_key: ValueKey,
    output_trace: RecordedGraph | None,
    seed: Operand,
    executor: BackwardExecutor,
    ctx: BackwardContext | None = None,
) -> dict[ValueKey, Operand]:
    """Cotangents of the leaves requiring grad, by key, for `seed` on one output.

    `output_trace` is the node that produced `output_key` (None for a leaf,
    whose cotangent is the seed). Raises `ADRuleError` for a missing rule.
    """
    if output_trace is None:
        return {output_key: seed}
    if output_key not in output_trace.output_keys:
        raise ValueError(f"{output_key} is not an output of the given trace")
    context = ctx if ctx is not None else BackwardContext()
    cotangents: dict[ValueKey, Operand] = {output_key: seed}
    for node in reverse_topological_order(output_trace):
        backward_node(node, cotangents, executor, context)
    return cotangents


def reverse_topological_order(root: RecordedGraph) -> list[RecordedGraph]:
    """Nodes reachable from `root` through inputs requiring grad, consumers
    before producers. An iterative post-order walk (no recursion limit)."""
    order: list[RecordedGraph] = []
    visited = {root}
    stack: list[tuple[RecordedGraph, Iterator[RecordedGraph]]] = [(root, iter(root.parents()))]
    while stack:
        node, parents = stack[-1]
        for parent in parents:
            if parent not in visited:
                visited.add(parent)
                stack.append((parent, iter(parent.parents())))
                break
        else:
            stack.pop()
            order.append(node)
    order.reverse()
    return order


def backward_node(
    node: RecordedGraph,
    cotangents: dict[ValueKey, Operand],
    executor: BackwardExecutor,
    ctx: BackwardContext,
) -> None:
    """Move the cotangents of `node`'s outputs (all consumers are done) to its
    inputs requiring grad, accumulating by key."""
    seeds = {
        slot: cotangents.pop(key) for slot, key in enumerate(node.output_keys) if key in cotangents
    }
    if not seeds:
        return
    plan = ctx.plan(node, tuple(seeds))
    if plan is None:
        return
    cotangent_out = [seeds[slot] for slot in plan.seed_slots]
    results = _run_transposed(node, plan.linear, cotangent_out, executor, ctx)
    for index, cotangent in zip(plan.wrt_inputs, results, strict=True):
        if cotangent is None:
            continue
        key = node.inputs[index].key
        existing = cotangents.get(key)
        cotangents[key] = (
            cotangent if existing is None else executor.add_operands(existing, cotangent)
        )


def _run_transposed(
    node: RecordedGraph,
    linear: LinearizedGraph,
    cotangent_out: list[Operand | None],
    executor: BackwardExecutor,
    ctx: BackwardContext,
) -> Sequence[Operand | None]:
    """The executor's `execute_forward` then `run_transposed_linear`, unless the
    executor offers the optional shortcut `run_node(node, linear, seeds)`
    (the frontend's compiled executor takes the node's inputs by position
    instead of replaying the forward graph) and it applies (not None)."""
    run_node = getattr(executor, "run_node", None)
    if run_node is not None and (results := run_node(node, linear, cotangent_out)) is not None:
        return results
    external = executor.execute_forward(node, node.initial_data())
    return executor.run_transposed_linear(linear, cotangent_out, external, ctx)


class EvaluatorExecutor:
    """A `BackwardExecutor` on numpy arrays through the reference evaluator:
    works for any dialect with evaluator implementations (no compilation)."""

    def execute_forward(
        self, graph: RecordedGraph, initial_data: Mapping[SSAValue, Operand]
    ) -> dict[SSAValue, Operand]:
        env = dict(initial_data)
        return dict(evaluate_ops(reachable_ops(fragment_outputs(graph.graph)), env))

    def run_transposed_linear(
        self,
        linear: LinearizedGraph,
        cotangent_out: Sequence[Operand | None],
        external_data: Mapping[SSAValue, Operand],
        ctx: BackwardContext,
    ) -> list[Operand | None]:
        env = dict(external_data)
        for (_, seed), cotangent in zip(linear.tangent_inputs, cotangent_out, strict=True):
            env[seed] = cotangent if cotangent is not None else zeros_like_value(seed)
        outputs = [value for value in linear.tangent_outputs if value is not None]
        evaluate_ops(reachable_ops(outputs), env)
        return [None if value is None else env[value] for value in linear.tangent_outputs]

    def add_operands(self, a: Operand, b: Operand) -> Operand:
        return np.add(a, b)


def zeros_like_value(value: SSAValue) -> np.ndarray:
    """A zero array of a tensor value's shape and dtype."""
    shape = tuple(value.type.get_shape())  # pyright: ignore[reportAttributeAccessIssue]
    element = value.type.get_element_type()  # pyright: ignore[reportAttributeAccessIssue]
    return np.zeros(shape, dtype=numpy_dtype(element))
