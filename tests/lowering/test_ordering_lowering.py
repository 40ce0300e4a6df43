"""The ops along one axis (argmax, argmin, cumsum, argsort: `ordering_kernels.py`) and
the rounding, sign and erf element rules, compiled to native code and compared with
the evaluator (numpy) on ties, NaN, signed zeros, integers, 0-d and empty shapes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tidu_mlir.dialects import prim
from tidu_mlir.interp import evaluate_func
from tidu_mlir.lowering import parallel
from tidu_mlir.lowering.runtime import CompiledFunction, compile_function

from .oracle import assert_matches, build, check, tensor

REAL = [np.float32, np.float64]
INTEGER = [np.int32, np.int64]
COMPLEX = [np.complex64, np.complex128]

SPECIAL = [
    0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999999999999994, -0.0, 0.0,
    np.nan, np.inf, -np.inf, 1e-300, -3.7, 3.7, 2.0**52 + 1.0, 1e20,
]  # fmt: skip


def _ties_and_nans(shape: tuple[int, ...], dtype: type, seed: int = 0) -> np.ndarray:
    """Few distinct values (many ties), with a few NaNs and signed zeros for floats."""
    rng = np.random.default_rng(seed)
    values = rng.integers(-3, 4, shape).astype(dtype)
    if np.dtype(dtype).kind == "f":
        flat = values.reshape(-1)
        spots = rng.choice(flat.size, size=max(1, flat.size // 7), replace=False)
        flat[spots[: len(spots) // 2 + 1]] = np.nan
        flat[spots[len(spots) // 2 + 1 :]] = -0.0
    return values


# --------------------------------------------------------------------------
# Element rules: floor, ceil, round, sign, erf
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", REAL)
def test_rounding_and_sign_special_values(dtype: type) -> None:
    x = np.array(SPECIAL, dtype=dtype)
    t = tensor(x.shape, dtype)

    def body(x):
        return [prim.FloorOp(x), prim.CeilOp(x), prim.RoundOp(x), prim.SignOp(x)]

    floor, ceil, rounded, sign = check(build([t], body), [x])
    np.testing.assert_array_equal(np.signbit(floor), np.signbit(np.floor(x)))
    np.testing.assert_array_equal(np.signbit(ceil), np.signbit(np.ceil(x)))
    np.testing.assert_array_equal(np.signbit(rounded), np.signbit(np.rint(x)))
    assert not np.signbit(sign[x == 0]).any()  # numpy: sign(-0.0) is +0.0


@pytest.mark.parametrize("dtype", INTEGER)
def test_sign_of_integers(dtype: type) -> None:
    info = np.iinfo(dtype)
    x = np.array([info.min, -7, -1, 0, 1, 9, info.max], dtype=dtype)
    check(build([tensor(x.shape, dtype)], prim.SignOp), [x])


def test_rank0_and_empty_element_rules() -> None:
    def body(x):
        return [prim.FloorOp(x), prim.RoundOp(x), prim.ErfOp(x), prim.SignOp(x)]

    check(build([tensor(())], body), [np.array(-2.5)])
    check(build([tensor((0, 3), np.float32)], body))


def test_erf_f64_is_libm_accurate() -> None:
    """Compiled erf (libm's) against Python's `math.erf` to 1e-12 relative,
    tails, tiny and subnormal arguments included."""
    grid = np.concatenate(
        [np.linspace(-6.5, 6.5, 521), [1e-300, -5e-324, 1e-8, 0.0, -0.0, 27.0, -40.0]]
    )
    fn = compile_function(build([tensor(grid.shape)], prim.ErfOp))
    got = fn(grid)
    expected = np.array([math.erf(v) for v in grid])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0)
    specials = fn(np.array([np.inf, -np.inf, np.nan] + [0.0] * (grid.size - 3)))
    np.testing.assert_array_equal(specials[:3], [1.0, -1.0, np.nan])


def test_erf_f32() -> None:
    x = np.linspace(-4.0, 4.0, 101, dtype=np.float32)
    got = compile_function(build([tensor(x.shape, np.float32)], prim.ErfOp))(x)
    assert got.dtype == np.float32
    expected = np.array([math.erf(v) for v in x.astype(np.float64)])
    np.testing.assert_allclose(got, expected, rtol=2e-7, atol=1e-7)


# --------------------------------------------------------------------------
# argmax, argmin
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", REAL + INTEGER)
def test_argmax_argmin_every_axis(dtype: type) -> None:
    """Ties take the first index, the first NaN wins (numpy)."""
    shape = (4, 5, 6)
    x = _ties_and_nans(shape, dtype)

    def body(x):
        return [op(x, axis) for axis in range(3) for op in (prim.ArgMaxOp, prim.ArgMinOp)]

    check(build([tensor(shape, dtype)], body), [x])


@pytest.mark.parametrize("dtype", REAL)
def test_argmax_argmin_nan_and_infinities(dtype: type) -> None:
    x = np.array(
        [
            [1.0, np.nan, 3.0, np.nan],
            [np.nan, 5.0, 5.0, 1.0],
            [-np.inf, -np.inf, 2.0, 2.0],
            [np.inf, 0.0, -0.0, np.inf],
        ],
        dtype=dtype,
    )
    got = check(
        build([tensor(x.shape, dtype)], lambda x: [prim.ArgMaxOp(x, 1), prim.ArgMinOp(x, 1)]), [x]
    )
    np.testing.assert_array_equal(got[0], [1, 0, 2, 0])
    np.testing.assert_array_equal(got[1], [1, 0, 0, 1])


def test_argmax_rank1_and_empty_lanes() -> None:
    """A vector gives a 0-d index; an empty non-reduced axis gives an empty result."""
    check(build([tensor((7,))], lambda x: prim.ArgMaxOp(x, 0)))
    check(build([tensor((1,), np.int64)], lambda x: prim.ArgMinOp(x, 0)))
    check(build([tensor((0, 4), np.float32)], lambda x: [prim.ArgMaxOp(x, 1), prim.ArgMinOp(x, 1)]))


# --------------------------------------------------------------------------
# cumsum
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", REAL + INTEGER + COMPLEX)
def test_cumsum_every_axis_both_directions(dtype: type) -> None:
    shape = (3, 4, 5)

    def body(x):
        return [prim.CumsumOp(x, axis, reverse) for axis in range(3) for reverse in (False, True)]

    check(build([tensor(shape, dtype)], body))


def test_cumsum_integers_wrap_around() -> None:
    x = np.array([2**31 - 2, 1, 1, 5, -3], dtype=np.int32)
    got = check(
        build(
            [tensor(x.shape, np.int32)], lambda x: [prim.CumsumOp(x, 0), prim.CumsumOp(x, 0, True)]
        ),
        [x],
    )
    assert got[0][2] == -(2**31)


def test_cumsum_is_sequential_like_numpy() -> None:
    """A long f32 lane: the running sums round exactly as numpy's (no reassociation)."""
    x = np.random.default_rng(1).standard_normal((3, 2000)).astype(np.float32)
    t = tensor(x.shape, np.float32)
    fn = compile_function(build([t], lambda x: [prim.CumsumOp(x, 1), prim.CumsumOp(x, 0, True)]))
    forward, backward = fn(x)
    np.testing.assert_array_equal(forward, np.cumsum(x, axis=1))
    np.testing.assert_array_equal(backward, np.flip(np.cumsum(np.flip(x, 0), axis=0), 0))


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (1,), ()], ids=str)
def test_cumsum_empty_and_small(shape: tuple[int, ...]) -> None:
    if not shape:  # 0-d: no axis; a cumsum on a reshaped vector instead
        check(build([tensor(())], lambda x: prim.CumsumOp(prim.ReshapeOp(x, [1]), 0, True)))
        return
    check(build([tensor(shape)], lambda x: [prim.CumsumOp(x, 0), prim.CumsumOp(x, 0, True)]))


def test_cumsum_in_a_chain() -> None:
    """Fused elementwise producers and consumers around the kernel."""

    def body(x):
        running = prim.CumsumOp(prim.ExpOp(x), 1)
        return [prim.FloorOp(prim.MulOp(running, running)), prim.CumsumOp(running, 0, True)]

    check(build([tensor((4, 6))], body))


# --------------------------------------------------------------------------
# argsort
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", REAL + INTEGER)
def test_argsort_every_axis_stable(dtype: type) -> None:
    """Ties keep their order, NaNs last, -0.0 equal to 0.0 (numpy's stable sort)."""
    shape = (5, 6, 7)
    x = _ties_and_nans(shape, dtype, seed=3)
    check(build([tensor(shape, dtype)], lambda x: [prim.ArgsortOp(x, a) for a in range(3)]), [x])


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 33, 1000])
def test_argsort_lane_lengths(n: int) -> None:
    """Every number of merge passes (ceil(log2 n)), odd and even, ragged last runs."""
    x = _ties_and_nans((2, n), np.float64, seed=n)
    check(build([tensor(x.shape)], lambda x: [prim.ArgsortOp(x, 1), prim.ArgsortOp(x, 0)]), [x])


def test_argsort_distinct_values_and_empty() -> None:
    x = np.random.default_rng(5).permutation(257).astype(np.float32)
    got = check(build([tensor(x.shape, np.float32)], lambda x: prim.ArgsortOp(x, 0)), [x])
    np.testing.assert_array_equal(x[got[0]], np.arange(257))
    check(build([tensor((3, 0), np.int32)], lambda x: [prim.ArgsortOp(x, 0), prim.ArgsortOp(x, 1)]))


def test_argsort_nans_and_infinities() -> None:
    x = np.array([np.nan, np.inf, -np.inf, 1.0, np.nan, -0.0, 0.0, np.inf, -1.0])
    fn = compile_function(build([tensor(x.shape)], lambda x: prim.ArgsortOp(x, 0)))
    assert_matches([fn(x)], [np.argsort(x, kind="stable")])
    np.testing.assert_array_equal(fn(x), [2, 8, 5, 6, 3, 1, 7, 0, 4])


# --------------------------------------------------------------------------
# Parallel loops
# --------------------------------------------------------------------------


@pytest.mark.skipif(not parallel.libgomp_available(), reason="no libgomp")
def test_parallel_split_keeps_lanes_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """With every loop eligible, argmax and cumsum lanes are split across threads
    (independent lanes) and argsort's lane loop is not (its scratch buffers are
    shared by the lanes); the results are numpy's either way."""
    monkeypatch.setattr(parallel, "PARALLEL_MIN_WORK", 0)
    x = _ties_and_nans((64, 33), np.float64, seed=11)
    t = tensor(x.shape)
    for body, parallel_split in [
        (lambda x: [prim.ArgMaxOp(x, 1), prim.ArgMinOp(x, 0)], True),
        (lambda x: prim.CumsumOp(x, 1, True), True),
        (lambda x: prim.ArgsortOp(x, 1), False),
    ]:
        function = build([t], body)
        compiled = CompiledFunction(function)
        assert ("GOMP_parallel" in compiled.llvm_ir) is parallel_split
        got = compiled(x)
        assert_matches(list(got) if isinstance(got, tuple) else [got], evaluate_func(function, [x]))
