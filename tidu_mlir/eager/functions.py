"""numpy-named functions on `Tensor`s: one for each function of `tidu_mlir.numpy`
and of `tidu_mlir.nn`.

Each function calls the `tidu_mlir.numpy` function of the same name twice over:
on the concrete arrays (where it is numpy) for the result, and, when the
result must be recorded, on abstract arrays (`trace_function`) for the graph
recorded on the tape. Traced graphs are cached per (operation, operand shapes
and dtypes, static arguments), so a loop records the same graph objects again
and the backward of each is linearized, transposed and compiled once.

Python scalars are static (baked into the graph, part of the cache key: numpy
treats them as weakly typed); arrays and tensors are graph inputs. Results
that cannot carry a gradient (the booleans of comparisons) are never recorded.

The functions whose arguments are all arrays (`sin`, `add`, `less`, `where`,
...) are made from `tnp.__all__`; those with static arguments (axes, shapes,
a dtype, einsum's subscripts) are written out below; the `td.nn` functions
take one array and static arguments (`axis`, `approximate`, ...). `FUNCTIONS`
holds them all, and this module binds itself as the operators of `Tensor`.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import sys
import types
from collections.abc import Callable, Hashable, Sequence
from itertools import islice
from typing import Any

import numpy as np

import tidu_mlir.nn as nn
import tidu_mlir.numpy as tnp
from tidu_mlir.config import LRUCache, register
from tidu_mlir.dialects import cg
from tidu_mlir.eager.recording import EagerInput, RecordedGraph, graph_interface
from tidu_mlir.eager.tensor import DIFFERENTIABLE_KINDS, GRAD_MODE, RUNTIME, Tensor
from tidu_mlir.tracing import ArraySpec, as_traceable_array, trace_function
from tidu_mlir.types import numpy_dtype

SCALARS = (bool, int, float, complex)


class TracedOp:
    """The cached graph of one operation on given operand specs (its `GRAPHS`
    key), with what recording needs of it read once (the per-call path only
    indexes these)."""

    __slots__ = ("key", "graph", "output_dtypes", "interface")

    def __init__(
        self, key: Hashable, graph: cg.GraphOp, output_dtypes: tuple[np.dtype, ...]
    ) -> None:
        self.key = key
        self.graph = graph
        self.output_dtypes = output_dtypes
        self.interface = graph_interface(graph)

    def __repr__(self) -> str:
        return f"TracedOp(graph={self.graph!r}, output_dtypes={self.output_dtypes!r})"


GRAPHS: LRUCache[Hashable, TracedOp] = LRUCache("eager_cache_size")
"""Traced graphs by (operation name, operand specs / static operands, static
arguments), the least recently used out beyond `td.config.eager_cache_size`
(a graph still on a tape stays alive with it)."""


class LastTraced:
    """Per operation name, the `TracedOp` its last call recorded (`entries`):
    a call with the same key (a loop's steady state) takes it there, a dict
    lookup and a key comparison, instead of `GRAPHS.get` (whose lock and
    recency update cost more than the rest of the lookup).

    Emptied whenever `GRAPHS` may evict (an insertion, `clear_caches`,
    `config.update`), so it holds only entries `GRAPHS` holds. Each entry
    used since the last insertion went through `GRAPHS.get` once since then,
    so evictions still take the entries least recently used (by their first
    use since the last insertion)."""

    __slots__ = ("entries", "__weakref__")

    def __init__(self) -> None:
        self.entries: dict[str, TracedOp] = {}

    def clear(self) -> None:
        self.entries.clear()

    def shrink(self) -> None:
        self.entries.clear()


LAST_TRACED = LastTraced()
register(LAST_TRACED)


def apply(
    name: str,
    fn: Callable[..., Any],
    operands: Sequence[Any],
    static: Hashable = (),
    numpy_fn: Callable[..., Any] | None = None,
) -> Any:
    """`fn(*operands)` on concrete data, recorded on the tape when needed.

    `fn` is a function of tnp values (numpy on arrays, records on tracers);
    `static` holds what `fn` closes over (axes, shapes, ...) for the cache key.
    `numpy_fn`, when given, is what `fn` runs on concrete arrays (skips tnp's
    dispatch). Returns a `Tensor`, or a tuple of them when `fn` returns a tuple.

    This runs per op, so it is written for one or two operands and one
    result: loops, not comprehensions (each costs a few hundred ns)."""
    values: list[Any] = []
    record = False
    for operand in operands:
        if isinstance(operand, Tensor):
            values.append(operand.data)
            if operand._requires_grad:
                record = True
        elif isinstance(operand, SCALARS):
            values.append(operand)
        else:  # arrays become tensors, graph inputs
            return apply(name, fn, [_as_operand(o) for o in operands], static, numpy_fn)
    result = (fn if numpy_fn is None else numpy_fn)(*values)
    if type(result) is np.ndarray:  # the common case first
        if record and GRAD_MODE.enabled and result.dtype.kind in DIFFERENTIABLE_KINDS:
            return _record(name, fn, operands, static, [result])[0]
        return Tensor(result)
    several = isinstance(result, tuple)
    arrays = [np.asarray(r) for r in result] if several else [np.asarray(result)]
    differentiable = builtins.all(a.dtype.kind in DIFFERENTIABLE_KINDS for a in arrays)
    if record and GRAD_MODE.enabled and differentiable:
        outputs = _record(name, fn, operands, static, arrays)
    else:  # nothing to record, or results that cannot carry a gradient (booleans)
        outputs = [Tensor(array) for array in arrays]
    return tuple(outputs) if several else outputs[0]


def _as_operand(operand: Any) -> Any:
    """Tensors and Python scalars as they are (scalars are static); arrays as
    tensors, graph inputs (integer and boolean arrays as they are, small
    integer types widened)."""
    if isinstance(operand, (*SCALARS, Tensor)):
        return operand
    return Tensor(as_traceable_array(operand))


def _record(
    name: str,
    fn: Callable[..., Any],
    operands: Sequence[Any],
    static: Hashable,
    arrays: Sequence[np.ndarray],
) -> list[Tensor]:
    """Record one invocation on `operands` (tensors and static scalars), every
    result of which can carry a gradient (float or complex); the results
    become tensors on the tape.

    The frontend builds the tape node itself (what `Recorder.record_graph`
    does, minus its checks: the traced graph matches its operands by
    construction, and at least one of them requires grad)."""
    signature: list[Hashable] = []
    inputs: list[EagerInput] = []
    mask: list[bool] = []
    for operand in operands:
        if isinstance(operand, Tensor):
            data = operand.data
            signature.append((data.shape, data.dtype))
            requires_grad = operand._requires_grad
            inputs.append(_input((operand.key, operand._trace, requires_grad, data)))
            mask.append(requires_grad)
        else:
            signature.append(_freeze(operand))
    key = (name, tuple(signature), static)
    last = LAST_TRACED.entries
    traced = last.get(name)
    if traced is None or traced.key != key:
        traced = GRAPHS.get(key)
        if traced is None:
            traced = GRAPHS[key] = _trace(name, fn, operands, key)
            last.clear()  # the insertion may have evicted one of its entries
        last[name] = traced
    counter = RUNTIME.keys
    keys = (next(counter),) if len(arrays) == 1 else tuple(islice(counter, len(arrays)))
    node = RecordedGraph(traced.graph, tuple(inputs), keys, None, traced.interface, tuple(mask))
    dtypes = traced.output_dtypes
    outputs: list[Tensor] = []
    for index, array in enumerate(arrays):
        dtype = dtypes[index]
        if array.dtype is not dtype:  # numpy's promotion of a weak scalar may differ
            array = array.astype(dtype, copy=False)
        outputs.append(Tensor._recorded(array, keys[index], node))
    return outputs


_input = functools.partial(tuple.__new__, EagerInput)
"""`EagerInput` from a (key, trace, requires_grad, data) tuple, by C code
alone (its constructor's Python frame costs twice as much)."""


def _trace(name: str, fn: Callable[..., Any], operands: Sequence[Any], key: Hashable) -> TracedOp:
    """The graph of `fn` on the tensors among `operands` (abstract: their
    shapes and dtypes), the static scalars baked in; `key`: its `GRAPHS` key."""

    def body(*tracers: Any) -> Any:
        supply = iter(tracers)
        return fn(*(next(supply) if isinstance(o, Tensor) else o for o in operands))

    specs = [ArraySpec(o.data.shape, o.data.dtype) for o in operands if isinstance(o, Tensor)]
    traced = trace_function(body, specs, name=name)
    dtypes = tuple(
        numpy_dtype(value.type.get_element_type())  # pyright: ignore[reportAttributeAccessIssue]
        for value in traced.graph.body.block.last_op.operands  # pyright: ignore[reportOptionalMemberAccess]
    )
    return TracedOp(key, traced.graph, dtypes)


def _freeze(value: Any) -> Hashable:
    """A hashable cache key for a static argument; types are kept apart
    (2, 2.0, 2+0j and True promote differently)."""
    kind = type(value)
    if kind in SCALARS:  # first: a scalar operand, on the per-op path
        return (kind.__name__, value)
    if isinstance(value, slice):
        return ("slice", value.start, value.stop, value.step)
    if isinstance(value, list | tuple):
        return (type(value).__name__, *(_freeze(item) for item in value))
    return (type(value).__name__, value)


# --------------------------------------------------------------------------
# Functions with static arguments
# --------------------------------------------------------------------------


def _reduction(name: str) -> Callable[..., Tensor]:
    """`sum`, `mean` or `max` over `axis`."""
    fn, concrete = getattr(tnp, name), getattr(np, name)

    def op(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
        return apply(
            name,
            lambda a: fn(a, axis=axis, keepdims=keepdims),
            (x,),
            (_freeze(axis), keepdims),
            lambda a: concrete(a, axis=axis, keepdims=keepdims),
        )

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"`tnp.{name}` of a tensor over `axis` (None: all axes)."
    return op


def astype(x: Any, dtype: Any) -> Tensor:
    """`x.astype(dtype)` (complex to real keeps the real part)."""
    target = np.dtype(dtype)
    return apply("astype", lambda a: tnp.astype(a, target), (x,), target)


def reshape(x: Any, shape: Any) -> Tensor:
    return apply("reshape", lambda a: tnp.reshape(a, shape), (x,), _freeze(shape))


def transpose(x: Any, axes: Any = None) -> Tensor:
    return apply("transpose", lambda a: tnp.transpose(a, axes), (x,), _freeze(axes))


def broadcast_to(x: Any, shape: Any) -> Tensor:
    return apply("broadcast_to", lambda a: tnp.broadcast_to(a, shape), (x,), _freeze(shape))


def concatenate(arrays: Sequence[Any], axis: int = 0) -> Tensor:
    return apply(
        "concatenate", lambda *xs: tnp.concatenate(list(xs), axis=axis), tuple(arrays), axis
    )


def einsum(subscripts: str, *operands: Any) -> Tensor:
    return apply("einsum", lambda *xs: tnp.einsum(subscripts, *xs), operands, subscripts)


_INDEX_ARRAY = "<index array>"
"""Where an index array stands in the static part of an index (the cache key)."""


def getitem(x: Any, index: Any) -> Tensor:
    """numpy indexing (`Tensor.__getitem__`): integers, slices, None and
    Ellipsis are static; integer index arrays are graph inputs (a boolean mask,
    concrete in eager mode, becomes its `nonzero()` arrays)."""
    items: list[Any] = []
    arrays: list[Any] = []
    for item in index if isinstance(index, tuple) else (index,):
        if not isinstance(item, Tensor | np.ndarray | list):
            items.append(item)
            continue
        array = item.data if isinstance(item, Tensor) else np.asarray(item)
        parts = np.nonzero(array) if array.dtype == np.bool_ else (array,)
        arrays.extend(parts)
        items.extend([_INDEX_ARRAY] * len(parts))

    def indexed(a: Any, *index_arrays: Any) -> Any:
        fill = iter(index_arrays)
        return a[tuple(next(fill) if item is _INDEX_ARRAY else item for item in items)]

    return apply("getitem", indexed, (x, *arrays), _freeze(tuple(items)))


def _static_after(name: str, arrays: int = 1) -> Callable[..., Tensor]:
    """`tnp.<name>` whose first `arrays` positional arguments are arrays and the
    rest (positional or keyword: axes, counts, `ord`, `k`, ...) are static."""
    fn = getattr(tnp, name)

    def op(*args: Any, **kwargs: Any) -> Tensor:
        operands, static = args[:arrays], args[arrays:]
        key = _freeze((static, tuple(sorted(kwargs.items()))))
        return apply(name, lambda *xs: fn(*xs, *static, **kwargs), operands, key)

    functools.update_wrapper(op, fn, assigned=())
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"`tnp.{name}` of tensors; the arguments after the arrays are static."
    return op


def _sequence_function(name: str) -> Callable[..., Tensor]:
    """`tnp.<name>` of a list of arrays and static keywords (`stack`, `hstack`, ...)."""
    fn = getattr(tnp, name)

    def op(arrays: Sequence[Any], *args: Any, **kwargs: Any) -> Tensor:
        key = _freeze((args, tuple(sorted(kwargs.items()))))
        return apply(name, lambda *xs: fn(list(xs), *args, **kwargs), tuple(arrays), key)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"`tnp.{name}` of a sequence of tensors."
    return op


def _constructor(name: str) -> Callable[..., Tensor]:
    """`tnp.<name>` as a plain tensor (not recorded: a constant); tensor
    arguments (`zeros_like(t)`, a fill value) are read as their arrays."""
    fn = getattr(tnp, name)

    def op(*args: Any, **kwargs: Any) -> Tensor:
        def data(value: Any) -> Any:
            return value.data if isinstance(value, Tensor) else value

        values = [data(a) for a in args]
        return Tensor(np.asarray(fn(*values, **{k: data(v) for k, v in kwargs.items()})))

    functools.update_wrapper(op, fn, assigned=())
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"`tnp.{name}` as a tensor that does not require grad."
    return op


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Tensor]:
    """`tnp.split` of a tensor: a list of tensors."""
    pieces = apply(
        "split",
        lambda a: tuple(tnp.split(a, indices_or_sections, axis)),
        (ary,),
        _freeze((indices_or_sections, axis)),
    )
    return list(pieces)


def clip(a: Any, a_min: Any = None, a_max: Any = None) -> Tensor:
    """`tnp.clip`; a bound None is static, others are operands."""
    bounds = [bound for bound in (a_min, a_max) if bound is not None]

    def fn(x: Any, *given: Any) -> Any:
        supply = iter(given)
        low = None if a_min is None else next(supply)
        return tnp.clip(x, low, None if a_max is None else next(supply))

    return apply("clip", fn, (a, *bounds), (a_min is None, a_max is None))


def array(object: Any, dtype: Any = None) -> Tensor:  # noqa: A002 - numpy's name
    """`tnp.array`: lists holding tensors are stacked (recorded), the rest is a new tensor."""
    if isinstance(object, list | tuple) and builtins.any(
        isinstance(item, Tensor | list | tuple) for item in object
    ):
        result = FUNCTIONS["stack"]([array(item) for item in object])
    elif isinstance(object, Tensor):
        result = object
    else:
        return Tensor(np.array(object, dtype=dtype))
    return result if dtype is None else astype(result, dtype)


CONSTRUCTORS = ("zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like",
                "empty_like", "eye", "identity", "arange", "linspace")  # fmt: skip
"""Functions making new arrays: plain tensors."""

NOT_METHODS = frozenset(CONSTRUCTORS) | {"array", "asarray", "stack", "hstack", "vstack"}
"""Functions whose first argument is not one array: no `Tensor` method."""

STATIC_ARGUMENTS: dict[str, Callable[..., Any]] = {
    "sum": _reduction("sum"),
    "mean": _reduction("mean"),
    "max": _reduction("max"),
    **{name: _constructor(name) for name in CONSTRUCTORS},
    "array": array,
    "asarray": array,
    **{name: _sequence_function(name) for name in ("stack", "hstack", "vstack")},
    "split": split,
    "clip": clip,
    **{
        name: _static_after(name)
        for name in (
            "squeeze",
            "expand_dims",
            "moveaxis",
            "swapaxes",
            "flip",
            "roll",
            "tile",
            "repeat",
            "diag",
            "diagonal",
            "trace",
            "triu",
            "tril",
            "min",
            "amin",
            "amax",
            "var",
            "std",
            "round",
            "argmax",
            "argmin",
            "cumsum",
            "cumprod",
            "prod",
            "argsort",
            "sort",
            "any",
            "all",
        )
    },  # fmt: skip
    "take": _static_after("take", 2),
    "take_along_axis": _static_after("take_along_axis", 2),
    "tensordot": _static_after("tensordot", 2),
    "cross": _static_after("cross", 2),
    "astype": astype,
    "reshape": reshape,
    "transpose": transpose,
    "broadcast_to": broadcast_to,
    "concatenate": concatenate,
    "einsum": einsum,
    "shape": tnp.shape,  # not an array: tnp's works on tensors as it is
}
"""The functions of `tnp.__all__` that take more than arrays."""


# --------------------------------------------------------------------------
# Functions of arrays only, made from tnp's
# --------------------------------------------------------------------------


def _array_function(name: str) -> Callable[..., Tensor]:
    """`tnp.<name>` on tensors; every argument is an array (or a static scalar)."""
    fn = getattr(tnp, name)
    concrete = fn.concrete  # what `fn` runs on arrays (the op's reference), without tnp's dispatch

    def op(*operands: Any) -> Tensor:
        return apply(name, fn, operands, (), concrete)

    functools.update_wrapper(op, fn, assigned=())  # inspect.signature shows tnp's
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"`tnp.{name}` on tensors, recorded for backward when it has a gradient."
    return op


# --------------------------------------------------------------------------
# td.nn functions: one array, static arguments
# --------------------------------------------------------------------------


def _nn_function(name: str) -> Callable[..., Tensor]:
    """`td.nn.<name>` on tensors: the first argument is the array, the others
    (`axis`, `keepdims`, `approximate`, `num_classes`, `dtype`) are static."""
    fn = getattr(nn, name)
    signature = inspect.signature(fn)

    def op(*args: Any, **kwargs: Any) -> Tensor:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        (_, x), *static = bound.arguments.items()
        return apply(name, lambda a: fn(a, **dict(static)), (x,), _freeze(tuple(static)))

    functools.update_wrapper(op, fn, assigned=())  # inspect.signature shows td.nn's
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"`td.nn.{name}` on a tensor, recorded for backward when it has a gradient."
    return op


FUNCTIONS: dict[str, Callable[..., Any]] = {
    **{name: STATIC_ARGUMENTS.get(name) or _array_function(name) for name in tnp.__all__},
    **{name: _nn_function(name) for name in nn.__all__},
}
"""The functions on tensors, by name: one for each of `tnp.__all__` and `td.nn.__all__`."""

globals().update(FUNCTIONS)
Tensor.bind_functions(sys.modules[__name__])


def _linalg_function(name: str) -> Callable[..., Any]:
    """`tnp.linalg.<name>` on tensors; every argument is an array."""
    fn = getattr(tnp.linalg, name)

    def op(*operands: Any) -> Any:
        return apply(f"linalg.{name}", fn, operands, (), fn.concrete)

    functools.update_wrapper(op, fn, assigned=())
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"`tnp.linalg.{name}` on tensors, recorded for backward."
    return op


linalg = types.SimpleNamespace(
    **{
        name: _linalg_function(name)
        for name in (
            "solve",
            "inv",
            "det",
            "slogdet",
            "cholesky",
            "qr",
            "eigh",
            "eigvalsh",
            "svd",
            "pinv",
        )
    }
)
"""`tnp.linalg`'s functions of arrays on tensors: `functions.linalg.solve(a, b)`, ..."""


def _method(fn: Callable[..., Any]) -> Callable[..., Any]:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = fn.__name__
    method.__doc__ = f"`{fn.__name__}(self, ...)`, as PyTorch's method form."
    return method


for _name, _fn in FUNCTIONS.items():  # x.tanh(), x.exp(), x.matmul(y), ... (PyTorch's forms)
    if not hasattr(Tensor, _name) and _name not in NOT_METHODS:
        setattr(Tensor, _name, _method(_fn))
