"""Guards of the `prim` package's structure.

Every op class carries everything about itself (verifier, JVP rule, transpose
rule or the explicit `NotLinear` base, linearity predicate, batching rule,
numpy reference),
and `evaluate` agrees with `reference`. The package's layering is checked with
the rest of the import graph in `tests/test_import_graph.py`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import ComplexType, DenseArrayBase, TensorType, f64, i1, i64
from xdsl.ir import Block, Operation, SSAValue
from xdsl.irdl import OptionalDef
from xdsl.traits import Pure

from tidu_mlir.dialects import prim
from tidu_mlir.dialects.prim import NotLinear, PrimOp, UnaryLinear
from tidu_mlir.dialects.prim.control.bodies import region_from
from tidu_mlir.interfaces import Batchable, RecomputeCost
from tidu_mlir.interp import evaluate_ops


def _defined_in(op_class: type, attr: str) -> type:
    """The class of `op_class`'s MRO whose body defines `attr`."""
    return next(k for k in op_class.__mro__ if attr in vars(k))


def _is_below_prim_op(klass: type) -> bool:
    return issubclass(klass, PrimOp) and klass is not PrimOp


# --------------------------------------------------------------------------
# Every op carries its verifier, rules and reference
# --------------------------------------------------------------------------


@pytest.mark.parametrize("op_class", prim.PRIM_OPS, ids=lambda c: c.name)
def test_op_class_is_complete(op_class: type[PrimOp]) -> None:
    assert not getattr(op_class, "__abstractmethods__", ()), op_class.__abstractmethods__
    for attr in ("verify_types", "jvp_rule", "is_linear_in"):
        assert _is_below_prim_op(_defined_in(op_class, attr)), f"{op_class.name}: no {attr}"
    if issubclass(op_class, NotLinear):
        assert _defined_in(op_class, "transpose_rule") is NotLinear
    else:
        assert _is_below_prim_op(_defined_in(op_class, "transpose_rule"))
        assert _defined_in(op_class, "transpose_rule") is not NotLinear
    if issubclass(op_class, UnaryLinear):
        assert _defined_in(op_class, "apply_to") is op_class
        assert _defined_in(op_class, "emit_adjoint") is op_class
    else:
        assert _defined_in(op_class, "jvp_rule") is op_class
    batch_owner = _defined_in(op_class, "batch_rule")
    assert batch_owner is not Batchable and _is_below_prim_op(batch_owner), (
        f"{op_class.name}: no batch_rule"
    )
    assert not getattr(op_class.batch_rule, "__isabstractmethod__", False)
    assert isinstance(inspect.getattr_static(op_class, "reference"), staticmethod)
    assert _defined_in(op_class, "reference") is op_class
    assert op_class.has_trait(Pure) and op_class.get_trait(RecomputeCost) is not None


@pytest.mark.parametrize("op_class", prim.PRIM_OPS, ids=lambda c: c.name)
def test_op_class_has_no_default_valued_properties(op_class: type[PrimOp]) -> None:
    """The ops' `parse` build them with `fast_syntax.build_operation`, which,
    unlike `create`, fills in no default property or attribute: none may have one."""
    definition = op_class.get_irdl_definition()
    for name, field in [*definition.properties.items(), *definition.attributes.items()]:
        default = None if isinstance(field, OptionalDef) else field.default_value
        assert default is None, f"{op_class.name}: {name} defaults to {default}"


def test_contractions_and_reductions_are_saved_not_recomputed() -> None:
    expensive = {k for k in prim.PRIM_OPS if not k.get_trait(RecomputeCost).cheap}
    loops = {prim.ScanOp, prim.CondOp, prim.WhileOp, prim.RecordWhileOp}  # their regions'
    arg_ops = {prim.ArgMaxOp, prim.ArgMinOp, prim.ArgsortOp}  # reductions and a sort
    linalg = {prim.CholeskyOp, prim.TriangularSolveOp, prim.LuOp, prim.QrOp}  # O(n³) per matrix
    spectral = {prim.EighOp, prim.SvdOp}
    expected = {
        prim.DotGeneralOp,
        prim.ReduceSumOp,
        prim.ReduceMaxOp,
        *arg_ops,
        *loops,
        *linalg,
        *spectral,
    }
    assert expensive == expected


def test_accumulate_is_prim_add() -> None:
    (x,) = Block(arg_types=[TensorType(f64, [2])]).args
    for op_class in prim.PRIM_OPS:
        assert isinstance(op_class.accumulate(x, x), prim.AddOp)


# --------------------------------------------------------------------------
# evaluate == reference on a small sample of every op
# --------------------------------------------------------------------------

RNG = np.random.default_rng(0)
X23 = RNG.uniform(0.5, 2.0, (2, 3))
Y23 = RNG.uniform(0.5, 2.0, (2, 3))
X3 = RNG.uniform(0.5, 2.0, (3,))
Y34 = RNG.uniform(0.5, 2.0, (3, 4))
Z23 = X23 + 1j * Y23
P23 = X23 > Y23
IDX = np.array([0, -1, 5, 2, -9])
SPD = Y34[:, :3] @ Y34[:, :3].T + 3.0 * np.eye(3)  # negative, out of range both ways (clamped)


def _type_of(array: np.ndarray) -> TensorType:
    if array.dtype.kind == "i":
        return TensorType(prim.element_type_of_dtype(array.dtype), array.shape)
    element = {"f": f64, "c": ComplexType(f64), "b": i1}[array.dtype.kind]
    return TensorType(element, array.shape)


Build = Callable[..., Operation]
# op class -> (builder from operand values, operand arrays, reference parameters)
CASES: dict[type[PrimOp], tuple[Build, Sequence[np.ndarray], dict[str, Any]]] = {
    prim.AddOp: (prim.AddOp, (X23, Y23), {}),
    prim.SubOp: (prim.SubOp, (X23, Y23), {}),
    prim.MulOp: (prim.MulOp, (X23, Y23), {}),
    prim.DivOp: (prim.DivOp, (X23, Y23), {}),
    prim.MaximumOp: (prim.MaximumOp, (X23, Y23), {}),
    prim.Atan2Op: (prim.Atan2Op, (X23, -Y23), {}),
    prim.MinimumOp: (prim.MinimumOp, (X23, Y23), {}),
    prim.NegOp: (prim.NegOp, (X23,), {}),
    prim.ExpOp: (prim.ExpOp, (X23,), {}),
    prim.LogOp: (prim.LogOp, (X23,), {}),
    prim.SinOp: (prim.SinOp, (X23,), {}),
    prim.CosOp: (prim.CosOp, (X23,), {}),
    prim.TanhOp: (prim.TanhOp, (X23,), {}),
    prim.SqrtOp: (prim.SqrtOp, (X23,), {}),
    prim.ConjOp: (prim.ConjOp, (Z23,), {}),
    prim.PowOp: (lambda x: prim.PowOp(x, 2.5), (X23,), {"exponent": 2.5}),
    prim.AbsOp: (prim.AbsOp, (Z23,), {}),
    prim.RealOp: (prim.RealOp, (Z23,), {}),
    prim.ImagOp: (prim.ImagOp, (Z23,), {}),
    prim.ComplexOp: (prim.ComplexOp, (X23, Y23), {}),
    prim.SelectOp: (prim.SelectOp, (P23, X23, Y23), {}),
    prim.CheckOp: (
        lambda ok, x: prim.CheckOp(ok, x, "failed"),
        (np.array(True), X23),
        {"message": "failed"},
    ),
    prim.CompareOp: (lambda a, b: prim.CompareOp("lt", a, b), (X23, Y23), {"direction": "lt"}),
    prim.ConvertOp: (
        lambda x: prim.ConvertOp(x, ComplexType(f64)),
        (X23,),
        {"dtype": np.dtype(np.complex128)},
    ),
    prim.ConstantOp: (lambda: prim.ConstantOp.from_value(X23), (), {"value": X23}),
    prim.BroadcastInDimOp: (
        lambda x: prim.BroadcastInDimOp(x, [1], TensorType(f64, [2, 3])),
        (X3,),
        {"dims": (1,), "shape": (2, 3)},
    ),
    prim.ReduceSumOp: (lambda x: prim.ReduceSumOp(x, [0]), (X23,), {"axes": (0,)}),
    prim.ReduceMaxOp: (lambda x: prim.ReduceMaxOp(x, [1]), (X23,), {"axes": (1,)}),
    prim.FloorOp: (prim.FloorOp, (X23 - 1.0,), {}),
    prim.CeilOp: (prim.CeilOp, (X23 - 1.0,), {}),
    prim.RoundOp: (prim.RoundOp, (X23 * 2.0,), {}),
    prim.SignOp: (prim.SignOp, (X23 - 1.0,), {}),
    prim.ErfOp: (prim.ErfOp, (X23 - 1.0,), {}),
    prim.ArgMaxOp: (lambda x: prim.ArgMaxOp(x, 1), (X23,), {"axis": 1}),
    prim.ArgMinOp: (lambda x: prim.ArgMinOp(x, 0), (X23,), {"axis": 0}),
    prim.CumsumOp: (
        lambda x: prim.CumsumOp(x, 1, reverse=True),
        (Z23,),
        {"axis": 1, "reverse": True},
    ),
    prim.ArgsortOp: (lambda x: prim.ArgsortOp(x, 1), (X23,), {"axis": 1}),
    prim.ReshapeOp: (lambda x: prim.ReshapeOp(x, [3, 2]), (X23,), {"shape": (3, 2)}),
    prim.TransposeOp: (lambda x: prim.TransposeOp(x, [1, 0]), (X23,), {"permutation": (1, 0)}),
    prim.ScanOp: (
        lambda c, xs: prim.ScanOp.from_body(
            [c], [xs], [], 2, lambda c, x: [prim.AddOp(prim.SinOp(c), x)], reverse=True
        ),
        (X3, Y23),
        {
            "body": lambda c, x: [np.sin(c) + x],
            "carries": 1,
            "xs": 1,
            "length": 2,
            "reverse": True,
            "y_shapes": [],
        },
    ),
    prim.WhileOp: (
        lambda c: prim.WhileOp.from_regions(
            [c],
            [],
            lambda c: [prim.CompareOp("gt", prim.ReduceSumOp(c, [0]), prim.ReduceSumOp(c, [0]))],
            lambda c: [prim.SinOp(c)],
        ),
        (X3,),
        {"carries": 1, "cond": lambda c: [False], "body": lambda c: [np.sin(c)]},
    ),
    prim.RecordWhileOp: (
        lambda c: prim.RecordWhileOp(
            [c],
            [],
            region_from(
                [c.type],
                lambda c: [
                    prim.CompareOp(
                        "gt", prim.ReduceSumOp(c, [0]), prim.ConstantOp.from_value(np.asarray(1.0))
                    )
                ],
            ),
            region_from(
                [c.type],
                lambda c: [
                    prim.MulOp(c, prim.ConstantOp.from_value(np.full(3, 0.5))),
                    prim.SinOp(c),
                ],
            ),
        ),
        (X3,),
        {
            "carries": 1,
            "cond": lambda c: [np.sum(c) > 1.0],
            "body": lambda c: [c * 0.5, np.sin(c)],
            "slice_shapes": [(3,)],
        },
    ),
    prim.CondOp: (
        lambda p, a, b: prim.CondOp.from_branches(
            p, [a, b], lambda a, b: [prim.MulOp(a, b)], lambda a, b: [prim.SinOp(b)]
        ),
        (np.array(False), X23, Y23),
        {"on_true": lambda a, b: [a * b], "on_false": lambda a, b: [np.sin(b)]},
    ),
    prim.DotGeneralOp: (
        lambda a, b: prim.DotGeneralOp(a, b, lhs_contract=[1], rhs_contract=[0]),
        (X23, Y34),
        {"lhs_contract": (1,), "rhs_contract": (0,)},
    ),
    prim.CholeskyOp: (prim.CholeskyOp, (SPD,), {}),
    prim.TriangularSolveOp: (
        lambda a, b: prim.TriangularSolveOp(a, b, lower=True),
        (SPD, Y34),
        {"lower": True, "transpose_a": False, "conjugate_a": False, "unit_diagonal": False},
    ),
    prim.LuOp: (prim.LuOp, (SPD,), {}),
    prim.QrOp: (lambda a: prim.QrOp(a, full_matrices=True), (X23,), {"full_matrices": True}),
    prim.EighOp: (prim.EighOp, (SPD,), {}),
    prim.SvdOp: (lambda a: prim.SvdOp(a, full_matrices=True), (X23,), {"full_matrices": True}),
    prim.SliceOp: (
        lambda x: prim.SliceOp(x, [0, 1], [2, 3], [1, 2]),
        (X23,),
        {"start": (0, 1), "limit": (2, 3), "stride": (1, 2)},
    ),
    prim.PadOp: (
        lambda x: prim.PadOp(x, [1, 0], [0, 1], [0, 1]),
        (X23,),
        {"low": (1, 0), "high": (0, 1), "interior": (0, 1)},
    ),
    prim.ConcatenateOp: (
        lambda a, b: prim.ConcatenateOp([a, b], 0),
        (X23, Y23),
        {"dimension": 0},
    ),
    prim.IotaOp: (
        lambda: prim.IotaOp(TensorType(i64, [2, 3]), 1),
        (),
        {"shape": (2, 3), "dimension": 1, "dtype": np.dtype(np.int64)},
    ),
    prim.GatherOp: (lambda x, i: prim.GatherOp(x, i, 1), (X23, IDX), {"axis": 1}),
    prim.ScatterAddOp: (
        lambda x, i, u: prim.ScatterAddOp(x, i, u, 1),
        (X23, IDX, np.ones((2, 5))),
        {"axis": 1},
    ),
    prim.ScatterOp: (
        lambda x, i, u: prim.ScatterOp(x, i, u, 1),
        (X23, IDX, np.ones((2, 5))),
        {"axis": 1},
    ),
    prim.DynamicSliceOp: (
        lambda x, s, t: prim.DynamicSliceOp(x, [s, t], [1, 2]),
        (X23, np.array(1, np.int32), np.array(-4, np.int64)),
        {"sizes": (1, 2)},
    ),
    prim.DynamicUpdateSliceOp: (
        lambda x, u, s, t: prim.DynamicUpdateSliceOp(x, u, [s, t]),
        (X23, Y23[:1, :2], np.array(1, np.int32), np.array(9, np.int64)),
        {},
    ),
}


def test_every_op_has_a_sample() -> None:
    assert set(CASES) == set(prim.PRIM_OPS)


@pytest.mark.parametrize("op_class", prim.PRIM_OPS, ids=lambda c: c.name)
def test_evaluate_matches_reference(op_class: type[PrimOp]) -> None:
    build, arrays, params = CASES[op_class]
    values: Sequence[SSAValue] = Block(arg_types=[_type_of(a) for a in arrays]).args
    op = build(*values)
    assert isinstance(op, op_class)
    op.verify()
    results = op.evaluate(*arrays)
    expected = op_class.reference(*arrays, **params)
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert len(results) == len(expected) == len(op.result_types)
    for result, want, typ in zip(results, expected, op.result_types, strict=True):
        assert isinstance(typ, TensorType)
        static = [d if d >= 0 else result.shape[0] for d in typ.get_shape()]  # a tape's length
        assert result.shape == tuple(static)
        np.testing.assert_array_equal(result, want)


def test_elementwise_references_are_numpy() -> None:
    """tnp's concrete path and eager run the references: they broadcast and
    warn like numpy; the evaluator runs them with floating-point errors ignored."""
    np.testing.assert_array_equal(prim.AddOp.reference(X23, 1.0), X23 + 1.0)
    with pytest.warns(RuntimeWarning):
        prim.LogOp.reference(np.array([-1.0]))
    (x,) = Block(arg_types=[TensorType(f64, [1])]).args
    op = prim.LogOp(x)
    with np.errstate(all="raise"):
        env = evaluate_ops([op], {x: np.array([-1.0])})
    assert np.isnan(env[op.result]).all()


@pytest.mark.parametrize(
    "values", [[], [0], [1, -5, 7], [-(2**63), 2**63 - 1], [2**63, 2**64 - 1], [2**63 - 1, 2**63]]
)
def test_i64_array_is_xdsl_s_array(values: list[int]) -> None:
    """`prim.i64_array` packs in-range values itself and gives the attribute
    xDSL's `from_list` gives (which wraps values of 2**63 and above)."""
    expected = DenseArrayBase.from_list(i64, values)
    assert prim.i64_array(values) == expected
    assert prim.array_values(prim.i64_array(values)) == prim.array_values(expected)
