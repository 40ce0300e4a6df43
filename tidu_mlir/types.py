"""Element types of tidu tensors and their numpy counterparts."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import ComplexType, Float32Type, Float64Type, IntegerType
from xdsl.ir import Attribute

_INTEGER_DTYPES: dict[int, np.dtype] = {
    1: np.dtype(np.bool_),
    32: np.dtype(np.int32),
    64: np.dtype(np.int64),
}
"""Signless integer widths and the numpy dtype each stands for (i1 is bool)."""


def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The numpy dtype of an element type (f32, f64, complex<f32>, complex<f64>,
    i32, i64, or i1 for bool)."""
    if isinstance(element_type, Float32Type):
        return np.dtype(np.float32)
    if isinstance(element_type, Float64Type):
        return np.dtype(np.float64)
    if isinstance(element_type, ComplexType):
        inner = element_type.element_type
        if isinstance(inner, Float32Type):
            return np.dtype(np.complex64)
        if isinstance(inner, Float64Type):
            return np.dtype(np.complex128)
    if isinstance(element_type, IntegerType) and element_type.width.data in _INTEGER_DTYPES:
        return _INTEGER_DTYPES[element_type.width.data]
    raise TypeError(f"element type {element_type} has no numpy counterpart in tidu")
