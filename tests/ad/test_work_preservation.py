"""Work preservation (the paper's size bounds, docs/ad-passes.md) on the API corpus.

* the linear part of a linearized fragment (ops with a linearized role) is at
  most a small constant times the primal graph;
* transposition adds no work beyond one op per active operand of each linear
  op, plus one accumulation add per extra use of a linear value (fan-out).
"""

from __future__ import annotations

import numpy as np
import pytest
from api.corpus import CASES, Case
from xdsl.ir import Operation

import tidu_mlir as td
import tidu_mlir.numpy as tnp
from tidu_mlir import ad
from tidu_mlir.dialects.cg import Fragment, InputOp, LinearOp, OutputOp, role_of
from tidu_mlir.graph import fragment_inputs
from tidu_mlir.tracing import ArraySpec, trace_function


def _body(fragment: Fragment) -> list[Operation]:
    return [
        op for op in fragment.body.block.ops if not isinstance(op, InputOp | OutputOp | LinearOp)
    ]


def _linear_ops(fragment: Fragment) -> list[Operation]:
    return [op for op in _body(fragment) if role_of(op) is not None]


def _extra_uses(fragment: Fragment) -> int:
    values = [r for op in _linear_ops(fragment) for r in op.results]
    values += [op.result for op in fragment_inputs(fragment)]
    return sum(max(0, len(list(v.uses)) - 1) for v in values)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_linearize_and_transpose_preserve_work(case: Case) -> None:
    args = case.make_args(np.random.default_rng(0))
    traced = trace_function(case.fn, [ArraySpec.of(a, "a") for a in args])
    primal_ops = len(_body(traced.graph))
    linear = ad.linearize(traced.graph, wrt=[f"arg{i}" for i in range(len(args))])
    linear_ops = _linear_ops(linear.fragment)
    assert len(linear_ops) <= 3 * primal_ops + 1
    transposed = ad.linear_transpose(linear)
    active_operands = sum(sum(role_of(op).active_mask) for op in linear_ops)  # type: ignore[union-attr]
    bound = active_operands + _extra_uses(linear.fragment)
    assert len(_linear_ops(transposed.fragment)) <= bound


def test_reads_of_single_elements_accumulate_into_one_buffer() -> None:
    """n reads of single elements transpose to one concatenation laying the
    cotangents at their positions, not n full-size pads summed by n - 1 adds
    (work and IR quadratic in n)."""
    n = 40
    traced = trace_function(
        lambda x: sum(x[i] * x[(i + 1) % n] for i in range(n)), [ArraySpec((n,), np.float64)]
    )
    linear = ad.linearize(traced.graph, wrt=["arg0"])
    transposed = ad.linear_transpose(linear)
    names = [op.name for op in _body(transposed.fragment)]
    assert names.count("prim.pad") == 0
    assert names.count("prim.concatenate") == 1
    assert names.count("prim.add") <= n  # duplicates of one position only
    x = np.random.default_rng(1).normal(size=n)
    gradient = td.grad(lambda v: sum(v[i] * v[(i + 1) % n] for i in range(n)))(x)
    np.testing.assert_allclose(gradient, np.roll(x, 1) + np.roll(x, -1), rtol=1e-14)


def _tanh_layers(x, *weights):
    for w in weights:
        x = tnp.tanh(w @ x)
    return tnp.sum(x)


def test_a_shared_weight_receives_one_product_not_one_per_use() -> None:
    """A matrix used by 4 layers: its cotangent is one product over the
    layers' vectors joined (one dot_general), not 4 outer products summed
    by 3 full-size additions; the gradient equals the sum of the per-layer
    gradients of the same layers given separate copies."""
    rng = np.random.default_rng(2)
    x, w = rng.normal(size=8), rng.normal(size=(8, 8)) / 3
    traced = trace_function(
        lambda x, w: _tanh_layers(x, w, w, w, w), [ArraySpec.of(x, "x"), ArraySpec.of(w, "w")]
    )
    linear = ad.linearize(traced.graph, wrt=["arg0", "arg1"])
    transposed = ad.linear_transpose(linear)
    names = [op.name for op in _body(transposed.fragment)]
    assert names.count("prim.dot_general") == 4 + 1  # x's 4 products, w's one
    shared = td.grad(lambda w: _tanh_layers(x, w, w, w, w))(w)
    separate = td.grad(lambda *ws: _tanh_layers(x, *ws), argnums=(0, 1, 2, 3))(w, w, w, w)
    np.testing.assert_allclose(shared, sum(separate), rtol=1e-12)
