"""Structured control flow for traced functions: `scan`, `fori_loop`, `cond`
and `switch` (`td.lax`).

`scan(f, init, xs)` traces `f` ONCE, on one slice of `xs` and the carry, into
the body of a `prim.scan`, so the IR, the compile time and the derivatives'
IR do not grow with the trip count. Pytrees are accepted for the carry, `xs`
and the per-iteration results `ys`. What the body reads from outside (tracers
of enclosing traces, arrays it closes over) becomes the op's `consts`.

`cond(pred, true_fun, false_fun, *operands)` traces both branches into the
two regions of a `prim.cond` (each branch's closures are arguments of both);
`switch` is a chain of conds. A Python bool (or int) predicate just calls the
chosen branch, as JAX does.

Outside any trace (concrete arrays), the same loop is traced and run by the
reference evaluator, so both paths compute the same thing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType, i1, i32
from xdsl.ir import Attribute, Block, Region, SSAValue

from tidu_mlir.dialects import cg, prim
from tidu_mlir.graph import fragment_inputs, fragment_outputs
from tidu_mlir.interp import evaluate_fragment
from tidu_mlir.tracing import (
    TRACEABLE_DTYPES,
    ArraySpec,
    Trace,
    TracedFunction,
    Tracer,
    as_tracer,
    innermost_trace,
    trace_function,
)
from tidu_mlir.tree_util import PyTreeDef, tree_flatten, tree_structure, tree_unflatten

__all__ = ["cond", "fori_loop", "scan", "switch", "while_loop"]


def scan(
    f: Callable[[Any, Any], tuple[Any, Any]],
    init: Any,
    xs: Any = None,
    length: int | None = None,
    reverse: bool = False,
) -> tuple[Any, Any]:
    """`jax.lax.scan`: `carry, y = f(carry, x)` for each slice `x` of `xs` along
    its leading axis (last to first with `reverse`); returns the final carry
    and the `y`s stacked along a new leading axis. `length` is needed when
    `xs` is None (or has no leaves)."""
    xs_leaves, xs_tree = tree_flatten(xs)
    trip_count = _trip_count(xs_leaves, length)
    outer = innermost_trace()
    if outer is None:
        return _run_concrete(f, init, xs, trip_count, reverse)
    init_leaves, init_tree = tree_flatten(init)
    carries = [as_tracer(outer, leaf) for leaf in init_leaves]
    scanned = [as_tracer(outer, leaf) for leaf in xs_leaves]
    body = _BodyTrace(f, init_tree, xs_tree, [_spec(c) for c in carries])
    traced = trace_function(
        body, [*body.carry_specs, *(ArraySpec(x.shape[1:], x.dtype) for x in scanned)], "body"
    )
    consts = _bound_values(outer, traced)
    op = prim.ScanOp(
        [c.value for c in carries],
        [x.value for x in scanned],
        consts,
        _region_of(traced),
        trip_count,
        reverse,
    )
    outer.emit(op)
    final = tree_unflatten(init_tree, [Tracer(v, outer) for v in op.carries])
    assert body.ys_tree is not None
    return final, tree_unflatten(body.ys_tree, [Tracer(v, outer) for v in op.ys])


def fori_loop(lower: Any, upper: Any, body_fun: Callable[[Any, Any], Any], init_val: Any) -> Any:
    """`jax.lax.fori_loop`: `val = body_fun(i, val)` for `i` in
    `range(lower, upper)`. With Python int bounds, a `scan` carrying the index
    (every transform goes through it); with a traced bound (a 0-d integer or
    real array), a `while_loop` on the index, as in JAX (forward mode only).
    The index is a weakly typed 0-d int64 array (JAX's weak int32): `x[i]`
    indexes, and a float32 carry times `i` stays float32."""
    if isinstance(lower, Tracer) or isinstance(upper, Tracer):
        return _traced_bounds_loop(lower, upper, body_fun, init_val)

    def step(carry: tuple[Any, Any], _: None) -> tuple[tuple[Any, Any], None]:
        index = _weakly_typed(carry[0])
        return (index + 1, body_fun(index, carry[1])), None

    start = np.int64(int(lower))
    (_, final), _ = scan(step, (start, init_val), None, length=max(int(upper) - int(lower), 0))
    return final


def _traced_bounds_loop(
    lower: Any, upper: Any, body_fun: Callable[[Any, Any], Any], init_val: Any
) -> Any:
    """`fori_loop` with a traced bound: a while loop carrying the index."""
    for bound in (lower, upper):
        if isinstance(bound, Tracer) and (bound.shape or bound.dtype.kind not in "if"):
            raise TypeError(
                f"fori_loop bounds must be ints or 0-d integer or real arrays, got shape "
                f"{bound.shape} and dtype {bound.dtype}"
            )
    integral = all(not isinstance(b, Tracer) or b.dtype.kind == "i" for b in (lower, upper))

    def step(state: tuple[Any, Any]) -> tuple[Any, Any]:
        index = _weakly_typed(state[0])
        return index + 1, body_fun(index, state[1])

    if isinstance(lower, Tracer):
        start = lower if integral else lower * 1.0
    else:
        start = np.int64(lower) if integral else np.float64(lower)
    _, final = while_loop(lambda state: state[0] < upper, step, (start, init_val))
    return final


def _weakly_typed(index: Tracer) -> Tracer:
    """The loop index as a weak tracer (it promotes like a Python number)."""
    return Tracer(index.value, index.trace, weak=True)


def while_loop(
    cond_fun: Callable[[Any], Any],
    body_fun: Callable[[Any], Any],
    init_val: Any,
    *,
    max_steps: int | None = None,
) -> Any:
    """`jax.lax.while_loop`: `val = body_fun(val)` while `cond_fun(val)`; the
    final `val` (a pytree). `cond_fun` returns a 0-d boolean.

    Without `max_steps` it is a `prim.while`: the trip count is free; forward
    and reverse mode go through it (unlike JAX: reverse mode records each
    iteration's residuals in tapes that grow as the loop runs, then runs the
    transposed body as many times, backwards; higher orders compose). With
    `max_steps` (a tidu extension) it is a
    `scan` of `max_steps` steps, each `cond(cond_fun(val), body_fun,
    identity, val)`: the body runs only while `cond_fun` holds, every mode
    goes through it, the residuals of every step stored (memory bounded by
    `max_steps`). If
    `cond_fun` still holds after `max_steps` steps, using the result raises
    `RuntimeError` at run time (a `prim.check` on every leaf, also on the
    derivatives taken through it): never a silently truncated loop."""
    if max_steps is not None:
        return _bounded_while(cond_fun, body_fun, init_val, int(max_steps))
    outer = innermost_trace()
    if outer is None:
        return _run_concrete_while(cond_fun, body_fun, init_val)
    leaves, tree = tree_flatten(init_val)
    carries = [as_tracer(outer, leaf) for leaf in leaves]
    specs = [_spec(c) for c in carries]
    before = _BranchTrace(cond_fun, tree_structure((init_val,)))
    body = _BodyTrace(lambda c, _: (body_fun(c), None), tree, tree_structure(None), specs)
    traced_cond = trace_function(before, specs, "cond")
    traced_body = trace_function(body, specs, "body")
    predicate = fragment_outputs(traced_cond.graph)
    if len(predicate) != 1 or predicate[0].type != TensorType(i1, []):
        got = ", ".join(str(v.type) for v in predicate)
        raise TypeError(f"while_loop's cond_fun must return a 0-d boolean, got {got}")
    bound_cond, bound_body = (_bound_values(outer, t) for t in (traced_cond, traced_body))
    values = [*(c.value for c in carries), *bound_cond, *bound_body]
    types = [v.type for v in values]
    own = len(carries)
    cond_positions = range(own + len(bound_cond))
    body_positions = [*range(own), *range(own + len(bound_cond), len(values))]
    op = prim.WhileOp(
        values[:own],
        values[own:],
        _region_of(traced_cond, types, cond_positions),
        _region_of(traced_body, types, body_positions),
    )
    outer.emit(op)
    return tree_unflatten(tree, [Tracer(v, outer) for v in op.carries])


def _bounded_while(
    cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any], init_val: Any, max_steps: int
) -> Any:
    """`while_loop` with `max_steps`: a scan of conditional steps, then a
    `prim.check` on every leaf that `cond_fun` no longer holds (a run-time
    `RuntimeError` past the bound, never a truncated result)."""
    if max_steps < 0:
        raise ValueError(f"while_loop: max_steps must be non-negative, got {max_steps}")

    def step(val: Any, _: None) -> tuple[Any, None]:
        return cond(cond_fun(val), body_fun, lambda v: v, val), None

    final, _ = scan(step, init_val, None, length=max_steps)
    message = (
        f"while_loop: the condition still holds after max_steps={max_steps} steps; raise max_steps"
    )
    still = cond_fun(final)
    outer = innermost_trace()
    if outer is None or not isinstance(still, Tracer):
        if _static_truth(still):
            raise prim.check_failure(message)
        return final
    flag = outer.emit(prim.ConvertOp(as_tracer(outer, still).value, i32)).results[0]
    zero = outer.emit(prim.ConstantOp.from_value(np.int32(0), TensorType(i32, []))).results[0]
    ok = outer.emit(prim.CompareOp("eq", flag, zero)).results[0]
    leaves, tree = tree_flatten(final)
    checked = [
        Tracer(
            outer.emit(prim.CheckOp(ok, as_tracer(outer, leaf).value, message)).results[0], outer
        )
        for leaf in leaves
    ]
    return tree_unflatten(tree, checked)


def cond(
    pred: Any, true_fun: Callable[..., Any], false_fun: Callable[..., Any], *operands: Any
) -> Any:
    """`jax.lax.cond`: `true_fun(*operands)` if `pred` else `false_fun(*operands)`.
    A traced `pred` must be a 0-d boolean (e.g. `x > 0`); both branches are
    traced and must return the same structure, shapes and dtypes."""
    if not isinstance(pred, Tracer):
        return (true_fun if _static_truth(pred) else false_fun)(*operands)
    if pred.shape or pred.dtype != np.bool_:
        raise TypeError(
            f"cond needs a 0-d boolean predicate (e.g. x > 0), got shape {pred.shape} "
            f"and dtype {pred.dtype}"
        )
    outer = innermost_trace()
    assert outer is not None, "a tracer exists only inside a trace"
    leaves, tree = tree_flatten(operands)
    args = [as_tracer(outer, leaf) for leaf in leaves]
    specs = [_spec(a) for a in args]
    branches = [_BranchTrace(fn, tree) for fn in (true_fun, false_fun)]
    traced = [trace_function(branch, specs, "branch") for branch in branches]
    _check_same_results(branches, traced)
    bound_true, bound_false = (_bound_values(outer, t) for t in traced)
    values = [*(a.value for a in args), *bound_true, *bound_false]
    types = [v.type for v in values]
    own, skipped = len(args), len(bound_true)
    true_positions = range(own + len(bound_true))
    false_positions = [*range(own), *range(own + skipped, len(values))]
    regions = [
        _region_of(t, types, positions)
        for t, positions in zip(traced, (true_positions, false_positions), strict=True)
    ]
    op = prim.CondOp(outer.adopt(pred).value, values, *regions)
    outer.emit(op)
    assert branches[0].out_tree is not None
    return tree_unflatten(branches[0].out_tree, [Tracer(v, outer) for v in op.outputs])


def switch(index: Any, branches: Sequence[Callable[..., Any]], *operands: Any) -> Any:
    """`jax.lax.switch`: `branches[index](*operands)`, the index clamped to
    the range of `branches`. A traced index is a 0-d integer (as in JAX) or
    real array, compared against each boundary by a chain of `cond` calls."""
    if not branches:
        raise ValueError("switch needs at least one branch")
    if not isinstance(index, Tracer):
        return branches[min(max(int(index), 0), len(branches) - 1)](*operands)
    if index.shape or index.dtype.kind not in "if":
        raise TypeError(
            f"switch needs a 0-d integer or real index, got shape {index.shape} and "
            f"dtype {index.dtype}"
        )
    if len(branches) == 1:
        return branches[0](*operands)
    first, rest = branches[0], branches[1:]
    return cond(
        index < 0.5,
        first,
        lambda *ops: switch(index - 1.0, rest, *ops),
        *operands,
    )


def _static_truth(pred: Any) -> bool:
    array = np.asarray(pred)
    if array.shape:
        raise TypeError(f"cond needs a scalar predicate, got shape {array.shape}")
    return bool(array)


class _BranchTrace:
    """A branch as a function of flat operand leaves returning flat leaves."""

    def __init__(self, fn: Callable[..., Any], tree: PyTreeDef):
        self.fn = fn
        self.tree = tree
        self.out_tree: PyTreeDef | None = None

    def __call__(self, *leaves: Tracer) -> list[Any]:
        result = self.fn(*tree_unflatten(self.tree, leaves))
        flat, self.out_tree = tree_flatten(result)
        return flat


def _check_same_results(branches: Sequence[_BranchTrace], traced: Sequence[TracedFunction]) -> None:
    true_tree, false_tree = (b.out_tree for b in branches)
    if true_tree != false_tree:
        raise TypeError(f"cond branches return different structures: {true_tree} and {false_tree}")
    outputs = [fragment_outputs(t.graph) for t in traced]
    for index, (a, b) in enumerate(zip(*outputs, strict=True)):
        if a.type != b.type:
            first, second = ArraySpec.of_value(a), ArraySpec.of_value(b)
            raise TypeError(
                f"cond branches return different types for output leaf #{index}: "
                f"shape {first.shape} dtype {first.dtype} and shape {second.shape} "
                f"dtype {second.dtype}"
            )


class _BodyTrace:
    """`f` as a function of flat leaves (carry leaves, then slice leaves) that
    returns flat leaves (new carry leaves, then y leaves), checking the carry
    keeps its structure, shapes and dtypes."""

    def __init__(
        self,
        f: Callable[[Any, Any], tuple[Any, Any]],
        init_tree: PyTreeDef,
        xs_tree: PyTreeDef,
        carry_specs: Sequence[ArraySpec],
    ):
        self.f = f
        self.init_tree = init_tree
        self.xs_tree = xs_tree
        self.carry_specs = list(carry_specs)
        self.ys_tree: PyTreeDef | None = None

    def __call__(self, *leaves: Tracer) -> list[Any]:
        count = len(self.carry_specs)
        carry = tree_unflatten(self.init_tree, leaves[:count])
        x = tree_unflatten(self.xs_tree, leaves[count:])
        result = self.f(carry, x)
        if not isinstance(result, tuple) or len(result) != 2:
            raise TypeError(
                f"the scanned function must return a pair (carry, y), got {type(result).__name__}"
            )
        new_carry, y = result
        carry_leaves, carry_tree = tree_flatten(new_carry)
        if carry_tree != self.init_tree:
            raise TypeError(
                f"the scanned function returns a carry of structure {carry_tree}, "
                f"but the initial carry has structure {self.init_tree}"
            )
        for index, (leaf, spec) in enumerate(zip(carry_leaves, self.carry_specs, strict=True)):
            got = _spec(leaf)
            if got != spec:
                raise TypeError(
                    f"the scanned function returns carry leaf #{index} of shape {got.shape} "
                    f"and dtype {got.dtype}, but the initial carry leaf has shape "
                    f"{spec.shape} and dtype {spec.dtype}"
                )
        y_leaves, self.ys_tree = tree_flatten(y)
        return [*carry_leaves, *y_leaves]


def _trip_count(xs_leaves: Sequence[Any], length: int | None) -> int:
    lengths = {int(np.shape(leaf)[0]) if np.ndim(leaf) else -1 for leaf in xs_leaves}
    if -1 in lengths:
        raise ValueError("scan: every leaf of xs needs a leading axis to scan over (a 0-d leaf)")
    if length is not None:
        lengths.add(int(length))
    if not lengths:
        raise ValueError("scan: give xs or length (the number of iterations)")
    if len(lengths) > 1:
        raise ValueError(f"scan: the leading axes of xs and length disagree: {sorted(lengths)}")
    (count,) = lengths
    if count < 0:
        raise ValueError(f"scan: length must be non-negative, got {count}")
    return count


def _spec(value: Any) -> ArraySpec:
    if isinstance(value, Tracer):
        return ArraySpec(value.shape, value.dtype)
    array = np.asarray(value)
    dtype = array.dtype if array.dtype in TRACEABLE_DTYPES else np.dtype(np.float64)
    return ArraySpec(tuple(array.shape), dtype)


def _bound_values(outer: Trace, traced: TracedFunction) -> list[SSAValue]:
    """The values of `outer` for the body's inputs past its arguments: the
    tracers it closed over and the arrays it captured, in input order."""
    sources: dict[cg.InputOp, Any] = {op: tracer for tracer, op in traced.closures}
    sources.update({op: array for array, op in traced.captured})
    extra = fragment_inputs(traced.graph)[len(traced.input_specs) :]
    return [as_tracer(outer, sources[op]).value for op in extra]


def _region_of(
    traced: TracedFunction,
    arg_types: Sequence[Attribute] | None = None,
    positions: Sequence[int] | None = None,
) -> Region:
    """The body graph's ops moved into a region: its inputs become block
    arguments (input `i` the argument `positions[i]` among `arg_types`; by
    default the inputs' own types in order), its outputs the operands of
    `prim.yield`."""
    inputs = fragment_inputs(traced.graph)
    outputs = fragment_outputs(traced.graph)
    if arg_types is None:
        arg_types = [op.result.type for op in inputs]
    where = positions if positions is not None else range(len(inputs))
    block = Block(arg_types=arg_types)
    arguments: dict[SSAValue, SSAValue] = {
        op.result: block.args[position] for op, position in zip(inputs, where, strict=True)
    }
    yielded = [arguments.get(value, value) for value in outputs]
    for op in inputs:
        op.result.replace_all_uses_with(arguments[op.result])
    for op in list(traced.graph.body.block.ops):
        if isinstance(op, cg.InputOp | cg.OutputOp):
            continue
        op.detach()
        block.add_op(op)
    block.add_op(prim.YieldOp(yielded))
    return Region(block)


def _run_concrete_while(
    cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any], init_val: Any
) -> Any:
    """`while_loop` on concrete values: traced, then run by the reference evaluator."""
    leaves, tree = tree_flatten(init_val)

    def whole(*values: Tracer) -> list[Any]:
        final = while_loop(cond_fun, body_fun, tree_unflatten(tree, values))
        return tree_flatten(final)[0]

    traced = trace_function(whole, [_spec(a) for a in leaves], "while")
    bound = [array for array, _ in traced.captured]
    results = evaluate_fragment(traced.graph, [*(np.asarray(a) for a in leaves), *bound])
    return tree_unflatten(tree, results)


def _run_concrete(
    f: Callable[[Any, Any], tuple[Any, Any]], init: Any, xs: Any, length: int, reverse: bool
) -> tuple[Any, Any]:
    """`scan` on concrete values: traced, then run by the reference evaluator."""
    init_leaves, init_tree = tree_flatten(init)
    xs_leaves, xs_tree = tree_flatten(xs)
    shapes: list[PyTreeDef] = []

    def whole(*leaves: Tracer) -> list[Any]:
        carry = tree_unflatten(init_tree, leaves[: len(init_leaves)])
        scanned = tree_unflatten(xs_tree, leaves[len(init_leaves) :])
        final, ys = scan(f, carry, scanned, length, reverse)
        flat_final, _ = tree_flatten(final)
        flat_ys, ys_tree = tree_flatten(ys)
        shapes.append(ys_tree)
        return [*flat_final, *flat_ys]

    args = [*init_leaves, *xs_leaves]
    traced = trace_function(whole, [_spec(a) for a in args], "scan")
    bound = [array for array, _ in traced.captured]
    results = evaluate_fragment(traced.graph, [*(np.asarray(a) for a in args), *bound])
    final = tree_unflatten(init_tree, results[: len(init_leaves)])
    return final, tree_unflatten(shapes[0], results[len(init_leaves) :])
