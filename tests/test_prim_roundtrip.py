"""prim ops: parse -> print -> parse -> print is stable in custom and generic
form, and the Python constructors infer the documented result types."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ComplexType, ModuleOp, TensorType, f32, f64, i1
from xdsl.ir import Attribute, Block, Operation, Region
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from tidu_mlir.diagnostics import LocatingParser
from tidu_mlir.dialects import prim
from tidu_mlir.dialects.cg import LinearizedRoleAttr

C64 = ComplexType(f64)

# (op name, argument types, op line using %a, %b, ...)
CASES: list[tuple[str, str, str]] = [
    ("add", "tensor<3xf64>, tensor<3xf64>", "prim.add %a, %b : tensor<3xf64>"),
    ("sub", "tensor<f32>, tensor<f32>", "prim.sub %a, %b : tensor<f32>"),
    (
        "mul",
        "tensor<2xcomplex<f64>>, tensor<2xcomplex<f64>>",
        "prim.mul %a, %b {role = #cg.linearized<[fixed, active]>} : tensor<2xcomplex<f64>>",
    ),
    (
        "div",
        "tensor<3xcomplex<f32>>, tensor<3xcomplex<f32>>",
        "prim.div %a, %b : tensor<3xcomplex<f32>>",
    ),
    ("maximum", "tensor<3xf64>, tensor<3xf64>", "prim.maximum %a, %b : tensor<3xf64>"),
    ("minimum", "tensor<3xf32>, tensor<3xf32>", "prim.minimum %a, %b : tensor<3xf32>"),
    ("atan2", "tensor<3xf64>, tensor<3xf64>", "prim.atan2 %a, %b : tensor<3xf64>"),
    ("neg", "tensor<3xf64>", "prim.neg %a {role = #cg.linearized<[active]>} : tensor<3xf64>"),
    ("exp", "tensor<3xf64>", "prim.exp %a : tensor<3xf64>"),
    ("log", "tensor<3xf64>", "prim.log %a : tensor<3xf64>"),
    ("sin", "tensor<3xf64>", "prim.sin %a : tensor<3xf64>"),
    ("cos", "tensor<3xf64>", "prim.cos %a : tensor<3xf64>"),
    ("tanh", "tensor<3xf64>", "prim.tanh %a : tensor<3xf64>"),
    ("sqrt", "tensor<3xcomplex<f64>>", "prim.sqrt %a : tensor<3xcomplex<f64>>"),
    ("conj", "tensor<3xcomplex<f64>>", "prim.conj %a : tensor<3xcomplex<f64>>"),
    ("pow", "tensor<3xf64>", "prim.pow %a, 2.5 : tensor<3xf64>"),
    ("pow", "tensor<3xf32>", "prim.pow %a, -1.0e-07 : tensor<3xf32>"),
    ("abs", "tensor<3xcomplex<f64>>", "prim.abs %a : tensor<3xcomplex<f64>> -> tensor<3xf64>"),
    ("real", "tensor<3xcomplex<f64>>", "prim.real %a : tensor<3xcomplex<f64>> -> tensor<3xf64>"),
    ("imag", "tensor<3xcomplex<f32>>", "prim.imag %a : tensor<3xcomplex<f32>> -> tensor<3xf32>"),
    (
        "complex",
        "tensor<3xf64>, tensor<3xf64>",
        "prim.complex %a, %b : tensor<3xf64>, tensor<3xf64> -> tensor<3xcomplex<f64>>",
    ),
    (
        "select",
        "tensor<3xi1>, tensor<3xf64>, tensor<3xf64>",
        "prim.select %a, %b, %c : tensor<3xi1>, tensor<3xf64>",
    ),
    ("compare", "tensor<3xf64>, tensor<3xf64>", "prim.compare le, %a, %b : tensor<3xf64>"),
    (
        "check",
        "tensor<i1>, tensor<3xf64>",
        'prim.check %a, %b, message = "ran out: \\22n\\22 = 3" : tensor<3xf64>',
    ),
    (
        "convert",
        "tensor<3xcomplex<f64>>",
        "prim.convert %a : tensor<3xcomplex<f64>> -> tensor<3xf32>",
    ),
    ("constant", "", "prim.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf64>"),
    (
        "constant",
        "",
        "prim.constant dense<[(1.000000e+00,2.000000e+00), (3.000000e+00,4.000000e+00)]> "
        ": tensor<2xcomplex<f64>>",
    ),
    (
        "constant",
        "",
        "prim.constant {role = #cg.linearized<[]>} dense<0.000000e+00> : tensor<2x2xf32>",
    ),
    (
        "broadcast_in_dim",
        "tensor<3xf64>",
        "prim.broadcast_in_dim %a, dims = [1] : tensor<3xf64> -> tensor<2x3xf64>",
    ),
    (
        "reduce_sum",
        "tensor<2x3xf64>",
        "prim.reduce_sum %a, axes = [0] : tensor<2x3xf64> -> tensor<3xf64>",
    ),
    (
        "reduce_max",
        "tensor<2x3xf32>",
        "prim.reduce_max %a, axes = [0, 1] : tensor<2x3xf32> -> tensor<f32>",
    ),
    ("floor", "tensor<3xf64>", "prim.floor %a : tensor<3xf64>"),
    ("ceil", "tensor<3xf32>", "prim.ceil %a : tensor<3xf32>"),
    ("round", "tensor<f64>", "prim.round %a : tensor<f64>"),
    ("sign", "tensor<3xi32>", "prim.sign %a : tensor<3xi32>"),
    ("erf", "tensor<2x3xf64>", "prim.erf %a {role = #cg.linearized<[active]>} : tensor<2x3xf64>"),
    ("argmax", "tensor<3x4xf64>", "prim.argmax %a, axis = 1 : tensor<3x4xf64> -> tensor<3xi64>"),
    ("argmin", "tensor<5xi32>", "prim.argmin %a, axis = 0 : tensor<5xi32> -> tensor<i64>"),
    ("cumsum", "tensor<4x3xi64>", "prim.cumsum %a, axis = 0 : tensor<4x3xi64>"),
    (
        "cumsum",
        "tensor<4x3xcomplex<f32>>",
        "prim.cumsum %a, axis = 1, reverse {role = #cg.linearized<[active]>} "
        ": tensor<4x3xcomplex<f32>>",
    ),
    (
        "argsort",
        "tensor<3x4xf32>",
        "prim.argsort %a, axis = 0 : tensor<3x4xf32> -> tensor<3x4xi64>",
    ),
    ("cholesky", "tensor<2x3x3xcomplex<f64>>", "prim.cholesky %a : tensor<2x3x3xcomplex<f64>>"),
    (
        "triangular_solve",
        "tensor<3x3xf64>, tensor<3x2xf64>",
        "prim.triangular_solve %a, %b, lower, transpose_a, unit_diagonal "
        ": (tensor<3x3xf64>, tensor<3x2xf64>) -> tensor<3x2xf64>",
    ),
    (
        "triangular_solve",
        "tensor<3x3xcomplex<f32>>, tensor<3x1xcomplex<f32>>",
        "prim.triangular_solve %a, %b, transpose_a, conjugate_a "
        ": (tensor<3x3xcomplex<f32>>, tensor<3x1xcomplex<f32>>) -> tensor<3x1xcomplex<f32>>",
    ),
    ("lu", "tensor<4x4xf32>", "%r, %r_1, %r_2 = prim.lu %a : tensor<4x4xf32>"),
    ("qr", "tensor<2x5x3xf64>", "%r, %r_1 = prim.qr %a : tensor<2x5x3xf64>"),
    (
        "qr",
        "tensor<3x2xcomplex<f32>>",
        "%r, %r_1 = prim.qr %a, full_matrices : tensor<3x2xcomplex<f32>>",
    ),
    ("eigh", "tensor<2x3x3xcomplex<f64>>", "%r, %r_1 = prim.eigh %a : tensor<2x3x3xcomplex<f64>>"),
    ("svd", "tensor<5x3xf32>", "%r, %r_1, %r_2 = prim.svd %a, full_matrices : tensor<5x3xf32>"),
    ("reshape", "tensor<2x3xf64>", "prim.reshape %a : tensor<2x3xf64> -> tensor<3x2xf64>"),
    (
        "transpose",
        "tensor<2x3x4xf64>",
        "prim.transpose %a, permutation = [2, 0, 1] : tensor<2x3x4xf64> -> tensor<4x2x3xf64>",
    ),
    (
        "dot_general",
        "tensor<4x2x3xf64>, tensor<4x3x5xf64>",
        "prim.dot_general %a, %b, batch = [0] x [0], contract = [2] x [1] : "
        "(tensor<4x2x3xf64>, tensor<4x3x5xf64>) -> tensor<4x2x5xf64>",
    ),
    (
        "slice",
        "tensor<8x3xf64>",
        "prim.slice %a [1:5:2, 0:3:1] : tensor<8x3xf64> -> tensor<2x3xf64>",
    ),
    (
        "pad",
        "tensor<3xf64>",
        "prim.pad %a, low = [1], high = [2], interior = [1] : tensor<3xf64> -> tensor<8xf64>",
    ),
    (
        "concatenate",
        "tensor<2xf64>, tensor<3xf64>",
        "prim.concatenate %a, %b, dimension = 0 : (tensor<2xf64>, tensor<3xf64>) -> tensor<5xf64>",
    ),
    ("iota", "", "prim.iota dimension = 1 : tensor<2x3xi64>"),
    ("iota", "", "prim.iota dimension = 0 {role = #cg.linearized<[]>} : tensor<4xf32>"),
    (
        "gather",
        "tensor<3x4xf64>, tensor<5xi64>",
        "prim.gather %a, %b, axis = 1 : tensor<3x4xf64>, tensor<5xi64> -> tensor<3x5xf64>",
    ),
    (
        "gather",
        "tensor<4xcomplex<f64>>, tensor<2x3xi32>",
        "prim.gather %a, %b, axis = 0 {role = #cg.linearized<[active, fixed]>} : "
        "tensor<4xcomplex<f64>>, tensor<2x3xi32> -> tensor<2x3xcomplex<f64>>",
    ),
    (
        "scatter_add",
        "tensor<4x2xf32>, tensor<3xi64>, tensor<3x2xf32>",
        "prim.scatter_add %a, %b, %c, axis = 0 : tensor<4x2xf32>, tensor<3xi64>, "
        "tensor<3x2xf32> -> tensor<4x2xf32>",
    ),
    (
        "scatter",
        "tensor<4xi32>, tensor<i32>, tensor<i32>",
        "prim.scatter %a, %b, %c, axis = 0 : tensor<4xi32>, tensor<i32>, tensor<i32> "
        "-> tensor<4xi32>",
    ),
    (
        "dynamic_slice",
        "tensor<4x5xf64>, tensor<i64>, tensor<i32>",
        "prim.dynamic_slice %a [%b, %c], sizes = [2, 3] : tensor<4x5xf64>, tensor<i64>, "
        "tensor<i32> -> tensor<2x3xf64>",
    ),
    (
        "dynamic_slice",
        "tensor<f64>",
        "prim.dynamic_slice %a [], sizes = [] : tensor<f64> -> tensor<f64>",
    ),
    (
        "dynamic_update_slice",
        "tensor<4x5xf64>, tensor<2x2xf64>, tensor<i64>, tensor<i64>",
        "prim.dynamic_update_slice %a, %b [%c, %d] : tensor<4x5xf64>, tensor<2x2xf64>, "
        "tensor<i64>, tensor<i64> -> tensor<4x5xf64>",
    ),
    (
        "scan",
        "tensor<f64>, tensor<3xf64>",
        "prim.scan length 3 reverse init(%a) xs(%b) consts() "
        "{role = #cg.linearized<[active, fixed]>} : (tensor<f64>) (tensor<3xf64>) () "
        "-> (tensor<f64>) () {\n"
        "    ^bb0(%c: tensor<f64>, %x: tensor<f64>):\n"
        "      %n = prim.mul %c, %x {role = #cg.linearized<[active, fixed]>} : tensor<f64>\n"
        "      prim.yield %n : tensor<f64>\n"
        "    }",
    ),
    (
        "cond",
        "tensor<i1>, tensor<2xf64>",
        "prim.cond %a, (%b) : tensor<i1>, (tensor<2xf64>) -> (tensor<2xf64>) {\n"
        "    ^bb0(%x: tensor<2xf64>):\n"
        "      %s = prim.sin %x : tensor<2xf64>\n"
        "      prim.yield %s : tensor<2xf64>\n"
        "    } else {\n"
        "    ^bb0(%x_1: tensor<2xf64>):\n"
        "      prim.yield %x_1 : tensor<2xf64>\n"
        "    }",
    ),
    (
        "while",
        "tensor<f64>, tensor<f64>",
        "prim.while init(%a) consts(%b) : (tensor<f64>) (tensor<f64>) -> (tensor<f64>) cond {\n"
        "    ^bb0(%c: tensor<f64>, %k: tensor<f64>):\n"
        "      %p = prim.compare lt, %c, %k : tensor<f64>\n"
        "      prim.yield %p : tensor<i1>\n"
        "    } do {\n"
        "    ^bb0(%c_1: tensor<f64>, %k_1: tensor<f64>):\n"
        "      %n = prim.add %c_1, %c_1 : tensor<f64>\n"
        "      prim.yield %n : tensor<f64>\n"
        "    }",
    ),
    (
        "record_while",
        "tensor<f64>, tensor<f64>",
        "%r, %n, %tape = prim.record_while init(%a) consts(%b) : (tensor<f64>) (tensor<f64>) "
        "-> (tensor<f64>) "
        "count tensor<i64> tapes(tensor<?xf64>) cond {\n"
        "    ^bb0(%c: tensor<f64>, %k: tensor<f64>):\n"
        "      %p = prim.compare lt, %c, %k : tensor<f64>\n"
        "      prim.yield %p : tensor<i1>\n"
        "    } do {\n"
        "    ^bb0(%c_1: tensor<f64>, %k_1: tensor<f64>):\n"
        "      %d = prim.add %c_1, %c_1 : tensor<f64>\n"
        "      %s = prim.sin %c_1 : tensor<f64>\n"
        "      prim.yield %d, %s : tensor<f64>, tensor<f64>\n"
        "    }",
    ),
    (
        "scan",  # a dynamic scan: its trip count is an operand, its xs tapes
        "tensor<i64>, tensor<f64>, tensor<?x2xf64>",
        "prim.scan count(%a : tensor<i64>) reverse init(%b) xs(%c) consts() : (tensor<f64>) "
        "(tensor<?x2xf64>) () -> (tensor<f64>) () {\n"
        "    ^bb0(%s: tensor<f64>, %x: tensor<2xf64>):\n"
        "      %t = prim.reduce_sum %x, axes = [0] : tensor<2xf64> -> tensor<f64>\n"
        "      %u = prim.add %s, %t : tensor<f64>\n"
        "      prim.yield %u : tensor<f64>\n"
        "    }",
    ),
]


def _statement(line: str) -> str:
    """`line` as a statement: `%r = line`, unless it names its several results."""
    return line if line.startswith("%") else f"%r = {line}"


def _module_text(arg_types: str, line: str) -> str:
    names = "abcdefgh"
    args = ", ".join(
        f"%{names[i]}: {t.strip()}" for i, t in enumerate(arg_types.split(", ")) if t.strip()
    )
    return f"func.func @f({args}) {{\n  {_statement(line)}\n  func.return\n}}\n"


def _print(module: Operation, generic: bool = False) -> str:
    stream = io.StringIO()
    Printer(stream=stream, print_generic_format=generic).print_op(module)
    return stream.getvalue()


def _parse(ctx: Context, text: str) -> ModuleOp:
    module = LocatingParser(ctx, text).parse_module()
    module.verify()
    return module


def test_every_op_has_a_case() -> None:
    assert {f"prim.{name}" for name, _, _ in CASES} == {op.name for op in prim.PRIM_OPS}


@pytest.mark.parametrize("generic", [False, True], ids=["custom", "generic"])
@pytest.mark.parametrize(("name", "arg_types", "line"), CASES, ids=[c[0] for c in CASES])
def test_roundtrip(ctx: Context, name: str, arg_types: str, line: str, generic: bool) -> None:
    text = _module_text(arg_types, line)
    first = _print(_parse(ctx, text), generic)
    second = _print(_parse(ctx, first), generic)
    assert first == second
    custom = _print(_parse(ctx, first))
    assert f"{_statement(line)}\n" in custom


# --------------------------------------------------------------------------
# Constructors
# --------------------------------------------------------------------------


def _t(shape: list[int], element: Attribute = f64) -> TensorType:
    return TensorType(element, shape)


Builder = Callable[..., Operation]


def _build(ctx: Context, arg_types: Sequence[Attribute], make: Builder) -> Operation:
    """Construct `make(*args)` in a fresh func, verify it and check that its
    printed form parses back to the same text."""
    block = Block(arg_types=arg_types)
    op = make(*block.args)
    block.add_ops([op, func.ReturnOp()])
    module = ModuleOp([func.FuncOp("f", (list(arg_types), []), Region(block))])
    module.verify()
    text = _print(module)
    assert _print(_parse(ctx, text)) == text
    return op


M23 = _t([2, 3])
Z3 = _t([3], C64)
R3 = _t([3])

CONSTRUCTOR_CASES: list[tuple[str, Sequence[Attribute], Builder, TensorType]] = [
    ("add", [M23, M23], lambda x, y: prim.AddOp(x, y), M23),
    ("mul-role", [M23, M23], lambda x, y: prim.MulOp(x, y, role=[True, False]), M23),
    ("exp", [M23], lambda x: prim.ExpOp(x), M23),
    ("pow", [M23], lambda x: prim.PowOp(x, 3), M23),
    ("compare", [M23, M23], lambda x, y: prim.CompareOp("lt", x, y), _t([2, 3], i1)),
    ("convert", [M23], lambda x: prim.ConvertOp(x, f32), _t([2, 3], f32)),
    ("reduce_sum", [M23], lambda x: prim.ReduceSumOp(x, [1]), _t([2])),
    ("reduce_max", [M23], lambda x: prim.ReduceMaxOp(x, [0, 1]), _t([])),
    ("transpose", [M23], lambda x: prim.TransposeOp(x, [1, 0]), _t([3, 2])),
    ("reshape", [M23], lambda x: prim.ReshapeOp(x, [6]), _t([6])),
    ("slice", [M23], lambda x: prim.SliceOp(x, [0, 1], [2, 3], [1, 2]), _t([2, 1])),
    ("slice-unit-stride", [M23], lambda x: prim.SliceOp(x, [1, 0], [2, 3]), _t([1, 3])),
    ("pad", [M23], lambda x: prim.PadOp(x, [1, 0], [0, 2], [1, 1]), _t([4, 7])),
    ("concatenate", [M23, M23], lambda x, y: prim.ConcatenateOp([x, y], 1), _t([2, 6])),
    (
        "broadcast_in_dim",
        [M23],
        lambda x: prim.BroadcastInDimOp(x, [1, 2], _t([4, 2, 3])),
        _t([4, 2, 3]),
    ),
    (
        "dot_general-contract",
        [M23, M23],
        lambda x, y: prim.DotGeneralOp(x, y, lhs_contract=[1], rhs_contract=[1]),
        _t([2, 2]),
    ),
    (
        "dot_general-batch",
        [M23, M23],
        lambda x, y: prim.DotGeneralOp(x, y, lhs_batch=[0], rhs_batch=[0]),
        _t([2, 3, 3]),
    ),
    ("abs-complex", [Z3], lambda z: prim.AbsOp(z), R3),
    ("abs-real", [R3], lambda x: prim.AbsOp(x), R3),
    ("real", [Z3], lambda z: prim.RealOp(z), R3),
    ("imag", [Z3], lambda z: prim.ImagOp(z), R3),
    ("conj", [Z3], lambda z: prim.ConjOp(z), Z3),
    ("complex", [R3, R3], lambda a, b: prim.ComplexOp(a, b), Z3),
    ("select", [_t([3], i1), R3, R3], lambda p, a, b: prim.SelectOp(p, a, b), R3),
    ("check", [_t([], i1), Z3], lambda ok, z: prim.CheckOp(ok, z, "failed"), Z3),
]


@pytest.mark.parametrize(
    ("arg_types", "make", "expected"),
    [case[1:] for case in CONSTRUCTOR_CASES],
    ids=[case[0] for case in CONSTRUCTOR_CASES],
)
def test_constructor_infers_result_type(
    ctx: Context, arg_types: Sequence[Attribute], make: Builder, expected: TensorType
) -> None:
    op = _build(ctx, arg_types, make)
    assert op.results[0].type == expected


def test_constant_from_value(ctx: Context) -> None:
    op = _build(
        ctx,
        [],
        lambda: prim.ConstantOp.from_value(np.array([[1.0, 2.0], [3.0, 4.5]], dtype=np.float32)),
    )
    assert isinstance(op, prim.ConstantOp)
    assert op.result.type == _t([2, 2], f32)
    np.testing.assert_array_equal(op.to_array(), [[1.0, 2.0], [3.0, 4.5]])
    scalar = _build(ctx, [], lambda: prim.ConstantOp.from_value(1 - 2j))
    assert isinstance(scalar, prim.ConstantOp)
    assert scalar.result.type == _t([], C64)
    assert scalar.to_array() == 1 - 2j
    splat = _build(ctx, [], lambda: prim.ConstantOp.from_value(0.5, _t([2, 3], ComplexType(f32))))
    assert isinstance(splat, prim.ConstantOp)
    np.testing.assert_array_equal(splat.to_array(), np.full((2, 3), 0.5, np.complex64))
    assert splat.to_array().dtype == np.complex64


def test_role_keyword_sets_linearized_role() -> None:
    (x,) = Block(arg_types=[R3]).args
    op = prim.NegOp(x, role=[True])
    assert op.attributes["role"] == LinearizedRoleAttr([True])


def test_constructor_rejects_bad_shapes() -> None:
    (x,) = Block(arg_types=[M23]).args
    with pytest.raises(VerifyException, match="out of range"):
        prim.ReduceSumOp(x, [2])
    with pytest.raises(VerifyException, match="not a permutation"):
        prim.TransposeOp(x, [0, 0])
