"""The AD rules of every prim op (tidu_mlir/dialects/prim_ad.py), op by op and
dtype by dtype: JVP vs finite differences, the adjoint identity, linearity of
every derived fragment, FoR vs finite differences of the VJP and RoR == JVP
(see prim_harness.check_derivatives); plus the conventions (ties, abs at 0),
closed forms and the emitted IR of a few rules."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import ComplexType, TensorType, f32, f64

from tidu_mlir import ad
from tidu_mlir.ad import ADRuleError, Differentiable
from tidu_mlir.dialects import cg, prim
from tidu_mlir.dialects.prim import is_zero_constant

from .prim_harness import Emitter, build, check_derivatives, primal_env, run

RNG = np.random.default_rng(42)

REAL = [np.float64, np.float32]
ALL = [np.float64, np.complex128, np.float32, np.complex64]


def positive(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """Values in [0.5, 2] (complex: small imaginary parts), keeping log/sqrt/pow defined."""
    values = RNG.uniform(0.5, 2.0, shape)
    if np.issubdtype(dtype, np.complexfloating):
        values = values + 1j * RNG.uniform(-0.5, 0.5, shape)
    return values.astype(dtype)


def signed(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """Values with both signs, away from 0 (abs, maximum/minimum need no ties)."""
    values = RNG.uniform(0.5, 2.0, shape) * RNG.choice([-1.0, 1.0], shape)
    if np.issubdtype(dtype, np.complexfloating):
        values = values + 1j * RNG.uniform(-1.0, 1.0, shape)
    return values.astype(dtype)


def dtype_id(dtype: type) -> str:
    return np.dtype(dtype).name


def test_every_prim_op_is_differentiable() -> None:
    for op_class in prim.PRIM_OPS:
        assert issubclass(op_class, Differentiable), op_class.name
    assert prim.MulOp.accumulate.__func__ is prim.AddOp.accumulate.__func__  # type: ignore[attr-defined]


# --------------------------------------------------------------------------
# Elementwise ops
# --------------------------------------------------------------------------

UNARY = {
    "neg": prim.NegOp,
    "exp": prim.ExpOp,
    "log": prim.LogOp,
    "sin": prim.SinOp,
    "cos": prim.CosOp,
    "tanh": prim.TanhOp,
    "sqrt": prim.SqrtOp,
    "conj": prim.ConjOp,
    "abs": prim.AbsOp,
}


@pytest.mark.parametrize("dtype", ALL, ids=dtype_id)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary(name: str, dtype: type) -> None:
    x = signed((3,), dtype) if name in ("abs", "neg", "conj") else positive((3,), dtype)
    check_derivatives(lambda b, x: b(UNARY[name](x)), [x])


@pytest.mark.parametrize("dtype", ALL, ids=dtype_id)
@pytest.mark.parametrize("exponent", [2.0, 3.0, 2.5, -1.5, 1.0, 0.5])
def test_pow(exponent: float, dtype: type) -> None:
    check_derivatives(lambda b, x: b(prim.PowOp(x, exponent)), [positive((3,), dtype)])


def test_pow_zero_has_no_tangent() -> None:
    _, graph = build(lambda b, x: b(prim.PowOp(x, 0.0)), [positive((3,), np.float64)])
    assert ad.linearize(graph, wrt=["x0"]).tangent_outputs == [None]


BINARY = {
    "add": prim.AddOp,
    "sub": prim.SubOp,
    "mul": prim.MulOp,
    "div": prim.DivOp,
}


@pytest.mark.parametrize("dtype", ALL, ids=dtype_id)
@pytest.mark.parametrize("name", list(BINARY))
def test_binary(name: str, dtype: type) -> None:
    op = BINARY[name]
    arrays = [positive((2, 3), dtype), positive((2, 3), dtype)]
    check_derivatives(lambda b, x, y: b(op(x, y)), arrays)
    # One operand constant (one tangent is None) and both operands the same value.
    check_derivatives(lambda b, x: b(op(b.const(1.5, x), x)), arrays[:1])
    check_derivatives(lambda b, x: b(op(x, b.const(1.5, x))), arrays[:1])
    check_derivatives(lambda b, x: b(op(x, x)), arrays[:1])


@pytest.mark.parametrize("dtype", REAL, ids=dtype_id)
@pytest.mark.parametrize("op", [prim.MaximumOp, prim.MinimumOp], ids=["maximum", "minimum"])
def test_maximum_minimum(op: type, dtype: type) -> None:
    """Operands kept 0.5 apart (and away from 0): finite differences never cross the kink."""
    x = signed((5,), dtype)
    x = x + np.copysign(np.asarray(0.5, dtype), x)
    y = x + RNG.choice([-1.0, 1.0], 5).astype(dtype)
    check_derivatives(lambda b, x, y: b(op(x, y)), [x, y])
    check_derivatives(lambda b, x: b(op(x, b.const(0.0, x))), [x])


@pytest.mark.parametrize("dtype", REAL, ids=dtype_id)
def test_atan2(dtype: type) -> None:
    """Every quadrant (signed operands); one operand constant; both the same value."""
    arrays = [signed((6,), dtype), signed((6,), dtype)]
    check_derivatives(lambda b, y, x: b(prim.Atan2Op(y, x)), arrays)
    check_derivatives(lambda b, y: b(prim.Atan2Op(y, b.const(-1.5, y))), arrays[:1])
    check_derivatives(lambda b, x: b(prim.Atan2Op(b.const(0.5, x), x)), arrays[:1])
    check_derivatives(lambda b, x: b(prim.Atan2Op(x, x)), arrays[:1])


@pytest.mark.parametrize("op", [prim.MaximumOp, prim.MinimumOp], ids=["maximum", "minimum"])
def test_maximum_minimum_ties_split_the_derivative(op: type) -> None:
    """At ties the operands share the derivative (JAX's and PyTorch's choice);
    elsewhere the winning operand's tangent passes."""
    x, y = np.array([1.0, 2.0, 3.0]), np.array([1.0, 1.0, 4.0])
    _, graph = build(lambda b, x, y: b(op(x, y)), [x, y])
    lin = ad.linearize(graph, wrt=["x0", "x1"])
    dx, dy = np.array([2.0, 3.0, 5.0]), np.array([4.0, 7.0, 11.0])
    env = {
        **primal_env([x, y]),
        **{k: v for (k, _), v in zip(lin.tangent_inputs, [dx, dy], strict=True)},
    }
    lhs_wins = (
        np.array([False, True, False]) if op is prim.MaximumOp else np.array([False, False, True])
    )
    expected = np.where(lhs_wins, dx, dy)
    expected[0] = 0.5 * (dx[0] + dy[0])
    np.testing.assert_array_equal(run(lin.fragment, env)[0], expected)


@pytest.mark.parametrize("dtype", ALL, ids=dtype_id)
def test_select_and_compare(dtype: type) -> None:
    real = np.float32 if dtype in (np.float32, np.complex64) else np.float64
    p = signed((4,), real)
    q = p + RNG.choice([-1.0, 1.0], 4).astype(real)  # far from ties for finite differences

    def body(b: Emitter, p, q, x, y):
        pred = b(prim.CompareOp("lt", p, q))
        return b(prim.SelectOp(pred, x, y))

    check_derivatives(body, [p, q, positive((4,), dtype), positive((4,), dtype)])

    def one_branch(b: Emitter, p, q, x):
        pred = b(prim.CompareOp("ge", p, q))
        return b(prim.SelectOp(pred, b.const(2.0, x), x))

    check_derivatives(one_branch, [p, q, positive((4,), dtype)])


def test_abs_at_zero() -> None:
    """Conventions: d|x| at real 0 is +1 (sign-select ties to +), at complex 0 it is 0."""
    for x, dx, expected in [
        (np.array([0.0]), np.array([2.0]), 2.0),
        (np.array([0.0j]), np.array([1.0 + 1.0j]), 0.0),
    ]:
        _, graph = build(lambda b, x: b(prim.AbsOp(x)), [x])
        lin = ad.linearize(graph, wrt=["x0"])
        env = {**primal_env([x]), lin.tangent_inputs[0][0]: dx}
        assert run(lin.fragment, env)[0][0] == expected


# --------------------------------------------------------------------------
# Complex parts and conversions
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64], ids=dtype_id)
@pytest.mark.parametrize("op", [prim.RealOp, prim.ImagOp], ids=["real", "imag"])
def test_real_imag(op: type, dtype: type) -> None:
    check_derivatives(lambda b, z: b(op(z)), [signed((3,), dtype)])


@pytest.mark.parametrize("dtype", REAL, ids=dtype_id)
def test_complex(dtype: type) -> None:
    arrays = [signed((3,), dtype), signed((3,), dtype)]
    check_derivatives(lambda b, re, im: b(prim.ComplexOp(re, im)), arrays)
    check_derivatives(lambda b, re: b(prim.ComplexOp(re, b.const(0.5, re))), arrays[:1])
    check_derivatives(lambda b, im: b(prim.ComplexOp(b.const(0.5, im), im)), arrays[:1])


CONVERSIONS = [
    (np.float64, f32),
    (np.float32, f64),
    (np.float64, ComplexType(f64)),
    (np.float32, ComplexType(f64)),
    (np.complex128, f64),
    (np.complex128, f32),
    (np.complex64, ComplexType(f64)),
    (np.complex128, ComplexType(f32)),
]


@pytest.mark.parametrize(("dtype", "element"), CONVERSIONS, ids=str)
def test_convert(dtype: type, element) -> None:
    check_derivatives(lambda b, x: b(prim.ConvertOp(x, element)), [signed((3,), dtype)])


# --------------------------------------------------------------------------
# Shape ops
# --------------------------------------------------------------------------

SHAPE_CASES = {
    "broadcast_new_axes": ((3,), lambda b, x: b(prim.BroadcastInDimOp(x, [1], _t(x, (2, 3, 4))))),
    "broadcast_expand": (
        (1, 3),
        lambda b, x: b(prim.BroadcastInDimOp(x, [0, 2], _t(x, (4, 2, 3)))),
    ),
    "broadcast_scalar": ((), lambda b, x: b(prim.BroadcastInDimOp(x, [], _t(x, (2, 2))))),
    "broadcast_identity": ((2, 3), lambda b, x: b(prim.BroadcastInDimOp(x, [0, 1], _t(x, (2, 3))))),
    "reduce_sum": ((2, 3, 4), lambda b, x: b(prim.ReduceSumOp(x, [0, 2]))),
    "reduce_sum_all": ((2, 3), lambda b, x: b(prim.ReduceSumOp(x, [0, 1]))),
    "reshape": ((2, 6), lambda b, x: b(prim.ReshapeOp(x, (3, 1, 4)))),
    "transpose": ((2, 3, 4), lambda b, x: b(prim.TransposeOp(x, [2, 0, 1]))),
    "slice": ((7, 5), lambda b, x: b(prim.SliceOp(x, [1, 0], [7, 5], [2, 3]))),
    "slice_empty": ((4,), lambda b, x: b(prim.SliceOp(x, [2], [2], [1]))),
    "pad": ((3, 2), lambda b, x: b(prim.PadOp(x, [1, 0], [2, 1], [2, 0]))),
    "pad_empty": ((0, 2), lambda b, x: b(prim.PadOp(x, [1, 0], [1, 0], [1, 1]))),
}


def _t(x, shape: tuple[int, ...]) -> TensorType:
    """A tensor type of `x`'s element type and the given shape."""
    return TensorType(prim.element_type_of(x.type), list(shape))


@pytest.mark.parametrize("dtype", ALL, ids=dtype_id)
@pytest.mark.parametrize("name", list(SHAPE_CASES))
def test_shape_ops(name: str, dtype: type) -> None:
    shape, body = SHAPE_CASES[name]
    if name == "slice_empty":
        _, graph = build(body, [positive(shape, dtype)])
        lin = ad.linearize(graph, wrt=["x0"])
        ad.linear_transpose(lin)
        return
    check_derivatives(body, [positive(shape, dtype)])


@pytest.mark.parametrize("dtype", ALL, ids=dtype_id)
def test_concatenate(dtype: type) -> None:
    arrays = [positive((2, 1), dtype), positive((2, 3), dtype)]
    check_derivatives(lambda b, x, y: b(prim.ConcatenateOp([x, y, x], 1)), arrays)
    check_derivatives(lambda b, x: b(prim.ConcatenateOp([b.const(1.0, x), x], 0)), arrays[:1])


@pytest.mark.parametrize("dtype", REAL, ids=dtype_id)
def test_reduce_max(dtype: type) -> None:
    x = RNG.permutation(24).reshape(2, 3, 4).astype(dtype) / 2.0  # gaps beyond the FD steps
    check_derivatives(lambda b, x: b(prim.ReduceMaxOp(x, [1])), [x])
    check_derivatives(lambda b, x: b(prim.ReduceMaxOp(x, [0, 2])), [x])


def test_reduce_max_ties_split_evenly() -> None:
    x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]])
    dx = np.array([[5.0, 1.0, 2.0], [4.0, 9.0, 6.0]])
    _, graph = build(lambda b, x: b(prim.ReduceMaxOp(x, [1])), [x])
    lin = ad.linearize(graph, wrt=["x0"])
    env = {**primal_env([x]), lin.tangent_inputs[0][0]: dx}
    np.testing.assert_allclose(run(lin.fragment, env)[0], [1.5, 5.0])


DOT_CASES = {
    "matvec": (((3, 4), (4,)), {"lhs_contract": [1], "rhs_contract": [0]}),
    "matmul": (((2, 3), (3, 4)), {"lhs_contract": [1], "rhs_contract": [0]}),
    "outer": (((2,), (3,)), {}),
    "batched": (
        ((5, 2, 3), (5, 3, 4)),
        {"lhs_batch": [0], "rhs_batch": [0], "lhs_contract": [2], "rhs_contract": [1]},
    ),
    "scrambled": (
        ((3, 2, 4, 5), (4, 6, 5, 3, 2)),
        {"lhs_batch": [1], "rhs_batch": [4], "lhs_contract": [2, 0], "rhs_contract": [0, 3]},
    ),
}


@pytest.mark.parametrize("dtype", ALL, ids=dtype_id)
@pytest.mark.parametrize("name", list(DOT_CASES))
def test_dot_general(name: str, dtype: type) -> None:
    shapes, dims = DOT_CASES[name]
    arrays = [positive(s, dtype) for s in shapes]
    check_derivatives(lambda b, x, y: b(prim.DotGeneralOp(x, y, **dims)), arrays)


def test_constant_has_no_tangent() -> None:
    x = positive((2,), np.float64)
    _, graph = build(lambda b, x: [b(prim.AddOp(x, b.const(1.0, x))), b.const(3.0, x)], [x])
    lin = ad.linearize(graph, wrt=["x0"])
    assert lin.tangent_outputs[1] is None and lin.tangent_outputs[0] is not None


# --------------------------------------------------------------------------
# Linearity predicates and rule errors
# --------------------------------------------------------------------------


def test_linearity_predicates() -> None:
    x = positive((2,), np.float64)

    def body(b: Emitter, x):
        zero, two = b.const(0.0, x), b.const(2.0, x)
        pred = b(prim.CompareOp("lt", x, two))
        return [
            b(prim.SelectOp(pred, x, zero)),
            b(prim.SelectOp(pred, x, two)),
            b(prim.AddOp(x, x)),
            b(prim.MulOp(x, x)),
            b(prim.DivOp(x, two)),
            b(prim.DivOp(two, x)),
        ]

    _, graph = build(body, [x])
    output = graph.body.block.last_op
    assert isinstance(output, cg.OutputOp)
    ops: list[Any] = [value.owner for value in output.outputs]
    sel_zero, sel_two, add, mul, div, rdiv = ops
    assert sel_zero.is_linear_in([False, True, False])
    assert not sel_two.is_linear_in([False, True, False])
    assert not sel_zero.is_linear_in([True, True, False])
    assert add.is_linear_in([True, True]) and not add.is_linear_in([True, False])
    assert mul.is_linear_in([True, False]) and not mul.is_linear_in([True, True])
    assert div.is_linear_in([True, False]) and not rdiv.is_linear_in([False, True])
    assert is_zero_constant(sel_zero.operands[2]) and not is_zero_constant(sel_two.operands[2])


def test_nonlinear_op_has_no_transpose() -> None:
    x = positive((2,), np.float64)
    _, graph = build(lambda b, x: b(prim.ExpOp(x)), [x])
    exp = next(op for op in graph.body.block.ops if isinstance(op, prim.ExpOp))
    with pytest.raises(ADRuleError, match="unsupported transpose AD rule for prim.exp"):
        exp.transpose_rule(None, [exp.result])  # type: ignore[arg-type]


# --------------------------------------------------------------------------
# Emitted IR
# --------------------------------------------------------------------------


def ops_of(fragment) -> list[str]:
    return [op.name for op in fragment.body.block.ops]


def test_emitted_ir_is_small() -> None:
    """Fixed factors stay on the primal side: one linear op per unary rule."""
    x = positive((3,), np.float64)
    _, graph = build(lambda b, x: b(prim.ExpOp(x)), [x])
    lin = ad.linearize(graph, wrt=["x0"])
    assert ops_of(lin.fragment) == ["cg.input", "prim.mul", "cg.output"]
    vjp = ad.linear_transpose(lin)
    assert ops_of(vjp.fragment) == ["cg.input", "prim.mul", "cg.output"]


def test_complex_mul_transpose_conjugates() -> None:
    z = np.array([1 + 2j])
    _, graph = build(lambda b, z, w: b(prim.MulOp(z, w)), [z, z])
    lin = ad.linearize(graph, wrt=["x0"])
    vjp = ad.linear_transpose(lin)
    assert ops_of(vjp.fragment) == ["cg.input", "prim.conj", "prim.mul", "cg.output"]
