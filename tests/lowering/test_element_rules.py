"""Every elementwise prim op (`ELEMENT_RULES`) compiled to native code and compared with numpy.

`CASES` holds one case per rule: how to build the op, its numpy reference and the
operand dtypes it accepts; `test_every_rule_has_a_case` keeps the two tables in
step, so a new rule without a test fails. Sweeps over an op's parameters
(`pow` exponents, `compare` directions, `convert` targets) follow.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from xdsl.builder import Builder
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation
from xdsl.rewriter import InsertPoint

from tidu_mlir.dialects import prim
from tidu_mlir.lowering.element_rules import ELEMENT_RULES, apply_elementwise
from tidu_mlir.lowering.runtime import compile_function
from tidu_mlir.lowering.scalar import ScalarBuilder

from .oracle import assert_matches, build, check, random_array, tensor

REAL = (np.float32, np.float64)
COMPLEX = (np.complex64, np.complex128)
ALL = REAL + COMPLEX


def _complex_of(re: np.ndarray, im: np.ndarray) -> np.ndarray:
    return (re + 1j * im).astype(np.result_type(re.dtype, np.complex64))


@dataclass(frozen=True)
class Case:
    """How to test one elementwise op."""

    make: Callable[..., Operation]
    """The op on the function's arguments."""
    reference: Callable[..., np.ndarray]
    """What numpy computes on the same arrays."""
    dtypes: tuple[type, ...]
    """The element types of the (last) operands the op accepts."""
    arity: int = 1
    predicate: bool = False
    """A boolean first operand before the `arity` operands of the tested dtype."""
    low_real: float = -2.0
    """Lower bound of real operands (complex ones are drawn from [-2, 2]^2)."""


CASES: dict[type[Operation], Case] = {
    prim.AddOp: Case(prim.AddOp, np.add, ALL, 2),
    prim.SubOp: Case(prim.SubOp, np.subtract, ALL, 2),
    prim.MulOp: Case(prim.MulOp, np.multiply, ALL, 2),
    prim.DivOp: Case(prim.DivOp, np.divide, ALL, 2),
    prim.MaximumOp: Case(prim.MaximumOp, np.maximum, REAL, 2),
    prim.Atan2Op: Case(prim.Atan2Op, np.arctan2, REAL, 2),
    prim.MinimumOp: Case(prim.MinimumOp, np.minimum, REAL, 2),
    prim.NegOp: Case(prim.NegOp, np.negative, ALL),
    prim.ExpOp: Case(prim.ExpOp, np.exp, ALL),
    prim.LogOp: Case(prim.LogOp, np.log, ALL, low_real=0.1),
    prim.SinOp: Case(prim.SinOp, np.sin, ALL),
    prim.CosOp: Case(prim.CosOp, np.cos, ALL),
    prim.TanhOp: Case(prim.TanhOp, np.tanh, ALL),
    prim.SqrtOp: Case(prim.SqrtOp, np.sqrt, ALL, low_real=0.1),
    prim.ConjOp: Case(prim.ConjOp, np.conj, ALL),
    prim.PowOp: Case(lambda x: prim.PowOp(x, 2.5), lambda x: x**2.5, ALL, low_real=0.2),
    prim.AbsOp: Case(prim.AbsOp, np.abs, ALL),
    prim.RealOp: Case(prim.RealOp, np.real, COMPLEX),
    prim.ImagOp: Case(prim.ImagOp, np.imag, COMPLEX),
    prim.ComplexOp: Case(prim.ComplexOp, _complex_of, REAL, 2),
    prim.SelectOp: Case(prim.SelectOp, np.where, ALL, 2, predicate=True),
    prim.CompareOp: Case(lambda x, y: prim.CompareOp("lt", x, y), np.less, REAL, 2),
    prim.ConvertOp: Case(
        lambda x: prim.ConvertOp(x, prim.element_type_of_dtype(np.float64)),
        lambda x: np.real(x).astype(np.float64),
        ALL,
    ),
    prim.FloorOp: Case(prim.FloorOp, np.floor, REAL),
    prim.CeilOp: Case(prim.CeilOp, np.ceil, REAL),
    prim.RoundOp: Case(prim.RoundOp, np.rint, REAL),
    prim.SignOp: Case(prim.SignOp, np.sign, (*REAL, np.int32, np.int64)),
    prim.ErfOp: Case(prim.ErfOp, prim.ErfOp.reference, REAL),
}


def test_every_rule_has_a_case() -> None:
    assert set(CASES) == set(ELEMENT_RULES)


@pytest.mark.parametrize(
    ("op", "dtype"),
    [(op, dtype) for op, case in CASES.items() for dtype in case.dtypes],
    ids=lambda v: getattr(v, "name", None) or np.dtype(v).name,
)
def test_rule_matches_numpy(op: type[Operation], dtype: type) -> None:
    case = CASES[op]
    types: list[TensorType] = [tensor((2, 3), np.bool_)] if case.predicate else []
    types += [tensor((2, 3), dtype)] * case.arity
    rng = np.random.default_rng(0)
    low = case.low_real if np.dtype(dtype).kind == "f" else -2.0
    args = [random_array(t, rng, low) for t in types]
    got = compile_function(build(types, case.make))(*args)
    assert_matches([got], [case.reference(*args)])


def test_op_without_a_rule_raises() -> None:
    block = Block(arg_types=[tensor((2, 3))])
    op = prim.TransposeOp(block.args[0], [1, 0])
    sb = ScalarBuilder(Builder(InsertPoint.at_end(block)))
    with pytest.raises(NotImplementedError, match="no element rule for 'prim.transpose'"):
        apply_elementwise(sb, op, [block.args[0]])


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("exponent", [2.0, 3.0, -1.0, 0.5, 2.5, -1.5])
def test_pow(exponent: float, dtype: type) -> None:
    check(build([tensor((5,), dtype)], lambda x: prim.PowOp(x, exponent)), low=0.2, high=2.0)


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("direction", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_compare_select(direction: str, dtype: type) -> None:
    t = tensor((6,), dtype)

    def body(x, y):
        pred = prim.CompareOp(direction, x, y)
        return [pred, prim.SelectOp(pred, x, y)]

    x = np.array([1, 2, 3, np.nan, 5, 6], dtype=dtype)
    y = np.array([1, 3, 2, 4, np.nan, 6], dtype=dtype)
    check(build([t, t], body), [x, y])


@pytest.mark.parametrize("source", ALL)
@pytest.mark.parametrize("target", ALL)
def test_convert(source: type, target: type) -> None:
    element = prim.element_type_of_dtype(target)
    check(build([tensor((4,), source)], lambda x: prim.ConvertOp(x, element)))


@pytest.mark.parametrize("target", ALL)
def test_convert_from_a_comparison(target: type) -> None:
    """A boolean converts to 0 or 1 (a regression: it was lowered as an fpext of i1)."""
    element = prim.element_type_of_dtype(target)
    t = tensor((6,))

    def body(x, y):
        return [prim.ConvertOp(prim.CompareOp("lt", x, y), element)]

    x = np.array([1.0, 2.0, 3.0, np.nan, 5.0, -6.0])
    y = np.array([1.0, 3.0, 2.0, 4.0, np.nan, 6.0])
    check(build([t, t], body), [x, y])
