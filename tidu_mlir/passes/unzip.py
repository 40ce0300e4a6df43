"""`unzip{graph=@f::@jvp1 policy=save-all report=false name=sq}`: split a
linearization into a forward graph (primal outputs, then residuals) and a
linear fragment reading only residuals and tangents (a wrapper over
`tidu_mlir.ad.unzip`)."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from tidu_mlir.ad.unzip import policy_named, residual_remarks, unzip
from tidu_mlir.passes.options import SymNameOptionPass, find_fragment


@dataclass(frozen=True)
class UnzipPass(SymNameOptionPass):
    """Split a linearization into a forward graph (the primal outputs, then the
    residuals it saves) and a graph holding the linear fragment, which reads
    only residuals and tangents (what reverse mode runs in two steps).

    Options:
        graph: the `cg.linear` to split, by path (`@f::@jvp1`).
        policy: which values are saved and which recomputed: `save-all`,
            `recompute-elementwise`, `save-nothing` (ops tagged `cg.policy`
            follow their own).
        report: print one remark per residual on stderr.
        name: the base of the new symbols `@<name>_fwd`, `@<name>_lin`;
            unset: `<primal>_fwd<N>`, `<primal>_lin<N>`.
    """

    name = "unzip"

    graph: str
    policy: str = "save-all"
    report: bool = False
    sym_name: str | None = None

    def __post_init__(self) -> None:
        policy_named(self.policy)  # refuse an unknown policy when the pipeline is built

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fragment = find_fragment(op, self.graph)
        unzipped = unzip(fragment, self.policy, self.sym_name)
        if self.report:
            for line in residual_remarks(unzipped, fragment, self.policy):
                print(line, file=sys.stderr)
