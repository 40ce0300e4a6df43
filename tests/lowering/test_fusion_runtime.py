"""Fusion structure, BLAS dispatch, runtime checks, cache and derived graphs."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp

import tidu_mlir.ad as ad
from tidu_mlir.dialects import prim
from tidu_mlir.lowering.lower_to_llvm import lower_prim_to_loops
from tidu_mlir.lowering.runtime import compile_function

from .oracle import build, check, tensor

T = tensor((6, 5))
V = tensor((5,))


def loop_count(function) -> int:
    """Number of scf.for ops after lowering a copy of `function` to loops."""
    module = ModuleOp([function.clone()])
    lower_prim_to_loops(module)
    return sum(isinstance(op, scf.ForOp) for op in module.walk())


def chain(x, y, b):
    bb = prim.BroadcastInDimOp(b, [1], T)
    e = prim.ExpOp(prim.MulOp(x, y))
    u = prim.MulOp(prim.AddOp(e, bb), e)
    return [prim.TanhOp(u), prim.SinOp(u)]


def test_elementwise_dag_is_one_nest() -> None:
    function = build([T, T, V], chain)
    assert loop_count(function) == 2  # one 2-d nest
    check(function)


def test_reduction_between_elementwise_ops_splits_the_nest() -> None:
    def body(x):
        e = prim.ExpOp(x)
        s = prim.ReduceSumOp(e, [0])
        back = prim.BroadcastInDimOp(s, [1], T)
        return prim.DivOp(e, back)  # softmax over axis 0

    function = build([T], body)
    # exp nest (2), reduction: init (1) + accumulation (2), division nest (2)
    assert loop_count(function) == 2 + 1 + 2 + 2
    check(function)


def test_value_returned_twice_and_input_returned() -> None:
    check(build([T], lambda x: [prim.ExpOp(x), x, prim.ExpOp(x)]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_dot_general_uses_blas(dtype) -> None:
    a, b = tensor((64, 48), dtype), tensor((64, 40), dtype)
    function = build(
        [a, b], lambda x, y: prim.DotGeneralOp(x, y, lhs_contract=[0], rhs_contract=[0])
    )
    check(function)
    assert "cblas" in compile_function(function).llvm_ir


def test_argument_errors_name_the_argument() -> None:
    compiled = compile_function(build([V, V], lambda x, y: prim.AddOp(x, y)))
    good = np.ones(5)
    with pytest.raises(TypeError, match="argument 1"):
        compiled(good, np.ones(5, np.float32))
    with pytest.raises(ValueError, match="argument 0"):
        compiled(np.ones(4), good)
    with pytest.raises(ValueError, match="contiguous"):
        compiled(np.ones(10)[::2], good)
    with pytest.raises(TypeError, match="takes 2 inputs"):
        compiled(good)


def test_cache_and_threads() -> None:
    first = compile_function(build([V], lambda x: prim.SinOp(x)))
    assert compile_function(build([V], lambda x: prim.SinOp(x))) is first
    x = np.linspace(0, 1, 5)
    results: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda: results.append(first(x))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(np.allclose(r, np.sin(x)) for r in results)


@pytest.mark.skipif(
    not issubclass(prim.MulOp, getattr(ad, "Differentiable", ())),
    reason="prim ops have no AD rules yet",
)
def test_derived_graphs() -> None:  # pragma: no cover - enabled once rules exist
    pytest.skip("to be written against the AD API once prim rules land")
