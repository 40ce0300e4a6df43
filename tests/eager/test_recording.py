"""The recording layer (`docs/eager.md`) on its own: Recorder, KeySource,
RecordedGraph, try_backward and the BackwardExecutor call sequence, on the
toy dialect of tests/ad (the layer is generic over dialects) and on traced
prim graphs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pytest
from ad import toy_dialect as toy  # tests/ad (pytest puts tests/ on sys.path)
from xdsl.context import Context
from xdsl.ir import SSAValue

import tidu_mlir.numpy as tnp
from tidu_mlir.ad import ADRuleError, LinearizedGraph
from tidu_mlir.diagnostics import LocatingParser
from tidu_mlir.dialects import cg
from tidu_mlir.eager import (
    BackwardContext,
    EagerInput,
    EagerOutput,
    EvaluatorExecutor,
    KeySource,
    RecordedGraph,
    Recorder,
    try_backward,
)
from tidu_mlir.graph import lookup_fragment
from tidu_mlir.registry import make_context
from tidu_mlir.tracing import ArraySpec, trace_function


@pytest.fixture(scope="module")
def toy_ctx() -> Context:
    return toy.register_toy(make_context())


@pytest.fixture
def graph_of(toy_ctx: Context):
    """Parse a module holding `cg.graph @f` (toy ops on tensor<3xf64>) and return @f."""

    def _graph(body: str, inputs: Sequence[str] = ("x",)) -> cg.GraphOp:
        args = "\n".join(f'%{n} = cg.input #cg.key<"{n}"> : tensor<3xf64>' for n in inputs)
        text = f"cg.graph @f {{\n{args}\n{body}\n}}"
        module = LocatingParser(toy_ctx, text, "toy.mlir").parse_module()
        module.verify()
        graph = lookup_fragment(module, "@f")
        assert isinstance(graph, cg.GraphOp)
        return graph

    return _graph


MUL = "%r = toy.mul %x, %y : tensor<3xf64>\ncg.output %r : tensor<3xf64>"
SCALE = "%r = toy.scale %x by 3.0 : tensor<3xf64>\ncg.output %r : tensor<3xf64>"
SINCOS = "%s, %c = toy.sincos %x : tensor<3xf64>\ncg.output %s, %c : tensor<3xf64>, tensor<3xf64>"

X = np.array([0.3, -1.2, 2.0])
Y = np.array([1.5, 0.5, -0.7])


def leaf(keys: KeySource, data: np.ndarray, requires_grad: bool = True) -> EagerInput:
    return EagerInput(keys.fresh_input_key(), None, requires_grad, data)


def as_input(output: EagerOutput, data: np.ndarray) -> EagerInput:
    return EagerInput(output.key, output.trace, output.requires_grad, data)


class LoggingExecutor(EvaluatorExecutor):
    """Logs every call try_backward makes, in order (forward, transposed run, sums)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def execute_forward(
        self, graph: RecordedGraph, initial_data: Mapping[SSAValue, object]
    ) -> dict[SSAValue, object]:
        self.calls.append("execute_forward")
        return super().execute_forward(graph, initial_data)

    def run_transposed_linear(
        self,
        linear: LinearizedGraph,
        cotangent_out: Sequence[object | None],
        external_data: Mapping[SSAValue, object],
        ctx: BackwardContext,
    ) -> list[object | None]:
        self.calls.append("run_transposed_linear")
        return super().run_transposed_linear(linear, cotangent_out, external_data, ctx)

    def add_operands(self, a: object, b: object) -> object:
        self.calls.append("add_operands")
        return super().add_operands(a, b)


def test_key_source_hands_out_fresh_keys() -> None:
    first, second = KeySource(), KeySource()
    keys = [first.fresh_input_key() for _ in range(50)] + [
        second.fresh_input_key() for _ in range(50)
    ]
    assert len(set(keys)) == 100
    assert all(isinstance(key, cg.KeyAttr) for key in keys)
    named = KeySource("v").fresh_input_key()
    assert named == cg.KeyAttr("v0") and hash(named) == hash(cg.KeyAttr("v0"))


def test_call_sequence_of_seed_003(graph_of) -> None:
    """record -> try_backward -> per node: execute_forward, run_transposed_linear,
    add_operands where two paths meet; f(x) = 3x · x."""
    keys = KeySource()
    recorder = Recorder(keys)
    x = leaf(keys, X)
    (scaled,) = recorder.record_graph(graph_of(SCALE), [x])
    assert scaled.trace is not None
    assert (scaled.requires_grad, scaled.output_slot) == (True, 0)
    assert scaled.trace.input_keys == (x.key,) and scaled.trace.output_keys == (scaled.key,)
    (product,) = recorder.record_graph(graph_of(MUL, ("x", "y")), [as_input(scaled, 3 * X), x])
    executor = LoggingExecutor()
    grads = try_backward(product.key, product.trace, np.ones(3), executor, BackwardContext())
    assert executor.calls == [
        "execute_forward",
        "run_transposed_linear",
        "execute_forward",
        "run_transposed_linear",
        "add_operands",
    ]
    assert set(grads) == {x.key}
    np.testing.assert_allclose(grads[x.key], 6 * X)


def test_same_key_twice_accumulates(graph_of) -> None:
    keys = KeySource()
    x = leaf(keys, X)
    (square,) = Recorder(keys).record_graph(graph_of(MUL, ("x", "y")), [x, x])
    executor = LoggingExecutor()
    grads = try_backward(square.key, square.trace, np.ones(3), executor)
    np.testing.assert_allclose(grads[x.key], 2 * X)
    assert executor.calls.count("add_operands") == 1


@pytest.mark.parametrize("slot", [0, 1])
def test_multi_output_node_seeded_on_one_slot(graph_of, slot: int) -> None:
    keys = KeySource()
    x = leaf(keys, X)
    outputs = Recorder(keys).record_graph(graph_of(SINCOS), [x])
    assert [o.output_slot for o in outputs] == [0, 1]
    assert outputs[0].trace is outputs[1].trace
    seed = np.array([1.0, 2.0, 3.0])
    grads = try_backward(outputs[slot].key, outputs[slot].trace, seed, EvaluatorExecutor())
    expected = np.cos(X) * seed if slot == 0 else -np.sin(X) * seed
    np.testing.assert_allclose(grads[x.key], expected)


def test_composite_traced_graph_with_two_outputs() -> None:
    """A composite eager op (sin x · y, cos x) recorded as one tape node."""
    spec = ArraySpec((3,), np.dtype(np.float64))
    traced = trace_function(lambda a, b: (tnp.sin(a) * b, tnp.cos(a)), [spec, spec])
    keys = KeySource()
    x, y = leaf(keys, X), leaf(keys, Y)
    first, second = Recorder(keys).record_graph(traced.graph, [x, y])
    context = BackwardContext()
    grads = try_backward(second.key, second.trace, np.ones(3), EvaluatorExecutor(), context)
    assert set(grads) == {x.key}  # cos x does not depend on y
    np.testing.assert_allclose(grads[x.key], -np.sin(X))
    grads = try_backward(first.key, first.trace, np.ones(3), EvaluatorExecutor(), context)
    np.testing.assert_allclose(grads[x.key], np.cos(X) * Y)
    np.testing.assert_allclose(grads[y.key], np.sin(X))
    assert len(context.plans) == 2  # one linearization per seeded slot set


def test_inputs_without_requires_grad_get_no_cotangent(graph_of) -> None:
    keys = KeySource()
    x, y = leaf(keys, X), leaf(keys, Y, requires_grad=False)
    (product,) = Recorder(keys).record_graph(graph_of(MUL, ("x", "y")), [x, y])
    grads = try_backward(product.key, product.trace, np.ones(3), EvaluatorExecutor())
    assert set(grads) == {x.key}
    np.testing.assert_allclose(grads[x.key], Y)


def test_nothing_recorded_without_requires_grad(graph_of) -> None:
    keys = KeySource()
    (out,) = Recorder(keys).record_graph(graph_of(SCALE), [leaf(keys, X, requires_grad=False)])
    assert out.trace is None and not out.requires_grad


def test_leaf_output_gets_the_seed() -> None:
    key = KeySource().fresh_input_key()
    assert try_backward(key, None, X, EvaluatorExecutor()) == {key: X}


def test_chain_of_1000_nodes_no_recursion(graph_of) -> None:
    """1.001^n · x through n recorded nodes, one plan reused by all of them."""
    keys = KeySource()
    recorder = Recorder(keys)
    graph = graph_of(SCALE.replace("3.0", "1.001"))
    x = leaf(keys, np.ones(3))
    current, data = x, np.ones(3)
    for _ in range(1000):
        (out,) = recorder.record_graph(graph, [current])
        data = data * 1.001
        current = as_input(out, data)
    context = BackwardContext()
    grads = try_backward(current.key, current.trace, np.ones(3), EvaluatorExecutor(), context)
    np.testing.assert_allclose(grads[x.key], np.full(3, 1.001**1000))
    assert len(context.plans) == 1


def test_diamond_accumulates_across_nodes(graph_of) -> None:
    """y = 3x; z = y · x; w = z · y: fan-out between nodes, dw/dx = 27·3x²·... checked numerically."""
    keys = KeySource()
    recorder = Recorder(keys)
    x = leaf(keys, X)
    (y,) = recorder.record_graph(graph_of(SCALE), [x])
    mul = graph_of(MUL, ("x", "y"))
    (z,) = recorder.record_graph(mul, [as_input(y, 3 * X), x])
    (w,) = recorder.record_graph(mul, [as_input(z, 3 * X * X), as_input(y, 3 * X)])
    grads = try_backward(w.key, w.trace, np.ones(3), EvaluatorExecutor())
    np.testing.assert_allclose(grads[x.key], 27 * X**2)  # w = 9x³


def test_missing_rule_raises_ad_rule_error(graph_of) -> None:
    keys = KeySource()
    body = "%r = toy.noad %x : tensor<3xf64>\ncg.output %r : tensor<3xf64>"
    (out,) = Recorder(keys).record_graph(graph_of(body), [leaf(keys, X)])
    with pytest.raises(ADRuleError, match="unsupported jvp AD rule for toy.noad"):
        try_backward(out.key, out.trace, np.ones(3), EvaluatorExecutor())
    body = "%r = toy.copy %x : tensor<3xf64>\ncg.output %r : tensor<3xf64>"
    (out,) = Recorder(keys).record_graph(graph_of(body), [leaf(keys, X)])
    with pytest.raises(ADRuleError, match="unsupported transpose AD rule for toy.copy"):
        try_backward(out.key, out.trace, np.ones(3), EvaluatorExecutor())


def test_record_graph_checks_arity(graph_of) -> None:
    keys = KeySource()
    with pytest.raises(ValueError, match="1 eager inputs for a graph with 2 inputs"):
        Recorder(keys).record_graph(graph_of(MUL, ("x", "y")), [leaf(keys, X)])
    with pytest.raises(ValueError, match="2 output keys for a graph with 1 outputs"):
        Recorder(keys).record_graph(graph_of(SCALE), [leaf(keys, X)], outputs=["a", "b"])


def test_given_output_keys_and_retained_values(graph_of) -> None:
    keys = KeySource()
    graph = graph_of(SCALE)
    result = graph.body.block.last_op.operands[0]  # type: ignore[union-attr]
    (out,) = Recorder(keys).record_graph(graph, [leaf(keys, X)], ["mine"], {result: 3 * X})
    assert out.key == "mine"
    assert out.trace is not None
    assert out.trace.initial_data()[result] is not None
