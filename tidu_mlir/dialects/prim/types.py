"""Element types, numpy dtypes and the type checks shared by the `prim` verifiers.

Every `prim` op takes and gives statically shaped ranked tensors. Values that
carry tangents are f32, f64, complex<f32> or complex<f64>; integers (i32, i64:
indices, counters) and booleans (i1: comparison results, masks) are never
differentiated, and each op's verifier names the kinds it accepts.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TypeAlias

import numpy as np
from xdsl.dialects.builtin import (
    ComplexType,
    Float32Type,
    Float64Type,
    TensorType,
    f32,
    f64,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from tidu_mlir.types import numpy_dtype

Value: TypeAlias = SSAValue | Operation
Shape: TypeAlias = tuple[int, ...]

# --------------------------------------------------------------------------
# Element types and numpy dtypes
# --------------------------------------------------------------------------

FLOAT_TYPES: tuple[Attribute, ...] = (f32, f64)
COMPLEX_TYPES: tuple[Attribute, ...] = (ComplexType(f32), ComplexType(f64))
VALUE_TYPES: tuple[Attribute, ...] = FLOAT_TYPES + COMPLEX_TYPES
"""The element types that carry tangents."""
INTEGER_TYPES: tuple[Attribute, ...] = (i32, i64)

_ELEMENT_TYPES_BY_DTYPE: dict[np.dtype, Attribute] = {
    np.dtype(np.float32): f32,
    np.dtype(np.float64): f64,
    np.dtype(np.complex64): ComplexType(f32),
    np.dtype(np.complex128): ComplexType(f64),
    np.dtype(np.int32): i32,
    np.dtype(np.int64): i64,
    np.dtype(np.bool_): i1,
}


def element_type_of(t: Attribute) -> Attribute:
    """The element type of a tensor type, or `t` itself for a scalar type."""
    return t.get_element_type() if isinstance(t, TensorType) else t


def is_complex(t: Attribute) -> bool:
    """Whether a tensor type (or element type) is complex."""
    return isinstance(element_type_of(t), ComplexType)


def is_differentiable(t: Attribute) -> bool:
    """Whether values of a tensor type (or element type) carry tangents: float or
    complex ones do, integer and boolean ones never."""
    return element_type_of(t) in VALUE_TYPES


def real_element_type(t: Attribute) -> Attribute:
    """The real element type of a tensor or element type (complex<f64> -> f64)."""
    element = element_type_of(t)
    return element.element_type if isinstance(element, ComplexType) else element


@functools.lru_cache(maxsize=1024)
def with_element_type(t: TensorType, element: Attribute) -> TensorType:
    """`t` with its element type replaced (made once per pair: every comparison
    a parser reads asks for its i1 type)."""
    return TensorType(element, t.get_shape())


def real_type(t: TensorType) -> TensorType:
    """The real counterpart of a tensor type (itself when already real)."""
    return with_element_type(t, real_element_type(t))


def complex_type(t: TensorType) -> TensorType:
    """The complex counterpart of a real tensor type."""
    element = element_type_of(t)
    assert isinstance(element, Float32Type | Float64Type)
    return with_element_type(t, ComplexType(element))


def tensor_dtype(t: Attribute) -> np.dtype:
    """The numpy dtype of a tensor type (or element type)."""
    return numpy_dtype(element_type_of(t))


def element_type_of_dtype(dtype: np.dtype | type) -> Attribute:
    """The element type of a numpy dtype (float32, float64, complex64, complex128,
    int32, int64, bool);
    the inverse of `tidu_mlir.types.numpy_dtype`."""
    dtype = np.dtype(dtype)
    if dtype not in _ELEMENT_TYPES_BY_DTYPE:
        raise TypeError(f"dtype {dtype} has no tidu element type")
    return _ELEMENT_TYPES_BY_DTYPE[dtype]


def shape_of(value: Value) -> Shape:
    """The static shape of a tensor-typed value."""
    t = SSAValue.get(value).type
    assert isinstance(t, TensorType), f"expected a tensor value, got {t}"
    return tuple(t.get_shape())


def tensor_type_of(value: Value) -> TensorType:
    """The tensor type of a tensor-typed value."""
    t = SSAValue.get(value).type
    assert isinstance(t, TensorType), f"expected a tensor value, got {t}"
    return t


# --------------------------------------------------------------------------
# Verification helpers (they raise VerifyException)
# --------------------------------------------------------------------------

_KIND_TYPES: dict[str, tuple[Attribute, ...]] = {
    "float or complex": VALUE_TYPES,
    "real": FLOAT_TYPES,
    "complex": COMPLEX_TYPES,
    "integer": INTEGER_TYPES,
    "i1": (i1,),
    "numeric": VALUE_TYPES + INTEGER_TYPES,
    "real or integer": FLOAT_TYPES + INTEGER_TYPES,
    "any": VALUE_TYPES + INTEGER_TYPES + (i1,),
}
"""The element types each verifier kind admits."""


def admits(kind: str, element_type: Attribute) -> bool:
    """Whether verifier kind `kind` (see `check_tensor`) admits `element_type`."""
    return element_type in _KIND_TYPES[kind]


def fmt_shape(shape: Sequence[int]) -> str:
    """`[2, 3]`: a shape or integer list as printed in messages."""
    return "[" + ", ".join(str(d) for d in shape) + "]"


def check_tensor(what: str, t: Attribute, kind: str = "float or complex") -> None:
    """`t` is a statically shaped ranked tensor whose element type is of `kind`
    (a key of `_KIND_TYPES`: "float or complex", "real", "numeric", "any", ...)."""
    if not isinstance(t, TensorType):
        raise VerifyException(f"{what} must be a ranked tensor, got {t}")
    if any(d < 0 for d in t.get_shape()):
        raise VerifyException(f"{what} must have a static shape, got {t}")
    if t.get_element_type() not in _KIND_TYPES[kind]:
        allowed = ", ".join(str(e) for e in _KIND_TYPES[kind])
        described = {"any": "a supported", "integer": "an integer", "i1": "a boolean"}.get(
            kind, f"a {kind}"
        )
        raise VerifyException(
            f"{what} must have {described} element type ({allowed}), got {t.get_element_type()}"
        )


def check_tape(what: str, t: Attribute, kind: str = "float or complex") -> None:
    """`t` is a tape: a ranked tensor whose leading axis is dynamic (one slice
    per iteration of a loop whose trip count is known only at run time) and
    whose other axes are static, with elements of `kind`."""
    if not isinstance(t, TensorType) or not t.get_shape() or t.get_shape()[0] >= 0:
        raise VerifyException(f"{what} must be a tensor with a dynamic leading axis, got {t}")
    check_tensor(what, TensorType(t.get_element_type(), t.get_shape()[1:]), kind)


def check_same_type(what: str, actual: Attribute, expected: Attribute) -> None:
    """`actual` is exactly `expected`."""
    if actual != expected:
        raise VerifyException(f"{what} type {actual} must equal {expected}")


def check_shape(what: str, actual: Sequence[int], expected: Sequence[int]) -> None:
    """`actual` is the shape `expected`."""
    if tuple(actual) != tuple(expected):
        raise VerifyException(
            f"{what} shape {fmt_shape(actual)} does not match expected {fmt_shape(expected)}"
        )


def check_same_element_type(what: str, actual: Attribute, expected: Attribute) -> None:
    """`actual` and `expected` have the same element type (shapes may differ)."""
    if element_type_of(actual) != element_type_of(expected):
        raise VerifyException(
            f"{what} element type {element_type_of(actual)} must equal {element_type_of(expected)}"
        )


def check_axes_in_range(what: str, axes: Sequence[int], rank: int) -> None:
    """Every axis is in 0..rank-1."""
    for axis in axes:
        if not 0 <= axis < rank:
            raise VerifyException(f"{what} {axis} is out of range for rank {rank}")


def check_strictly_increasing(what: str, values: Sequence[int]) -> None:
    """`values` is sorted without repetitions."""
    if any(a >= b for a, b in zip(values, values[1:], strict=False)):
        raise VerifyException(
            f"{what} {fmt_shape(values)} must be strictly increasing (sorted, unique)"
        )


def check_length(what: str, values: Sequence[int], rank: int) -> None:
    """`values` has one entry per axis."""
    if len(values) != rank:
        raise VerifyException(f"{what} has {len(values)} entries, expected {rank} (the rank)")


__all__ = [
    "admits",
    "COMPLEX_TYPES",
    "FLOAT_TYPES",
    "INTEGER_TYPES",
    "Shape",
    "VALUE_TYPES",
    "Value",
    "check_same_element_type",
    "check_same_type",
    "check_shape",
    "check_tape",
    "check_tensor",
    "complex_type",
    "element_type_of",
    "element_type_of_dtype",
    "is_complex",
    "is_differentiable",
    "real_element_type",
    "real_type",
    "shape_of",
    "tensor_dtype",
    "tensor_type_of",
    "with_element_type",
]
