"""numpy-named functions over traced arrays (`import tidu_mlir.numpy as tnp`).

Inside a traced function (`td.jit`, `td.grad`, ...) these record `prim` ops
with numpy's broadcasting and dtype promotion (NEP 50: Python scalars are weak,
so `float32_array * 2.0` stays float32). Called with no traced argument they
simply run numpy, so the same code works on concrete arrays.

Most functions are composites of the others (shape functions such as `flip`
and `diag`, `var`, `hypot`, `arcsinh`, `kron`, `linalg.norm`, ...): no
primitives of their own, derivatives by composition. Constructors (`zeros`,
`eye`, `arange`, `zeros_like` of a tracer, ...) return numpy arrays, which are
constants in a traced function. Unknown names raise an `AttributeError`
pointing to docs/reference/coverage.rst.

The operators of `Tracer` (`x + y`, `x @ y`, `x.sum()`, ...) call these
functions: this module binds itself to `Tracer` once they are defined (see
`tidu_mlir.array_operators`).
"""

from __future__ import annotations

import builtins
import functools
import itertools
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, ParamSpec, TypeVar

import numpy as np
from xdsl.dialects.builtin import TensorType

from tidu_mlir.dialects import prim
from tidu_mlir.tracing import (
    TRACEABLE_DTYPES,
    Trace,
    Tracer,
    TracingError,
    as_tracer,
    constant,
    current_trace,
    emit,
    traceable_dtype,
)

P = ParamSpec("P")
R = TypeVar("R")

__all__ = [
    "abs", "add", "arctan2", "astype", "broadcast_to", "concatenate", "conj", "cos", "divide",
    "dot", "einsum", "equal", "exp", "greater", "greater_equal", "imag", "less", "less_equal",
    "log", "matmul", "max", "maximum", "mean", "minimum", "multiply", "negative", "not_equal",
    "power", "real", "reshape", "shape", "sin", "sqrt", "subtract", "sum", "tanh", "transpose",
    "where",
    # constructors
    "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like",
    "eye", "identity", "arange", "linspace", "array", "asarray", "stack", "hstack", "vstack",
    # shapes
    "squeeze", "expand_dims", "ravel", "moveaxis", "swapaxes", "split", "flip", "roll", "tile",
    "repeat", "diag", "diagonal", "trace", "triu", "tril",
    # math
    "square", "reciprocal", "sign", "clip", "min", "amin", "amax", "var", "std", "log1p",
    "log2", "log10", "exp2", "sinh", "cosh", "arctan", "arcsin", "arccos", "arcsinh", "arctanh",
    "hypot", "isfinite", "isnan", "isinf", "any", "all", "floor", "ceil", "rint", "trunc",
    "round", "argmax", "argmin", "cumsum", "cumprod", "prod", "expm1", "argsort", "sort", "take",
    "take_along_axis", "logaddexp", "outer", "inner", "vdot", "tensordot",
    "kron", "cross", "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and",
    "bitwise_or", "bitwise_xor", "invert",
]  # fmt: skip

pi, e, inf, nan = np.pi, np.e, np.inf, np.nan
float32, float64, complex64, complex128 = np.float32, np.float64, np.complex64, np.complex128
int32, int64, bool_ = np.int32, np.int64, np.bool_
newaxis = None


def _numpy_when_concrete(
    numpy_fn: Callable[..., Any],
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Run `numpy_fn` instead when no argument (or list element) is a tracer.

    For a function exposing one primitive, `numpy_fn` is that op's `reference`,
    so concrete calls compute exactly what the evaluator does. The wrapper keeps
    it as `concrete` (the eager `Tensor` functions run it on their arrays)."""

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            if _find_trace((*args, *kwargs.values())) is None:
                return numpy_fn(*args, **kwargs)
            return fn(*args, **kwargs)

        wrapper.concrete = numpy_fn  # pyright: ignore[reportAttributeAccessIssue]
        return wrapper

    return decorate


def _find_trace(args: Sequence[Any]) -> Trace | None:
    flat: list[Any] = []
    for arg in args:
        flat.extend(arg if isinstance(arg, list | tuple) else [arg])
    return current_trace(*flat)


# --------------------------------------------------------------------------
# Promotion and broadcasting
# --------------------------------------------------------------------------


def _weak_dtype(value: Any) -> Any:
    """What np.result_type should see: dtypes of arrays, Python scalars as they
    are, and a weak tracer as a Python number of its kind."""
    if isinstance(value, Tracer):
        if value.weak:
            return {"b": False, "i": 0, "f": 0.0}.get(value.dtype.kind, 0j)
        return value.dtype
    if isinstance(value, bool | int | float | complex):
        return value
    return np.asarray(value).dtype


def _result_dtype(*values: Any) -> np.dtype:
    """numpy's promotion (small integer types widened as arguments are)."""
    dtype = np.result_type(*(_weak_dtype(v) for v in values))
    try:
        return traceable_dtype(dtype)
    except TypeError as error:
        raise TypeError(f"a traced result {error}") from None


def _dtype_for(kind: str, *values: Any) -> np.dtype:
    """The promoted dtype of `values` when an op of verifier `kind` takes it,
    else float64 (numpy computes `exp`, `/`, `sqrt` ... of integers in float64)."""
    dtype = _result_dtype(*values)
    if prim.admits(kind, prim.element_type_of_dtype(dtype)):
        return dtype
    return np.result_type(dtype, np.float64)


def _inexact_dtype(*values: Any) -> np.dtype:
    """The promoted dtype of `values`, float64 for integers and booleans."""
    return _dtype_for("float or complex", *values)


def _as_tracer(trace: Trace, value: Any, dtype: np.dtype | None = None) -> Tracer:
    """`value` in `trace`, converted to `dtype` when given."""
    if isinstance(value, Tracer):
        tracer = trace.adopt(value)
    else:
        array = np.asarray(value)
        tracer = constant(trace, array, dtype or _result_dtype(array))
    if dtype is not None and tracer.dtype != dtype:
        tracer = emit(trace, prim.ConvertOp(tracer.value, prim.element_type_of_dtype(dtype)))
    return tracer


def _broadcast(tracer: Tracer, shape: tuple[int, ...]) -> Tracer:
    """numpy broadcasting of one operand to `shape` with broadcast_in_dim."""
    if tracer.shape == shape:
        return tracer
    offset = len(shape) - tracer.ndim
    result_type = TensorType(tracer.tensor_type.get_element_type(), shape)
    dims = list(range(offset, len(shape)))
    return emit(tracer.trace, prim.BroadcastInDimOp(tracer.value, dims, result_type))


def shape(value: Any) -> tuple[int, ...]:
    """numpy's `shape`, for tracers too."""
    return value.shape if isinstance(value, Tracer) else np.shape(value)


def _broadcast_all(trace: Trace, values: Sequence[Any], dtype: np.dtype | None) -> list[Tracer]:
    """Promote to one dtype (unless None) and broadcast to the common shape."""
    try:
        common = np.broadcast_shapes(*(shape(v) for v in values))
    except ValueError as error:
        shapes = ", ".join(str(shape(v)) for v in values)
        raise ValueError(
            f"operands could not be broadcast together with shapes {shapes}"
        ) from error
    return [_broadcast(_as_tracer(trace, v, dtype), common) for v in values]


def _is_weak(value: Any) -> bool:
    """A Python number or a weak tracer (see `Tracer.weak`)."""
    return isinstance(value, bool | int | float | complex) or getattr(value, "weak", False)


def _binary(op_class: type[prim.ElementwiseBinaryOp], lhs: Any, rhs: Any) -> Tracer:
    """`op_class` on the promoted, broadcast operands; weak if both are."""
    trace = _find_trace((lhs, rhs))
    assert trace is not None
    a, b = _broadcast_all(trace, (lhs, rhs), _dtype_for(op_class.KIND, lhs, rhs))
    result = emit(trace, op_class(a.value, b.value))
    result.weak = _is_weak(lhs) and _is_weak(rhs)
    return result


def _real_only(name: str, *values: Any) -> None:
    if builtins.any(np.dtype(_result_dtype(v)).kind == "c" for v in values):
        raise TypeError(f"{name} is defined for real arrays only (got a complex operand)")


# --------------------------------------------------------------------------
# Elementwise arithmetic
# --------------------------------------------------------------------------


@_numpy_when_concrete(prim.AddOp.reference)
def add(x: Any, y: Any) -> Tracer:
    return _binary(prim.AddOp, x, y)


@_numpy_when_concrete(prim.SubOp.reference)
def subtract(x: Any, y: Any) -> Tracer:
    return _binary(prim.SubOp, x, y)


@_numpy_when_concrete(prim.MulOp.reference)
def multiply(x: Any, y: Any) -> Tracer:
    return _binary(prim.MulOp, x, y)


@_numpy_when_concrete(prim.DivOp.reference)
def divide(x: Any, y: Any) -> Tracer:
    return _binary(prim.DivOp, x, y)


@_numpy_when_concrete(prim.MaximumOp.reference)
def maximum(x: Any, y: Any) -> Tracer:
    _real_only("maximum", x, y)
    return _binary(prim.MaximumOp, x, y)


@_numpy_when_concrete(prim.MinimumOp.reference)
def minimum(x: Any, y: Any) -> Tracer:
    _real_only("minimum", x, y)
    return _binary(prim.MinimumOp, x, y)


@_numpy_when_concrete(prim.Atan2Op.reference)
def arctan2(y: Any, x: Any) -> Tracer:
    """The angle of the point (x, y), in (-pi, pi]."""
    _real_only("arctan2", y, x)
    return _binary(prim.Atan2Op, y, x)


@_numpy_when_concrete(np.power)
def power(x: Any, y: Any) -> Tracer:
    """`x ** c` for a constant real scalar c is `prim.pow`; otherwise exp(y·log x)."""
    if isinstance(x, Tracer) and isinstance(y, int | float | np.integer | np.floating):
        dtype = _inexact_dtype(x, y)
        base = _as_tracer(x.trace, x, dtype)
        return emit(x.trace, prim.PowOp(base.value, float(y)))
    return exp(multiply(y, log(x)))


def _unary(op_class: type[prim.ElementwiseUnaryOp], x: Tracer) -> Tracer:
    trace = x.trace
    tracer = _as_tracer(trace, x, _dtype_for(op_class.KIND, x))
    result = emit(trace, op_class(tracer.value))
    result.weak = x.weak
    return result


@_numpy_when_concrete(prim.NegOp.reference)
def negative(x: Any) -> Tracer:
    return _unary(prim.NegOp, x)


@_numpy_when_concrete(prim.ExpOp.reference)
def exp(x: Any) -> Tracer:
    return _unary(prim.ExpOp, x)


@_numpy_when_concrete(prim.LogOp.reference)
def log(x: Any) -> Tracer:
    return _unary(prim.LogOp, x)


@_numpy_when_concrete(prim.SinOp.reference)
def sin(x: Any) -> Tracer:
    return _unary(prim.SinOp, x)


@_numpy_when_concrete(prim.CosOp.reference)
def cos(x: Any) -> Tracer:
    return _unary(prim.CosOp, x)


@_numpy_when_concrete(prim.TanhOp.reference)
def tanh(x: Any) -> Tracer:
    return _unary(prim.TanhOp, x)


@_numpy_when_concrete(prim.SqrtOp.reference)
def sqrt(x: Any) -> Tracer:
    return _unary(prim.SqrtOp, x)


@_numpy_when_concrete(prim.ConjOp.reference)
def conj(x: Any) -> Tracer:
    return x if x.dtype.kind != "c" else _unary(prim.ConjOp, x)


@_numpy_when_concrete(prim.AbsOp.reference)
def abs(x: Any) -> Tracer:  # noqa: A001 - numpy's name
    """The absolute value; for integers `maximum(x, -x)` (the smallest integer stays
    itself, as in numpy)."""
    if x.dtype.kind in "iu":
        return maximum(x, negative(x))
    return emit(x.trace, prim.AbsOp(x.value))


@_numpy_when_concrete(prim.RealOp.reference)
def real(x: Any) -> Tracer:
    return x if x.dtype.kind != "c" else emit(x.trace, prim.RealOp(x.value))


@_numpy_when_concrete(prim.ImagOp.reference)
def imag(x: Any) -> Tracer:
    if x.dtype.kind != "c":
        return _broadcast(constant(x.trace, 0.0, x.dtype), x.shape)
    return emit(x.trace, prim.ImagOp(x.value))


def astype(x: Any, dtype: Any) -> Any:
    """`x.astype(dtype)`; complex to real keeps the real part."""
    target = np.dtype(dtype)
    if not isinstance(x, Tracer):
        return np.asarray(x).astype(target)
    if target not in TRACEABLE_DTYPES:
        raise TypeError(
            f"cannot convert a traced array to {target} (traced dtypes: "
            f"{', '.join(str(d) for d in TRACEABLE_DTYPES)})"
        )
    if target == x.dtype:
        return x
    return emit(x.trace, prim.ConvertOp(x.value, prim.element_type_of_dtype(target)))


# --------------------------------------------------------------------------
# Comparison and selection
# --------------------------------------------------------------------------


def _compare(direction: str, x: Any, y: Any) -> Tracer:
    trace = _find_trace((x, y))
    assert trace is not None
    _real_only(f"comparison '{direction}'", x, y)
    a, b = _broadcast_all(trace, (x, y), _dtype_for("real or integer", x, y))
    return emit(trace, prim.CompareOp(direction, a.value, b.value))


def _comparison(direction: str) -> Callable[[Any, Any], Tracer]:
    """The comparison `direction`: `prim.compare` when traced, its reference on arrays."""
    concrete = functools.partial(prim.CompareOp.reference, direction=direction)
    return _numpy_when_concrete(concrete)(functools.partial(_compare, direction))


less = _comparison("lt")
less_equal = _comparison("le")
greater = _comparison("gt")
greater_equal = _comparison("ge")
equal = _comparison("eq")
not_equal = _comparison("ne")


def _truth_values(x: Any, y: Any) -> tuple[Trace, Tracer, Tracer]:
    """The trace and both operands as boolean tracers of their common shape
    (non-boolean values are `x != 0`)."""
    trace = _find_trace((x, y))
    assert trace is not None
    common = np.broadcast_shapes(shape(x), shape(y))
    a, b = (_broadcast(_truth(trace, v), common) for v in (x, y))
    return trace, a, b


def _truth(trace: Trace, x: Any) -> Tracer:
    if isinstance(x, Tracer):
        return trace.adopt(x if x.dtype == np.bool_ else not_equal(x, 0))
    return constant(trace, np.asarray(x) != 0, np.dtype(np.bool_))


def _choose(trace: Trace, pred: Tracer, a: Tracer | bool, b: Tracer | bool) -> Tracer:
    """`a if pred else b` elementwise (a Python bool broadcast to `pred`'s shape)."""
    a, b = (
        v if isinstance(v, Tracer) else _broadcast(_truth(trace, v), pred.shape) for v in (a, b)
    )
    return emit(trace, prim.SelectOp(pred.value, a.value, b.value))


@_numpy_when_concrete(np.logical_and)
def logical_and(x: Any, y: Any) -> Tracer:
    """Elementwise `x and y` (truth values)."""
    trace, a, b = _truth_values(x, y)
    return _choose(trace, a, b, False)


@_numpy_when_concrete(np.logical_or)
def logical_or(x: Any, y: Any) -> Tracer:
    """Elementwise `x or y` (truth values)."""
    trace, a, b = _truth_values(x, y)
    return _choose(trace, a, True, b)


@_numpy_when_concrete(np.logical_xor)
def logical_xor(x: Any, y: Any) -> Tracer:
    """Elementwise `x != y` of truth values."""
    trace, a, b = _truth_values(x, y)
    return _choose(trace, a, logical_not(b), b)


@_numpy_when_concrete(np.logical_not)
def logical_not(x: Any) -> Tracer:
    """Elementwise `not x` (truth values)."""
    trace, a, _ = _truth_values(x, False)
    return _choose(trace, a, False, True)


def _booleans_only(name: str, *args: Any) -> None:
    """The bitwise functions (`&`, `|`, `^`, `~`) take booleans only here."""
    for arg in args:
        kind = np.result_type(arg).kind if not isinstance(arg, Tracer) else arg.dtype.kind
        if kind != "b" and not isinstance(arg, bool):
            raise TypeError(
                f"{name} is supported on boolean arrays only, got dtype {np.result_type(arg)}; "
                "tidu has no integer bitwise operations"
            )


@_numpy_when_concrete(np.bitwise_and)
def bitwise_and(x: Any, y: Any) -> Tracer:
    """`x & y` of boolean arrays (`logical_and`)."""
    _booleans_only("bitwise_and (&)", x, y)
    return logical_and(x, y)


@_numpy_when_concrete(np.bitwise_or)
def bitwise_or(x: Any, y: Any) -> Tracer:
    """`x | y` of boolean arrays (`logical_or`)."""
    _booleans_only("bitwise_or (|)", x, y)
    return logical_or(x, y)


@_numpy_when_concrete(np.bitwise_xor)
def bitwise_xor(x: Any, y: Any) -> Tracer:
    """`x ^ y` of boolean arrays (`logical_xor`)."""
    _booleans_only("bitwise_xor (^)", x, y)
    return logical_xor(x, y)


@_numpy_when_concrete(np.invert)
def invert(x: Any) -> Tracer:
    """`~x` of a boolean array (`logical_not`)."""
    _booleans_only("invert (~)", x)
    return logical_not(x)


@_numpy_when_concrete(prim.SelectOp.reference)
def where(condition: Any, x: Any, y: Any) -> Tracer:
    """Elementwise `x if condition else y`; a non-boolean condition is `condition != 0`."""
    trace = _find_trace((condition, x, y))
    assert trace is not None
    common = np.broadcast_shapes(shape(condition), shape(x), shape(y))
    if isinstance(condition, Tracer):
        pred = trace.adopt(astype(condition, np.bool_))
    else:
        pred = constant(trace, np.asarray(condition, dtype=np.bool_), np.dtype(np.bool_))
    a, b = _broadcast_all(trace, (x, y), _result_dtype(x, y))
    a, b = _broadcast(a, common), _broadcast(b, common)
    return emit(trace, prim.SelectOp(_broadcast(pred, common).value, a.value, b.value))


# --------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------


def _normalize_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int | np.integer) else tuple(axis)
    normalized = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"axis {a} is out of bounds for an array of dimension {ndim}")
        normalized.append(int(a) % ndim if ndim else 0)
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"repeated axis in {axis}")
    return tuple(sorted(normalized))


def _reduce(op_class: type[prim.ReduceSumOp | prim.ReduceMaxOp], x: Tracer, axis: Any,
            keepdims: bool) -> Tracer:  # fmt: skip
    axes = _normalize_axes(axis, x.ndim)
    result = emit(x.trace, op_class(x.value, axes)) if axes else x
    if keepdims:
        kept = tuple(1 if i in axes else n for i, n in enumerate(x.shape))
        result = reshape(result, kept)
    return result


@_numpy_when_concrete(np.sum)
def sum(x: Any, axis: Any = None, keepdims: bool = False) -> Tracer:  # noqa: A001
    """numpy's sum: booleans and int32 are summed in int64."""
    if x.dtype.kind in "bi" and x.dtype != np.int64:
        x = astype(x, np.int64)
    return _reduce(prim.ReduceSumOp, x, axis, keepdims)


@_numpy_when_concrete(np.mean)
def mean(x: Any, axis: Any = None, keepdims: bool = False) -> Tracer:
    axes = _normalize_axes(axis, x.ndim)
    count = math.prod(x.shape[a] for a in axes)
    total = sum(x, axis=axis, keepdims=keepdims)
    return divide(total, np.asarray(count, dtype=_inexact_dtype(total)))


@_numpy_when_concrete(np.max)
def max(x: Any, axis: Any = None, keepdims: bool = False) -> Tracer:  # noqa: A001
    _real_only("max", x)
    axes = _normalize_axes(axis, x.ndim)
    if builtins.any(x.shape[a] == 0 for a in axes):
        raise ValueError(  # numpy's message: a max over nothing has no value
            "zero-size array to reduction operation maximum which has no identity"
        )
    return _reduce(prim.ReduceMaxOp, x, axis, keepdims)


# --------------------------------------------------------------------------
# Shapes
# --------------------------------------------------------------------------


@_numpy_when_concrete(np.reshape)
def reshape(x: Any, shape: Any) -> Tracer:
    shape = (shape,) if isinstance(shape, int | np.integer) else tuple(int(s) for s in shape)
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension (-1)")
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or x.size % known:
            raise ValueError(f"cannot reshape array of size {x.size} into shape {shape}")
        shape = tuple(x.size // known if s == -1 else s for s in shape)
    if math.prod(shape) != x.size:
        raise ValueError(f"cannot reshape array of size {x.size} into shape {shape}")
    if shape == x.shape:
        return x
    return emit(x.trace, prim.ReshapeOp(x.value, shape))


@_numpy_when_concrete(np.transpose)
def transpose(x: Any, axes: Any = None) -> Tracer:
    permutation = (
        tuple(reversed(range(x.ndim))) if axes is None else tuple(int(a) % x.ndim for a in axes)
    )
    if sorted(permutation) != list(range(x.ndim)):
        raise ValueError(f"axes {axes} are not a permutation of the {x.ndim} axes")
    if permutation == tuple(range(x.ndim)):
        return x
    return emit(x.trace, prim.TransposeOp(x.value, permutation))


@_numpy_when_concrete(np.broadcast_to)
def broadcast_to(x: Any, shape: Any) -> Tracer:
    shape = tuple(shape)
    if np.broadcast_shapes(x.shape, shape) != shape:
        raise ValueError(f"cannot broadcast an array of shape {x.shape} to {shape}")
    return _broadcast(x, shape)


@_numpy_when_concrete(np.concatenate)
def concatenate(arrays: Sequence[Any], axis: int = 0) -> Tracer:
    trace = _find_trace(arrays)
    assert trace is not None
    dtype = _result_dtype(*arrays)
    tracers = [_as_tracer(trace, a, dtype) for a in arrays]
    ndim = tracers[0].ndim
    if ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    return emit(trace, prim.ConcatenateOp([t.value for t in tracers], int(axis) % ndim))


def _basic_getitem(x: Tracer, items: Sequence[Any]) -> Tracer:
    """Static indexing by expanded items (one per axis, or None): integers,
    slices (a negative step is a positive one on the reversed axis) and None."""
    reversed_axes: list[int] = []
    bounds: list[tuple[int, int, int]] = []
    final_shape: list[int] = []
    axis = 0
    for item in items:
        if item is None:
            final_shape.append(1)
            continue
        size = x.shape[axis]
        if isinstance(item, slice):
            first, stop, step = item.indices(size)
            if step < 0:  # the same elements taken forwards, then reversed
                count = len(range(first, stop, step))
                first, stop, step = first + (count - 1) * step, first + 1, -step
                reversed_axes.append(axis)
            stop = builtins.max(stop, first)
            bounds.append((first, stop, step))
            final_shape.append(len(range(first, stop, step)))
        else:
            position = int(item)
            if not -size <= position < size:
                raise IndexError(
                    f"index {position} is out of bounds for axis {axis} with size {size}"
                )
            position %= size
            bounds.append((position, position + 1, 1))
        axis += 1
    result = x
    if bounds != [(0, n, 1) for n in x.shape]:
        start, limit, stride = (list(column) for column in zip(*bounds, strict=True))
        result = emit(x.trace, prim.SliceOp(x.value, start, limit, stride))
    for axis in reversed_axes:
        result = _reverse(result, axis)
    return reshape(result, tuple(final_shape))


# --------------------------------------------------------------------------
# Products
# --------------------------------------------------------------------------


def _dot_general(lhs: Tracer, rhs: Tracer, lhs_batch: Sequence[int], rhs_batch: Sequence[int],
                 lhs_contract: Sequence[int], rhs_contract: Sequence[int]) -> Tracer:  # fmt: skip
    return emit(lhs.trace, prim.DotGeneralOp(
        lhs.value, rhs.value, lhs_batch=lhs_batch, rhs_batch=rhs_batch,
        lhs_contract=lhs_contract, rhs_contract=rhs_contract,
    ))  # fmt: skip


def _promoted_pair(x: Any, y: Any) -> tuple[Tracer, Tracer]:
    """Both operands of a product in one float or complex dtype (products of
    integers are computed, and returned, in float64)."""
    trace = _find_trace((x, y))
    assert trace is not None
    dtype = _inexact_dtype(x, y)
    return _as_tracer(trace, x, dtype), _as_tracer(trace, y, dtype)


@_numpy_when_concrete(np.matmul)
def matmul(x: Any, y: Any) -> Tracer:
    """numpy's `@`: 1-D operands are promoted and squeezed, batch axes broadcast."""
    a, b = _promoted_pair(x, y)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: input operand does not have enough dimensions")
    a2 = reshape(a, (1, *a.shape)) if a.ndim == 1 else a
    b2 = reshape(b, (*b.shape, 1)) if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise ValueError(f"matmul: mismatch in core dimension ({a.shape} @ {b.shape})")
    batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    a2 = _broadcast(a2, (*batch, *a2.shape[-2:]))
    b2 = _broadcast(b2, (*batch, *b2.shape[-2:]))
    k = len(batch)
    result = _dot_general(a2, b2, range(k), range(k), [k + 1], [k])
    rows = a2.shape[-2:-1] if a.ndim > 1 else ()
    columns = b2.shape[-1:] if b.ndim > 1 else ()
    return reshape(result, (*batch, *rows, *columns))


@_numpy_when_concrete(np.dot)
def dot(x: Any, y: Any) -> Tracer:
    """numpy's `dot`: sum over the last axis of x and the second-to-last of y."""
    a, b = _promoted_pair(x, y)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    rhs_axis = 0 if b.ndim == 1 else b.ndim - 2
    if a.shape[-1] != b.shape[rhs_axis]:
        raise ValueError(f"shapes {a.shape} and {b.shape} not aligned for dot")
    return _dot_general(a, b, [], [], [a.ndim - 1], [rhs_axis])


@_numpy_when_concrete(np.einsum)
def einsum(subscripts: str, *operands: Any) -> Tracer:
    """Explicit or implicit einsum of one or more operands (no ellipsis, no diagonals)."""
    inputs, output = _parse_einsum(subscripts, len(operands))
    trace = _find_trace(operands)
    assert trace is not None
    dtype = _inexact_dtype(*operands)
    terms = [
        (_as_tracer(trace, op, dtype), spec) for op, spec in zip(operands, inputs, strict=True)
    ]
    for tracer, spec in terms:
        if len(spec) != tracer.ndim:
            raise ValueError(
                f"einsum: '{spec}' has {len(spec)} indices for a {tracer.ndim}-d operand"
            )
    result, spec = terms[0]
    for position, (tracer, other) in enumerate(terms[1:], start=1):
        later = set(output).union(*(s for _, s in terms[position + 1 :]))
        result, spec = _einsum_pair(result, spec, tracer, other, later)
    needed = set(output)
    result, spec = _sum_out(result, spec, needed)
    return transpose(result, [spec.index(c) for c in output]) if spec != output else result


def _parse_einsum(subscripts: str, count: int) -> tuple[list[str], str]:
    text = subscripts.replace(" ", "")
    if "." in text:
        raise ValueError("einsum: ellipsis ('...') is not supported")
    lhs, arrow, rhs = text.partition("->")
    inputs = lhs.split(",")
    if len(inputs) != count:
        raise ValueError(f"einsum: {len(inputs)} operand specs for {count} operands")
    for spec in inputs:
        if len(set(spec)) != len(spec):
            raise ValueError(f"einsum: repeated index in '{spec}' (diagonals) is not supported")
    if not arrow:
        letters = "".join(inputs)
        rhs = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    return inputs, rhs


def _sum_out(x: Tracer, spec: str, keep: set[str]) -> tuple[Tracer, str]:
    """Sum over the indices of `spec` not in `keep`."""
    axes = [i for i, c in enumerate(spec) if c not in keep]
    if not axes:
        return x, spec
    return sum(x, axis=tuple(axes)), "".join(c for c in spec if c in keep)


def _einsum_pair(a: Tracer, sa: str, b: Tracer, sb: str, later: set[str]) -> tuple[Tracer, str]:
    """Contract two einsum terms, keeping the indices in `later`."""
    a, sa = _sum_out(a, sa, later | set(sb))
    b, sb = _sum_out(b, sb, later | set(sa))
    batch = [c for c in sa if c in sb and c in later]
    contract = [c for c in sa if c in sb and c not in later]
    for c in batch + contract:
        if a.shape[sa.index(c)] != b.shape[sb.index(c)]:
            raise ValueError(f"einsum: index '{c}' has sizes {a.shape[sa.index(c)]} and "
                             f"{b.shape[sb.index(c)]}")  # fmt: skip
    result = _dot_general(
        a, b, [sa.index(c) for c in batch], [sb.index(c) for c in batch],
        [sa.index(c) for c in contract], [sb.index(c) for c in contract],
    )  # fmt: skip
    free_a = [c for c in sa if c not in sb]
    free_b = [c for c in sb if c not in sa]
    return result, "".join(batch + free_a + free_b)


# --------------------------------------------------------------------------
# Constructors
# --------------------------------------------------------------------------


def _has_tracer(value: Any) -> bool:
    """Whether `value` is a tracer or a (nested) list/tuple holding one."""
    if isinstance(value, list | tuple):
        return builtins.any(_has_tracer(item) for item in value)
    return isinstance(value, Tracer)


class ConstantArray(np.ndarray):
    """What the constructors (`zeros`, `arange`, `array`, ...) return: a numpy
    array that also has JAX's `.at` (`tnp.zeros(3).at[i].set(v)`), computed by
    numpy for concrete indices and values and traced when either is traced."""

    @property
    def at(self) -> IndexUpdateHelper:
        """Functional updates: `x.at[index].set(values)`, `.add`, `.multiply`, ..."""
        return IndexUpdateHelper(self)

    def __getitem__(self, index: Any) -> Any:
        """numpy's indexing; a traced index reads the array as a constant of
        the index's trace (`tnp.asarray(table)[i]`, as in JAX)."""
        items = index if isinstance(index, tuple) else (index,)
        trace = _find_trace(items)
        if trace is None:
            return super().__getitem__(index)
        return getitem(as_tracer(trace, self.view(np.ndarray)), index)

    def __repr__(self) -> str:
        return repr(self.view(np.ndarray))


def _with_at(fn: Callable[P, R]) -> Callable[P, R]:
    """Return numpy results of `fn` as `ConstantArray`s (a view, no copy)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        result = fn(*args, **kwargs)
        return result.view(ConstantArray) if type(result) is np.ndarray else result  # type: ignore[return-value]

    return wrapper


@_with_at
def zeros(shape: Any, dtype: Any = None) -> np.ndarray:
    """numpy's `zeros` (float64 unless `dtype`): a concrete array, a constant when traced."""
    return np.zeros(shape, dtype=dtype)


@_with_at
def ones(shape: Any, dtype: Any = None) -> np.ndarray:
    """numpy's `ones` (float64 unless `dtype`)."""
    return np.ones(shape, dtype=dtype)


@_with_at
def empty(shape: Any, dtype: Any = None) -> np.ndarray:
    """numpy's `empty`: uninitialized values, as numpy's."""
    return np.empty(shape, dtype=dtype)


@_with_at
def full(shape: Any, fill_value: Any, dtype: Any = None) -> Any:
    """numpy's `full`; a traced `fill_value` is broadcast (and differentiated)."""
    if not isinstance(fill_value, Tracer):
        return np.full(shape, fill_value, dtype=dtype)
    shape = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
    value = fill_value if dtype is None else astype(fill_value, dtype)
    return broadcast_to(value, shape)


def _like(a: Any, dtype: Any, shape: Any) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and dtype of a `*_like` result: `a`'s unless given."""
    if shape is None:
        shape = np.shape(a) if not isinstance(a, Tracer) else a.shape
    shape = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
    if dtype is None:
        dtype = a.dtype if isinstance(a, Tracer) else np.asarray(a).dtype
    return shape, np.dtype(dtype)


@_with_at
def zeros_like(a: Any, dtype: Any = None, shape: Any = None) -> np.ndarray:
    """Zeros of `a`'s shape and dtype: a concrete array even for a tracer
    (only its shape and dtype are read), so it mixes with traced values."""
    return np.zeros(*_like(a, dtype, shape))


@_with_at
def ones_like(a: Any, dtype: Any = None, shape: Any = None) -> np.ndarray:
    """Ones of `a`'s shape and dtype (concrete, as `zeros_like`)."""
    return np.ones(*_like(a, dtype, shape))


@_with_at
def empty_like(a: Any, dtype: Any = None, shape: Any = None) -> np.ndarray:
    """numpy's `empty_like` on arrays; for a tracer, zeros (a constant must have values)."""
    if not isinstance(a, Tracer):
        return np.empty_like(a, dtype=dtype, shape=shape)
    return np.zeros(*_like(a, dtype, shape))


@_with_at
def full_like(a: Any, fill_value: Any, dtype: Any = None, shape: Any = None) -> Any:
    """`fill_value` in `a`'s shape and dtype; a traced `fill_value` is broadcast."""
    result_shape, result_dtype = _like(a, dtype, shape)
    return full(result_shape, fill_value, result_dtype)


@_with_at
def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = float) -> np.ndarray:  # noqa: N803
    """numpy's `eye`: ones on the `k`-th diagonal of an N x M matrix."""
    return np.eye(N, M, k, dtype=dtype)


@_with_at
def identity(n: int, dtype: Any = None) -> np.ndarray:
    """numpy's `identity`: the n x n identity matrix."""
    return np.identity(n, dtype=dtype)


@_with_at
def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None) -> np.ndarray:
    """numpy's `arange`; the bounds must be concrete (they fix the length)."""
    if _has_tracer([start, stop, step]):
        raise TypeError("arange: start, stop and step must be concrete numbers "
                        "(the length of the result must be known while tracing)")  # fmt: skip
    return np.arange(start, stop, step, dtype=dtype)


@_with_at
def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype: Any = None, axis: int = 0) -> Any:  # fmt: skip
    """numpy's `linspace`; traced `start`/`stop` give `start + (stop - start) * t`
    for the fixed fractions t (the endpoint exactly `stop`, as numpy)."""
    if retstep:
        if _has_tracer([start, stop]):
            raise TypeError("linspace: retstep=True is not supported for traced endpoints")
        return np.linspace(start, stop, num, endpoint, retstep=True, dtype=dtype, axis=axis)
    if not _has_tracer([start, stop]):
        return np.linspace(start, stop, num, endpoint, dtype=dtype, axis=axis)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    trace = _find_trace((start, stop))
    assert trace is not None
    result_dtype = _result_dtype(start, stop, float(num)) if dtype is None else np.dtype(dtype)
    lo, hi = _broadcast_all(trace, (start, stop), result_dtype)
    divisor = builtins.max(num - 1 if endpoint else num, 1)
    fractions = (np.arange(num) / divisor).reshape((num,) + (1,) * lo.ndim)
    values = add(lo, multiply(subtract(hi, lo), fractions.astype(result_dtype)))
    if endpoint and num > 1:
        last = (np.arange(num) == num - 1).reshape(fractions.shape)
        values = where(last, hi, values)
    return moveaxis(values, 0, axis)


@_with_at
def array(object: Any, dtype: Any = None) -> Any:  # noqa: A002 - numpy's name
    """numpy's `array`; a (nested) list holding tracers is stacked into one."""
    if not _has_tracer(object):
        return np.array(object, dtype=dtype)
    if isinstance(object, Tracer):
        result = object
    else:
        result = stack([item if isinstance(item, Tracer) else array(item) for item in object])
    return result if dtype is None else astype(result, dtype)


@_with_at
def asarray(a: Any, dtype: Any = None) -> Any:
    """numpy's `asarray`: tracers as they are (cast to `dtype`), lists stacked."""
    if isinstance(a, Tracer):
        return a if dtype is None else astype(a, dtype)
    return array(a, dtype) if _has_tracer(a) else np.asarray(a, dtype=dtype)


@_numpy_when_concrete(np.stack)
def stack(arrays: Sequence[Any], axis: int = 0) -> Tracer:
    """Join arrays of one shape along a new axis."""
    if not arrays:
        raise ValueError("need at least one array to stack")
    shapes = {shape(a) for a in arrays}
    if len(shapes) != 1:
        raise ValueError(f"all input arrays must have the same shape, got {sorted(shapes)}")
    ndim = len(shapes.pop()) + 1
    (position,) = _normalize_axes(axis, ndim)
    return concatenate([expand_dims(a, position) for a in arrays], axis=position)


@_numpy_when_concrete(np.hstack)
def hstack(tup: Sequence[Any]) -> Tracer:
    """Concatenate along the second axis (the first for 1-d arrays)."""
    arrays = [reshape(a, (1,)) if len(shape(a)) == 0 else a for a in tup]
    return concatenate(arrays, axis=0 if len(shape(arrays[0])) == 1 else 1)


@_numpy_when_concrete(np.vstack)
def vstack(tup: Sequence[Any]) -> Tracer:
    """Concatenate along the first axis, 0-d and 1-d arrays as rows."""
    arrays = [reshape(a, (1, -1)) if len(shape(a)) < 2 else a for a in tup]
    return concatenate(arrays, axis=0)


# --------------------------------------------------------------------------
# Shape functions (made of reshape, transpose, slicing and concatenation)
# --------------------------------------------------------------------------


def _axis_list(axis: Any, ndim: int) -> list[int]:
    """Axes in the order given (not sorted), normalized and checked."""
    axes = [axis] if isinstance(axis, int | np.integer) else list(axis)
    normalized = [_normalize_axes(int(a), ndim)[0] for a in axes]
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"repeated axis in {axis}")
    return normalized


def _take_along(x: Tracer, axis: int, start: int, stop: int, step: int = 1) -> Tracer:
    """`x[..., start:stop:step, ...]` on `axis`."""
    return getitem(x, (slice(None),) * axis + (slice(start, stop, step),))


@_numpy_when_concrete(np.squeeze)
def squeeze(a: Any, axis: Any = None) -> Tracer:
    """Drop axes of length one (all of them, or those in `axis`)."""
    if axis is None:
        axes = tuple(i for i, n in enumerate(a.shape) if n == 1)
    else:
        axes = _normalize_axes(axis, a.ndim)
    for i in axes:
        if a.shape[i] != 1:
            raise ValueError(f"cannot select an axis to squeeze out which has size not equal "
                             f"to one: axis {i} of shape {a.shape}")  # fmt: skip
    return reshape(a, tuple(n for i, n in enumerate(a.shape) if i not in axes))


@_numpy_when_concrete(np.expand_dims)
def expand_dims(a: Any, axis: Any) -> Tracer:
    """Insert axes of length one at the positions `axis` of the result."""
    count = 1 if isinstance(axis, int | np.integer) else len(tuple(axis))
    axes = _normalize_axes(axis, a.ndim + count)
    sizes = iter(a.shape)
    return reshape(a, tuple(1 if i in axes else next(sizes) for i in range(a.ndim + count)))


@_numpy_when_concrete(np.ravel)
def ravel(a: Any) -> Tracer:
    """The elements as a 1-d array (row-major)."""
    return reshape(a, (-1,))


@_numpy_when_concrete(np.moveaxis)
def moveaxis(a: Any, source: Any, destination: Any) -> Tracer:
    """Move axes `source` to positions `destination`, the others keeping their order."""
    sources, destinations = _axis_list(source, a.ndim), _axis_list(destination, a.ndim)
    if len(sources) != len(destinations):
        raise ValueError("`source` and `destination` arguments must have the same number "
                         "of elements")  # fmt: skip
    order = [i for i in range(a.ndim) if i not in sources]
    for target, origin in sorted(zip(destinations, sources, strict=True)):
        order.insert(target, origin)
    return transpose(a, order)


@_numpy_when_concrete(np.swapaxes)
def swapaxes(a: Any, axis1: int, axis2: int) -> Tracer:
    """Exchange two axes."""
    (first,), (second,) = _axis_list(axis1, a.ndim), _axis_list(axis2, a.ndim)
    order = list(range(a.ndim))
    order[first], order[second] = second, first
    return transpose(a, order)


@_numpy_when_concrete(np.split)
def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Tracer]:
    """Equal sections (an integer) or the pieces between sorted indices, along `axis`."""
    if ary.ndim == 0:
        raise ValueError("split: a 0-d array cannot be split")
    (position,) = _axis_list(axis, ary.ndim)
    size = ary.shape[position]
    if isinstance(indices_or_sections, int | np.integer):
        sections = int(indices_or_sections)
        if sections <= 0 or size % sections:
            raise ValueError(f"array split does not result in an equal division: axis "
                             f"{position} of size {size} into {sections} sections")  # fmt: skip
        indices = [size // sections * i for i in range(1, sections)]
    else:
        indices = [int(i) for i in indices_or_sections]
    bounds = [0, *indices, size]
    return [_take_along(ary, position, lo, hi) for lo, hi in itertools.pairwise(bounds)]


def _reverse(x: Tracer, axis: int) -> Tracer:
    """`x` reversed along `axis`: one gather at the positions n-1, ..., 0."""
    size = x.shape[axis]
    if size <= 1:
        return x
    backwards = constant(x.trace, np.arange(size - 1, -1, -1, dtype=np.int64), np.dtype(np.int64))
    return _gather(x, backwards, axis)


@_numpy_when_concrete(np.flip)
def flip(m: Any, axis: Any = None) -> Tracer:
    """Reverse the order of elements along `axis` (all axes when None)."""
    result = m
    for a in _normalize_axes(axis, m.ndim):
        result = _reverse(result, a)
    return result


@_numpy_when_concrete(np.roll)
def roll(a: Any, shift: Any, axis: Any = None) -> Tracer:
    """Rotate elements by `shift` along `axis` (of the flattened array when None)."""
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), a.shape)
    shifts, axes = np.broadcast_arrays(np.asarray(shift), np.asarray(axis))
    totals: dict[int, int] = {}
    for s, ax in zip(shifts.ravel(), axes.ravel(), strict=True):
        (position,) = _axis_list(int(ax), a.ndim)
        totals[position] = totals.get(position, 0) + int(s)
    result = a
    for position, total in totals.items():
        size = a.shape[position]
        offset = total % size if size else 0
        if offset:
            head = _take_along(result, position, size - offset, size)
            tail = _take_along(result, position, 0, size - offset)
            result = concatenate([head, tail], axis=position)
    return result


@_numpy_when_concrete(np.tile)
def tile(A: Any, reps: Any) -> Tracer:  # noqa: N803 - numpy's name
    """`A` repeated `reps` times along each axis (a broadcast and a reshape)."""
    counts = (int(reps),) if isinstance(reps, int | np.integer) else tuple(int(r) for r in reps)
    if builtins.any(r < 0 for r in counts):
        raise ValueError(f"tile: negative repetitions {counts}")
    ndim = builtins.max(A.ndim, len(counts))
    counts = (1,) * (ndim - len(counts)) + counts
    sizes = (1,) * (ndim - A.ndim) + A.shape
    interleaved = reshape(A, tuple(v for n in sizes for v in (1, n)))
    spread = broadcast_to(interleaved, tuple(v for r, n in zip(counts, sizes, strict=True)
                                             for v in (r, n)))  # fmt: skip
    return reshape(spread, tuple(r * n for r, n in zip(counts, sizes, strict=True)))


def repeat(a: Any, repeats: Any, axis: int | None = None, *,
           total_repeat_length: int | None = None) -> Any:  # fmt: skip
    """Each element `repeats` times along `axis` (flattened when None); `repeats`
    an integer or one per element (concrete). JAX's `total_repeat_length` cuts
    the result to that length or pads it with the last element."""
    if isinstance(repeats, Tracer):
        raise TypeError("repeat: repeats must be concrete (they fix the result's length)")
    counts = np.asarray(repeats)
    if counts.dtype.kind not in "iu" or np.any(counts < 0):
        raise ValueError(f"repeat: repeats must be non-negative integers, got {repeats!r}")
    x = ravel(a) if axis is None else a
    (position,) = _axis_list(0 if axis is None else axis, np.ndim(x))
    if not isinstance(x, Tracer):
        x = np.asarray(x)
    if counts.ndim == 0 and total_repeat_length is None and isinstance(x, Tracer):
        return _repeat_each(x, int(counts), position)
    positions = np.repeat(np.arange(np.shape(x)[position]), counts)
    if total_repeat_length is not None:
        pad = builtins.max(total_repeat_length - positions.size, 0)
        last = positions[-1:] if positions.size else np.zeros(1, np.int64)
        positions = np.concatenate([positions[:total_repeat_length], np.repeat(last, pad)])
    if not isinstance(x, Tracer):
        return np.take(x, positions, axis=position).view(ConstantArray)
    return take(x, positions.astype(np.int64), axis=position)


def _repeat_each(x: Tracer, count: int, position: int) -> Tracer:
    """Every element `count` times along `position`, by one broadcast."""
    expanded = expand_dims(x, position + 1)
    target = (*x.shape[: position + 1], count, *x.shape[position + 1 :])
    merged = (*x.shape[:position], x.shape[position] * count, *x.shape[position + 1 :])
    return reshape(broadcast_to(expanded, target), merged)


@_numpy_when_concrete(np.diagonal)
def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tracer:
    """The `offset`-th diagonal of the (axis1, axis2) planes, as the last axis:
    a strided slice of the flattened planes."""
    if a.ndim < 2:
        raise ValueError(f"diagonal requires an array of at least two dimensions, got {a.shape}")
    first, second = _axis_list((axis1, axis2), a.ndim)
    planes = moveaxis(a, (first, second), (-2, -1))
    rows, columns = planes.shape[-2:]
    if offset >= 0:
        count, start = builtins.max(0, builtins.min(rows, columns - offset)), offset
    else:
        count, start = builtins.max(0, builtins.min(rows + offset, columns)), -offset * columns
    flat = reshape(planes, (*planes.shape[:-2], rows * columns))
    if count == 0:
        return _take_along(flat, flat.ndim - 1, 0, 0)
    stop = start + (count - 1) * (columns + 1) + 1
    return _take_along(flat, flat.ndim - 1, start, stop, columns + 1)


@_numpy_when_concrete(np.diag)
def diag(v: Any, k: int = 0) -> Tracer:
    """A 1-d `v` on the `k`-th diagonal of a square matrix, or a 2-d `v`'s `k`-th diagonal.

    The matrix is `v` with `size` zeros between its elements (`prim.pad`,
    interior padding), shifted to the diagonal's start and reshaped."""
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError(f"diag: input must be 1- or 2-d, got shape {v.shape}")
    n, size = v.shape[0], v.shape[0] + builtins.abs(k)
    if n == 0:
        return _broadcast(constant(v.trace, 0.0, v.dtype), (size, size))
    low = k if k >= 0 else -k * size
    high = size * size - low - (n + (n - 1) * size)
    padded = emit(v.trace, prim.PadOp(v.value, [low], [high], [size]))
    return reshape(padded, (size, size))


@_numpy_when_concrete(np.trace)
def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tracer:
    """The sum along a diagonal."""
    return sum(diagonal(a, offset, axis1, axis2), axis=-1)


def _triangle(name: str, m: Tracer, k: int, lower: bool) -> Tracer:
    """`m` with zeros above (`lower`) or below the `k`-th diagonal of its last two axes."""
    if m.ndim == 0:
        raise ValueError(f"{name}: input must be at least 1-d, got a 0-d array")
    rows, columns = m.shape[-2:] if m.ndim >= 2 else m.shape * 2
    below = np.tri(rows, columns, k=k if lower else k - 1, dtype=bool)
    return where(below if lower else ~below, m, 0.0)


@_numpy_when_concrete(np.triu)
def triu(m: Any, k: int = 0) -> Tracer:
    """Zero below the `k`-th diagonal of the last two axes."""
    return _triangle("triu", m, k, lower=False)


@_numpy_when_concrete(np.tril)
def tril(m: Any, k: int = 0) -> Tracer:
    """Zero above the `k`-th diagonal of the last two axes."""
    return _triangle("tril", m, k, lower=True)


# --------------------------------------------------------------------------
# Elementwise math (composites with finite, accurate derivatives)
# --------------------------------------------------------------------------

LN2 = math.log(2.0)


def _safe_where(condition: Tracer, f_true: Callable[[Tracer], Tracer],
                f_false: Callable[[Tracer], Tracer], x: Tracer, fill_true: float,
                fill_false: float) -> Tracer:  # fmt: skip
    """`where(condition, f_true(x), f_false(x))`, each branch seeing `x` only
    where it is selected (a harmless fill elsewhere), so the branch not taken
    contributes no inf or nan to values or gradients."""
    inside = f_true(where(condition, x, fill_true))
    outside = f_false(where(condition, fill_false, x))
    return where(condition, inside, outside)


def _odd(f: Callable[[Tracer], Tracer], x: Tracer) -> Tracer:
    """An odd function from its values on x >= 0 (derivative at 0 is f'(0))."""
    negative_side = less(x, 0.0)
    value = f(where(negative_side, -x, x))
    return where(negative_side, -value, value)


def _atanh_series(s: Tracer) -> Tracer:
    """atanh(s) = s + s^3/3 + s^5/5 + ... for |s| <= 0.1 (12 terms: exact to
    rounding there, and a polynomial: exact derivatives)."""
    s2 = s * s
    acc: Any = 1.0 / 23.0
    for odd in range(21, 0, -2):
        acc = acc * s2 + 1.0 / odd
    return s * acc


def _log1p(u: Tracer) -> Tracer:
    """log(1 + u), accurate for small u: 2·atanh(u / (2 + u)) by the series."""
    return _safe_where(less(abs(u), 0.1), lambda v: 2.0 * _atanh_series(v / (2.0 + v)),
                       lambda v: log(1.0 + v), u, 0.0, 1.0)  # fmt: skip


def _float(x: Tracer) -> Tracer:
    """`x` as a float or complex tracer (integers and booleans as float64)."""
    return _as_tracer(x.trace, x, _inexact_dtype(x))


@_numpy_when_concrete(np.square)
def square(x: Any) -> Tracer:
    """`x * x`."""
    return multiply(x, x)


@_numpy_when_concrete(np.reciprocal)
def reciprocal(x: Any) -> Tracer:
    """1 / x."""
    return divide(1.0, x)


@_numpy_when_concrete(np.clip)
def clip(a: Any, a_min: Any = None, a_max: Any = None) -> Tracer:
    """`minimum(maximum(a, a_min), a_max)`, a bound None meaning none."""
    _real_only("clip", a, *(v for v in (a_min, a_max) if v is not None))
    result = a if a_min is None else maximum(a, a_min)
    return result if a_max is None else minimum(result, a_max)


@_numpy_when_concrete(np.min)
def min(a: Any, axis: Any = None, out: None = None, keepdims: bool = False) -> Tracer:  # noqa: A001
    """The smallest element over `axis`: `-max(-a)`. Real arrays only."""
    if out is not None:
        raise TypeError("min: out= is not supported")
    _real_only("min", a)
    if builtins.any(a.shape[i] == 0 for i in _normalize_axes(axis, a.ndim)):
        raise ValueError("zero-size array to reduction operation minimum which has no identity")
    if a.dtype.kind in "iu":  # -1 - x reverses the order of integers without overflow
        return subtract(-1, max(subtract(-1, a), axis=axis, keepdims=keepdims))
    return negative(max(negative(a), axis=axis, keepdims=keepdims))


@_numpy_when_concrete(np.amin)
def amin(a: Any, axis: Any = None, out: None = None, keepdims: bool = False) -> Tracer:
    """numpy's alias of `min`."""
    return min(a, axis, out, keepdims)


@_numpy_when_concrete(np.amax)
def amax(a: Any, axis: Any = None, out: None = None, keepdims: bool = False) -> Tracer:
    """numpy's alias of `max`."""
    if out is not None:
        raise TypeError("amax: out= is not supported")
    return max(a, axis=axis, keepdims=keepdims)


@_numpy_when_concrete(np.var)
def var(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: float = 0,
        keepdims: bool = False) -> Tracer:  # fmt: skip
    """The mean squared deviation, divided by `count - ddof`; real for complex `a`."""
    if out is not None:
        raise TypeError("var: out= is not supported")
    x = _float(a) if dtype is None else astype(a, dtype)
    count = math.prod(x.shape[i] for i in _normalize_axes(axis, x.ndim))
    deviation = subtract(x, mean(x, axis=axis, keepdims=True))
    squares = real(multiply(deviation, conj(deviation)))
    total = sum(squares, axis=axis, keepdims=keepdims)
    return divide(total, np.asarray(builtins.max(count - ddof, 0), dtype=total.dtype))


@_numpy_when_concrete(np.std)
def std(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: float = 0,
        keepdims: bool = False) -> Tracer:  # fmt: skip
    """The square root of `var`."""
    return sqrt(var(a, axis, dtype, out, ddof, keepdims))


@_numpy_when_concrete(np.log1p)
def log1p(x: Any) -> Tracer:
    """log(1 + x), accurate for small x (`_log1p`). Real arrays only."""
    _real_only("log1p", x)
    return _log1p(_float(x))


def _expm1_series(v: Tracer) -> Tracer:
    """exp(v) - 1 for |v| <= 0.1 by Taylor's series to v^10/10! (error < 1e-17 |v|)."""
    term, total = v, v
    for k in range(2, 11):
        term = term * v / k
        total = total + term
    return total


@_numpy_when_concrete(np.expm1)
def expm1(x: Any) -> Tracer:
    """exp(x) - 1, accurate for small x (a series below 0.1). Real arrays only."""
    _real_only("expm1", x)
    return _safe_where(less(abs(x := _float(x)), 0.1), _expm1_series,
                       lambda v: exp(v) - 1.0, x, 0.0, 1.0)  # fmt: skip


@_numpy_when_concrete(np.log2)
def log2(x: Any) -> Tracer:
    """log(x) / log(2)."""
    return divide(log(x), LN2)


@_numpy_when_concrete(np.log10)
def log10(x: Any) -> Tracer:
    """log(x) / log(10)."""
    return divide(log(x), math.log(10.0))


@_numpy_when_concrete(np.exp2)
def exp2(x: Any) -> Tracer:
    """exp(x · log 2)."""
    return exp(multiply(x, LN2))


@_numpy_when_concrete(np.sinh)
def sinh(x: Any) -> Tracer:
    """`(e^x - e^-x) / 2`, as `2t / (1 - t²)` with `t = tanh(x/2)` for `|x| < 1` (no
    cancellation near 0); the halving inside the exponent keeps it finite as
    far as numpy's."""
    x = _float(x)

    def near_zero(v: Tracer) -> Tracer:
        t = tanh(v * 0.5)
        return 2.0 * t / ((1.0 - t) * (1.0 + t))

    def far(v: Tracer) -> Tracer:
        return exp(v - LN2) - exp(-v - LN2)

    return _safe_where(less(abs(x), 1.0), near_zero, far, x, 0.0, 1.0)


@_numpy_when_concrete(np.cosh)
def cosh(x: Any) -> Tracer:
    """1 + 2·sinh(x/2)²: accurate, and so is its derivative sinh(x) near 0."""
    return add(1.0, multiply(2.0, square(sinh(multiply(x, 0.5)))))


@_numpy_when_concrete(np.arctan)
def arctan(x: Any) -> Tracer:
    """arctan2(x, 1). Real arrays only."""
    _real_only("arctan", x)
    return arctan2(x, 1.0)


def _cosine_of_arcsin(x: Tracer) -> Tracer:
    """sqrt(1 - x²) as sqrt((1 - x)(1 + x)): accurate near |x| = 1."""
    return sqrt(multiply(subtract(1.0, x), add(1.0, x)))


@_numpy_when_concrete(np.arcsin)
def arcsin(x: Any) -> Tracer:
    """arctan2(x, sqrt(1 - x²)); nan outside [-1, 1]. Real arrays only."""
    _real_only("arcsin", x)
    return arctan2(x, _cosine_of_arcsin(x))


@_numpy_when_concrete(np.arccos)
def arccos(x: Any) -> Tracer:
    """arctan2(sqrt(1 - x²), x); nan outside [-1, 1]. Real arrays only."""
    _real_only("arccos", x)
    return arctan2(_cosine_of_arcsin(x), x)


@_numpy_when_concrete(np.arcsinh)
def arcsinh(x: Any) -> Tracer:
    """Odd: for a >= 0, log1p(a + a²/(1 + sqrt(1 + a²))) (accurate near 0), and
    log(a) + log 2 beyond 1e8 (where a² would overflow). Real arrays only."""
    _real_only("arcsinh", x)

    def positive(a: Tracer) -> Tracer:
        def moderate(v: Tracer) -> Tracer:
            return _log1p(v + v * v / (1.0 + sqrt(1.0 + v * v)))

        return _safe_where(greater(a, 1e8), lambda v: log(v) + LN2, moderate, a, 1e9, 0.0)

    return _odd(positive, _float(x))


@_numpy_when_concrete(np.arctanh)
def arctanh(x: Any) -> Tracer:
    """Odd: the series below 0.1, else log((1 + a)/(1 - a)) / 2 (inf at 1,
    nan beyond). Real arrays only."""
    _real_only("arctanh", x)

    def positive(a: Tracer) -> Tracer:
        def far(v: Tracer) -> Tracer:
            return 0.5 * log((1.0 + v) / (1.0 - v))

        return _safe_where(less(a, 0.1), _atanh_series, far, a, 0.0, 0.5)

    return _odd(positive, _float(x))


@_numpy_when_concrete(np.hypot)
def hypot(x1: Any, x2: Any) -> Tracer:
    """`sqrt(x1² + x2²)` scaled by `m = max(|x1|, |x2|)` (no overflow or underflow);
    0 at the origin, inf if either is. Real arrays only."""
    _real_only("hypot", x1, x2)
    trace = _find_trace((x1, x2))
    assert trace is not None
    a, b = (abs(t) for t in _broadcast_all(trace, (x1, x2), _inexact_dtype(x1, x2)))
    largest = maximum(a, b)
    zero = equal(largest, 0.0)
    scale = where(zero, 1.0, largest)
    ratio = add(square(a / scale), square(b / scale))
    scaled = largest * sqrt(where(zero, 1.0, ratio))
    return where(equal(largest, np.inf), largest, where(zero, 0.0, scaled))


@_numpy_when_concrete(np.logaddexp)
def logaddexp(x1: Any, x2: Any) -> Tracer:
    """`log(e^x1 + e^x2)` as `larger + log1p(e^-|x1 - x2|)` (no overflow), each
    side a smooth formula (exact derivatives of every order at ties too); equal
    infinities, whose difference is nan, give `x + log 2`. Real arrays only."""
    _real_only("logaddexp", x1, x2)
    trace = _find_trace((x1, x2))
    assert trace is not None
    a, b = _broadcast_all(trace, (x1, x2), _inexact_dtype(x1, x2))
    gap = subtract(a, b)
    undefined = isnan(gap)  # inf - inf, or a nan argument
    gap = where(undefined, 0.0, gap)
    first_larger = greater(gap, 0.0)
    larger = where(first_larger, a, b)
    distance = where(first_larger, negative(gap), gap)  # -|a - b|
    result = larger + _log1p(exp(distance))
    return where(undefined, (a + b) * 0.5 + LN2, result)


def _either(p: Tracer, q: Tracer) -> Tracer:
    """Elementwise `p or q` of boolean tracers (a select and a comparison)."""
    return greater(where(p, 1.0, where(q, 1.0, 0.0)), 0.5)


@_numpy_when_concrete(np.any)
def any(a: Any, axis: Any = None, keepdims: bool = False) -> Tracer:  # noqa: A001
    """Whether some element over `axis` is non-zero (False over no elements)."""
    return greater(sum(not_equal(a, 0), axis=axis, keepdims=keepdims), 0)


@_numpy_when_concrete(np.all)
def all(a: Any, axis: Any = None, keepdims: bool = False) -> Tracer:  # noqa: A001
    """Whether every element over `axis` is non-zero (True over no elements)."""
    return equal(sum(equal(a, 0), axis=axis, keepdims=keepdims), 0)


@_numpy_when_concrete(np.isnan)
def isnan(x: Any) -> Tracer:
    """x != x (either part, for complex x)."""
    if x.dtype.kind == "c":
        return _either(isnan(real(x)), isnan(imag(x)))
    return not_equal(x, x)


@_numpy_when_concrete(np.isinf)
def isinf(x: Any) -> Tracer:
    """`|x| == inf` (either part, for complex x)."""
    if x.dtype.kind == "c":
        return _either(isinf(real(x)), isinf(imag(x)))
    return equal(abs(x), np.inf)


@_numpy_when_concrete(np.isfinite)
def isfinite(x: Any) -> Tracer:
    """x - x == 0: nan for inf and nan (for complex x: both parts of x - x are 0)."""
    difference = subtract(x, x)
    if x.dtype.kind == "c":
        difference = add(real(difference), imag(difference))
    return equal(difference, 0.0)


# --------------------------------------------------------------------------
# Products (dot_general, multiply and reshape)
# --------------------------------------------------------------------------


@_numpy_when_concrete(np.outer)
def outer(a: Any, b: Any) -> Tracer:
    """`out[i, j] = ravel(a)[i] * ravel(b)[j]`."""
    return multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))


@_numpy_when_concrete(np.tensordot)
def tensordot(a: Any, b: Any, axes: Any = 2) -> Tracer:
    """Sum over the last `axes` axes of a and the first of b, or over the axes
    of the pair `axes`; the free axes of a, then those of b."""
    x, y = _promoted_pair(a, b)
    if isinstance(axes, int | np.integer):
        if not 0 <= axes <= builtins.min(x.ndim, y.ndim):
            raise ValueError(f"tensordot: axes={axes} for shapes {x.shape} and {y.shape}")
        left, right = list(range(x.ndim - int(axes), x.ndim)), list(range(int(axes)))
    else:
        axes_a, axes_b = axes
        left, right = _axis_list(axes_a, x.ndim), _axis_list(axes_b, y.ndim)
    if [x.shape[i] for i in left] != [y.shape[i] for i in right]:
        raise ValueError(f"tensordot: shape-mismatch for sum: axes {left} of {x.shape} and "
                         f"{right} of {y.shape}")  # fmt: skip
    return _dot_general(x, y, [], [], left, right)


@_numpy_when_concrete(np.inner)
def inner(a: Any, b: Any) -> Tracer:
    """Sum over the last axes of a and b (a product when either is 0-d)."""
    if len(shape(a)) == 0 or len(shape(b)) == 0:
        return multiply(a, b)
    return tensordot(a, b, ([-1], [-1]))


@_numpy_when_concrete(np.vdot)
def vdot(a: Any, b: Any) -> Tracer:
    """`sum(conj(a) * b)` of the flattened arrays (sizes must agree)."""
    x, y = _promoted_pair(a, b)
    if x.size != y.size:
        raise ValueError(f"vdot: vectors have different sizes ({x.shape} and {y.shape})")
    return dot(conj(ravel(x)), ravel(y))


@_numpy_when_concrete(np.kron)
def kron(a: Any, b: Any) -> Tracer:
    """The Kronecker product: a's axes interleaved with b's, multiplied, merged."""
    ndim = builtins.max(len(shape(a)), len(shape(b)))
    sa = (1,) * (ndim - len(shape(a))) + tuple(shape(a))
    sb = (1,) * (ndim - len(shape(b))) + tuple(shape(b))
    spread_a = reshape(a, tuple(v for n in sa for v in (n, 1)))
    spread_b = reshape(b, tuple(v for n in sb for v in (1, n)))
    return reshape(multiply(spread_a, spread_b), tuple(p * q for p, q in zip(sa, sb, strict=True)))


@_numpy_when_concrete(np.cross)
def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: int | None = None) -> Tracer:  # fmt: skip
    """The cross product of 3-vectors along the last axis (broadcast over the others)."""
    if (axisa, axisb, axisc) != (-1, -1, -1) or axis not in (None, -1):
        raise ValueError("tnp.cross supports vectors along the last axis only (axis=-1)")
    if shape(a)[-1:] != (3,) or shape(b)[-1:] != (3,):
        raise ValueError(f"tnp.cross supports 3-vectors only, got shapes {shape(a)} and "
                         f"{shape(b)}")  # fmt: skip
    u = [a[..., i] for i in range(3)]
    v = [b[..., i] for i in range(3)]
    return stack([u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2],
                  u[0] * v[1] - u[1] * v[0]], axis=-1)  # fmt: skip


# --------------------------------------------------------------------------
# tnp.linalg
# --------------------------------------------------------------------------


def _squared_magnitude(x: Tracer) -> Tracer:
    return real(multiply(x, conj(x)))


def _norm(x: Any, ord: Any, axis: Any, keepdims: bool) -> Tracer:  # noqa: A002
    """Vector norms (ord None/2, 1, inf, -inf, 0, other p) and matrix norms
    (None/'fro', 'nuc', 1, -1, 2, -2, inf, -inf: the singular values' ones by
    `prim.svd`) of a tracer."""
    x = _float(x)
    if axis is None:
        if ord is None:
            result = sqrt(sum(_squared_magnitude(x)))
            return reshape(result, (1,) * x.ndim) if keepdims else result
        if x.ndim not in (1, 2):
            raise ValueError(f"Improper number of dimensions to norm: shape {x.shape}")
        axis = tuple(range(x.ndim))
    axes = _axis_list(axis, x.ndim)
    magnitude = abs(x)
    if len(axes) == 1:
        result = _vector_norm(x, magnitude, ord, axes[0])
    elif len(axes) == 2:
        result = _matrix_norm(x, magnitude, ord, axes[0], axes[1])
    else:
        raise ValueError(f"Improper number of dimensions to norm: axis={axis}")
    if keepdims:
        result = reshape(result, tuple(1 if i in axes else n for i, n in enumerate(x.shape)))
    return result


def _vector_norm(x: Tracer, magnitude: Tracer, ord: Any, axis: int) -> Tracer:  # noqa: A002
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    if ord is None or ord == 2:
        return sqrt(sum(_squared_magnitude(x), axis=axis))
    if ord == np.inf:
        return max(magnitude, axis=axis)
    if ord == -np.inf:
        return min(magnitude, axis=axis)
    if ord == 0:
        return sum(where(not_equal(magnitude, 0.0), 1.0, 0.0).astype(magnitude.dtype), axis=axis)
    if ord == 1:
        return sum(magnitude, axis=axis)
    return power(sum(power(magnitude, float(ord)), axis=axis), 1.0 / float(ord))


def _matrix_norm(x: Tracer, magnitude: Tracer, ord: Any, row: int, column: int) -> Tracer:  # noqa: A002
    if ord is None or ord == "fro":
        return sqrt(sum(_squared_magnitude(x), axis=(row, column)))
    if ord in (1, -1, np.inf, -np.inf):
        summed, other = (row, column) if ord in (1, -1) else (column, row)
        sums = sum(magnitude, axis=summed)
        other -= other > summed
        return max(sums, axis=other) if ord > 0 else min(sums, axis=other)
    if ord in (2, -2, "nuc"):
        s = _svd(moveaxis(x, (row, column), (-2, -1)), compute_uv=False)
        return sum(s, axis=-1) if ord == "nuc" else max(s, axis=-1) if ord == 2 else min(s, axis=-1)
    raise ValueError(
        f"Invalid norm order {ord!r} for matrices (None, 'fro', 'nuc', 1, -1, 2, -2, inf, -inf)"
    )


def _numpy_norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A002
    return np.linalg.norm(x, ord, axis, keepdims)


# --------------------------------------------------------------------------
# Rounding and sign
# --------------------------------------------------------------------------


def _rounded(op_class: type[prim.ElementwiseUnaryOp], numpy_fn: Any, x: Tracer) -> Tracer:
    """`op_class` on a real array; integers and booleans get numpy's result dtype
    for `numpy_fn` (their values are already whole)."""
    _real_only(op_class.name.removeprefix("prim."), x)
    dtype = numpy_fn(np.zeros((), x.dtype)).dtype
    x = astype(x, dtype)
    return emit(x.trace, op_class(x.value)) if dtype.kind == "f" else x


@_numpy_when_concrete(np.floor)
def floor(x: Any) -> Tracer:
    """The largest whole number <= x; its derivative is 0."""
    return _rounded(prim.FloorOp, np.floor, x)


@_numpy_when_concrete(np.ceil)
def ceil(x: Any) -> Tracer:
    """The smallest whole number >= x; its derivative is 0."""
    return _rounded(prim.CeilOp, np.ceil, x)


@_numpy_when_concrete(np.rint)
def rint(x: Any) -> Tracer:
    """The nearest whole number, halves to even; its derivative is 0."""
    return _rounded(prim.RoundOp, np.rint, x)


@_numpy_when_concrete(np.trunc)
def trunc(x: Any) -> Tracer:
    """x rounded toward zero; its derivative is 0."""
    if x.dtype.kind != "f":
        return _rounded(prim.FloorOp, np.trunc, x)
    return where(less(x, 0), ceil(x), floor(x))


@_numpy_when_concrete(np.round)
def round(a: Any, decimals: int = 0) -> Tracer:  # noqa: A001 - numpy's name
    """numpy's `round`: halves to even at `decimals` places (`rint(a·10^d)/10^d`)."""
    if a.dtype.kind in "iub":  # whole already, unless rounded to tens, hundreds, ...
        return a if decimals >= 0 else astype(round(astype(a, np.float64), decimals), a.dtype)
    if decimals == 0:
        return rint(a)
    scale = 10.0**decimals
    return divide(rint(multiply(a, scale)), scale)


@_numpy_when_concrete(np.sign)
def sign(x: Any) -> Tracer:
    """-1, 0 or 1 (nan stays nan); its derivative is 0. Real or integer arrays."""
    _real_only("sign", x)
    return _unary(prim.SignOp, x)


# --------------------------------------------------------------------------
# Arg-reductions, cumulative functions, sorting
# --------------------------------------------------------------------------


def _single_axis(axis: Any, ndim: int) -> int:
    (normalized,) = _axis_list(axis, ndim)
    return normalized


def _orderable(x: Tracer, what: str) -> Tracer:
    """A real or integer tracer to compare (booleans as int32)."""
    _real_only(what, x)
    return astype(x, np.int32) if x.dtype == np.bool_ else x


def _arg_reduce(op_class: type[prim.ArgMaxOp | prim.ArgMinOp], a: Tracer, axis: Any,
                keepdims: bool) -> Tracer:  # fmt: skip
    what = op_class.name.removeprefix("prim.")
    a = _orderable(a, what)
    if axis is None:
        flat = emit(a.trace, op_class(ravel(a).value, 0)) if a.size else None
        if flat is None:
            raise ValueError(f"attempt to get {what} of an empty sequence")
        return reshape(flat, (1,) * a.ndim) if keepdims else flat
    position = _single_axis(axis, a.ndim)
    if a.shape[position] == 0:
        raise ValueError(f"attempt to get {what} of an empty sequence")
    result = emit(a.trace, op_class(a.value, position))
    return expand_dims(result, position) if keepdims else result


@_numpy_when_concrete(np.argmax)
def argmax(a: Any, axis: Any = None, keepdims: bool = False) -> Tracer:
    """The index (int64) of the first largest element along `axis` (of the
    flattened array when None); a NaN counts as the largest, as in numpy."""
    return _arg_reduce(prim.ArgMaxOp, a, axis, keepdims)


@_numpy_when_concrete(np.argmin)
def argmin(a: Any, axis: Any = None, keepdims: bool = False) -> Tracer:
    """The index (int64) of the first smallest element along `axis` (NaN first)."""
    return _arg_reduce(prim.ArgMinOp, a, axis, keepdims)


def _accumulated_dtype(a: Tracer, dtype: Any) -> np.dtype:
    """numpy's accumulator dtype: `dtype` if given, int64 for booleans and int32."""
    if dtype is not None:
        return np.dtype(dtype)
    return np.dtype(np.int64) if a.dtype.kind in "bi" else a.dtype


@_numpy_when_concrete(np.cumsum)
def cumsum(a: Any, axis: Any = None, dtype: Any = None) -> Tracer:
    """Running sums along `axis` (of the flattened array when None)."""
    if axis is None:
        a, axis = ravel(a), 0
    a = astype(a, _accumulated_dtype(a, dtype))
    return emit(a.trace, prim.CumsumOp(a.value, _single_axis(axis, a.ndim)))


def _scanned(combine: Callable[[Any, Any], Tracer], identity: Any, a: Tracer,
             axis: int) -> Tracer:  # fmt: skip
    """The running `combine` along `axis` by doubling: log2(n) steps, each
    combining the array with itself shifted by 1, 2, 4, ... (identity shifted in)."""
    size, shift, result = a.shape[axis], 1, a
    while shift < size:
        fill_shape = (*a.shape[:axis], shift, *a.shape[axis + 1 :])
        fill = np.full(fill_shape, identity, dtype=a.dtype)
        shifted = concatenate([fill, _take_along(result, axis, 0, size - shift)], axis=axis)
        result = combine(result, shifted)
        shift *= 2
    return result


@_numpy_when_concrete(np.prod)
def prod(a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tracer:
    """The product over `axis` (all axes when None): pairwise products of
    halves, log2(n) multiplications deep (exact with zeros, differentiable)."""
    a = astype(a, _accumulated_dtype(a, dtype))
    axes = _normalize_axes(axis, a.ndim)
    kept = [i for i in range(a.ndim) if i not in axes]
    count = math.prod(a.shape[i] for i in axes)
    x = reshape(transpose(a, kept + list(axes)), (*(a.shape[i] for i in kept), count))
    width = 1 << builtins.max(count - 1, 0).bit_length()  # a power of two >= count
    if width > count:
        ones = np.ones((*x.shape[:-1], width - count), dtype=x.dtype)
        x = concatenate([x, ones], axis=-1)
    while width > 1:
        width //= 2
        x = multiply(
            _take_along(x, x.ndim - 1, 0, width), _take_along(x, x.ndim - 1, width, 2 * width)
        )
    result = reshape(x, x.shape[:-1])
    if keepdims:
        result = reshape(result, tuple(1 if i in axes else n for i, n in enumerate(a.shape)))
    return result


@_numpy_when_concrete(np.cumprod)
def cumprod(a: Any, axis: Any = None, dtype: Any = None) -> Tracer:
    """Running products along `axis` (of the flattened array when None)."""
    if axis is None:
        a, axis = ravel(a), 0
    a = astype(a, _accumulated_dtype(a, dtype))
    return _scanned(multiply, 1, a, _single_axis(axis, a.ndim))


def _lowest(dtype: np.dtype) -> Any:
    return np.iinfo(dtype).min if dtype.kind == "i" else -np.inf


def cummax(a: Any, axis: int = 0, reverse: bool = False) -> Tracer:
    """Running maxima along `axis` (`jax.lax.cummax`)."""
    position = _single_axis(axis, a.ndim)
    a = flip(a, position) if reverse else a
    result = _scanned(maximum, _lowest(a.dtype), _orderable(a, "cummax"), position)
    return flip(result, position) if reverse else result


def cummin(a: Any, axis: int = 0, reverse: bool = False) -> Tracer:
    """Running minima along `axis` (`jax.lax.cummin`): -cummax(-a) for reals,
    `-1 - cummax(-1 - a)` for integers (no overflow)."""
    if a.dtype.kind in "iu":
        return subtract(-1, cummax(subtract(-1, a), axis, reverse))
    return negative(cummax(negative(a), axis, reverse))


@_numpy_when_concrete(np.argsort)
def argsort(a: Any, axis: Any = -1, kind: Any = None, order: None = None,
            stable: Any = None) -> Tracer:  # fmt: skip
    """Indices (int64) that sort `a` along `axis` (the flattened array when
    None); always stable, NaN last, as numpy's `kind='stable'`."""
    if order is not None:
        raise TypeError("argsort: order= (structured arrays) is not supported")
    if axis is None:
        a, axis = ravel(a), 0
    a = _orderable(a, "argsort")
    return emit(a.trace, prim.ArgsortOp(a.value, _single_axis(axis, a.ndim)))


@_numpy_when_concrete(np.sort)
def sort(a: Any, axis: Any = -1, kind: Any = None, order: None = None,
         stable: Any = None) -> Tracer:  # fmt: skip
    """`a` sorted along `axis` (stable, NaN last): `take_along_axis(a, argsort(a))`;
    the gradient goes back to where each element came from."""
    if axis is None:
        a, axis = ravel(a), 0
    return take_along_axis(a, argsort(a, axis, kind, order, stable), axis)


# --------------------------------------------------------------------------
# Indexing with integer arrays: gather and scatter
# --------------------------------------------------------------------------


def _index_tracer(trace: Trace, index: Any, size: int, axis: int) -> Tracer:
    """An integer index array (or scalar) for an axis of `size` as a tracer.
    Concrete indices are checked here (an IndexError, as numpy); traced ones
    wrap once if negative and are then clamped at run time (as JAX)."""
    if isinstance(index, Tracer):
        if index.dtype.kind not in "iu":
            raise IndexError(
                f"arrays used as indices must be of integer (or boolean) type, got {index.dtype}"
            )
        return trace.adopt(index)
    array = np.asarray(index)
    if array.size == 0:
        array = array.astype(np.int64)
    if array.dtype.kind not in "iu":
        raise IndexError(
            f"arrays used as indices must be of integer (or boolean) type, got {array.dtype}"
        )
    outside = array[(array < -size) | (array >= size)]
    if outside.size:
        raise IndexError(
            f"index {int(outside.flat[0])} is out of bounds for axis {axis} with size {size}"
        )
    return constant(trace, array.astype(np.int64), np.dtype(np.int64))


def _in_range(index: Tracer, size: int) -> Tracer:
    """Indices wrapped once if negative and clamped into [0, size - 1], as the
    gather op does on its own (needed where several axes are combined into one)."""
    wrapped = where(less(index, 0), add(index, size), index)
    return minimum(maximum(wrapped, 0), size - 1)


def _gather(x: Tracer, index: Tracer, axis: int) -> Tracer:
    if x.shape[axis] == 0 and index.size:
        raise IndexError(f"cannot take from axis {axis} of size 0")
    return emit(x.trace, prim.GatherOp(x.value, index.value, axis))


@_numpy_when_concrete(np.take)
def take(a: Any, indices: Any, axis: Any = None) -> Tracer:
    """Elements at integer `indices` along `axis` (of the flattened array when
    None); the index dimensions replace the axis."""
    if axis is None:
        a, axis = ravel(a), 0
    position = _single_axis(axis, a.ndim)
    trace = _find_trace((a, indices))
    assert trace is not None
    a = as_tracer(trace, a)
    return _gather(a, _index_tracer(trace, indices, a.shape[position], position), position)


@_numpy_when_concrete(np.take_along_axis)
def take_along_axis(arr: Any, indices: Any, axis: Any) -> Tracer:
    """`arr` picked along `axis` by `indices` of the same rank (numpy's
    `take_along_axis`): one gather from the flattened array at flat positions
    made from `prim.iota` and the indices."""
    if axis is None:
        arr, axis = ravel(arr), 0
    trace = _find_trace((arr, indices))
    assert trace is not None
    x = as_tracer(trace, arr)
    position = _single_axis(axis, x.ndim)
    size = x.shape[position]
    index = _index_tracer(trace, indices, size, position)
    if index.ndim != x.ndim:
        raise ValueError(
            f"take_along_axis: indices of rank {index.ndim} for an array of rank {x.ndim}"
        )
    others = np.broadcast_shapes(
        tuple(1 if i == position else n for i, n in enumerate(x.shape)),
        tuple(1 if i == position else n for i, n in enumerate(index.shape)),
    )
    shape = tuple(index.shape[i] if i == position else n for i, n in enumerate(others))
    x = _broadcast(x, tuple(size if i == position else n for i, n in enumerate(shape)))
    index = _in_range(_broadcast(index, shape), size)
    strides = _strides(x.shape)
    flat = multiply(index, strides[position])
    for i in range(x.ndim):
        if i != position and shape[i] > 1:
            flat = add(flat, multiply(_iota(trace, shape, i), strides[i]))
    return _gather(ravel(x), flat, 0)


def _iota(trace: Trace, shape: tuple[int, ...], axis: int) -> Tracer:
    """int64 positions along `axis` in an array of `shape`."""
    return emit(trace, prim.IotaOp(TensorType(prim.element_type_of_dtype(np.int64), shape), axis))


def _is_array_index(item: Any) -> bool:
    return isinstance(item, Tracer | np.ndarray | list)


def _expanded_items(x: Tracer, index: Any) -> list[Any]:
    """The items of an index with concrete boolean masks replaced by their
    `nonzero()` arrays, the ellipsis expanded and full slices appended."""
    items: list[Any] = []
    for item in list(index) if isinstance(index, tuple) else [index]:
        if isinstance(item, Tracer) and item.dtype == np.bool_:
            raise TracingError(
                "indexing with a traced boolean mask: the result's shape would depend on "
                "the values; use tnp.where(mask, x, 0) or a concrete mask"
            )
        if isinstance(item, np.ndarray | list) and np.asarray(item).dtype == np.bool_:
            items.extend(np.nonzero(np.asarray(item)))
        else:
            items.append(item)
    ellipses = [at for at, item in enumerate(items) if item is Ellipsis]  # `is`: tracers
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = builtins.sum(1 for i in items if i is not None and i is not Ellipsis)
    if consumed > x.ndim:
        raise IndexError(f"too many indices for an array of dimension {x.ndim}")
    if ellipses:
        items[ellipses[0] : ellipses[0] + 1] = [slice(None)] * (x.ndim - consumed)
    return items + [slice(None)] * (x.ndim - builtins.sum(1 for i in items if i is not None))


def getitem(x: Tracer, index: Any) -> Tracer:
    """numpy indexing: integers, slices (any step), None, Ellipsis, integer
    arrays (concrete or traced: `gather`) and concrete boolean masks."""
    items = _expanded_items(x, index)
    if not builtins.any(_is_array_index(i) for i in items):
        return _basic_getitem(x, items)
    trace = _find_trace((x, *items))  # an index may come from an inner trace (a loop body)
    assert trace is not None
    x = trace.adopt(x)
    # Advanced indexing: static integers count as (0-d) index arrays too.
    basic: list[Any] = []
    arrays: list[tuple[Any, int]] = []  # (index, axis of x)
    positions: list[int] = []  # where each indexed axis is after the basic step
    axis = out = 0
    for item in items:
        if item is None or isinstance(item, slice):
            basic.append(item)
            out += 1
            axis += item is not None
            continue
        basic.append(slice(None))
        arrays.append((item, axis))
        positions.append(out)
        axis += 1
        out += 1
    return _advanced(_basic_getitem(x, basic), x.shape, arrays, positions)


def _advanced(y: Tracer, shape: tuple[int, ...], arrays: list[tuple[Any, int]],
              positions: list[int]) -> Tracer:  # fmt: skip
    """The indexed axes `positions` of `y` replaced by the broadcast index
    arrays' dimensions, where numpy puts them (in place when the indexed axes
    are adjacent, else first): one gather on the indexed axes merged into one."""
    trace = y.trace
    indices = [_index_tracer(trace, item, shape[axis], axis) for item, axis in arrays]
    common = np.broadcast_shapes(*(i.shape for i in indices))
    indices = [_broadcast(i, common) for i in indices]
    if len(indices) == 1:
        return _gather(y, indices[0], positions[0])
    if positions != list(range(positions[0], positions[0] + len(positions))):
        rest = [i for i in range(y.ndim) if i not in positions]
        y, positions = transpose(y, positions + rest), list(range(len(positions)))
    start, sizes = positions[0], [y.shape[p] for p in positions]
    merged = reshape(y, (*y.shape[:start], math.prod(sizes), *y.shape[start + len(sizes) :]))
    flat = None
    for index, size, stride in zip(indices, sizes, _strides(sizes), strict=True):
        term = multiply(_in_range(index, size), stride)
        flat = term if flat is None else add(flat, term)
    assert flat is not None
    return _gather(merged, flat, start)


def _strides(shape: Sequence[int]) -> list[int]:
    """Row-major element strides of `shape`."""
    return [math.prod(shape[i + 1 :]) for i in range(len(shape))]


class IndexUpdateHelper:
    """`x.at`: JAX's functional updates, `x.at[index].set(v)` (also `add`,
    `multiply`/`mul`, `min`, `max`, `get`) of a traced array or of a
    constructor's `ConstantArray`. The index is anything `x[index]` accepts."""

    __slots__ = ("array",)

    def __init__(self, array: Tracer | np.ndarray) -> None:
        self.array = array

    def __getitem__(self, index: Any) -> IndexUpdateRef:
        return IndexUpdateRef(self.array, index)


class IndexUpdateRef:
    """The elements `x[index]`, to be replaced, added to, ... (see
    `IndexUpdateHelper`): traced when the array, the index or the values are,
    else computed by numpy into a new array."""

    __slots__ = ("array", "index")

    def __init__(self, array: Tracer | np.ndarray, index: Any) -> None:
        self.array, self.index = array, index

    def get(self) -> Any:
        """`x[index]`."""
        trace = self._trace()
        if trace is None:
            return np.asarray(self.array)[self.index]
        return getitem(as_tracer(trace, self.array), self.index)

    def set(self, values: Any) -> Any:
        """`x` with `x[index] = values` (for a repeated index the last value wins)."""
        return self._scatter(prim.ScatterOp, values)

    def add(self, values: Any) -> Any:
        """`x` with `values` added at `index` (repeated indices add up)."""
        return self._scatter(prim.ScatterAddOp, values)

    def multiply(self, values: Any) -> Any:
        """`x` with `x[index] *= values` (a static index without repeats)."""
        return self._combine(multiply, values, "multiply")

    mul = multiply

    def min(self, values: Any) -> Any:
        """`x` with `x[index] = minimum(x[index], values)` (static index, no repeats)."""
        return self._combine(minimum, values, "min")

    def max(self, values: Any) -> Any:
        """`x` with `x[index] = maximum(x[index], values)` (static index, no repeats)."""
        return self._combine(maximum, values, "max")

    def _trace(self, values: Any = None) -> Trace | None:
        items = self.index if isinstance(self.index, tuple) else (self.index,)
        return _find_trace((self.array, values, *items))

    def _positions(self, trace: Trace) -> Any:
        """The flat positions `index` selects: numpy's own indexing of
        `arange(size)` when the index is concrete, else a traced gather."""
        flat = np.arange(np.size(self.array), dtype=np.int64).reshape(np.shape(self.array))
        items = self.index if isinstance(self.index, tuple) else (self.index,)
        if builtins.any(isinstance(i, Tracer) for i in items):
            return getitem(as_tracer(trace, flat), self.index)
        return flat[self.index]

    def _scatter(self, op_class: type[prim.ScatterOp | prim.ScatterAddOp], values: Any) -> Any:
        trace = self._trace(values)
        if trace is None:
            result = np.array(self.array)
            if op_class is prim.ScatterOp:
                result[self.index] = values
            else:
                np.add.at(result, self.index, values)
            return result.view(ConstantArray)
        x = as_tracer(trace, self.array)
        positions = self._positions(trace)
        updates = _broadcast(_as_tracer(trace, values, x.dtype), tuple(np.shape(positions)))
        flat = ravel(positions) if isinstance(positions, Tracer) else np.ravel(positions)
        index = _index_tracer(trace, flat, x.size, 0)
        result = emit(trace, op_class(ravel(x).value, index.value, ravel(updates).value, 0))
        return reshape(result, x.shape)

    def _combine(self, fn: Callable[[Any, Any], Any], values: Any, what: str) -> Any:
        trace = self._trace(values)
        positions = self._positions(trace) if trace is not None else None
        if isinstance(positions, Tracer) or (
            positions is not None and len(np.unique(positions)) != np.size(positions)
        ):
            raise NotImplementedError(
                f".at[...].{what} needs a static index without repeated positions "
                "(use .at[...].add, or .set with the combined values)"
            )
        return self.set(fn(self.get(), values))


# --------------------------------------------------------------------------
# numpy.linalg on LAPACK: prim.cholesky, prim.triangular_solve, prim.lu
# --------------------------------------------------------------------------


def _matrices(name: str, a: Any) -> Any:
    """`a` as an inexact array (traced or not) of (a batch of) matrices, else
    LinAlgError naming the shape (numpy's error)."""
    matrices = astype(a if isinstance(a, Tracer) else np.asarray(a), _inexact_dtype(a))
    if matrices.ndim < 2:
        raise np.linalg.LinAlgError(
            f"{name}: {matrices.ndim}-dimensional array given, array must be at least "
            f"two-dimensional, got shape {matrices.shape}"
        )
    return matrices


def _square(name: str, a: Any) -> Any:
    """`a` as an inexact array (traced or not) of (a batch of) square matrices,
    else LinAlgError naming the shape (numpy's error)."""
    matrices = astype(a if isinstance(a, Tracer) else np.asarray(a), _inexact_dtype(a))
    if matrices.ndim < 2 or matrices.shape[-1] != matrices.shape[-2]:
        raise np.linalg.LinAlgError(
            f"{name}: the last 2 dimensions of the array must be square, got shape {matrices.shape}"
        )
    return matrices


def _matrix_rhs(name: str, a: Any, b: Any) -> tuple[Any, Any, bool]:
    """`a` and `b` for `a x = b` with numpy's shape rules: `b` of shape `(n,)`
    (a vector: returned as `(..., n, 1)`, the flag True) or `(..., n, k)`, batch
    axes broadcast; one dtype. A ValueError naming both shapes otherwise."""
    dtype = _inexact_dtype(a, b)
    a, rhs = astype(a, dtype), astype(b if isinstance(b, Tracer) else np.asarray(b), dtype)
    vector = rhs.ndim == 1
    if vector:
        rhs = expand_dims(rhs, -1)
    if rhs.ndim < 2 or rhs.shape[-2] != a.shape[-1]:
        raise ValueError(
            f"{name}: b of shape {shape(b)} does not match a of shape {a.shape} "
            f"(expected ({a.shape[-1]},) or (..., {a.shape[-1]}, k))"
        )
    batch = np.broadcast_shapes(a.shape[:-2], rhs.shape[:-2])
    a = broadcast_to(a, (*batch, *a.shape[-2:]))
    return a, broadcast_to(rhs, (*batch, *rhs.shape[-2:])), vector


def _checked(x: Any, ok: Any, message: str) -> Any:
    """`x` through a `prim.check` of the 0-d boolean `ok` raising LinAlgError(message)."""
    text = prim.LINALG_ERROR + message
    trace = _find_trace((x, ok))
    if trace is None:
        return prim.CheckOp.reference(ok, x, message=text)
    checked = prim.CheckOp(_as_tracer(trace, ok).value, _as_tracer(trace, x).value, text)
    return emit(trace, checked)


def _emit_checked(op: prim.PrimOp, trace: Trace, values: int, message: str) -> tuple[Tracer, ...]:
    """`op`'s results (emitted in `trace`), each through a check that its result
    number `values` (eigenvalues, singular values: NaNs where LAPACK failed) is
    finite, raising LinAlgError(message)."""
    results = tuple(Tracer(value, trace) for value in trace.emit(op).results)
    finite = all(isfinite(results[values]))
    return tuple(_checked(r, finite, message) for r in results)


def _mH(x: Any) -> Tracer:
    """The conjugate transposes of the matrices of `x`."""
    return conj(swapaxes(x, -1, -2))


@_numpy_when_concrete(prim.LuOp.reference)
def _lu(a: Any) -> tuple[Tracer, Tracer, Tracer]:
    """The packed LU factors, pivots and permutation of `a` (`prim.lu`)."""
    op = a.trace.emit(prim.LuOp(a.value))
    lu, pivots, permutation = (Tracer(v, a.trace) for v in op.results)
    return lu, pivots, permutation


@_numpy_when_concrete(prim.TriangularSolveOp.reference)
def _triangular_solve(a: Any, b: Any, **flags: bool) -> Tracer:
    """`op(a)⁻¹ b` for triangular `a` (`prim.triangular_solve`, same batch axes)."""
    trace = _find_trace((a, b))
    assert trace is not None
    a, b = _as_tracer(trace, a), _as_tracer(trace, b)
    return emit(trace, prim.TriangularSolveOp.from_flags(a.value, b.value, flags))


def _lu_solve(lu: Any, permutation: Any, b: Any) -> Any:
    """`a⁻¹ b` from `a`'s LU factors: `U⁻¹ L⁻¹ b[permutation]`."""
    rows = broadcast_to(expand_dims(permutation, -1), b.shape)
    permuted = take_along_axis(b, rows, -2)
    lower = _triangular_solve(lu, permuted, lower=True, unit_diagonal=True)
    return _triangular_solve(lu, lower)


def _nonsingular(lu: Any) -> Any:
    """Whether every matrix's U has no zero on its diagonal (0-d boolean)."""
    return all(not_equal(abs(diagonal(lu, 0, -2, -1)), 0.0))


@_numpy_when_concrete(np.linalg.solve)
def _solve(a: Any, b: Any) -> Tracer:
    """numpy.linalg.solve: `x` with `a x = b` (LU with partial pivoting, then two
    triangular solves); `b` of shape `(n,)` or `(..., n, k)`, batch axes broadcast.
    A singular matrix raises LinAlgError at run time."""
    matrices, rhs, vector = _matrix_rhs("solve", _square("solve", a), b)
    lu, _, permutation = _lu(matrices)
    x = _checked(_lu_solve(lu, permutation, rhs), _nonsingular(lu), "Singular matrix")
    return x[..., 0] if vector else x


@_numpy_when_concrete(np.linalg.inv)
def _inv(a: Any) -> Tracer:
    """numpy.linalg.inv: `solve(a, I)`; LinAlgError at run time for a singular matrix."""
    matrices = _square("inv", a)
    identity = np.eye(matrices.shape[-1], dtype=matrices.dtype)
    return _solve(matrices, _broadcast(_as_tracer(matrices.trace, identity), matrices.shape))


def _pivot_sign(pivots: Tracer, dtype: np.dtype) -> Tracer:
    """(-1) to the number of row interchanges, per matrix."""
    swapped = not_equal(pivots, np.arange(pivots.shape[-1], dtype=np.int32))
    return prod(astype(where(swapped, -1.0, 1.0), dtype), axis=-1)


@_numpy_when_concrete(np.linalg.slogdet)
def _slogdet(a: Any) -> tuple[Tracer, Tracer]:
    """numpy.linalg.slogdet: `(sign, log|det|)` from the LU factors (sign 0 and
    log|det| -inf for a singular matrix, as numpy)."""
    lu, pivots, _ = _lu(_square("slogdet", a))
    u = diagonal(lu, 0, -2, -1)
    magnitude = abs(u)
    unit = where(magnitude == 0.0, 0.0, u / where(magnitude == 0.0, 1.0, magnitude))
    sign = prod(unit, axis=-1) * _pivot_sign(pivots, lu.dtype)
    return sign, sum(log(magnitude), axis=-1)


@_numpy_when_concrete(np.linalg.det)
def _det(a: Any) -> Tracer:
    """numpy.linalg.det: the product of U's diagonal, signed by the row interchanges."""
    lu, pivots, _ = _lu(_square("det", a))
    return prod(diagonal(lu, 0, -2, -1), axis=-1) * _pivot_sign(pivots, lu.dtype)


@_numpy_when_concrete(np.linalg.cholesky)
def _cholesky(a: Any) -> Tracer:
    """numpy.linalg.cholesky: the lower factor `L`, `a = L Lᴴ`, of the Hermitian part
    `(a + aᴴ)/2` (JAX's; numpy reads the lower triangle: the same for Hermitian
    `a`). LinAlgError at run time when it is not positive definite."""
    hermitian = _hermitian_part("cholesky", a)
    factor = emit(hermitian.trace, prim.CholeskyOp(hermitian.value))
    finite = all(isfinite(real(diagonal(factor, 0, -2, -1))))
    return _checked(factor, finite, "Matrix is not positive definite")


_QR_MODES = ("reduced", "complete", "r")


@_numpy_when_concrete(np.linalg.qr)
def _qr(a: Any, mode: str = "reduced") -> Any:
    """numpy.linalg.qr: `(q, r)` with `a = q r` (Householder: LAPACK's `geqrf`,
    numpy's signs), `q` `m×k` with orthonormal columns, `r` `k×n` upper
    triangular, `k = min(m, n)` for mode 'reduced', `m` for 'complete'; mode
    'r' gives `r` alone. Differentiable in every mode (JAX's rules)."""
    if mode not in _QR_MODES:
        raise ValueError(f"qr: unrecognized mode '{mode}' (one of {', '.join(_QR_MODES)})")
    matrices = _matrices("qr", a)
    op = matrices.trace.emit(prim.QrOp(matrices.value, full_matrices=mode == "complete"))
    q, r = (Tracer(v, matrices.trace) for v in op.results)
    return r if mode == "r" else (q, r)


def _hermitian_part(name: str, a: Any) -> Tracer:
    """`(a + aᴴ)/2` of `a`'s square matrices (JAX's `symmetrize_input`)."""
    matrices = _square(name, a)
    return (matrices + _mH(matrices)) * 0.5


@_numpy_when_concrete(np.linalg.eigh)
def _eigh(a: Any, UPLO: str = "L") -> tuple[Tracer, Tracer]:  # noqa: N803
    """numpy.linalg.eigh: `(w, v)`, the eigenvalues (real, ascending) and the
    eigenvectors (columns) of the Hermitian part `(a + aᴴ)/2` (JAX's; numpy reads
    the `UPLO` triangle: the same for Hermitian `a`), by LAPACK's `syevd`/`heevd`.
    LinAlgError at run time when the iteration does not converge."""
    if UPLO not in ("L", "U"):
        raise ValueError(f"eigh: UPLO argument must be 'L' or 'U', got {UPLO!r}")
    hermitian = _hermitian_part("eigh", a)
    op = prim.EighOp(hermitian.value)
    w, v = _emit_checked(op, hermitian.trace, 0, "Eigenvalues did not converge")
    return w, v


@_numpy_when_concrete(np.linalg.eigvalsh)
def _eigvalsh(a: Any, UPLO: str = "L") -> Tracer:  # noqa: N803
    """numpy.linalg.eigvalsh: the eigenvalues of `eigh` alone."""
    return _eigh(a, UPLO)[0]


@_numpy_when_concrete(np.linalg.svd)
def _svd(
    a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False
) -> Any:
    """numpy.linalg.svd: `(u, s, vh)` with `a = u diag(s) vh` (LAPACK's
    `gesdd`), `s` real and descending; `u` `m×m` and `vh` `n×n` with
    `full_matrices` (numpy's default: not differentiable for a non-square
    matrix, as in JAX), else `m×k` and `k×n`; `s` alone without `compute_uv`
    (always differentiable). `hermitian` is accepted and changes nothing (the
    same decomposition up to the signs of the singular vectors). LinAlgError
    at run time when it does not converge."""
    del hermitian
    matrices = _matrices("svd", a)
    op = prim.SvdOp(matrices.value, full_matrices=full_matrices and compute_uv)
    u, s, vh = _emit_checked(op, matrices.trace, 1, "SVD did not converge")
    return (u, s, vh) if compute_uv else s


def _inverted_singular_values(s: Tracer, ratio: Any) -> tuple[Tracer, Tracer]:
    """`(1/s, kept)` for the singular values `s` `[..., k]` above `ratio` times
    their largest (numpy's cutoff), 0 for the others."""
    cutoff = expand_dims(np.asarray(ratio), -1) * max(s, axis=-1, keepdims=True)
    kept = s > cutoff
    return where(kept, 1.0 / where(kept, s, 1.0), 0.0), kept


_UNSET: Any = object()
"""`pinv`'s `rtol` not given (numpy's `_NoValue`)."""


def _pinv_ratio(rcond: Any, rtol: Any, matrices: Tracer) -> Any:
    """numpy's cutoff ratio of `pinv`: `rcond`, else `rtol` (None: `max(m, n)·eps`),
    else 1e-15."""
    if rcond is not None:
        if rtol is not _UNSET:
            raise ValueError("pinv: `rtol` and `rcond` can't be both set")
        return rcond
    if rtol is _UNSET:
        return 1e-15
    if rtol is None:
        return builtins.max(matrices.shape[-2:]) * np.finfo(matrices.dtype).eps
    return rtol


@_numpy_when_concrete(np.linalg.pinv)
def _pinv(a: Any, rcond: Any = None, hermitian: bool = False, *, rtol: Any = _UNSET) -> Tracer:
    """numpy.linalg.pinv: `V diag(1/s) Uᴴ` from `svd`, the singular values at or
    below `rcond` times the largest dropped (numpy's default 1e-15; `rtol=None`:
    `max(m, n)·eps`). `rcond`/`rtol` are concrete; `hermitian` changes nothing."""
    del hermitian
    matrices = _matrices("pinv", a)
    u, s, vh = _svd(matrices, full_matrices=False)
    inverse, _ = _inverted_singular_values(s, _pinv_ratio(rcond, rtol, matrices))
    return matmul(_mH(vh) * expand_dims(inverse, -2).astype(matrices.dtype), _mH(u))


@_numpy_when_concrete(np.linalg.lstsq)
def _lstsq(a: Any, b: Any, rcond: Any = None) -> tuple[Tracer, Any, Tracer, Tracer]:
    """numpy.linalg.lstsq: `(x, residuals, rank, s)` minimizing `|b - a x|` by
    `svd` (singular values at or below `rcond` times the largest dropped:
    `max(m, n)·eps` by default, machine eps for a negative `rcond`); `rank` an
    int32 array. `residuals` (the squared column norms of `b - a x`) has shape
    `(k,)` when `m > n`, else `(0,)`: numpy's also empty when `rank < n` (a
    run-time value here, JAX's `numpy_resid=False`)."""
    matrix = _matrices("lstsq", a)
    if matrix.ndim != 2:
        raise np.linalg.LinAlgError(f"lstsq: a must be two-dimensional, got shape {matrix.shape}")
    dtype = _inexact_dtype(a, b)
    matrix = astype(matrix, dtype)
    rhs = astype(b if isinstance(b, Tracer) else np.asarray(b), dtype)
    m, n = matrix.shape
    if rhs.ndim not in (1, 2) or rhs.shape[0] != m:
        raise np.linalg.LinAlgError(
            f"lstsq: incompatible dimensions: a of shape {matrix.shape}, b of shape {rhs.shape} "
            f"(expected ({m},) or ({m}, k))"
        )
    columns = rhs if rhs.ndim == 2 else expand_dims(rhs, -1)
    eps = float(np.finfo(dtype).eps)
    ratio = builtins.max(m, n) * eps if rcond is None else eps if rcond < 0 else rcond
    u, s, vh = _svd(matrix, full_matrices=False)
    inverse, kept = _inverted_singular_values(s, ratio)
    x = matmul(_mH(vh), expand_dims(inverse, -1).astype(dtype) * matmul(_mH(u), columns))
    real_dtype = np.finfo(dtype).dtype
    residuals = np.zeros(0, real_dtype)
    if m > n:
        residuals = sum(_squared_magnitude(columns - matmul(matrix, x)), axis=0)
    rank = astype(sum(astype(kept, np.int32)), np.int32)
    return (x if rhs.ndim == 2 else x[:, 0]), residuals, rank, s


@_numpy_when_concrete(np.linalg.matrix_power)
def _matrix_power(a: Any, n: int) -> Any:
    """numpy.linalg.matrix_power: `a` to the integer power `n` by repeated
    squaring at trace time (`inv(a)` for a negative `n`, the identity for 0)."""
    if not isinstance(n, int | np.integer):
        raise TypeError(f"matrix_power: exponent must be an integer, got {n!r}")
    matrices = a if isinstance(a, Tracer) else np.asarray(a)
    if matrices.ndim < 2 or matrices.shape[-1] != matrices.shape[-2]:
        raise np.linalg.LinAlgError(
            f"matrix_power: the last 2 dimensions of the array must be square, got shape "
            f"{matrices.shape}"
        )
    if n == 0:
        identity = np.eye(matrices.shape[-1], dtype=matrices.dtype)
        return np.broadcast_to(identity, matrices.shape).copy()
    power = _inv(matrices) if n < 0 else matrices
    remaining, result = builtins.abs(int(n)), None
    while True:  # the exponent's bits, lowest first
        if remaining & 1:
            result = power if result is None else matmul(result, power)
        remaining >>= 1
        if not remaining:
            return result
        power = matmul(power, power)


class _Linalg:
    """numpy.linalg's names that tidu has: `norm`, `solve`, `inv`, `det`,
    `slogdet`, `cholesky`, `qr`, `eigh`, `eigvalsh`, `svd`, `pinv`, `lstsq`,
    `matrix_power`."""

    solve = staticmethod(_solve)
    inv = staticmethod(_inv)
    det = staticmethod(_det)
    slogdet = staticmethod(_slogdet)
    cholesky = staticmethod(_cholesky)
    qr = staticmethod(_qr)
    eigh = staticmethod(_eigh)
    eigvalsh = staticmethod(_eigvalsh)
    svd = staticmethod(_svd)
    pinv = staticmethod(_pinv)
    lstsq = staticmethod(_lstsq)
    matrix_power = staticmethod(_matrix_power)

    @staticmethod
    def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A002
        """numpy.linalg.norm: vector norms (None/2, 1, inf, -inf, 0, p) and matrix
        norms (None/'fro', 'nuc', 1, -1, 2, -2, inf, -inf)."""
        if _find_trace((x,)) is None:
            return _numpy_norm(x, ord, axis, keepdims)
        return _norm(x, ord, axis, keepdims)


linalg = _Linalg()


def __getattr__(name: str) -> NoReturn:
    """Unknown names: say where the list of what exists is."""
    raise AttributeError(
        f"tidu_mlir.numpy has no '{name}'; see the coverage table in docs/reference/coverage.rst"
    )


Tracer.bind_functions(sys.modules[__name__])
