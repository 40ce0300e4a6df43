"""The AD engine is generic: the unchanged passes differentiate a dialect they
have never heard of (tests/ad/toy_dialect.py), checked against closed forms,
finite differences and the adjoint identity through the reference evaluator."""

from __future__ import annotations

import time

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp, TensorType, f64
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import PassPipeline

from tidu_mlir import ad
from tidu_mlir.diagnostics import LocatingParser, OpError
from tidu_mlir.dialects import cg
from tidu_mlir.graph import FragmentNotFoundError, fragment_outputs, lookup_fragment
from tidu_mlir.interp import evaluate_fragment, evaluate_func
from tidu_mlir.passes.options import quote_pass_options
from tidu_mlir.registry import all_passes, make_context

from . import toy_dialect as toy


@pytest.fixture(scope="module")
def toy_ctx() -> Context:
    return toy.register_toy(make_context())


@pytest.fixture
def parse(toy_ctx: Context):
    def _parse(text: str) -> ModuleOp:
        module = LocatingParser(toy_ctx, text, "toy.mlir").parse_module()
        module.verify()
        return module

    return _parse


def run(fragment: cg.Fragment, *args: object) -> list[np.ndarray]:
    return evaluate_fragment(fragment, list(args))


def ops_of(fragment: cg.Fragment) -> list[str]:
    return [op.name for op in fragment.body.block.ops]


WORKED = """
cg.graph @f {
  %x = cg.input #cg.key<"x"> : tensor<f64>
  %p1 = toy.add %x, %x : tensor<f64>
  %p2 = toy.mul %p1, %x : tensor<f64>
  cg.output %p2 : tensor<f64>
}
"""


def mixed(x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    return [np.sin(x * y) * 3 * x + np.cos(x * y), np.cos(x * y)]


# --------------------------------------------------------------------------
# The worked example: (x+x)*x
# --------------------------------------------------------------------------


def test_worked_example_jvp_structure_and_value(parse) -> None:
    module = parse(WORKED)
    lin = ad.linearize((module, "@f"), wrt=["x"])
    module.verify()
    assert lin.fragment.sym_name.data == "jvp1"
    assert ops_of(lin.fragment) == [
        "cg.input",
        "toy.add",
        "toy.mul",
        "toy.mul",
        "toy.add",
        "cg.output",
    ]
    masks = [
        cg.role_of(op).active_mask  # type: ignore[union-attr]
        for op in lin.fragment.body.block.ops
        if cg.role_of(op) is not None
    ]
    assert masks == [(True, True), (False, True), (True, False), (True, True)]
    assert [key for key, _ in lin.tangent_inputs] == [cg.tangent_of(cg.KeyAttr("x"), 1)]
    # 4x * dx at x = 3, dx = 0.5
    (value,) = run(lin.fragment, 3.0, 0.5)
    assert value == pytest.approx(6.0)


def test_worked_example_transpose_has_two_fanout_adds(parse) -> None:
    module = parse(WORKED)
    vjp = ad.linear_transpose(ad.linearize((module, "@f"), wrt=["x"]))
    module.verify()
    assert vjp.fragment.sym_name.data == "vjp2"
    assert ops_of(vjp.fragment) == [
        "cg.input",
        "toy.mul",
        "toy.mul",
        "toy.add",
        "toy.add",
        "cg.output",
    ]
    c0 = vjp.tangent_inputs[0][1]
    ops = list(vjp.fragment.body.block.ops)
    c1, c2, c3, c4 = ops[1:5]
    assert c1.operands[1] is c0 and c2.operands[1] is c0
    # c3 = c2 + c1, c4 = c3 + c1 (the fan-out adds of the worked example)
    assert tuple(c3.operands) == (c2.results[0], c1.results[0])
    assert tuple(c4.operands) == (c3.results[0], c1.results[0])
    for add in (c3, c4):
        assert cg.role_of(add) == cg.LinearizedRoleAttr([True, True])
    assert vjp.tangent_inputs[0][0] == cg.CotangentKeyAttr(0, 2)
    (grad,) = run(vjp.fragment, 3.0, 1.0)
    assert grad == pytest.approx(12.0)  # 4x


def test_worked_example_for_second_derivative(parse) -> None:
    module = parse(WORKED)
    vjp = ad.linear_transpose(ad.linearize((module, "@f"), wrt=["x"]))
    hvp = ad.linearize(vjp.fragment, wrt=["x"])
    module.verify()
    assert hvp.fragment.sym_name.data == "jvp3"
    # signature: the cotangent seed of @vjp2, then the new tangent input
    (value,) = run(hvp.fragment, 1.0, 1.0)
    assert value == pytest.approx(4.0)
    (value,) = run(hvp.fragment, 2.0, 0.5)
    assert value == pytest.approx(4.0)
    # RoR: transposing the FoR fragment works too (<ct, H dx> = <H ct, dx>)
    ror = ad.linear_transpose(hvp)
    module.verify()
    (value,) = run(ror.fragment, 2.0, 3.0)
    assert value == pytest.approx(4.0 * 2.0 * 3.0)


def test_fof_third_order(parse) -> None:
    module = parse(WORKED)  # 2x^2
    first = ad.linearize((module, "@f"), wrt=["x"])
    second = ad.linearize(first.fragment, wrt=["x"])
    third = ad.linearize(second.fragment, wrt=["x"])
    module.verify()
    assert [k for k, _ in third.tangent_inputs] == [cg.tangent_of(cg.KeyAttr("x"), 3)]
    # d2 = 4 dx1 dx2; the third derivative is zero: the output is inactive
    (value,) = run(second.fragment, 0.5, 2.0)
    assert value == pytest.approx(4.0)
    assert third.tangent_outputs == [None]
    assert third.fragment.active_flags == (False,)


# --------------------------------------------------------------------------
# Values against closed forms, finite differences and the adjoint identity
# --------------------------------------------------------------------------


def finite_difference(x: np.ndarray, y: np.ndarray, dx: np.ndarray, dy: np.ndarray):
    eps = 1e-6
    plus = mixed(x + eps * dx, y + eps * dy)
    minus = mixed(x - eps * dx, y - eps * dy)
    return [(p - m) / (2 * eps) for p, m in zip(plus, minus, strict=True)]


def test_jvp_matches_closed_form_and_finite_differences(parse) -> None:
    module = parse(toy.MIXED)
    rng = np.random.default_rng(0)
    x, y, dx, dy = (rng.normal(size=3) for _ in range(4))
    lin = ad.linearize((module, "@f"), wrt=["x", "y"])
    module.verify()
    # the fragment computes f too: check the evaluator agrees with numpy first
    np.testing.assert_allclose(run(lookup_fragment(module, "@f"), x, y), mixed(x, y))
    out = run(lin.fragment, x, y, dx, dy)
    expected_c = -np.sin(x * y) * (dx * y + x * dy)
    expected_b = np.cos(x * y) * (dx * y + x * dy) * 3 * x + np.sin(x * y) * 3 * dx + expected_c
    np.testing.assert_allclose(out[0], expected_b, rtol=1e-12)
    np.testing.assert_allclose(out[1], expected_c, rtol=1e-12)
    for got, fd in zip(out, finite_difference(x, y, dx, dy), strict=True):
        np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)


def test_vjp_adjoint_identity_and_gradient(parse) -> None:
    module = parse(toy.MIXED)
    rng = np.random.default_rng(1)
    x, y, dx, dy, ct_b, ct_c = (rng.normal(size=3) for _ in range(6))
    lin = ad.linearize((module, "@f"), wrt=["x", "y"])
    vjp = ad.linear_transpose(lin)
    module.verify()
    jvp_b, jvp_c = run(lin.fragment, x, y, dx, dy)
    # signature of @vjp: x, y (reached in @f), the two seeds
    ct_x, ct_y = run(vjp.fragment, x, y, ct_b, ct_c)
    lhs = ct_b @ jvp_b + ct_c @ jvp_c
    rhs = ct_x @ dx + ct_y @ dy
    assert lhs == pytest.approx(rhs, rel=1e-12)
    # gradient of sum(b) wrt x by finite differences along each basis vector
    ct_x, ct_y = run(vjp.fragment, x, y, np.ones(3), np.zeros(3))
    for i in range(3):
        e = np.eye(3)[i]
        (fd_b, _) = finite_difference(x, y, e, np.zeros(3))
        assert ct_x[i] == pytest.approx(fd_b.sum(), rel=1e-6)


def test_multi_result_op_seeded_on_one_result(parse) -> None:
    """Only the cos result of toy.sincos reaches the output."""
    module = parse(
        """
        cg.graph @f {
          %x = cg.input #cg.key<"x"> : tensor<f64>
          %s, %c = toy.sincos %x : tensor<f64>
          %y = toy.scale %c by 2.0 : tensor<f64>
          cg.output %y : tensor<f64>
        }
        """
    )
    lin = ad.linearize((module, "@f"), wrt=["x"])
    vjp = ad.linear_transpose(lin)
    module.verify()
    x = 0.7
    (jvp,) = run(lin.fragment, x, 1.0)
    assert jvp == pytest.approx(-2 * np.sin(x))
    (grad,) = run(vjp.fragment, x, 1.0)
    assert grad == pytest.approx(-2 * np.sin(x))
    # the dead tangent of the sin result gets no cotangent: nothing emitted for it
    assert ops_of(vjp.fragment).count("toy.mul") == 1


def test_value_output_twice_gets_both_seeds(parse) -> None:
    module = parse(
        """
        cg.graph @f {
          %x = cg.input #cg.key<"x"> : tensor<f64>
          %p = toy.mul %x, %x : tensor<f64>
          cg.output %p, %p : tensor<f64>, tensor<f64>
        }
        """
    )
    vjp = ad.linear_transpose(ad.linearize((module, "@f"), wrt=["x"]))
    module.verify()
    (grad,) = run(vjp.fragment, 3.0, 1.0, 2.0)
    assert grad == pytest.approx(2 * 3.0 * (1.0 + 2.0))


def test_input_output_twice_accumulates_with_a_fallback_add(parse) -> None:
    module = parse(
        """
        cg.graph @f {
          %x = cg.input #cg.key<"x"> : tensor<f64>
          %p = toy.scale %x by 2.0 : tensor<f64>
          cg.output %x, %x, %p : tensor<f64>, tensor<f64>, tensor<f64>
        }
        """
    )
    vjp = ad.linear_transpose(ad.linearize((module, "@f"), wrt=["x"]))
    module.verify()
    (grad,) = run(vjp.fragment, 1.0, 10.0, 100.0)
    assert grad == pytest.approx(1.0 + 10.0 + 200.0)


def test_transpose_of_transpose_of_square_is_2x(parse) -> None:
    module = parse(
        """
        cg.graph @f {
          %x = cg.input #cg.key<"x"> : tensor<f64>
          %p = toy.mul %x, %x : tensor<f64>
          cg.output %p : tensor<f64>
        }
        """
    )
    lin = ad.linearize((module, "@f"), wrt=["x"])
    vjp = ad.linear_transpose(lin)
    vjp_t = ad.linear_transpose(vjp)
    module.verify()
    # the two structurally identical products x*ct stay two contributions
    assert ops_of(vjp.fragment).count("toy.mul") == 2
    (value,) = run(vjp_t.fragment, 3.0, 1.0)
    assert value == pytest.approx(6.0)
    (value,) = run(lin.fragment, 3.0, 1.0)
    assert value == pytest.approx(6.0)


def test_unused_wrt_key_is_seeded_and_inactive(parse) -> None:
    module = parse(
        """
        cg.graph @f {
          %x = cg.input #cg.key<"x"> : tensor<f64>
          %y = cg.input #cg.key<"y"> : tensor<2xf64>
          %p = toy.mul %x, %x : tensor<f64>
          cg.output %p, %x : tensor<f64>, tensor<f64>
        }
        """
    )
    lin = ad.linearize((module, "@f"), wrt=["y"], outputs=[0])
    module.verify()
    assert [k for k, _ in lin.tangent_inputs] == [cg.tangent_of(cg.KeyAttr("y"), 1)]
    assert lin.tangent_inputs[0][1].type == TensorType(f64, [2])
    assert lin.tangent_outputs == [None]
    assert lin.fragment.active_flags == (False,)
    vjp = ad.linear_transpose(lin)
    module.verify()
    assert vjp.tangent_inputs == [] and vjp.tangent_outputs == [None]
    both = ad.linearize((module, "@f"), wrt=["y", "x"], outputs=[1, 0])
    assert [cg.key_spec(k) for k, _ in both.tangent_inputs] == ["tangent(y,3)", "tangent(x,3)"]
    assert both.fragment.active_flags == (True, True)
    assert both.tangent_outputs[0] is both.tangent_inputs[1][1]  # output x: its tangent


def test_aliases_treat_an_input_as_an_existing_value(parse) -> None:
    """Checkpointing hook: @f takes h = x*x as an input; aliasing it to %v
    differentiates (x*x)*x instead of h*x."""
    module = parse(
        """
        cg.graph @f {
          %x = cg.input #cg.key<"x"> : tensor<f64>
          %h = cg.input #cg.key<"h"> : tensor<f64>
          %v = toy.mul %x, %x : tensor<f64>
          %p = toy.mul %h, %x : tensor<f64>
          cg.output %p, %v : tensor<f64>, tensor<f64>
        }
        """
    )
    fragment = lookup_fragment(module, "@f")
    v = fragment_outputs(fragment)[1]
    lin = ad.linearize(fragment, wrt=["x"], outputs=[0], aliases={"h": v})
    module.verify()
    x = 2.0
    # signature of @jvp: x, h (reached in @f), dx; h is fed the checkpointed x*x
    (value,) = run(lin.fragment, x, x * x, 1.0)
    assert value == pytest.approx(3 * x * x)
    with pytest.raises(OpError, match="both in wrt and aliased"):
        ad.linearize(fragment, wrt=["h"], aliases={"h": v})


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


def test_missing_jvp_rule_names_op_and_rule_kind(parse) -> None:
    module = parse(
        """
        cg.graph @f {
          %x = cg.input #cg.key<"x"> : tensor<f64>
          %y = cg.input #cg.key<"y"> : tensor<f64>
          %c = toy.noad %y : tensor<f64>
          %q = toy.add %x, %c : tensor<f64>
          cg.output %q : tensor<f64>
        }
        """
    )
    with pytest.raises(ad.ADRuleError, match="unsupported jvp AD rule for toy.noad") as info:
        ad.linearize((module, "@f"), wrt=["y"])
    assert info.value.rule == "jvp" and info.value.op_name == "toy.noad"
    assert info.value.op is not None and info.value.op.operands[0].name_hint == "y"
    module.verify()  # nothing was inserted, no dangling uses
    assert len(list(lookup_fragment(module, "@f").body.block.ops)) == 5
    assert cg.next_pass_id(module) == 1  # the refused pass took no id
    # an op without rules is fine where no tangent flows through it
    lin = ad.linearize((module, "@f"), wrt=["x"])
    assert lin.fragment.sym_name.data == "jvp1"
    (value,) = run(lin.fragment, 0.5)  # dq = dx
    assert value == pytest.approx(0.5)


def test_missing_transpose_rule_names_op_and_rule_kind(parse) -> None:
    module = parse(
        """
        cg.graph @f {
          %x = cg.input #cg.key<"x"> : tensor<f64>
          %p = toy.copy %x : tensor<f64>
          cg.output %p : tensor<f64>
        }
        """
    )
    lin = ad.linearize((module, "@f"), wrt=["x"])
    with pytest.raises(ad.ADRuleError, match="unsupported transpose AD rule for toy.copy") as info:
        ad.linear_transpose(lin)
    assert info.value.rule == "transpose"
    module.verify()


def test_unknown_wrt_key_lists_existing_inputs(parse) -> None:
    module = parse(toy.MIXED)
    with pytest.raises(OpError, match=r"unknown wrt key 'z' for @f; inputs: x, y"):
        ad.linearize((module, "@f"), wrt=["z"])
    with pytest.raises(OpError, match="malformed key"):
        ad.linearize((module, "@f"), wrt=["tangent(x)"])
    with pytest.raises(OpError, match="output index 2 out of range: @f has 2 output"):
        ad.linearize((module, "@f"), wrt=["x"], outputs=[2])
    assert cg.next_pass_id(module) == 1  # no pass id spent on refused input


def test_unknown_fragment_lists_existing_fragments(parse) -> None:
    module = parse(WORKED)
    ad.linearize((module, "@f"), wrt=["x"])
    with pytest.raises(FragmentNotFoundError, match=r"no fragment '@g'.*fragments: @f, @f::@jvp1"):
        ad.linearize((module, "@g"), wrt=["x"])


def test_name_collision_is_refused(parse) -> None:
    module = parse(WORKED)
    ad.linearize((module, "@f"), wrt=["x"], name="d")
    with pytest.raises(OpError, match="a symbol '@d' already exists in @f"):
        ad.linearize((module, "@f"), wrt=["x"], name="d")


def test_non_linear_fragment_refused_by_transpose(parse) -> None:
    module = parse(
        """
        cg.graph @f {
          %x = cg.input #cg.key<"x"> : tensor<f64>
          cg.linear @bad pass 1 active [true] {
            %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
            %t = toy.mul %dx, %dx {role = #cg.linearized<[active, active]>} : tensor<f64>
            cg.output %t : tensor<f64>
          }
          cg.output %x : tensor<f64>
        }
        """
    )
    bad = lookup_fragment(module, "@f::@bad")
    assert isinstance(bad, cg.LinearOp)
    with pytest.raises(OpError, match=r"'toy.mul' is not linear in operands #0, #1") as info:
        ad.linear_transpose(bad)
    assert info.value.op is not None and info.value.op.name == "toy.mul"
    assert isinstance(info.value.op.location, FileLineColLoc)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "%t = toy.scale %dx by 2.0 : tensor<f64>",
            r"'toy.scale' has no linearized role \(it is primary\) but operand #0 depends",
        ),
        (
            "%t = toy.mul %x, %dx {role = #cg.linearized<[active, fixed]>} : tensor<f64>",
            r"marks operand #0 active, but operand #1 depends on a tangent input of @f::@bad",
        ),
        (
            "%t, %u = toy.sincos %dx {role = #cg.linearized<[active]>} : tensor<f64>",
            r"'toy.sincos' is not linear in operand #0",
        ),
        (
            "%t = toy.noad %dx {role = #cg.linearized<[active]>} : tensor<f64>",
            r"'toy.noad' has no AD rules",
        ),
        (
            "%t = toy.scale %x by 2.0 : tensor<f64>",
            r"output #0 of @f::@bad does not depend on a tangent input",
        ),
    ],
)
def test_verify_linearity_messages(parse, body: str, message: str) -> None:
    module = parse(
        f"""
        cg.graph @f {{
          %x = cg.input #cg.key<"x"> : tensor<f64>
          cg.linear @bad pass 1 active [true] {{
            %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
            {body}
            cg.output %t : tensor<f64>
          }}
          cg.output %x : tensor<f64>
        }}
        """
    )
    with pytest.raises(OpError, match=message):
        ad.verify_module_linearity(module)


def test_emitted_ops_copy_the_primal_location(parse) -> None:
    module = parse(WORKED)
    lin = ad.linearize((module, "@f"), wrt=["x"])
    primal_mul = [op for op in lookup_fragment(module, "@f").body.block.ops][2]
    emitted_muls = [op for op in lin.fragment.body.block.ops if op.name == "toy.mul"]
    assert all(op.location == primal_mul.location for op in emitted_muls)
    assert isinstance(primal_mul.location, FileLineColLoc)


# --------------------------------------------------------------------------
# The passes (thin wrappers) and materialize
# --------------------------------------------------------------------------


def run_pipeline(module: ModuleOp, ctx: Context, pipeline: str) -> None:
    PassPipeline.parse_spec(all_passes(), quote_pass_options(pipeline)).apply(ctx, module)
    module.verify()


def find_func(module: ModuleOp, name: str) -> FuncOp:
    for op in module.body.block.ops:
        if isinstance(op, FuncOp) and op.sym_name.data == name:
            return op
    raise AssertionError(f"no func @{name}")


def test_passes_compose_to_a_materialized_gradient(parse, toy_ctx: Context) -> None:
    module = parse(toy.MIXED)
    run_pipeline(
        module,
        toy_ctx,
        "linearize{graph=@f wrt=x,y outputs=0},"
        "linear-transpose{graph=@f::@jvp1 name=grad},"
        "materialize{graph=@f::@jvp1::@grad name=f_grad},"
        "verify-linearity",
    )
    function = find_func(module, "f_grad")
    keys = [attrs.data[ad.KEY_ARG_ATTR] for attrs in function.arg_attrs.data]  # type: ignore[union-attr]
    assert [cg.key_spec(k) for k in keys] == ["x", "y", "cotangent(0,2)"]  # type: ignore[arg-type]
    x, y = np.array([0.1, 0.2, 0.3]), np.array([1.0, -2.0, 0.5])
    ct_x, ct_y = evaluate_func(function, [x, y, np.ones(3)])
    eye = np.eye(3)
    for i in range(3):
        assert ct_x[i] == pytest.approx(finite_difference(x, y, eye[i], 0 * x)[0].sum(), rel=1e-6)
        assert ct_y[i] == pytest.approx(finite_difference(x, y, 0 * x, eye[i])[0].sum(), rel=1e-6)


def test_materialize_cse_merges_across_fragments_but_keeps_roles_apart(parse) -> None:
    module = parse(
        """
        cg.graph @f {
          %x = cg.input #cg.key<"x"> : tensor<f64>
          %a = toy.mul %x, %x : tensor<f64>
          cg.linear @l pass 1 active [true] {
            %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
            %b = toy.mul %x, %x : tensor<f64>
            %c = toy.mul %x, %dx {role = #cg.linearized<[fixed, active]>} : tensor<f64>
            %d = toy.mul %x, %dx : tensor<f64>
            %e = toy.add %a, %b : tensor<f64>
            %g = toy.add %c, %d : tensor<f64>
            %h = toy.mul %e, %g : tensor<f64>
            cg.output %h : tensor<f64>
          }
          cg.output %a : tensor<f64>
        }
        """
    )
    function = ad.materialize((module, "@f::@l"))
    module.verify()
    assert function.sym_name.data == "f_l"
    names = [op.name for op in function.body.block.ops]
    # %a and %b merge; %c (linearized) and %d (primary) stay apart
    assert names.count("toy.mul") == 4
    (value,) = evaluate_func(function, [3.0, 0.5])
    assert value == pytest.approx((9 + 9) * (1.5 + 1.5))
    with pytest.raises(OpError, match="'@f_l' already exists in the module"):
        ad.materialize((module, "@f::@l"))


# --------------------------------------------------------------------------
# Scale: a 10,000-op chain
# --------------------------------------------------------------------------


def build_chain(length: int) -> tuple[ModuleOp, cg.GraphOp]:
    """x -> (v*x, v+x, 0.5 v, sin v) repeated: a deep chain, built directly."""
    scalar = TensorType(f64, [])
    block = Block()
    input_op = cg.InputOp(cg.KeyAttr("x"), scalar)
    block.add_op(input_op)
    x = input_op.result
    value: SSAValue = x
    for index in range(length):
        op: Operation
        match index % 4:
            case 0:
                op = toy.MulOp(value, x)
            case 1:
                op = toy.AddOp(value, x)
            case 2:
                op = toy.ScaleOp(value, 0.5)
            case _:
                op = toy.SinCosOp(value)
        block.add_op(op)
        value = op.results[0]
    block.add_op(cg.OutputOp([value]))
    graph = cg.GraphOp("f", Region(block))
    return ModuleOp([graph]), graph


def derive(length: int) -> tuple[float, ModuleOp, FuncOp]:
    module, graph = build_chain(length)
    start = time.perf_counter()
    vjp = ad.linear_transpose(ad.linearize(graph, wrt=["x"]))
    function = ad.materialize(vjp.fragment, name="grad")
    return time.perf_counter() - start, module, function


def test_deep_chain_is_linear_time_without_recursion_error() -> None:
    small, _, _ = derive(2_000)
    large, module, function = derive(10_000)
    print(f"\nlinearize+transpose+materialize: 2000 ops {small:.2f}s, 10000 ops {large:.2f}s")
    assert large < 15 * max(small, 0.05)  # linear would be 5x; generous for noise
    assert len(list(function.body.block.ops)) > 10_000
    # the result is still right: compare with finite differences on a short chain
    small_module, graph = build_chain(13)
    vjp = ad.linear_transpose(ad.linearize(graph, wrt=["x"]))
    (grad,) = run(vjp.fragment, 0.3, 1.0)
    eps = 1e-6
    (up,) = run(graph, 0.3 + eps)
    (down,) = run(graph, 0.3 - eps)
    assert grad == pytest.approx((up - down) / (2 * eps), rel=1e-6)
    del module, small_module


# --------------------------------------------------------------------------
# Option syntax
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pipeline", "expected"),
    [
        ("linearize{graph=@f wrt=x,y}", 'linearize{graph="@f" wrt=x,y}'),
        (
            "linearize{graph=@f::@jvp1 wrt=tangent(x, 1),cotangent(0,2) outputs=0,2}",
            'linearize{graph="@f::@jvp1" wrt="tangent(x, 1)","cotangent(0,2)" outputs=0,2}',
        ),
        ('materialize{graph="@f" name=g},cse', 'materialize{graph="@f" name=g},cse'),
        ("verify-linearity,dce", "verify-linearity,dce"),
    ],
)
def test_quote_pass_options(pipeline: str, expected: str) -> None:
    assert quote_pass_options(pipeline) == expected


def test_pass_options_parse_into_fields() -> None:
    passes = PassPipeline.parse_spec(
        all_passes(),
        quote_pass_options(
            "linearize{graph=@f::@jvp1 wrt=x,tangent(x,1) outputs=0 name=d},"
            "linear-transpose{graph=@f},materialize{graph=@f name=g},verify-linearity"
        ),
    ).passes
    assert [str(p.pipeline_pass_spec()) for p in passes] == [
        'linearize{graph="@f::@jvp1" wrt="x","tangent(x,1)" outputs=0 name="d"}',
        'linear-transpose{graph="@f"}',
        'materialize{graph="@f" name="g"}',
        "verify-linearity",
    ]
