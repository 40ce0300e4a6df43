"""Ops with regions: `prim.scan` (a loop of static length over a body),
`prim.cond` (one of two branches), `prim.while` (a loop whose trip count is
known only at run time) and `prim.record_while` (that loop recording its
iterations in tapes, for reverse mode), and their regions' terminator
`prim.yield`.

* `bodies`: `prim.yield` and what the three share (evaluating a region,
  checking signatures, rebuilding regions for the rules);
* `scan`, `cond`, `while_loop`: their ops, with verifier, numpy semantics,
  AD rules and batching rule each.

Their rules keep the passes generic: they ask the engine, through the rule
context, for the linearized, transposed or batched form of a region
(`RuleContext.linearize_body`, `transpose_body`, `BatchContext.batch_body`).
"""

from tidu_mlir.dialects.prim.base import PrimOp
from tidu_mlir.dialects.prim.control.bodies import YieldOp
from tidu_mlir.dialects.prim.control.cond import CondOp
from tidu_mlir.dialects.prim.control.scan import ScanOp
from tidu_mlir.dialects.prim.control.while_loop import RecordWhileOp, WhileOp

OPS: tuple[type[PrimOp], ...] = (ScanOp, CondOp, WhileOp, RecordWhileOp)
"""The op classes of this layer, in the dialect's order."""

TERMINATORS: tuple[type[YieldOp], ...] = (YieldOp,)
"""The terminators of the regions of this layer's ops (not `PrimOp`s: no rules)."""

__all__ = ["CondOp", "RecordWhileOp", "ScanOp", "WhileOp", "YieldOp"]
