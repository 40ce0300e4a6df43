"""Recording eager invocations on a tape (`docs/eager.md`).

A frontend runs each operation concretely, then records the primitive graph of
that invocation with `Recorder.record_graph`. Each recorded invocation is one
`RecordedGraph` (a tape node): a one-op graph for a primitive, a larger graph
for a composite operation. Values are known by *user-visible keys*
(`ValueKey`): cotangents are accumulated per key, so one value used twice (x·x)
gets the sum of both contributions. Keys come from a `KeySource` (any
hashable will do: the `Tensor` frontend counts with ints).
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import FrozenInstanceError
from operator import itemgetter
from types import MappingProxyType
from typing import Any, TypeAlias

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import SSAValue

from tidu_mlir.config import LRUCache
from tidu_mlir.dialects import cg
from tidu_mlir.graph import fragment_inputs, fragment_outputs

ValueKey: TypeAlias = Hashable
"""A user-visible value key (a `cg.KeyAttr` from a `KeySource` in this package)."""

Operand: TypeAlias = Any
"""A concrete value the downstream runtime owns (a numpy array in `Tensor`)."""


class KeySource:
    """Hands out fresh, collision-free input keys: `#cg.key<"{prefix}{n}">`.

    Every source gets its own prefix, so keys of two sources never collide.
    """

    _sources = itertools.count()

    def __init__(self, prefix: str | None = None):
        self.prefix = prefix if prefix is not None else f"eager{next(KeySource._sources)}_"
        self._counter = itertools.count()

    def fresh_input_key(self) -> cg.KeyAttr:
        """A key never returned before by this source."""
        return _key_attr(f"{self.prefix}{next(self._counter)}")


def _key_attr(name: str) -> cg.KeyAttr:
    """`cg.KeyAttr(name)`, skipping xDSL's verification of attributes built
    right here from a str (valid by construction).

    Verification costs several µs per attribute, and a recorder makes a key
    for every recorded value (the `Tensor` frontend uses ints instead).
    """
    text = StringAttr.__new__(StringAttr)
    object.__setattr__(text, "data", name)
    key = cg.KeyAttr.__new__(cg.KeyAttr)
    object.__setattr__(key, "key_name", text)
    return key


_set = object.__setattr__


class _Frozen:
    """Immutable `__slots__` records, compared and hashed by identity."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"


class GraphInterface(_Frozen):
    """What recording needs of a graph, read from the IR once per graph.

    Hashed by identity, in C: a backward pass finds its plans by interface
    (`backward.StepKey`) where the graph op would hash in Python."""

    __slots__ = ("input_values", "output_count")
    input_values: tuple[SSAValue, ...]
    output_count: int

    def __init__(self, input_values: tuple[SSAValue, ...], output_count: int) -> None:
        _set(self, "input_values", input_values)
        _set(self, "output_count", output_count)


_interfaces: LRUCache[cg.GraphOp, GraphInterface] = LRUCache("eager_cache_size")
"""Bounded, not weak: an interface holds values of its graph, which would keep
a weak key alive forever."""


def graph_interface(graph: cg.GraphOp) -> GraphInterface:
    """The inputs (program order) and output count of `graph`, cached: walking
    xDSL blocks costs µs per op, and a recorded graph is recorded many times.
    (AD passes add derived fragments inside a graph, never inputs or outputs.)"""
    interface = _interfaces.get(graph)
    if interface is None:
        interface = GraphInterface(
            tuple(op.result for op in fragment_inputs(graph)), len(fragment_outputs(graph))
        )
        _interfaces[graph] = interface
    return interface


class _Record(tuple):
    """Immutable tape records: tuples (the cheapest object Python builds; one
    is made for every recorded value, on the per-op path) with named fields
    read by C code (`_field`), compared and hashed by identity as any object,
    refusing assignment as a frozen dataclass."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def __hash__(self) -> int:
        return object.__hash__(self)

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __repr__(self) -> str:
        fields = ", ".join(
            f"{name}={value!r}" for name, value in zip(self._fields, self, strict=True)
        )
        return f"{type(self).__name__}({fields})"


def _field(index: int) -> Any:
    """The read-only field `index` of a `_Record`."""
    return property(itemgetter(index))


class EagerInput(_Record):
    """One input of a recorded invocation.

    `key`: the user-visible key cotangents are accumulated under. `trace`: the
    tape node that produced the value (None for a leaf). `requires_grad`:
    whether cotangents flow through it. `data`: its concrete primal value,
    kept for the backward pass.
    """

    __slots__ = ()
    _fields = ("key", "trace", "requires_grad", "data")
    key: ValueKey = _field(0)
    trace: RecordedGraph | None = _field(1)
    requires_grad: bool = _field(2)
    data: Operand = _field(3)

    def __new__(
        cls, key: ValueKey, trace: RecordedGraph | None, requires_grad: bool, data: Operand
    ) -> EagerInput:
        return tuple.__new__(cls, (key, trace, requires_grad, data))


class EagerOutput(_Record):
    """One output of a recorded invocation: its key, the tape node producing it
    (None when nothing required grad), and its position in that node's outputs."""

    __slots__ = ()
    _fields = ("key", "trace", "requires_grad", "output_slot")
    key: ValueKey = _field(0)
    trace: RecordedGraph | None = _field(1)
    requires_grad: bool = _field(2)
    output_slot: int = _field(3)

    def __new__(
        cls, key: ValueKey, trace: RecordedGraph | None, requires_grad: bool, output_slot: int
    ) -> EagerOutput:
        return tuple.__new__(cls, (key, trace, requires_grad, output_slot))


_NO_VALUES: Mapping[SSAValue, Operand] = MappingProxyType({})
"""The retained values of a node that has none (shared: a node is made per op)."""

_requires_grad = itemgetter(2)
"""`EagerInput.requires_grad`, as a function."""


class RecordedGraph:
    """A tape node: a primal fragment, the inputs it was invoked with (one per
    `cg.input` of the fragment, in program order), the keys of its outputs
    (one per `cg.output` operand) and the primal values retained for replay."""

    __slots__ = (
        "graph",
        "inputs",
        "output_keys",
        "retained_values",
        "interface",
        "requires_grad_mask",
        "__weakref__",
    )

    def __init__(
        self,
        graph: cg.GraphOp,
        inputs: tuple[EagerInput, ...],
        output_keys: tuple[ValueKey, ...],
        retained_values: Mapping[SSAValue, Operand] | None = None,
        interface: GraphInterface | None = None,
        requires_grad_mask: tuple[bool, ...] | None = None,
    ) -> None:
        """`interface` and `requires_grad_mask` (per input, whether it
        requires grad) are read from `graph` and `inputs` unless given (the
        frontend knows them already, on the per-op path)."""
        self.graph = graph
        self.inputs = inputs
        self.output_keys = output_keys
        self.retained_values: Mapping[SSAValue, Operand] = (
            _NO_VALUES if retained_values is None else retained_values
        )
        self.interface: GraphInterface = graph_interface(graph) if interface is None else interface
        self.requires_grad_mask: tuple[bool, ...] = (
            tuple(map(_requires_grad, inputs)) if requires_grad_mask is None else requires_grad_mask
        )

    def __repr__(self) -> str:
        return (
            f"RecordedGraph(graph={self.graph!r}, inputs={self.inputs!r}, "
            f"output_keys={self.output_keys!r}, retained_values={self.retained_values!r})"
        )

    @property
    def input_keys(self) -> tuple[ValueKey, ...]:
        return tuple(value.key for value in self.inputs)

    def initial_data(self) -> dict[SSAValue, Operand]:
        """The known primal values, by graph value: inputs and retained values."""
        values = self.interface.input_values
        data = {value: given.data for value, given in zip(values, self.inputs, strict=True)}
        data.update(self.retained_values)
        return data


class Recorder:
    """Records eager invocations as tape nodes; output keys come from `keys`."""

    def __init__(self, keys: KeySource):
        self.keys = keys

    def record_graph(
        self,
        graph: cg.GraphOp,
        inputs: Sequence[EagerInput],
        outputs: Sequence[ValueKey] | None = None,
        retained_values: Mapping[SSAValue, Operand] | None = None,
    ) -> list[EagerOutput]:
        """Record one invocation of `graph`; one `EagerOutput` per graph output.

        `inputs`: one per `cg.input` of `graph`, in program order. `outputs`:
        the keys to give the outputs (default: fresh keys). `retained_values`:
        concrete primal values of graph values to keep for the backward pass.
        Nothing is recorded (the outputs have no trace) when no input requires
        grad.
        """
        interface = graph_interface(graph)
        output_count = interface.output_count
        if outputs is None:
            fresh = self.keys.fresh_input_key
            keys = tuple([fresh() for _ in range(output_count)])
        else:
            keys = tuple(outputs)
        if len(keys) != output_count:
            raise ValueError(f"{len(keys)} output keys for a graph with {output_count} outputs")
        if not any([value.requires_grad for value in inputs]):
            return [EagerOutput(key, None, False, slot) for slot, key in enumerate(keys)]
        expected = len(interface.input_values)
        if len(inputs) != expected:
            raise ValueError(f"{len(inputs)} eager inputs for a graph with {expected} inputs")
        node = RecordedGraph(graph, tuple(inputs), keys, dict(retained_values or {}), interface)
        return [EagerOutput(key, node, True, slot) for slot, key in enumerate(keys)]
