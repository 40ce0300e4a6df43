"""Integer (i32, i64) and boolean (i1) tensors compiled to native code and compared
exactly with the evaluator (numpy): wrap-around arithmetic, signed order,
`astype` conversions, integer reductions, constants and the structural ops.

Each test builds one function with many results, so that the file compiles few
modules."""

from __future__ import annotations

import numpy as np
import pytest

from tidu_mlir.dialects import prim
from tidu_mlir.lowering.runtime import compile_function

from .oracle import build, check, tensor
from .test_fusion_runtime import loop_count

INTEGERS = [np.int32, np.int64]
ANY = [np.int32, np.int64, np.bool_]
DIRECTIONS = ["eq", "ne", "lt", "le", "gt", "ge"]


def _full_range(dtype: type, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Integers spread over the whole range of `dtype`, with its extremes at the start."""
    info = np.iinfo(dtype)
    data = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    data.flat[:4] = [info.min, info.max, -1, 0]
    return data


@pytest.mark.parametrize("dtype", INTEGERS)
def test_arithmetic_and_reductions(dtype: type) -> None:
    """add/sub/mul/neg wrap around, max/min/compare are signed, select picks integers,
    reduce_sum wraps and reduce_max starts from the smallest integer; also on 0-d
    tensors and tensors with an empty dimension."""
    matrix, scalar, empty = tensor((3, 5), dtype), tensor((), dtype), tensor((0, 3), dtype)

    def body(x, y, negative, s, e):
        elementwise = [
            prim.AddOp(x, y),
            prim.SubOp(x, y),
            prim.MulOp(x, y),
            prim.NegOp(x),
            prim.MaximumOp(x, y),
            prim.MinimumOp(x, y),
            prim.SelectOp(prim.CompareOp("lt", x, y), x, y),
            *(prim.CompareOp(d, x, y) for d in DIRECTIONS),
        ]
        reductions = [
            prim.ReduceSumOp(x, [1]),
            prim.ReduceSumOp(x, [0, 1]),
            prim.ReduceSumOp(y, [0]),
            prim.ReduceMaxOp(x, [0]),
            prim.ReduceMaxOp(negative, [1]),
            prim.ReduceMaxOp(negative, [0, 1]),
        ]
        small = [
            prim.MulOp(prim.AddOp(s, s), s),
            prim.CompareOp("ge", s, prim.NegOp(s)),
            prim.MaximumOp(e, prim.NegOp(e)),
            prim.ReduceSumOp(e, [0]),
            prim.ReduceMaxOp(e, [1]),
        ]
        return [*elementwise, *reductions, *small]

    rng = np.random.default_rng(1)
    x = _full_range(dtype, (3, 5), rng)
    y = _full_range(dtype, (3, 5), rng)
    y[0, 2] = x[0, 2]  # equal entries for eq/le/ge
    negative = -rng.integers(1, 1000, (3, 5), dtype=dtype)
    s = np.asarray(np.iinfo(dtype).max // 3, dtype=dtype)
    e = np.zeros((0, 3), dtype)
    function = build([matrix, matrix, matrix, scalar, empty], body)
    got = check(function, [x, y, negative, s, e])
    assert got[17].max() < 0  # reduce_max of negative rows is not 0


def test_int32_wraps_around() -> None:
    """Sums and products beyond int32 wrap around (two's complement), like numpy."""
    big = np.array([2**31 - 1, 2**30, -(2**31), 46341], np.int32)

    def body(x):
        return [prim.AddOp(x, x), prim.MulOp(x, x), prim.NegOp(x), prim.ReduceSumOp(x, [0])]

    added, squared, negated, total = check(build([tensor((4,), np.int32)], body), [big])
    assert added.tolist() == [-2, -(2**31), 0, 92682]
    assert squared.tolist() == [1, 0, 0, -2147479015]
    assert negated[2] == -(2**31)
    assert total == np.int32(2**30 + 46340)


# Conversions: every source type to every other element type. Floats hold
# fractions of both signs (truncated toward zero), values within int32 range.
_SOURCES = [np.float32, np.float64, np.complex128, np.int32, np.int64, np.bool_]
_TARGETS = [np.float32, np.float64, np.complex64, np.int32, np.int64, np.bool_]
_FLOATS = np.array([-2.7, -0.5, 0.0, -0.0, 0.5, 2.7, 1e9, -1e9])
_SOURCE_VALUES = {
    np.float32: _FLOATS,
    np.float64: _FLOATS,
    np.complex128: _FLOATS + 1j * _FLOATS[::-1],
    np.int32: np.array([-(2**31), -3, -1, 0, 1, 7, 2**24 + 1, 2**31 - 1]),
    np.int64: np.array([-(2**62) - 1, -(2**31) - 5, -1, 0, 1, 2**32 + 3, 2**53 + 1, 2**63 - 1]),
    np.bool_: np.array([True, False, True, True, False, False, True, False]),
}


def test_conversions() -> None:
    """`convert` as numpy's `astype`: float -> int truncates toward zero, int -> int
    sign-extends or wraps, to bool is `!= 0`, complex -> real keeps the real part."""
    n = len(_FLOATS)

    def body(*xs):
        return [
            prim.ConvertOp(x, prim.element_type_of_dtype(target))
            for x, source in zip(xs, _SOURCES, strict=True)
            for target in _TARGETS
            if target is not source
        ]

    args = [np.asarray(_SOURCE_VALUES[s], dtype=s) for s in _SOURCES]
    got = check(build([tensor((n,), s) for s in _SOURCES], body), args)
    float_to_int32 = got[_TARGETS.index(np.int32)]
    assert float_to_int32[:6].tolist() == [-2, 0, 0, 0, 0, 2]


def test_float_to_bool_is_nonzero() -> None:
    """NaN, infinities and -0.0 converted to bool: `x != 0` (NaN is true)."""
    values = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-300])
    function = build(
        [tensor((6,), np.float64)],
        lambda x: prim.ConvertOp(x, prim.element_type_of_dtype(np.bool_)),
    )
    (flags,) = check(function, [values])
    assert flags.tolist() == [True, True, True, False, False, True]


@pytest.mark.parametrize("dtype", ANY)
def test_structural_ops(dtype: type) -> None:
    """Constants (splat and dense), broadcast, reshape, transpose, slice, pad,
    concatenate and select of integer or boolean tensors, with 0-d and empty ones."""
    matrix, row, scalar = tensor((3, 4), dtype), tensor((4,), dtype), tensor((), dtype)
    empty = tensor((0, 4), dtype)
    if dtype is np.bool_:
        dense = np.arange(12).reshape(3, 4) % 3 == 0
        splat_value: object = True
    else:
        big = 2**62 + 1 if dtype is np.int64 else 2**31 - 1  # no float holds it exactly
        dense = (np.arange(12).reshape(3, 4) - 6) * (big // 6)
        splat_value = big

    def body(x, r, s, e, pred):
        splat = prim.ConstantOp.from_value(splat_value, matrix)
        table = prim.ConstantOp.from_value(dense, matrix)
        return [
            splat,
            table,
            prim.SelectOp(pred, splat, table),
            prim.SelectOp(pred, x, prim.BroadcastInDimOp(r, [1], matrix)),
            prim.BroadcastInDimOp(s, [], tensor((2, 3), dtype)),
            prim.ReshapeOp(prim.TransposeOp(x, [1, 0]), (2, 6)),
            prim.SliceOp(x, [0, 1], [3, 4], [2, 2]),
            prim.PadOp(x, [1, 0], [0, 2], [0, 1]),
            prim.ConcatenateOp([x, e, table], 0),
            prim.TransposeOp(e, [1, 0]),
            prim.ReshapeOp(s, (1, 1)),
        ]

    rng = np.random.default_rng(2)
    if dtype is np.bool_:
        x, r, s = rng.random((3, 4)) < 0.5, rng.random(4) < 0.5, np.asarray(True)
    else:
        x, r = _full_range(dtype, (3, 4), rng), _full_range(dtype, (4,), rng)
        s = np.asarray(x[0, 0])  # the smallest integer
    pred = rng.random((3, 4)) < 0.5
    types = [matrix, row, scalar, empty, tensor((3, 4), np.bool_)]
    got = check(build(types, body), [x, r, s, np.zeros((0, 4), dtype), pred])
    assert got[0].flat[0] == splat_value


def _mixed_chain(i, f):
    """Integer arithmetic (wrapping), converted to float, float math, a comparison
    and a conversion back to integers."""
    doubled = prim.AddOp(i, prim.MulOp(i, i))
    as_float = prim.ConvertOp(doubled, prim.element_type_of_dtype(np.float64))
    scaled = prim.MulOp(prim.SinOp(as_float), f)
    positive = prim.CompareOp("gt", scaled, prim.NegOp(f))
    back = prim.ConvertOp(prim.MulOp(scaled, f), prim.element_type_of_dtype(np.int64))
    return [
        scaled,
        prim.SelectOp(positive, prim.ConvertOp(i, prim.element_type_of_dtype(np.int64)), back),
    ]


def test_mixed_int_and_float_chain_is_fused() -> None:
    """The mixed chain is one loop nest, and computes what numpy does on an array
    large enough to vectorize and run in parallel (with integer reductions after)."""
    shape = (64, 2048)
    types = [tensor(shape, np.int32), tensor(shape, np.float64)]
    assert loop_count(build(types, _mixed_chain)) == 2  # one 2-d nest

    def body(i, f):
        scaled, picked = _mixed_chain(i, f)
        return [scaled, picked, prim.ReduceSumOp(picked, [0, 1]), prim.ReduceMaxOp(i, [1])]

    rng = np.random.default_rng(3)
    i = rng.integers(-50_000, 50_000, shape, dtype=np.int32)
    f = rng.uniform(-100.0, 100.0, shape)
    check(build(types, body), [i, f])


def test_while_with_integer_carries() -> None:
    """An int32 counter and an int64 sum of converted squares carried by `prim.while`."""
    counter = tensor((), np.int32)

    def before(n, total, limit):
        return [prim.CompareOp("lt", n, limit)]

    def step(n, total, limit):
        one = prim.ConstantOp.from_value(1, counter)
        square = prim.ConvertOp(prim.MulOp(n, n), prim.element_type_of_dtype(np.int64))
        return [prim.AddOp(n, one), prim.AddOp(total, square)]

    def program(n, total, limit):
        return list(prim.WhileOp.from_regions([n, total], [limit], before, step).carries)

    args = [np.asarray(-3, np.int32), np.asarray(2**40, np.int64), np.asarray(1000, np.int32)]
    n, total = check(build([counter, tensor((), np.int64), counter], program), args)
    assert n == 1000 and total == 2**40 + sum(k * k for k in range(-3, 1000))


def test_rank0_arguments_take_numbers_of_their_kind() -> None:
    """Python ints for integer 0-d tensors, bools for boolean ones; a float is not
    truncated to an integer and an int is no bool."""

    def body(i, flag):
        return prim.SelectOp(flag, i, prim.NegOp(i))

    compiled = compile_function(build([tensor((), np.int32), tensor((), np.bool_)], body))
    assert compiled(5, True) == 5 and compiled(np.int64(5), np.False_) == -5
    with pytest.raises(TypeError, match="got float"):
        compiled(2.5, True)
    with pytest.raises(TypeError, match="got int"):
        compiled(5, 1)
