"""`prim.cond` compiled (its branches outlined, one called from an `scf.if`)
against the evaluator, on both branches, for every dtype, nested in a scan
and in a cond, with results returned as the function's outputs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp, TensorType, i1
from xdsl.ir import Operation, SSAValue

from tidu_mlir.dialects import prim
from tidu_mlir.lowering.lower_to_llvm import lower_prim_to_loops

from .oracle import build, check, random_array, tensor

PRED = TensorType(i1, [])


def two_branches(p: SSAValue, a: SSAValue, b: SSAValue) -> prim.CondOp:
    """true: (sin a · b, a); false: (b, exp a)."""
    return prim.CondOp.from_branches(
        p, [a, b], lambda a, b: [prim.MulOp(prim.SinOp(a), b), a], lambda a, b: [b, prim.ExpOp(a)]
    )


def run_both(function: func.FuncOp, seed: int = 0) -> None:
    """Check `function` (predicate first) against the evaluator with the
    predicate true and false."""
    rng = np.random.default_rng(seed)
    types = function.function_type.inputs.data
    rest = [random_array(t, rng) for t in types[1:]]  # pyright: ignore[reportArgumentType]
    for flag in (True, False):
        check(function, [np.array(flag), *rest])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_both_branches_every_dtype(dtype: type) -> None:
    t = tensor((2, 3), dtype)
    run_both(build([PRED, t, t], lambda p, a, b: list(two_branches(p, a, b).outputs)))


def test_results_feed_other_ops_and_a_value_is_returned_twice() -> None:
    t = tensor((4,))

    def body(p: SSAValue, a: SSAValue, b: SSAValue) -> Sequence[SSAValue | Operation]:
        first, second = two_branches(p, a, b).outputs
        return [prim.AddOp(first, second), first, first]

    run_both(build([PRED, t, t], body))


def test_cond_in_a_scan_and_in_a_cond() -> None:
    t = tensor((3,))

    def body(p: SSAValue, a: SSAValue, xs: SSAValue) -> Sequence[SSAValue | Operation]:
        def step(c: SSAValue, x: SSAValue) -> list[SSAValue | Operation]:
            zero = prim.ConstantOp.from_value(np.zeros(()))
            positive = prim.CompareOp("gt", prim.ReduceSumOp(x, [0]), zero)
            inner = prim.CondOp.from_branches(
                positive, [c, x], lambda c, x: [prim.AddOp(c, x)], lambda c, x: [prim.MulOp(c, x)]
            )
            return [inner.outputs[0], c]

        loop = prim.ScanOp.from_body([a], [xs], [], 4, step)
        outer = prim.CondOp.from_branches(
            p, [loop.carries[0]], lambda v: [prim.TanhOp(v)], lambda v: [prim.NegOp(v)]
        )
        return [outer.outputs[0], loop.ys[0]]

    run_both(build([PRED, t, tensor((4, 3))], body), seed=3)


def test_one_if_and_two_outlined_branches() -> None:
    t = tensor((5,))
    function = build([PRED, t, t], lambda p, a, b: list(two_branches(p, a, b).outputs))
    module = ModuleOp([function])
    lower_prim_to_loops(module)
    names = sorted(f.sym_name.data for f in module.ops if isinstance(f, func.FuncOp))
    assert names == ["f", "f__cond0", "f__cond1"]
    ifs = [op for op in function.walk() if isinstance(op, scf.IfOp)]
    assert len(ifs) == 1
    calls = [op for op in ifs[0].walk() if isinstance(op, func.CallOp)]
    assert sorted(c.callee.string_value() for c in calls) == ["f__cond0", "f__cond1"]
