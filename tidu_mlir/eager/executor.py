"""The `BackwardExecutor` of the `Tensor` frontend: compiled backward graphs.

Each transposed fragment is materialized into a `func.func` and compiled once,
then reused by every later backward pass through the same (graph, seeded
outputs, inputs requiring grad), i.e. once per (op, shapes, dtypes, static
arguments) in practice: the frontend caches traced graphs per that key and the
`BackwardContext` caches the transposed fragment per graph. The compiled
function recomputes the primal values it needs from the graph inputs (the
checkpointing choice), so `execute_forward` only hands the recorded inputs
through.

"Compiled" is LLVM code for large fragments and a `NumpyProgram` (the
fragment's ops as one generated Python function of numpy calls: the
reference evaluator's values) for small ones, where a call into native code
costs more than the numpy calls themselves; the `interp` backend runs every
fragment that way.
"""

from __future__ import annotations

import functools
import itertools
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from tidu_mlir.ad import LinearizedGraph, materialize
from tidu_mlir.config import LRUCache
from tidu_mlir.dialects import cg
from tidu_mlir.dialects.prim import PrimOp
from tidu_mlir.eager.backward import BackwardContext, NodeRunner, zeros_like_value
from tidu_mlir.eager.recording import Operand, RecordedGraph
from tidu_mlir.execution import Backend, default_backend
from tidu_mlir.graph import fragment_inputs, fragment_signature
from tidu_mlir.interfaces import Evaluable, EvaluationError
from tidu_mlir.interp import coerce_array, evaluate_op
from tidu_mlir.types import numpy_dtype

Runner = Literal["llvm", "interp", "numpy"]
"""What runs a compiled backward: LLVM code, or a `NumpyProgram` (every fragment
under the `interp` backend, the small ones under `llvm`)."""


class NumpyProgram:
    """A `func.func` as one Python function of numpy calls, generated once.

    Each op becomes a call of its numpy semantics (a prim op's `reference`
    with its parameters bound, cast to the result's element type where numpy
    gives another; another op's own `evaluate`), on local variables: the
    values `evaluate_func` computes, without its per-op work (a dict keyed by
    xDSL values, operand and shape checks, one `np.errstate` per op;
    `try_backward` ignores floating-point errors once per pass instead).
    Arguments are cast to their dtypes where they differ. Ops no argument
    reaches (constants, their broadcasts) are evaluated once, here, and their
    values kept read-only.

    The function is generated from source (as `collections.namedtuple` makes
    its classes): an interpreter loop over the ops would cost ~0.3 µs per op
    more, as much as a numpy call on a small array. `run(arguments)` takes
    the arguments as a list and returns the results as a tuple. Raises
    `EvaluationError` for an op without numpy semantics.
    """

    __slots__ = ("run", "source")

    def __init__(self, function: func.FuncOp) -> None:
        block = function.body.block
        terminator = block.last_op
        assert isinstance(terminator, func.ReturnOp)
        folded: dict[SSAValue, np.ndarray] = {}
        ops: list[Operation] = []
        for op in block.ops:
            if op is terminator:
                break
            if not op.regions and all(value in folded for value in op.operands):
                evaluate_op(op, folded)
            else:
                ops.append(op)
        used = {value for op in ops for value in op.operands} | set(terminator.arguments)
        names: dict[SSAValue, str] = {}
        namespace: dict[str, Any] = {"ndarray": np.ndarray, "asarray": np.asarray, "cast": _cast}
        lines = ["def run(arguments):"]
        for index, argument in enumerate(block.args):
            names[argument] = f"a{index}"
        if block.args:
            lines.append(f"    {''.join(f'{names[arg]}, ' for arg in block.args)}= arguments")
        for argument in block.args:
            if argument in used:
                lines.append(_coerce_line(names[argument], "asarray", argument, namespace))
        for value, array in folded.items():
            if value in used:
                names[value] = f"c{len(names)}"
                # A copy with numpy's own dtype object (results computed from it
                # keep it: the dtype checks then pass by identity), shared by
                # every call, so read-only.
                constant = namespace[names[value]] = array.astype(numpy_dtype_of(value))
                constant.flags.writeable = False
        for number, op in enumerate(ops):
            results = [f"v{number}_{index}" for index in range(len(op.results))]
            names.update(zip(op.results, results, strict=True))
            call = f"op{number}"
            operands = ", ".join(names[value] for value in op.operands)
            if isinstance(op, PrimOp) and type(op).evaluate is PrimOp.evaluate:
                params = op.reference_params()
                namespace[call] = (
                    functools.partial(op.reference, **params) if params else op.reference
                )
                lines.append(f"    {results[0]} = {call}({operands})")
                lines.append(_coerce_line(results[0], "cast", op.results[0], namespace))
            else:
                namespace[call] = _evaluator(op)
                lines.append(f"    {''.join(f'{name}, ' for name in results)}= {call}({operands})")
        lines.append(
            f"    return ({''.join(f'{names[value]}, ' for value in terminator.arguments)})"
        )
        self.source = "\n".join(lines)
        exec(compile(self.source, f"<numpy program @{function.sym_name.data}>", "exec"), namespace)
        self.run: Callable[[list[np.ndarray]], tuple[np.ndarray, ...]] = namespace["run"]


def _coerce_line(name: str, convert: str, value: SSAValue, namespace: dict[str, Any]) -> str:
    """The line making `name` an ndarray of `value`'s dtype with `convert` when
    it is not (an equal dtype is one: numpy may hand out equal dtype objects
    that are not numpy's own, e.g. through a constant)."""
    dtype = f"{name}_dtype"
    namespace[dtype] = numpy_dtype_of(value)
    return (
        f"    if type({name}) is not ndarray or {name}.dtype is not {dtype} "
        f"and {name}.dtype != {dtype}: {name} = {convert}({name}, {dtype})"
    )


def _cast(result: object, dtype: np.dtype) -> np.ndarray:
    """`PrimOp.evaluate`'s cast of a reference's result (a number, or another dtype)."""
    return np.asarray(result).astype(dtype, copy=False)


def _evaluator(op: Operation) -> Callable[..., tuple[np.ndarray, ...]]:
    """`op`'s own `evaluate`, its results coerced to the result types (`evaluate_op`)."""
    if not isinstance(op, Evaluable):
        raise EvaluationError(f"'{op.name}' is not evaluable (no numpy semantics)")

    def evaluate(*operands: np.ndarray) -> tuple[np.ndarray, ...]:
        results = op.evaluate(*operands)
        return tuple(
            coerce_array(array, result.type, f"result #{index} of '{op.name}'")
            for index, (result, array) in enumerate(zip(op.results, results, strict=True))
        )

    return evaluate


def numpy_dtype_of(value: SSAValue) -> np.dtype:
    """The numpy dtype of a tensor value's elements."""
    return numpy_dtype(value.type.get_element_type())  # pyright: ignore[reportAttributeAccessIssue]


CompiledKey = tuple[cg.LinearOp, Backend, tuple[int, int] | None]
"""(transposed fragment, backend, `CompiledExecutor.numpy_limits`)."""

ArgumentRunner = Callable[[list[np.ndarray]], Sequence[np.ndarray]]
"""A compiled function taking its arguments as a list, cast to their dtypes
where they differ."""


class CompiledBackward:
    """A transposed fragment compiled into a function.

    Arguments: `primal_inputs` (graph values, from the external data), then
    one cotangent per seed; results: the non-None tangent outputs, in order.
    `input_positions`: where each primal input is among the graph's inputs
    (None when one is not a graph input), computed once, so a call indexes
    the node's inputs instead of hashing graph values.
    """

    __slots__ = ("run", "primal_inputs", "backend", "input_positions", "present")

    def __init__(
        self,
        run: ArgumentRunner,
        primal_inputs: tuple[SSAValue, ...],
        backend: Runner,
        input_positions: tuple[int, ...] | None = None,
        present: tuple[bool, ...] = (),
    ) -> None:
        self.run = run
        self.primal_inputs = primal_inputs
        self.backend = backend
        self.input_positions = input_positions
        self.present: tuple[bool, ...] | None = None if all(present) else present
        """Per tangent output: whether it is computed (None: all are)."""

    def __repr__(self) -> str:
        return f"CompiledBackward(run={self.run!r}, backend={self.backend!r})"

    def __call__(self, arguments: list[Operand]) -> Sequence[Operand | None]:
        """Run on `arguments` (cast to the argument dtypes where they differ);
        one result per tangent output, None where nothing flows."""
        results = self.run(arguments)
        if self.present is None:
            return results
        supply = iter(results)
        return [next(supply) if present else None for present in self.present]


class CompiledExecutor:
    """Runs transposed fragments as compiled functions (LLVM when available,
    else the reference evaluator; small fragments as numpy programs); each
    fragment is compiled once."""

    _names = itertools.count()

    def __init__(self, backend: Backend | None = None):
        self.compiled: LRUCache[CompiledKey, CompiledBackward] = LRUCache("eager_cache_size")
        """By fragment, the least recently used out beyond `td.config.eager_cache_size`."""
        self.backend = backend
        self.numpy_limits: tuple[int, int] | None = (8, 1024)
        """(ops, elements): under the `llvm` backend, a fragment of at most
        that many ops (none with regions) on tensors of at most that many
        elements each runs as a `NumpyProgram`; None: none does. Part of the
        `compiled` key, so a change applies at once."""

    @property
    def backend(self) -> Backend | None:
        """The backend asked for (None: `TIDU_BACKEND`, read when set)."""
        return self._backend

    @backend.setter
    def backend(self, backend: Backend | None) -> None:
        self._backend: Backend | None = backend
        self._resolved: Backend = backend or default_backend()

    def execute_forward(
        self, graph: RecordedGraph, initial_data: Mapping[SSAValue, Operand]
    ) -> Mapping[SSAValue, Operand]:
        """The recorded inputs: the compiled backward recomputes the rest."""
        return initial_data

    def run_transposed_linear(
        self,
        linear: LinearizedGraph,
        cotangent_out: Sequence[Operand | None],
        external_data: Mapping[SSAValue, Operand],
        ctx: BackwardContext,
    ) -> Sequence[Operand | None]:
        compiled = self.compile(linear)
        arguments = [external_data[value] for value in compiled.primal_inputs]
        arguments += [
            cotangent if cotangent is not None else zeros_like_value(value)
            for (_, value), cotangent in zip(linear.tangent_inputs, cotangent_out, strict=True)
        ]
        return compiled(arguments)

    def node_runner(self, linear: LinearizedGraph) -> NodeRunner | None:
        """`try_backward`'s optional shortcut, once per plan and pass: a
        function running a node's `run_transposed_linear(linear, seeds,
        execute_forward(node, node.initial_data()), ...)` without building the
        data dict: the primal inputs are the node's inputs, by position. It
        returns None (the general path) for a node with retained values; no
        shortcut when a primal input is not a graph input."""
        compiled = self.compile(linear)
        positions = compiled.input_positions
        if positions is None:
            return None
        call = compiled.run if compiled.present is None else compiled

        def run(node: RecordedGraph, seeds: list[Operand]) -> Sequence[Operand | None] | None:
            if node.retained_values:
                return None
            inputs = node.inputs
            arguments = []
            for position in positions:
                arguments.append(inputs[position].data)
            arguments += seeds
            return call(arguments)

        return run

    def add_operands(self, a: Operand, b: Operand) -> Operand:
        return np.add(a, b)

    def compile(self, linear: LinearizedGraph) -> CompiledBackward:
        """The compiled function of a transposed fragment (built on first use)."""
        backend = self._resolved
        key = (linear.fragment, backend, self.numpy_limits)
        compiled = self.compiled.get(key)
        if compiled is None:
            compiled = self._compile(linear, backend)
            self.compiled[key] = compiled
        return compiled

    def _compile(self, linear: LinearizedGraph, backend: Backend) -> CompiledBackward:
        """Materialize the fragment into a function of its module and compile it."""
        signature = fragment_signature(linear.fragment)
        own = len(linear.tangent_inputs)
        primal_inputs = tuple(op.result for op in signature[: len(signature) - own])
        graph = linear.fragment.parent_op()
        while graph is not None and not isinstance(graph, cg.GraphOp):
            graph = graph.parent_op()  # the transposed fragment sits in the linearized one
        index = (
            {op.result: position for position, op in enumerate(fragment_inputs(graph))}
            if isinstance(graph, cg.GraphOp)
            else {}
        )
        positions = [index.get(value) for value in primal_inputs]
        name = f"eager_backward{next(CompiledExecutor._names)}"
        function = materialize(linear.fragment, name=name)
        if backend == "interp":
            run, used = NumpyProgram(function).run, "interp"
        elif self._small(function):
            run, used = NumpyProgram(function).run, "numpy"
        else:
            run, used = _executable_with_fallback(function)
        return CompiledBackward(
            run,
            primal_inputs,
            used,
            None if None in positions else tuple(positions),  # pyright: ignore[reportArgumentType]
            tuple(value is not None for value in linear.tangent_outputs),
        )

    def _small(self, function: func.FuncOp) -> bool:
        """Whether numpy runs `function` faster than a call into native code
        (few ops on small arrays: the call's fixed cost, ~4 µs, dominates)."""
        if self.numpy_limits is None:
            return False
        most_ops, most_elements = self.numpy_limits
        ops = list(function.body.block.ops)
        if len(ops) - 1 > most_ops or any(op.regions for op in ops):
            return False
        values = [*function.body.block.args, *(r for op in ops for r in op.results)]
        return all(
            isinstance(value.type, TensorType)
            and math.prod(value.type.get_shape()) <= most_elements
            for value in values
        )


def _executable_with_fallback(function: func.FuncOp) -> tuple[ArgumentRunner, Runner]:
    """LLVM code when available, else the evaluator.

    The LLVM runtime may be missing (ImportError) or not lower some graph yet;
    the evaluator computes the same values, so fall back with a warning.
    """
    try:
        from tidu_mlir.lowering.runtime import compile_function

        compiled = compile_function(function)
    except ImportError:
        return NumpyProgram(function).run, "interp"
    except Exception as error:  # a lowering gap must not break eager backward
        warnings.warn(
            f"eager backward: LLVM compilation of @{function.sym_name.data} failed "
            f"({type(error).__name__}: {error}); using the evaluator",
            RuntimeWarning,
            stacklevel=3,
        )
        return NumpyProgram(function).run, "interp"

    dtypes = tuple(numpy_dtype_of(argument) for argument in function.body.block.args)

    def run(arguments: list[np.ndarray]) -> Sequence[np.ndarray]:
        results = compiled(*map(_native_argument, arguments, dtypes))
        return results if isinstance(results, tuple) else (results,)

    return run, "llvm"


def _native_argument(argument: Operand, dtype: np.dtype) -> np.ndarray:
    """`argument` as the JIT takes it: an ndarray of `dtype`, copied when its
    layout would be refused (views, .T, slices)."""
    if type(argument) is not np.ndarray or argument.dtype is not dtype:
        argument = np.asarray(argument, dtype=dtype)
    flags = argument.flags
    return argument if flags.c_contiguous and flags.aligned else argument.copy()
