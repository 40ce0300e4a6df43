"""`reconcile-casts` removes the cast chains xDSL's `reconcile-unrealized-casts`
removes, leaving the same module, trying each cast once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from xdsl.builder import ImplicitBuilder
from xdsl.context import Context
from xdsl.dialects import func, test
from xdsl.dialects.builtin import ModuleOp, UnrealizedConversionCastOp, f32, f64, i32, i64
from xdsl.ir import Block, Region
from xdsl.transforms.reconcile_unrealized_casts import ReconcileUnrealizedCastsPass

import tidu_mlir as td
import tidu_mlir.numpy as tnp
from tidu_mlir.lowering import pipeline, reconcile_casts
from tidu_mlir.lowering.reconcile_casts import ReconcileCastsPass


def _programs() -> dict[str, Callable[[Any], Any]]:
    def chain(x):
        for _ in range(5):
            x = x * 0.9 + tnp.sin(tnp.sum(tnp.exp(x)))
        return tnp.sum(x)

    def looped(x):
        return tnp.sum(td.lax.fori_loop(0, 4, lambda i, v: tnp.tanh(v) * 1.5, x))

    def branch(x):
        return td.lax.cond(tnp.sum(x) > 0, lambda v: v * 2.0, lambda v: -v, x).sum()

    return {"chain": chain, "scan": looped, "cond": branch}


@pytest.mark.parametrize("name", ["chain", "scan", "cond"])
def test_the_same_module_as_xdsls_pass(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The llvm-dialect modules of gradients of a chain, a loop and a branch,
    cast chains removed by xDSL's pass and by this one, print the same."""
    captured: list[ModuleOp] = []
    original = pipeline.lower_to_llvm_dialect

    def capture(module: ModuleOp, ctx: Context | None = None) -> None:
        captured.append(module.clone())
        original(module, ctx)

    monkeypatch.setattr("tidu_mlir.lowering.jit.lower_to_llvm_dialect", capture)
    monkeypatch.setenv("TIDU_CACHE_DIR", "")
    monkeypatch.setenv("TIDU_LLVM_TEXT", "0")  # the JIT lowers through the llvm dialect
    fn = _programs()[name]
    td.jit(td.grad(fn))(np.linspace(-1.0, 1.0, 6))
    assert captured, "nothing compiled"
    ctx = Context(allow_unregistered=True)
    for module in captured:
        for lowering_pass in pipeline.llvm_lowering_passes()[:-1]:
            lowering_pass.apply(ctx, module)
        theirs, ours = module.clone(), module.clone()
        ReconcileUnrealizedCastsPass().apply(ctx, theirs)
        ReconcileCastsPass().apply(ctx, ours)
        assert str(ours) == str(theirs)
        assert not any(isinstance(op, UnrealizedConversionCastOp) for op in ours.walk())


def _module_with(build: Callable[[], None]) -> ModuleOp:
    block = Block()
    with ImplicitBuilder(block):
        build()
        func.ReturnOp()
    body = Region(block)
    return ModuleOp([func.FuncOp("f", ((), ()), body)])


def _casts(module: ModuleOp) -> list[UnrealizedConversionCastOp]:
    return [op for op in module.walk() if isinstance(op, UnrealizedConversionCastOp)]


@pytest.mark.filterwarnings("ignore:Unable to remove cast")  # xDSL's pass, on the one that stays
def test_chains_that_close_go_and_the_others_stay() -> None:
    """A round trip i64 -> i32 -> i64 used by an op, a three-cast round trip, an
    unused cast: removed, their users reading the original value. A cast used
    by an op at another type than its input's stays, as do the casts before it."""

    def build() -> None:
        (x,) = test.TestOp(result_types=[i64]).results
        back = UnrealizedConversionCastOp.get(
            [UnrealizedConversionCastOp.get([x], [i32]).results[0]], [i64]
        )
        test.TestOp([back.results[0]])
        hop = UnrealizedConversionCastOp.get([x], [f32])
        hop2 = UnrealizedConversionCastOp.get([hop.results[0]], [f64])
        test.TestOp([UnrealizedConversionCastOp.get([hop2.results[0]], [i64]).results[0]])
        UnrealizedConversionCastOp.get([x], [f64])
        (y,) = test.TestOp(result_types=[f32]).results
        test.TestOp([UnrealizedConversionCastOp.get([y], [i32]).results[0]])

    module, reference = _module_with(build), _module_with(build)
    ctx = Context(allow_unregistered=True)
    ReconcileCastsPass().apply(ctx, module)
    ReconcileUnrealizedCastsPass().apply(ctx, reference)
    assert str(module) == str(reference)
    (kept,) = _casts(module)
    assert kept.inputs.types == (f32,) and kept.result_types == (i32,)
    users = [op for op in module.walk() if isinstance(op, test.TestOp) and op.operands]
    assert [op.operands[0].type for op in users] == [i64, i64, i32]


def test_each_cast_is_tried_once_when_every_chain_closes(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    original = reconcile_casts.remove_cast_chain

    def counted(root: UnrealizedConversionCastOp) -> bool:
        calls.append(root)
        return original(root)

    monkeypatch.setattr(reconcile_casts, "remove_cast_chain", counted)

    def build() -> None:
        (x,) = test.TestOp(result_types=[i64]).results
        for _ in range(50):
            there = UnrealizedConversionCastOp.get([x], [i32])
            test.TestOp([UnrealizedConversionCastOp.get([there.results[0]], [i64]).results[0]])

    module = _module_with(build)
    ReconcileCastsPass().apply(Context(allow_unregistered=True), module)
    assert not _casts(module)
    assert len(calls) == 50  # the chains' roots; the casts erased with them are skipped
