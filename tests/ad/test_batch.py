"""`batch` vectorizes a graph over a leading axis: checked against a Python loop.

Graphs are traced from `tnp` programs covering each op family, batched for
every choice of mapped inputs, and run by the reference evaluator (and once
through compiled code); each example's slice must equal the unbatched graph
run on that example. Work stays once per batch: ops reading only broadcast
inputs are copied, not batched.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from xdsl.parser import Parser

import tidu_mlir.numpy as tnp
from tidu_mlir import ad
from tidu_mlir.diagnostics import OpError
from tidu_mlir.execution import executable
from tidu_mlir.graph import fragment_inputs, fragment_outputs
from tidu_mlir.interfaces import BatchRuleError
from tidu_mlir.interp import evaluate_fragment
from tidu_mlir.registry import make_context
from tidu_mlir.tracing import ArraySpec, trace_function

from . import toy_dialect as toy

SIZE = 3
RNG = np.random.default_rng(7)

F64 = np.dtype(np.float64)
C128 = np.dtype(np.complex128)


def spec(*shape: int, dtype: np.dtype = F64) -> ArraySpec:
    return ArraySpec(tuple(shape), dtype)


PROGRAMS: dict[str, tuple[Callable[..., object], tuple[ArraySpec, ...]]] = {
    "elementwise": (lambda x, y: tnp.tanh(x) * y + tnp.exp(-x) / (1.0 + y * y), (spec(4), spec(4))),
    "broadcasting": (lambda x, y: tnp.sin(x)[:, None] * y, (spec(3), spec(3, 2))),
    "reductions": (
        lambda x, y: tnp.sum(x * y, axis=0) + tnp.max(x, axis=1).sum(),
        (spec(3, 4), spec(3, 4)),
    ),
    "shapes": (
        lambda x, y: tnp.concatenate([tnp.reshape(tnp.transpose(x), (2, 3)), y[1:, :]], axis=0),
        (spec(3, 2), spec(2, 3)),
    ),
    "matmul": (lambda a, b: tnp.tanh(a @ b) @ b.T, (spec(3, 4), spec(4, 2))),
    "batched_matmul": (
        lambda a, b: tnp.einsum("bij,bjk->bik", a, b),
        (spec(2, 3, 4), spec(2, 4, 2)),
    ),
    "select": (lambda x, y: tnp.where(x > y, x * x, y - x), (spec(5), spec(5))),
    "complex": (
        lambda z, w: tnp.real(z * tnp.conj(w)) + tnp.abs(z),
        (spec(3, dtype=C128), spec(3, dtype=C128)),
    ),
    "power_atan2": (
        lambda x, y: tnp.arctan2(x, y) + tnp.sqrt(x * x + 1.0) ** 1.5,
        (spec(4), spec(4)),
    ),
}


def _sample(s: ArraySpec, batch: bool) -> np.ndarray:
    shape = (SIZE, *s.shape) if batch else s.shape
    data = RNG.normal(size=shape)
    if s.dtype.kind == "c":
        data = data + 1j * RNG.normal(size=shape)
    return data.astype(s.dtype)


def _mapped_choices(count: int) -> list[tuple[bool, ...]]:
    return [flags for flags in itertools.product([False, True], repeat=count) if any(flags)]


def _loop(graph, mapped: Sequence[bool], args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The unbatched graph run once per example, results stacked."""
    per_example = [
        evaluate_fragment(graph, [a[i] if m else a for a, m in zip(args, mapped, strict=True)])
        for i in range(SIZE)
    ]
    return [np.stack(parts) for parts in zip(*per_example, strict=True)]


CASES = [
    (name, mapped)
    for name, (_, specs) in PROGRAMS.items()
    for mapped in _mapped_choices(len(specs))
]


@pytest.mark.parametrize(
    ("name", "mapped"),
    CASES,
    ids=[f"{n}-{''.join('m' if m else 'b' for m in f)}" for n, f in CASES],
)
def test_batched_graph_equals_a_loop_over_examples(name, mapped):
    fn, specs = PROGRAMS[name]
    traced = trace_function(fn, specs)
    batched = ad.batch(traced.graph, mapped, SIZE)
    batched.graph.verify()
    args = [_sample(s, m) for s, m in zip(specs, mapped, strict=True)]
    results = evaluate_fragment(batched.graph, args)
    for result, expected, flag in zip(
        results, _loop(traced.graph, mapped, args), batched.batched_outputs, strict=True
    ):
        assert flag
        np.testing.assert_allclose(result, expected, rtol=1e-12, atol=1e-12)


def _dense_rows(scales: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The standard-basis rows a basis batch stands for, built: input `i` of
    `scales` takes rows `offset_i ..`, row `offset_i + k` is scale `k` at flat `k`."""
    sizes = [s.size for s in scales]
    total = sum(sizes)
    rows = []
    for scale, offset in zip(scales, np.cumsum([0, *sizes[:-1]]), strict=True):
        block = np.zeros((total, scale.size), scale.dtype)
        block[offset : offset + scale.size] = np.diag(scale.ravel())
        rows.append(block.reshape(total, *scale.shape))
    return rows


LINEAR_IN_FIRST: dict[str, tuple[Callable[..., object], tuple[ArraySpec, ...]]] = {
    "scaled_contraction": (lambda c, a: (c * 2.0 - c / 3.0) @ a, (spec(4), spec(4, 3))),
    "rhs_contraction": (lambda c, a: a @ -c, (spec(4), spec(3, 4))),
    "full_contraction": (
        lambda c, w: tnp.einsum("ij,jik->k", c, w),
        (spec(2, 3), spec(3, 2, 4)),
    ),
    "reshaped": (lambda c, a: tnp.reshape(c, (6,)) @ a, (spec(2, 3), spec(6, 2))),
    "select_complex": (
        lambda z, w: tnp.where(tnp.abs(w) > 1.0, z * w, 0.0),
        (spec(3, dtype=C128), spec(3, dtype=C128)),
    ),
    "built_for_other_ops": (
        lambda c, a: tnp.sum(tnp.transpose(c) * a, axis=0) + tnp.sin(c[0, :2]),
        (spec(2, 3), spec(3, 2)),
    ),
}
"""Programs linear in their first input, whose basis rows the rules keep
one-hot (or build where an op has no one-hot rule)."""

BASIS_CASES = [
    *(
        (name, basis)
        for name, (_, specs) in PROGRAMS.items()
        for basis in ([True, False], [False, True], [True, True])
        if not all(basis) or specs[0].dtype == specs[1].dtype
    ),
    *((name, [True, False]) for name in LINEAR_IN_FIRST),
]


@pytest.mark.parametrize(
    ("name", "basis"),
    BASIS_CASES,
    ids=[f"{n}-{''.join('e' if b else 'b' for b in f)}" for n, f in BASIS_CASES],
)
def test_basis_inputs_equal_their_rows_built(name, basis):
    """Basis inputs (carried as one-hot rows where the rules keep them so)
    give what the same graph batched over the built rows gives."""
    fn, specs = {**PROGRAMS, **LINEAR_IN_FIRST}[name]
    traced = trace_function(fn, specs)
    size = sum(int(np.prod(s.shape)) for s, b in zip(specs, basis, strict=True) if b)
    one_hot = ad.batch(traced.graph, basis, size, name="one_hot", basis=basis)
    one_hot.graph.verify()
    dense = ad.batch(traced.graph, basis, size, name="dense")
    args = [_sample(s, False) for s in specs]
    built = iter(_dense_rows([a for a, b in zip(args, basis, strict=True) if b]))
    dense_args = [next(built) if b else a for a, b in zip(args, basis, strict=True)]
    for ours, expected in zip(
        evaluate_fragment(one_hot.graph, args),
        evaluate_fragment(dense.graph, dense_args),
        strict=True,
    ):
        np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-12)


def _count(graph, name: str) -> int:
    return sum(op.name == name for op in graph.body.walk())


def test_contracted_one_hot_rows_pick_rows_instead_of_a_product():
    """The rows of `(c * w) @ a` for the basis seeds `c`: `a`'s rows scaled
    (work of `a`'s size), no contraction with an n x n matrix."""
    traced = trace_function(lambda c, a, w: (c * w) @ a, (spec(5), spec(5, 3), spec(5)))
    one_hot = ad.batch(traced.graph, [True, False, False], 5, "one_hot", [True, False, False])
    assert _count(one_hot.graph, "prim.dot_general") == 0
    assert _count(one_hot.graph, "prim.pad") == 0
    dense = ad.batch(traced.graph, [True, False, False], 5, "dense")
    assert _count(dense.graph, "prim.dot_general") == 1


def test_a_dialect_that_cannot_build_basis_rows_is_named():
    with pytest.raises(BatchRuleError, match="toy.mul: the basis rows of tensor<3xf64> cannot"):
        ad.batch(_toy_graph(toy.MIXED), [True, True], 6, basis=[True, True])


def test_basis_refusals():
    traced = trace_function(lambda x, y: x.sum() * y, (spec(2), spec(3)))
    with pytest.raises(OpError, match="basis inputs have 5 elements in all; .* got 4"):
        ad.batch(traced.graph, [True, True], 4, basis=[True, True])
    with pytest.raises(OpError, match="basis flags must mark mapped inputs"):
        ad.batch(traced.graph, [True, False], 2, basis=[False, True])


def test_batched_graph_compiles_and_matches_the_evaluator():
    fn, specs = PROGRAMS["matmul"]
    traced = trace_function(fn, specs)
    batched = ad.batch(traced.graph, [True, False], SIZE)
    func = ad.materialize(batched.graph, name="batched")
    args = [_sample(specs[0], True), _sample(specs[1], False)]
    (compiled,) = executable(func, "llvm")(*args)
    np.testing.assert_allclose(compiled, evaluate_fragment(batched.graph, args)[0], rtol=1e-12)


def test_work_on_broadcast_inputs_is_done_once():
    """`exp(w)` reads only the broadcast input: copied as is, not batched."""
    traced = trace_function(lambda x, w: x * tnp.exp(w), (spec(4), spec(4)))
    batched = ad.batch(traced.graph, [True, False], SIZE)
    names = [op.name for op in batched.graph.body.block.ops]
    exp_ops = [op for op in batched.graph.body.block.ops if op.name == "prim.exp"]
    assert len(exp_ops) == 1
    assert (
        exp_ops[0].results[0].type == traced.graph.body.block.ops.first.results[0].type
    )  # one example's shape
    assert names.count("prim.mul") == 1


def test_outputs_that_depend_on_no_mapped_input_stay_unbatched():
    traced = trace_function(lambda x, w: (x * w, tnp.cos(w)), (spec(2), spec(2)))
    batched = ad.batch(traced.graph, [True, False], SIZE)
    assert batched.batched_outputs == (True, False)
    text = str(batched.graph)
    assert "cg.batched_outputs = array<i1: true, false>" in text
    outputs = fragment_outputs(batched.graph)
    assert outputs[1].type == fragment_outputs(traced.graph)[1].type


def test_inputs_keep_their_keys_and_mapped_ones_gain_the_leading_axis():
    traced = trace_function(lambda x, w: x * w, (spec(2), spec(2)))
    batched = ad.batch(traced.graph, [False, True], 5)
    inputs = fragment_inputs(batched.graph)
    assert [op.key for op in inputs] == [op.key for op in fragment_inputs(traced.graph)]
    assert [tuple(op.result.type.get_shape()) for op in inputs] == [(2,), (5, 2)]


def test_refusals():
    traced = trace_function(lambda x: x * 2.0, (spec(2),))
    with pytest.raises(OpError, match=r"needs one axis per input \(1: arg0\); got 2"):
        ad.batch(traced.graph, [True, False], SIZE)
    with pytest.raises(OpError, match="non-negative"):
        ad.batch(traced.graph, [True], -1)
    ad.batch(traced.graph, [True], SIZE, name="g")
    with pytest.raises(OpError, match="'@g' already exists"):
        ad.batch(traced.graph, [True], SIZE, name="g")
    linear = ad.linearize(traced.graph, wrt=["arg0"])
    with pytest.raises(OpError, match="module-level cg.graph"):
        ad.batch(linear.fragment, [True], SIZE)


def _toy_graph(text: str):
    module = Parser(toy.register_toy(make_context()), text).parse_module()
    return next(iter(module.body.block.ops))


def test_the_pass_is_generic_the_toy_dialect_batches():
    graph = _toy_graph(toy.MIXED)
    batched = ad.batch(graph, [True, True], SIZE)
    batched.graph.verify()
    args = [RNG.normal(size=(SIZE, 3)), RNG.normal(size=(SIZE, 3))]
    for result, expected in zip(
        evaluate_fragment(batched.graph, args), _loop(graph, [True, True], args), strict=True
    ):
        np.testing.assert_allclose(result, expected, rtol=1e-12)
    with pytest.raises(
        BatchRuleError, match="toy.mul: toy ops batch only when every operand is batched"
    ):
        ad.batch(_toy_graph(toy.MIXED), [True, False], SIZE)


def test_an_op_without_a_batching_rule_is_named():
    graph = _toy_graph(toy.MIXED.replace("%x3 = toy.scale %x by 3.0", "%x3 = toy.noad %x"))
    with pytest.raises(
        BatchRuleError, match="toy.noad: 'toy.noad' does not implement the Batchable interface"
    ):
        ad.batch(graph, [True, True], SIZE)
    assert [op.sym_name.data for op in graph.parent.ops] == ["f"]  # module unchanged
