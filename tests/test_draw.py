"""Pictures of fragments (docs/pictures.md): the DOT text of `tidu-opt -t dot`
and `td.draw` for the worked example `(x + x) * x`, and rendering through
Graphviz's `dot` executable (a fake one on PATH where Graphviz is missing)."""

from __future__ import annotations

import re
import shutil
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.parser import Parser

import tidu_mlir as td
from tidu_mlir import ad
from tidu_mlir.tools import opt
from tidu_mlir.tools.dot import (
    ACTIVE_EDGE_COLOR,
    ALL_ACTIVE_COLOR,
    FANOUT_SHAPE,
    SOME_FIXED_COLOR,
    module_to_dot,
)

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "square.mlir"
GRADIENT_PIPELINE = "linearize{graph=@f wrt=x},linear-transpose{graph=@f::@jvp1}"


def square(x):
    return (x + x) * x


# --------------------------------------------------------------------------
# Reading the DOT text back (the subset module_to_dot writes)
# --------------------------------------------------------------------------

_ATTRIBUTE = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
_NODE = re.compile(r"^(\w+) \[(.*)\];$")
_EDGE = re.compile(r"^(\w+) -> (\w+)(?: \[(.*)\])?;$")
_CLUSTER = re.compile(r'^subgraph "cluster_(.*)" \{$')


@dataclass
class Picture:
    """Nodes (id -> attributes, cluster), edges (source, target, attributes,
    cluster where declared) and clusters (path -> enclosing cluster)."""

    nodes: dict[str, dict[str, str]] = field(default_factory=dict)
    node_cluster: dict[str, str | None] = field(default_factory=dict)
    edges: list[tuple[str, str, dict[str, str], str | None]] = field(default_factory=list)
    clusters: dict[str, str | None] = field(default_factory=dict)

    def labelled(self, fragment: str) -> list[str]:
        """The labels of the nodes of one cluster, in order."""
        return [self.nodes[n]["label"] for n, c in self.node_cluster.items() if c == fragment]

    def node(self, label_start: str) -> str:
        (found,) = [n for n, a in self.nodes.items() if a["label"].startswith(label_start)]
        return found

    def dashed(self) -> list[tuple[str, str]]:
        return [(s, t) for s, t, a, _ in self.edges if a.get("style") == "dashed"]


def read_dot(text: str) -> Picture:
    picture = Picture()
    lines = [line.strip() for line in text.splitlines()]
    assert lines[0] == "digraph tidu {" and lines[-1] == "}"
    stack: list[str] = []
    for line in lines[1:-1]:
        current = stack[-1] if stack else None
        if match := _CLUSTER.match(line):
            picture.clusters[match.group(1)] = current
            stack.append(match.group(1))
        elif line == "}":
            stack.pop()
        elif match := _EDGE.match(line):
            attributes = dict(_ATTRIBUTE.findall(match.group(3) or ""))
            picture.edges.append((match.group(1), match.group(2), attributes, current))
        elif (match := _NODE.match(line)) and match.group(1) not in ("node", "edge"):
            attributes = {k: v.replace("\\n", "\n") for k, v in _ATTRIBUTE.findall(match.group(2))}
            picture.nodes[match.group(1)] = attributes
            picture.node_cluster[match.group(1)] = current
    assert not stack, "unbalanced clusters"
    return picture


@pytest.fixture
def example_at(parse):
    """The worked example after `linearize` (`jvp`) or also `linear-transpose` (`vjp`)."""

    def build(stage: str) -> Picture:
        module = parse(EXAMPLE.read_text())
        if stage in ("jvp", "vjp"):
            linear = ad.linearize((module, "@f"), wrt=["x"])
            if stage == "vjp":
                ad.linear_transpose(linear)
        return read_dot(module_to_dot(module))

    return build


# --------------------------------------------------------------------------
# The worked example, stage by stage
# --------------------------------------------------------------------------


def test_primal_is_one_cluster_of_plain_nodes(example_at) -> None:
    picture = example_at("primal")
    assert picture.clusters == {"@f": None}
    assert picture.labelled("@f") == ["%x: x", "%p1 = prim.add", "%p2 = prim.mul", "output 0"]
    assert picture.nodes[picture.node("%x")]["shape"] == "invhouse"
    assert picture.nodes[picture.node("output")]["shape"] == "house"
    assert not any("fillcolor" in attributes for attributes in picture.nodes.values())
    x, p1, p2, out = (picture.node(label) for label in ("%x", "%p1", "%p2", "output"))
    edges = [(s, t) for s, t, _, _ in picture.edges]
    assert edges == [(x, p1), (x, p1), (p1, p2), (x, p2), (p2, out)]
    assert picture.dashed() == []


def test_jvp_nests_a_cluster_with_linear_ops_coloured_by_mask(example_at) -> None:
    picture = example_at("jvp")
    assert picture.clusters == {"@f": None, "@f::@jvp1": "@f"}
    assert picture.labelled("@f::@jvp1") == [
        "%dx: tangent(x,1)",
        "%0 = prim.add\n[active, active]",
        "%1 = prim.mul\n[fixed, active]",
        "%2 = prim.mul\n[active, fixed]",
        "%3 = prim.add\n[active, active]",
        "output 0",
    ]
    fill = {a["label"].split("\n")[0]: a.get("fillcolor") for a in picture.nodes.values()}
    assert fill["%0 = prim.add"] == fill["%3 = prim.add"] == ALL_ACTIVE_COLOR
    assert fill["%1 = prim.mul"] == fill["%2 = prim.mul"] == SOME_FIXED_COLOR
    assert fill["%dx: tangent(x,1)"] == ALL_ACTIVE_COLOR  # a tangent seed is active
    assert fill["%p1 = prim.add"] is None and fill["%p2 = prim.mul"] is None  # primal: plain
    assert FANOUT_SHAPE not in {a.get("shape") for a in picture.nodes.values()}


def test_jvp_references_to_primal_values_are_dashed_edges_outside_clusters(example_at) -> None:
    picture = example_at("jvp")
    x, p1 = picture.node("%x"), picture.node("%p1")
    fixed_active, active_fixed = picture.node("%1 = prim.mul"), picture.node("%2 = prim.mul")
    assert picture.dashed() == [(p1, fixed_active), (x, active_fixed)]
    for source, target, attributes, cluster in picture.edges:
        crossing = picture.node_cluster[source] != picture.node_cluster[target]
        assert crossing == (attributes.get("style") == "dashed")
        assert cluster is None if crossing else cluster == picture.node_cluster[target]


def test_edges_into_active_operands_are_coloured(example_at) -> None:
    picture = example_at("jvp")
    dx, mul = picture.node("%dx"), picture.node("%1 = prim.mul")
    into_mul = {s: a.get("color") for s, t, a, _ in picture.edges if t == mul}
    assert into_mul == {picture.node("%p1"): None, dx: ACTIVE_EDGE_COLOR}


def test_vjp_marks_the_two_fanout_adds(example_at) -> None:
    picture = example_at("vjp")
    assert picture.clusters == {"@f": None, "@f::@jvp1": "@f", "@f::@jvp1::@vjp2": "@f::@jvp1"}
    fanout = [n for n, a in picture.nodes.items() if a.get("shape") == FANOUT_SHAPE]
    assert [picture.nodes[n]["label"] for n in fanout] == [
        "%6 = prim.add\n[active, active]",
        "%7 = prim.add\n[active, active]",
    ]
    assert {picture.node_cluster[n] for n in fanout} == {"@f::@jvp1::@vjp2"}
    assert all(picture.nodes[n]["fillcolor"] == ALL_ACTIVE_COLOR for n in fanout)
    # the transposed fragment reads x and p1 of @f: two more references
    x, p1 = picture.node("%x"), picture.node("%p1")
    assert picture.dashed()[2:] == [(x, picture.node("%4 =")), (p1, picture.node("%5 ="))]
    assert picture.nodes[picture.node("%ct")]["label"] == "%ct: cotangent(0,2)"


def test_unzip_draws_residual_references(parse) -> None:
    module = parse(EXAMPLE.read_text())
    linear = ad.linearize((module, "@f"), wrt=["x"])
    ad.unzip(linear.fragment, "save-all")
    picture = read_dot(module_to_dot(module))
    residual_outputs = [n for n, a in picture.nodes.items() if a["label"].startswith("residual")]
    residual_inputs = [n for n, a in picture.nodes.items() if ": residual(" in a["label"]]
    assert len(residual_outputs) == len(residual_inputs) == 2
    assert set(zip(residual_outputs, residual_inputs, strict=True)) <= set(picture.dashed())


# --------------------------------------------------------------------------
# tidu-opt -t dot
# --------------------------------------------------------------------------


def test_dot_target_prints_what_module_to_dot_gives(capsys, ctx: Context) -> None:
    assert opt.run([str(EXAMPLE), "-p", GRADIENT_PIPELINE]) == 0
    module = Parser(ctx, capsys.readouterr().out).parse_module()
    assert opt.run([str(EXAMPLE), "-p", GRADIENT_PIPELINE, "-t", "dot"]) == 0
    assert capsys.readouterr().out == module_to_dot(module)


def test_docs_show_what_the_tool_prints(capsys) -> None:
    """docs/pictures.md quotes the DOT text of the worked example's gradient."""
    docs = (EXAMPLE.parents[1] / "docs" / "pictures.md").read_text()
    quoted = docs.split("```dot\n")[1].split("```")[0]
    assert opt.run([str(EXAMPLE), "-p", GRADIENT_PIPELINE, "-t", "dot"]) == 0
    assert capsys.readouterr().out == quoted


def test_dot_target_without_fragments_is_a_diagnostic(capsys, tmp_path: Path) -> None:
    source = tmp_path / "empty.mlir"
    source.write_text("builtin.module {\n}\n")
    assert opt.run([str(source), "-t", "dot"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: nothing to draw: the module holds no cg.graph fragment")
    assert "Traceback" not in err


# --------------------------------------------------------------------------
# td.draw
# --------------------------------------------------------------------------


@pytest.mark.parametrize("stage", ["trace", "jvp", "unzip", "vjp"])
def test_draw_is_the_picture_of_td_ir(stage: str, ctx: Context) -> None:
    module = Parser(ctx, td.ir(square, 3.0, stage=stage)).parse_module()
    assert td.draw(square, 3.0, stage=stage) == module_to_dot(module)


def test_draw_vjp_has_the_worked_example_shape() -> None:
    picture = read_dot(td.draw(square, 3.0, stage="vjp"))
    assert list(picture.clusters) == ["@f", "@f::@jvp1", "@f::@jvp1::@vjp2"]
    assert sum(a.get("shape") == FANOUT_SHAPE for a in picture.nodes.values()) == 2
    assert len(picture.dashed()) == 4


def test_draw_refuses_stages_without_fragments() -> None:
    with pytest.raises(ValueError, match="stage 'materialize' cannot be drawn"):
        td.draw(square, 3.0, stage="materialize")


def test_draw_to_a_file_without_graphviz_says_so(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    target = tmp_path / "square.svg"
    with pytest.raises(RuntimeError, match="Graphviz is not installed"):
        td.draw(square, 3.0, stage="vjp", path=target)
    assert not target.exists()


def _fake_dot(directory: Path, body: str) -> None:
    """A `dot` executable in `directory` running the Python code `body`."""
    directory.mkdir()
    script = directory / "dot"
    script.write_text(f"#!{sys.executable}\nimport sys\n{body}")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def test_draw_renders_through_dot_with_format_and_path(monkeypatch, tmp_path: Path) -> None:
    # The fake `dot` records its arguments and copies the DOT text to the -o file.
    record = f"open({str(tmp_path / 'args')!r}, 'w').write(' '.join(sys.argv[1:]))\n"
    _fake_dot(tmp_path / "bin", record + "open(sys.argv[3], 'w').write(sys.stdin.read())\n")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    target = tmp_path / "square.png"
    text = td.draw(square, 3.0, stage="jvp", path=target, format="png")
    assert (tmp_path / "args").read_text() == f"-Tpng -o {target}"
    assert target.read_text() == text


def test_a_failing_dot_is_a_runtime_error_with_its_message(monkeypatch, tmp_path: Path) -> None:
    _fake_dot(tmp_path / "bin", "sys.exit('Format: \"nope\" not recognized')\n")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    with pytest.raises(RuntimeError, match='dot -Tnope` failed: Format: "nope" not recognized'):
        td.draw(square, 3.0, path=tmp_path / "f.nope", format="nope")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz (dot) is not installed")
def test_draw_renders_an_svg_with_graphviz(tmp_path: Path) -> None:
    target = tmp_path / "square.svg"
    td.draw(square, 3.0, stage="vjp", path=target)
    svg = target.read_text()
    assert "<svg" in svg and "@f::@jvp1::@vjp2" in svg
