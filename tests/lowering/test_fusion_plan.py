"""Fusion planning stays linear in the number of ops."""

from __future__ import annotations

from tidu_mlir.dialects import prim
from tidu_mlir.lowering import fusion
from tidu_mlir.lowering.prim_to_loops import index_map_reads, is_foldable, is_fusable

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
    nodes = fusion.plan(ops, is_fusable, is_foldable, index_map_reads)
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
    sizes = [
        len(n.ops)
        for n in fusion.plan(ops, is_fusable, is_foldable, index_map_reads)
        if isinstance(n, fusion.Cluster)
    ]
    assert max(sizes) == fusion.MAX_CLUSTER_OPS
    assert sum(sizes) == n and len(sizes) == -(-n // fusion.MAX_CLUSTER_OPS)


def test_a_whole_reduction_joins_the_cluster_of_its_operand_and_seals_it() -> None:
    """`sum(exp(x * y))` over every axis is folded by the cluster computing its
    operand; `sin` of the sum reads the sealed cluster and starts another; a
    partial reduction, and a reduction of an argument, stay nodes of their own."""

    def body(x, y):
        e = prim.ExpOp(prim.MulOp(x, y))
        total = prim.ReduceSumOp(e, [0, 1])
        rows = prim.ReduceSumOp(e, [0])
        return prim.SinOp(total), rows, prim.ReduceMaxOp(x, [0, 1])

    ops = list(build([T, T], body).body.block.ops)[:-1]
    nodes = fusion.plan(ops, is_fusable, is_foldable, index_map_reads)
    clusters = [[op.name for op in n.ops] for n in nodes if isinstance(n, fusion.Cluster)]
    assert clusters == [["prim.mul", "prim.exp", "prim.reduce_sum"], ["prim.sin"]]
    singles = [n.name for n in nodes if not isinstance(n, fusion.Cluster)]
    assert singles == ["prim.reduce_sum", "prim.reduce_max"]
