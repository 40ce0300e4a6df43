"""Helpers: build a `func.func` of prim ops, compile it, compare with the evaluator."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.builder import ImplicitBuilder
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue

from tidu_mlir.dialects import prim
from tidu_mlir.interp import evaluate_func
from tidu_mlir.lowering.runtime import compile_function

TOLERANCES = {
    np.dtype(np.float32): 2e-4,
    np.dtype(np.complex64): 2e-4,
    np.dtype(np.float64): 1e-10,
    np.dtype(np.complex128): 1e-10,
    np.dtype(np.int32): 0,
    np.dtype(np.int64): 0,
    np.dtype(np.bool_): 0,
}

Body = Callable[..., Sequence[SSAValue | Operation] | SSAValue | Operation]


def build(arg_types: Sequence[TensorType], body: Body, name: str = "f") -> func.FuncOp:
    """A function whose body ops are created by `body(*args)` (returning the results)."""
    block = Block(arg_types=arg_types)
    with ImplicitBuilder(block):
        results = body(*block.args)
        if not isinstance(results, Sequence):
            results = [results]
        values = [SSAValue.get(r) for r in results]
        func.ReturnOp(*values)
    function = func.FuncOp(
        name,
        FunctionType.from_lists(arg_types, [v.type for v in values]),
        Region(block),
    )
    function.verify()
    return function


def tensor(shape: Sequence[int], dtype: type | np.dtype = np.float64) -> TensorType:
    return TensorType(prim.element_type_of_dtype(dtype), list(shape))


def random_array(
    t: TensorType, rng: np.random.Generator, low: float = -2.0, high: float = 2.0
) -> np.ndarray:
    dtype = prim.tensor_dtype(t)
    shape = tuple(t.get_shape())
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind == "i":
        return rng.integers(int(low), int(high), shape, dtype=dtype, endpoint=True)
    data = rng.uniform(low, high, shape)
    if dtype.kind == "c":
        data = data + 1j * rng.uniform(low, high, shape)
    return np.asarray(data, dtype=dtype)


def check(
    function: func.FuncOp,
    args: Sequence[np.ndarray] | None = None,
    seed: int = 0,
    low: float = -2.0,
    high: float = 2.0,
) -> list[np.ndarray]:
    """Compile and run `function`, compare every result with the evaluator; return them."""
    rng = np.random.default_rng(seed)
    types = function.function_type.inputs.data
    if args is None:
        args = [random_array(t, rng, low, high) for t in types]  # pyright: ignore[reportArgumentType]
    expected = evaluate_func(function, args)
    got = compile_function(function)(*args)
    got = list(got) if isinstance(got, tuple) else [got]
    assert_matches(got, expected)
    return got


def assert_matches(got: Sequence[np.ndarray], expected: Sequence[np.ndarray]) -> None:
    """Each result has the dtype and shape of its expected array and its values within
    `TOLERANCES` (relative, and absolute scaled by the largest expected magnitude;
    integers and booleans compared exactly, not through floats)."""
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape
        tol = TOLERANCES[e.dtype]
        if tol == 0:
            np.testing.assert_array_equal(g, e)
            continue
        scale = max(1.0, float(np.max(np.abs(e), initial=0.0)))
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol * scale, equal_nan=True)
