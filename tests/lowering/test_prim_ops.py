"""The structural prim ops (`STRUCTURAL_LOWERINGS`) for every element type, compiled to
native code and compared with the evaluator; the elementwise ones are tested in
`test_element_rules.py`."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.ir import Operation

from tidu_mlir.dialects import prim
from tidu_mlir.lowering.element_rules import ELEMENT_RULES
from tidu_mlir.lowering.prim_to_loops import STRUCTURAL_LOWERINGS

from .oracle import build, check, tensor

REAL = [np.float32, np.float64]
COMPLEX = [np.complex64, np.complex128]
ALL = REAL + COMPLEX


def test_every_prim_op_is_lowered() -> None:
    """Each op of the prim dialect has an element rule or a structural lowering."""
    ops = {
        value
        for value in vars(prim).values()
        if isinstance(value, type)
        and issubclass(value, Operation)
        and getattr(value, "name", "").startswith("prim.")
    }
    assert ops == set(ELEMENT_RULES) | STRUCTURAL_LOWERINGS
    assert not STRUCTURAL_LOWERINGS & set(ELEMENT_RULES)


@pytest.mark.parametrize("dtype", ALL)
def test_constants(dtype: type) -> None:
    t = tensor((2, 3), dtype)
    dense = np.arange(6, dtype=dtype).reshape(2, 3) * (1 + 1j if dtype in COMPLEX else 1)

    def body(x):
        splat = prim.ConstantOp.from_value(np.full((2, 3), 1.5, dtype=dtype))
        table = prim.ConstantOp.from_value(dense.astype(dtype))
        return [prim.AddOp(prim.MulOp(x, splat), table), table, splat]

    check(build([t], body))


@pytest.mark.parametrize("dtype", ALL)
def test_broadcast_in_dim(dtype: type) -> None:
    def body(x):
        return prim.BroadcastInDimOp(x, [0, 2], tensor((3, 2, 4), dtype))

    check(build([tensor((3, 1), dtype)], body))


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("axes", [(0,), (1,), (2,), (0, 2), (1, 2), (0, 1, 2)])
def test_reduce_sum(axes: tuple[int, ...], dtype: type) -> None:
    check(build([tensor((3, 4, 5), dtype)], lambda x: prim.ReduceSumOp(x, axes)))


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("axes", [(0,), (1,), (0, 1)])
def test_reduce_max(axes: tuple[int, ...], dtype: type) -> None:
    check(build([tensor((4, 6), dtype)], lambda x: prim.ReduceMaxOp(x, axes)))


@pytest.mark.parametrize("dtype", ALL)
def test_reshape(dtype: type) -> None:
    def body(x):
        r = prim.ReshapeOp(x, (3, 2, 2))
        return [r, prim.ExpOp(prim.ReshapeOp(r, (12,)))]

    check(build([tensor((4, 3), dtype)], body))


@pytest.mark.parametrize("dtype", ALL)
def test_transpose(dtype: type) -> None:
    check(build([tensor((2, 3, 4), dtype)], lambda x: prim.TransposeOp(x, [2, 0, 1])))


@pytest.mark.parametrize("dtype", ALL)
def test_slice_with_stride(dtype: type) -> None:
    check(build([tensor((9, 5), dtype)], lambda x: prim.SliceOp(x, [1, 0], [8, 5], [3, 2])))


@pytest.mark.parametrize("dtype", ALL)
def test_pad_with_interior(dtype: type) -> None:
    check(build([tensor((3, 2), dtype)], lambda x: prim.PadOp(x, [1, 0], [2, 3], [2, 1])))


@pytest.mark.parametrize("dtype", ALL)
def test_concatenate(dtype: type) -> None:
    a, b, c = tensor((2, 3), dtype), tensor((2, 1), dtype), tensor((2, 4), dtype)
    check(build([a, b, c], lambda x, y, z: prim.ConcatenateOp([x, y, z], 1)))


DOTS = [
    # (lhs shape, rhs shape, lhs_batch, rhs_batch, lhs_contract, rhs_contract)
    ((3, 4), (4, 5), (), (), (1,), (0,)),
    ((4, 3), (4, 5), (), (), (0,), (0,)),
    ((3, 4), (5, 4), (), (), (1,), (1,)),
    ((6,), (6,), (), (), (0,), (0,)),
    ((3, 4), (4,), (), (), (1,), (0,)),
    ((2, 3, 4), (2, 4, 5), (0,), (0,), (2,), (1,)),
    ((3, 2, 4, 5), (4, 5, 2, 6), (1,), (2,), (2, 3), (0, 1)),
    ((3,), (4,), (), (), (), ()),
]


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("dims", DOTS, ids=str)
def test_dot_general(dims: tuple, dtype: type) -> None:
    ls, rs, lb, rb, lc, rc = dims

    def body(x, y):
        return prim.DotGeneralOp(x, y, lhs_batch=lb, rhs_batch=rb, lhs_contract=lc, rhs_contract=rc)

    check(build([tensor(ls, dtype), tensor(rs, dtype)], body))


@pytest.mark.parametrize("dtype", ALL)
def test_rank0(dtype: type) -> None:
    t = tensor((), dtype)
    check(build([t, t], lambda x, y: prim.MulOp(prim.ExpOp(x), y)))
