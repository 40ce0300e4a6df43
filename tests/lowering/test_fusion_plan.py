"""Fusion planning stays linear in the number of ops."""

from __future__ import annotations

from tidu_mlir.dialects import prim
from tidu_mlir.lowering import fusion
from tidu_mlir.lowering.prim_to_loops import is_fusable

from .oracle import build, tensor

T = tensor((4, 3))


def planning_work(steps: int) -> tuple[int, int]:
    """`fusion.work` spent planning `steps` steps of a 6-op chain with a reduction
    (each step reads the previous one's cluster), and the number of clusters."""

    def body(x, y):
        for _ in range(steps):
            e = prim.ExpOp(prim.MulOp(x, y))
            s = prim.ReduceSumOp(e, [0])
            x = prim.AddOp(prim.SinOp(e), prim.BroadcastInDimOp(s, [1], T))
        return x

    ops = list(build([T, T], body).body.block.ops)[:-1]
    before = fusion.work
    nodes = fusion.plan(ops, is_fusable)
    return fusion.work - before, sum(isinstance(n, fusion.Cluster) for n in nodes)


def test_planning_work_is_linear() -> None:
    small, small_clusters = planning_work(50)  # 300 ops
    large, large_clusters = planning_work(200)  # 1200 ops
    # per step: {mul, exp, sin} and {broadcast, add} joined with the next {mul, exp, sin}
    assert (small_clusters, large_clusters) == (51, 201)
    assert large <= 5 * small


def test_long_chain_clusters_are_sealed_when_full() -> None:
    """A 4,000-op elementwise chain becomes clusters of at most `MAX_CLUSTER_OPS` ops
    (full ones are sealed), so every loop body LLVM sees is bounded."""
    n = 4000

    def body(x, y):
        for i in range(n):
            x = prim.SinOp(x) if i % 2 else prim.MulOp(x, y)
        return x

    ops = list(build([T, T], body).body.block.ops)[:-1]
    sizes = [len(n.ops) for n in fusion.plan(ops, is_fusable) if isinstance(n, fusion.Cluster)]
    assert max(sizes) == fusion.MAX_CLUSTER_OPS
    assert sum(sizes) == n and len(sizes) == -(-n // fusion.MAX_CLUSTER_OPS)
