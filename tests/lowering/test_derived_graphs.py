"""Graphs derived by the AD passes (JVP, VJP, HVP, Hessian), compiled and compared
with the reference evaluator (`executable(func, "llvm")` vs `"interp"`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.func import FuncOp

import tidu_mlir as td
import tidu_mlir.ad as ad
import tidu_mlir.numpy as tnp
from tidu_mlir.dialects import cg
from tidu_mlir.execution import executable
from tidu_mlir.tracing import ArraySpec, trace_function
from tidu_mlir.types import numpy_dtype

F64 = np.dtype(np.float64)


def elementwise(x: Any, y: Any) -> Any:
    return tnp.sum(tnp.tanh(x * y) * tnp.exp(-x) + tnp.sin(y))


def logsumexp(x: Any, y: Any) -> Any:
    z = x * y
    m = tnp.max(z)
    return m + tnp.log(tnp.sum(tnp.exp(z - m)))


def mlp(w: Any, x: Any) -> Any:
    return tnp.sum(tnp.tanh(tnp.matmul(w, x)) ** 2)


CASES: dict[str, tuple[Callable[..., Any], list[tuple[int, ...]]]] = {
    "elementwise": (elementwise, [(7,), (7,)]),
    "logsumexp": (logsumexp, [(6,), (6,)]),
    "mlp": (mlp, [(4, 5), (5, 3)]),
}


def derived(fn: Callable[..., Any], shapes: list[tuple[int, ...]]) -> dict[str, FuncOp]:
    """The JVP, VJP and HVP (in the first argument) of `fn`, materialized."""
    specs = [ArraySpec(s, F64) for s in shapes]
    traced = trace_function(fn, specs)
    wrt = [cg.KeyAttr(f"arg{i}") for i in range(len(specs))]
    linear = ad.linearize(traced.graph, wrt=wrt)
    jvp = ad.materialize(linear.fragment, name="jvp")
    vjp = ad.materialize(ad.linear_transpose(linear).fragment, name="vjp")

    def hvp(x: Any, y: Any, v: Any) -> Any:
        return td.jvp(lambda u: td.grad(fn)(u, y), (x,), (v,))[1]

    hvp_traced = trace_function(hvp, [*specs, specs[0]], name="hvp")
    return {"jvp": jvp, "vjp": vjp, "hvp": ad.materialize(hvp_traced.graph, name="hvp_func")}


def random_inputs(func: FuncOp, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [
        rng.uniform(-1.5, 1.5, t.get_shape()).astype(numpy_dtype(t.get_element_type()))  # pyright: ignore[reportAttributeAccessIssue]
        for t in func.function_type.inputs.data
    ]


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("stage", ["jvp", "vjp", "hvp"])
def test_derived_graph_compiled_matches_interpreter(case: str, stage: str) -> None:
    fn, shapes = CASES[case]
    func = derived(fn, shapes)[stage]
    args = random_inputs(func, seed=len(case) + len(stage))
    compiled = executable(func, "llvm")(*args)
    expected = executable(func, "interp")(*args)
    assert len(compiled) == len(expected)
    for got, want in zip(compiled, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_logsumexp_hessian_fusion_has_no_cycle() -> None:
    """Regression: the Hessian of logsumexp once made fusion planning build a
    cyclic node graph (a cluster on both sides of a reduction path)."""

    def hessian(x: Any, y: Any) -> Any:
        return td.hessian(lambda u: logsumexp(u, y))(x)

    spec = ArraySpec((5,), F64)
    func = ad.materialize(trace_function(hessian, [spec, spec]).graph, name="hessian_func")
    args = random_inputs(func, seed=3)
    (compiled,) = executable(func, "llvm")(*args)
    (expected,) = executable(func, "interp")(*args)
    np.testing.assert_allclose(compiled, expected, rtol=1e-12, atol=1e-12)
    x, y = args
    p = np.exp(x * y - np.max(x * y))
    p /= p.sum()
    closed_form = (np.diag(p) - np.outer(p, p)) * np.outer(y, y)
    np.testing.assert_allclose(compiled, closed_form, rtol=1e-10, atol=1e-12)
