"""Tracing: every corpus function traced to a cg.graph and evaluated equals numpy."""

from __future__ import annotations

import numpy as np
import pytest

import tidu_mlir.numpy as tnp
from tidu_mlir.interp import evaluate_fragment
from tidu_mlir.tracing import ArraySpec, TracingError, trace_function

from .corpus import CASES, Case


def _trace(fn, args):
    traced = trace_function(fn, [ArraySpec.of(a, f"arg{i}") for i, a in enumerate(args)])
    traced.module.verify()
    return traced


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_traced_equals_numpy(case: Case) -> None:
    args = case.make_args(np.random.default_rng(0))
    expected = np.asarray(case.fn(*args))
    (result,) = evaluate_fragment(_trace(case.fn, args).graph, list(args))
    assert result.shape == expected.shape
    assert result.dtype == expected.dtype, (result.dtype, expected.dtype)
    rtol = 1e-5 if expected.dtype in (np.float32, np.complex64) else 1e-12
    np.testing.assert_allclose(result, expected, rtol=rtol)


def test_several_outputs_and_constants() -> None:
    x = np.arange(3.0)
    traced = _trace(lambda x: (x * 2.0, np.ones(2), 3), [x])
    assert traced.out_tree == (tuple, (None, None, None)) and traced.output_count == 3
    results = evaluate_fragment(traced.graph, [x])
    np.testing.assert_allclose(results[0], x * 2.0)
    np.testing.assert_allclose(results[1], np.ones(2))
    assert results[2] == 3.0


def test_python_control_flow_is_refused() -> None:
    with pytest.raises(TracingError, match="tnp.where"):
        _trace(lambda x: x if tnp.sum(x) > 0 else -x, [np.ones(2)])


def test_integer_arguments_are_traced_and_unrepresentable_dtypes_refused() -> None:
    assert ArraySpec.of(np.arange(3), "x").dtype == np.int64
    assert ArraySpec.of(np.arange(3, dtype=np.uint8), "x").dtype == np.int32  # widened
    with pytest.raises(TypeError, match="argument x has dtype uint64"):
        ArraySpec.of(np.arange(3, dtype=np.uint64), "x")
    with pytest.raises(TypeError, match="argument x has dtype float16"):
        ArraySpec.of(np.ones(3, dtype=np.float16), "x")


def test_incompatible_broadcast_names_the_shapes() -> None:
    with pytest.raises(ValueError, match=r"\(3,\), \(4,\)"):
        _trace(lambda x, y: x + y, [np.ones(3), np.ones(4)])


def test_maximum_refuses_complex() -> None:
    with pytest.raises(TypeError, match="real arrays only"):
        _trace(lambda z: tnp.maximum(z, 0.0), [np.ones(2, dtype=np.complex128)])


def test_float32_stays_float32_with_python_scalars() -> None:
    traced = _trace(lambda x: x * 2.0 + 1, [np.ones(2, dtype=np.float32)])
    (result,) = evaluate_fragment(traced.graph, [np.ones(2, dtype=np.float32)])
    assert result.dtype == np.float32


def test_tnp_on_concrete_arrays_is_numpy() -> None:
    x = np.linspace(0.1, 1.0, 4)
    np.testing.assert_array_equal(tnp.sin(x), np.sin(x))
    np.testing.assert_array_equal(tnp.einsum("i,i->", x, x), np.einsum("i,i->", x, x))
