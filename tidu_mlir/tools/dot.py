"""`tidu-opt -t dot`: the fragments of a module as a Graphviz graph (docs/pictures.md).

One cluster per fragment: a `cg.graph` at the top, each `cg.linear` inside
the cluster of the fragment it was derived from. One node per op, per keyed
input (a house upside down) and per output slot (a house). Primal ops are
plain boxes; linear ops (role `#cg.linearized<[...]>`) are filled by their
active mask, `ALL_ACTIVE_COLOR` when every operand is active and
`SOME_FIXED_COLOR` when some is fixed, with the mask in the label; tangent and
cotangent inputs are filled like the active values they are. The adds
`linear-transpose` inserts to sum the cotangents of a value used more than
once (fan-out) are double octagons.

An edge goes from a value to each use, drawn in `ACTIVE_EDGE_COLOR` when the
use is an active operand. References between fragments are dashed: a derived
fragment reading a value of a fragment around it, and an unzipped graph's
residual input reading the forward graph's residual output. Ops of the module
outside fragments (functions) are not drawn.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target

from tidu_mlir.dialects.cg import (
    CotangentKeyAttr,
    Fragment,
    GraphOp,
    InputOp,
    LinearOp,
    OutputOp,
    ResidualKeyAttr,
    TangentKeyAttr,
    key_spec,
    residuals_of,
    role_of,
)
from tidu_mlir.graph import fragment_inputs, fragment_path
from tidu_mlir.interfaces import Differentiable

ALL_ACTIVE_COLOR = "#9ecae1"
"""Fill of a linear op whose operands are all active (and of tangent/cotangent inputs)."""

SOME_FIXED_COLOR = "#fdd49e"
"""Fill of a linear op with some fixed operand (`[fixed, active]`, `[active, fixed]`)."""

ACTIVE_EDGE_COLOR = "#2171b5"
"""Colour of an edge into an active operand."""

FANOUT_SHAPE = "doubleoctagon"
"""Shape of the adds `linear-transpose` inserts to sum fan-out cotangents."""


@dataclass(frozen=True)
class DotTarget(Target):
    """Print the module's fragments as Graphviz DOT text (`dot -Tsvg` renders it)."""

    name = "dot"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        try:
            output.write(module_to_dot(module))
        except ValueError as error:
            raise DiagnosticException(f"error: {error}") from error


def module_to_dot(module: ModuleOp) -> str:
    """The DOT text of the module's fragments; a ValueError if it holds none."""
    graphs = [op for op in module.ops if isinstance(op, GraphOp)]
    if not graphs:
        raise ValueError(
            "nothing to draw: the module holds no cg.graph fragment (-t dot draws the "
            "fragments, before materialize and lowering)"
        )
    return _Drawing(module).text(graphs)


def quote(text: str) -> str:
    """A DOT double-quoted string."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def attributes(**values: str) -> str:
    """` [key="value", ...]` (empty for no attributes)."""
    if not values:
        return ""
    return " [" + ", ".join(f"{key}={quote(value)}" for key, value in values.items()) + "]"


def is_transposed(fragment: Fragment) -> bool:
    """Whether `linear-transpose` made the fragment (its seeds are cotangents)."""
    return isinstance(fragment, LinearOp) and any(
        isinstance(op.key, CotangentKeyAttr) for op in fragment_inputs(fragment)
    )


def is_fanout_add(op: Operation, fragment: Fragment) -> bool:
    """Whether `op` sums fan-out cotangents: in a transposed fragment, the
    dialect's addition (`Differentiable.accumulate`) of two active values."""
    role = role_of(op)
    if role is None or role.active_mask != (True, True) or not isinstance(op, Differentiable):
        return False
    return is_transposed(fragment) and op.name == _accumulate_name(op)


_ACCUMULATE_NAMES: dict[type[Differentiable], str] = {}


def _accumulate_name(op: Operation) -> str:
    """The name of the op `accumulate` builds for `op`'s dialect, once per class
    (a probe adding `op`'s first operand to itself, dropped at once)."""
    op_class = type(op)
    assert issubclass(op_class, Differentiable)
    if op_class not in _ACCUMULATE_NAMES:
        operand = op.operands[0]
        probe = op_class.accumulate(operand, operand)
        probe.drop_all_references()
        _ACCUMULATE_NAMES[op_class] = probe.name
    return _ACCUMULATE_NAMES[op_class]


class _Drawing:
    """The node ids and value names of one module, and its DOT text."""

    def __init__(self, module: ModuleOp):
        self.nodes: dict[Operation, str] = {}
        self.fragment_of: dict[Operation, Fragment] = {}
        self.value_names: dict[SSAValue, str] = {}
        self.residual_outputs: dict[tuple[int, int], str] = {}  # (index, pass) -> node
        self.references: list[str] = []
        self.output_count = 0
        self._name_values(module)

    def _name_values(self, module: ModuleOp) -> None:
        """Names as the printer gives them: the name hint, else the next number."""
        used: set[str] = set()
        number = 0
        for op in module.walk():
            for result in op.results:
                name = result.name_hint
                if name is None:
                    name, number = str(number), number + 1
                suffix = 1
                while name in used:
                    name, suffix = f"{result.name_hint}_{suffix}", suffix + 1
                used.add(name)
                self.value_names[result] = name

    def text(self, graphs: list[GraphOp]) -> str:
        lines = [
            "digraph tidu {",
            '  node [shape=box, fontname="Helvetica", fontsize=10];',
            '  edge [fontname="Helvetica", fontsize=9];',
        ]
        for graph in graphs:
            lines.extend(self._cluster(graph, "  "))
        self._residual_references(graphs)  # once every forward graph's outputs are drawn
        if self.references:
            lines.append("  // references between fragments")
            lines.extend("  " + line for line in self.references)
        lines.append("}")
        return "\n".join(lines) + "\n"

    def _cluster(self, fragment: Fragment, indent: str) -> list[str]:
        path = fragment_path(fragment)
        inner = indent + "  "
        lines = [f"{indent}subgraph {quote('cluster_' + path)} {{"]
        lines.append(f"{inner}label={quote(_cluster_label(fragment, path))};")
        edges: list[str] = []
        for op in fragment.body.block.ops:
            if isinstance(op, LinearOp):
                lines.extend(self._cluster(op, inner))
            elif isinstance(op, OutputOp):
                nodes, output_edges = self._outputs(fragment, op)
                lines.extend(inner + node for node in nodes)
                edges.extend(output_edges)
            else:
                lines.append(inner + self._node(op, fragment))
                edges.extend(self._operand_edges(op, fragment))
        lines.extend(inner + edge for edge in edges)
        lines.append(f"{indent}}}")
        return lines

    def _node(self, op: Operation, fragment: Fragment) -> str:
        node = self.nodes[op] = f"n{len(self.nodes)}"
        self.fragment_of[op] = fragment
        return node + attributes(**self._node_style(op, fragment)) + ";"

    def _node_style(self, op: Operation, fragment: Fragment) -> dict[str, str]:
        results = ", ".join("%" + self.value_names[result] for result in op.results)
        if isinstance(op, InputOp):
            style = {"label": f"{results}: {key_spec(op.key)}", "shape": "invhouse"}
            if isinstance(op.key, TangentKeyAttr | CotangentKeyAttr):
                style |= {"style": "filled", "fillcolor": ALL_ACTIVE_COLOR}
            return style
        label = f"{results} = {op.name}" if results else op.name
        role = role_of(op)
        if role is None:
            return {"label": label}
        mask = role.active_mask
        words = ", ".join("active" if flag else "fixed" for flag in mask)
        color = ALL_ACTIVE_COLOR if all(mask) else SOME_FIXED_COLOR
        style = {"label": f"{label}\n[{words}]", "style": "filled", "fillcolor": color}
        if is_fanout_add(op, fragment):
            style |= {"shape": FANOUT_SHAPE, "tooltip": "fan-out add (linear-transpose)"}
        return style

    def _operand_edges(self, op: Operation, fragment: Fragment) -> Iterator[str]:
        """The edges into `op` drawn in its fragment; references go to `self.references`."""
        role = role_of(op)
        for index, operand in enumerate(op.operands):
            style: dict[str, str] = {}
            if role is not None and role.active_mask[index]:
                style["color"] = ACTIVE_EDGE_COLOR
            edge = self._edge(operand, self.nodes[op], fragment, style)
            if edge is not None:
                yield edge

    def _edge(
        self, value: SSAValue, target: str, fragment: Fragment, style: dict[str, str]
    ) -> str | None:
        """An edge from the op defining `value` to node `target` (in `fragment`);
        a reference from another fragment is dashed and kept for the end."""
        if not isinstance(value, OpResult) or value.op not in self.nodes:
            return None  # not a value of a drawn op
        if len(value.op.results) > 1:
            style = {**style, "label": f"#{value.index}"}
        if self.fragment_of[value.op] is not fragment:
            self.references.append(
                f"{self.nodes[value.op]} -> {target}{attributes(**style, style='dashed')};"
            )
            return None
        return f"{self.nodes[value.op]} -> {target}{attributes(**style)};"

    def _outputs(self, fragment: Fragment, op: OutputOp) -> tuple[list[str], list[str]]:
        """The nodes of the output slots (the residual outputs of a forward graph
        say so) and the edges into them."""
        labels = _output_labels(fragment, len(op.outputs))
        residuals = residuals_of(fragment) if isinstance(fragment, GraphOp) else None
        first_residual = len(op.outputs) - residuals.count.data if residuals else len(op.outputs)
        nodes: list[str] = []
        edges: list[str] = []
        for position, (value, label) in enumerate(zip(op.outputs, labels, strict=True)):
            node, self.output_count = f"o{self.output_count}", self.output_count + 1
            nodes.append(f"{node}{attributes(label=label, shape='house')};")
            if residuals is not None and position >= first_residual:
                self.residual_outputs[(position - first_residual, residuals.pass_id.data)] = node
            if (edge := self._edge(value, node, fragment, {})) is not None:
                edges.append(edge)
        return nodes, edges

    def _residual_references(self, graphs: list[GraphOp]) -> None:
        """Dashed edges from a forward graph's residual outputs to the residual
        inputs that read them (`unzip`)."""
        for graph in graphs:
            for op in fragment_inputs(graph):
                key = op.key
                if not isinstance(key, ResidualKeyAttr):
                    continue
                source = self.residual_outputs.get((key.index.data, key.pass_id.data))
                if source is not None:
                    self.references.append(
                        f"{source} -> {self.nodes[op]}{attributes(style='dashed')};"
                    )


def _cluster_label(fragment: Fragment, path: str) -> str:
    if isinstance(fragment, LinearOp):
        flags = ", ".join("true" if flag else "false" for flag in fragment.active_flags)
        return f"{path}  (cg.linear, pass {fragment.pass_id.value.data}, active [{flags}])"
    residuals = residuals_of(fragment)
    if residuals is not None:
        return (
            f"{path}  (cg.graph, {residuals.count.data} residuals of pass {residuals.pass_id.data})"
        )
    return f"{path}  (cg.graph)"


def _output_labels(fragment: Fragment, count: int) -> list[str]:
    """`output I` per output slot: I counts the requested outputs of a
    `cg.linear` (inactive ones are symbolic zeros, not returned); the residual
    outputs of a forward graph are `residual I`."""
    if isinstance(fragment, LinearOp):
        return [f"output {i}" for i, flag in enumerate(fragment.active_flags) if flag]
    residuals = residuals_of(fragment)
    kept = count - (residuals.count.data if residuals else 0)
    return [f"output {i}" for i in range(kept)] + [f"residual {i}" for i in range(count - kept)]
