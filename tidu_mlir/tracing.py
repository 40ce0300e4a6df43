"""Tracing Python functions of arrays into `cg.graph` fragments.

`trace_function(f, specs)` calls `f` on `Tracer`s, abstract arrays that record
every operation as a `prim` op of a new fragment (IR objects are built
directly, never printed and re-parsed). Traces nest: a transform applied inside
another trace traces its function in a trace of its own, one level deeper; a
tracer of an outer trace used there (a closure) is lifted to an extra input of
the inner fragment and bound to the outer value when the result is inlined.
Large numpy arrays the function closes over become inputs too (`const<i>`,
bound at call time), not dense constants.

The numpy-named operations on tracers live in `tidu_mlir.numpy`; the operators
of `Tracer` (`tidu_mlir.array_operators`) call them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue

from tidu_mlir.array_operators import ArrayOperators
from tidu_mlir.dialects import cg, prim
from tidu_mlir.graph import fragment_outputs
from tidu_mlir.tree_util import PyTreeDef, tree_flatten, tree_leaves, tree_structure
from tidu_mlir.types import numpy_dtype

INEXACT_DTYPES = tuple(np.dtype(d) for d in (np.float32, np.float64, np.complex64, np.complex128))
"""The dtypes of values that carry tangents (what `grad` differentiates)."""
TRACEABLE_DTYPES = (*INEXACT_DTYPES, *(np.dtype(d) for d in (np.int32, np.int64, np.bool_)))
"""Every dtype a traced array may have: integers and booleans are traced but
never differentiated."""

_WIDENED_DTYPES = {
    np.dtype(d): np.dtype(w)
    for d, w in [
        (np.int8, np.int32),
        (np.int16, np.int32),
        (np.uint8, np.int32),
        (np.uint16, np.int32),
        (np.uint32, np.int64),
    ]
}
"""Integer dtypes tidu has no element type for, and the signed type that holds
all their values (an image of uint8 pixels is traced as int32)."""


def traceable_dtype(dtype: np.dtype) -> np.dtype:
    """The traceable dtype holding every value of `dtype` (itself, or a wider
    signed integer type); a TypeError for anything else (strings, objects,
    uint64, float16)."""
    if dtype in TRACEABLE_DTYPES:
        return dtype
    if dtype in _WIDENED_DTYPES:
        return _WIDENED_DTYPES[dtype]
    raise TypeError(
        f"has dtype {dtype}; tidu traces float32, float64, complex64, complex128, "
        "int32, int64 and bool arrays (convert with .astype)"
    )


def as_traceable_array(value: Any) -> np.ndarray:
    """`value` as a numpy array of a traceable dtype (`traceable_dtype`)."""
    array = np.asarray(value)
    dtype = traceable_dtype(array.dtype)
    return array if dtype == array.dtype else array.astype(dtype)


class TracingError(TypeError):
    """A traced function did something that cannot be recorded."""


@dataclass(frozen=True)
class ArraySpec:
    """The abstract value of an argument: shape and dtype."""

    shape: tuple[int, ...]
    dtype: np.dtype

    @staticmethod
    def of(value: Any, name: str) -> ArraySpec:
        """The spec of a concrete argument or a tracer; containers are refused
        (a tuple of arrays is a pytree, never stacked)."""
        if isinstance(value, Tracer):
            return ArraySpec(value.shape, value.dtype)
        if not tree_structure(value).is_leaf():
            raise TypeError(
                f"argument {name} is a {type(value).__name__} (a pytree of "
                f"{tree_structure(value).num_leaves} leaves), not an array"
            )
        try:
            array = as_traceable_array(value)
        except TypeError as error:
            raise TypeError(f"argument {name} {error}") from None
        return ArraySpec(tuple(array.shape), array.dtype)

    @staticmethod
    def of_value(value: SSAValue) -> ArraySpec:
        """The spec of a tensor-typed SSA value."""
        t = value.type
        assert isinstance(t, TensorType), f"{t} is not a tensor type"
        return ArraySpec(tuple(t.get_shape()), numpy_dtype(t.get_element_type()))

    @property
    def tensor_type(self) -> TensorType:
        return TensorType(prim.element_type_of_dtype(self.dtype), self.shape)


@dataclass(eq=False)
class Trace:
    """One fragment under construction."""

    level: int
    block: Block
    inputs: list[cg.InputOp] = field(default_factory=list)
    closures: list[tuple[Tracer, cg.InputOp]] = field(default_factory=list)
    captured: list[tuple[np.ndarray, cg.InputOp]] = field(default_factory=list)
    """Large arrays the function closes over, as inputs `const<i>` (`capture`)."""
    _captured_by_id: dict[tuple[int, str], tuple[Tracer, Any]] = field(default_factory=dict)
    _lifted: dict[int, Tracer] = field(default_factory=dict)
    _small_constants: dict[tuple[str, tuple[int, ...], bytes], Tracer] = field(default_factory=dict)

    policy: StringAttr | None = None
    """The unzip policy of the `td.checkpoint` region being traced, if any."""

    def emit(self, op: Operation) -> Operation:
        """Append `op` to the fragment, tagged with the region's policy."""
        if self.policy is not None:
            op.attributes[cg.POLICY_ATTR_NAME] = self.policy
        self.block.add_op(op)
        return op

    def call_in_region(self, policy: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """`fn(*args, **kwargs)` with the ops it emits tagged with the unzip
        policy `policy` (a `td.checkpoint` region). As in `jax.checkpoint`, the
        region's results are the enclosing policy's to save: their ops get the
        outer policy back, and the region's in `cg.derived_policy` for the ops
        `linearize` derives from them."""
        region = StringAttr(policy)
        outer, self.policy = self.policy, region
        try:
            result = fn(*args, **kwargs)
        finally:
            self.policy = outer
        for leaf in tree_leaves(result):
            op = leaf.value.owner if isinstance(leaf, Tracer) and leaf.trace is self else None
            if isinstance(op, Operation) and op.attributes.get(cg.POLICY_ATTR_NAME) is region:
                op.attributes[cg.DERIVED_POLICY_ATTR_NAME] = region
                if outer is None:
                    del op.attributes[cg.POLICY_ATTR_NAME]
                else:
                    op.attributes[cg.POLICY_ATTR_NAME] = outer
        return result

    def new_input(self, key: cg.InputKey, spec: ArraySpec) -> Tracer:
        """Add a `cg.input` after the existing ones."""
        op = cg.InputOp(key, spec.tensor_type)
        if self.inputs:
            self.block.insert_op_after(op, self.inputs[-1])
        else:
            _insert_first(self.block, op)
        self.inputs.append(op)
        return Tracer(op.result, self)

    def capture(self, value: Any, array: np.ndarray) -> Tracer:
        """`array` (made from `value`, a large array the function closes over)
        as an input `const<i>` bound at call time rather than a dense constant
        in the IR: compile time does not grow with its size, and the compiled
        code serves any value of its shape. It is a snapshot (later changes to
        `value` are not seen, as for a constant); each object is captured once."""
        key = (id(value), array.dtype.str)
        known = self._captured_by_id.get(key)
        if known is None:
            spec = ArraySpec(array.shape, array.dtype)
            tracer = self.new_input(cg.KeyAttr(f"const{len(self.captured)}"), spec)
            self.captured.append((np.array(array, copy=True), self.inputs[-1]))
            known = self._captured_by_id[key] = (tracer, value)  # `value` kept: its id stays its
        return known[0]

    def adopt(self, value: Tracer) -> Tracer:
        """`value` as a tracer of this trace: itself, or lifted from an outer trace."""
        if value.trace is self:
            return value
        if value.trace.level > self.level:
            raise TracingError(
                "a traced value escaped the transform that created it (a leaked tracer)"
            )
        lifted = self._lifted.get(id(value))
        if lifted is None:
            index = len(self.closures)
            lifted = self.new_input(cg.KeyAttr(f"closure{index}"), ArraySpec.of(value, "closure"))
            self.closures.append((value, self.inputs[-1]))
            self._lifted[id(value)] = lifted
        return lifted


_state = threading.local()


def _trace_stack() -> list[Trace]:
    if not hasattr(_state, "stack"):
        _state.stack = []
    return _state.stack


@contextmanager
def _active(trace: Trace) -> Iterator[None]:
    stack = _trace_stack()
    stack.append(trace)
    try:
        yield
    finally:
        stack.pop()


class Tracer(ArrayOperators):
    """An abstract array inside a trace: an SSA value with numpy's operators
    (implemented by `tidu_mlir.numpy`, which binds itself to this class).

    A `weak` tracer promotes like a Python number (JAX's weak types): the
    integer index of `fori_loop` times a float32 array stays float32."""

    __slots__ = ("value", "trace", "weak")

    def __init__(self, value: SSAValue, trace: Trace, weak: bool = False):
        self.value = value
        self.trace = trace
        self.weak = weak

    @property
    def at(self) -> Any:
        """JAX's functional index updates: `x.at[index].set(values)`, `.add`, ..."""
        return self._functions.IndexUpdateHelper(self)

    @property
    def tensor_type(self) -> TensorType:
        t = self.value.type
        assert isinstance(t, TensorType)
        return t

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.tensor_type.get_shape())

    @property
    def dtype(self) -> np.dtype:
        return numpy_dtype(self.tensor_type.get_element_type())

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d traced array")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"Tracer({self.tensor_type}, level={self.trace.level})"

    def __bool__(self) -> bool:
        raise TracingError(
            "the truth value of a traced array is not known while tracing: Python `if`, "
            "`while`, `and`/`or` on traced values cannot be recorded; use tnp.where "
            "(or tnp.maximum/tnp.minimum) instead"
        )

    def __float__(self) -> float:
        raise TracingError("float() of a traced array is not known while tracing")

    def __int__(self) -> int:
        raise TracingError("int() of a traced array is not known while tracing")

    __index__ = __int__

    def __array__(self, *args: object, **kwargs: object) -> np.ndarray:
        raise TracingError(
            "a traced array cannot become a numpy array; use tidu_mlir.numpy functions "
            "(import tidu_mlir.numpy as tnp) inside traced functions"
        )


def innermost_trace() -> Trace | None:
    """The trace being built by the innermost transform running (None outside any)."""
    stack = _trace_stack()
    return stack[-1] if stack else None


def current_trace(*values: Any) -> Trace | None:
    """The innermost trace among the tracers in `values` (None when there are none)."""
    traces = [v.trace for v in values if isinstance(v, Tracer)]
    return max(traces, key=lambda t: t.level) if traces else None


SMALL_CONSTANT_SIZE = 16
"""Constants up to this many elements are made once per trace and reused."""

CAPTURED_CONSTANT_SIZE = 1024
"""Constants above this many elements become inputs bound at call time
(`Trace.capture`), not dense constants in the IR."""


def constant(trace: Trace, value: Any, dtype: np.dtype) -> Tracer:
    """A constant of the given dtype (scalars stay 0-d; callers broadcast).

    Small constants (the Python scalars of `x * 2.0 + 1.0`) are emitted once
    per trace: a deep chain would otherwise spend most of its tracing time
    building identical `prim.constant` ops."""
    array = np.asarray(value, dtype=dtype)
    if array.size > CAPTURED_CONSTANT_SIZE:
        return trace.capture(value, array)
    key = (array.dtype.str, array.shape, array.tobytes())
    small = array.size <= SMALL_CONSTANT_SIZE
    if small and (known := trace._small_constants.get(key)) is not None:
        return known
    tensor_type = TensorType(prim.element_type_of_dtype(array.dtype), array.shape)
    op = prim.ConstantOp.from_value(array, tensor_type)
    trace.emit(op)
    tracer = Tracer(op.result, trace)
    if small:
        trace._small_constants[key] = tracer
    return tracer


def as_tracer(trace: Trace, value: Any) -> Tracer:
    """`value` as a tracer of `trace`: a tracer adopted (lifted from an outer
    trace if need be), a concrete array made a constant of its own dtype."""
    if isinstance(value, Tracer):
        return trace.adopt(value)
    array = as_traceable_array(value)
    return constant(trace, array, array.dtype)


def emit(trace: Trace, op: Operation) -> Tracer:
    """Append a single-result op and wrap its result."""
    trace.emit(op)
    return Tracer(op.results[0], trace)


@dataclass
class TracedFunction:
    """A function traced into a module holding one `cg.graph` (one output per leaf)."""

    module: ModuleOp
    graph: cg.GraphOp
    input_specs: tuple[ArraySpec, ...]
    out_treedef: PyTreeDef
    """The pytree structure of the results (`tidu_mlir.tree_util`)."""
    closures: list[tuple[Tracer, cg.InputOp]]
    captured: list[tuple[np.ndarray, cg.InputOp]]

    @property
    def bound_input_count(self) -> int:
        """How many inputs follow the arguments: closures and captured arrays,
        bound by the caller (`Staged.call`), never mapped or differentiated."""
        return len(self.closures) + len(self.captured)

    @property
    def output_count(self) -> int:
        return len(fragment_outputs(self.graph))

    @property
    def out_tree(self) -> Any:
        """The nesting of the results as plain values: None for one leaf, else
        `(node type, (children...))` (e.g. `(tuple, (None, None))` for a pair)."""
        return _nesting(self.out_treedef)


def _nesting(treedef: PyTreeDef) -> Any:
    if treedef.is_leaf():
        return None
    return treedef.type, tuple(_nesting(child) for child in treedef.children())


def trace_function(
    f: Callable[..., Any], specs: Sequence[ArraySpec], name: str = "f"
) -> TracedFunction:
    """Trace `f` on abstract arguments into `cg.graph @name` with inputs `arg0, arg1, ...`.

    `f`'s result may be any pytree (`tidu_mlir.tree_util`): one output per leaf."""
    block = Block()
    graph = cg.GraphOp(name, Region(block))
    module = ModuleOp([graph])
    trace = Trace(level=len(_trace_stack()) + 1, block=block)
    arguments = [trace.new_input(cg.KeyAttr(f"arg{i}"), spec) for i, spec in enumerate(specs)]
    with _active(trace):
        result = f(*arguments)
    outputs, out_tree = tree_flatten(result)
    values = [_as_output(trace, value, index) for index, value in enumerate(outputs)]
    block.add_op(cg.OutputOp(values))
    return TracedFunction(module, graph, tuple(specs), out_tree, trace.closures, trace.captured)


def _insert_first(block: Block, op: Operation) -> None:
    first = block.first_op
    if first is None:
        block.add_op(op)
    else:
        block.insert_op_before(op, first)


def _as_output(trace: Trace, value: Any, index: int) -> SSAValue:
    if isinstance(value, Tracer):
        return trace.adopt(value).value
    try:
        array = as_traceable_array(value)
    except TypeError:
        raise TracingError(f"output {index} is a {type(value).__name__}, not an array") from None
    return constant(trace, array, array.dtype).value
