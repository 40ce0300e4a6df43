"""Parallel loops (`parallelize-loops`): same bits as the serial loops, threshold, threads."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp

from tidu_mlir.dialects import prim
from tidu_mlir.lowering import blas, parallel
from tidu_mlir.lowering.bufferize import PrimBufferizePass
from tidu_mlir.lowering.prim_to_loops import ConvertPrimToLoopsPass
from tidu_mlir.lowering.runtime import CompiledFunction

from .oracle import Body, build, random_array, tensor

pytestmark = pytest.mark.skipif(not parallel.libgomp_available(), reason="no libgomp")

SERIAL = 1 << 62


def compiled(function, min_work: int, monkeypatch: pytest.MonkeyPatch) -> CompiledFunction:
    """`function` compiled (uncached) with the given parallel work threshold."""
    monkeypatch.setattr(parallel, "PARALLEL_MIN_WORK", min_work)
    return CompiledFunction(function)


def is_parallel(function: CompiledFunction) -> bool:
    return "GOMP_parallel" in function.llvm_ir


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.tobytes() == b.tobytes()


def run_both(body: Body, types, monkeypatch, seed: int = 0):
    """Results of the parallel and of the serial compilation on the same random inputs."""
    function = build(types, body)
    rng = np.random.default_rng(seed)
    args = [random_array(t, rng, -3.0, 3.0) for t in types]
    fast, slow = compiled(function, 0, monkeypatch), compiled(function, SERIAL, monkeypatch)
    assert is_parallel(fast) and not is_parallel(slow)
    return fast(*args), slow(*args), args


def chain(x, y):
    t = prim.TanhOp(prim.MulOp(x, y))
    return prim.AddOp(prim.MulOp(t, prim.ExpOp(prim.NegOp(x))), prim.SinOp(y))


@pytest.mark.parametrize("n", [2, 5, 1023, 2 * parallel.GRAIN + 3, 100_003, 1_000_001])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_elementwise_parallel_is_bit_identical(n: int, dtype, monkeypatch) -> None:
    """Bit-identical at the sizes that are parallelized by default (thousands of
    elements and up); tiny loops with a known trip count are vectorized
    differently by LLVM (fully unrolled), so there only the values are checked."""
    t = tensor((n,), dtype)
    fast, slow, (x, y) = run_both(chain, [t, t], monkeypatch)
    assert n < parallel.GRAIN or same_bits(fast, slow)
    expected = np.tanh(x * y) * np.exp(-x) + np.sin(y)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(fast, expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_parallel_is_bit_identical(dtype, monkeypatch) -> None:
    t = tensor((4099,), dtype)
    fast, slow, (x, y) = run_both(lambda x, y: prim.ExpOp(prim.MulOp(x, y)), [t, t], monkeypatch)
    assert same_bits(fast, slow)
    np.testing.assert_allclose(fast, np.exp(x * y), rtol=1e-5 if dtype == np.complex64 else 1e-12)


def test_two_dim_nest_with_broadcast_and_two_results(monkeypatch) -> None:
    t, row = tensor((37, 1001)), tensor((1001,))

    def body(x, b):
        e = prim.ExpOp(prim.AddOp(x, prim.BroadcastInDimOp(b, [1], t)))
        return [e, prim.TanhOp(e)]

    (f1, f2), (s1, s2), _ = run_both(body, [t, row], monkeypatch)
    assert same_bits(f1, s1) and same_bits(f2, s2)


@pytest.mark.parametrize("axes", [[1], [0]])
def test_row_reductions_keep_their_order(axes: list[int], monkeypatch) -> None:
    """Rows reduced in parallel keep the serial summation order; a loop accumulating
    across its iterations (axis 0) is left serial."""
    t = tensor((67, 1031))
    function = build([t], lambda x: prim.ReduceSumOp(prim.ExpOp(x), axes))
    fast, serial = compiled(function, 0, monkeypatch), compiled(function, SERIAL, monkeypatch)
    x = random_array(t, np.random.default_rng(1))
    assert same_bits(fast(x), serial(x))
    np.testing.assert_allclose(fast(x), np.exp(x).sum(axis=tuple(axes)), rtol=1e-12)


@pytest.mark.parametrize(
    ("shape", "axes", "dtype"),
    [
        ((1_000_001,), [0], np.float64),
        ((300, 1001), [0, 1], np.float64),
        ((99_999,), [0], np.float32),
    ],
)
def test_full_sum_in_parallel_reassociates_within_tolerance(
    shape, axes, dtype, monkeypatch
) -> None:
    """A sum to a scalar adds per-thread partial sums (a reassociation like the
    vectorizer's own): equal to numpy's pairwise sum within a tolerance."""
    t = tensor(shape, dtype)
    function = compiled(build([t], lambda x: prim.ReduceSumOp(x, axes)), 0, monkeypatch)
    assert is_parallel(function)
    x = random_array(t, np.random.default_rng(2))
    expected = np.sum(x.astype(np.float64))
    scale = float(np.sum(np.abs(x.astype(np.float64))))
    eps = float(np.finfo(dtype).eps)
    assert abs(float(function(x)) - expected) <= 8 * eps * scale


def test_a_nest_folding_a_sum_and_storing_runs_in_parallel(monkeypatch) -> None:
    """`e = exp(x) * y` returned and `sum(e)` folded by the same nest: the nest
    is split across threads (the stores are disjoint, the sum is reassociated),
    `e` is bit-identical to the serial one and the sum within a tolerance."""
    t = tensor((300_001,))

    def body(x, y):
        e = prim.MulOp(prim.ExpOp(x), y)
        return e, prim.ReduceSumOp(e, [0])

    (e_fast, total_fast), (e_slow, total_slow), _ = run_both(body, [t, t], monkeypatch)
    assert same_bits(e_fast, e_slow)
    scale = float(np.sum(np.abs(e_slow)))
    assert abs(float(total_fast) - float(total_slow)) <= 8 * np.finfo(np.float64).eps * scale
    assert abs(float(total_slow) - float(np.sum(e_slow))) <= 8 * np.finfo(np.float64).eps * scale


def test_full_max_in_parallel_with_nan_and_all_minus_inf(monkeypatch) -> None:
    """max is exact whatever the split; NaN propagates, all -inf gives -inf."""
    t = tensor((70_001,))
    function = compiled(build([t], lambda x: prim.ReduceMaxOp(x, [0])), 0, monkeypatch)
    assert is_parallel(function)
    x = random_array(t, np.random.default_rng(4))
    assert float(function(x)) == float(np.max(x))
    x[50_000] = np.nan
    assert np.isnan(function(x))
    assert float(function(np.full(70_001, -np.inf))) == -np.inf


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_sum_and_max_in_parallel_are_exact(dtype, monkeypatch) -> None:
    """Integer sums (wrapping, so any split gives the same bits) and signed
    maxima (identity: the type's minimum) split across threads."""
    t = tensor((100_003,), dtype)
    x = np.random.default_rng(5).integers(np.iinfo(dtype).min, np.iinfo(dtype).max, 100_003,
                                          dtype=dtype)  # fmt: skip
    total = compiled(build([t], lambda v: prim.ReduceSumOp(v, [0])), 0, monkeypatch)
    largest = compiled(build([t], lambda v: prim.ReduceMaxOp(v, [0])), 0, monkeypatch)
    assert is_parallel(total) and is_parallel(largest)
    assert total(x) == np.sum(x, dtype=dtype) and largest(x) == np.max(x)
    assert largest(np.full(100_003, np.iinfo(dtype).min, dtype)) == np.iinfo(dtype).min


def test_complex_sum_stays_serial(monkeypatch) -> None:
    """Two loop-carried values (re, im) are not split: the result is bit-identical."""
    t = tensor((20_001,), np.complex128)
    function = build([t], lambda x: prim.ReduceSumOp(x, [0]))
    fast, serial = compiled(function, 0, monkeypatch), compiled(function, SERIAL, monkeypatch)
    assert not is_parallel(fast)
    x = random_array(t, np.random.default_rng(5))
    assert same_bits(fast(x), serial(x))


def test_accumulating_loop_is_not_parallel() -> None:
    t = tensor((64, 4096))
    module = ModuleOp([build([t], lambda x: prim.ReduceSumOp(x, [0])).clone()])
    PrimBufferizePass().apply(None, module)  # pyright: ignore[reportArgumentType]
    ConvertPrimToLoopsPass().apply(None, module)  # pyright: ignore[reportArgumentType]
    (function,) = [op for op in module.ops if not isinstance(op, scf.ForOp)]
    loops = list(parallel.parallel_loops(function, 0))  # pyright: ignore[reportArgumentType]
    # the initialization of the result is parallel; the accumulation over rows is not
    assert len(loops) == 1
    assert not any(isinstance(op, scf.ForOp) for op in loops[0][0].body.block.ops)


def test_threshold_just_below_and_above(monkeypatch) -> None:
    """A loop runs in parallel exactly when iterations x body work reach the threshold."""
    small = build([tensor((8,))] * 2, lambda x, y: prim.MulOp(x, y))
    module = ModuleOp([small.clone()])
    PrimBufferizePass().apply(None, module)  # pyright: ignore[reportArgumentType]
    ConvertPrimToLoopsPass().apply(None, module)  # pyright: ignore[reportArgumentType]
    loop = next(op for op in module.walk() if isinstance(op, scf.ForOp))
    work = parallel.block_work(loop.body.block)
    threshold = parallel.PARALLEL_MIN_WORK
    above = -(-threshold // work)
    for n, expect in [(above - 1, False), (above, True)]:
        t = tensor((n,))
        function = compiled(build([t, t], lambda x, y: prim.MulOp(x, y)), threshold, monkeypatch)
        assert is_parallel(function) is expect
        x, y = np.arange(n, dtype=np.float64), np.full(n, 0.5)
        assert same_bits(function(x, y), x * y)


def test_concurrent_calls_of_parallel_functions(monkeypatch) -> None:
    t = tensor((50_001,))
    function = compiled(build([t, t], chain), 0, monkeypatch)
    other = compiled(build([t], lambda x: prim.ReduceSumOp(prim.ExpOp(x), [0])), 0, monkeypatch)
    rng = np.random.default_rng(3)
    inputs = [(random_array(t, rng), random_array(t, rng)) for _ in range(4)]
    expected = [(function(x, y), other(x)) for x, y in inputs]
    failures: list[str] = []

    def worker(k: int) -> None:
        x, y = inputs[k]
        for _ in range(25):
            if not (
                same_bits(function(x, y), expected[k][0]) and same_bits(other(x), expected[k][1])
            ):
                failures.append(f"thread {k}")
                return

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures


def test_outlined_functions_are_private_and_not_entry_points(monkeypatch) -> None:
    t = tensor((4096,))
    function = compiled(build([t, t], chain), 0, monkeypatch)
    assert function.module.function_names == ["f"]


def test_rank0_input_constant_table_and_splat(monkeypatch) -> None:
    """Captured rank-0 buffers, a cloned `memref.global` table and a splat constant."""
    n = 3000
    t, scalar = tensor((n,)), tensor(())
    table = np.linspace(-1.0, 1.0, n)

    def body(x, s):
        c = prim.ConstantOp.from_value(table, t)
        two = prim.ConstantOp.from_value(2.0, t)
        return prim.MulOp(prim.AddOp(prim.MulOp(x, c), two), prim.BroadcastInDimOp(s, [], t))

    fast, slow, (x, s) = run_both(body, [t, scalar], monkeypatch)
    assert same_bits(fast, slow)
    np.testing.assert_allclose(fast, (x * table + 2.0) * s, rtol=1e-14, atol=1e-14)  # FMA


@pytest.mark.skipif(not blas.blas_symbols(), reason="no OpenBLAS in numpy.libs")
@pytest.mark.parametrize(("n", "parallel_next_to_blas"), [(5_000, False), (200_000, True)])
def test_next_to_openblas_only_large_loops_run_in_parallel(
    n: int, parallel_next_to_blas: bool, monkeypatch
) -> None:
    """OpenBLAS runs its calls on its own threads: in a module with a matrix
    product, a loop gets a libgomp team only from `NEXT_TO_OPENBLAS_MIN_WORK`
    (the two pools take turns on the same cores); the same elementwise work
    without the product gets one from the (here zero) general threshold."""
    big = tensor((n,))

    def with_product(x, a, b):
        return [chain(x, x), prim.DotGeneralOp(a, b, lhs_contract=[1], rhs_contract=[0])]

    square = tensor((64, 64))
    mixed = compiled(build([big, square, square], with_product), 0, monkeypatch)
    alone = compiled(build([big], lambda x: chain(x, x)), 0, monkeypatch)
    assert "scipy_cblas_dgemm64_" in mixed.llvm_ir
    assert is_parallel(mixed) == parallel_next_to_blas and is_parallel(alone)
    rng = np.random.default_rng(1)
    x, a, b = rng.standard_normal(n), rng.standard_normal((64, 64)), rng.standard_normal((64, 64))
    values, product = mixed(x, a, b)
    assert same_bits(values, alone(x))
    np.testing.assert_allclose(product, a @ b, rtol=1e-12)
