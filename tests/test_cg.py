"""The cg dialect: keys, pass ids, verifiers, and the fragment walks of graph.py."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import ModuleOp, TensorType, f64
from xdsl.ir import Block, Region

from tidu_mlir.dialects import cg, prim
from tidu_mlir.graph import (
    FragmentNotFoundError,
    fragment_path,
    fragment_signature,
    lookup_fragment,
    reachable_ops,
)

NESTED = """
builtin.module attributes {cg.next_pass_id = 3 : i64} {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    %y = cg.input #cg.key<"y"> : tensor<f64>
    %u = cg.input #cg.key<"unused"> : tensor<f64>
    %p = prim.mul %x, %y : tensor<f64>
    cg.linear @jvp1 pass 1 active [true] {
      %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
      %t = prim.mul %y, %dx {role = #cg.linearized<[fixed, active]>} : tensor<f64>
      cg.linear @vjp2 pass 2 active [true] {
        %ct = cg.input #cg.cotangent<0, 2> : tensor<f64>
        %g = prim.mul %y, %ct {role = #cg.linearized<[fixed, active]>} : tensor<f64>
        cg.output %g : tensor<f64>
      }
      cg.output %t : tensor<f64>
    }
    cg.output %p : tensor<f64>
  }
}
"""


@pytest.mark.parametrize(
    "spec",
    [
        "x",
        "weights.0",
        "tangent(x,1)",
        "tangent(tangent(x,1),3)",
        "cotangent(0,2)",
        "tangent(cotangent(1,2),4)",
    ],
)
def test_key_spec_round_trip(spec: str) -> None:
    assert cg.key_spec(cg.parse_key_spec(spec)) == spec


def test_key_spec_rejects_garbage() -> None:
    with pytest.raises(ValueError, match="malformed key"):
        cg.parse_key_spec("tangent(x)")


def test_tangent_of_nests() -> None:
    key = cg.tangent_of(cg.tangent_of(cg.KeyAttr("x"), 1), 3)
    assert str(key) == '#cg.tangent<#cg.tangent<#cg.key<"x">, 1>, 3>'
    assert key != cg.tangent_of(cg.tangent_of(cg.KeyAttr("x"), 3), 1)


def test_allocate_pass_id_is_monotonic() -> None:
    module = ModuleOp([])
    assert [cg.allocate_pass_id(module) for _ in range(3)] == [1, 2, 3]
    assert cg.next_pass_id(module) == 4


def test_lookup_fragment_and_paths(parse) -> None:
    module = parse(NESTED)
    inner = lookup_fragment(module, "@f::@jvp1::@vjp2")
    assert isinstance(inner, cg.LinearOp)
    assert fragment_path(inner) == "@f::@jvp1::@vjp2"
    assert lookup_fragment(module, "f") is lookup_fragment(module, "@f")


def test_lookup_fragment_lists_what_exists(parse) -> None:
    module = parse(NESTED)
    with pytest.raises(FragmentNotFoundError, match=r"fragments: @f, @f::@jvp1, @f::@jvp1::@vjp2"):
        lookup_fragment(module, "@f::@nope")


def test_signature_order(parse) -> None:
    """Reached inputs of enclosing fragments first, then all own inputs."""
    module = parse(NESTED)
    keys = [
        cg.key_spec(op.key)
        for op in fragment_signature(lookup_fragment(module, "@f::@jvp1::@vjp2"))
    ]
    assert keys == ["y", "cotangent(0,2)"]
    keys = [cg.key_spec(op.key) for op in fragment_signature(lookup_fragment(module, "@f::@jvp1"))]
    assert keys == ["y", "tangent(x,1)"]
    keys = [cg.key_spec(op.key) for op in fragment_signature(lookup_fragment(module, "@f"))]
    assert keys == ["x", "y", "unused"]


def _chain(length: int) -> tuple[ModuleOp, cg.GraphOp]:
    t = TensorType(f64, [])
    block = Block()
    x = cg.InputOp(cg.KeyAttr("x"), t)
    block.add_op(x)
    value = x.result
    for _ in range(length):
        op = prim.SinOp(value)
        block.add_op(op)
        value = op.result
    block.add_op(cg.OutputOp([value]))
    graph = cg.GraphOp("chain", Region(block))
    return ModuleOp([graph]), graph


def test_reachable_ops_deep_chain_is_iterative() -> None:
    """20,000 ops deep: no recursion limit, defs before uses."""
    module, graph = _chain(20_000)
    order = reachable_ops([graph.body.block.last_op.operands[0]])
    assert len(order) == 20_001
    position = {op: i for i, op in enumerate(order)}
    assert all(position[o.owner] < position[op] for op in order for o in op.operands)
    module.verify()


def test_reachable_ops_skips_unreached(parse) -> None:
    module = parse(NESTED)
    graph = lookup_fragment(module, "@f")
    names = [op.name for op in reachable_ops(graph.body.block.last_op.operands)]
    assert names == ["cg.input", "cg.input", "prim.mul"]


SYNTAX = """\
builtin.module {
  cg.graph @f {
    %x = cg.input #cg.key<"x\\0A"> {a = 1 : i64} : tensor<f64>
    %t = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
    %c = cg.input #cg.cotangent<0, 2> : tensor<f64>
    %r = cg.input #cg.residual<1, 3> : tensor<3xf64>
    cg.output %x, %r : tensor<f64>, tensor<3xf64> {b = 2 : i64}
  }
  cg.graph @g {
    cg.output {c = 3 : i64}
  }
  cg.graph @h {
    cg.output
  }
}
"""
"""`cg.input` and `cg.output` in each form they print to."""


def test_inputs_and_outputs_print_as_they_are_written(parse) -> None:
    assert str(parse(SYNTAX)) == SYNTAX.rstrip("\n")
