"""The batching rule (`batch_rule`) of every `prim` op, checked numerically.

For each op a sample with small shapes; for every non-empty set of batched
operands (batch size 3), the rule's ops are evaluated on random per-example
inputs and compared with a loop of the original op over the examples. A new
op without a sample in `CASES` fails `test_batch_rule_matches_loop`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pytest
from xdsl.dialects.builtin import DYNAMIC_INDEX, ComplexType, TensorType, f32, f64, i1, i32, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from tidu_mlir.ad import batch_region
from tidu_mlir.dialects import prim
from tidu_mlir.dialects.prim import PrimOp
from tidu_mlir.dialects.prim.control.bodies import region_from
from tidu_mlir.interfaces import batched_type

SIZE = 3
OpT = TypeVar("OpT", bound=Operation)

# kind -> (element type, sampler of an array of that kind)
Sampler = Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]
KINDS: dict[str, tuple[Attribute, Sampler]] = {
    "f64": (f64, lambda rng, s: rng.standard_normal(s)),
    "f32": (f32, lambda rng, s: rng.standard_normal(s).astype(np.float32)),
    "pos": (f64, lambda rng, s: rng.uniform(0.5, 2.0, s)),
    "c64": (
        ComplexType(f32),
        lambda rng, s: (rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(np.complex64),
    ),
    "c128": (
        ComplexType(f64),
        lambda rng, s: rng.standard_normal(s) + 1j * rng.standard_normal(s),
    ),
    "bool": (i1, lambda rng, s: rng.random(s) < 0.5),
    "true": (i1, lambda rng, s: np.ones(s, np.bool_)),  # a passing prim.check
    # indices and starts: negative, out of range and repeated ones
    "i32": (i32, lambda rng, s: rng.integers(-6, 7, s, dtype=np.int32)),
    "i64": (i64, lambda rng, s: rng.integers(-6, 7, s, dtype=np.int64)),
    "zero_i64": (i64, lambda rng, s: np.zeros(s, np.int64)),  # a loop counter's start
}


@dataclass(frozen=True)
class Sample:
    """An op built by `build` from operands of the given (kind, shape)s."""

    build: Callable[..., Operation]
    operands: Sequence[tuple[str, tuple[int, ...]]]


def _same(kind: str, shape: tuple[int, ...], count: int) -> list[tuple[str, tuple[int, ...]]]:
    return [(kind, shape)] * count


S23 = (2, 3)


def _scan_with_consts(c: SSAValue, xs: SSAValue, k: SSAValue) -> prim.ScanOp:
    def body(c: SSAValue, x: SSAValue, k: SSAValue) -> list[Operation]:
        new = prim.AddOp(prim.MulOp(c, x), prim.SinOp(prim.MulOp(k, c)))
        return [new, prim.AddOp(new, k)]

    return prim.ScanOp.from_body([c], [xs], [k], 4, body)


def _reverse_scan(c: SSAValue, xs: SSAValue) -> prim.ScanOp:
    return prim.ScanOp.from_body(
        [c], [xs], [], 4, lambda c, x: [prim.MulOp(c, x), prim.ExpOp(c)], reverse=True
    )


def _cond(p: SSAValue, a: SSAValue, b: SSAValue) -> prim.CondOp:
    return prim.CondOp.from_branches(
        p, [a, b], lambda a, b: [prim.MulOp(prim.SinOp(a), b), a], lambda a, b: [b, prim.ExpOp(a)]
    )


def _while(c: SSAValue, k: SSAValue) -> prim.WhileOp:
    """Halve c (2x3) while its sum exceeds the sum of k (a const, positive: the
    loop ends)."""

    def before(c: SSAValue, k: SSAValue) -> list[Operation]:
        return [prim.CompareOp("gt", prim.ReduceSumOp(c, [0, 1]), prim.ReduceSumOp(k, [0, 1]))]

    def body(c: SSAValue, k: SSAValue) -> list[Operation]:
        return [prim.MulOp(c, prim.ConstantOp.from_value(np.full((2, 3), 0.5)))]

    return prim.WhileOp.from_regions([c], [k], before, body)


def _record_while(c: SSAValue, n: SSAValue, k: SSAValue) -> prim.RecordWhileOp:
    """Scale c by k twice (n counts from 0, the same trip count for every
    example), recording sin(c) and n at each iteration."""

    def before(c: SSAValue, n: SSAValue, k: SSAValue) -> list[Operation]:
        two = prim.ConstantOp.from_value(np.asarray(2), TensorType(i64, []))
        return [prim.CompareOp("lt", n, two)]

    def body(c: SSAValue, n: SSAValue, k: SSAValue) -> list[Operation | SSAValue]:
        one = prim.ConstantOp.from_value(np.asarray(1), TensorType(i64, []))
        return [prim.MulOp(c, k), prim.AddOp(n, one), prim.SinOp(c), n]

    types = [c.type, n.type, k.type]
    return prim.RecordWhileOp([c, n], [k], region_from(types, before), region_from(types, body))


CASES: dict[type[PrimOp], list[Sample]] = {
    prim.AddOp: [Sample(prim.AddOp, _same("c128", S23, 2))],
    prim.ScanOp: [
        Sample(_scan_with_consts, [("f64", (3,)), ("f64", (4, 3)), ("f64", (3,))]),
        Sample(_reverse_scan, [("c128", (2,)), ("c128", (4, 2))]),
    ],
    prim.CondOp: [Sample(_cond, [("bool", ()), ("f64", S23), ("f64", S23)])],
    prim.WhileOp: [Sample(_while, [("pos", S23), ("pos", S23)])],
    prim.RecordWhileOp: [Sample(_record_while, [("pos", S23), ("zero_i64", ()), ("pos", S23)])],
    prim.SubOp: [Sample(prim.SubOp, _same("f32", S23, 2))],
    prim.MulOp: [Sample(prim.MulOp, _same("c64", S23, 2))],
    prim.NegOp: [Sample(prim.NegOp, _same("c128", S23, 1))],
    prim.ConjOp: [Sample(prim.ConjOp, _same("c64", S23, 1))],
    prim.RealOp: [Sample(prim.RealOp, _same("c64", S23, 1))],
    prim.ImagOp: [Sample(prim.ImagOp, _same("c128", S23, 1))],
    prim.ComplexOp: [Sample(prim.ComplexOp, _same("f32", S23, 2))],
    prim.ConvertOp: [
        Sample(lambda x: prim.ConvertOp(x, ComplexType(f32)), _same("f64", S23, 1)),
        Sample(lambda x: prim.ConvertOp(x, f64), _same("bool", S23, 1)),
    ],
    prim.SelectOp: [
        Sample(prim.SelectOp, [("bool", S23), *_same("c128", S23, 2)]),
        Sample(prim.SelectOp, [("bool", S23), *_same("f32", S23, 2)]),
    ],
    prim.ConstantOp: [
        Sample(lambda: prim.ConstantOp.from_value(np.arange(6.0).reshape(S23)), []),
    ],
    prim.BroadcastInDimOp: [
        Sample(
            lambda x: prim.BroadcastInDimOp(x, [0, 2], TensorType(f64, [3, 2, 4])),
            [("f64", (3, 1))],
        ),
        Sample(
            lambda x: prim.BroadcastInDimOp(x, [1], TensorType(i1, [4, 3])),
            [("bool", (3,))],
        ),
    ],
    prim.ReduceSumOp: [Sample(lambda x: prim.ReduceSumOp(x, [0, 2]), [("c128", (2, 3, 4))])],
    prim.ReshapeOp: [Sample(lambda x: prim.ReshapeOp(x, [3, 4]), [("f64", (2, 3, 2))])],
    prim.TransposeOp: [Sample(lambda x: prim.TransposeOp(x, [2, 0, 1]), [("c64", (2, 3, 4))])],
    prim.Atan2Op: [Sample(prim.Atan2Op, _same("f64", S23, 2))],
    prim.DivOp: [Sample(prim.DivOp, _same("c128", S23, 2))],
    prim.MaximumOp: [Sample(prim.MaximumOp, _same("f64", S23, 2))],
    prim.MinimumOp: [Sample(prim.MinimumOp, _same("f32", S23, 2))],
    prim.ExpOp: [Sample(prim.ExpOp, _same("f32", S23, 1))],
    prim.LogOp: [Sample(prim.LogOp, _same("pos", S23, 1))],
    prim.SinOp: [Sample(prim.SinOp, _same("c128", S23, 1))],
    prim.CosOp: [Sample(prim.CosOp, _same("f64", S23, 1))],
    prim.TanhOp: [Sample(prim.TanhOp, _same("f32", S23, 1))],
    prim.SqrtOp: [Sample(prim.SqrtOp, _same("pos", S23, 1))],
    prim.PowOp: [Sample(lambda x: prim.PowOp(x, 2.5), _same("pos", S23, 1))],
    prim.AbsOp: [
        Sample(prim.AbsOp, _same("c128", S23, 1)),
        Sample(prim.AbsOp, _same("f32", S23, 1)),
    ],
    prim.CompareOp: [
        Sample(lambda a, b: prim.CompareOp("lt", a, b), _same("f64", S23, 2)),
        Sample(lambda a, b: prim.CompareOp("ge", a, b), _same("f32", S23, 2)),
    ],
    prim.SliceOp: [
        Sample(lambda x: prim.SliceOp(x, [1, 0], [4, 5], [2, 2]), [("f32", (4, 5))]),
    ],
    prim.PadOp: [
        Sample(lambda x: prim.PadOp(x, [1, 0], [0, 2], [1, 1]), [("c128", S23)]),
    ],
    prim.ConcatenateOp: [
        Sample(
            lambda a, b, c: prim.ConcatenateOp([a, b, c], 1),
            [("f64", S23), ("f64", (2, 1)), ("f64", (2, 2))],
        ),
    ],
    prim.ReduceMaxOp: [Sample(lambda x: prim.ReduceMaxOp(x, [1]), [("f32", (2, 3, 4))])],
    prim.FloorOp: [Sample(prim.FloorOp, _same("f64", S23, 1))],
    prim.CeilOp: [Sample(prim.CeilOp, _same("f32", S23, 1))],
    prim.RoundOp: [Sample(prim.RoundOp, _same("f64", S23, 1))],
    prim.SignOp: [
        Sample(prim.SignOp, _same("f32", S23, 1)),
        Sample(prim.SignOp, _same("i32", S23, 1)),
    ],
    prim.ErfOp: [Sample(prim.ErfOp, _same("f64", S23, 1))],
    prim.ArgMaxOp: [
        Sample(lambda x: prim.ArgMaxOp(x, 1), [("f64", (2, 3, 4))]),
        Sample(lambda x: prim.ArgMaxOp(x, 0), [("i64", (5,))]),
    ],
    prim.ArgMinOp: [Sample(lambda x: prim.ArgMinOp(x, 0), [("i32", (4, 3))])],
    prim.CumsumOp: [
        Sample(lambda x: prim.CumsumOp(x, 0), [("c128", (4, 3))]),
        Sample(lambda x: prim.CumsumOp(x, 1, reverse=True), [("i32", (2, 5))]),
    ],
    prim.ArgsortOp: [
        Sample(lambda x: prim.ArgsortOp(x, 1), [("f32", (2, 5, 3))]),
        Sample(lambda x: prim.ArgsortOp(x, 0), [("i64", (6,))]),
    ],
    prim.CholeskyOp: [
        Sample(prim.CholeskyOp, [("pos", (3, 3))]),
        Sample(prim.CholeskyOp, [("c128", (2, 3, 3))]),  # not positive definite: NaNs
    ],
    prim.TriangularSolveOp: [
        Sample(
            lambda a, b: prim.TriangularSolveOp(a, b, lower=True, unit_diagonal=True),
            [("f64", (3, 3)), ("f64", (3, 2))],
        ),
        Sample(
            lambda a, b: prim.TriangularSolveOp(a, b, transpose_a=True, conjugate_a=True),
            [("c128", (2, 3, 3)), ("c128", (2, 3, 1))],
        ),
    ],
    prim.LuOp: [Sample(prim.LuOp, [("f32", (2, 4, 4))])],
    prim.QrOp: [
        Sample(prim.QrOp, [("f64", (2, 4, 3))]),
        Sample(lambda a: prim.QrOp(a, full_matrices=True), [("c128", (2, 3))]),
    ],
    prim.EighOp: [
        Sample(prim.EighOp, [("f64", (3, 3))]),
        Sample(prim.EighOp, [("c64", (2, 3, 3))]),
    ],
    prim.SvdOp: [
        Sample(prim.SvdOp, [("f64", (4, 3))]),
        Sample(lambda a: prim.SvdOp(a, full_matrices=True), [("c128", (2, 2, 3))]),
    ],
    prim.IotaOp: [Sample(lambda: prim.IotaOp(TensorType(i64, [2, 3]), 1), [])],
    prim.GatherOp: [
        Sample(lambda x, i: prim.GatherOp(x, i, 1), [("c128", (2, 4, 3)), ("i32", (2, 3))]),
        Sample(lambda x, i: prim.GatherOp(x, i, 0), [("f32", (5,)), ("i64", (4,))]),
    ],
    prim.ScatterAddOp: [
        Sample(
            lambda x, i, u: prim.ScatterAddOp(x, i, u, 1),
            [("f64", (2, 4, 3)), ("i64", (5,)), ("f64", (2, 5, 3))],
        ),
    ],
    prim.ScatterOp: [
        Sample(
            lambda x, i, u: prim.ScatterOp(x, i, u, 0),
            [("c64", (4, 3)), ("i32", (2, 2)), ("c64", (2, 2, 3))],
        ),
    ],
    prim.DynamicSliceOp: [
        Sample(
            lambda x, s, t: prim.DynamicSliceOp(x, [s, t], [2, 3]),
            [("f64", (4, 5)), ("i32", ()), ("i64", ())],
        ),
    ],
    prim.DynamicUpdateSliceOp: [
        Sample(
            lambda x, u, s, t: prim.DynamicUpdateSliceOp(x, u, [s, t]),
            [("c128", (4, 5)), ("c128", (2, 3)), ("i64", ()), ("i32", ())],
        ),
    ],
    prim.CheckOp: [
        Sample(lambda ok, x: prim.CheckOp(ok, x, "failed"), [("true", ()), ("c64", S23)])
    ],
    prim.DotGeneralOp: [
        # batch and contracting dims away from the front, free axes on both sides
        Sample(
            lambda a, b: prim.DotGeneralOp(
                a, b, lhs_batch=[1], rhs_batch=[2], lhs_contract=[2], rhs_contract=[0]
            ),
            [("f64", (3, 2, 4)), ("f64", (4, 5, 2))],
        ),
        # a matrix product (no batch dims), complex
        Sample(
            lambda a, b: prim.DotGeneralOp(a, b, lhs_contract=[1], rhs_contract=[0]),
            [("c128", (2, 3)), ("c128", (3, 4))],
        ),
        # an inner product: no free axes, scalar result
        Sample(
            lambda a, b: prim.DotGeneralOp(a, b, lhs_contract=[0], rhs_contract=[0]),
            [("f32", (3,)), ("f32", (3,))],
        ),
    ],
}


class _Context:
    """A `BatchContext` collecting the emitted ops."""

    def __init__(self, size: int):
        self._size = size
        self.ops: list[Operation] = []

    @property
    def size(self) -> int:
        return self._size

    def emit(self, op: OpT) -> OpT:
        self.ops.append(op)
        return op

    def batch_body(self, body: Region, batched: Sequence[bool]) -> tuple[Region, list[bool]]:
        return batch_region(body, batched, self._size)


def _tensor_type(kind: str, shape: Sequence[int]) -> TensorType:
    return TensorType(KINDS[kind][0], list(shape))


def _random(rng: np.random.Generator, kind: str, shape: tuple[int, ...]) -> np.ndarray:
    return np.asarray(KINDS[kind][1](rng, shape))


def _run(ops: Sequence[Operation], env: dict[SSAValue, np.ndarray]) -> None:
    """Verify and evaluate `ops` in order, extending `env`."""
    for op in ops:
        assert isinstance(op, PrimOp), op
        op.verify()
        assert not op.attributes, f"{op.name} carries attributes {op.attributes}"
        with np.errstate(all="ignore"):
            results = op.evaluate(*(env[v] for v in op.operands))
        env.update(zip(op.results, results, strict=True))


def _check(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    assert actual.dtype == expected.dtype, what
    assert actual.shape == expected.shape, what
    if actual.dtype == np.bool_:
        np.testing.assert_array_equal(actual, expected, err_msg=what)
    else:
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6, err_msg=what)


def batch_and_compare(sample: Sample, batched: Sequence[bool], seed: int = 0) -> list[Operation]:
    """Run `sample`'s batching rule with `batched` operands on random inputs;
    check it against a per-example loop; return the emitted ops."""
    rng = np.random.default_rng(seed)
    originals = Block(arg_types=[_tensor_type(k, s) for k, s in sample.operands]).args
    op = sample.build(*originals)
    assert isinstance(op, PrimOp)
    op.verify()

    batched_types = [
        _tensor_type(k, (SIZE, *s) if b else s)
        for (k, s), b in zip(sample.operands, batched, strict=True)
    ]
    inputs = Block(arg_types=batched_types).args
    arrays = [
        _random(rng, k, (SIZE, *s) if b else s)
        for (k, s), b in zip(sample.operands, batched, strict=True)
    ]
    ctx = _Context(SIZE)
    outputs = op.batch_rule(ctx, inputs, batched)
    assert len(outputs) == len(op.results)
    env: dict[SSAValue, np.ndarray] = dict(zip(inputs, arrays, strict=True))
    _run(ctx.ops, env)

    for index, (output, result) in enumerate(zip(outputs, op.results, strict=True)):
        assert isinstance(result.type, TensorType)
        assert output.type == batched_type(result.type, SIZE), f"{op.name} result #{index}"
        per_example = [
            op.evaluate(*(a[n] if b else a for a, b in zip(arrays, batched, strict=True)))[index]
            for n in range(SIZE)
        ]
        axis = 1 if result.type.get_shape()[:1] == (DYNAMIC_INDEX,) else 0  # a tape: behind
        stacked = np.stack(per_example, axis=axis)
        _check(env[output], stacked, f"{op.name} batched={list(batched)}")
    return ctx.ops


def _combinations(count: int) -> list[tuple[bool, ...]]:
    """Every non-empty set of batched operands among `count`."""
    return [c for c in itertools.product([False, True], repeat=count) if any(c)]


@pytest.mark.parametrize("op_class", prim.PRIM_OPS, ids=lambda c: c.name)
def test_batch_rule_matches_loop(op_class: type[PrimOp]) -> None:
    samples = CASES[op_class]
    assert samples, f"{op_class.name}: no sample"
    for sample in samples:
        if not sample.operands:
            continue  # the constant: see test_constant_batch_rule
        for batched in _combinations(len(sample.operands)):
            batch_and_compare(sample, batched)


def test_every_sample_builds_its_op_class() -> None:
    assert set(CASES) == set(prim.PRIM_OPS)
    for op_class, samples in CASES.items():
        for sample in samples:
            values = Block(arg_types=[_tensor_type(k, s) for k, s in sample.operands]).args
            assert type(sample.build(*values)) is op_class


def test_constant_batch_rule() -> None:
    """`batch` never calls it (no operands); it is the constant broadcast."""
    value = np.arange(6.0).reshape(S23)
    op = prim.ConstantOp.from_value(value)
    ctx = _Context(SIZE)
    (output,) = op.batch_rule(ctx, [], [])
    env: dict[SSAValue, np.ndarray] = {}
    _run(ctx.ops, env)
    assert output.type == TensorType(f64, [SIZE, 2, 3])
    np.testing.assert_array_equal(env[output], np.broadcast_to(value, (SIZE, 2, 3)))


# --------------------------------------------------------------------------
# The shapes of a few rules
# --------------------------------------------------------------------------


def _names(ops: Sequence[Operation]) -> list[str]:
    return [op.name for op in ops]


@pytest.mark.parametrize(
    ("batched", "expected"),
    [
        ((True, True), ["prim.dot_general"]),
        ((True, False), ["prim.dot_general", "prim.transpose"]),
        ((False, True), ["prim.dot_general", "prim.transpose"]),
    ],
    ids=["both", "lhs", "rhs"],
)
def test_dot_general_batch_axis(batched: tuple[bool, bool], expected: list[str]) -> None:
    """Both batched: a new batch dimension (result axis 0 already). One side:
    a free dimension, moved to the front by a transpose."""
    ops = batch_and_compare(CASES[prim.DotGeneralOp][0], batched)
    assert _names(ops) == expected
    dot = ops[0]
    assert isinstance(dot, prim.DotGeneralOp)
    lhs_batch, rhs_batch, _, _ = dot.dims()
    shifted = {
        (True, True): ((0, 2), (0, 3)),
        (True, False): ((2,), (2,)),
        (False, True): ((1,), (3,)),
    }
    assert (lhs_batch, rhs_batch) == shifted[batched]


def test_check_batch_rule_fails_if_any_example_fails() -> None:
    """A batched predicate is reduced with an `all`: one failing example fails."""
    ok, x = Block(arg_types=[TensorType(i1, [SIZE]), TensorType(f64, [SIZE, 2])]).args
    original = Block(arg_types=[TensorType(i1, []), TensorType(f64, [2])]).args
    op = prim.CheckOp(original[0], original[1], "one failed")
    ctx = _Context(SIZE)
    (output,) = op.batch_rule(ctx, [ok, x], [True, True])
    values = np.ones((SIZE, 2))
    env: dict[SSAValue, np.ndarray] = {ok: np.array([True, True, True]), x: values}
    _run(ctx.ops, env)
    np.testing.assert_array_equal(env[output], values)
    env = {ok: np.array([True, False, True]), x: values}
    with pytest.raises(RuntimeError, match="one failed"):
        _run(ctx.ops, env)


def test_dot_general_inner_product_with_one_side_batched_needs_no_transpose() -> None:
    """No batch dims and no lhs free axes: the rhs's batch axis lands at axis 0."""
    ops = batch_and_compare(CASES[prim.DotGeneralOp][2], (False, True))
    assert _names(ops) == ["prim.dot_general"]


def test_unbatched_operands_are_broadcast_along_the_batch_axis() -> None:
    """select with a shared (unbatched) i1 predicate: the predicate is broadcast
    with dims 1..r, then one select on the batched shape."""
    ops = batch_and_compare(CASES[prim.SelectOp][0], (False, True, False))
    assert _names(ops) == ["prim.broadcast_in_dim", "prim.broadcast_in_dim", "prim.select"]
    for broadcast in ops[:2]:
        assert isinstance(broadcast, prim.BroadcastInDimOp)
        assert broadcast.prop_values("dims") == (1, 2)


def test_rules_keep_the_op_properties() -> None:
    """compare keeps its direction, convert its element type, pow its exponent."""
    (compare,) = batch_and_compare(CASES[prim.CompareOp][1], (True, True))
    assert isinstance(compare, prim.CompareOp) and compare.direction.data == "ge"
    (convert,) = batch_and_compare(CASES[prim.ConvertOp][0], (True,))
    assert convert.result_types[0] == TensorType(ComplexType(f32), [SIZE, 2, 3])
    (power,) = batch_and_compare(CASES[prim.PowOp][0], (True,))
    assert isinstance(power, prim.PowOp) and power.exponent_value == 2.5


def test_structural_rules_shift_their_axes() -> None:
    (pad,) = batch_and_compare(CASES[prim.PadOp][0], (True,))
    assert isinstance(pad, prim.PadOp)
    assert pad.paddings() == ((0, 1, 0), (0, 0, 2), (0, 1, 1))
    (sliced,) = batch_and_compare(CASES[prim.SliceOp][0], (True,))
    assert isinstance(sliced, prim.SliceOp)
    assert sliced.bounds() == ((0, 1, 0), (SIZE, 4, 5), (1, 2, 2))
    (transposed,) = batch_and_compare(CASES[prim.TransposeOp][0], (True,))
    assert isinstance(transposed, prim.TransposeOp)
    assert transposed.prop_values("permutation") == (0, 3, 1, 2)
    (reduced,) = batch_and_compare(CASES[prim.ReduceSumOp][0], (True,))
    assert isinstance(reduced, prim.ReduceSumOp)
    assert reduced.prop_values("axes") == (1, 3)
    ops = batch_and_compare(CASES[prim.ConcatenateOp][0], (False, True, False))
    assert _names(ops)[-1] == "prim.concatenate"
    concatenated = ops[-1]
    assert isinstance(concatenated, prim.ConcatenateOp)
    assert concatenated.dimension_value == 2
