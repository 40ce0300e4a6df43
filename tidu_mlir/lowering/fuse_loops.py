"""`fuse-recorded-loops`: a recorded while loop and the one forward scan that
replays its tapes, fused back into one while loop.

The JVP of `prim.while` is its unzip (`prim.record_while`, then a dynamic
`prim.scan` over the recorded tapes), so that reverse mode can transpose the
scan. In forward mode nothing transposes it: when every tape and the count
feed exactly one forward scan, the scan's body can run right after the
recorded body, in the same iteration, on the slices just computed. The fused
loop stands where the recorded one did if the scan's other operands are
computed by then, else where the scan did if nothing reads the recorded
loop's carries in between. The fused
`prim.while` carries both loops' carries; no tape is allocated and the loop
runs once (JAX's forward-mode while loop). Run first by `lower_prim_to_loops`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from tidu_mlir.dialects import prim
from tidu_mlir.dialects.prim.control.bodies import clone_into


def _replay(record: prim.RecordWhileOp) -> prim.ScanOp | None:
    """The forward scan that alone reads `record`'s count and tapes (each tape
    once, as an `xs`), with no `ys`; None if there is none."""
    uses = list(record.count.uses)
    if len(uses) != 1 or not isinstance(scan := uses[0].operation, prim.ScanOp):
        return None
    if scan.count is not record.count or scan.is_reverse or scan.ys:
        return None
    if scan.parent_block() is not record.parent_block():
        return None
    tapes = set(record.tapes)
    if any(x not in tapes for x in scan.xs) or any(len(list(t.uses)) != 1 for t in tapes):
        return None
    return scan if len(set(scan.xs)) == len(tapes) else None


def _available_at(value: SSAValue, op: Operation) -> bool:
    """Whether `value` is defined before `op` in `op`'s block (or is an argument of it)."""
    if isinstance(value, BlockArgument):
        return value.block is op.parent_block()
    owner = value.owner
    return (
        isinstance(owner, Operation)
        and owner.parent_block() is op.parent_block()
        and (owner.is_before_in_block(op))
    )


def _used_before(value: SSAValue, op: Operation) -> bool:
    """Whether an op of `op`'s block before `op` (or nested in one) uses `value`."""
    block = op.parent_block()
    for use in value.uses:
        user = use.operation
        while user.parent_block() is not block and (parent := user.parent_op()) is not None:
            user = parent
        if user.parent_block() is block and user.is_before_in_block(op):
            return True
    return False


def _fused_regions(record: prim.RecordWhileOp, scan: prim.ScanOp) -> tuple[Region, Region]:
    """The cond and body of the fused loop, whose arguments are the record's
    carries, the scan's carries, the record's consts, the scan's consts."""
    types = [v.type for v in (*record.init, *scan.init, *record.consts, *scan.consts)]
    counts = len(record.init), len(scan.init), len(record.consts)

    def split(args: tuple[SSAValue, ...]) -> tuple[list[SSAValue], list[SSAValue], list[SSAValue]]:
        rc, sc = list(args[: counts[0]]), list(args[counts[0] : counts[0] + counts[1]])
        consts = args[counts[0] + counts[1] :]
        return rc + list(consts[: counts[2]]), sc, list(consts[counts[2] :])

    before = Block(arg_types=types)
    record_args, _, _ = split(before.args)
    before.add_op(prim.YieldOp(clone_into(before, record.before, record_args)))

    body = Block(arg_types=types)
    record_args, scan_carries, scan_consts = split(body.args)
    outs = clone_into(body, record.body, record_args)
    carries = len(record.init)
    slices: dict[SSAValue, SSAValue] = {
        tape: outs[carries + k] for k, tape in enumerate(record.tapes)
    }
    scan_args = [*scan_carries, *(slices[x] for x in scan.xs), *scan_consts]
    new_scan_carries = clone_into(body, scan.body, scan_args)
    body.add_op(prim.YieldOp([*outs[:carries], *new_scan_carries]))
    return Region(before), Region(body)


@dataclass(frozen=True)
class FuseRecordingWithReplay(RewritePattern):
    """A `prim.record_while` and its forward replay (`_replay`) -> one `prim.while`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: prim.RecordWhileOp, rewriter: PatternRewriter, /) -> None:
        scan = _replay(op)
        if scan is None:
            return
        if all(_available_at(v, op) for v in (*scan.init, *scan.consts)):
            point = InsertPoint.before(op)
        elif not any(_used_before(result, scan) for result in op.carries):
            point = InsertPoint.before(scan)
        else:
            return
        before, body = _fused_regions(op, scan)
        fused = prim.WhileOp([*op.init, *scan.init], [*op.consts, *scan.consts], before, body)
        rewriter.insert(fused, point)
        carries = len(op.init)
        rewriter.replace(scan, [], list(fused.carries[carries:]))
        rewriter.replace(op, [], [*fused.carries[:carries], None, *(None for _ in op.tapes)])


@dataclass(frozen=True)
class FuseRecordedLoopsPass(ModulePass):
    """Fuse each recorded while loop with the forward scan replaying it (forward mode)."""

    name = "fuse-recorded-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FuseRecordingWithReplay(), apply_recursively=False).rewrite_module(op)
