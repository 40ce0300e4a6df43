"""`parallelize-loops`: large top-level loop nests split across the cores through libgomp.

A top-level `scf.for` from 0 by 1 of a function (a fused elementwise nest, a
kernel's outer loop) whose estimated work reaches `PARALLEL_MIN_WORK` and whose
iterations write disjoint memory is outlined into two private functions:

* `@f__parK_body(captures..., %begin, %end)`: the loop over `[begin, end)`,
  taking every value it uses from outside as an argument (constants are cloned),
  so its pointers are `noalias` arguments like the parent's and it vectorizes
  the same way;
* `@f__parK(%ctx: !llvm.ptr)`: run by every thread of the team; it unpacks the
  captures from `ctx` (one 8-byte slot each), takes its share of the
  iteration space and calls the body.

The loop is replaced by stores of the captures into a stack array and
`GOMP_parallel(@f__parK, ctx, 0, 0)` (0 threads: libgomp's default,
`OMP_NUM_THREADS` or one per core; the result is the same for any team size,
except for the association of a parallel sum). Measured dispatch cost on 2
cores: about 1 µs per parallel region, against 16-90 µs for a Python thread
pool driving native chunks (GIL released), so the region lives in native code.

Elementwise results are bit-identical to the serial loop (at the sizes that
are parallelized; LLVM unrolls tiny loops of known trip count differently):
each element is computed by the same code, and the shares of a 1-D loop start
at multiples of `GRAIN` iterations, a multiple of any vector step, so every
element goes through the vector (or scalar remainder) path it would take in
the serial loop.

Safety: a loop is parallelized only if every buffer it stores to is accessed
(loaded and stored) in it only at indices whose same dimension is the loop's
induction variable itself, so different iterations touch disjoint parts of
what they write.

Reductions: a loop carrying ONE value that it only folds with `addf`,
`maximumf`, `addi` or `maxsi` (directly or through nested loops carrying it: a
sum or max to a scalar) is split too. Each thread folds its share from the
identity (-0.0, -inf, 0 or the integer type's minimum) and stores its partial
result in a stack array of `MAX_THREADS` slots (pre-filled with the identity;
the team is capped at that size); after the region the parent folds `init,
p[0], p[1], ...` in thread order. A float sum is thus reassociated (like the
vectorizer's own `reassoc` partial sums); max and integer sums (wrapping) are
exact.
Complex sums (two carried values) stay serial.

In a module that calls OpenBLAS (a matrix product, a factorization) only
loops of `NEXT_TO_OPENBLAS_MIN_WORK` run in parallel: OpenBLAS runs its
calls on its own threads, which spin for a while after each call, and a
libgomp team started next to them takes turns with them on the same cores,
which costs more than a small loop gains. On 2 cores, idle, GradBench's ht
Jacobian (gemms and parallel loops of a few thousand elements) took 1.8-2.2
ms with both pools against 0.8-1.0 ms with either one alone
(`bench/bench_runtime.py`, 2 threads); `jacrev` of tanh(A v) v on R^1000
(a gemm and elementwise loops of 10^6 elements) keeps its parallel loops.
"""

from __future__ import annotations

import functools
import math as pymath
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import cast

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, func, llvm, memref, scf
from xdsl.dialects.builtin import (
    AnyFloat,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    UnrealizedConversionCastOp,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tidu_mlir.lowering.blas import calls_openblas
from tidu_mlir.lowering.common import declare_functions, legal_type, load_system_library
from tidu_mlir.lowering.llvm_ops import POINTER

PARALLEL_MIN_WORK = 1 << 16
"""Smallest estimated work (iterations x `block_work` of the body) run in parallel;
below it (about 5 µs of serial work) the ~1 µs dispatch and the second core's
cold caches cost more than they save (`bench/time_parallel.py`)."""

NEXT_TO_OPENBLAS_MIN_WORK = 1 << 20
"""`PARALLEL_MIN_WORK` in a module calling OpenBLAS (about 80 µs of serial work:
enough to pay for waiting on cores OpenBLAS's threads spin on)."""

MAX_THREADS = 64
"""Team size cap of a parallel reduction (one stack slot per thread and result)."""

GRAIN = 1024
"""Shares of a 1-D loop start at multiples of this many iterations (bit identity)."""

_CALL_COST = 16
"""Work units of a math op or call (vector exp/sin/tanh) against 1 for arithmetic."""

_SLOT_BYTES = 8
_OMP_FUNCTIONS = {
    "GOMP_parallel": llvm.LLVMFunctionType([POINTER, POINTER, i32, i32]),
    "omp_get_thread_num": llvm.LLVMFunctionType([], i32),
    "omp_get_num_threads": llvm.LLVMFunctionType([], i32),
    "omp_get_max_threads": llvm.LLVMFunctionType([], i32),
}


GOMP_SPIN_DEFAULT = "1000"
"""libgomp's idle workers spin this many iterations, then sleep. Its default
(300,000, ~0.1 ms) keeps a core busy after every parallel loop, which on two
cores starves the OpenBLAS threads of the next matrix product (an MLP gradient
ran 4x slower); 1,000 measured best for both (docs/lowering.md)."""


@functools.cache
def libgomp_available() -> bool:
    """Load libgomp into the process once (MCJIT resolves `GOMP_parallel` there).

    `GOMP_SPINCOUNT` is set first, unless the user set it, because libgomp
    reads it when it loads."""
    os.environ.setdefault("GOMP_SPINCOUNT", GOMP_SPIN_DEFAULT)
    return load_system_library("gomp")


def _byte_size(typ: Attribute) -> int:
    """Store size of a legal scalar type (pointers and index are 8 bytes)."""
    if isinstance(typ, IntegerType | Float32Type | Float64Type):
        return max(1, typ.bitwidth // 8)
    return _SLOT_BYTES


def _static_bounds(loop: scf.ForOp) -> tuple[int, int, int] | None:
    """`(lower, upper, step)` of a loop with constant bounds."""
    bounds: list[int] = []
    for value in (loop.lb, loop.ub, loop.step):
        owner = value.owner
        if not isinstance(owner, arith.ConstantOp) or not isinstance(owner.value, IntegerAttr):
            return None
        bounds.append(owner.value.value.data)
    lower, upper, step = bounds
    return (lower, upper, step) if step > 0 else None


def _static_trip_count(loop: scf.ForOp) -> int | None:
    bounds = _static_bounds(loop)
    return None if bounds is None else max(0, -(-(bounds[1] - bounds[0]) // bounds[2]))


def block_work(block: Block) -> int:
    """Estimated work of one execution of `block` (nested static loops multiply)."""
    cost = 0
    for op in block.ops:
        if isinstance(op, scf.ForOp):
            trips = _static_trip_count(op)
            cost += (trips if trips is not None else 1) * block_work(op.body.block)
        elif isinstance(op, func.CallOp) or op.name.startswith("math."):
            cost += _CALL_COST
        elif not isinstance(op, arith.ConstantOp | scf.YieldOp):
            cost += 1
    return cost


def _iterations_disjoint(loop: scf.ForOp) -> bool:
    """Whether every buffer stored in `loop` is accessed only at `[..., iv (dim d), ...]`."""
    iv = loop.body.block.args[0]
    accesses: dict[SSAValue, list[memref.LoadOp | memref.StoreOp]] = {}
    for op in loop.body.walk():
        if isinstance(op, memref.LoadOp | memref.StoreOp):
            accesses.setdefault(op.memref, []).append(op)
        elif isinstance(op, memref.CopyOp):
            return False
    for ops in accesses.values():
        if not any(isinstance(op, memref.StoreOp) for op in ops):
            continue
        dims = [{d for d, index in enumerate(op.indices) if index == iv} for op in ops]
        if not set.intersection(*dims):
            return False
    return True


Combine = arith.AddfOp | arith.MaximumfOp | arith.AddiOp | arith.MaxSIOp
_FLOAT_IDENTITY = {arith.AddfOp: -0.0, arith.MaximumfOp: float("-inf")}
"""The identity of the float combining ops (the integer ones: see `_identity`)."""


def _combiner(loop: scf.ForOp, i: int) -> Combine | None:
    """The op folding loop-carried value `i` (`acc = acc + x` or `max(acc, x)`, possibly
    through nested loops carrying it), if that is all the loop does with it."""
    acc = loop.body.block.args[1 + i]
    yielded = loop.body.block.ops.last
    assert isinstance(yielded, scf.YieldOp)
    value = yielded.operands[i]
    if not (acc.has_one_use() and value.has_one_use()):
        return None
    owner = value.owner
    if isinstance(owner, Combine) and acc in owner.operands and owner.lhs is not owner.rhs:
        return owner
    if isinstance(owner, scf.ForOp):
        k = owner.results.index(value)
        return _combiner(owner, k) if owner.iter_args[k] is acc else None
    return None


def _reduction(loop: scf.ForOp) -> list[Combine] | None:
    """The combining op of the loop-carried value (an empty list without one), or
    None if it is not a plain sum or max or there are several (complex sums: the
    outlined body returns its partial result, and a function has one result)."""
    if len(loop.iter_args) > 1:
        return None
    combiners = [_combiner(loop, i) for i in range(len(loop.iter_args))]
    if any(c is None for c in combiners):
        return None
    return [c for c in combiners if c is not None]


def _identity(b: Builder, combiner: Combine) -> SSAValue:
    """The value each thread's partial result starts from: 0 for sums, the
    smallest value for maxima (-inf, or the integer type's minimum)."""
    typ = combiner.result.type
    if isinstance(typ, IntegerType):
        width = typ.width.data
        value = -(1 << (width - 1)) if isinstance(combiner, arith.MaxSIOp) else 0
        return b.insert(arith.ConstantOp(IntegerAttr(value, typ))).result
    value = _FLOAT_IDENTITY[type(combiner)]
    return b.insert(arith.ConstantOp(FloatAttr(value, cast(AnyFloat, typ)))).result


def _combined(combiner: Combine, acc: SSAValue, partial: SSAValue) -> Operation:
    """`acc (+) partial` with the combining op of `combiner` (and its fast-math flags)."""
    if isinstance(combiner, arith.AddfOp | arith.MaximumfOp):
        return type(combiner)(acc, partial, combiner.fastmath)
    return type(combiner)(acc, partial)


def _captures(loop: scf.ForOp) -> list[SSAValue]:
    """Values used inside the body of `loop` but defined outside it, in first-use order."""
    ops = list(loop.body.walk())
    inside = set(ops)
    blocks = {*loop.body.blocks, *(block for op in ops for r in op.regions for block in r.blocks)}
    found: dict[SSAValue, None] = {}
    for op in ops:
        for operand in op.operands:
            owner = operand.owner
            if (owner not in inside) if isinstance(owner, Operation) else (owner not in blocks):
                found.setdefault(operand)
    return list(found)


def _is_clonable(value: SSAValue) -> bool:
    """Constants and globals are re-created in the outlined function, not passed."""
    return isinstance(value.owner, arith.ConstantOp | memref.GetGlobalOp)


@dataclass
class _Outliner:
    """Outlines the parallel loops of one function (see the module docstring)."""

    module: ModuleOp
    function: func.FuncOp
    count: int = 0

    def outline(self, loop: scf.ForOp, trips: int) -> None:
        name = f"{self.function.sym_name.data}__par{self.count}"
        self.count += 1
        captures = [v for v in _captures(loop) if not _is_clonable(v)]
        combiners = _reduction(loop)
        assert combiners is not None
        body = self._body_function(f"{name}_body", loop, captures, combiners)
        grain = GRAIN if not any(isinstance(op, scf.ForOp) for op in loop.body.block.ops) else 1
        self._thread_function(name, body, captures, trips, grain)
        self._dispatch(loop, name, captures, combiners)

    def _body_function(
        self, name: str, loop: scf.ForOp, captures: list[SSAValue], combiners: list[Combine]
    ) -> func.FuncOp:
        """`@name(captures..., begin, end)`: the loop over `[begin, end)`; a reduction
        starts from the identity and returns its partial results."""
        block = Block(arg_types=[*(v.type for v in captures), IndexType(), IndexType()])
        mapping: dict[SSAValue, SSAValue] = dict(zip(captures, block.args, strict=False))
        b = Builder(InsertPoint.at_end(block))
        for value in _captures(loop):
            if value not in mapping:
                owner = value.owner
                assert isinstance(owner, Operation)
                mapping[value] = b.insert(owner.clone()).results[0]
        begin, end = block.args[-2:]
        region = Region()
        loop.body.clone_into(region, value_mapper=mapping)
        inits = [_identity(b, c) for c in combiners]
        new_loop = b.insert(scf.ForOp(begin, end, self._index(b, 1), inits, region))
        b.insert(func.ReturnOp(*new_loop.results))
        return self._add_function(name, block, [r.type for r in new_loop.results])

    def _thread_function(
        self, name: str, body: func.FuncOp, captures: list[SSAValue], trips: int, grain: int
    ) -> None:
        """`@name(ctx)`: this thread's share of `[0, trips)`, in whole `grain`s."""
        block = Block(arg_types=[POINTER])
        b = Builder(InsertPoint.at_end(block))
        ctx = block.args[0]
        args = [self._unpack(b, ctx, slot, value) for slot, value in enumerate(captures)]
        thread = self._omp_index(b, "omp_get_thread_num")
        threads = self._omp_index(b, "omp_get_num_threads")
        grains = self._index(b, pymath.ceil(trips / grain))
        limit = self._index(b, trips)

        def start(t: SSAValue) -> SSAValue:
            share = b.insert(arith.DivUIOp(b.insert(arith.MuliOp(t, grains)), threads))
            scaled = b.insert(arith.MuliOp(share, self._index(b, grain)))
            return b.insert(arith.MinUIOp(scaled, limit)).result

        begin = start(thread)
        end = start(b.insert(arith.AddiOp(thread, self._index(b, 1))).result)
        results = body.function_type.outputs.data
        call = b.insert(func.CallOp(body.sym_name.data, [*args, begin, end], results))
        position = b.insert(arith.IndexCastOp(thread, i64)).result
        for i, partial in enumerate(call.res):
            partials = self._load_pointer(b, ctx, len(captures) + i)
            b.insert(llvm.StoreOp(partial, self._element(b, partials, position, partial.type)))
        b.insert(func.ReturnOp())
        self._add_function(name, block)

    def _dispatch(
        self, loop: scf.ForOp, name: str, captures: list[SSAValue], combiners: list[Combine]
    ) -> None:
        """Replace `loop` by filling the context array and calling `GOMP_parallel`;
        a reduction then folds the per-thread partial results, in thread order."""
        entry = self.function.body.block
        size = llvm.ConstantOp(IntegerAttr(max(1, len(captures) + len(combiners)), i64), i64)
        ctx = llvm.AllocaOp(size, i64, alignment=8)
        Rewriter.insert_op([size, ctx], InsertPoint.at_start(entry))
        b = Builder(InsertPoint.before(loop))
        for slot, value in enumerate(captures):
            typ = legal_type(value.type)
            if typ != value.type:
                value = b.insert(UnrealizedConversionCastOp.get([value], [typ])).results[0]
            if typ == POINTER:
                value, typ = b.insert(llvm.PtrToIntOp(value)).results[0], i64
            b.insert(llvm.StoreOp(value, self._slot(b, ctx.res, slot, typ)))
        partials = [self._partials(b, entry, c) for c in combiners]
        for slot, array in enumerate(partials, len(captures)):
            address = b.insert(llvm.PtrToIntOp(array)).results[0]
            b.insert(llvm.StoreOp(address, self._slot(b, ctx.res, slot, i64)))
        function = b.insert(llvm.AddressOfOp(name, POINTER))
        zero = b.insert(arith.ConstantOp(IntegerAttr(0, i32))).result
        threads = zero  # libgomp's default team size
        if combiners:  # at most MAX_THREADS, one partial result slot each
            call = b.insert(llvm.CallOp("omp_get_max_threads", return_type=i32))
            assert call.returned is not None
            cap = b.insert(arith.ConstantOp(IntegerAttr(MAX_THREADS, i32)))
            threads = b.insert(arith.MinUIOp(call.returned, cap)).result
        b.insert(llvm.CallOp("GOMP_parallel", function, ctx.res, threads, zero))
        if combiners:
            totals = self._fold(b, loop, combiners, partials)
            Rewriter.replace_op(loop, [], totals)
        else:
            Rewriter.erase_op(loop)

    def _partials(self, b: Builder, entry: Block, combiner: Combine) -> SSAValue:
        """A stack array of `MAX_THREADS` partial results, filled with the identity."""
        typ = combiner.result.type
        size = llvm.ConstantOp(IntegerAttr(MAX_THREADS, i64), i64)
        array = llvm.AllocaOp(size, typ, alignment=8)
        Rewriter.insert_op([size, array], InsertPoint.at_start(entry))
        identity = _identity(b, combiner)

        def fill(bb: Builder, t: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
            position = bb.insert(arith.IndexCastOp(t, i64)).result
            bb.insert(llvm.StoreOp(identity, self._element(bb, array.res, position, typ)))
            return []

        self._for(b, MAX_THREADS, [], fill)
        return array.res

    def _fold(
        self, b: Builder, loop: scf.ForOp, combiners: list[Combine], partials: list[SSAValue]
    ) -> list[SSAValue]:
        """`init (+) p[0] (+) p[1] ...` for each reduced value (`(+)` its combining op)."""
        inits = list(loop.iter_args)

        def step(bb: Builder, t: SSAValue, accs: list[SSAValue]) -> list[SSAValue]:
            position = bb.insert(arith.IndexCastOp(t, i64)).result
            folded: list[SSAValue] = []
            for combiner, array, acc in zip(combiners, partials, accs, strict=True):
                address = self._element(bb, array, position, acc.type)
                partial = bb.insert(llvm.LoadOp(address, acc.type)).dereferenced_value
                folded.append(bb.insert(_combined(combiner, acc, partial)).results[0])
            return folded

        return self._for(b, MAX_THREADS, inits, step)

    def _for(
        self,
        b: Builder,
        trips: int,
        inits: list[SSAValue],
        body: Callable[[Builder, SSAValue, list[SSAValue]], list[SSAValue]],
    ) -> list[SSAValue]:
        block = Block(arg_types=[IndexType(), *(v.type for v in inits)])
        inner = Builder(InsertPoint.at_end(block))
        inner.insert(scf.YieldOp(*body(inner, block.args[0], list(block.args[1:]))))
        lower, upper, one = (self._index(b, v) for v in (0, trips, 1))
        return list(b.insert(scf.ForOp(lower, upper, one, inits, block)).results)

    def _unpack(self, b: Builder, ctx: SSAValue, slot: int, value: SSAValue) -> SSAValue:
        """Capture `value` read back from its slot, with its original type."""
        typ = legal_type(value.type)
        if typ == POINTER:
            loaded = self._load_pointer(b, ctx, slot)
        else:
            loaded = b.insert(llvm.LoadOp(self._slot(b, ctx, slot, typ), typ)).dereferenced_value
        if typ == value.type:
            return loaded
        return b.insert(UnrealizedConversionCastOp.get([loaded], [value.type])).results[0]

    @staticmethod
    def _slot(b: Builder, ctx: SSAValue, slot: int, typ: Attribute) -> SSAValue:
        """The address of 8-byte slot `slot` of `ctx`, typed for a `typ` access (xDSL's
        translation keeps llvmlite's typed pointers: the GEP is over `typ` itself,
        and pointers travel as i64)."""
        index = slot * _SLOT_BYTES // _byte_size(typ)
        return b.insert(llvm.GEPOp(ctx, [index], typ, inbounds=True)).result

    def _load_pointer(self, b: Builder, ctx: SSAValue, slot: int) -> SSAValue:
        address = self._slot(b, ctx, slot, i64)
        loaded = b.insert(llvm.LoadOp(address, i64)).dereferenced_value
        return b.insert(llvm.IntToPtrOp(loaded)).results[0]

    @staticmethod
    def _element(b: Builder, array: SSAValue, position: SSAValue, typ: Attribute) -> SSAValue:
        """The address of element `position` (i64) of an array of `typ`."""
        gep = llvm.GEPOp(array, [llvm.GEP_USE_SSA_VAL], typ, ssa_indices=[position], inbounds=True)
        return b.insert(gep).result

    @staticmethod
    def _index(b: Builder, value: int) -> SSAValue:
        return b.insert(arith.ConstantOp(IntegerAttr(value, IndexType()))).result

    @staticmethod
    def _omp_index(b: Builder, name: str) -> SSAValue:
        call = b.insert(llvm.CallOp(name, return_type=i32))
        assert call.returned is not None
        return b.insert(arith.IndexCastOp(call.returned, IndexType())).result

    def _add_function(
        self, name: str, block: Block, results: Sequence[Attribute] = ()
    ) -> func.FuncOp:
        types = [arg.type for arg in block.args]
        function = func.FuncOp(
            name, (types, results), Region(block), visibility=StringAttr("private")
        )
        self.module.body.block.add_op(function)
        return function


def parallel_loops(function: func.FuncOp, min_work: int) -> Iterator[tuple[scf.ForOp, int]]:
    """The top-level loops of `function` worth and safe to run in parallel, with trip counts."""
    if function.is_declaration:
        return
    for op in list(function.body.block.ops):
        if not isinstance(op, scf.ForOp) or _reduction(op) is None:
            continue
        bounds = _static_bounds(op)
        if bounds is None or bounds[0] != 0 or bounds[2] != 1:
            continue
        trips = bounds[1]
        if trips < 2 or trips * block_work(op.body.block) < min_work:
            continue
        if _iterations_disjoint(op):
            yield op, trips


@dataclass(frozen=True)
class ParallelizeLoopsPass(ModulePass):
    """Run large top-level loops of every function on all cores (libgomp).

    Options:
        min_work: the estimated work (iterations times body cost) from which a
            loop nest runs in parallel; -1: `PARALLEL_MIN_WORK` (read when the
            pass runs).
    """

    name = "parallelize-loops"

    min_work: int = -1

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not libgomp_available():
            return
        min_work = PARALLEL_MIN_WORK if self.min_work < 0 else self.min_work
        if calls_openblas(op):
            min_work = max(min_work, NEXT_TO_OPENBLAS_MIN_WORK)
        used = False
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            outliner = _Outliner(op, function)
            for loop, trips in list(parallel_loops(function, min_work)):
                outliner.outline(loop, trips)
                used = True
        if used:
            declare_functions(op, _OMP_FUNCTIONS)
