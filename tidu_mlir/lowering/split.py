"""`split-functions`: cut a large loop-level function into calls of bounded-size parts.

LLVM's optimizer and code generator grow faster than linearly in the size of one
function (a 200-step chain: one function of 11,000 ops, O3 3.5 s and codegen
2.2 s, against 1.2 s and 0.7 s at half the size). So a function of more than
`MAX_PART_OPS` ops (counted with everything nested) is cut into consecutive
parts of about that many ops, each outlined into a private `no_inline` function
`@name__partK` and called where it was; the total LLVM work is then linear in
the number of parts. Functions at or below the bound, which is every kernel of
an ordinary program, are not touched, so their code is exactly as before.

What a part holds: a run of consecutive top-level ops of the function (loop
nests, kernel and BLAS calls, parallel dispatches, scalar code) that is cut only
where no value computed in it is used after it, plus the allocation and release
of the temporaries used only in it. Other allocations (`memref.alloc`,
`alloca`) stay in the caller and are passed in; constants, globals and views
(`reinterpret_cast`, complex views) are re-created in the part from their root
buffer, so every pointer argument of a part is a distinct buffer and the
`noalias` marking of `convert-func-to-llvm` stays true. The ops are moved, not
cloned. `memref.dealloc` and the terminator always stay in the caller and end
any part before them.

Policy (measured on the chain of bench_compile, 2 cores): parts of about 500
loop-level ops (~2,000 LLVM instructions) keep O3 and codegen linear in the
program size, while a call per part costs nothing measurable at run time
(`bench/bench_runtime.py`: the same geometric mean against JAX with parts of
500 and of 1,000). With small temporaries in the frame
(`promote-buffers-to-stack`), O3 on the K=250 chain took 1.52 s with parts
of 1,000 ops, 1.19 s with 500, 1.12 s with 250 and 1.19 s with 125 (codegen
growing below 250); first calls of GradBench's ht 1.70 -> 1.58 s and
2.14 -> 1.90 s going from 1,000 to 500.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, func, llvm, memref
from xdsl.dialects.builtin import ModuleOp, StringAttr, UnitAttr, UnrealizedConversionCastOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import IsTerminator

MAX_PART_OPS = 500
"""Ops (nested ones included) above which a function is split, and about the size of a part."""

NO_INLINE_ATTR = "no_inline"
"""Unit attribute of a `func.func` that LLVM must not inline (`convert-func-to-llvm`
keeps it); set on the parts, which the inliner would otherwise merge back."""

_REMATERIALIZED = (
    arith.ConstantOp,
    llvm.ConstantOp,
    memref.GetGlobalOp,
    memref.CastOp,
    memref.SubviewOp,
    memref.ReinterpretCastOp,
    memref.CollapseShapeOp,
    memref.ExpandShapeOp,
    UnrealizedConversionCastOp,
)
"""Ops re-created inside a part that uses them (constants and views of a buffer)."""

_KEPT = (*_REMATERIALIZED, memref.AllocOp, memref.AllocaOp, llvm.AllocaOp)
"""Ops that stay in the caller, between parts (when no operand comes from a part)."""


def op_count(op: Operation) -> int:
    """`op` and every op nested in it."""
    return sum(1 for _ in op.walk())


def _top_level(op: Operation, block: Block) -> Operation:
    """The ancestor of `op` (or `op`) that is directly in `block`."""
    while op.parent is not block:
        parent = op.parent_op()
        assert parent is not None, "a use outside the function"
        op = parent
    return op


@dataclass
class _Part:
    ops: list[Operation] = field(default_factory=list[Operation])
    size: int = 0
    live_until: int = -1
    """Position of the last top-level op using a value computed in the part."""


@dataclass
class _Splitter:
    """Splits one function (see the module docstring)."""

    module: ModuleOp
    function: func.FuncOp
    max_ops: int
    count: int = 0

    def run(self) -> None:
        block = self.function.body.block
        ops = list(block.ops)
        position = {op: i for i, op in enumerate(ops)}
        moved: set[Operation] = set()
        part = _Part()
        for i, op in enumerate(ops):
            if op.has_trait(IsTerminator) or isinstance(op, memref.DeallocOp):
                self._close(part, i)
                part = _Part()
                continue
            if isinstance(op, _KEPT) and not any(
                isinstance(v.owner, Operation) and v.owner in moved for v in op.operands
            ):
                continue
            moved.add(op)
            part.ops.append(op)
            part.size += op_count(op)
            for result in op.results:
                for use in result.uses:
                    user = position[_top_level(use.operation, block)]
                    part.live_until = max(part.live_until, user)
            if part.size >= self.max_ops and part.live_until <= i:
                self._close(part, i)
                part = _Part()

    def _close(self, part: _Part, end: int) -> None:
        """Outline `part` if it is large enough and nothing after `end` uses it."""
        if part.size >= self.max_ops // 2 and part.live_until <= end:
            self._outline(part.ops)

    def _outline(self, ops: list[Operation]) -> None:
        name = f"{self.function.sym_name.data}__part{self.count}"
        self.count += 1
        inside = {nested for op in ops for nested in op.walk()}
        blocks = {b for op in inside for region in op.regions for b in region.blocks}
        entry = Block()
        mapping: dict[SSAValue, SSAValue] = {}
        captures: list[SSAValue] = []
        frees: list[Operation] = []

        def local(value: SSAValue) -> SSAValue:
            """`value` inside the part: an argument, a clone of a constant or view, or
            a temporary used only here (its allocation and release move in)."""
            if value not in mapping:
                owner = value.owner
                if isinstance(owner, memref.AllocOp) and all(
                    use.operation in inside or isinstance(use.operation, memref.DeallocOp)
                    for use in value.uses
                ):
                    frees.extend(u.operation for u in value.uses if u.operation not in inside)
                    owner.detach()
                    entry.add_op(owner)
                    mapping[value] = value
                elif isinstance(owner, _REMATERIALIZED):
                    clone = owner.clone(value_mapper={v: local(v) for v in owner.operands})
                    entry.add_op(clone)
                    mapping.update(zip(owner.results, clone.results, strict=True))
                else:
                    captures.append(value)
                    mapping[value] = entry.insert_arg(value.type, len(entry.args))
            return mapping[value]

        for op in ops:
            for nested in op.walk():
                for index, operand in enumerate(nested.operands):
                    owner = operand.owner
                    if owner in inside if isinstance(owner, Operation) else owner in blocks:
                        continue
                    nested.operands[index] = local(operand)
        call = func.CallOp(name, captures, [])
        body = ops[-1].parent
        assert body is not None
        body.insert_op_after(call, ops[-1])
        for op in (*ops, *frees):
            op.detach()
            entry.add_op(op)
        entry.add_op(func.ReturnOp())
        part = func.FuncOp(
            name,
            ([a.type for a in entry.args], []),
            Region(entry),
            visibility=StringAttr("private"),
        )
        part.attributes[NO_INLINE_ATTR] = UnitAttr()
        self.module.body.block.add_op(part)


@dataclass(frozen=True)
class SplitFunctionsPass(ModulePass):
    """Outline consecutive parts of each large function into bounded-size functions.

    Options:
        max_ops: the size bound of a function, in ops with the nested ones
            (also about the size of a part).
    """

    name = "split-functions"

    max_ops: int = MAX_PART_OPS

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            if not function.is_declaration and op_count(function) > self.max_ops:
                _Splitter(op, function, self.max_ops).run()
