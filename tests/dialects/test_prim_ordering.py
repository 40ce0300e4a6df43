"""The ops along one axis (`prim/ordering.py`: argmax, argmin, cumsum, argsort) and the
rounding, sign and erf elementwise ops: verifiers, custom syntax, constructors,
numpy references (ties, NaN, signed zeros, integers) and batching rules."""

from __future__ import annotations

import io
import math
from collections.abc import Callable

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ComplexType,
    IntegerAttr,
    ModuleOp,
    TensorType,
    UnitAttr,
    f32,
    f64,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError, VerifyException

from tidu_mlir.diagnostics import LocatingParser
from tidu_mlir.dialects import prim
from tidu_mlir.interp import evaluate_ops

from .test_prim_batching import SIZE, Sample, batch_and_compare


def _t(shape: list[int], element: Attribute = f64) -> TensorType:
    return TensorType(element, shape)


def _print(op: Operation) -> str:
    stream = io.StringIO()
    Printer(stream=stream).print_op(op)
    return stream.getvalue()


def _module(arg_types: list[Attribute], make: Callable[..., Operation]) -> ModuleOp:
    block = Block(arg_types=arg_types)
    op = make(*block.args)
    block.add_ops([op, func.ReturnOp()])
    return ModuleOp([func.FuncOp("f", (arg_types, []), Region(block))])


# --------------------------------------------------------------------------
# Constructors and verifiers
# --------------------------------------------------------------------------

CONSTRUCTED: list[tuple[str, list[Attribute], Callable[..., Operation], TensorType | None]] = [
    ("argmax", [_t([3, 4])], lambda x: prim.ArgMaxOp(x, 1), _t([3], i64)),
    ("argmin-vector", [_t([5], i32)], lambda x: prim.ArgMinOp(x, 0), _t([], i64)),
    ("cumsum", [_t([2, 3], ComplexType(f32))], lambda x: prim.CumsumOp(x, 0, True), None),
    ("argsort", [_t([3, 4], f32)], lambda x: prim.ArgsortOp(x, 0), _t([3, 4], i64)),
    ("sign-int", [_t([3], i64)], prim.SignOp, None),
    ("erf", [_t([2], f32)], prim.ErfOp, None),
]


@pytest.mark.parametrize(
    ("arg_types", "make", "expected"), [c[1:] for c in CONSTRUCTED], ids=[c[0] for c in CONSTRUCTED]
)
def test_constructors_infer_the_result_type(
    ctx: Context, arg_types: list[Attribute], make: Callable[..., Operation], expected
) -> None:
    module = _module(arg_types, make)
    module.verify()
    op = next(o for o in module.walk() if o.name.startswith("prim."))
    assert op.results[0].type == (expected if expected is not None else arg_types[0])
    text = _print(module)
    assert _print(LocatingParser(ctx, text).parse_module()) == text


def _create(
    op_class: type[prim.PrimOp],
    operand: Attribute,
    result: Attribute,
    axis: int = 0,
    **flags: bool,
) -> Operation:
    block = Block(arg_types=[operand])
    props: dict[str, Attribute] = {}
    if issubclass(op_class, prim.AxisOp):
        props["axis"] = IntegerAttr(axis, i64)
    props.update({name: UnitAttr() for name, on in flags.items() if on})
    return op_class.create(operands=[block.args[0]], result_types=[result], properties=props)


VERIFY_ERRORS = [
    (
        "floor-complex",
        lambda: _create(prim.FloorOp, _t([3], ComplexType(f64)), _t([3], ComplexType(f64))),
        "operand must have a real element type",
    ),
    ("round-int", lambda: _create(prim.RoundOp, _t([3], i32), _t([3], i32)), "real element type"),
    ("erf-int", lambda: _create(prim.ErfOp, _t([3], i64), _t([3], i64)), "real element type"),
    (
        "sign-complex",
        lambda: _create(prim.SignOp, _t([3], ComplexType(f32)), _t([3], ComplexType(f32))),
        "real or integer element type",
    ),
    ("ceil-result", lambda: _create(prim.CeilOp, _t([3]), _t([3], f32)), "result type"),
    (
        "argmax-complex",
        lambda: _create(prim.ArgMaxOp, _t([3], ComplexType(f64)), _t([], i64)),
        "operand must have a real or integer element type",
    ),
    (
        "argmax-axis",
        lambda: _create(prim.ArgMaxOp, _t([3, 4]), _t([3], i64), axis=2),
        "axis 2 is out of range for rank 2",
    ),
    (
        "argmin-negative-axis",
        lambda: _create(prim.ArgMinOp, _t([3, 4]), _t([3], i64), axis=-1),
        "axis -1 is out of range for rank 2",
    ),
    (
        "argmax-empty-axis",
        lambda: _create(prim.ArgMaxOp, _t([3, 0]), _t([3], i64), axis=1),
        "prim.argmax needs a non-empty axis: axis 1 of tensor<3x0xf64> has extent 0",
    ),
    (
        "argmax-i32-result",
        lambda: _create(prim.ArgMaxOp, _t([3, 4]), _t([4], i32)),
        "result must have element type i64, got i32",
    ),
    (
        "argmin-float-result",
        lambda: _create(prim.ArgMinOp, _t([3, 4]), _t([4])),
        "result must have an integer element type",
    ),
    (
        "argmax-shape",
        lambda: _create(prim.ArgMaxOp, _t([3, 4]), _t([3], i64)),
        "result shape [3] does not match expected [4]",
    ),
    (
        "argsort-rank0",
        lambda: _create(prim.ArgsortOp, _t([]), _t([], i64)),
        "axis 0 is out of range for rank 0",
    ),
    (
        "argsort-shape",
        lambda: _create(prim.ArgsortOp, _t([3, 4]), _t([4, 3], i64)),
        "result shape [4, 3] does not match expected [3, 4]",
    ),
    (
        "cumsum-bool",
        lambda: _create(prim.CumsumOp, _t([3], i1), _t([3], i1)),
        "operand must have a numeric element type",
    ),
    (
        "cumsum-result",
        lambda: _create(prim.CumsumOp, _t([3], i32), _t([3], i64), reverse=True),
        "result type tensor<3xi64> must equal tensor<3xi32>",
    ),
]


@pytest.mark.parametrize(
    ("make", "message"), [c[1:] for c in VERIFY_ERRORS], ids=[c[0] for c in VERIFY_ERRORS]
)
def test_verifier_errors(make: Callable[[], Operation], message: str) -> None:
    with pytest.raises(VerifyException, match=message.replace("[", r"\[").replace("]", r"\]")):
        make().verify()


def test_constructor_rejects_a_bad_axis() -> None:
    (x,) = Block(arg_types=[_t([2, 3])]).args
    with pytest.raises(VerifyException, match="axis 3 is out of range for rank 2"):
        prim.ArgMaxOp(x, 3)


# --------------------------------------------------------------------------
# Custom syntax
# --------------------------------------------------------------------------


def _parse(ctx: Context, line: str, arg_type: str) -> ModuleOp:
    text = f"func.func @f(%a: {arg_type}) {{\n  %r = {line}\n  func.return\n}}\n"
    module = LocatingParser(ctx, text).parse_module()
    module.verify()
    return module


def test_cumsum_flag_round_trips(ctx: Context) -> None:
    forward = _parse(ctx, "prim.cumsum %a, axis = 1 : tensor<2x3xf64>", "tensor<2x3xf64>")
    backward = _parse(ctx, "prim.cumsum %a, axis = 1, reverse : tensor<2x3xf64>", "tensor<2x3xf64>")
    ops = [next(o for o in m.walk() if isinstance(o, prim.CumsumOp)) for m in (forward, backward)]
    assert [op.is_reverse for op in ops] == [False, True]
    assert "axis = 1, reverse :" in _print(backward)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "prim.argmax %a, axis = 0, reverse : tensor<3xf64> -> tensor<i64>",
            "unexpected 'reverse'",
        ),
        ("prim.cumsum %a, axis = 0, reverse, reverse : tensor<3xf64>", "unexpected 'reverse'"),
        ("prim.cumsum %a, axis = 0, backwards : tensor<3xf64>", "unexpected 'backwards'"),
        ("prim.argsort %a, dims = 0 : tensor<3xf64> -> tensor<3xi64>", "axis"),
    ],
)
def test_syntax_errors(ctx: Context, line: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        _parse(ctx, line, "tensor<3xf64>")


# --------------------------------------------------------------------------
# References
# --------------------------------------------------------------------------

SPECIAL = np.array([0.5, 1.5, 2.5, -0.5, -2.5, -0.0, 0.0, np.nan, np.inf, -np.inf, -3.7, 3.2])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rounding_references(dtype: type) -> None:
    x = SPECIAL.astype(dtype)
    np.testing.assert_array_equal(prim.FloorOp.reference(x), np.floor(x))
    np.testing.assert_array_equal(prim.CeilOp.reference(x), np.ceil(x))
    rounded = prim.RoundOp.reference(x)
    np.testing.assert_array_equal(rounded, np.round(x))  # halves to even
    np.testing.assert_array_equal(rounded[:5], [0.0, 2.0, 2.0, -0.0, -2.0])
    sign = prim.SignOp.reference(x)
    np.testing.assert_array_equal(sign, [1, 1, 1, -1, -1, 0, 0, np.nan, 1, -1, -1, 1])
    assert sign.dtype == dtype
    ints = np.array([-5, 0, 7], dtype=np.int32)
    assert prim.SignOp.reference(ints).dtype == np.int32


def test_erf_reference_is_math_erf() -> None:
    x = np.array([-30.0, -2.5, -1e-9, -0.0, 0.0, 1e-300, 0.3, 1.0, 4.0, np.inf, -np.inf, np.nan])
    expected = [math.erf(v) for v in x]
    np.testing.assert_array_equal(prim.ErfOp.reference(x), expected)
    x32 = x.astype(np.float32)
    single = prim.ErfOp.reference(x32)
    assert single.dtype == np.float32  # erf of the f32 values, in f64, rounded
    np.testing.assert_array_equal(single, np.array([math.erf(v) for v in x32], np.float32))
    assert prim.ErfOp.reference(0.5) == math.erf(0.5)


TIES = np.array(
    [[1.0, 3.0, 3.0, 0.0], [np.nan, 2.0, np.nan, 2.0], [-1.0, -1.0, 5.0, np.nan], [0.0, -0.0, 0, 0]]
)


def test_argmax_argmin_references() -> None:
    np.testing.assert_array_equal(prim.ArgMaxOp.reference(TIES, axis=1), [1, 0, 3, 0])
    np.testing.assert_array_equal(prim.ArgMinOp.reference(TIES, axis=1), [3, 0, 3, 0])
    np.testing.assert_array_equal(prim.ArgMaxOp.reference(TIES, axis=0), [1, 0, 1, 2])
    ints = np.array([[3, 1, 3], [0, 0, -2]], dtype=np.int32)
    np.testing.assert_array_equal(prim.ArgMaxOp.reference(ints, axis=1), [0, 0])
    np.testing.assert_array_equal(prim.ArgMinOp.reference(ints, axis=0), [1, 1, 1])


def test_argsort_reference_is_stable_with_nans_last() -> None:
    x = np.array([2.0, np.nan, 1.0, 2.0, -0.0, 0.0, np.nan, -np.inf, 1.0])
    order = prim.ArgsortOp.reference(x, axis=0)
    np.testing.assert_array_equal(order, [7, 4, 5, 2, 8, 0, 3, 1, 6])
    np.testing.assert_array_equal(order, np.argsort(x, kind="stable"))
    np.testing.assert_array_equal(
        prim.ArgsortOp.reference(TIES, axis=0), np.argsort(TIES, axis=0, kind="stable")
    )


def test_cumsum_reference() -> None:
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(prim.CumsumOp.reference(x, axis=1, reverse=False), x.cumsum(1))
    np.testing.assert_array_equal(
        prim.CumsumOp.reference(x, axis=0, reverse=True), x[::-1].cumsum(0)[::-1]
    )
    wraps = np.array([2**31 - 1, 1, 1], dtype=np.int32)
    out = prim.CumsumOp.reference(wraps, axis=0, reverse=False)
    assert out.dtype == np.int32 and out[1] == -(2**31)  # numpy's cumsum(dtype=int32)
    backward = prim.CumsumOp.reference(wraps, axis=0, reverse=True)
    np.testing.assert_array_equal(backward, np.array([-(2**31) + 1, 2, 1], dtype=np.int32))


def test_evaluate_gives_i64_indices() -> None:
    (x,) = Block(arg_types=[_t([4, 3], f32)]).args
    ops = [prim.ArgMaxOp(x, 0), prim.ArgsortOp(x, 1), prim.CumsumOp(x, 0, True)]
    value = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    env = evaluate_ops(ops, {x: value})
    assert env[ops[0].result].dtype == np.int64 and env[ops[0].result].shape == (3,)
    assert env[ops[1].result].dtype == np.int64 and env[ops[1].result].shape == (4, 3)
    assert env[ops[2].result].dtype == np.float32


# --------------------------------------------------------------------------
# Batching: the axis moves past the batch axis
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sample",
    [
        Sample(lambda x: prim.ArgMaxOp(x, 0), [("i32", (4, 3))]),
        Sample(lambda x: prim.ArgMinOp(x, 1), [("f64", (2, 5))]),
        Sample(lambda x: prim.CumsumOp(x, 1, reverse=True), [("c64", (2, 3, 4))]),
        Sample(lambda x: prim.ArgsortOp(x, 0), [("i64", (7, 2))]),
    ],
    ids=["argmax", "argmin", "cumsum", "argsort"],
)
def test_batch_rule_shifts_the_axis(sample: Sample) -> None:
    """Integer samples in [-6, 6] have ties; the per-example loop is numpy's."""
    (batched,) = batch_and_compare(sample, [True])
    original = sample.build(*Block(arg_types=[_t(list(sample.operands[0][1]))]).args)
    assert isinstance(batched, prim.AxisOp) and isinstance(original, prim.AxisOp)
    assert batched.axis_value == original.axis_value + 1
    assert batched.properties.keys() == original.properties.keys()  # reverse kept
    assert prim.shape_of(batched.results[0])[0] == SIZE
