"""numpy-named functions over traced arrays (`import tidu_mlir.numpy as tnp`).

Inside a traced function (`td.jit`, `td.grad`, ...) these record `prim` ops
with numpy's broadcasting and dtype promotion (NEP 50: Python scalars are weak,
so `float32_array * 2.0` stays float32). Called with no traced argument they
simply run numpy, so the same code works on concrete arrays.

The operators of `Tracer` (`x + y`, `x @ y`, `x.sum()`, ...) call these
functions: this module binds itself to `Tracer` once they are defined (see
`tidu_mlir.array_operators`).
"""

from __future__ import annotations

import builtins
import functools
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any, ParamSpec, TypeVar

import numpy as np
from xdsl.dialects.builtin import TensorType

from tidu_mlir.dialects import prim
from tidu_mlir.tracing import (
    TRACEABLE_DTYPES,
    Trace,
    Tracer,
    TracingError,
    constant,
    current_trace,
    emit,
)

P = ParamSpec("P")
R = TypeVar("R")

__all__ = [
    "abs", "add", "arctan2", "astype", "broadcast_to", "concatenate", "conj", "cos", "divide",
    "dot", "einsum", "equal", "exp", "greater", "greater_equal", "imag", "less", "less_equal",
    "log", "matmul", "max", "maximum", "mean", "minimum", "multiply", "negative", "not_equal",
    "power", "real", "reshape", "shape", "sin", "sqrt", "subtract", "sum", "tanh", "transpose",
    "where",
]  # fmt: skip


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
            if _find_trace(args) is None:
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
    """What np.result_type should see: dtypes of arrays, Python scalars as they are."""
    if isinstance(value, Tracer):
        return value.dtype
    if isinstance(value, bool | int | float | complex):
        return value
    return np.asarray(value).dtype


def _result_dtype(*values: Any) -> np.dtype:
    """numpy's promotion, with integer and boolean results made float64."""
    dtype = np.result_type(*(_weak_dtype(v) for v in values))
    if dtype.kind in "iub":
        dtype = np.result_type(dtype, np.float64)
    if dtype not in TRACEABLE_DTYPES:
        raise TypeError(f"dtype {dtype} is not supported by tidu (float32/64, complex64/128)")
    return dtype


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


def _binary(op_class: type[prim.ElementwiseBinaryOp], lhs: Any, rhs: Any) -> Tracer:
    trace = _find_trace((lhs, rhs))
    assert trace is not None
    a, b = _broadcast_all(trace, (lhs, rhs), _result_dtype(lhs, rhs))
    return emit(trace, op_class(a.value, b.value))


def _real_only(name: str, *values: Any) -> None:
    if any(np.dtype(_result_dtype(v)).kind == "c" for v in values):
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
        dtype = _result_dtype(x, y)
        base = _as_tracer(x.trace, x, dtype)
        return emit(x.trace, prim.PowOp(base.value, float(y)))
    return exp(multiply(y, log(x)))


def _unary(op_class: type[prim.ElementwiseUnaryOp], x: Tracer) -> Tracer:
    trace = x.trace
    tracer = _as_tracer(trace, x, _result_dtype(x))
    return emit(trace, op_class(tracer.value))


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
        raise TypeError(f"cannot convert a traced array to {target}")
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
    a, b = _broadcast_all(trace, (x, y), _result_dtype(x, y))
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


@_numpy_when_concrete(prim.SelectOp.reference)
def where(condition: Any, x: Any, y: Any) -> Tracer:
    """Elementwise `x if condition else y`; the condition is a comparison result."""
    trace = _find_trace((condition, x, y))
    assert trace is not None
    common = np.broadcast_shapes(shape(condition), shape(x), shape(y))
    if isinstance(condition, Tracer):
        if condition.dtype != np.bool_:
            raise TypeError("tnp.where needs a boolean condition (a comparison of arrays)")
        pred = trace.adopt(condition)
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
    return _reduce(prim.ReduceSumOp, x, axis, keepdims)


@_numpy_when_concrete(np.mean)
def mean(x: Any, axis: Any = None, keepdims: bool = False) -> Tracer:
    axes = _normalize_axes(axis, x.ndim)
    count = math.prod(x.shape[a] for a in axes)
    total = sum(x, axis=axis, keepdims=keepdims)
    return divide(total, np.asarray(count, dtype=total.dtype))


@_numpy_when_concrete(np.max)
def max(x: Any, axis: Any = None, keepdims: bool = False) -> Tracer:  # noqa: A001
    _real_only("max", x)
    axes = _normalize_axes(axis, x.ndim)
    if any(x.shape[a] == 0 for a in axes):
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


def getitem(x: Tracer, index: Any) -> Tracer:
    """Static indexing: integers, slices (positive steps), None and Ellipsis."""
    items = list(index) if isinstance(index, tuple) else [index]
    if any(isinstance(i, Tracer | np.ndarray | list) for i in items):
        raise TracingError(
            "indexing a traced array with arrays is not supported; use static slices"
        )
    if items.count(Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = builtins.sum(1 for i in items if i is not None and i is not Ellipsis)
    if consumed > x.ndim:
        raise IndexError(f"too many indices for an array of dimension {x.ndim}")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items[at : at + 1] = [slice(None)] * (x.ndim - consumed)
    items += [slice(None)] * (x.ndim - builtins.sum(1 for i in items if i is not None))
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
            if step <= 0:
                raise IndexError("negative slice steps are not supported on traced arrays")
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
    trace = _find_trace((x, y))
    assert trace is not None
    dtype = _result_dtype(x, y)
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
    dtype = _result_dtype(*operands)
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


Tracer.bind_functions(sys.modules[__name__])
