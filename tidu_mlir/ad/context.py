"""What the AD passes share: the `RuleContext` they hand to rules, the result
type of the graph-level API, and target resolution.

`FragmentBuilder` is the one implementation of `RuleContext`: it appends each
emitted op to the fragment being built, derives the op's role from which
operands are active values of the running pass, and copies the location of the
op being differentiated (so diagnostics about derived ops point at the source).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.traits import SymbolTable

from tidu_mlir.diagnostics import OpError
from tidu_mlir.dialects.cg import (
    DERIVED_POLICY_ATTR_NAME,
    POLICY_ATTR_NAME,
    ROLE_ATTR_NAME,
    Fragment,
    GraphOp,
    InputKey,
    LinearizedRoleAttr,
    LinearOp,
    OutputOp,
    allocate_pass_id,
    parse_key_spec,
)
from tidu_mlir.graph import fragment_output_op, fragment_path, lookup_fragment
from tidu_mlir.interfaces import ADRuleError, LinearizedBody, OpT, RuleKind

Target: TypeAlias = Fragment | tuple[ModuleOp, str]
"""A fragment, or a module and the path of a fragment in it (`@f::@jvp1`)."""


@dataclass
class BodyTransforms:
    """The engine's transforms of a body region, which the rule contexts offer
    to the rules of ops with regions (`RuleContext.linearize_body`, ...).
    `ad.regions` implements them with the passes and registers them here
    (`register_body_transforms`): the passes' modules import this one, so it
    cannot import them."""

    linearize: Callable[[Region, Sequence[bool]], LinearizedBody]
    transpose: Callable[[Region, Sequence[bool]], tuple[Region, list[bool]]]
    batch: Callable[[Region, Sequence[bool], int], tuple[Region, list[bool]]]


_body_transforms: list[BodyTransforms] = []


def register_body_transforms(transforms: BodyTransforms) -> None:
    """Install the body transforms (done once, by `ad.regions` on import)."""
    _body_transforms[:] = [transforms]


def body_transforms() -> BodyTransforms:
    """The registered body transforms."""
    assert _body_transforms, "tidu_mlir.ad.regions registers the body transforms on import"
    return _body_transforms[0]


@dataclass
class LinearizedGraph:
    """A linear fragment built by `linearize` or `linear_transpose`.

    `tangent_inputs` are the fragment's own inputs (tangent seeds for
    `linearize`, cotangent seeds for `linear_transpose`) with their keys, in
    signature order. `tangent_outputs` has one entry per requested output
    (`linearize`) or per input of the transposed fragment (`linear_transpose`);
    None is a symbolic zero (the `active` flag is false).
    """

    fragment: LinearOp
    tangent_inputs: list[tuple[InputKey, SSAValue]] = field(default_factory=list)
    tangent_outputs: list[SSAValue | None] = field(default_factory=list)


class FragmentBuilder:
    """The `RuleContext` of one AD pass: appends emitted ops to `block`.

    `active` holds the tangent (cotangent) values of the running pass; an
    emitted op with an active operand is tagged `#cg.linearized<mask>` and its
    results become active. `forbidden` values (the tangent values of the
    fragment being transposed) must not be referenced by emitted ops.
    """

    def __init__(
        self,
        kind: RuleKind,
        block: Block,
        active: Iterable[SSAValue] = (),
        forbidden: frozenset[SSAValue] | set[SSAValue] = frozenset(),
    ):
        self.kind: RuleKind = kind
        self.block = block
        self.active: set[SSAValue] = set(active)
        self.forbidden = forbidden
        self.source: Operation | None = None
        self._roles: dict[tuple[bool, ...], LinearizedRoleAttr] = {}

    def emit(self, op: OpT) -> OpT:
        """Append `op` to the fragment, tag its role, copy the source location and
        unzip policy."""
        if op.parent is not None:
            raise self.error(f"the rule emitted '{op.name}', which is already in a block")
        operands = op.operands
        if self.forbidden and any(value in self.forbidden for value in operands):
            raise self.error(
                f"the rule emitted '{op.name}' that uses a tangent value of the linear "
                "fragment being transposed"
            )
        mask = tuple(value in self.active for value in operands)
        if any(mask):
            op.attributes[ROLE_ATTR_NAME] = self._role(mask)
            self.active.update(op.results)
        else:
            op.attributes.pop(ROLE_ATTR_NAME, None)
        if self.source is not None:
            op.location = self.source.location
            policy = self.source.attributes.get(DERIVED_POLICY_ATTR_NAME)
            if policy is None:
                policy = self.source.attributes.get(POLICY_ATTR_NAME)
            if policy is not None:
                op.attributes[POLICY_ATTR_NAME] = policy
        self.block.add_op(op)
        return op

    def _role(self, mask: tuple[bool, ...]) -> LinearizedRoleAttr:
        """Roles are immutable attributes: build each distinct one once."""
        role = self._roles.get(mask)
        if role is None:
            role = self._roles[mask] = LinearizedRoleAttr(mask)
        return role

    def is_active(self, value: SSAValue) -> bool:
        return value in self.active

    def linearize_body(self, body: Region, active: Sequence[bool]) -> LinearizedBody:
        return body_transforms().linearize(body, active)

    def transpose_body(self, body: Region, linear: Sequence[bool]) -> tuple[Region, list[bool]]:
        return body_transforms().transpose(body, linear)

    def error(self, detail: str) -> OpError:
        """An `ADRuleError` about the op whose rule is running."""
        if self.source is None:
            return OpError(detail)
        return ADRuleError(self.kind, self.source, detail)

    def check_results(
        self, values: Sequence[SSAValue | None], expected: int, what: str
    ) -> Sequence[SSAValue | None]:
        """Check a rule returned `expected` values, each None or active."""
        if len(values) != expected:
            raise self.error(f"the rule returned {len(values)} {what}s, expected {expected}")
        for index, value in enumerate(values):
            if value is not None and value not in self.active:
                raise self.error(
                    f"{what} #{index} returned by the rule is not a {what} value of this pass "
                    "(return None for a zero)"
                )
        return values


def attach_linear_fragment(
    module: ModuleOp,
    parent: Fragment,
    block: Block,
    sym_name: str,
    pass_id: int,
    tangent_inputs: Sequence[tuple[InputKey, SSAValue]],
    tangent_outputs: Sequence[SSAValue | None],
) -> LinearizedGraph:
    """Close `block` with its active outputs, wrap it in `cg.linear`, insert it
    just before `parent`'s `cg.output`, and take the pass id from the module
    (only now, so a refused pass leaves the module unchanged)."""
    block.add_op(OutputOp([value for value in tangent_outputs if value is not None]))
    active = [value is not None for value in tangent_outputs]
    linear = LinearOp(sym_name, pass_id, active, Region(block))
    linear.location = parent.location
    allocate_pass_id(module)
    parent.body.block.insert_op_before(linear, fragment_output_op(parent))
    return LinearizedGraph(linear, list(tangent_inputs), list(tangent_outputs))


def resolve_target(target: Target) -> tuple[ModuleOp, Fragment]:
    """The module and the fragment named by `target` (see `Target`)."""
    if isinstance(target, tuple):
        module, path = target
        return module, lookup_fragment(module, path)
    return module_of(target), target


def module_of(op: Operation) -> ModuleOp:
    """The module that holds `op` (fragments record pass ids on it)."""
    current: Operation | None = op
    while current is not None and not isinstance(current, ModuleOp):
        current = current.parent_op()
    if current is None:
        raise OpError(f"'{op.name}' is not inside a builtin.module", op)
    return current


def check_new_symbol(parent: Fragment | ModuleOp, name: str) -> None:
    """Refuse a name that already exists in the symbol table of `parent`."""
    if SymbolTable.lookup_symbol(parent, name) is not None:
        where = fragment_path(parent) if isinstance(parent, GraphOp | LinearOp) else "the module"
        raise OpError(f"a symbol '@{name}' already exists in {where}", parent)


def as_key(key: InputKey | str) -> InputKey:
    """A key attribute from its command-line spelling (or the attribute itself)."""
    return parse_key_spec(key) if isinstance(key, str) else key


def discard(block: Block) -> None:
    """Drop a partially built block (its ops use primal values; unregister them)."""
    block.erase(safe_erase=False)
