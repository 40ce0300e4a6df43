"""The `BackwardExecutor` of the `Tensor` frontend: compiled backward graphs.

Each transposed fragment is materialized into a `func.func` and compiled once
(`tidu_mlir.execution.executable`), then reused by every later backward pass
through the same (graph, seeded outputs, inputs requiring grad), i.e. once per
(op, shapes, dtypes, static arguments) in practice: the frontend caches traced
graphs per that key and the `BackwardContext` caches the transposed fragment
per graph. The compiled function recomputes the primal values it needs from
the graph inputs (the checkpointing choice), so `execute_forward` only hands
the recorded inputs through.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
from xdsl.dialects.func import FuncOp
from xdsl.ir import SSAValue

from tidu_mlir.ad import LinearizedGraph, materialize
from tidu_mlir.config import LRUCache
from tidu_mlir.dialects import cg
from tidu_mlir.eager.backward import BackwardContext, zeros_like_value
from tidu_mlir.eager.recording import Operand, RecordedGraph
from tidu_mlir.execution import Backend, Executable, default_backend, executable
from tidu_mlir.graph import fragment_inputs, fragment_signature
from tidu_mlir.types import numpy_dtype


class CompiledBackward:
    """A transposed fragment compiled into a function.

    Arguments: `primal_inputs` (graph values, from the external data), then
    one cotangent per seed; results: the non-None tangent outputs, in order.
    `input_positions`: where each primal input is among the graph's inputs
    (None when one is not a graph input), computed once, so a call indexes
    the node's inputs instead of hashing graph values.
    """

    __slots__ = ("run", "primal_inputs", "argument_dtypes", "backend", "input_positions", "present")

    def __init__(
        self,
        run: Executable,
        primal_inputs: tuple[SSAValue, ...],
        argument_dtypes: tuple[np.dtype, ...],
        backend: Backend,
        input_positions: tuple[int, ...] | None = None,
        present: tuple[bool, ...] = (),
    ) -> None:
        self.run = run
        self.primal_inputs = primal_inputs
        self.argument_dtypes = argument_dtypes
        self.backend = backend
        self.input_positions = input_positions
        self.present = present
        """Per tangent output: whether it is computed (not None)."""

    def __repr__(self) -> str:
        return f"CompiledBackward(run={self.run!r}, backend={self.backend!r})"


class CompiledExecutor:
    """Runs transposed fragments as compiled functions (LLVM when available,
    else the reference evaluator); each fragment is compiled once."""

    _names = itertools.count()

    def __init__(self, backend: Backend | None = None):
        self.compiled: LRUCache[tuple[cg.LinearOp, Backend], CompiledBackward] = LRUCache(
            "eager_cache_size"
        )
        """By fragment, the least recently used out beyond `td.config.eager_cache_size`."""
        self.backend = backend

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
    ) -> list[Operand | None]:
        compiled = self.compile(linear)
        seeds = [
            cotangent if cotangent is not None else zeros_like_value(value)
            for (_, value), cotangent in zip(linear.tangent_inputs, cotangent_out, strict=True)
        ]
        arguments = [external_data[value] for value in compiled.primal_inputs] + seeds
        cast = [
            np.asarray(argument, dtype=dtype)
            for argument, dtype in zip(arguments, compiled.argument_dtypes, strict=True)
        ]
        results = iter(compiled.run(*cast))
        return [None if value is None else next(results) for value in linear.tangent_outputs]

    def run_node(
        self, node: RecordedGraph, linear: LinearizedGraph, seeds: list[Operand]
    ) -> list[Operand | None] | None:
        """`run_transposed_linear(linear, seeds, execute_forward(node,
        node.initial_data()), ...)` without building the data dict: the primal
        inputs are taken from the node's inputs by position. None when that
        does not apply (retained values, or a primal input that is not a graph
        input): the caller takes the general path."""
        compiled = self.compile(linear)
        positions = compiled.input_positions
        if positions is None or node.retained_values:
            return None
        inputs = node.inputs
        arguments = [inputs[position].data for position in positions]
        arguments += [
            cotangent if cotangent is not None else zeros_like_value(value)
            for (_, value), cotangent in zip(linear.tangent_inputs, seeds, strict=True)
        ]
        for index, (argument, dtype) in enumerate(
            zip(arguments, compiled.argument_dtypes, strict=True)
        ):
            if (
                type(argument) is not np.ndarray
                or argument.dtype is not dtype
                or not argument.flags.c_contiguous
            ):
                arguments[index] = np.asarray(argument, dtype=dtype)
        results = iter(compiled.run(*arguments))
        return [next(results) if present else None for present in compiled.present]

    def add_operands(self, a: Operand, b: Operand) -> Operand:
        return np.add(a, b)

    def compile(self, linear: LinearizedGraph) -> CompiledBackward:
        """The compiled function of a transposed fragment (built on first use)."""
        backend = self._resolved
        key = (linear.fragment, backend)
        compiled = self.compiled.get(key)
        if compiled is None:
            compiled = _compile(linear, backend)
            self.compiled[key] = compiled
        return compiled


def _compile(linear: LinearizedGraph, backend: Backend) -> CompiledBackward:
    """Materialize the fragment into a function of its module and compile it."""
    signature = fragment_signature(linear.fragment)
    own = len(linear.tangent_inputs)
    primal_inputs = tuple(op.result for op in signature[: len(signature) - own])
    dtypes = tuple(
        numpy_dtype(op.result.type.get_element_type())  # pyright: ignore[reportAttributeAccessIssue]
        for op in signature
    )
    graph = linear.fragment.parent_op()
    while graph is not None and not isinstance(graph, cg.GraphOp):
        graph = graph.parent_op()  # the transposed fragment sits in the linearized one
    index = (
        {op.result: position for position, op in enumerate(fragment_inputs(graph))}
        if isinstance(graph, cg.GraphOp)
        else {}
    )
    positions = [index.get(value) for value in primal_inputs]
    function = materialize(linear.fragment, name=f"eager_backward{next(CompiledExecutor._names)}")
    run, used = _executable_with_fallback(function, backend)
    return CompiledBackward(
        run,
        primal_inputs,
        dtypes,
        used,
        None if None in positions else tuple(positions),  # pyright: ignore[reportArgumentType]
        tuple(value is not None for value in linear.tangent_outputs),
    )


def _executable_with_fallback(function: FuncOp, backend: Backend) -> tuple[Executable, Backend]:
    """LLVM code when asked and available, else the evaluator.

    The LLVM runtime may be missing (ImportError) or not lower some graph yet;
    the evaluator computes the same values, so fall back with a warning.
    """
    if backend == "interp":
        return executable(function, "interp"), "interp"
    try:
        from tidu_mlir.lowering.runtime import compile_function

        compiled = compile_function(function)
    except ImportError:
        return executable(function, "interp"), "interp"
    except Exception as error:  # a lowering gap must not break eager backward
        warnings.warn(
            f"eager backward: LLVM compilation of @{function.sym_name.data} failed "
            f"({type(error).__name__}: {error}); using the evaluator",
            RuntimeWarning,
            stacklevel=3,
        )
        return executable(function, "interp"), "interp"

    def run(*arguments: np.ndarray) -> list[np.ndarray]:
        for argument in arguments:
            if not _ready(argument):
                arguments = tuple(_contiguous(a) for a in arguments)
                break
        results = compiled(*arguments)
        return list(results) if isinstance(results, tuple) else [results]

    return run, "llvm"


def _ready(array: np.ndarray) -> bool:
    flags = array.flags
    return flags.c_contiguous and flags.aligned


def _contiguous(array: np.ndarray) -> np.ndarray:
    """`array`, copied when the JIT would refuse its layout (views, .T, slices)."""
    flags = array.flags
    return array if flags.c_contiguous and flags.aligned else array.copy()
