"""Fusion planning: which prim ops share one loop nest, and in which order nests run.

A *cluster* is a set of elementwise ops (and index maps such as
`broadcast_in_dim`, `transpose` or `slice`) of one iteration shape, lowered
to one loop nest, plus the reductions of a whole member to a scalar that the
nest folds as it goes (`foldable`; their results, known only after the loop,
seal the cluster to their readers). Clusters grow greedily in program order:
an op joins the clusters of its elementwise producers, and merges them,
unless that would make a cluster non-convex (some path leaves the cluster
and re-enters it, e.g. through a reduction or an index map's operand, which
must be materialized before the loop runs).

A cluster holds at most `MAX_CLUSTER_OPS` ops (see there). Convexity is
kept with a *rank* per node (cluster or single op) such that every edge of the
node graph goes from a lower to a higher rank, which proves the graph acyclic
(so clusters are convex). A single op ranks just above the nodes it reads (odd
ranks); a cluster ranks just above the nodes its members read from outside
(even ranks, so a cluster may share the level of an unrelated op and sit below
it). An op joins (and merges) the clusters it reads only if the merged
cluster's rank stays below each one's *ceiling*, the lowest rank of a node
reading it (recorded when the reader is created; ranks only grow, so a stale
ceiling is conservative). This is a sufficient check, not the exact one: a
merge can be refused in rare diamond shapes where some other order would have
allowed it. `plan` orders the node graph topologically (ties broken by program
order). Cost is linear in the number of ops (times the few operands of each).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.ir import Operation, SSAValue

from tidu_mlir.dialects import prim

MAX_CLUSTER_OPS = 256
"""Largest cluster: LLVM's optimization and code generation time grow faster than
linearly with the size of one loop body (a 10,000-op chain fused into one loop
took 40 s in O3 + codegen), so longer chains are cut into several loops; one
extra store and load per element every 256 ops costs little at run time."""


@dataclass(eq=False)
class Cluster:
    """Ops computed in one loop nest over `shape` (ops in program order)."""

    ops: list[Operation]
    shape: tuple[int, ...]
    members: set[Operation] = field(default_factory=set[Operation])

    def escaping_values(self) -> list[SSAValue]:
        """Results used outside the cluster (they are stored to memory)."""
        return [
            result
            for op in self.ops
            for result in op.results
            if any(u.operation not in self.members for u in result.uses)
        ]


Node = Cluster | Operation


class _Clusters:
    """Union-find over cluster ids with their ops, ranks and ceilings."""

    def __init__(self) -> None:
        self.parent: list[int] = []
        self.ops: list[list[Operation]] = []
        self.rank: list[int] = []
        self.ceiling: list[float] = []  # at most the lowest rank of a node reading it

    def new(self, op: Operation, rank: int) -> int:
        self.parent.append(len(self.parent))
        self.ops.append([op])
        self.rank.append(rank)
        self.ceiling.append(math.inf)
        return len(self.parent) - 1

    def find(self, k: int) -> int:
        while self.parent[k] != k:
            self.parent[k] = self.parent[self.parent[k]]
            k = self.parent[k]
        return k

    def merge_into(self, target: int, k: int) -> None:
        self.parent[k] = target
        self.ops[target].extend(self.ops[k])
        self.ceiling[target] = min(self.ceiling[target], self.ceiling[k])
        self.ops[k] = []


work = 0
"""Planning steps taken so far (operands and candidate checks visited); a test
reads it to check that planning stays linear in the number of ops."""


Read = tuple[SSAValue, bool]
"""A value an op reads, and whether it reads it at other indices than its own
(an index map's operand, e.g. a transpose's), which needs the whole value in
memory before the op's loop runs."""


def operands_read(op: Operation) -> list[Read]:
    """`op`'s operands, each read at the op's own indices (an elementwise op)."""
    return [(operand, False) for operand in op.operands]


def plan(
    ops: Sequence[Operation],
    fusable: Callable[[Operation], bool],
    foldable: Callable[[Operation], bool] = lambda op: False,
    reads: Callable[[Operation], Sequence[Read]] = operands_read,
) -> list[Node]:
    """Group `ops` (topologically ordered) into clusters and order the nodes.
    A `foldable` op (a reduction of a whole value to a scalar) whose operand
    a cluster of its shape computes joins that cluster: the loop folds it as
    it goes, and its result, known only after the loop, seals it (no op
    reading the result joins the cluster). `reads(op)` lists the values `op`
    reads (its operands, or what they are computed from when the caller
    computes some of them inside their readers' loops); an op never joins the
    cluster of a value it reads at other indices than its own."""
    global work
    clusters = _Clusters()
    cluster_of: dict[Operation, int] = {}
    rank_of: dict[Operation, int] = {}  # ops that are nodes of their own
    folded: set[Operation] = set()
    for op in ops:
        deps: list[tuple[int | None, int]] = []  # (cluster id or None, rank) of nodes read
        sealed: list[int] = []  # clusters read through a folded reduction or remapped
        for operand, remapped in reads(op):
            work += 1
            producer = operand.owner
            if not isinstance(producer, Operation):
                continue
            if producer in cluster_of:
                k = clusters.find(cluster_of[producer])
                if producer in folded or remapped:
                    sealed.append(k)
                    deps.append((None, clusters.rank[k]))
                else:
                    deps.append((k, clusters.rank[k]))
            elif producer in rank_of:
                deps.append((None, rank_of[producer]))
        if foldable(op) and (k := _folding_cluster(op, deps, clusters)) is not None:
            clusters.ops[k].append(op)
            cluster_of[op] = k
            folded.add(op)
            continue
        read = list(dict.fromkeys([*(k for k, _ in deps if k is not None), *sealed]))
        if not fusable(op):
            rank = _above(max((r for _, r in deps), default=-2), 1)
            rank_of[op] = rank
            for k in read:
                clusters.ceiling[k] = min(clusters.ceiling[k], rank)
            continue
        chosen: list[int] = []
        size = 1
        pending = [k for k in read if k not in sealed]
        while pending:  # once one cluster joins, it no longer holds another one back
            rejected: list[int] = []
            for k in pending:
                work += len(deps)
                trial = [*chosen, k]
                fits = size + len(clusters.ops[k]) <= MAX_CLUSTER_OPS
                if fits and _rank(trial, deps, clusters) < min(clusters.ceiling[j] for j in trial):
                    chosen.append(k)
                    size += len(clusters.ops[k])
                else:
                    rejected.append(k)
            pending = rejected if len(rejected) < len(pending) else []
        rank = _rank(chosen, deps, clusters)
        new = clusters.new(op, rank)
        for k in chosen:
            clusters.merge_into(new, k)
        for k in read:
            if k not in chosen:
                clusters.ceiling[k] = min(clusters.ceiling[k], rank)
        cluster_of[op] = new
    return _order(ops, clusters, cluster_of, reads)


def _folding_cluster(
    op: Operation, deps: list[tuple[int | None, int]], clusters: _Clusters
) -> int | None:
    """The cluster that folds the reduction `op`: the one computing its single
    operand, over the operand's shape, with room for it (None: none does)."""
    if len(deps) != 1 or (k := deps[0][0]) is None:
        return None
    members = clusters.ops[k]  # the first is an elementwise op of the cluster's shape
    if len(members) >= MAX_CLUSTER_OPS:
        return None
    return k if prim.shape_of(members[0].results[0]) == prim.shape_of(op.operands[0]) else None


def _above(rank: int, parity: int) -> int:
    """The lowest rank above `rank` of the given parity (1: ops, 0: clusters)."""
    return rank + 1 if (rank + 1) % 2 == parity else rank + 2


def _rank(chosen: list[int], deps: list[tuple[int | None, int]], clusters: _Clusters) -> int:
    """Lowest rank of the cluster of an op merged with the `chosen` clusters: at
    least theirs, and above every other node the op reads."""
    outside = max((r for k, r in deps if k is None or k not in chosen), default=-2)
    return max([_above(outside, 0), *(clusters.rank[k] for k in chosen)])


def _order(
    ops: Sequence[Operation],
    clusters: _Clusters,
    cluster_of: dict[Operation, int],
    reads: Callable[[Operation], Sequence[Read]],
) -> list[Node]:
    """Nodes in a topological order, ties broken by the position of their first op."""
    position = {op: i for i, op in enumerate(ops)}
    node_of: dict[Operation, Node] = {}
    for k in {clusters.find(k) for k in cluster_of.values()}:
        members = sorted(clusters.ops[k], key=position.__getitem__)
        shape = prim.shape_of(members[0].results[0])
        cluster = Cluster(members, shape, set(members))
        for member in members:
            node_of[member] = cluster
    for op in ops:
        node_of.setdefault(op, op)
    nodes = list(dict.fromkeys(node_of[op] for op in ops))
    first = {node: position[_ops_of(node)[0]] for node in nodes}
    deps: dict[Node, set[Node]] = {node: set() for node in nodes}
    users: dict[Node, list[Node]] = {node: [] for node in nodes}
    for node in nodes:
        for op in _ops_of(node):
            for operand, _ in reads(op):
                dep = node_of.get(operand.owner)  # pyright: ignore[reportArgumentType]
                if dep is not None and dep is not node and dep not in deps[node]:
                    deps[node].add(dep)
                    users[dep].append(node)
    ready = [(first[n], i, n) for i, n in enumerate(nodes) if not deps[n]]
    heapq.heapify(ready)
    index = {n: i for i, n in enumerate(nodes)}
    ordered: list[Node] = []
    while ready:
        _, _, node = heapq.heappop(ready)
        ordered.append(node)
        for user in users[node]:
            deps[user].discard(node)
            if not deps[user]:
                heapq.heappush(ready, (first[user], index[user], user))
    assert len(ordered) == len(nodes), "fusion produced a cyclic node graph"
    return ordered


def _ops_of(node: Node) -> list[Operation]:
    return node.ops if isinstance(node, Cluster) else [node]
