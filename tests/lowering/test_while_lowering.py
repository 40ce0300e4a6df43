"""`prim.while` compiled (an `scf.while` calling its outlined cond and body)
against the evaluator: trip counts 0, 1 and many, several carries of mixed
dtypes and shapes, consts, and a while loop inside a scan body."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from xdsl.ir import Operation, SSAValue

from tidu_mlir.dialects import prim

from .oracle import build, check, tensor


def halving(c: SSAValue, limit: SSAValue) -> prim.WhileOp:
    """Halve the carry while its sum exceeds `limit`."""
    return prim.WhileOp.from_regions(
        [c],
        [limit],
        lambda c, k: [prim.CompareOp("gt", prim.ReduceSumOp(c, [0]), k)],
        lambda c, k: [prim.MulOp(c, prim.ConstantOp.from_value(np.full(3, 0.5)))],
    )


@pytest.mark.parametrize("limit", [100.0, 5.0, 0.01], ids=["zero", "few", "many"])
def test_trip_counts(limit: float) -> None:
    function = build([tensor((3,)), tensor(())], lambda c, k: list(halving(c, k).carries))
    check(function, [np.array([1.0, 2.0, 3.0]), np.array(limit)])


def test_mixed_carries_and_consts() -> None:
    def body(c: SSAValue, z: SSAValue, n: SSAValue, w: SSAValue) -> Sequence[Operation]:
        one = prim.ConstantOp.from_value(np.array(1.0))
        return [prim.TanhOp(prim.AddOp(c, w)), prim.MulOp(z, z), prim.AddOp(n, one)]

    def before(c: SSAValue, z: SSAValue, n: SSAValue, w: SSAValue) -> Sequence[Operation]:
        return [prim.CompareOp("lt", n, prim.ConstantOp.from_value(np.array(4.0)))]

    def program(c: SSAValue, z: SSAValue, n: SSAValue, w: SSAValue) -> list[SSAValue]:
        return list(prim.WhileOp.from_regions([c, z, n], [w], before, body).carries)

    function = build(
        [tensor((2, 2)), tensor((3,), np.complex128), tensor(()), tensor((2, 2))], program
    )
    check(function, low=-0.9, high=0.9)


def test_while_inside_a_scan() -> None:
    def program(xs: SSAValue, limit: SSAValue) -> list[SSAValue]:
        def step(c: SSAValue, x: SSAValue, k: SSAValue) -> list[SSAValue]:
            shrunk = halving(prim.AddOp(c, x).result, k)
            return [shrunk.carries[0], shrunk.carries[0]]

        start = prim.ConstantOp.from_value(np.ones(3))
        loop = prim.ScanOp.from_body([start.result], [xs], [limit], 4, step)
        return [*loop.carries, *loop.ys]

    check(
        build([tensor((4, 3)), tensor(())], program), [np.arange(12.0).reshape(4, 3), np.array(2.0)]
    )
