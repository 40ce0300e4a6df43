"""The reference evaluator: every prim op against an independent numpy
computation on random inputs, for every dtype the op allows."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ComplexType, TensorType, f32, f64, i1
from xdsl.ir import Attribute, Block, Dialect, Operation, Region
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, result_def

from tidu_mlir.dialects import prim
from tidu_mlir.interfaces import Evaluable
from tidu_mlir.interp import EvaluationError, evaluate_fragment, evaluate_func, evaluate_ops

REAL = [f32, f64]
COMPLEX = [ComplexType(f32), ComplexType(f64)]
ALL = REAL + COMPLEX

Builder = Callable[..., Operation | Sequence[Operation]]


def _dtype(element: Attribute) -> np.dtype:
    return prim.tensor_dtype(element)


def _random(rng: np.random.Generator, shape: Sequence[int], element: Attribute) -> np.ndarray:
    """Random values in [0.5, 2) (and an imaginary part in [-1, 1) for complex)."""
    values = rng.uniform(0.5, 2.0, size=shape)
    if prim.is_complex(element):
        values = values + 1j * rng.uniform(-1.0, 1.0, size=shape)
    return values.astype(_dtype(element))


def _run(arg_types: Sequence[TensorType], make: Builder, *args: np.ndarray) -> np.ndarray:
    """Build `func.func @f(args) { make(*args); return last result }` and evaluate it."""
    block = Block(arg_types=arg_types)
    built = make(*block.args)
    ops = [built] if isinstance(built, Operation) else list(built)
    block.add_ops([*ops, func.ReturnOp(ops[-1].results[0])])
    fn = func.FuncOp("f", (list(arg_types), [ops[-1].results[0].type]), Region(block))
    fn.verify()
    (result,) = evaluate_func(fn, list(args))
    return result


def _wide(element: Attribute) -> type[np.generic]:
    """The 64-bit numpy type of the reference computation."""
    return np.complex128 if prim.is_complex(element) else np.float64


def _close(actual: np.ndarray, expected: object, element: Attribute) -> None:
    assert actual.dtype == _dtype(element), (actual.dtype, element)
    rtol = 1e-5 if prim.real_element_type(element) == f32 else 1e-12
    np.testing.assert_allclose(actual, np.asarray(expected, dtype=actual.dtype), rtol=rtol)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def _ids(elements: Sequence[Attribute]) -> list[str]:
    return [str(e) for e in elements]


# --------------------------------------------------------------------------
# Elementwise
# --------------------------------------------------------------------------

BINARY: list[tuple[type[prim.ElementwiseBinaryOp], Callable[..., np.ndarray], list[Attribute]]] = [
    (prim.AddOp, lambda a, b: a + b, ALL),
    (prim.SubOp, lambda a, b: a - b, ALL),
    (prim.MulOp, lambda a, b: a * b, ALL),
    (prim.DivOp, lambda a, b: a / b, ALL),
    (prim.MaximumOp, lambda a, b: np.where(a > b, a, b), REAL),
    (prim.MinimumOp, lambda a, b: np.where(a < b, a, b), REAL),
]


@pytest.mark.parametrize(
    ("op_class", "reference", "element"),
    [(c, f, e) for c, f, elements in BINARY for e in elements],
    ids=[f"{c.name}-{e}" for c, _, elements in BINARY for e in elements],
)
def test_binary(
    rng: np.random.Generator,
    op_class: type[prim.ElementwiseBinaryOp],
    reference: Callable[..., np.ndarray],
    element: Attribute,
) -> None:
    t = TensorType(element, [2, 3])
    a, b = _random(rng, [2, 3], element), _random(rng, [2, 3], element)
    wide = _wide(element)
    _close(_run([t, t], op_class, a, b), reference(a.astype(wide), b.astype(wide)), element)


def _cmath(name: str) -> Callable[[np.ndarray], np.ndarray]:
    """An elementwise function computed by Python's math/cmath, one element at a time."""
    import cmath
    import math

    def apply(x: np.ndarray) -> np.ndarray:
        module = cmath if np.iscomplexobj(x) else math
        return np.vectorize(getattr(module, name), otypes=[x.dtype])(x.astype(x.dtype.type))

    return apply


UNARY: list[tuple[type[prim.ElementwiseUnaryOp], Callable[[np.ndarray], np.ndarray]]] = [
    (prim.NegOp, lambda x: 0 - x),
    (prim.ExpOp, _cmath("exp")),
    (prim.LogOp, _cmath("log")),
    (prim.SinOp, _cmath("sin")),
    (prim.CosOp, _cmath("cos")),
    (prim.TanhOp, _cmath("tanh")),
    (prim.SqrtOp, _cmath("sqrt")),
    (prim.ConjOp, lambda x: np.real(x) - 1j * np.imag(x) if np.iscomplexobj(x) else x),
]


@pytest.mark.parametrize("element", ALL, ids=_ids(ALL))
@pytest.mark.parametrize("op_class, reference", UNARY, ids=[c.name for c, _ in UNARY])
def test_unary(
    rng: np.random.Generator,
    op_class: type[prim.ElementwiseUnaryOp],
    reference: Callable[[np.ndarray], np.ndarray],
    element: Attribute,
) -> None:
    t = TensorType(element, [4])
    x = _random(rng, [4], element)
    _close(_run([t], op_class, x), reference(x.astype(_wide(element))), element)


@pytest.mark.parametrize("element", ALL, ids=_ids(ALL))
@pytest.mark.parametrize("exponent", [2.0, -1.5, 0.5, 3.0])
def test_pow(rng: np.random.Generator, element: Attribute, exponent: float) -> None:
    t = TensorType(element, [4])
    x = _random(rng, [4], element)
    wide = x.astype(np.complex128)
    expected = np.exp(exponent * np.log(wide))
    if not prim.is_complex(element):
        expected = np.real(expected)
    _close(_run([t], lambda v: prim.PowOp(v, exponent), x), expected, element)


@pytest.mark.parametrize("element", ALL, ids=_ids(ALL))
def test_abs(rng: np.random.Generator, element: Attribute) -> None:
    t = TensorType(element, [4])
    x = _random(rng, [4], element) * np.array([1, -1, 1, -1], dtype=_dtype(element))
    wide = x.astype(np.complex128)
    expected = np.sqrt(wide.real**2 + wide.imag**2)
    _close(_run([t], prim.AbsOp, x), expected, prim.real_element_type(element))


@pytest.mark.parametrize("element", COMPLEX, ids=_ids(COMPLEX))
def test_real_imag_complex(rng: np.random.Generator, element: Attribute) -> None:
    t = TensorType(element, [3])
    z = _random(rng, [3], element)
    real = prim.real_element_type(element)
    _close(_run([t], prim.RealOp, z), [v.real for v in z.tolist()], real)
    _close(_run([t], prim.ImagOp, z), [v.imag for v in z.tolist()], real)
    rt = TensorType(real, [3])
    re, im = np.real(z).copy(), np.imag(z).copy()
    _close(
        _run([rt, rt], prim.ComplexOp, re, im),
        [complex(a, b) for a, b in zip(re, im, strict=True)],
        element,
    )


@pytest.mark.parametrize("element", ALL, ids=_ids(ALL))
def test_select(rng: np.random.Generator, element: Attribute) -> None:
    t, pt = TensorType(element, [5]), TensorType(i1, [5])
    pred = np.array([True, False, True, True, False])
    a, b = _random(rng, [5], element), _random(rng, [5], element)
    expected = [x if p else y for p, x, y in zip(pred, a, b, strict=True)]
    _close(_run([pt, t, t], prim.SelectOp, pred, a, b), expected, element)


@pytest.mark.parametrize("element", REAL, ids=_ids(REAL))
@pytest.mark.parametrize("direction", prim.COMPARE_DIRECTIONS)
def test_compare(rng: np.random.Generator, element: Attribute, direction: str) -> None:
    import operator

    t = TensorType(element, [6])
    a = _random(rng, [6], element)
    b = a.copy()
    b[::2] = _random(rng, [3], element)
    python_op = getattr(operator, direction)
    result = _run([t, t], lambda x, y: prim.CompareOp(direction, x, y), a, b)
    assert result.dtype == np.bool_
    np.testing.assert_array_equal(result, [python_op(x, y) for x, y in zip(a, b, strict=True)])


@pytest.mark.parametrize("target", ALL, ids=_ids(ALL))
@pytest.mark.parametrize("source", ALL, ids=_ids(ALL))
def test_convert(rng: np.random.Generator, source: Attribute, target: Attribute) -> None:
    x = _random(rng, [3], source)
    values = x.tolist()
    if not prim.is_complex(target):
        values = [complex(v).real for v in values]
    result = _run([TensorType(source, [3])], lambda v: prim.ConvertOp(v, target), x)
    assert result.dtype == _dtype(target)
    rtol = 1e-6 if f32 in (prim.real_element_type(source), prim.real_element_type(target)) else 0
    np.testing.assert_allclose(result, np.array(values, dtype=result.dtype), rtol=rtol)


@pytest.mark.parametrize("element", ALL, ids=_ids(ALL))
def test_constant(rng: np.random.Generator, element: Attribute) -> None:
    value = _random(rng, [2, 3], element)
    t = TensorType(element, [2, 3])
    _close(_run([], lambda: prim.ConstantOp.from_value(value, t)), value, element)


def test_constant_parsed_splat_and_complex(ctx) -> None:
    from tidu_mlir.diagnostics import LocatingParser

    module = LocatingParser(
        ctx,
        """func.func @f() -> (tensor<2x2xf32>, tensor<2xcomplex<f64>>) {
          %0 = prim.constant dense<1.5> : tensor<2x2xf32>
          %1 = prim.constant dense<[(1.0,2.0), (3.0,-4.0)]> : tensor<2xcomplex<f64>>
          func.return %0, %1 : tensor<2x2xf32>, tensor<2xcomplex<f64>>
        }""",
    ).parse_module()
    fn = module.body.block.first_op
    assert isinstance(fn, func.FuncOp)
    splat, pair = evaluate_func(fn, [])
    assert splat.dtype == np.float32
    np.testing.assert_array_equal(splat, np.full((2, 2), 1.5))
    np.testing.assert_array_equal(pair, [1 + 2j, 3 - 4j])


# --------------------------------------------------------------------------
# Shape ops
# --------------------------------------------------------------------------


@pytest.mark.parametrize("element", ALL, ids=_ids(ALL))
def test_broadcast_in_dim(rng: np.random.Generator, element: Attribute) -> None:
    x = _random(rng, [3, 1], element)
    result_type = TensorType(element, [2, 3, 4])
    result = _run(
        [TensorType(element, [3, 1])],
        lambda v: prim.BroadcastInDimOp(v, [1, 2], result_type),
        x,
    )
    expected = [[[x[j, 0] for _ in range(4)] for j in range(3)] for _ in range(2)]
    _close(result, expected, element)


@pytest.mark.parametrize("element", ALL, ids=_ids(ALL))
@pytest.mark.parametrize("axes", [[], [0], [1], [0, 2], [0, 1, 2]])
def test_reduce_sum(rng: np.random.Generator, element: Attribute, axes: list[int]) -> None:
    x = _random(rng, [2, 3, 4], element)
    expected = x.astype(np.complex128)
    for axis in reversed(axes):
        expected = np.add.reduce(expected, axis=axis)
    if not prim.is_complex(element):
        expected = np.real(expected)
    result = _run([TensorType(element, [2, 3, 4])], lambda v: prim.ReduceSumOp(v, axes), x)
    _close(result, expected, element)


@pytest.mark.parametrize("element", REAL, ids=_ids(REAL))
@pytest.mark.parametrize("axes", [[], [1], [0, 2], [0, 1, 2]])
def test_reduce_max(rng: np.random.Generator, element: Attribute, axes: list[int]) -> None:
    x = _random(rng, [2, 3, 4], element)
    expected = x
    for axis in reversed(axes):
        expected = np.maximum.reduce(expected, axis=axis)
    result = _run([TensorType(element, [2, 3, 4])], lambda v: prim.ReduceMaxOp(v, axes), x)
    _close(result, expected, element)


@pytest.mark.parametrize("element", ALL, ids=_ids(ALL))
def test_reshape(rng: np.random.Generator, element: Attribute) -> None:
    x = _random(rng, [2, 3], element)
    result = _run([TensorType(element, [2, 3])], lambda v: prim.ReshapeOp(v, [3, 1, 2]), x)
    _close(result, np.array(x.ravel().tolist()).reshape(3, 1, 2), element)


@pytest.mark.parametrize("element", ALL, ids=_ids(ALL))
def test_transpose(rng: np.random.Generator, element: Attribute) -> None:
    x = _random(rng, [2, 3, 4], element)
    result = _run([TensorType(element, [2, 3, 4])], lambda v: prim.TransposeOp(v, [2, 0, 1]), x)
    expected = [[[x[i, j, k] for j in range(3)] for i in range(2)] for k in range(4)]
    _close(result, expected, element)


DOT_CASES: list[
    tuple[str, list[int], list[int], dict[str, list[int]], Callable[..., np.ndarray]]
] = [
    ("matmul", [2, 3], [3, 4], {"lhs_contract": [1], "rhs_contract": [0]}, lambda a, b: a @ b),
    ("inner", [3], [3], {"lhs_contract": [0], "rhs_contract": [0]}, lambda a, b: (a * b).sum()),
    ("outer", [2], [3], {}, lambda a, b: a[:, None] * b[None, :]),
    (
        "batched",
        [4, 2, 3],
        [4, 3, 5],
        {"lhs_batch": [0], "rhs_batch": [0], "lhs_contract": [2], "rhs_contract": [1]},
        lambda a, b: np.stack([a[i] @ b[i] for i in range(4)]),
    ),
    (
        "batch-not-leading",
        [3, 4, 2],
        [5, 4, 3],
        {"lhs_batch": [1], "rhs_batch": [1], "lhs_contract": [0], "rhs_contract": [2]},
        lambda a, b: np.stack([a[:, i, :].T @ b[:, i, :].T for i in range(4)]),
    ),
]


@pytest.mark.parametrize("element", ALL, ids=_ids(ALL))
@pytest.mark.parametrize(
    ("lhs_shape", "rhs_shape", "dims", "reference"),
    [case[1:] for case in DOT_CASES],
    ids=[case[0] for case in DOT_CASES],
)
def test_dot_general(
    rng: np.random.Generator,
    element: Attribute,
    lhs_shape: list[int],
    rhs_shape: list[int],
    dims: dict[str, list[int]],
    reference: Callable[..., np.ndarray],
) -> None:
    a, b = _random(rng, lhs_shape, element), _random(rng, rhs_shape, element)
    result = _run(
        [TensorType(element, lhs_shape), TensorType(element, rhs_shape)],
        lambda x, y: prim.DotGeneralOp(x, y, **dims),  # pyright: ignore[reportArgumentType],
        a,
        b,
    )
    wide = _wide(element)
    _close(result, reference(a.astype(wide), b.astype(wide)), element)


@pytest.mark.parametrize("element", ALL, ids=_ids(ALL))
def test_slice(rng: np.random.Generator, element: Attribute) -> None:
    x = _random(rng, [8, 5], element)
    result = _run(
        [TensorType(element, [8, 5])], lambda v: prim.SliceOp(v, [1, 0], [6, 5], [2, 3]), x
    )
    expected = [[x[i, j] for j in range(0, 5, 3)] for i in range(1, 6, 2)]
    _close(result, expected, element)


@pytest.mark.parametrize("element", ALL, ids=_ids(ALL))
def test_pad(rng: np.random.Generator, element: Attribute) -> None:
    x = _random(rng, [3, 2], element)
    low, high, interior = [1, 0], [2, 1], [1, 2]
    result = _run([TensorType(element, [3, 2])], lambda v: prim.PadOp(v, low, high, interior), x)
    expected = np.zeros((1 + 3 + 2 + 2, 0 + 2 + 2 + 1), dtype=x.dtype)
    for i in range(3):
        for j in range(2):
            expected[low[0] + i * (interior[0] + 1), low[1] + j * (interior[1] + 1)] = x[i, j]
    _close(result, expected, element)


@pytest.mark.parametrize("element", ALL, ids=_ids(ALL))
@pytest.mark.parametrize("dimension", [0, 1])
def test_concatenate(rng: np.random.Generator, element: Attribute, dimension: int) -> None:
    shapes = [[2, 3], [1, 3], [3, 3]] if dimension == 0 else [[2, 1], [2, 3], [2, 2]]
    arrays = [_random(rng, shape, element) for shape in shapes]
    result = _run(
        [TensorType(element, shape) for shape in shapes],
        lambda *vs: prim.ConcatenateOp(vs, dimension),
        *arrays,
    )
    if dimension == 0:
        expected = [row for array in arrays for row in array.tolist()]
    else:
        expected = [sum((array[i].tolist() for array in arrays), []) for i in range(2)]
    _close(result, expected, element)


# --------------------------------------------------------------------------
# The evaluator itself
# --------------------------------------------------------------------------


def test_f32_chain_stays_f32(rng: np.random.Generator) -> None:
    t = TensorType(f32, [3])
    x = _random(rng, [3], f32)
    result = _run(
        [t],
        lambda v: [
            c := prim.ConstantOp.from_value(np.float32(2.0), TensorType(f32, [])),
            b := prim.BroadcastInDimOp(c, [], t),
            p := prim.PowOp(v, 2.0),
            prim.MulOp(p, b),
        ],
        x,
    )
    _close(result, 2 * x.astype(np.float64) ** 2, f32)


def test_argument_shape_mismatch_is_rejected() -> None:
    t = TensorType(f64, [3])
    with pytest.raises(ValueError, match="argument #0 of @f has shape"):
        _run([t], prim.NegOp, np.ones(4))


@irdl_op_definition
class ToyDoubleOp(IRDLOperation, Evaluable):
    """A toy op of a toy dialect, to check that other dialects' ops evaluate."""

    name = "toy.double"
    operand = operand_def()
    result = result_def()

    def __init__(self, operand):
        super().__init__(operands=[operand], result_types=[operand.type])

    def evaluate(self, *operands: np.ndarray) -> tuple[np.ndarray, ...]:
        return (2 * operands[0],)


@irdl_op_definition
class ToyUnknownOp(IRDLOperation):
    name = "toy.unknown"
    operand = operand_def()
    result = result_def()

    def __init__(self, operand):
        super().__init__(operands=[operand], result_types=[operand.type])


TOY = Dialect("toy", [ToyDoubleOp, ToyUnknownOp], [])


def test_other_dialects_evaluate() -> None:
    (x,) = Block(arg_types=[TensorType(f64, [2])]).args
    double = ToyDoubleOp(x)
    env = evaluate_ops([double, prim.NegOp(double.result)], {x: np.array([1.0, 2.0])})
    np.testing.assert_array_equal(env[double.result], [2.0, 4.0])


def test_unknown_op_names_the_op() -> None:
    (x,) = Block(arg_types=[TensorType(f64, [2])]).args
    with pytest.raises(EvaluationError, match="toy.unknown"):
        evaluate_ops([ToyUnknownOp(x)], {x: np.zeros(2)})


def test_missing_operand_value() -> None:
    (x,) = Block(arg_types=[TensorType(f64, [2])]).args
    with pytest.raises(EvaluationError, match="no value for operand #0 of 'prim.neg'"):
        evaluate_ops([prim.NegOp(x)], {})


def test_evaluate_fragment(parse) -> None:
    from tidu_mlir.graph import lookup_fragment

    module = parse(
        """
        cg.graph @f {
          %x = cg.input #cg.key<"x"> : tensor<f64>
          %p1 = prim.add %x, %x : tensor<f64>
          %p2 = prim.mul %p1, %x : tensor<f64>
          cg.linear @jvp1 pass 1 active [true] {
            %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
            %t1 = prim.add %dx, %dx {role = #cg.linearized<[active, active]>} : tensor<f64>
            %t2 = prim.mul %p1, %dx {role = #cg.linearized<[fixed, active]>} : tensor<f64>
            %t3 = prim.mul %t1, %x {role = #cg.linearized<[active, fixed]>} : tensor<f64>
            %t4 = prim.add %t2, %t3 {role = #cg.linearized<[active, active]>} : tensor<f64>
            cg.output %t4 : tensor<f64>
          }
          cg.output %p2 : tensor<f64>
        }
        """
    )
    (value,) = evaluate_fragment(lookup_fragment(module, "@f"), [3.0])
    assert value == 18.0
    (tangent,) = evaluate_fragment(lookup_fragment(module, "@f::@jvp1"), [3.0, 0.5])
    assert tangent == 4 * 3.0 * 0.5
