"""Fusion planning: which prim ops share one loop nest, and in which order nests run.

A *cluster* is a set of elementwise ops (and `broadcast_in_dim`, fused as an
index map) of one iteration shape, lowered to one loop nest. Clusters grow
greedily in program order: an op joins the clusters of its elementwise
producers, and merges them, unless that would make a cluster non-convex (some
path leaves the cluster and re-enters it, e.g. through a reduction or a
broadcast's operand, which must be materialized before the loop runs).

A cluster holds at most `MAX_CLUSTER_OPS` ops (see there). Convexity is
tracked with `escapes`: for every op, and for every cluster as a
whole (a cluster is one node: it runs after everything any member needs), the
clusters that reach it along a path that leaves them. An op may join cluster K
only if K is not in its `escapes`, and two clusters merge only if neither
escapes into the other. Since clusters are convex, the graph of nodes (clusters
and single ops) is acyclic; `plan` orders it topologically (ties broken by
program order). Cost is linear in the number of ops times the (small)
escape-set sizes.
"""

from __future__ import annotations

import heapq
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
    """Union-find over cluster ids with their ops and escape sets."""

    def __init__(self) -> None:
        self.parent: list[int] = []
        self.ops: list[list[Operation]] = []
        self.escapes: list[set[int]] = []

    def new(self, op: Operation) -> int:
        self.parent.append(len(self.parent))
        self.ops.append([op])
        self.escapes.append(set())
        return len(self.parent) - 1

    def find(self, k: int) -> int:
        while self.parent[k] != k:
            self.parent[k] = self.parent[self.parent[k]]
            k = self.parent[k]
        return k

    def merge_into(self, target: int, k: int) -> None:
        self.parent[k] = target
        self.ops[target].extend(self.ops[k])
        self.escapes[target] |= self.escapes[k]
        self.ops[k] = []

    def closure(self, ids: set[int]) -> set[int]:
        """`ids` and every cluster that reaches them *now*. A cluster's escapes grow
        as members join it, after consumers outside took a snapshot of them (the
        logsumexp Hessian made a cyclic plan from such a stale snapshot)."""
        seen: set[int] = set()
        stack = [self.find(k) for k in ids]
        while stack:
            k = stack.pop()
            if k not in seen:
                seen.add(k)
                stack.extend(self.find(j) for j in self.escapes[k])
        return seen

    def compatible(self, a: int, b: int) -> bool:
        return a not in self.closure(self.escapes[b]) and b not in self.closure(self.escapes[a])


def plan(ops: Sequence[Operation], fusable: Callable[[Operation], bool]) -> list[Node]:
    """Group `ops` (topologically ordered) into clusters and order the nodes."""
    clusters = _Clusters()
    cluster_of: dict[Operation, int] = {}
    escapes: dict[Operation, set[int]] = {}
    for op in ops:
        blocked: set[int] = set()
        candidates: list[int] = []
        for operand in op.operands:
            producer = operand.owner
            if not isinstance(producer, Operation) or producer not in escapes:
                continue
            blocked |= escapes[producer]
            if producer in cluster_of:
                k = clusters.find(cluster_of[producer])
                # Node level: whatever reaches any member of K reaches all of it.
                blocked |= clusters.escapes[k]
                fused_edge = fusable(op) and not isinstance(op, prim.BroadcastInDimOp)
                (candidates.append if fused_edge else blocked.add)(k)
        blocked = clusters.closure(blocked)
        if not fusable(op):
            escapes[op] = blocked | set(candidates)
            continue
        chosen: list[int] = []
        size = 1
        for k in dict.fromkeys(candidates):
            fits = size + len(clusters.ops[k]) <= MAX_CLUSTER_OPS
            if fits and k not in blocked and all(clusters.compatible(k, j) for j in chosen):
                chosen.append(k)
                size += len(clusters.ops[k])
        new = clusters.new(op)
        for k in chosen:
            clusters.merge_into(new, k)
        escapes[op] = blocked | (set(candidates) - set(chosen))
        clusters.escapes[new] |= escapes[op]
        cluster_of[op] = new
    return _order(ops, clusters, cluster_of)


def _order(
    ops: Sequence[Operation], clusters: _Clusters, cluster_of: dict[Operation, int]
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
            for operand in op.operands:
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
