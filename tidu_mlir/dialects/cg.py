"""The `cg` (computegraph) dialect: graph fragments, keyed inputs, roles.

A fragment is a `cg.graph` (primal, at module level) or a `cg.linear` (derived
by an AD pass, nested in the fragment whose values it references). Values of
enclosing fragments are referenced by ordinary SSA uses, so dominance is the
only reference rule; xDSL does not check dominance itself, so the fragment
verifiers do. See docs/design.md for the full contract.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import TypeAlias

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    IntAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    SymbolNameConstraint,
    TensorType,
    i1,
    i64,
)
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator, OpTrait, SymbolOpInterface, SymbolTable
from xdsl.utils.exceptions import VerifyException

from tidu_mlir.diagnostics import I64_MAX, DominanceCheck, OpError, parse_int64
from tidu_mlir.fast_syntax import (
    PLAIN_STRING,
    FastParser,
    build_operation,
    int_attr,
    string_value,
    unverified_attribute,
    unverified_data,
)

# --------------------------------------------------------------------------
# Keys
# --------------------------------------------------------------------------


@irdl_attr_definition
class KeyAttr(ParametrizedAttribute):
    """A user-visible input key: `#cg.key<"x">`."""

    name = "cg.key"

    key_name: StringAttr

    def __init__(self, key_name: str | StringAttr):
        super().__init__(StringAttr(key_name) if isinstance(key_name, str) else key_name)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string_literal(self.key_name.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            return (StringAttr(parser.parse_str_literal("key name")),)


@irdl_attr_definition
class TangentKeyAttr(ParametrizedAttribute):
    """The tangent of a key seeded by one `linearize` pass: `#cg.tangent<KEY, N>`."""

    name = "cg.tangent"

    of: Attribute
    pass_id: IntAttr

    def __init__(self, of: InputKey, pass_id: int | IntAttr):
        super().__init__(of, IntAttr(pass_id) if isinstance(pass_id, int) else pass_id)

    def verify(self) -> None:
        if not is_input_key(self.of):
            raise VerifyException(f"#cg.tangent expects an input key, got {self.of}")

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_attribute(self.of)
            printer.print_string(f", {self.pass_id.data}")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            of = parser.parse_attribute()
            parser.parse_punctuation(",")
            pass_id = parse_int64(parser, "pass id", allow_negative=False)
        return (of, IntAttr(pass_id))


@irdl_attr_definition
class CotangentKeyAttr(ParametrizedAttribute):
    """The cotangent seed of active output I of the fragment transposed by pass N:
    `#cg.cotangent<I, N>`."""

    name = "cg.cotangent"

    index: IntAttr
    pass_id: IntAttr

    def __init__(self, index: int, pass_id: int):
        super().__init__(IntAttr(index), IntAttr(pass_id))

    def print_parameters(self, printer: Printer) -> None:
        _print_index_and_pass(printer, self.index, self.pass_id)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        return _parse_index_and_pass(parser)


@irdl_attr_definition
class ResidualKeyAttr(ParametrizedAttribute):
    """Residual I saved by the `unzip` pass N: `#cg.residual<I, N>`.

    It keys an input of the graph holding an unzipped linear fragment; the
    value is output I of the residual outputs of the forward graph of pass N
    (see `ResidualsAttr`).
    """

    name = "cg.residual"

    index: IntAttr
    pass_id: IntAttr

    def __init__(self, index: int, pass_id: int):
        super().__init__(IntAttr(index), IntAttr(pass_id))

    def print_parameters(self, printer: Printer) -> None:
        _print_index_and_pass(printer, self.index, self.pass_id)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        return _parse_index_and_pass(parser)


def _print_index_and_pass(printer: Printer, index: IntAttr, pass_id: IntAttr) -> None:
    printer.print_string(f"<{index.data}, {pass_id.data}>")


def _parse_index_and_pass(parser: AttrParser) -> tuple[IntAttr, IntAttr]:
    """`<I, N>`: two non-negative integers."""
    with parser.in_angle_brackets():
        index = parse_int64(parser, "index", allow_negative=False)
        parser.parse_punctuation(",")
        pass_id = parse_int64(parser, "pass id", allow_negative=False)
    return (IntAttr(index), IntAttr(pass_id))


InputKey: TypeAlias = KeyAttr | TangentKeyAttr | CotangentKeyAttr | ResidualKeyAttr


def is_input_key(attr: Attribute) -> bool:
    """Whether `attr` is one of the four key attributes."""
    return isinstance(attr, KeyAttr | TangentKeyAttr | CotangentKeyAttr | ResidualKeyAttr)


def tangent_of(key: InputKey, pass_id: int) -> TangentKeyAttr:
    """The key of the tangent of `key` seeded by pass `pass_id` (docs/design.md, Keys)."""
    return TangentKeyAttr(key, pass_id)


def key_spec(key: InputKey) -> str:
    """The command-line spelling of a key: `x`, `tangent(x,1)`, `cotangent(0,2)`,
    `residual(0,3)`."""
    if isinstance(key, KeyAttr):
        return key.key_name.data
    if isinstance(key, TangentKeyAttr):
        assert is_input_key(key.of)
        return f"tangent({key_spec(key.of)},{key.pass_id.data})"  # type: ignore[arg-type]
    if isinstance(key, ResidualKeyAttr):
        return f"residual({key.index.data},{key.pass_id.data})"
    return f"cotangent({key.index.data},{key.pass_id.data})"


_TANGENT_SPEC = re.compile(r"^tangent\((.*),\s*(\d+)\)$")
_COTANGENT_SPEC = re.compile(r"^cotangent\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_RESIDUAL_SPEC = re.compile(r"^residual\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_NAME_SPEC = re.compile(r"^[A-Za-z_][\w.\-]*$")


def parse_key_spec(spec: str) -> InputKey:
    """Parse the command-line spelling of a key (inverse of `key_spec`)."""
    spec = spec.strip()
    if match := _TANGENT_SPEC.match(spec):
        return TangentKeyAttr(parse_key_spec(match.group(1)), int(match.group(2)))
    if match := _COTANGENT_SPEC.match(spec):
        return CotangentKeyAttr(int(match.group(1)), int(match.group(2)))
    if match := _RESIDUAL_SPEC.match(spec):
        return ResidualKeyAttr(int(match.group(1)), int(match.group(2)))
    if _NAME_SPEC.match(spec):
        return KeyAttr(spec)
    raise ValueError(
        f"malformed key '{spec}': expected a name, tangent(KEY,N) or cotangent(I,N) or "
        "residual(I,N)"
    )


# --------------------------------------------------------------------------
# Roles
# --------------------------------------------------------------------------

ROLE_ATTR_NAME = "role"


@irdl_attr_definition
class LinearizedRoleAttr(ParametrizedAttribute):
    """Marks an op as part of a linear map: `#cg.linearized<[active, fixed]>`.

    One flag per operand; active means the operand is a tangent (or cotangent)
    value of the pass that created the enclosing fragment. An op without a role
    attribute is primary.
    """

    name = "cg.linearized"

    mask: ArrayAttr[IntAttr]

    def __init__(self, active_mask: Sequence[bool]):
        super().__init__(ArrayAttr(IntAttr(int(flag)) for flag in active_mask))

    @property
    def active_mask(self) -> tuple[bool, ...]:
        return tuple(bool(flag.data) for flag in self.mask.data)

    def print_parameters(self, printer: Printer) -> None:
        words = ("active" if flag else "fixed" for flag in self.active_mask)
        printer.print_string(f"<[{', '.join(words)}]>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            words = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE,
                lambda: parser.parse_keyword_in(("active", "fixed"), " in a role mask"),
            )
        return (ArrayAttr(IntAttr(int(word == "active")) for word in words),)


def role_of(op: Operation) -> LinearizedRoleAttr | None:
    """The linearized role of `op`, or None for a primary op."""
    role = op.attributes.get(ROLE_ATTR_NAME)
    return role if isinstance(role, LinearizedRoleAttr) else None


def set_linearized_role(op: Operation, active_mask: Sequence[bool]) -> None:
    """Tag `op` as linearized with one active flag per operand."""
    op.attributes[ROLE_ATTR_NAME] = LinearizedRoleAttr(active_mask)


def verify_role(op: Operation) -> None:
    """Check that a role attribute, if any, has one flag per operand."""
    role = op.attributes.get(ROLE_ATTR_NAME)
    if role is None:
        return
    if not isinstance(role, LinearizedRoleAttr):
        raise VerifyException(f"'{ROLE_ATTR_NAME}' must be a #cg.linearized role, got {role}")
    if len(role.mask.data) != len(op.operands):
        raise VerifyException(
            f"role mask has {len(role.mask.data)} entries but the op has "
            f"{len(op.operands)} operands"
        )


# --------------------------------------------------------------------------
# Residual outputs (unzip)
# --------------------------------------------------------------------------

RESIDUALS_ATTR_NAME = "cg.residuals"

POLICY_ATTR_NAME = "cg.policy"
"""On an op: the name of the unzip policy that decides whether its results are
saved or recomputed (a region marked by `td.checkpoint` inside a traced
function), instead of the policy `unzip` is given. The ops `linearize` derives
from it carry it too."""

DERIVED_POLICY_ATTR_NAME = "cg.derived_policy"
"""On an op whose results leave a `td.checkpoint` region: the region's policy,
given to the ops `linearize` derives from it instead of its own `cg.policy`."""


@irdl_attr_definition
class ResidualsAttr(ParametrizedAttribute):
    """On a forward graph built by `unzip` pass N: its last K outputs are the
    residuals 0..K-1 of that pass, `#cg.residuals<K, N>` (the inputs keyed
    `#cg.residual<I, N>` of the graph holding the linear fragment)."""

    name = "cg.residuals"

    count: IntAttr
    pass_id: IntAttr

    def __init__(self, count: int, pass_id: int):
        super().__init__(IntAttr(count), IntAttr(pass_id))

    def print_parameters(self, printer: Printer) -> None:
        _print_index_and_pass(printer, self.count, self.pass_id)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        return _parse_index_and_pass(parser)


def residuals_of(graph: GraphOp) -> ResidualsAttr | None:
    """The residual outputs of a forward graph built by `unzip` (None otherwise)."""
    attr = graph.attributes.get(RESIDUALS_ATTR_NAME)
    return attr if isinstance(attr, ResidualsAttr) else None


def _verify_residuals(graph: GraphOp) -> None:
    attr = graph.attributes.get(RESIDUALS_ATTR_NAME)
    if attr is None:
        return
    if not isinstance(attr, ResidualsAttr):
        raise VerifyException(f"'{RESIDUALS_ATTR_NAME}' must be a #cg.residuals attribute")
    outputs = graph.body.block.last_op
    assert isinstance(outputs, OutputOp)
    if attr.count.data > len(outputs.outputs):
        raise VerifyException(
            f"cg.graph declares {attr.count.data} residual outputs but cg.output returns "
            f"{len(outputs.outputs)} values"
        )


# --------------------------------------------------------------------------
# Pass ids
# --------------------------------------------------------------------------

NEXT_PASS_ID_ATTR = "cg.next_pass_id"


def next_pass_id(module: ModuleOp) -> int:
    """The next free pass id recorded on the module (1 when absent).

    A recorded value outside 1..2^63-2 is an `OpError`: an i64 attribute
    wraps 2^63 and above to negative numbers, and allocating the id must leave
    a representable next one."""
    attr = module.attributes.get(NEXT_PASS_ID_ATTR)
    if attr is None:
        return 1
    if not isinstance(attr, IntegerAttr) or not 1 <= attr.value.data < I64_MAX:
        raise OpError(
            f"module attribute {NEXT_PASS_ID_ATTR} must be an integer in 1..{I64_MAX - 1}, "
            f"got {attr}",
            module,
        )
    return attr.value.data


def allocate_pass_id(module: ModuleOp) -> int:
    """Take a fresh pass id and record the next one on the module."""
    pass_id = next_pass_id(module)
    module.attributes[NEXT_PASS_ID_ATTR] = IntegerAttr(pass_id + 1, i64)
    return pass_id


# --------------------------------------------------------------------------
# Fragment verification
# --------------------------------------------------------------------------


def _ancestors(op: Operation) -> Iterator[Operation]:
    """The ops enclosing `op`, innermost first."""
    current = op.parent_op()
    while current is not None:
        yield current
        current = current.parent_op()


def _check_dominance(block: Block) -> None:
    """Every operand of an op of `block` is defined before the op, in the same
    block or before an enclosing op of an enclosing block."""
    dominance = DominanceCheck()
    for user in block.ops:
        if (operand_index := dominance.first_undominated(user)) is not None:
            raise OpError(
                f"operand #{operand_index} of '{user.name}' does not dominate its use "
                "(a fragment may reference only values defined before it)",
                user,
            )


def _verify_fragment(op: Operation, body: Region) -> None:
    if len(body.blocks) != 1:
        raise VerifyException(f"'{op.name}' must have a region with exactly one block")
    block = body.block
    if block.args:
        raise VerifyException(f"'{op.name}' takes inputs through cg.input, not block arguments")
    if not isinstance(block.last_op, OutputOp):
        raise VerifyException(f"'{op.name}' must end with cg.output")
    seen_keys: set[Attribute] = set()
    for inner in block.ops:
        if isinstance(inner, InputOp):
            if inner.key in seen_keys:
                raise OpError(f"input key {inner.key} appears twice in the fragment", inner)
            seen_keys.add(inner.key)
    _check_dominance(block)


# --------------------------------------------------------------------------
# Operations
# --------------------------------------------------------------------------


class InFragment(OpTrait):
    """The op lives directly in a `cg.graph` or `cg.linear` (a `HasParent` that can
    name `cg.linear` before the class exists)."""

    def verify(self, op: Operation) -> None:
        if not isinstance(op.parent_op(), GraphOp | LinearOp):
            raise VerifyException(
                f"'{op.name}' expects parent op to be one of 'cg.graph', 'cg.linear'"
            )


@irdl_op_definition
class GraphOp(IRDLOperation):
    """A primal graph fragment at module level."""

    name = "cg.graph"

    sym_name = prop_def(SymbolNameConstraint())
    body = region_def("single_block")

    traits = traits_def(SymbolOpInterface(), SymbolTable(), HasParent(ModuleOp))

    assembly_format = "$sym_name attr-dict-with-keyword $body"

    def __init__(self, sym_name: str, body: Region):
        super().__init__(properties={"sym_name": StringAttr(sym_name)}, regions=[body])

    def verify_(self) -> None:
        _verify_fragment(self, self.body)
        _verify_residuals(self)
        if isinstance(module := self.parent_op(), ModuleOp):
            next_pass_id(module)  # the pass ids its fragments will take are valid


@irdl_op_definition
class LinearOp(IRDLOperation):
    """A linear fragment derived by `linearize` or `linear-transpose`.

    `active` has one flag per requested output; `cg.output` lists the active
    ones only (an inactive output is a symbolic zero).
    """

    name = "cg.linear"

    sym_name = prop_def(SymbolNameConstraint())
    pass_id = prop_def(IntegerAttr[IntegerType])
    active = prop_def(DenseArrayBase)
    body = region_def("single_block")

    traits = traits_def(SymbolOpInterface(), SymbolTable(), InFragment())

    def __init__(self, sym_name: str, pass_id: int, active: Sequence[bool], body: Region):
        super().__init__(
            properties={
                "sym_name": StringAttr(sym_name),
                "pass_id": IntegerAttr(pass_id, i64),
                "active": DenseArrayBase.from_list(i1, [int(flag) for flag in active]),
            },
            regions=[body],
        )

    @property
    def active_flags(self) -> tuple[bool, ...]:
        return tuple(bool(flag) for flag in self.active.get_values())  # pyright: ignore[reportAttributeAccessIssue]

    def verify_(self) -> None:
        _verify_fragment(self, self.body)
        if self.pass_id.value.data < 0:  # `pass_id = 2^63 : i64` wraps to negative
            raise VerifyException(f"cg.linear pass id {self.pass_id.value.data} is negative")
        module = next((a for a in _ancestors(self) if isinstance(a, ModuleOp)), None)
        if module is not None and NEXT_PASS_ID_ATTR in module.attributes:
            limit = next_pass_id(module)
            if self.pass_id.value.data >= limit:
                raise VerifyException(
                    f"cg.linear pass id {self.pass_id.value.data} is not below the module's "
                    f"{NEXT_PASS_ID_ATTR} {limit}"
                )
        if self.active.elt_type != i1:
            raise VerifyException("cg.linear 'active' must be an array of i1 flags")
        outputs = self.body.block.last_op
        assert isinstance(outputs, OutputOp)
        if len(outputs.outputs) != sum(self.active_flags):
            raise VerifyException(
                f"cg.linear has {sum(self.active_flags)} active outputs but cg.output "
                f"returns {len(outputs.outputs)} values"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        flags = ", ".join("true" if flag else "false" for flag in self.active_flags)
        printer.print_string(f" pass {self.pass_id.value.data} active [{flags}]")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body)

    @classmethod
    def parse(cls, parser: Parser) -> LinearOp:
        sym_name = parser.parse_symbol_name().data
        parser.parse_keyword("pass")
        pass_id = parse_int64(parser, "pass id", allow_negative=False)
        parser.parse_keyword("active")
        active = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: parser.parse_boolean()
        )
        attributes = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region()
        op = cls(sym_name, pass_id, active, body)
        if attributes is not None:
            op.attributes |= attributes.data
        return op


@irdl_op_definition
class InputOp(IRDLOperation):
    """A keyed input of a fragment."""

    name = "cg.input"

    key = prop_def(KeyAttr | TangentKeyAttr | CotangentKeyAttr | ResidualKeyAttr)
    result = result_def(TensorType)

    traits = traits_def(InFragment())

    def __init__(self, key: InputKey, result_type: Attribute):
        super().__init__(properties={"key": key}, result_types=[result_type])

    @classmethod
    def parse(cls, parser: Parser) -> InputOp:
        # `KEY attr-dict : T`, a plain `#cg.key<"x">` read in one match.
        if (key := _parse_optional_plain_key(parser)) is None:
            key = parser.parse_attribute()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        return build_operation(cls, [], [parser.parse_type()], {"key": key}, attributes)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.key)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)


_PLAIN_KEY = re.compile(
    rf"#cg\.key<({PLAIN_STRING})>"
    rf"|#cg\.tangent<#cg\.key<({PLAIN_STRING})>,[ \t]*([0-9]{{1,18}})>"
    r"|#cg\.(cotangent|residual)<([0-9]{1,18}),[ \t]*([0-9]{1,18})>"
)
"""An input key as printed: `#cg.key<"x">` (a `PLAIN_STRING`: escapes of
ASCII characters only), its tangent `#cg.tangent<#cg.key<"x">, 1>`,
`#cg.cotangent<0, 2>` or `#cg.residual<0, 2>` (numbers of up to 18 digits)."""


def _parse_optional_plain_key(parser: Parser) -> InputKey | None:
    """An input key in its plain form (`_PLAIN_KEY`) at the next token, read
    in one match by a `FastParser` (None, nothing consumed, otherwise)."""
    if (
        not isinstance(parser, FastParser)
        or (match := parser.parse_optional_plain(_PLAIN_KEY)) is None
    ):
        return None
    if match[1] is not None:
        return _unverified_key(match[1])
    if match[2] is not None:
        return unverified_attribute(
            TangentKeyAttr, _unverified_key(match[2]), int_attr(int(match[3]))
        )
    numbered = CotangentKeyAttr if match[4] == "cotangent" else ResidualKeyAttr
    return unverified_attribute(numbered, int_attr(int(match[5])), int_attr(int(match[6])))


def _unverified_key(literal: str) -> KeyAttr:
    """The `KeyAttr` of the string literal `literal`, unverified (a string parameter)."""
    return unverified_attribute(KeyAttr, unverified_data(StringAttr, string_value(literal)))


@irdl_op_definition
class OutputOp(IRDLOperation):
    """The values a fragment returns."""

    name = "cg.output"

    outputs = var_operand_def(TensorType)

    traits = traits_def(IsTerminator(), InFragment())

    def __init__(self, outputs: Sequence[SSAValue | Operation]):
        super().__init__(operands=[outputs])

    @classmethod
    def parse(cls, parser: Parser) -> OutputOp:
        # `(%a, %b : T, U)? attr-dict`, plain values read in one match (1 MB
        # of outputs on one line would otherwise go a token at a time).
        outputs = _parse_optional_plain_values(parser)
        if outputs is None:
            outputs = _parse_optional_values(parser)
        return build_operation(cls, outputs, [], {}, parser.parse_optional_attr_dict())

    def print(self, printer: Printer) -> None:
        if self.outputs:
            printer.print_string(" ")
            printer.print_list(self.outputs, printer.print_operand)
            printer.print_string(" : ")
            printer.print_list([output.type for output in self.outputs], printer.print_attribute)
        printer.print_op_attributes(self.attributes)


def _parse_optional_plain_values(parser: Parser) -> Sequence[SSAValue] | None:
    """`%a, %b : T, U` read in one match by a `FastParser` (None, nothing
    consumed, otherwise)."""
    return parser.parse_optional_plain_values() if isinstance(parser, FastParser) else None


def _parse_optional_values(parser: Parser) -> Sequence[SSAValue]:
    """`%a, %b : T, U`, token by token, if values come ([] otherwise)."""
    unresolved = parser.parse_optional_undelimited_comma_separated_list(
        parser.parse_optional_unresolved_operand, parser.parse_unresolved_operand
    )
    if not unresolved:
        return []
    parser.parse_punctuation(":")
    types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
    return parser.resolve_operands(unresolved, types, parser.pos)


Fragment: TypeAlias = GraphOp | LinearOp

CG = Dialect(
    "cg",
    [GraphOp, LinearOp, InputOp, OutputOp],
    [KeyAttr, TangentKeyAttr, CotangentKeyAttr, ResidualKeyAttr, LinearizedRoleAttr, ResidualsAttr],
)
