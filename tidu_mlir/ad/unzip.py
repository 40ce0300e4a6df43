"""`unzip`: split a linearization into a forward graph and a linear fragment
that reads only residuals and its tangents.

`linearize` nests its linear fragment in the fragment it differentiates and
references primal values by SSA use, so running it means running the primal
too. `unzip` builds, at module level, from the primal P (the fragment the
linear fragment L is nested in, with everything enclosing it) and L:

* the forward graph `@<base>_fwd`: P's outputs, then the residuals (the
  values the linear side reads), marked `#cg.residuals<K, N>`;
* the residual graph `@<base>_lin`: one input `#cg.residual<I, N>` per
  residual, and L's copy nested in it, which references nothing but those
  inputs and its own tangent inputs (so its signature is residuals, then
  tangents, and `verify-linearity`, `linear-transpose` and `materialize`
  treat it like any linear fragment).

The policy decides, op by op, whether a fixed value the linear ops read is
saved (a residual, its op goes forward) or recomputed (its op is copied into
the linear fragment as a primary op, reading residuals); an op tagged
`cg.policy = "<name>"` (a `td.checkpoint` region) follows that policy instead
of the one `unzip` is given. L's own primary ops
(e.g. `cos x` emitted by the JVP of `sin`) are fixed values like any other.
Values computed from no input (constants, broadcast or not) are recomputed
under every policy, and so are ops with a result of dynamic shape (the tapes
of a `prim.record_while`: a residual needs a static shape).
Two walks: L's linear ops back from its outputs, then the recomputed ops back
from the fixed values they read, stopping at saved values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp, StringAttr, TensorType
from xdsl.ir import Attribute, Block, Operation, OpResult, Region, SSAValue

from tidu_mlir.ad.context import Target, check_new_symbol, resolve_target
from tidu_mlir.ad.linearity import verify_linearity
from tidu_mlir.ad.materialization import default_function_name
from tidu_mlir.diagnostics import OpError, located_ancestor
from tidu_mlir.dialects.cg import (
    POLICY_ATTR_NAME,
    RESIDUALS_ATTR_NAME,
    ROLE_ATTR_NAME,
    Fragment,
    GraphOp,
    InputKey,
    InputOp,
    LinearOp,
    OutputOp,
    ResidualKeyAttr,
    ResidualsAttr,
    allocate_pass_id,
    key_spec,
    next_pass_id,
    residuals_of,
)
from tidu_mlir.graph import (
    fragment_inputs,
    fragment_outputs,
    fragment_path,
    fragment_signature,
    reachable_ops,
)
from tidu_mlir.interfaces.recompute import is_cheap_to_recompute, is_recomputable
from tidu_mlir.types import numpy_dtype

Policy = Callable[[Operation], bool]
"""Whether the linear side recomputes an op (True) or reads its results saved."""


def _save(op: Operation) -> bool:
    return False


POLICIES: dict[str, Policy] = {
    "save-all": _save,
    "recompute-elementwise": is_cheap_to_recompute,
    "save-nothing": is_recomputable,
}
"""The rematerialization policies by name (docs/ad-passes.md)."""


def policy_named(policy: str) -> Policy:
    """The policy called `policy`; a `ValueError` lists the valid names."""
    if policy not in POLICIES:
        raise ValueError(f"unknown unzip policy '{policy}'; valid policies: {', '.join(POLICIES)}")
    return POLICIES[policy]


@dataclass(frozen=True)
class Residual:
    """One saved value: output `len(primal outputs) + index` of the forward graph.

    `source` is the op computing it and its location (`prim.cos at f.mlir:5:3`)
    or the input it is (`input x`).
    """

    index: int
    value: SSAValue
    shape: tuple[int, ...]
    dtype: np.dtype
    nbytes: int
    source: str


@dataclass
class Unzipped:
    """The result of `unzip`: `forward` (primal inputs -> primal outputs, then
    residuals), `linear` (residuals, then tangents -> the linearization's
    outputs) nested in `residual_graph`, and the residuals in order."""

    forward: GraphOp
    residual_graph: GraphOp
    linear: LinearOp
    residuals: list[Residual]

    @property
    def primal_output_count(self) -> int:
        return len(fragment_outputs(self.forward)) - len(self.residuals)

    @property
    def residual_keys(self) -> list[InputKey]:
        """The keys `#cg.residual<I, N>` the linear side reads residual I by."""
        return [op.key for op in fragment_inputs(self.residual_graph)]


def unzip(target: Target, policy: str = "save-all", name: str | None = None) -> Unzipped:
    """Split the linear fragment `target` (e.g. `(module, "@f::@jvp1")`) into a
    forward graph and a linear fragment on residuals; see the module docstring.

    `policy`: a name in `POLICIES`. `name`: the base of the two new symbols,
    `@<name>_fwd` and `@<name>_lin` (default `<primal path>_fwd<N>` and
    `_lin<N>`, N the pass id). The unzipped fragment is left as it is.
    """
    recompute = _region_aware(policy_named(policy))
    module, linear = resolve_target(target)
    if not isinstance(linear, LinearOp):
        path = fragment_path(linear)
        raise OpError(
            f"unzip expects a linear fragment nested in the fragment it linearizes "
            f"(e.g. {path}::@jvp1, built by linearize); '{path}' is a cg.graph",
            linear,
        )
    try:
        dependent = verify_linearity(linear)
    except OpError as error:
        raise OpError(f"unzip expects a linear fragment: {error.message}", error.op) from error
    primal = linear.parent_op()
    assert isinstance(primal, GraphOp | LinearOp), "a cg.linear lives in a fragment"
    pass_id = next_pass_id(module)  # taken (allocated) only once the graphs are built
    forward_name, holder_name = _names(module, primal, name, pass_id)

    # The linear ops the outputs need, in program order (only ops of `linear`
    # depend on its inputs), then the fixed values they read.
    needed = set(reachable_ops(fragment_outputs(linear), stop=lambda v: v not in dependent))
    linear_ops = [
        op for op in linear.body.block.ops if op in needed and not isinstance(op, InputOp)
    ]
    fixed = [value for op in linear_ops for value in op.operands if value not in dependent]
    constant = _constant_test()
    recomputed = reachable_ops(fixed, stop=lambda v: not (constant(v) or _recomputed(v, recompute)))
    residuals = _residuals([*recomputed, *linear_ops], dependent)

    primal_outputs = fragment_outputs(primal)
    signature = fragment_signature(linear, primal_outputs)
    primal_inputs = signature[: len(signature) - len(fragment_inputs(linear))]
    forward = _forward_graph(forward_name, primal_inputs, [*primal_outputs, *residuals])
    forward.attributes[RESIDUALS_ATTR_NAME] = ResidualsAttr(len(residuals), pass_id)
    forward.location = primal.location
    holder, copy = _residual_graph(holder_name, linear, pass_id, residuals, recomputed, linear_ops)
    allocate_pass_id(module)
    module.body.block.add_ops([forward, holder])
    return Unzipped(forward, holder, copy, saved_residuals(forward))


def saved_residuals(forward: GraphOp) -> list[Residual]:
    """The residuals a forward graph built by `unzip` returns, in order."""
    attr = residuals_of(forward)
    if attr is None:
        raise OpError(
            f"{fragment_path(forward)} is not a forward graph built by unzip "
            f"(it has no {RESIDUALS_ATTR_NAME} attribute)",
            forward,
        )
    outputs = fragment_outputs(forward)
    first = len(outputs) - attr.count.data
    return [_residual(index, value) for index, value in enumerate(outputs[first:])]


def residual_remarks(unzipped: Unzipped, source: Fragment, policy: str) -> list[str]:
    """`file:line:col: remark: ...` lines: a summary, then one line per residual."""
    total = sum(residual.nbytes for residual in unzipped.residuals)
    anchor = _where(source)
    prefix = f"{anchor}: remark: " if anchor is not None else "remark: "
    lines = [
        f"{prefix}unzip of {fragment_path(source)} (policy {policy}) saves "
        f"{len(unzipped.residuals)} residual(s), {total} bytes: "
        f"{fragment_path(unzipped.forward)} -> {fragment_path(unzipped.linear)}"
    ]
    for residual in unzipped.residuals:
        lines.append(
            f"{prefix}residual #{residual.index}: {residual.value.type}, {residual.dtype}, "
            f"{residual.nbytes} bytes, from {residual.source}"
        )
    return lines


def _names(module: ModuleOp, primal: Fragment, name: str | None, pass_id: int) -> tuple[str, str]:
    """The symbols of the forward and residual graphs, both free in the module."""
    base, suffix = (name, "") if name is not None else (default_function_name(primal), pass_id)
    names = (f"{base}_fwd{suffix}", f"{base}_lin{suffix}")
    for symbol in names:
        check_new_symbol(module, symbol)
    return names


def _region_aware(default: Policy) -> Policy:
    """`default`, except for ops naming their own policy in `cg.policy`, and
    for ops with a result of dynamic shape (a loop's tape, whose size only the
    run knows), which are always recomputed: a residual crosses to the linear
    graph in a buffer its caller allocates, so it must have a static shape."""

    def recompute(op: Operation) -> bool:
        if any(_is_dynamic(result.type) for result in op.results):
            return True
        name = op.attributes.get(POLICY_ATTR_NAME)
        if name is None:
            return default(op)
        if not isinstance(name, StringAttr) or name.data not in POLICIES:
            raise OpError(
                f"{POLICY_ATTR_NAME} must name an unzip policy; valid policies: "
                f"{', '.join(POLICIES)}",
                op,
            )
        return POLICIES[name.data](op)

    return recompute


def _is_dynamic(typ: Attribute) -> bool:
    return isinstance(typ, TensorType) and any(d < 0 for d in typ.get_shape())


def _recomputed(value: SSAValue, recompute: Policy) -> bool:
    """Whether the linear side recomputes `value` (inputs are always saved)."""
    return isinstance(value, OpResult) and not isinstance(value.op, InputOp) and recompute(value.op)


def _constant_test() -> Callable[[SSAValue], bool]:
    """Whether a value is computed by pure ops from no input (e.g. a zero
    constant, broadcast). Every policy recomputes those: saving one costs
    memory for nothing, and a linear op may need to see that an operand is a
    zero constant to be linear (`select` of a tangent and zeros)."""
    known: dict[SSAValue, bool] = {}

    def constant(value: SSAValue) -> bool:
        if value not in known:
            op = value.owner
            known[value] = (
                isinstance(op, Operation)
                and not isinstance(op, InputOp)
                and is_recomputable(op)
                and all(constant(operand) for operand in op.operands)
            )
        return known[value]

    return constant


def _residuals(ops: Sequence[Operation], dependent: set[SSAValue]) -> list[SSAValue]:
    """The values `ops` read that neither depend on a tangent nor are computed
    by `ops`, in the order of first use."""
    computed = {result for op in ops for result in op.results}
    seen: dict[SSAValue, None] = {}
    for op in ops:
        for value in op.operands:
            if value not in dependent and value not in computed:
                seen.setdefault(value)
    return list(seen)


def _forward_graph(
    sym_name: str, inputs: Sequence[InputOp], outputs: Sequence[SSAValue]
) -> GraphOp:
    """A primal graph: `inputs` (in this order), then every op `outputs` reach,
    copied without roles (all its ops are primary)."""
    block = Block()
    mapping: dict[SSAValue, SSAValue] = {}
    for op in inputs:
        block.add_op(op.clone(value_mapper=mapping))
    for op in reachable_ops(outputs):
        if not isinstance(op, InputOp):
            block.add_op(_primary_clone(op, mapping))
    block.add_op(OutputOp([mapping[value] for value in outputs]))
    return GraphOp(sym_name, Region(block))


def _residual_graph(
    sym_name: str,
    linear: LinearOp,
    pass_id: int,
    residuals: Sequence[SSAValue],
    recomputed: Sequence[Operation],
    linear_ops: Sequence[Operation],
) -> tuple[GraphOp, LinearOp]:
    """The graph of residual inputs holding the copy of `linear` that reads them:
    its tangent inputs, the recomputed ops (made primary), its linear ops."""
    holder = Block()
    mapping: dict[SSAValue, SSAValue] = {}
    for index, value in enumerate(residuals):
        residual = InputOp(ResidualKeyAttr(index, pass_id), value.type)
        residual.result.name_hint = value.name_hint
        holder.add_op(residual)
        mapping[value] = residual.result
    body = Block()
    for op in fragment_inputs(linear):
        body.add_op(op.clone(value_mapper=mapping))
    for op in recomputed:
        body.add_op(_primary_clone(op, mapping))
    for op in linear_ops:
        body.add_op(op.clone(value_mapper=mapping))
    body.add_op(OutputOp([mapping[value] for value in fragment_outputs(linear)]))
    copy = LinearOp(linear.sym_name.data, pass_id, linear.active_flags, Region(body))
    copy.location = linear.location
    holder.add_ops([copy, OutputOp([])])
    graph = GraphOp(sym_name, Region(holder))
    graph.location = linear.location
    return graph, copy


def _primary_clone(op: Operation, mapping: dict[SSAValue, SSAValue]) -> Operation:
    """A copy of `op` reading the mapped values, without a role: where it goes it
    reads no tangent value."""
    clone = op.clone(value_mapper=mapping)
    clone.attributes.pop(ROLE_ATTR_NAME, None)
    return clone


def _residual(index: int, value: SSAValue) -> Residual:
    type_ = value.type
    assert isinstance(type_, TensorType), "fragment outputs are tensors"
    shape = tuple(type_.get_shape())
    dtype = numpy_dtype(type_.get_element_type())
    op = value.owner
    if isinstance(op, InputOp):
        source = f"input {key_spec(op.key)}"
    else:
        assert isinstance(op, Operation)
        where = _where(op)
        source = op.name if where is None else f"{op.name} at {where}"
    return Residual(index, value, shape, dtype, int(np.prod(shape)) * dtype.itemsize, source)


def _where(op: Operation) -> str | None:
    """`file:line:col` of `op` (or of its closest located ancestor), if any."""
    anchor = located_ancestor(op)
    if anchor is None:
        return None
    location = anchor.location
    assert isinstance(location, FileLineColLoc)
    return f"{location.filename.data}:{location.line.data}:{location.column.data}"
