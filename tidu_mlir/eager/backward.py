"""Reverse mode over a recorded tape (`docs/eager.md`, "try_backward").

`try_backward` walks the tape from one output in reverse topological order
(iteratively: tapes of any length). For each node it linearizes the recorded
graph for the seeded output slots with respect to the inputs that require
grad, transposes that linear fragment, and drives a `BackwardExecutor`:
`execute_forward` recovers primal values, `run_transposed_linear` runs the
transposed fragment on the incoming cotangents, `add_operands` sums
cotangents reaching the same user-visible key. Linearizing and transposing
happen once per (graph, seeded slots, inputs requiring grad): the
`BackwardContext` keeps the result. A pass looks each distinct plan up once
(with the executor's optional shortcut `node_runner` for it); per node it
only moves cotangents and runs the plan.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from xdsl.ir import SSAValue

from tidu_mlir.ad import LinearizedGraph, linear_transpose, linearize
from tidu_mlir.config import LRUCache
from tidu_mlir.dialects import cg
from tidu_mlir.eager.recording import (
    EagerInput,
    GraphInterface,
    Operand,
    RecordedGraph,
    ValueKey,
)
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

StepKey = tuple[GraphInterface, tuple[int, ...], tuple[bool, ...]]
"""A plan key within one backward pass: the graph by its interface (hashed by
identity, in C; an xDSL op hashes in Python), looked up per node."""


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
    steps: dict[StepKey, NodeStep | _NoPlan] = {}
    with np.errstate(all="ignore"):  # inf and nan are cotangents like any other
        for node in reverse_topological_order(output_trace):
            backward_node(node, cotangents, executor, context, steps)
    return cotangents


def reverse_topological_order(root: RecordedGraph) -> list[RecordedGraph]:
    """Nodes reachable from `root` through inputs requiring grad, consumers
    before producers. An iterative post-order walk (no recursion limit)."""
    order: list[RecordedGraph] = []
    visited = {root}
    stack: list[tuple[RecordedGraph, Iterator[EagerInput]]] = [(root, iter(root.inputs))]
    while stack:
        node, inputs = stack[-1]
        for value in inputs:  # the producers of inputs that cotangents flow into
            parent = value.trace
            if parent is not None and value.requires_grad and parent not in visited:
                visited.add(parent)
                stack.append((parent, iter(parent.inputs)))
                break
        else:
            stack.pop()
            order.append(node)
    order.reverse()
    return order


NodeRunner = Callable[[RecordedGraph, list[Operand]], Sequence[Operand | None] | None]
"""An executor's optional shortcut for one plan (`node_runner`): the
cotangents of a node's inputs from its seeds, or None (take the general path)."""

NodeStep = tuple[BackwardPlan, NodeRunner | None]
"""How a backward pass runs the nodes of one plan key: the plan, and the
executor's shortcut for it if it offers one."""

_FIRST_SLOT = (0,)


def backward_node(
    node: RecordedGraph,
    cotangents: dict[ValueKey, Operand],
    executor: BackwardExecutor,
    ctx: BackwardContext,
    steps: dict[StepKey, NodeStep | _NoPlan],
) -> None:
    """Move the cotangents of `node`'s outputs (all consumers are done) to its
    inputs requiring grad, accumulating by key. `steps` holds what this pass
    has looked up per plan key (one lookup per distinct plan and pass).

    Runs once per node: a single output is taken without building the
    general slot lists, and no `zip(strict=True)` (each costs ~0.4 µs)."""
    keys = node.output_keys
    if len(keys) == 1:
        cotangent = cotangents.pop(keys[0], None)
        if cotangent is None:
            return
        slots, seeds = _FIRST_SLOT, [cotangent]
    else:
        seeded: list[int] = []
        seeds = []
        for slot, key in enumerate(keys):
            if key in cotangents:
                seeded.append(slot)
                seeds.append(cotangents.pop(key))
        if not seeds:
            return
        slots = tuple(seeded)
    step_key = (node.interface, slots, node.requires_grad_mask)
    step = steps.get(step_key)
    if step is None:
        step = steps[step_key] = _node_step(node, slots, executor, ctx)
    if isinstance(step, _NoPlan):
        return
    plan, run = step
    if plan.seed_slots != slots:  # seeded outputs no tangent reaches are dropped
        seeds = [seeds[slots.index(slot)] for slot in plan.seed_slots]
    results = None if run is None else run(node, seeds)
    if results is None:
        external = executor.execute_forward(node, node.initial_data())
        results = executor.run_transposed_linear(plan.linear, seeds, external, ctx)
    inputs = node.inputs
    for position, index in enumerate(plan.wrt_inputs):
        cotangent = results[position]
        if cotangent is None:
            continue
        key = inputs[index].key
        existing = cotangents.get(key)
        cotangents[key] = (
            cotangent if existing is None else executor.add_operands(existing, cotangent)
        )


def _node_step(
    node: RecordedGraph, slots: tuple[int, ...], executor: BackwardExecutor, ctx: BackwardContext
) -> NodeStep | _NoPlan:
    """The plan for seeding `slots` of `node` (`_NO_PLAN`: no cotangent
    flows), with the executor's optional shortcut `node_runner(linear)` for
    it: the frontend's compiled executor takes the node's inputs by position
    instead of replaying the forward graph (`execute_forward` then
    `run_transposed_linear`)."""
    plan = ctx.plan(node, slots)
    if plan is None:
        return _NO_PLAN
    node_runner = getattr(executor, "node_runner", None)
    return plan, None if node_runner is None else node_runner(plan.linear)


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
