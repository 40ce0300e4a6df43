"""`Tensor`: a numpy-backed eager array with PyTorch-style reverse mode.

Operations run numpy at once; when grad mode is on and an operand requires
grad, the operation's traced graph is recorded on the tape (see
`tidu_mlir.eager.functions`). `backward()` runs `try_backward` from the
tensor and accumulates the cotangents into the `.grad` of the leaves.
Complex gradients are adjoints for the real inner product Re(conj(a)·b)
(`docs/complex.md`): grad of sum(|z|²) is 2z.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tidu_mlir.array_operators import ArrayOperators
from tidu_mlir.eager.backward import BackwardContext, try_backward
from tidu_mlir.eager.executor import CompiledExecutor
from tidu_mlir.eager.recording import RecordedGraph, ValueKey
from tidu_mlir.execution import Backend
from tidu_mlir.tracing import as_traceable_array

DIFFERENTIABLE_KINDS = "fc"


@dataclass
class EagerRuntime:
    """The process-wide state of the frontend: keys, backward executor and its
    caches, and the leaves that receive gradients.

    The tensors' keys are plain ints from one counter (the recording layer
    takes any hashable key): made and hashed in nanoseconds, where a
    `KeySource`'s `cg.KeyAttr` costs a µs to make and hashes in Python, and
    there is one per recorded value."""

    keys: Iterator[int] = field(default_factory=itertools.count)
    executor: CompiledExecutor = field(default_factory=CompiledExecutor)
    context: BackwardContext = field(default_factory=BackwardContext)
    leaves: weakref.WeakValueDictionary[ValueKey, Tensor] = field(
        default_factory=weakref.WeakValueDictionary
    )


RUNTIME = EagerRuntime()


def set_backend(backend: Backend | None) -> None:
    """Run backward graphs with `backend` ("llvm", "interp"; None: `TIDU_BACKEND`)."""
    RUNTIME.executor.backend = backend


class _GradMode(threading.local):
    """Per thread: whether operations are recorded (a class default, so a
    thread that never entered `no_grad()` reads it without a missing-attribute
    exception)."""

    enabled = True


GRAD_MODE = _GradMode()
"""`GRAD_MODE.enabled`: `is_grad_enabled()` without the call (the per-op path reads it)."""


def is_grad_enabled() -> bool:
    """Whether operations are recorded (false inside `no_grad()`)."""
    return GRAD_MODE.enabled


@contextmanager
def no_grad() -> Iterator[None]:
    """Nothing is recorded inside: results do not require grad."""
    previous = is_grad_enabled()
    GRAD_MODE.enabled = False
    try:
        yield
    finally:
        GRAD_MODE.enabled = previous


class Tensor(ArrayOperators):
    """A numpy array that may require grad; operators and methods as numpy's
    (implemented by `tidu_mlir.eager.functions`, which binds itself to this class)."""

    __slots__ = ("data", "grad", "_requires_grad", "_key", "_trace", "__weakref__")
    __array_ufunc__ = None  # ndarray op Tensor defers to Tensor's reflected operator

    def __init__(self, data: Any, requires_grad: bool = False):
        self.data: np.ndarray = np.asarray(data)
        self.grad: Tensor | None = None
        self._requires_grad = False
        self._key: ValueKey | None = None
        self._trace: RecordedGraph | None = None
        self.requires_grad = requires_grad

    @staticmethod
    def _recorded(data: np.ndarray, key: ValueKey, trace: RecordedGraph) -> Tensor:
        """The tensor of one output of a tape node (the frontend's fast path)."""
        result = Tensor.__new__(Tensor)
        result.data = data
        result.grad = None
        result._requires_grad = True
        result._key = key
        result._trace = trace
        return result

    # -- autograd ---------------------------------------------------------

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self._trace is not None:
            raise RuntimeError("requires_grad can only be changed on leaf tensors")
        if value and self.data.dtype.kind not in DIFFERENTIABLE_KINDS:
            raise TypeError(
                f"only float and complex tensors can require grad (dtype {self.data.dtype})"
            )
        self._requires_grad = bool(value)
        if value:
            RUNTIME.leaves[self.key] = self

    @property
    def key(self) -> ValueKey:
        """The tensor's user-visible key on the tape (made on first use)."""
        if self._key is None:
            self._key = next(RUNTIME.keys)
        return self._key

    @property
    def is_leaf(self) -> bool:
        return self._trace is None

    def backward(self, seed: Any = None) -> None:
        """Accumulate d(self)/d(leaf) contracted with `seed` into each leaf's `.grad`.

        `seed` defaults to one for a single-element tensor.
        """
        if not self._requires_grad:
            raise RuntimeError(
                "backward on a tensor that does not require grad (no input of its "
                "computation was created with requires_grad=True)"
            )
        runtime = RUNTIME
        cotangents = try_backward(
            self.key, self._trace, self._seed(seed), runtime.executor, runtime.context
        )
        for key, cotangent in cotangents.items():
            leaf = runtime.leaves.get(key)
            if leaf is not None:
                leaf._accumulate_grad(cotangent)

    def _seed(self, seed: Any) -> np.ndarray:
        if seed is None:
            if self.data.size != 1:
                raise ValueError(
                    "backward needs a seed for a non-scalar output "
                    f"(shape {self.data.shape}); pass one of the output's shape"
                )
            return np.ones(self.data.shape, dtype=self.data.dtype)
        array = np.asarray(seed.data if isinstance(seed, Tensor) else seed)
        if array.shape != self.data.shape:
            raise ValueError(f"seed has shape {array.shape}, the output {self.data.shape}")
        if array.dtype.kind == "c" and self.data.dtype.kind != "c":
            raise TypeError("a complex seed for a real output")
        return array.astype(self.data.dtype, copy=False)

    def _accumulate_grad(self, cotangent: np.ndarray) -> None:
        """Add `cotangent` to `.grad`; a new `.grad` is a copy (a numpy-run
        backward may hand out the seed, a view of it, or a read-only constant)."""
        if self.grad is None:
            self.grad = Tensor(np.array(cotangent, dtype=self.data.dtype))
        else:
            self.grad = Tensor(self.grad.data + np.asarray(cotangent, dtype=self.data.dtype))

    def detach(self) -> Tensor:
        """The same data, cut from the tape (does not require grad)."""
        return Tensor(self.data)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set `requires_grad` in place (a leaf only); returns the tensor."""
        self.requires_grad = requires_grad
        return self

    # -- in-place updates (PyTorch's rules) ---------------------------------

    def _update(self, combine: Callable[[np.ndarray, np.ndarray], np.ndarray], other: Any,
                out_of_place: Callable[[Tensor, Any], Tensor]) -> Tensor:  # fmt: skip
        """`self op= other`: the tensor updated in place when nothing is recorded
        (under `no_grad`, or a tensor outside autograd), so a leaf stays the
        leaf the optimizer updates (`with no_grad(): w -= lr * w.grad`). With
        grad enabled, a leaf requiring grad is refused as in PyTorch, and a
        recorded tensor gets a new recorded result (the name is rebound)."""
        if is_grad_enabled() and self._requires_grad:
            if self._trace is None:
                raise RuntimeError(
                    "a leaf tensor that requires grad is used in an in-place operation; "
                    "update it under `with no_grad():`"
                )
            return out_of_place(self, other)
        value = np.asarray(other.data if isinstance(other, Tensor) else other)
        result = combine(self.data, value)
        if result.shape != self.data.shape:
            raise ValueError(
                f"in-place update of a tensor of shape {self.data.shape} with a result "
                f"of shape {result.shape}"
            )
        if not np.can_cast(result.dtype, self.data.dtype, "same_kind"):
            raise TypeError(f"in-place update of a {self.data.dtype} tensor with {result.dtype}")
        # A new array, not a write into the old one: a graph recorded before
        # the update keeps the values it saw (PyTorch checks versions instead).
        self.data = result.astype(self.data.dtype, copy=False)
        return self

    def __iadd__(self, other: Any) -> Tensor:
        return self._update(np.add, other, Tensor.__add__)

    def __isub__(self, other: Any) -> Tensor:
        return self._update(np.subtract, other, Tensor.__sub__)

    def __imul__(self, other: Any) -> Tensor:
        return self._update(np.multiply, other, Tensor.__mul__)

    def __itruediv__(self, other: Any) -> Tensor:
        return self._update(np.divide, other, Tensor.__truediv__)

    def zero_(self) -> Tensor:
        """Fill with zeros in place (like `w.grad.zero_()`); returns the tensor."""
        return self._update(lambda data, _: np.zeros_like(data), 0.0, Tensor.__mul__)

    # -- numpy-like -------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def size(self) -> int:
        return self.data.size

    def numpy(self) -> np.ndarray:
        return self.data

    def item(self) -> Any:
        return self.data.item()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        return self.data if dtype is None else self.data.astype(dtype)

    def __len__(self) -> int:
        return len(self.data)

    def __bool__(self) -> bool:
        return bool(self.data)

    def __repr__(self) -> str:
        grad = ", requires_grad=True" if self._requires_grad else ""
        return f"Tensor({self.data!r}{grad})"


def tensor(data: Any, requires_grad: bool = False, dtype: Any = None) -> Tensor:
    """A new leaf tensor holding a copy of `data`, of numpy's dtype for it
    (integers stay integers, as in PyTorch; small integer types widened)."""
    array = np.array(data.data if isinstance(data, Tensor) else data, dtype=dtype)
    return Tensor(as_traceable_array(array), requires_grad=requires_grad)
