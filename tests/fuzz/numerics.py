"""Finite differences and comparisons for the differential fuzzer.

Derivatives are compared in real coordinates: a complex array is the real
vector of its real parts followed by its imaginary parts (`docs/complex.md`:
a complex tensor is a real vector space of twice the dimension). There a
JVP is `J @ t` and, since the transpose is the adjoint for the real inner
product `Re(sum(conj(a) * b))`, a VJP is `J.T @ c`, for every dtype.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


def to_real(arrays: Sequence[Any]) -> np.ndarray:
    """The real coordinates of `arrays`, concatenated."""
    parts: list[np.ndarray] = []
    for array in arrays:
        array = np.asarray(array)
        parts.append(np.real(array).astype(np.float64).ravel())
        if array.dtype.kind == "c":
            parts.append(np.imag(array).astype(np.float64).ravel())
    return np.concatenate(parts) if parts else np.zeros(0)


def from_real(vector: np.ndarray, like: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Arrays shaped and typed as `like` from their real coordinates."""
    arrays: list[np.ndarray] = []
    at = 0
    for template in like:
        size = template.size
        value = vector[at : at + size].reshape(template.shape)
        at += size
        if template.dtype.kind == "c":
            value = value + 1j * vector[at : at + size].reshape(template.shape)
            at += size
        arrays.append(np.asarray(value, dtype=template.dtype))
    return arrays


def fd_jacobian(fn: Callable[..., Any], inputs: Sequence[np.ndarray], step: float) -> np.ndarray:
    """The Jacobian of `fn` in real coordinates by central differences."""
    point = to_real(inputs)
    columns: list[np.ndarray] = []
    with np.errstate(all="ignore"):
        for k in range(point.size):
            up, down = point.copy(), point.copy()
            up[k] += step
            down[k] -= step
            plus = to_real([fn(*from_real(up, inputs))])
            minus = to_real([fn(*from_real(down, inputs))])
            columns.append((plus - minus) / (2 * step))
        rows = to_real([fn(*inputs)]).size
    return np.stack(columns, axis=1) if columns else np.zeros((rows, 0))


def assert_close(actual: Any, expected: Any, rtol: float, atol: float, what: str) -> None:
    """Elementwise `|actual - expected| <= atol + rtol * |expected|`, shapes equal;
    the message names the worst element and its error relative to the bound."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if actual.size == 0:
        return
    with np.errstate(all="ignore"):
        error = np.abs(actual - expected)
        bound = atol + rtol * np.abs(expected)
    bad = ~(error <= bound)  # NaN fails
    if bad.any():
        index = np.unravel_index(
            np.argmax(np.where(bad, error / np.maximum(bound, 1e-300), -1)), error.shape
        )
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {actual.size} elements differ; at {index}: "
            f"{actual[index]!r} != {expected[index]!r} (error {error[index]:.3g}, "
            f"allowed {bound[index]:.3g})\nactual:   {actual!r}\nexpected: {expected!r}"
        )


def random_direction(rng: np.random.Generator, size: int) -> np.ndarray:
    """A tangent or cotangent in real coordinates, entries in [-1, 1]."""
    return rng.uniform(-1.0, 1.0, size=size)
