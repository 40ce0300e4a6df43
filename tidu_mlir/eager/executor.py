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
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.func import FuncOp
from xdsl.ir import SSAValue

from tidu_mlir.ad import LinearizedGraph, materialize
from tidu_mlir.dialects import cg
from tidu_mlir.eager.backward import BackwardContext, zeros_like_value
from tidu_mlir.eager.recording import Operand, RecordedGraph
from tidu_mlir.execution import Backend, Executable, default_backend, executable
from tidu_mlir.graph import fragment_signature
from tidu_mlir.types import numpy_dtype


@dataclass(frozen=True)
class CompiledBackward:
    """A transposed fragment compiled into a function.

    Arguments: `primal_inputs` (graph values, from the external data), then
    one cotangent per seed; results: the non-None tangent outputs, in order.
    """

    run: Executable
    primal_inputs: tuple[SSAValue, ...]
    argument_dtypes: tuple[np.dtype, ...]
    backend: Backend


class CompiledExecutor:
    """Runs transposed fragments as compiled functions (LLVM when available,
    else the reference evaluator); each fragment is compiled once."""

    _names = itertools.count()

    def __init__(self, backend: Backend | None = None):
        self.compiled: dict[tuple[cg.LinearOp, Backend], CompiledBackward] = {}
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

    def add_operands(self, a: Operand, b: Operand) -> Operand:
        return np.add(a, b)

    def compile(self, linear: LinearizedGraph) -> CompiledBackward:
        """The compiled function of a transposed fragment (built on first use)."""
        backend = self._resolved
        key = (linear.fragment, backend)
        compiled = self.compiled.get(key)
        if compiled is None:
            compiled = self.compiled[key] = _compile(linear, backend)
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
    function = materialize(linear.fragment, name=f"eager_backward{next(CompiledExecutor._names)}")
    run, used = _executable_with_fallback(function, backend)
    return CompiledBackward(run, primal_inputs, dtypes, used)


def _executable_with_fallback(function: FuncOp, backend: Backend) -> tuple[Executable, Backend]:
    """LLVM code when asked and available, else the evaluator.

    The LLVM runtime may be missing (ImportError) or not lower some graph yet;
    the evaluator computes the same values, so fall back with a warning.
    """
    if backend == "interp":
        return executable(function, "interp"), "interp"
    try:
        compiled = executable(function, "llvm")
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
        return compiled(*(_contiguous(argument) for argument in arguments))

    return run, "llvm"


def _contiguous(array: np.ndarray) -> np.ndarray:
    """`array`, copied when the JIT would refuse its layout (views, .T, slices)."""
    flags = array.flags
    return array if flags.c_contiguous and flags.aligned else array.copy()
