"""The op -> numpy implementation registry of the reference evaluator.

Any dialect (tests define toy ones) registers its ops with `@register_impl`.
An implementation is `fn(op, *operand_arrays) -> tuple[np.ndarray, ...]`, one
array per result (a bare array is accepted for single-result ops).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias, TypeVar

import numpy as np
from xdsl.ir import Operation

ImplResult: TypeAlias = tuple[np.ndarray, ...] | np.ndarray
Impl: TypeAlias = Callable[..., ImplResult]
ImplT = TypeVar("ImplT", bound=Impl)

_IMPLS: dict[type[Operation], Impl] = {}


class EvaluationError(Exception):
    """The evaluator cannot run an op (no implementation, missing value, bad result)."""


def register_impl(*op_classes: type[Operation]) -> Callable[[ImplT], ImplT]:
    """Decorator: register `fn` as the numpy implementation of `op_classes`."""

    def decorate(fn: ImplT) -> ImplT:
        for op_class in op_classes:
            _IMPLS[op_class] = fn
        return fn

    return decorate


def lookup_impl(op: Operation) -> Impl:
    """The implementation of `op` (of its class or the nearest registered base)."""
    for klass in type(op).__mro__:
        if klass in _IMPLS:
            return _IMPLS[klass]  # pyright: ignore[reportArgumentType]
    raise EvaluationError(f"no evaluator implementation for '{op.name}'")
