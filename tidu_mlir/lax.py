"""Primitive-level functions for what numpy's names cannot say (`td.lax`, as `jax.lax`).

`complex(re, im)` assembles a complex array from its parts (`prim.complex`);
`pad(x, value, config)` pads with low, high and interior padding per axis
(`prim.pad`); `dynamic_slice`/`dynamic_update_slice` take a block at start
indices known only at run time (clamped into range, as in JAX); `argmax`,
`cumsum`, `sort`, the rounding functions and `erf` record their primitives;
`iota` is a constant. Traced, each records its primitive; on concrete arrays each runs
that primitive's numpy reference, so both paths compute the same thing.
Control flow (`scan`, `cond`, ...) lives in `tidu_mlir.control_flow`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import tidu_mlir.numpy as tnp
from tidu_mlir.control_flow import cond, fori_loop, scan, switch, while_loop
from tidu_mlir.dialects import prim
from tidu_mlir.tracing import Tracer, as_tracer, constant, current_trace, emit

__all__ = [
    "argmax", "argmin", "broadcasted_iota", "ceil", "clamp", "complex", "cond", "cummax", "cummin",
    "cumprod", "cumsum", "dynamic_slice", "dynamic_update_slice", "erf", "floor",
    "fori_loop", "iota", "pad", "round", "scan", "sign", "sort", "switch", "while_loop",
]  # fmt: skip


def complex(re: Any, im: Any) -> Any:  # noqa: A001 - jax.lax's name
    """`re + i·im` from two real arrays of one shape and dtype."""
    trace = current_trace(re, im)
    if trace is None:
        return prim.ComplexOp.reference(np.asarray(re), np.asarray(im))
    real, imag = as_tracer(trace, re), as_tracer(trace, im)
    if real.dtype.kind == "c" or imag.dtype.kind == "c":
        raise TypeError("lax.complex takes real parts (got a complex operand)")
    if (real.shape, real.dtype) != (imag.shape, imag.dtype):
        raise TypeError(
            f"lax.complex needs parts of one shape and dtype, got {real.shape} {real.dtype} "
            f"and {imag.shape} {imag.dtype}"
        )
    return emit(trace, prim.ComplexOp(real.value, imag.value))


def pad(x: Any, padding_value: float, padding_config: Sequence[tuple[int, int, int]]) -> Any:
    """`x` padded per axis with `(low, high, interior)` entries of `padding_value`
    (non-negative paddings; the value is a constant, not differentiated)."""
    config = [tuple(int(v) for v in entry) for entry in padding_config]
    if len(config) != np.ndim(x) or any(len(entry) != 3 for entry in config):
        raise ValueError(
            f"lax.pad needs one (low, high, interior) triple per axis of a rank-{np.ndim(x)} array"
        )
    if any(v < 0 for entry in config for v in entry):
        raise ValueError(f"lax.pad supports non-negative paddings only, got {config}")
    low, high, interior = ([entry[k] for entry in config] for k in range(3))
    inside = prim.PadOp.reference(np.ones(np.shape(x)), low=low, high=high, interior=interior)
    fill = np.where(inside == 0, padding_value, 0.0)  # the padding value where x is not
    trace = current_trace(x)
    if trace is None:
        array = np.asarray(x)
        padded = prim.PadOp.reference(array, low=low, high=high, interior=interior)
        return padded + fill.astype(padded.dtype) if padding_value else padded
    operand = as_tracer(trace, x)
    padded = emit(trace, prim.PadOp(operand.value, low, high, interior))
    if not padding_value:
        return padded
    return padded + constant(trace, fill, operand.dtype)


def _starts(trace: Any, start_indices: Sequence[Any], shape: Sequence[int], what: str) -> list[Any]:
    """One 0-d integer start per axis, as values of `trace`; a negative start
    counts from the end once (JAX), the op then clamps it into range."""
    if len(start_indices) != len(shape):
        raise ValueError(
            f"{what} needs one start index per axis ({len(shape)}), got {len(start_indices)}"
        )
    starts = []
    for start, size in zip(start_indices, shape, strict=True):
        tracer = as_tracer(trace, start)
        if tracer.shape or tracer.dtype.kind not in "iu":
            raise TypeError(
                f"{what} start indices must be 0-d integers, got shape {tracer.shape} and "
                f"dtype {tracer.dtype}"
            )
        starts.append(tnp.where(tracer < 0, tracer + size, tracer).value)
    return starts


def _concrete_starts(start_indices: Sequence[Any], shape: Sequence[int]) -> list[np.ndarray]:
    """Concrete starts, a negative one counted from the end once (as `_starts`)."""
    return [np.asarray(s + n if s < 0 else s) for s, n in zip(start_indices, shape, strict=True)]


def dynamic_slice(operand: Any, start_indices: Sequence[Any], slice_sizes: Sequence[int]) -> Any:
    """The block of `slice_sizes` at `start_indices` (run-time integers; a
    negative one counts from the end, then each is clamped so the block lies
    inside `operand`, as in JAX)."""
    sizes = [int(n) for n in slice_sizes]
    trace = current_trace(operand, *start_indices)
    if trace is None:
        starts = _concrete_starts(start_indices, np.shape(operand))
        return prim.DynamicSliceOp.reference(np.asarray(operand), *starts, sizes=sizes)
    x = as_tracer(trace, operand)
    if len(sizes) != x.ndim or any(not 0 <= n <= d for n, d in zip(sizes, x.shape, strict=True)):
        raise ValueError(f"dynamic_slice: slice sizes {sizes} do not fit in shape {x.shape}")
    starts = _starts(trace, start_indices, x.shape, "dynamic_slice")
    return emit(trace, prim.DynamicSliceOp(x.value, starts, sizes))


def dynamic_update_slice(operand: Any, update: Any, start_indices: Sequence[Any]) -> Any:
    """`operand` with the block at `start_indices` replaced by `update` (starts
    wrapped once if negative, then clamped so the block lies inside, as in JAX)."""
    trace = current_trace(operand, update, *start_indices)
    if trace is None:
        starts = _concrete_starts(start_indices, np.shape(operand))
        return prim.DynamicUpdateSliceOp.reference(np.asarray(operand), np.asarray(update), *starts)
    x = as_tracer(trace, operand)
    block = tnp.astype(as_tracer(trace, update), x.dtype)
    if block.ndim != x.ndim or any(b > d for b, d in zip(block.shape, x.shape, strict=True)):
        raise ValueError(
            f"dynamic_update_slice: an update of shape {block.shape} does not fit in {x.shape}"
        )
    starts = _starts(trace, start_indices, x.shape, "dynamic_update_slice")
    return emit(trace, prim.DynamicUpdateSliceOp(x.value, block.value, starts))


def broadcasted_iota(dtype: Any, shape: Sequence[int], dimension: int) -> Any:
    """Each element's index along `dimension` in an array of `shape`: a numpy
    array (a constant in a traced function), like `tnp.arange`."""
    shape = tuple(int(n) for n in shape)
    return prim.IotaOp.reference(shape=shape, dimension=dimension, dtype=np.dtype(dtype))


def iota(dtype: Any, size: int) -> Any:
    """0, 1, ..., size - 1."""
    return broadcasted_iota(dtype, (size,), 0)


def argmax(operand: Any, axis: int, index_dtype: Any = np.int64) -> Any:
    """The index of the first largest element along `axis`."""
    return tnp.astype(tnp.argmax(operand, axis=axis), index_dtype)


def argmin(operand: Any, axis: int, index_dtype: Any = np.int64) -> Any:
    """The index of the first smallest element along `axis`."""
    return tnp.astype(tnp.argmin(operand, axis=axis), index_dtype)


def _along(fn: Any, operand: Any, axis: int, reverse: bool) -> Any:
    """`fn(x, axis)` applied in reverse order along `axis` when `reverse`."""
    if not reverse:
        return fn(operand, axis)
    return tnp.flip(fn(tnp.flip(operand, axis), axis), axis)


def _dtype_of(x: Any) -> np.dtype:
    return x.dtype if isinstance(x, Tracer) else np.asarray(x).dtype


def cumsum(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running sums along `axis` (from the end when `reverse`); the dtype kept."""
    return _along(lambda x, a: tnp.cumsum(x, a, dtype=_dtype_of(x)), operand, axis, reverse)


def cumprod(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running products along `axis` (from the end when `reverse`); the dtype kept."""
    return _along(lambda x, a: tnp.cumprod(x, a, dtype=_dtype_of(x)), operand, axis, reverse)


def cummax(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running maxima along `axis` (from the end when `reverse`)."""
    if current_trace(operand) is None:
        return _along(np.maximum.accumulate, np.asarray(operand), axis, reverse)
    return tnp.cummax(operand, axis, reverse)


def cummin(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running minima along `axis` (from the end when `reverse`)."""
    if current_trace(operand) is None:
        return _along(np.minimum.accumulate, np.asarray(operand), axis, reverse)
    return tnp.cummin(operand, axis, reverse)


def clamp(min: Any, x: Any, max: Any) -> Any:  # noqa: A002 - jax.lax's names
    """`x` limited to [min, max] elementwise (jax.lax's argument order); the
    derivative is 1 inside and 0 outside, as `tnp.clip`'s."""
    return tnp.clip(x, min, max)


def sort(operand: Any, dimension: int = -1, is_stable: bool = True) -> Any:
    """`operand` sorted along `dimension` (stable, NaN last)."""
    return tnp.sort(operand, axis=dimension)


def floor(x: Any) -> Any:
    """Elementwise floor (derivative 0)."""
    return tnp.floor(x)


def ceil(x: Any) -> Any:
    """Elementwise ceiling (derivative 0)."""
    return tnp.ceil(x)


def round(x: Any, rounding_method: int = 0) -> Any:  # noqa: A001 - jax.lax's name
    """Round to the nearest integer: halves away from zero (`rounding_method=0`,
    JAX's default) or to even (1)."""
    if rounding_method == 1:
        return tnp.rint(x)
    return tnp.sign(x) * tnp.floor(tnp.abs(x) + 0.5)


def sign(x: Any) -> Any:
    """-1, 0 or 1 elementwise (derivative 0)."""
    return tnp.sign(x)


def erf(x: Any) -> Any:
    """The error function elementwise: 2/sqrt(pi) times the integral of exp(-t²) from 0 to x."""
    trace = current_trace(x)
    if trace is None:
        array = np.asarray(x)
        return prim.ErfOp.reference(array if array.dtype.kind == "f" else array.astype(float))
    tracer = as_tracer(trace, x)
    if tracer.dtype.kind == "c":
        raise TypeError("erf is defined for real arrays only (got a complex operand)")
    if tracer.dtype.kind != "f":
        tracer = tnp.astype(tracer, np.float64)
    return emit(trace, prim.ErfOp(tracer.value))
