"""Primitive-level functions for what numpy's names cannot say (`td.lax`, as `jax.lax`).

`complex(re, im)` assembles a complex array from its parts (`prim.complex`);
`pad(x, value, config)` pads with low, high and interior padding per axis
(`prim.pad`). Traced, each records its primitive; on concrete arrays each runs
that primitive's numpy reference, so both paths compute the same thing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tidu_mlir.control_flow import cond, fori_loop, scan, switch, while_loop
from tidu_mlir.dialects import prim
from tidu_mlir.tracing import as_tracer, constant, current_trace, emit

__all__ = ["complex", "cond", "fori_loop", "pad", "scan", "switch", "while_loop"]


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
