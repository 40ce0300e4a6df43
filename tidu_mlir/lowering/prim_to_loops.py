"""`convert-prim-to-loops`: prim ops on tensors to loop nests over buffers.

Input: functions in the form `prim-bufferize` gives (inputs read with
`bufferization.to_tensor`, results written with
`bufferization.materialize_in_destination`). Output: `scf.for` nests of
`memref`/`arith`/`math` ops; no tensors are left.

* Elementwise ops, and the index maps feeding them (`kernels.INDEX_MAPS`:
  broadcast, transpose, slice, pad, gather), are grouped by `fusion.plan`;
  each cluster is ONE loop nest that loads each external input once per
  element (an index map's operand at the index it maps to), computes every
  member once per element, and stores only the values used outside the
  cluster. An index map read only by fused ops (and a reshape that only adds
  or drops axes of size 1) is not even a member: each nest reading it
  computes it where it reads it (`_inlined_index_maps`), as does a kernel
  loading each operand element once (`kernels.READ_ONCE_KERNELS`, through a
  `loops.Computed` operand), so a chain of them costs no nest and no
  temporary. A sum or max of a whole array a cluster computes
  (`is_foldable`) is folded by that nest, its accumulator carried through
  it, its total stored after it.
* Other ops are emitted one at a time (`_EMITTERS`): their kernel
  (`kernels.KERNELS`, or a BLAS call for large real products), for `reshape`
  a view (`memref.reinterpret_cast`) of its operand's buffer, for `scan` one
  loop calling its body, for `cond` an `scf.if` calling one of its
  branches, for `while` an `scf.while` calling its cond and body, each region
  outlined into a function (`regions.py`) that this pass then lowers too;
  for `check` an `scf.if` calling its failure function when the predicate is
  false (`allocation_guard`), the result being the operand's buffer.
* A value returned by the function is computed directly into its output buffer
  (destination passing), also through reshapes: a returned reshape of a
  computed value makes that value's buffer a view of the output buffer.
  Further outputs of the same value are copies.
* Splat constants are inlined as scalars, other constants become `memref.global`.
* Temporaries are `memref.alloc` and freed before the return.

An op with no lowering raises a diagnostic naming it. `LOWERED_OPS` lists the
prim ops handled, derived from the dispatch tables at the end of this module.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeGuard, cast

import numpy as np
from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, bufferization, func, memref, scf
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    UnrealizedConversionCastOp,
    i1,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import DiagnosticException

from tidu_mlir.dialects import prim
from tidu_mlir.lowering.allocation_guard import check_failure_symbol
from tidu_mlir.lowering.blas import Product, emit_call, plan_products
from tidu_mlir.lowering.element_rules import ELEMENT_RULES, apply_elementwise
from tidu_mlir.lowering.fusion import Cluster, Read, plan
from tidu_mlir.lowering.indexing_kernels import IndexMap
from tidu_mlir.lowering.kernels import (
    INDEX_MAPS,
    KERNELS,
    READ_ONCE_KERNELS,
    constant_element,
    emit_transpose,
    index_map_of,
    reduction_start,
    reduction_step,
    unflatten,
)
from tidu_mlir.lowering.lapack import LINALG_OPS, MatrixCalls, emit_linalg, scratch_types
from tidu_mlir.lowering.loops import (
    Buffer,
    Computed,
    Index,
    LoopBuilder,
    Source,
    buffer_memref_type,
)
from tidu_mlir.lowering.math_library import MathLibrary
from tidu_mlir.lowering.regions import (
    ScanBuffers,
    WhileBuffers,
    allocate_tape,
    emit_cond,
    emit_scan,
    emit_while,
    outline_region,
)
from tidu_mlir.lowering.scalar import Element, ScalarBuilder

ALIGNMENT = 64
"""The temporaries' alignment in bytes (a cache line)."""

ALLOC_PROPERTIES = memref.AllocOp(
    [], [], MemRefType(i1, [1]), IntegerAttr(ALIGNMENT, 64)
).properties
"""The properties of every temporary's `memref.alloc` (its alignment, no
dynamic sizes): such allocs are built with `create`, as the IRDL constructor
costs ~40 µs each."""


def temporary_alloc(tensor_type: TensorType) -> tuple[memref.AllocOp, bool]:
    """The (not yet inserted) allocation of a temporary holding a tensor of
    `tensor_type`, and whether it is a complex (re, im) view."""
    view_type, is_complex = buffer_memref_type(
        tensor_type.get_element_type(), tensor_type.get_shape()
    )
    return memref.AllocOp.create(result_types=[view_type], properties=ALLOC_PROPERTIES), is_complex


FUSED_OPS: frozenset[type[Operation]] = frozenset({*ELEMENT_RULES, *INDEX_MAPS})
"""Ops computed inside a fused elementwise loop nest (index maps where they are read)."""


def is_fusable(op: Operation) -> bool:
    """Whether `op` is computed inside a fused elementwise loop nest."""
    return type(op) in FUSED_OPS


def is_index_map(op: Operation) -> bool:
    """Whether `op`'s result elements are its operands' elements read at other indices."""
    return type(op) in INDEX_MAPS


def index_map_reads(op: Operation) -> list[Read]:
    """The values `op` reads, an index map's at other indices than its own."""
    remapped = is_index_map(op)
    return [(operand, remapped) for operand in op.operands]


INLINED_MAX_ELEMENTS = 4096
"""An index map (or a reshape that only adds or drops axes of size 1) read by
several loop nests is recomputed in each of them only up to this many result
elements; a larger one is stored once (its readers would repeat its scattered
reads, a transpose's or a gather's, on every pass). One read by a single op
is always computed where it is read."""


def is_foldable(op: Operation) -> TypeGuard[prim.ReduceSumOp | prim.ReduceMaxOp]:
    """Whether `op` reduces a whole array to a scalar (a sum or max over every
    axis): the loop nest computing its operand folds it as it goes."""
    if not isinstance(op, prim.ReduceSumOp | prim.ReduceMaxOp):
        return False
    rank = len(prim.shape_of(op.operand))
    return rank > 0 and sorted(op.prop_values("axes")) == list(range(rank))


class FunctionLowering:
    """Lowers the body of one bufferized function (see the module docstring)."""

    def __init__(
        self,
        function: func.FuncOp,
        module: ModuleOp,
        library: MathLibrary,
    ):
        self.function = function
        self.module = module
        self.library = library
        self.block = function.body.block
        ret = self.block.last_op
        assert isinstance(ret, func.ReturnOp)
        self.builder = Builder(InsertPoint.before(ret))
        self.loops = LoopBuilder(self.block)
        self.buffers: dict[SSAValue, Buffer] = {}
        self.splats: dict[SSAValue, complex] = {}
        """The value of each splat constant (a Python int or bool for integer types)."""
        self.constants: dict[SSAValue, prim.ConstantOp] = {}
        self.destinations: dict[SSAValue, list[Buffer]] = {}
        self.temporaries: list[SSAValue] = []
        self.products: dict[prim.DotGeneralOp, Product] = {}
        self.folded: set[prim.TransposeOp] = set()
        self.inlined: dict[Operation, IndexMap] = {}
        """Index maps computed inside the loop nests that read them, at the
        index each reader needs: no nest and no buffer of their own."""
        self.outlined: list[func.FuncOp] = []
        """Functions made from the regions of scans and conds, still to be lowered."""

    # ----- driver -----------------------------------------------------------

    def run(self) -> None:
        ops = list(self.block.ops)[:-1]
        computed: list[Operation] = []
        for op in ops:
            if isinstance(op, bufferization.ToTensorOp):
                self.buffers[op.tensor] = self._view(op.memref)
            elif isinstance(op, bufferization.MaterializeInDestinationOp):
                self.destinations.setdefault(op.source, []).append(self._view(op.dest))
            elif (record := _RECORDERS.get(type(op))) is not None:
                record(self, op)
            elif type(op) in LOWERED_OPS:
                computed.append(op)
            else:
                raise DiagnosticException(
                    f"convert-prim-to-loops: cannot lower '{op.name}' "
                    f"(in @{self.function.sym_name.data})"
                )
        self._forward_destinations_through_reshapes()
        self.products = plan_products(computed)
        self.folded = {t for product in self.products.values() for t in product.transposes}
        self.inlined = self._inlined_index_maps(computed)
        planned = [op for op in computed if op not in self.inlined]
        for node in plan(planned, self._fusable, is_foldable, self._reads):
            if isinstance(node, Cluster):
                self._emit_cluster(node)
            elif node not in self.folded:  # read or written by a BLAS call (blas.plan_products)
                _EMITTERS[type(node)](self, node)
        self._copy_remaining_outputs()
        for ref in self.temporaries:
            self.builder.insert(memref.DeallocOp.get(ref))
        for op in reversed(ops):
            Rewriter.erase_op(op, safe_erase=False)

    def _fusable(self, op: Operation) -> bool:
        """Whether `op` is computed in a fused loop nest (not a transpose a BLAS call reads)."""
        return is_fusable(op) and op not in self.folded

    def _inlined_index_maps(self, computed: list[Operation]) -> dict[Operation, IndexMap]:
        """The index maps to compute inside their readers: those read only by
        fused ops, by kernels that read each element once (`READ_ONCE_KERNELS`)
        or by other inlined maps (decided from the last op back), not
        returned, and read by one op, or small (`INLINED_MAX_ELEMENTS`) and
        not only by fused ops: readers that all fuse join the map's cluster
        instead, sharing one nest as they would not if it were inlined."""
        inlined: dict[Operation, IndexMap] = {}
        for op in reversed(computed):
            index_map = index_map_of(op)
            if index_map is None or op in self.folded or op.results[0] in self.destinations:
                continue
            users = [use.operation for use in op.results[0].uses]
            if len(users) > 1 and (
                math.prod(prim.shape_of(op.results[0])) > INLINED_MAX_ELEMENTS
                or all(user not in inlined and self._fusable(user) for user in users)
            ):
                continue  # (fused readers of a member share its nest)
            if all(
                user in inlined or self._fusable(user) or type(user) in READ_ONCE_KERNELS
                for user in users
            ):
                inlined[op] = index_map
        return inlined

    def _reads(self, op: Operation) -> list[Read]:
        """The values `op` reads from memory or from other loop nests: an inlined
        index map's operands in place of its result (read at other indices)."""
        reads: list[Read] = []
        for operand, remapped in index_map_reads(op):
            owner = operand.owner
            if isinstance(owner, Operation) and owner in self.inlined:
                reads.extend((root, True) for root, _ in self._reads(owner))
            else:
                reads.append((operand, remapped))
        return reads

    # ----- buffers ------------------------------------------------------------

    def _view(self, ref: SSAValue) -> Buffer:
        """A function buffer argument as a `Buffer` (complex memrefs cast to a real view)."""
        typ = ref.type
        assert isinstance(typ, MemRefType)
        view_type, is_complex = buffer_memref_type(typ.element_type, typ.get_shape())
        if not is_complex:
            return Buffer(ref, False)
        cast = UnrealizedConversionCastOp.get([ref], [view_type])
        Rewriter.insert_op(cast, InsertPoint.at_start(self.block))
        return Buffer(cast.results[0], True)

    def _forward_destinations_through_reshapes(self) -> None:
        """A returned `reshape(u)` (or a chain of them) of a computed `u` that is not
        returned itself: `u` is computed into a view of the output buffer, with
        `u`'s shape, so the reshape is a view of it and no copy is made (also
        through `prim.check`, whose result is its operand's buffer)."""
        for value, dests in list(self.destinations.items()):
            source = value
            while isinstance(source.owner, prim.ReshapeOp | prim.CheckOp):
                owner = source.owner
                source = owner.x if isinstance(owner, prim.CheckOp) else owner.operand
            if source is value or not dests or not _is_computed(source):
                continue
            if self.destinations.get(source):
                continue
            dest = dests.pop(0)
            point = (
                InsertPoint.after(dest.ref.owner)
                if isinstance(dest.ref.owner, Operation)
                else InsertPoint.at_start(self.block)
            )
            self.destinations[source] = [_reshaped(dest, prim.tensor_type_of(source), point)]

    def _alloc(self, tensor_type: TensorType) -> Buffer:
        alloc, is_complex = temporary_alloc(tensor_type)
        self.builder.insert(alloc)
        self.temporaries.append(alloc.memref)
        return Buffer(alloc.memref, is_complex)

    def _result_buffer(self, value: SSAValue) -> Buffer:
        """Where `value` is computed: its first output buffer, else a new temporary."""
        dests = self.destinations.get(value)
        buffer = dests.pop(0) if dests else self._alloc(prim.tensor_type_of(value))
        self.buffers[value] = buffer
        return buffer

    def buffer_of(self, value: SSAValue) -> Buffer:
        """The buffer holding `value` (materializing a constant on first use)."""
        if value not in self.buffers:
            if value in self.splats:
                buffer = self._alloc(prim.tensor_type_of(value))
                element = prim.element_type_of(value.type)
                scalar = constant_element(ScalarBuilder(self.builder), self.splats[value], element)
                self.loops.fill(self.builder, buffer, scalar)
                self.buffers[value] = buffer
            elif value in self.constants:
                self.buffers[value] = self._global(self.constants[value])
            else:
                raise DiagnosticException(f"no buffer for a value of type {value.type}")
        return self.buffers[value]

    def _record_constant(self, op: Operation) -> None:
        """Splats are inlined as scalars where used, others become globals on first use."""
        assert isinstance(op, prim.ConstantOp)
        array = op.to_array()
        splat = np.full_like(array, array.flat[0]) if array.size else array
        if array.size and np.array_equal(array, splat, equal_nan=True):  # NaN splats too
            self.splats[op.result] = array.flat[0].item()
        else:
            self.constants[op.result] = op

    def _global(self, op: prim.ConstantOp) -> Buffer:
        """A `memref.global` holding the constant (complex as interleaved reals)."""
        array = np.ascontiguousarray(op.to_array())
        view_type, is_complex = buffer_memref_type(
            prim.element_type_of(op.result.type), array.shape
        )
        real = array.view(np.real(array).dtype) if is_complex else array
        name = f"__tidu_const_{len(list(self.module.ops))}"
        value = DenseIntOrFPElementsAttr.from_list(
            cast(Any, TensorType(view_type.element_type, view_type.get_shape())),
            real.reshape(-1).tolist(),
        )
        self.module.body.block.add_op(
            memref.GlobalOp.get(StringAttr(name), view_type, value, constant=UnitAttr())
        )
        get = self.builder.insert(memref.GetGlobalOp(name, view_type))
        return Buffer(get.memref, is_complex)

    def _copy_remaining_outputs(self) -> None:
        for value, dests in self.destinations.items():
            for dest in dests:
                source = self.buffer_of(value)
                self.builder.insert(memref.CopyOp(source.ref, dest.ref))

    # ----- emission -----------------------------------------------------------

    def _emit_kernel(self, op: Operation) -> None:
        """The op's loop-nest kernel, or a BLAS call for a planned matrix product."""
        if isinstance(op, prim.DotGeneralOp) and (product := self.products.get(op)):
            element = prim.element_type_of(op.result.type)
            operands = [
                self._transposed_copy(self.buffer_of(value), copy, element)
                for value, copy in zip((product.lhs, product.rhs), product.call.copies, strict=True)
            ]
            out = self._result_buffer(product.result)
            emit_call(self.module, self.loops, self.builder, product.call, element, operands, out)
            return
        operands = [self._source(v) for v in op.operands]
        out = self._result_buffer(op.results[0])
        KERNELS[type(op)](self.loops, self.builder, op, operands, out)

    def _source(self, value: SSAValue) -> Source:
        """What a kernel reads `value` from: its buffer, or for an inlined index
        map a `Computed` value (the buffers it reads made here, before the
        kernel's loops)."""
        owner = value.owner
        if not (isinstance(owner, Operation) and owner in self.inlined):
            return self.buffer_of(value)
        self._prepare_reads([owner], set())
        return Computed(lambda b, idx: self._computed(b, value, idx), prim.shape_of(value))

    def _computed(self, b: Builder, value: SSAValue, idx: Index) -> Element:
        """The element of `value` at `idx`: a splat, an inlined index map's
        element computed from its operands, or a load from its buffer (made
        beforehand by `_prepare_reads`)."""
        owner = value.owner
        if value in self.splats:
            return constant_element(
                ScalarBuilder(b), self.splats[value], prim.element_type_of(value.type)
            )
        if isinstance(owner, Operation) and (index_map := self.inlined.get(owner)):
            return index_map(self.loops, b, owner, idx, lambda v, i: self._computed(b, v, i))
        return self.loops.load(b, self.buffers[value], idx)

    def _transposed_copy(
        self, buffer: Buffer, permutation: tuple[int, ...] | None, element: Attribute
    ) -> Buffer:
        """`buffer`, or a new temporary holding it transposed by `permutation`."""
        if permutation is None:
            return buffer
        shape = [buffer.shape[axis] for axis in permutation]
        copy = self._alloc(TensorType(element, shape))
        emit_transpose(self.loops, self.builder, permutation, buffer, copy)
        return copy

    def _emit_reshape(self, op: Operation) -> None:
        """A view of the operand's buffer with the result's shape (no copy)."""
        assert isinstance(op, prim.ReshapeOp)
        source = self.buffer_of(op.operand)
        typ = prim.tensor_type_of(op.result)
        self.buffers[op.result] = _reshaped(source, typ, self.builder.insertion_point)

    def _emit_check(self, op: Operation) -> None:
        """The result is the operand's buffer; an `scf.if` on the negated
        predicate calls the check's failure function (`allocation_guard`)."""
        assert isinstance(op, prim.CheckOp)
        self.buffers[op.result] = self.buffer_of(op.x)
        flag = self.builder.insert(memref.LoadOp.get(self.buffer_of(op.ok).ref, [])).res
        true = self.builder.insert(arith.ConstantOp.from_int_and_width(1, 1)).result
        failed = self.builder.insert(arith.XOrIOp(flag, true)).result
        symbol = check_failure_symbol(op.message_text)
        if SymbolTable.lookup_symbol(self.module, symbol) is None:
            self.module.body.block.add_op(func.FuncOp.external(symbol, [], []))
        block = Block()
        block.add_ops([func.CallOp(symbol, [], []), scf.YieldOp()])
        self.builder.insert(scf.IfOp(failed, [], Region(block)))

    def _emit_linalg(self, op: Operation) -> None:
        """LAPACK/CBLAS calls per matrix (`lapack.py`) on views of the buffers
        with the batch axes flattened into one."""
        batch_rank = len(prim.shape_of(op.operands[0])) - 2
        element = prim.element_type_of(op.operands[0].type)
        calls = MatrixCalls(self.module, self.loops, self.builder, element)
        operands = [self._flat_batch(self.buffer_of(v), v.type, batch_rank) for v in op.operands]
        results = [self._flat_batch(self._result_buffer(v), v.type, batch_rank) for v in op.results]
        for scratch_type in scratch_types(op):
            scratch = self._alloc(scratch_type)
            results.append(self._flat_batch(scratch, scratch_type, batch_rank))
        emit_linalg(calls, op, operands, results)

    def _flat_batch(self, buffer: Buffer, typ: Attribute, batch_rank: int) -> Buffer:
        """`buffer` (of tensor type `typ`) viewed with its leading `batch_rank` axes as one."""
        assert isinstance(typ, TensorType)
        shape = typ.get_shape()
        flat = [math.prod(shape[:batch_rank]), *shape[batch_rank:]]
        return _reshaped(
            buffer, TensorType(typ.get_element_type(), flat), self.builder.insertion_point
        )

    def _emit_scan(self, op: Operation) -> None:
        """A loop calling the body, outlined into a function (lowered later)."""
        assert isinstance(op, prim.ScanOp)
        callee = outline_region(op.body, self.module, self.function, "scan")
        self.outlined.append(callee)
        buffers = ScanBuffers(
            init=[self.buffer_of(v) for v in op.init],
            xs=[self.buffer_of(v) for v in op.xs],
            consts=[self.buffer_of(v) for v in op.consts],
            carries=[self._result_buffer(v) for v in op.carries],
            spares=[self._alloc(prim.tensor_type_of(v)) for v in op.carries],
            ys=[self._ys_buffer(op, v) for v in op.ys],
            count=self.buffer_of(op.count) if op.count is not None else None,
        )
        emit_scan(self.loops, self.builder, op, callee, buffers)

    def _ys_buffer(self, op: prim.ScanOp, y: SSAValue) -> Buffer:
        """Where a scan stacks `y`: its result buffer, or for a dynamic scan a
        tape allocated for `count` slices."""
        if op.count is None:
            return self._result_buffer(y)
        typ = _tape_buffer_type(y)
        return self._own_tape(
            y, allocate_tape(self.module, self.builder, self.buffer_of(op.count), typ)
        )

    def _own_tape(self, tape: SSAValue, ref: SSAValue) -> Buffer:
        """`ref`, a heap block, as the buffer of the tape `tape`, freed with the temporaries."""
        self.temporaries.append(ref)
        self.buffers[tape] = Buffer(ref, prim.is_complex(prim.element_type_of(tape.type)))
        return self.buffers[tape]

    def _emit_cond(self, op: Operation) -> None:
        """An `scf.if` calling one of the two branches, outlined into functions."""
        assert isinstance(op, prim.CondOp)
        on_false = outline_region(op.on_false, self.module, self.function, "cond")
        on_true = outline_region(op.on_true, self.module, self.function, "cond")
        self.outlined.extend([on_true, on_false])
        emit_cond(
            self.builder,
            self.buffer_of(op.pred),
            (on_true, on_false),
            [self.buffer_of(v) for v in op.args],
            [self._result_buffer(v) for v in op.outputs],
        )

    def _emit_while(self, op: Operation) -> None:
        """An `scf.while` calling the cond and the body, outlined into functions;
        a `prim.record_while` also fills its tapes (freed with the temporaries)."""
        assert isinstance(op, prim.WhileOp | prim.RecordWhileOp)
        body = outline_region(op.body, self.module, self.function, "while")
        before = outline_region(op.before, self.module, self.function, "while")
        self.outlined.extend([before, body])
        carry_types = [prim.tensor_type_of(v) for v in op.carries]
        recording = isinstance(op, prim.RecordWhileOp)
        tapes = list(op.tapes) if recording else []
        buffers = WhileBuffers(
            init=[self.buffer_of(v) for v in op.init],
            consts=[self.buffer_of(v) for v in op.consts],
            carries=[self._result_buffer(v) for v in op.carries],
            current=[self._alloc(t) for t in carry_types],
            following=[self._alloc(t) for t in carry_types],
            flag=self._alloc(TensorType(i1, [])),
            count=self._result_buffer(op.count) if recording else None,
            tapes=[_tape_buffer_type(tape) for tape in tapes],
        )
        refs = emit_while(self.module, self.builder, (before, body), buffers)
        for tape, ref in zip(tapes, refs, strict=True):
            self._own_tape(tape, ref)

    def _emit_cluster(self, cluster: Cluster) -> None:
        """The cluster's loop nest; the reductions it folds carried through it and
        stored once it ends."""
        reductions = [op for op in cluster.ops if is_foldable(op)]
        folded = {op.results[0] for op in reductions}
        outputs = {
            value: self._result_buffer(value)
            for value in cluster.escaping_values()
            if value not in folded
        }
        self._prepare_reads(cluster.ops, cluster.members)
        emitter = _ClusterBody(self.loops, cluster, self._computed, outputs, self.library)
        if not reductions:
            self.loops.nest(self.builder, cluster.shape, emitter.emit)
            return
        starts = [reduction_start(self.builder, op) for op in reductions]
        sizes = [len(start) for start in starts]  # a complex sum carries two values

        def body(b: Builder, ivs: Index, acc: list[SSAValue]) -> list[SSAValue]:
            values = emitter.emit(b, ivs)
            return [
                folded
                for op, mine in zip(reductions, _split(acc, sizes), strict=True)
                for folded in reduction_step(b, op, mine, values[op.operands[0]])
            ]

        totals = self.loops.reduce(self.builder, cluster.shape, sum(starts, []), body)
        for op, total in zip(reductions, _split(totals, sizes), strict=True):
            self.loops.store(self.builder, self._result_buffer(op.results[0]), [], unflatten(total))

    def _prepare_reads(self, ops: Sequence[Operation], members: set[Operation]) -> None:
        """Make the buffers of the values `ops` read from memory, before their
        loops: all but splats and the values `members` (a cluster) compute and
        read at their own indices."""
        for op in ops:
            for operand, remapped in self._reads(op):
                if operand in self.splats or (operand.owner in members and not remapped):
                    continue
                self.buffer_of(operand)


def _split(values: list[SSAValue], sizes: list[int]) -> list[list[SSAValue]]:
    """`values` cut into consecutive runs of the given `sizes`."""
    ends = list(itertools.accumulate(sizes))
    return [values[end - size : end] for size, end in zip(sizes, ends, strict=True)]


def _reshaped(buffer: Buffer, typ: TensorType, point: InsertPoint) -> Buffer:
    """A row-major view of `buffer` with the shape of `typ`, inserted at `point`."""
    view_type, is_complex = buffer_memref_type(typ.get_element_type(), typ.get_shape())
    shape = view_type.get_shape()
    strides = [int(np.prod(shape[i + 1 :])) for i in range(len(shape))]
    cast = memref.ReinterpretCastOp(buffer.ref, [], [], [], [0], shape, strides, view_type)
    Rewriter.insert_op(cast, point)
    return Buffer(cast.results[0], is_complex)


def _tape_buffer_type(tape: SSAValue) -> MemRefType:
    """The buffer type of a `prim.record_while` tape (`memref<?x...>`)."""
    typ = prim.tensor_type_of(tape)
    return buffer_memref_type(typ.get_element_type(), typ.get_shape())[0]


def _is_computed(value: SSAValue) -> bool:
    """Whether `value` is computed by an emitted prim op (not a function input or a
    constant), so it can be computed into a given buffer."""
    owner = value.owner
    return (
        isinstance(owner, Operation)
        and type(owner) in LOWERED_OPS
        and not isinstance(owner, (prim.ConstantOp, prim.ReshapeOp, prim.CheckOp))
    )


Handler: TypeAlias = Callable[[FunctionLowering, Operation], None]

_RECORDERS: dict[type[Operation], Handler] = {prim.ConstantOp: FunctionLowering._record_constant}
"""Prim ops that emit no code where they stand: their value is recorded for its users."""

_EMITTERS: dict[type[Operation], Handler] = {
    prim.ReshapeOp: FunctionLowering._emit_reshape,
    prim.CheckOp: FunctionLowering._emit_check,
    **dict.fromkeys(LINALG_OPS, FunctionLowering._emit_linalg),
    prim.ScanOp: FunctionLowering._emit_scan,
    prim.CondOp: FunctionLowering._emit_cond,
    prim.WhileOp: FunctionLowering._emit_while,
    prim.RecordWhileOp: FunctionLowering._emit_while,
    **dict.fromkeys(KERNELS, FunctionLowering._emit_kernel),
}
"""Prim ops emitted one at a time, outside the fused loop nests."""

LOWERED_OPS: frozenset[type[Operation]] = frozenset({*_RECORDERS, *FUSED_OPS, *_EMITTERS})
"""Every prim op `convert-prim-to-loops` lowers."""

STRUCTURAL_LOWERINGS: frozenset[type[Operation]] = LOWERED_OPS.difference(ELEMENT_RULES) | {
    prim.YieldOp
}
"""The lowered prim ops that are not elementwise (constants, broadcast, reshape, kernels,
scan, cond, while, and their regions' terminator, which becomes the outlined function's
`func.return`)."""


@dataclass
class _ClusterBody:
    """The body of a fused loop nest: every member computed once per element."""

    loops: LoopBuilder
    cluster: Cluster
    computed: Callable[[Builder, SSAValue, Index], Element]
    """The element of a value the cluster reads from outside (`FunctionLowering._computed`)."""
    outputs: dict[SSAValue, Buffer]
    library: MathLibrary

    def emit(self, b: Builder, ivs: Index) -> dict[SSAValue, Element]:
        """Compute the members at `ivs` (the reductions it folds aside), store
        the outputs; the members' values."""
        sb = ScalarBuilder(b, library=self.library)
        values: dict[SSAValue, Element] = {}

        def read(value: SSAValue, idx: Index) -> Element:
            return element(value, idx, False)

        def element(value: SSAValue, idx: Index, cache: bool) -> Element:
            if cache and value in values:
                return values[value]
            result = self.computed(b, value, idx)
            if cache:
                values[value] = result
            return result

        for op in self.cluster.ops:
            if (index_map := INDEX_MAPS.get(type(op))) is not None:
                values[op.results[0]] = index_map(self.loops, b, op, ivs, read)
            elif not is_foldable(op):
                args = [element(v, ivs, True) for v in op.operands]
                values[op.results[0]] = apply_elementwise(sb, op, args)
        for value, buffer in self.outputs.items():
            self.loops.store(b, buffer, ivs, values[value])
        return values


@dataclass(frozen=True)
class ConvertPrimToLoopsPass(ModulePass):
    """Lower the prim ops of every bufferized function to loop nests over buffers."""

    name = "convert-prim-to-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        library = MathLibrary(op)
        pending = [f for f in op.ops if isinstance(f, func.FuncOp) and not f.is_declaration]
        while pending:  # the regions of scans, conds and whiles are outlined on the way
            lowering = FunctionLowering(pending.pop(0), op, library)
            lowering.run()
            pending.extend(lowering.outlined)
