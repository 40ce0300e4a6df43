"""The eager per-op fast path (`docs/eager.md`, "The per-op path"): once warm,
recording and backward run no xDSL code per op and trace, plan and compile
nothing; numpy programs compute the evaluator's values bit for bit; the
cache in front of `GRAPHS` holds only its entries; gradients are private
arrays and floating-point errors in backward are values, not warnings; nodes
the shortcut does not apply to take the general executor path."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import tidu_mlir as td
import tidu_mlir.eager as te
import tidu_mlir.numpy as tnp
from tidu_mlir.eager import (
    BackwardContext,
    EagerInput,
    EvaluatorExecutor,
    KeySource,
    Recorder,
    backward,
    executor,
    functions,
    try_backward,
)
from tidu_mlir.eager.functions import FUNCTIONS, GRAPHS, LAST_TRACED
from tidu_mlir.tracing import ArraySpec, trace_function

exp, log, mean, reshape, sin, tanh, total, largest = (
    FUNCTIONS[name] for name in ("exp", "log", "mean", "reshape", "sin", "tanh", "sum", "max")
)

XDSL = f"{os.sep}xdsl{os.sep}"


def xdsl_calls(fn: Callable[[], Any]) -> int:
    """How many Python functions of xDSL run while `fn` does."""
    count = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        if event == "call" and XDSL in frame.f_code.co_filename:
            count += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count


def chain(x: te.Tensor, w: te.Tensor, ops: int) -> te.Tensor:
    """`ops` recorded ops: unary, with a scalar, and with a second tensor."""
    y = x
    for index in range(ops):
        y = (tanh(y), y * 1.5, y + w, sin(y))[index % 4]
    return y.sum()


@pytest.fixture
def leaves() -> tuple[te.Tensor, te.Tensor]:
    return (
        te.tensor(np.linspace(-1.0, 1.0, 8), requires_grad=True),
        te.tensor(np.full(8, 0.25), requires_grad=True),
    )


def test_no_xdsl_code_runs_per_op(backend: str, leaves: tuple[te.Tensor, te.Tensor]) -> None:
    """Recording touches no xDSL object once each op was traced; a backward
    pass does a fixed amount of xDSL work (a lookup per distinct plan), so it
    does not grow with the tape."""
    x, w = leaves
    chain(x, w, 40).backward()
    assert xdsl_calls(lambda: chain(x, w, 40)) == 0
    short = xdsl_calls(lambda: chain(x, w, 8).backward())
    long = xdsl_calls(lambda: chain(x, w, 40).backward())
    assert short == long


def test_warm_steps_trace_plan_and_compile_nothing(
    backend: str, leaves: tuple[te.Tensor, te.Tensor], monkeypatch: pytest.MonkeyPatch
) -> None:
    x, w = leaves
    td.clear_caches()  # what this test traces is new to every cache
    chain(x, w, 12).backward()
    calls: list[str] = []

    def counted(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            return fn(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(functions, "_trace", counted("trace", functions._trace))
    monkeypatch.setattr(backward, "build_plan", counted("plan", backward.build_plan))
    monkeypatch.setattr(
        te.CompiledExecutor, "_compile", counted("compile", te.CompiledExecutor._compile)
    )
    chain(x, w, 12).backward()
    assert calls == []
    x.grad = None
    reshape(x, (2, 4)).sum().backward()  # two new ops: each traced, planned, compiled once
    assert sorted(calls) == ["compile", "compile", "plan", "plan", "trace", "trace"]


def test_numpy_programs_compute_the_evaluators_values() -> None:
    """Cotangents through numpy programs equal the reference evaluator's bit
    for bit (the same numpy semantics, constants folded once)."""
    rng = np.random.default_rng(3)
    x = te.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    w = te.tensor(rng.standard_normal((4, 2)), requires_grad=True)
    y = tanh(x @ w)
    z = log(exp(y) + 1.0) / 2.0
    loss = (total(z * z, axis=0) + largest(y)).sum() + mean(x[1:, ::2] ** 2)
    assert loss._trace is not None
    seed = np.ones(())
    fast = try_backward(loss.key, loss._trace, seed, te.RUNTIME.executor, te.RUNTIME.context)
    reference = try_backward(loss.key, loss._trace, seed, EvaluatorExecutor())
    assert fast.keys() == reference.keys() == {x.key, w.key}
    for key, value in fast.items():
        np.testing.assert_array_equal(value, reference[key])
    runners = {compiled.backend for compiled in te.RUNTIME.executor.compiled.values()}
    assert "numpy" in runners or te.RUNTIME.executor.backend == "interp"


@pytest.mark.parametrize(("size", "runner"), [(8, "numpy"), (4096, "llvm")])
def test_small_fragments_run_on_numpy(size: int, runner: str) -> None:
    pytest.importorskip("llvmlite")
    te.set_backend("llvm")
    try:
        x = te.tensor(np.linspace(0.1, 1.0, size), requires_grad=True)
        y = sin(x * 1.25)
        y.sum().backward()
        assert y._trace is not None
        plan = te.RUNTIME.context.plan(y._trace, (0,))
        assert plan is not None
        assert te.RUNTIME.executor.compile(plan.linear).backend == runner
        np.testing.assert_allclose(x.grad.numpy(), 1.25 * np.cos(1.25 * x.data))  # type: ignore[union-attr]
    finally:
        te.set_backend(None)


@pytest.fixture
def _restore_settings() -> Iterator[None]:
    yield
    td.config.reset()


def test_last_traced_holds_only_graphs_entries(_restore_settings: None) -> None:
    x = te.tensor(np.ones(3), requires_grad=True)
    for _ in range(2):  # the first call may trace, and an insertion empties LAST_TRACED
        exp(x * 2.0)
    graphs = {id(traced) for traced in GRAPHS.values()}
    assert {"exp", "multiply"} <= LAST_TRACED.entries.keys()
    assert all(id(traced) in graphs for traced in LAST_TRACED.entries.values())
    exp(te.tensor(np.ones(5), requires_grad=True))  # a new key: inserted into GRAPHS
    assert list(LAST_TRACED.entries) == ["exp"]
    td.config.update("eager_cache_size", 2)  # shrinks GRAPHS
    assert not LAST_TRACED.entries
    exp(x)
    td.clear_caches()
    assert not LAST_TRACED.entries


def test_grad_is_a_private_copy(backend: str) -> None:
    """A numpy-run backward may hand out the seed itself (reshape's transpose
    is a view); `.grad` is still an array of its own."""
    x = te.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    seed = np.arange(4.0).reshape(2, 2)
    reshape(x, (2, 2)).backward(seed)
    seed[...] = -1.0
    assert x.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 2.0, 3.0])
    x.grad.numpy()[0] = 5.0  # writable


def test_backward_floating_point_errors_are_values(backend: str) -> None:
    """As compiled code: 1/0 in a backward pass is inf, never a numpy warning."""
    x = te.tensor([0.0, 1.0], requires_grad=True)
    with np.errstate(divide="ignore"):
        y = log(x).sum()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [np.inf, 1.0])  # type: ignore[union-attr]


def test_tape_records_are_tuples_compared_by_identity() -> None:
    data = np.ones(2)
    first, second = EagerInput("k", None, True, data), EagerInput("k", None, True, data)
    assert first == first and first != second and len({first, second}) == 2
    assert (first.key, first.trace, first.requires_grad, first.data) == ("k", None, True, data)


def test_numpy_program_folds_constants_read_only() -> None:
    """The backward of `x * 1.5` is one multiply by a folded constant."""
    x = te.tensor(np.ones(4), requires_grad=True)
    y = x * 1.5
    assert y._trace is not None
    plan = te.RUNTIME.context.plan(y._trace, (0,))
    assert plan is not None
    function = executor.materialize(plan.linear.fragment, name="folded_test")
    program = executor.NumpyProgram(function)
    assert program.source.count(" = op") == 1  # the broadcast constant is folded
    (result,) = program.run([np.full(4, 2.0)])
    np.testing.assert_array_equal(result, np.full(4, 3.0))
    constants = [
        value for value in program.run.__globals__.values() if isinstance(value, np.ndarray)
    ]
    assert constants and not any(constant.flags.writeable for constant in constants)


def test_compiled_executor_general_path_for_retained_values(backend: str) -> None:
    """A node with retained values takes `execute_forward` +
    `run_transposed_linear` (no node runner) and gets the evaluator's values."""
    spec = ArraySpec((3,), np.dtype(np.float64))
    traced = trace_function(lambda a: tnp.sin(a) * a, [spec])
    keys = KeySource()
    data = np.array([0.3, -1.2, 2.0])
    x = EagerInput(keys.fresh_input_key(), None, True, data)
    result = traced.graph.body.block.last_op.operands[0]  # type: ignore[union-attr]
    (out,) = Recorder(keys).record_graph(traced.graph, [x], retained_values={result: data})
    assert out.trace is not None
    seed = np.array([1.0, 2.0, 3.0])
    grads = try_backward(out.key, out.trace, seed, te.CompiledExecutor(), BackwardContext())
    np.testing.assert_allclose(grads[x.key], seed * (np.cos(data) * data + np.sin(data)))
