"""`unzip` splits a linearization into a forward graph (primal outputs, then
residuals) and a linear fragment that reads only residuals and tangents.

Checked through the reference evaluator: running the forward graph and then
the unzipped linear fragment on its residuals gives what the fused JVP gives,
for every policy, on real, complex and higher-order programs and on the toy
dialect; op counts and residual lists against hand counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, OpResult
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tidu_mlir import ad
from tidu_mlir.diagnostics import LocatingParser, OpError
from tidu_mlir.dialects import cg
from tidu_mlir.dialects.cg import GraphOp, InputOp, LinearOp, OutputOp
from tidu_mlir.execution import executable
from tidu_mlir.graph import (
    fragment_inputs,
    fragment_outputs,
    fragment_signature,
    lookup_fragment,
)
from tidu_mlir.interfaces.recompute import RecomputeCost, is_cheap_to_recompute
from tidu_mlir.interp import evaluate_fragment, evaluate_func
from tidu_mlir.registry import make_context

from . import toy_dialect as toy

POLICIES = list(ad.POLICIES)
Env = Mapping[Attribute, np.ndarray]

SQUARE = """
cg.graph @f {
  %x = cg.input #cg.key<"x"> : tensor<f64>
  %p1 = prim.add %x, %x : tensor<f64>
  %p2 = prim.mul %p1, %x : tensor<f64>
  cg.output %p2 : tensor<f64>
}
"""

SIN = """
cg.graph @f {
  %x = cg.input #cg.key<"x"> : tensor<f64>
  %s = prim.sin %x : tensor<f64>
  cg.output %s : tensor<f64>
}
"""

LOG_SUM_EXP_SIN = """
cg.graph @f {
  %x = cg.input #cg.key<"x"> : tensor<3xf64>
  %s = prim.sin %x : tensor<3xf64>
  %e = prim.exp %s : tensor<3xf64>
  %r = prim.reduce_sum %e, axes = [0] : tensor<3xf64> -> tensor<f64>
  %l = prim.log %r : tensor<f64>
  cg.output %l : tensor<f64>
}
"""

# Two inputs, two outputs, a contraction, an unused input.
LAYER = """
cg.graph @f {
  %w = cg.input #cg.key<"w"> : tensor<2x3xf64>
  %x = cg.input #cg.key<"x"> : tensor<3xf64>
  %u = cg.input #cg.key<"u"> : tensor<f64>
  %y = prim.dot_general %w, %x, batch = [] x [], contract = [1] x [0] : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2xf64>
  %t = prim.tanh %y : tensor<2xf64>
  %q = prim.mul %t, %t : tensor<2xf64>
  %s = prim.reduce_sum %q, axes = [0] : tensor<2xf64> -> tensor<f64>
  cg.output %s, %t : tensor<f64>, tensor<2xf64>
}
"""

COMPLEX = """
cg.graph @f {
  %z = cg.input #cg.key<"z"> : tensor<3xcomplex<f64>>
  %a = prim.mul %z, %z : tensor<3xcomplex<f64>>
  %e = prim.exp %a : tensor<3xcomplex<f64>>
  %c = prim.conj %e : tensor<3xcomplex<f64>>
  %m = prim.mul %c, %z : tensor<3xcomplex<f64>>
  %r = prim.abs %m : tensor<3xcomplex<f64>> -> tensor<3xf64>
  cg.output %r, %m : tensor<3xf64>, tensor<3xcomplex<f64>>
}
"""

RNG = np.random.default_rng(7)


def random_like(type_: Attribute) -> np.ndarray:
    assert isinstance(type_, TensorType)
    shape = tuple(type_.get_shape())
    if "complex" in str(type_.element_type):
        return RNG.normal(size=shape) + 1j * RNG.normal(size=shape)
    return RNG.normal(size=shape)


def parse(text: str, ctx: Context | None = None) -> ModuleOp:
    module = LocatingParser(ctx or make_context(), text, "unzip.mlir").parse_module()
    module.verify()
    return module


def run(fragment: cg.Fragment, env: Env) -> list[np.ndarray]:
    """Evaluate a fragment, its signature inputs taken from `env` by key."""
    return evaluate_fragment(fragment, [env[op.key] for op in fragment_signature(fragment)])


def random_env(linear: LinearOp) -> dict[Attribute, np.ndarray]:
    """A random array for every input the primal and its linearization read."""
    primal = linear.parent_op()
    assert isinstance(primal, GraphOp | LinearOp)
    inputs = [*fragment_signature(primal), *fragment_signature(linear)]
    return {op.key: random_like(op.result.type) for op in inputs}


def composed(unzipped: ad.Unzipped, env: Env) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Run the forward graph, then the linear fragment on its residuals."""
    forward = run(unzipped.forward, env)
    count = unzipped.primal_output_count
    residuals = dict(zip(unzipped.residual_keys, forward[count:], strict=True))
    return forward[:count], run(unzipped.linear, {**env, **residuals})


def fused(linear: LinearOp, env: Env) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The primal outputs and the JVP, computed together as before unzipping."""
    primal = linear.parent_op()
    assert isinstance(primal, GraphOp | LinearOp)
    return run(primal, env), run(linear, env)


def assert_all_close(actual: Sequence[np.ndarray], expected: Sequence[np.ndarray]) -> None:
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-12)


def body_ops(fragment: cg.Fragment) -> list[str]:
    """The names of a fragment's own ops, without inputs, output and nested fragments."""
    return [
        op.name
        for op in fragment.body.block.ops
        if not isinstance(op, InputOp | OutputOp | GraphOp | LinearOp)
    ]


def check_unzip(module: ModuleOp, path: str, policy: str) -> ad.Unzipped:
    """Unzip `path`, verify, and check the composition against the fused JVP."""
    linear = lookup_fragment(module, path)
    assert isinstance(linear, LinearOp)
    unzipped = ad.unzip(linear, policy)
    module.verify()
    ad.verify_linearity(unzipped.linear)
    env = random_env(linear)
    primal, tangents = composed(unzipped, env)
    expected_primal, expected_tangents = fused(linear, env)
    assert_all_close(primal, expected_primal)
    assert_all_close(tangents, expected_tangents)
    # The linear fragment references nothing but residuals and its own values;
    # its signature is the residuals, then its tangent inputs.
    own = unzipped.linear.body.block
    residual_inputs = {op.result for op in fragment_inputs(unzipped.residual_graph)}
    for op in own.ops:
        for value in op.operands:
            assert value in residual_inputs or (
                isinstance(value, OpResult) and value.op.parent_block() is own
            )
    signature = fragment_signature(unzipped.linear)
    assert [op.key for op in signature] == [
        *unzipped.residual_keys,
        *(op.key for op in fragment_inputs(linear)),
    ]
    return unzipped


def linearized(text: str, ctx: Context | None = None, **kwargs: object) -> ModuleOp:
    module = parse(text, ctx)
    ad.linearize((module, "@f"), **kwargs)  # type: ignore[arg-type]
    return module


# --------------------------------------------------------------------------
# The composition equals the fused JVP
# --------------------------------------------------------------------------


PROGRAMS = {
    "square": (SQUARE, ["x"]),
    "sin": (SIN, ["x"]),
    "log-sum-exp-sin": (LOG_SUM_EXP_SIN, ["x"]),
    "layer": (LAYER, ["w", "x", "u"]),
    "layer-wrt-x": (LAYER, ["x"]),
    "complex": (COMPLEX, ["z"]),
}


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("program", list(PROGRAMS))
def test_composition_equals_fused_jvp(program: str, policy: str) -> None:
    text, wrt = PROGRAMS[program]
    check_unzip(linearized(text, wrt=wrt), "@f::@jvp1", policy)


@pytest.mark.parametrize("policy", POLICIES)
def test_requested_outputs_only(policy: str) -> None:
    module = linearized(LAYER, wrt=["w"], outputs=[1])
    unzipped = check_unzip(module, "@f::@jvp1", policy)
    assert unzipped.primal_output_count == 2  # all primal outputs, one tangent


@pytest.mark.parametrize("policy", POLICIES)
def test_materialized_functions_compose_like_the_fused_jvp(policy: str) -> None:
    module = linearized(LAYER, wrt=["w", "x"])
    linear = lookup_fragment(module, "@f::@jvp1")
    assert isinstance(linear, LinearOp)
    primal = linear.parent_op()
    assert isinstance(primal, GraphOp)
    fused_func = ad.materialize(linear, "fused", extra_outputs=fragment_outputs(primal))
    unzipped = ad.unzip(linear, policy)
    forward_func = ad.materialize(unzipped.forward, "fwd")
    linear_func = ad.materialize(unzipped.linear, "lin")
    module.verify()
    env = random_env(linear)
    expected = evaluate_func(fused_func, func_args(fused_func, env))
    forward = evaluate_func(forward_func, func_args(forward_func, env))
    count = unzipped.primal_output_count
    env = {**env, **dict(zip(unzipped.residual_keys, forward[count:], strict=True))}
    tangents = evaluate_func(linear_func, func_args(linear_func, env))
    assert_all_close([*forward[:count], *tangents], expected)
    # The compiled path gives the same.
    compiled_forward = executable(forward_func, "llvm")(*func_args(forward_func, env))
    compiled_linear = executable(linear_func, "llvm")(*func_args(linear_func, env))
    np.testing.assert_allclose(compiled_forward[0], forward[0], rtol=1e-12)
    for compiled, reference in zip(compiled_linear, tangents, strict=True):
        np.testing.assert_allclose(compiled, reference, rtol=1e-10, atol=1e-12)


def func_args(func: FuncOp, env: Env) -> list[np.ndarray]:
    """The arguments of a materialized function, taken from `env` by key."""
    assert func.arg_attrs is not None
    return [env[attrs.data[ad.KEY_ARG_ATTR]] for attrs in func.arg_attrs.data]


@pytest.mark.parametrize("policy", POLICIES)
def test_higher_order_unzip_of_the_linearization_of_a_gradient(policy: str) -> None:
    """Hessian-vector product: linearize the VJP of f, unzip that."""
    module = parse(LOG_SUM_EXP_SIN)
    vjp = ad.linear_transpose(ad.linearize((module, "@f"), wrt=["x"]))
    ad.linearize(vjp.fragment, wrt=["x"])
    unzipped = check_unzip(module, "@f::@jvp1::@vjp2::@jvp3", policy)
    # The forward graph computes the gradient from x and the cotangent seed.
    forward_keys = [
        cg.key_spec(op.key) for op in unzipped.forward.body.block.ops if isinstance(op, InputOp)
    ]
    assert forward_keys == ["x", "cotangent(0,2)"]
    # Transposing the unzipped fragment works unchanged.
    transposed = ad.linear_transpose(unzipped.linear)
    module.verify()
    ad.verify_linearity(transposed.fragment)


# --------------------------------------------------------------------------
# Cost: op counts
# --------------------------------------------------------------------------


def linear_op_count(linear: LinearOp) -> int:
    return sum(
        1
        for op in linear.body.block.ops
        if (role := cg.role_of(op)) is not None and any(role.active_mask)
    )


@pytest.mark.parametrize("program", list(PROGRAMS))
def test_save_all_op_counts(program: str) -> None:
    """Forward: the primal's ops plus the moved derivative ops, no more; linear:
    exactly the linear ops."""
    text, wrt = PROGRAMS[program]
    module = linearized(text, wrt=wrt)
    linear = lookup_fragment(module, "@f::@jvp1")
    assert isinstance(linear, LinearOp)
    primal = linear.parent_op()
    assert isinstance(primal, GraphOp)
    moved = len(body_ops(linear)) - linear_op_count(linear)
    unzipped = ad.unzip(linear)
    assert len(body_ops(unzipped.forward)) <= len(body_ops(primal)) + moved
    assert len(body_ops(unzipped.linear)) == linear_op_count(linear)
    assert linear_op_count(unzipped.linear) == linear_op_count(linear)
    assert body_ops(unzipped.residual_graph) == []


def test_op_counts_by_policy() -> None:
    """log(sum(exp(sin x))): JVP = 4 linear ops and cos x (moved or recomputed)."""
    counts = {}
    for policy in POLICIES:
        module = linearized(LOG_SUM_EXP_SIN, wrt=["x"])
        unzipped = ad.unzip((module, "@f::@jvp1"), policy)
        counts[policy] = (
            len(body_ops(unzipped.forward)),
            len(body_ops(unzipped.linear)),
            len(unzipped.residuals),
        )
    assert counts == {
        "save-all": (4 + 1, 4, 3),  # sin exp reduce log + cos; saves cos, e, r
        "recompute-elementwise": (4, 4 + 3, 2),  # recomputes cos sin exp; saves x, r
        "save-nothing": (4, 4 + 4, 1),  # recomputes cos sin exp reduce; saves x
    }


# --------------------------------------------------------------------------
# Residual lists
# --------------------------------------------------------------------------


def residual_summary(unzipped: ad.Unzipped) -> list[tuple[tuple[int, ...], str, int, str]]:
    return [
        (r.shape, r.dtype.name, r.nbytes, r.source.split(" at ")[0]) for r in unzipped.residuals
    ]


def test_residuals_of_the_worked_example() -> None:
    unzipped = ad.unzip((linearized(SQUARE, wrt=["x"]), "@f::@jvp1"))
    assert residual_summary(unzipped) == [
        ((), "float64", 8, "prim.add"),
        ((), "float64", 8, "input x"),
    ]
    assert unzipped.residuals[0].source == "prim.add at unzip.mlir:4:3"
    assert unzipped.residual_keys == [cg.ResidualKeyAttr(0, 2), cg.ResidualKeyAttr(1, 2)]
    assert ad.saved_residuals(unzipped.forward) == unzipped.residuals


def test_sin_moves_cos_to_the_forward_graph() -> None:
    module = linearized(SIN, wrt=["x"])
    assert body_ops(lookup_fragment(module, "@f::@jvp1")) == ["prim.cos", "prim.mul"]
    unzipped = ad.unzip((module, "@f::@jvp1"))
    assert body_ops(unzipped.forward) == ["prim.sin", "prim.cos"]
    assert body_ops(unzipped.linear) == ["prim.mul"]
    assert residual_summary(unzipped) == [((), "float64", 8, "prim.cos")]
    # The derived op carries the location of the op it differentiates (sin).
    assert unzipped.residuals[0].source == "prim.cos at unzip.mlir:4:3"


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (
            "save-all",
            [
                ((3,), "float64", 24, "prim.cos"),
                ((3,), "float64", 24, "prim.exp"),
                ((), "float64", 8, "prim.reduce_sum"),
            ],
        ),
        (
            "recompute-elementwise",
            [((3,), "float64", 24, "input x"), ((), "float64", 8, "prim.reduce_sum")],
        ),
        ("save-nothing", [((3,), "float64", 24, "input x")]),
    ],
)
def test_residuals_of_log_sum_exp_sin(policy: str, expected: list[object]) -> None:
    unzipped = ad.unzip((linearized(LOG_SUM_EXP_SIN, wrt=["x"]), "@f::@jvp1"), policy)
    assert residual_summary(unzipped) == expected


def test_residuals_of_a_complex_program() -> None:
    """The JVP of |conj(exp(z*z))*z| reads z (mul rules), exp(z*z) (exp rule),
    conj(exp(z*z)) (mul rule) and conj(m)/|m| (abs rule, built by eight primary
    ops that all move forward): four complex residuals, 3 x 16 bytes each."""
    module = linearized(COMPLEX, wrt=["z"])
    unzipped = ad.unzip((module, "@f::@jvp1"))
    expected = [
        ((3,), "complex128", 48, source)
        for source in ("input z", "prim.exp", "prim.conj", "prim.div")
    ]
    assert residual_summary(unzipped) == expected
    assert body_ops(unzipped.forward).count("prim.div") == 1


# --------------------------------------------------------------------------
# Genericity: the toy dialect
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def toy_ctx() -> Context:
    return toy.register_toy(make_context())


@pytest.mark.parametrize("policy", POLICIES)
def test_toy_dialect_unzips(toy_ctx: Context, policy: str) -> None:
    module = linearized(toy.MIXED, toy_ctx, wrt=["x", "y"])
    unzipped = check_unzip(module, "@f::@jvp1", policy)
    vjp = ad.linear_transpose(unzipped.linear)
    ad.verify_linearity(vjp.fragment)
    sources = {r.source.split(" at ")[0] for r in unzipped.residuals}
    if policy == "save-all":
        assert "input x" in sources and len(unzipped.residuals) > 2
    else:  # every toy op keeps its operands' shape: elementwise, recomputed
        assert sources == {"input x", "input y"}


# --------------------------------------------------------------------------
# Recomputation classification
# --------------------------------------------------------------------------


@irdl_op_definition
class HeavyOp(IRDLOperation):
    """Shape-preserving, but declared expensive to recompute."""

    name = "test.heavy"
    operand = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), RecomputeCost(cheap=False))


@irdl_op_definition
class EffectfulOp(IRDLOperation):
    """Shape-preserving, not pure: never recomputed."""

    name = "test.effectful"
    operand = operand_def(TensorType)
    result = result_def(TensorType)


@irdl_op_definition
class CheapThenCostlyOp(IRDLOperation):
    """Declares both costs (as a costly op on a cheap base does)."""

    name = "test.cheap_then_costly"
    operand = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), RecomputeCost(cheap=True), RecomputeCost(cheap=False))


@irdl_op_definition
class CostlyThenCheapOp(IRDLOperation):
    """The same two costs in the other order."""

    name = "test.costly_then_cheap"
    operand = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), RecomputeCost(cheap=False), RecomputeCost(cheap=True))


def test_a_costly_declaration_wins_over_a_cheap_one_in_any_order() -> None:
    value = fragment_outputs(lookup_fragment(parse(LOG_SUM_EXP_SIN), "@f"))[0]
    for cls in (CheapThenCostlyOp, CostlyThenCheapOp):
        assert not is_cheap_to_recompute(cls(operands=[value], result_types=[value.type]))


def test_recompute_cost_trait_overrides_the_shape_fallback() -> None:
    module = parse(LOG_SUM_EXP_SIN)
    value = fragment_outputs(lookup_fragment(module, "@f"))[0]
    by_name = {op.name: op for op in module.walk()}
    assert is_cheap_to_recompute(by_name["prim.sin"])  # fallback: shapes kept
    assert not is_cheap_to_recompute(by_name["prim.reduce_sum"])  # fallback: shape changes
    assert not is_cheap_to_recompute(HeavyOp(operands=[value], result_types=[value.type]))
    assert not is_cheap_to_recompute(EffectfulOp(operands=[value], result_types=[value.type]))
    assert not ad.POLICIES["save-nothing"](EffectfulOp(operands=[value], result_types=[value.type]))


# --------------------------------------------------------------------------
# Refusals
# --------------------------------------------------------------------------


def test_unknown_policy_lists_the_valid_names() -> None:
    module = linearized(SQUARE, wrt=["x"])
    with pytest.raises(
        ValueError, match="valid policies: save-all, recompute-elementwise, save-nothing"
    ):
        ad.unzip((module, "@f::@jvp1"), "save-some")


def test_a_graph_is_not_a_linearization() -> None:
    module = linearized(SQUARE, wrt=["x"])
    with pytest.raises(OpError, match=r"unzip expects a linear fragment .*'@f' is a cg\.graph"):
        ad.unzip((module, "@f"))


def test_a_nonlinear_fragment_is_refused() -> None:
    module = parse(
        """
        cg.graph @f {
          %x = cg.input #cg.key<"x"> : tensor<f64>
          cg.linear @bad pass 1 active [true] {
            %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
            %t = prim.mul %dx, %dx : tensor<f64>
            cg.output %t : tensor<f64>
          }
          cg.output %x : tensor<f64>
        }
        """
    )
    with pytest.raises(
        OpError, match="unzip expects a linear fragment: 'prim.mul' has no linearized role"
    ):
        ad.unzip((module, "@f::@bad"))


def test_a_refused_unzip_leaves_the_module_unchanged() -> None:
    module = linearized(SQUARE, wrt=["x"])
    ad.unzip((module, "@f::@jvp1"), name="sq")
    before = str(module)
    with pytest.raises(OpError, match="a symbol '@sq_fwd' already exists"):
        ad.unzip((module, "@f::@jvp1"), name="sq")
    assert str(module) == before


def test_saved_residuals_needs_a_forward_graph() -> None:
    module = parse(SQUARE)
    graph = lookup_fragment(module, "@f")
    assert isinstance(graph, GraphOp)
    with pytest.raises(OpError, match="not a forward graph built by unzip"):
        ad.saved_residuals(graph)


def test_residuals_attribute_is_verified() -> None:
    module = parse(SQUARE)
    graph = lookup_fragment(module, "@f")
    graph.attributes[cg.RESIDUALS_ATTR_NAME] = cg.ResidualsAttr(2, 1)
    with pytest.raises(
        VerifyException, match="declares 2 residual outputs but cg.output returns 1"
    ):
        module.verify()


def test_residual_key_spelling_round_trips() -> None:
    key = cg.parse_key_spec("residual(1, 3)")
    assert key == cg.ResidualKeyAttr(1, 3)
    assert cg.key_spec(key) == "residual(1,3)"
