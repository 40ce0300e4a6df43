"""Loop-nest and buffer-access builders shared by the prim kernels.

`Buffer` is a memref holding a tensor: real tensors have the tensor's shape and
element type; complex tensors are viewed as a real memref with a trailing
dimension of 2 (numpy's interleaved layout), so element access loads or stores
an `(re, im)` pair. A `Computed` value has no buffer: loading one of its
elements computes it (an index map inlined into the kernel reading it).
`LoopBuilder` creates `scf.for` nests over static shapes,
with loop-carried accumulators for reductions, and caches `index` constants at
the start of the function.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from xdsl.builder import Builder
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType
from xdsl.ir import Attribute, Block, SSAValue
from xdsl.rewriter import InsertPoint

from tidu_mlir.dialects import prim
from tidu_mlir.lowering.scalar import Element

Index = list[SSAValue]


@dataclass(frozen=True)
class Buffer:
    """A memref holding a tensor; `is_complex` means a trailing (re, im) axis."""

    ref: SSAValue
    is_complex: bool

    @property
    def shape(self) -> tuple[int, ...]:
        typ = self.ref.type
        assert isinstance(typ, MemRefType)
        shape = tuple(typ.get_shape())
        return shape[:-1] if self.is_complex else shape


@dataclass(frozen=True)
class Computed:
    """A tensor no buffer holds: `element(builder, index)` computes the element
    at `index` where it is loaded."""

    element: Callable[[Builder, Index], Element]
    shape: tuple[int, ...]


Source: TypeAlias = Buffer | Computed
"""What a kernel reads an operand from."""


class LoopBuilder:
    """Builds loops and index arithmetic; constants go to the function's entry."""

    def __init__(self, entry: Block):
        self._entry = entry
        self._constants: dict[int, SSAValue] = {}
        self._values: dict[SSAValue, int] = {}

    def index(self, value: int) -> SSAValue:
        """An `index` constant, created once per function at its start."""
        if value not in self._constants:
            op = arith.ConstantOp(IntegerAttr(value, IndexType()))
            if (first := self._entry.first_op) is not None:
                self._entry.insert_op_before(op, first)
            else:
                self._entry.add_op(op)
            self._constants[value] = op.result
            self._values[op.result] = value
        return self._constants[value]

    def affine(self, b: Builder, iv: SSAValue, scale: int, offset: int) -> SSAValue:
        """`iv * scale + offset` as index arithmetic (folded when trivial, or
        when `iv` is one of this builder's constants)."""
        if (constant := self._values.get(iv)) is not None:
            return self.index(constant * scale + offset)
        value = iv
        if scale != 1:
            value = b.insert(arith.MuliOp(value, self.index(scale))).result
        if offset:
            value = b.insert(arith.AddiOp(value, self.index(offset))).result
        return value

    def nest(
        self, b: Builder, shape: Sequence[int], body: Callable[[Builder, Index], object]
    ) -> None:
        """Run `body(builder, ivs)` for every index of `shape` (row-major nest;
        what it returns is ignored)."""
        ivs: Index = []
        for size in shape:
            block = Block(arg_types=[IndexType()])
            yield_op = scf.YieldOp()
            block.add_op(yield_op)
            b.insert(scf.ForOp(self.index(0), self.index(size), self.index(1), [], block))
            ivs.append(block.args[0])
            b = Builder(InsertPoint.before(yield_op))
        body(b, ivs)

    def reduce(
        self,
        b: Builder,
        shape: Sequence[int],
        init: Sequence[SSAValue],
        body: Callable[[Builder, Index, list[SSAValue]], list[SSAValue]],
    ) -> list[SSAValue]:
        """Fold `body(builder, ivs, acc) -> acc` over `shape`; the final accumulators."""
        if not shape:
            return body(b, [], list(init))
        types = [v.type for v in init]
        block = Block(arg_types=[IndexType(), *types])
        loop = b.insert(scf.ForOp(self.index(0), self.index(shape[0]), self.index(1), init, block))
        inner = Builder(InsertPoint.at_end(block))
        iv, acc = block.args[0], list(block.args[1:])
        result = self.reduce(inner, shape[1:], acc, lambda bb, ivs, a: body(bb, [iv, *ivs], a))
        inner.insert(scf.YieldOp(*result))
        return list(loop.results)

    def fill(self, b: Builder, buffer: Buffer, value: Element) -> None:
        """Store `value` to every element of `buffer`."""
        self.nest(b, buffer.shape, lambda bb, ivs: self.store(bb, buffer, ivs, value))

    def load(self, b: Builder, buffer: Source, idx: Index) -> Element:
        if isinstance(buffer, Computed):
            return buffer.element(b, idx)
        if not buffer.is_complex:
            return b.insert(memref_load(buffer.ref, idx)).res
        re = b.insert(memref_load(buffer.ref, [*idx, self.index(0)])).res
        im = b.insert(memref_load(buffer.ref, [*idx, self.index(1)])).res
        return re, im

    def store(self, b: Builder, buffer: Buffer, idx: Index, value: Element) -> None:
        if not buffer.is_complex:
            assert isinstance(value, SSAValue)
            b.insert(memref_store(value, buffer.ref, idx))
            return
        assert isinstance(value, tuple)
        for part, component in enumerate(value):
            b.insert(memref_store(component, buffer.ref, [*idx, self.index(part)]))


def memref_load(ref: SSAValue, idx: Index) -> memref.LoadOp:
    """`memref.LoadOp.get(ref, idx)`, built with `create` (the kernels make
    thousands; the IRDL constructor checks its arguments, ~4x the time)."""
    memref_type = ref.type
    assert isinstance(memref_type, MemRefType)
    return memref.LoadOp.create(operands=[ref, *idx], result_types=[memref_type.element_type])


def memref_store(value: SSAValue, ref: SSAValue, idx: Index) -> memref.StoreOp:
    """`memref.StoreOp.get(value, ref, idx)`, built with `create` (see `memref_load`)."""
    return memref.StoreOp.create(operands=[value, ref, *idx])


def buffer_memref_type(element: Attribute, shape: Sequence[int]) -> tuple[MemRefType, bool]:
    """The memref type of a tensor's buffer and whether it is a complex (re, im) view."""
    if prim.is_complex(element):
        return memref_type(prim.real_element_type(element), (*shape, 2)), True
    return memref_type(element, tuple(shape)), False


@functools.lru_cache(maxsize=4096)
def memref_type(element: Attribute, shape: tuple[int, ...]) -> MemRefType:
    """`MemRefType(element, shape)`, one object per distinct type: types are
    immutable, and xDSL's constructor checks the shape against a constraint it
    builds each time (~70 µs)."""
    return MemRefType(element, shape)
