"""The Python API: `jit`, `jvp`, `vjp`, `grad`, ... on numpy-style functions.

Every transform is built the same way: trace the function into a `cg.graph`
(`tidu_mlir.tracing`), run the AD passes' functions on it (`linearize`,
`linear_transpose`), `materialize` the fragment wanted into a `func.func`
(`linearize` and `vjp` `unzip` first and materialize two: the forward
function, run once, and the linear one on its residuals, see `checkpoint`),
and then either
- run it (compiled once per signature, `tidu_mlir.execution`) when called on
  concrete arrays, or
- inline its ops into the enclosing trace when called on tracers, which is how
  transforms compose to any depth (`grad(grad(f))`, `jacfwd(jacrev(f))`).

No derivative is computed by Python code here: the passes derive graphs.
Like `jax.jit`, a function is traced once per argument signature (shapes and
dtypes); later changes to the globals it reads are not seen.

Transform results are `Transformed` objects: they pickle as the function plus
the signatures they have run as IR text (`Exported`, public as
`tidu_mlir.export`), which an unpickled copy runs without tracing.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast

import numpy as np
from xdsl.dialects.builtin import DictionaryAttr
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import SSAValue
from xdsl.parser import Parser

from tidu_mlir import ad
from tidu_mlir import numpy as tnp
from tidu_mlir.ad.linear_function import linear_fragment_from_graph
from tidu_mlir.ad.unzip import policy_named
from tidu_mlir.collector import collection_paused
from tidu_mlir.config import WeakOwnerCache
from tidu_mlir.diagnostics import OpError
from tidu_mlir.dialects.cg import ROLE_ATTR_NAME, InputKey, KeyAttr, LinearOp, key_spec
from tidu_mlir.dialects.prim import AddOp
from tidu_mlir.execution import Executable, executable
from tidu_mlir.fast_syntax import op_text
from tidu_mlir.graph import fragment_outputs, fragment_path
from tidu_mlir.registry import make_context
from tidu_mlir.tracing import (
    TRACEABLE_DTYPES,
    ArraySpec,
    TracedFunction,
    Tracer,
    as_traceable_array,
    constant,
    current_trace,
    innermost_trace,
    trace_function,
)
from tidu_mlir.tree_util import (
    PyTreeDef,
    broadcast_prefix_leaves,
    is_pair,
    tree_flatten,
    tree_leaves,
    tree_structure,
    tree_unflatten,
)

# --------------------------------------------------------------------------
# Staged functions: a materialized func and how to call it
# --------------------------------------------------------------------------


@dataclass
class Staged:
    """A derived function: `func` takes its arguments by input key."""

    traced: TracedFunction
    func: FuncOp
    _run: Executable | None = field(default=None, repr=False)

    @functools.cached_property
    def arg_keys(self) -> list[InputKey]:
        attrs = self.func.arg_attrs
        assert attrs is not None, "materialized functions carry their keys"
        return [_key_of(d) for d in attrs.data]

    def call(self, values: dict[InputKey, Any]) -> list[Any]:
        """Run on concrete arrays, or inline into the trace of the tracers given."""
        for outer, input_op in [*self.traced.closures, *self.traced.captured]:
            values[input_op.key] = outer
        args = [values[key] for key in self.arg_keys]
        trace = current_trace(*args)
        if trace is not None:
            return _inline(self.func, args)
        if not self.func.function_type.outputs.data:
            return []  # nothing to compute (a function returning None)
        if self._run is None:
            self._run = executable(self.func)
        return self._run(*args)


def _key_of(attrs: DictionaryAttr) -> InputKey:
    key = attrs.data[ad.KEY_ARG_ATTR]
    assert isinstance(key, InputKey.__args__), key  # type: ignore[attr-defined]
    return key  # type: ignore[return-value]


def _inline(func: FuncOp, args: Sequence[Any]) -> list[Tracer]:
    """Clone the function's ops into the innermost trace among `args`."""
    trace = current_trace(*args)
    assert trace is not None
    mapping: dict[SSAValue, SSAValue] = {}
    for block_arg, value in zip(func.body.block.args, args, strict=True):
        if isinstance(value, Tracer):
            mapping[block_arg] = trace.adopt(value).value
        else:
            spec = np.asarray(value)
            mapping[block_arg] = constant(trace, spec, spec.dtype).value
    results: list[Tracer] = []
    for op in func.body.block.ops:
        if isinstance(op, ReturnOp):
            results = [Tracer(mapping[v], trace) for v in op.arguments]
            break
        clone = op.clone(value_mapper=mapping)
        clone.attributes.pop(ROLE_ATTR_NAME, None)
        trace.emit(clone)
    return results


@functools.cache
def _arg_key(index: int) -> KeyAttr:
    """The input key of argument leaf `index` (made once: every call binds them)."""
    return KeyAttr(f"arg{index}")


def _specs(args: Sequence[Any]) -> tuple[ArraySpec, ...]:
    """One spec per argument, each an array (the Jacobian transforms' form)."""
    return tuple(ArraySpec.of(a, f"#{i}") for i, a in enumerate(args))


class _Stage(Protocol):
    @property
    def traced(self) -> TracedFunction: ...


StageT = TypeVar("StageT", bound=_Stage)

_STAGES = WeakOwnerCache("stage_cache_size", "function_cache_size")
"""Stages per function (weakly) and (transform, signature, ...) key, bounded
per function and in all (`td.config`); a stage holds its compiled code."""


def _cached(fn: Callable[..., Any], key: tuple[Any, ...], build: Callable[[], StageT]) -> StageT:
    """The stage of `fn` for `key`, built once while cached (an evicted one is
    built again); not cached when `fn` cannot be weakly referenced, when `key`
    cannot be hashed (a registered pytree node with unhashable aux data), or
    when the trace closed over tracers of an enclosing trace (those bind to
    one call only)."""
    try:
        cached = _STAGES.get(fn, key)
    except TypeError:
        return _built(build)
    if cached is not None:
        return cast(StageT, cached)
    stage = _built(build)
    if not stage.traced.closures:
        _STAGES.put(fn, key, stage)
    return stage


def _built(build: Callable[[], StageT]) -> StageT:
    """`build()` (tracing and the AD passes) with the garbage collector paused
    (`collector`: its passes over the growing IR made this superlinear)."""
    with collection_paused():
        return build()


# --------------------------------------------------------------------------
# Pytree arguments: flattened to leaves, leaf k is the input `arg<k>`
# --------------------------------------------------------------------------

_LEAF = tree_structure(0.0)


@dataclass(frozen=True)
class _Signature:
    """The flattened arguments of a call: one structure per argument and one
    spec per leaf (every argument's leaves in order). Hashable and compared by
    structures and specs: part of every cache key."""

    trees: tuple[PyTreeDef, ...]
    specs: tuple[ArraySpec, ...]
    labels: tuple[str, ...] = field(default=(), compare=False)
    """How errors name the arguments (`argument 0`); `argument <i>` when empty."""

    def __hash__(self) -> int:
        return self._hash

    @functools.cached_property
    def _hash(self) -> int:
        """Hashed once: a signature is looked up in the stage cache on every call."""
        return hash((self.trees, self.specs))

    @staticmethod
    def of_arrays(specs: Sequence[ArraySpec]) -> _Signature:
        """One array argument per spec."""
        return _Signature(tuple(_LEAF for _ in specs), tuple(specs))

    @functools.cached_property
    def ranges(self) -> tuple[range, ...]:
        """The leaf indices of each argument."""
        ranges: list[range] = []
        start = 0
        for tree in self.trees:
            ranges.append(range(start, start + tree.num_leaves))
            start += tree.num_leaves
        return tuple(ranges)

    def unflatten(self, leaves: Sequence[Any]) -> tuple[Any, ...]:
        """The arguments holding `leaves` (one value per leaf)."""
        return tuple(
            tree_unflatten(tree, leaves[r.start : r.stop])
            for tree, r in zip(self.trees, self.ranges, strict=True)
        )

    def leaves_of(self, nums: Sequence[int]) -> tuple[int, ...]:
        """The leaf indices of the arguments `nums`, in that order."""
        return tuple(k for n in nums for k in self.ranges[n])

    def label(self, index: int) -> str:
        return self.labels[index] if self.labels else f"argument {index}"

    def leaf_name(self, k: int) -> str:
        """Leaf `k` as Python would reach it, without the word: `0['w'][1]`."""
        for i, r in enumerate(self.ranges):
            if k in r:
                name = self.label(i).removeprefix("argument ")
                path = self.trees[i].accessors()[k - r.start].codify("")
                return f"{name}{path}"
        raise IndexError(k)


class _LeafError(TypeError):
    """Why one leaf of an argument cannot be an array (the caller names the leaf)."""


def _as_array(value: Any) -> Any:
    """An argument leaf as a traceable array (or the tracer it is). Python and
    numpy scalars become 0-d arrays of numpy's dtype for them (int -> int64)."""
    if isinstance(value, Tracer) or (type(value) is np.ndarray and value.dtype in TRACEABLE_DTYPES):
        return value
    what = f"is a {type(value).__name__}, not an array"
    if isinstance(value, str | bytes):
        raise _LeafError(what)
    try:
        array = np.asarray(value)
    except Exception as error:
        raise _LeafError(f"{what} ({error})") from None
    if array.dtype.kind in "OSUVMm":
        raise _LeafError(what)
    try:
        return as_traceable_array(array)
    except TypeError as error:
        raise _LeafError(str(error)) from None


def _flatten_args(args: Sequence[Any], labels: Sequence[str] = ()) -> tuple[list[Any], _Signature]:
    """The leaves of the pytrees `args` as arrays (or tracers), and their
    signature; a leaf that cannot be an array is a TypeError naming its path
    (`argument 0['w'] is a str, not an array`)."""
    leaves: list[Any] = []
    trees: list[PyTreeDef] = []
    for i, arg in enumerate(args):
        arg_leaves, tree = tree_flatten(arg)
        trees.append(tree)
        for j, leaf in enumerate(arg_leaves):
            try:
                leaves.append(_as_array(leaf))
            except _LeafError as error:
                label = labels[i] if labels else f"argument {i}"
                path = tree.accessors()[j].codify("")
                raise TypeError(f"{label}{path} {error}") from None
    specs = tuple(ArraySpec(tuple(leaf.shape), leaf.dtype) for leaf in leaves)
    return leaves, _Signature(tuple(trees), specs, tuple(labels))


def _as_tuple(values: Any, what: str, transform: str) -> tuple[Any, ...]:
    if not isinstance(values, tuple | list):
        raise TypeError(
            f"{transform} takes the {what} as a tuple or list (one entry per argument), "
            f"got {type(values).__name__}"
        )
    return tuple(values)


def _tangent_leaves(tangents: Sequence[Any], sig: _Signature) -> list[Any]:
    """The leaves of one tangent per primal, each with its primal's structure."""
    if len(tangents) != len(sig.trees):
        raise ValueError(
            f"expected {len(sig.trees)} tangents (one per primal), got {len(tangents)}"
        )
    leaves: list[Any] = []
    for i, (tangent, tree) in enumerate(zip(tangents, sig.trees, strict=True)):
        tangent_leaves, tangent_tree = tree_flatten(tangent)
        if tangent_tree != tree:
            raise ValueError(
                f"tangent {i} has structure {tangent_tree} but primal {i} has structure "
                f"{tree}; a tangent must have the structure of its primal"
            )
        leaves.extend(tangent_leaves)
    return leaves


def _cotangent_leaves(cotangent: Any, out_tree: PyTreeDef) -> list[Any]:
    """The leaves of a cotangent, which must have the output's structure."""
    leaves, tree = tree_flatten(cotangent)
    if tree != out_tree:
        raise ValueError(
            f"the cotangent has structure {tree} but the output has structure {out_tree}; "
            "a cotangent must have the structure of the output"
        )
    return leaves


def _leaf_dtype_name(leaf: Any) -> str | None:
    """The dtype of an integer or boolean leaf (None for any other)."""
    if isinstance(leaf, bool | int):
        return type(leaf).__name__
    dtype = getattr(leaf, "dtype", None)
    if isinstance(dtype, np.dtype) and dtype.kind in "biu":
        return str(dtype)
    return None


def _check_differentiable(
    args: Sequence[Any], nums: Sequence[int], transform: str = "grad"
) -> None:
    """Like JAX: the arguments differentiated must have real or complex leaves
    (integers and booleans are traced but have no tangent)."""
    remedy = (
        "leave the argument out of argnums"
        if transform == "grad"
        else "close over it (functools.partial) instead of passing it as a primal"
    )
    for n in nums:
        arg_leaves, tree = tree_flatten(args[n])
        for j, leaf in enumerate(arg_leaves):
            if (name := _leaf_dtype_name(leaf)) is not None:
                path = tree.accessors()[j].codify("")
                raise TypeError(
                    f"{transform} requires real- or complex-valued inputs (a dtype under "
                    f"np.inexact: float or complex), but argument {n}{path} is {name}; "
                    f"pass floats (2.0, x.astype(float)) or {remedy}"
                )


# --------------------------------------------------------------------------
# Static arguments of `jit`
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Statics:
    """Where a jitted call's arguments go: `positions` of the dynamic positional
    arguments, `keywords` of the dynamic keyword arguments (after them in the
    flattened list), and the static values by position or name with their
    types. Hashable: the static part of the cache key."""

    count: int
    positions: tuple[int, ...]
    keywords: tuple[str, ...]
    values: tuple[tuple[int | str, type, Any], ...]

    def rebuild(self, dynamic: Sequence[Any]) -> tuple[list[Any], dict[str, Any]]:
        """The positional and keyword arguments of the call, dynamic values given."""
        args: list[Any] = [None] * self.count
        kwargs: dict[str, Any] = {}
        for position, value in zip(self.positions, dynamic, strict=False):
            args[position] = value
        for name, value in zip(self.keywords, dynamic[len(self.positions) :], strict=True):
            kwargs[name] = value
        for where, _, value in self.values:
            if isinstance(where, int):
                args[where] = value
            else:
                kwargs[where] = value
        return args, kwargs


def _static_parameters(fn: Callable[..., Any], static_argnums: int | Sequence[int] | None,
                       static_argnames: str | Iterable[str] | None,
                       ) -> tuple[frozenset[int], frozenset[str], list[str]]:  # fmt: skip
    """The static positions and names, each completed from the other through
    `fn`'s signature (as JAX does), and the names of the positional parameters."""
    nums = {static_argnums} if isinstance(static_argnums, int) else set(static_argnums or ())
    names = {static_argnames} if isinstance(static_argnames, str) else set(static_argnames or ())
    try:
        parameters = list(inspect.signature(_unwrapped(fn)).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    positional = [p.name for p in parameters if p.kind in kinds]
    by_name = {
        p.name: i
        for i, p in enumerate(parameters)
        if p.kind == inspect.Parameter.POSITIONAL_OR_KEYWORD
    }
    names |= {name for name, i in by_name.items() if i in nums}
    nums |= {by_name[name] for name in names if name in by_name}
    return frozenset(nums), frozenset(names), positional


def _hashable(value: Any, label: str) -> None:
    try:
        hash(value)
    except TypeError:
        raise TypeError(
            f"static arguments must be hashable: {label} is a {type(value).__name__}, "
            "which is not hashable (use a tuple for a list, a frozenset for a set, or pass "
            "it as a traced argument)"
        ) from None


def _split_static(args: Sequence[Any], kwargs: dict[str, Any], nums: frozenset[int],
                  names: frozenset[str], positional: Sequence[str],
                  ) -> tuple[list[Any], list[str], _Statics]:  # fmt: skip
    """(dynamic arguments, their labels, the layout and static values) of a call."""
    count = len(args)
    static_positions = {n % count for n in nums if -count <= n < count}
    dynamic: list[Any] = []
    labels: list[str] = []
    positions: list[int] = []
    values: list[tuple[int | str, type, Any]] = []
    for i, value in enumerate(args):
        if i in static_positions:
            name = f" ('{positional[i]}')" if i < len(positional) else ""
            _hashable(value, f"argument {i}{name}")
            values.append((i, type(value), value))
        else:
            dynamic.append(value)
            labels.append(f"argument {i}")
            positions.append(i)
    keywords: list[str] = []
    for name in sorted(kwargs):
        value = kwargs[name]
        if name in names:
            _hashable(value, f"argument '{name}'")
            values.append((name, type(value), value))
        else:
            dynamic.append(value)
            labels.append(f"argument '{name}'")
            keywords.append(name)
    return dynamic, labels, _Statics(count, tuple(positions), tuple(keywords), tuple(values))


def _is_traceable(value: Any) -> bool:
    """Whether every leaf of `value` can be an array (a keyword argument is
    traced then, passed as a static Python value otherwise)."""
    try:
        for leaf in tree_leaves(value):
            _as_array(leaf)
    except _LeafError:
        return False
    return True


def _with_keywords(args: Sequence[Any], kwargs: dict[str, Any], nums: Sequence[int] = ()
                   ) -> tuple[list[Any], list[str], _Statics | None]:  # fmt: skip
    """The traced arguments of a call that may have keywords (the positional
    ones first, so `argnums` still count them), their labels, and the layout
    (None when all are traced). A keyword argument is traced when its leaves are
    arrays or numbers and static (hashable, part of the cache key) otherwise.
    Nested in a trace, a Python number not differentiated (not in `nums`) is
    static too, as JAX's `grad` closes over it: `arange(n)` works in
    `jit(grad(f), static_argnums=1)(x, n)`, and the enclosing trace, built once,
    caches the compilation."""
    nested = innermost_trace() is not None
    static_positions = frozenset(
        i
        for i, value in enumerate(args)
        if nested and i not in nums and type(value) in (bool, int, float)
    )
    if not kwargs and not static_positions:
        return list(args), [], None
    static_names = frozenset(name for name, value in kwargs.items() if not _is_traceable(value))
    return _split_static(args, kwargs, static_positions, static_names, ())


# --------------------------------------------------------------------------
# Building stages
# --------------------------------------------------------------------------


def _trace(fn: Callable[..., Any], sig: _Signature, has_aux: bool = False,
           statics: _Statics | None = None) -> TracedFunction:  # fmt: skip
    """Trace `fn` on the leaves of `sig` (inputs `arg0, arg1, ...`), rebuilding its
    pytree arguments (and static ones) for the call."""
    body = _unwrapped(fn)

    def flat(*leaves: Any) -> Any:
        arguments = sig.unflatten(leaves)
        if statics is None:
            result = body(*arguments)
        else:
            args, kwargs = statics.rebuild(arguments)
            result = body(*args, **kwargs)
        if has_aux and not (isinstance(result, tuple) and len(result) == 2):
            got = (
                f"a tuple of {len(result)}" if isinstance(result, tuple) else type(result).__name__
            )
            raise TypeError(
                f"has_aux=True requires the function to return a pair (output, aux); got {got}"
            )
        return result

    return trace_function(flat, sig.specs)


def _result_trees(traced: TracedFunction, has_aux: bool) -> tuple[PyTreeDef, PyTreeDef | None]:
    """The structures of the differentiated output and of the aux (None without)."""
    if not has_aux:
        return traced.out_treedef, None
    tree = traced.out_treedef
    if not is_pair(tree):
        raise TypeError(
            f"has_aux=True requires the function to return a pair (output, aux); got {tree}"
        )
    out_tree, aux_tree = tree.children()
    return out_tree, aux_tree


def _differentiated(traced: TracedFunction, has_aux: bool) -> tuple[int, ...] | None:
    """The outputs to linearize: all, or the leaves of the output before the aux."""
    if not has_aux:
        return None
    return tuple(range(_result_trees(traced, has_aux)[0].num_leaves))


def _stage_primal(fn: Callable[..., Any], sig: _Signature | tuple[ArraySpec, ...],
                  statics: _Statics | None = None) -> Staged:  # fmt: skip
    if not isinstance(sig, _Signature):
        sig = _Signature.of_arrays(sig)
    traced = _trace(fn, sig, statics=statics)
    return Staged(traced, ad.materialize(traced.graph, name="primal"))


@dataclass
class _Derived:
    """A derived stage plus which requested results are symbolic zeros."""

    staged: Staged
    linear: ad.LinearizedGraph
    transposed: ad.LinearizedGraph | None = None

    @property
    def traced(self) -> TracedFunction:
        return self.staged.traced


def _all_keys(sig: _Signature) -> list[InputKey]:
    return [_arg_key(i) for i in range(len(sig.specs))]


def _stage_jvp(fn: Callable[..., Any], sig: _Signature, has_aux: bool = False) -> _Derived:
    """The JVP w.r.t. every argument leaf (of the output only, not the aux),
    fused with the primal outputs."""
    traced = _trace(fn, sig, has_aux)
    outputs = _differentiated(traced, has_aux)
    linear = ad.linearize(traced.graph, outputs, wrt=_all_keys(sig))
    extra = fragment_outputs(traced.graph)
    func = ad.materialize(linear.fragment, name="jvp", extra_outputs=extra)
    return _Derived(Staged(traced, func), linear)


def _transpose(linear: ad.LinearizedGraph | LinearOp) -> ad.LinearizedGraph:
    """`linear-transpose` with `prim.add` summing cotangents where the graph has
    no op to take the addition from (an argument returned twice)."""
    return ad.linear_transpose(linear, accumulator=AddOp)


def _stage_vjp(fn: Callable[..., Any], sig: _Signature, wrt: tuple[int, ...], with_primal: bool,
               has_aux: bool, statics: _Statics | None = None) -> _Derived:  # fmt: skip
    """The transposed linearization w.r.t. the leaves `wrt`, of the output only
    (not the aux), with every primal output first when `with_primal`."""
    traced = _trace(fn, sig, has_aux, statics)
    outputs = _differentiated(traced, has_aux)
    linear = ad.linearize(traced.graph, outputs, wrt=[_arg_key(i) for i in wrt])
    transposed = _transpose(linear)
    extra = fragment_outputs(traced.graph) if with_primal else ()
    func = ad.materialize(transposed.fragment, name="vjp", extra_outputs=extra)
    return _Derived(Staged(traced, func), linear, transposed)


@dataclass
class _Split:
    """An unzipped linearization: `forward` returns the primal outputs, then the
    residuals; `derived` (the linear map, or its transpose) reads only residuals
    and tangents (cotangents)."""

    forward: Staged
    derived: _Derived
    unzipped: ad.Unzipped

    @property
    def traced(self) -> TracedFunction:
        return self.forward.traced

    def run_forward(self, primals: Sequence[Any]) -> tuple[Any, dict[InputKey, Any]]:
        """The packed primal outputs and the residuals by key. A residual aliasing
        an argument is copied: the linearization owns its residuals."""
        results = self.forward.call(_primal_values(primals, self.traced.input_specs))
        count = self.unzipped.primal_output_count
        residuals = [_owned(r, primals) for r in results[count:]]
        keys = self.unzipped.residual_keys
        return _pack(self.traced, results[:count]), dict(zip(keys, residuals, strict=True))


def _owned(value: Any, arguments: Sequence[Any]) -> Any:
    """`value`, copied when it may share memory with one of `arguments`."""
    if isinstance(value, Tracer):
        return value
    shared = any(isinstance(a, np.ndarray) and np.may_share_memory(value, a) for a in arguments)
    return np.array(value, copy=True) if shared else value


def _stage_split(fn: Callable[..., Any], sig: _Signature, transpose: bool,
                 has_aux: bool) -> _Split:  # fmt: skip
    """Linearize the output (not the aux) w.r.t. every argument leaf, unzip with
    `fn`'s policy, and materialize the forward function and the linear map (or
    its transpose)."""
    traced = _trace(fn, sig, has_aux)
    outputs = _differentiated(traced, has_aux)
    linear = ad.linearize(traced.graph, outputs, wrt=_all_keys(sig))
    unzipped = ad.unzip(linear.fragment, _policy_of(fn))
    forward = Staged(traced, ad.materialize(unzipped.forward, name="forward"))
    transposed = _transpose(unzipped.linear) if transpose else None
    fragment = unzipped.linear if transposed is None else transposed.fragment
    func = ad.materialize(fragment, name="linear" if transposed is None else "transposed")
    derived = _Derived(Staged(traced, func), linear, transposed)
    return _Split(forward, derived, unzipped)


def _split(fn: Callable[..., Any], sig: _Signature, transpose: bool,
           has_aux: bool = False) -> _Split:  # fmt: skip
    """The cached `_stage_split` of `fn` for `sig` and its policy."""
    key = ("vjp" if transpose else "linearize", sig, _policy_of(fn), has_aux)
    return _cached(fn, key, lambda: _stage_split(fn, sig, transpose, has_aux))


def _normalize_argnums(argnums: int | Sequence[int], count: int) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for n in nums:
        if not -count <= n < count:
            raise ValueError(f"argnums {n} is out of range for a function of {count} arguments")
    return tuple(n % count for n in nums)


def _check_like(value: Any, spec: ArraySpec, what: str | Callable[[], str]) -> Any:
    """`value` (a tangent or cotangent) must have the shape and dtype of `spec`;
    `what` names it in errors (a function: only called on an error)."""

    def name() -> str:
        return what if isinstance(what, str) else what()

    if isinstance(value, Tracer):
        if value.shape != spec.shape:
            raise ValueError(f"{name()} has shape {value.shape}, expected {spec.shape}")
        return value
    array = np.asarray(value)
    if array.shape != spec.shape:
        raise ValueError(f"{name()} has shape {array.shape}, expected {spec.shape}")
    if array.dtype != spec.dtype:
        if not np.can_cast(array.dtype, spec.dtype, "same_kind"):
            raise TypeError(f"{name()} has dtype {array.dtype}, expected {spec.dtype}")
        array = array.astype(spec.dtype)
    return array


def _zeros(spec: ArraySpec, like: Sequence[Any]) -> Any:
    """Zeros of `spec`, as a tracer when tracing."""
    trace = current_trace(*like)
    if trace is None:
        return np.zeros(spec.shape, spec.dtype)
    return tnp.broadcast_to(constant(trace, 0.0, spec.dtype), spec.shape)


def _fill(results: Sequence[Any], flags: Sequence[bool], specs: Sequence[ArraySpec],
          like: Sequence[Any]) -> list[Any]:  # fmt: skip
    """Expand active results to one per flag, zeros where inactive."""
    it = iter(results)
    return [
        next(it) if flag else _zeros(spec, like) for flag, spec in zip(flags, specs, strict=True)
    ]


def _output_specs(traced: TracedFunction) -> list[ArraySpec]:
    return [ArraySpec.of_value(v) for v in fragment_outputs(traced.graph)]


def _pack(traced: TracedFunction, values: Sequence[Any]) -> Any:
    return tree_unflatten(traced.out_treedef, values)


def _primal_values(args: Sequence[Any], specs: Sequence[ArraySpec]) -> dict[InputKey, Any]:
    return {
        _arg_key(i): _check_like(a, s, f"argument {i}")
        for i, (a, s) in enumerate(zip(args, specs, strict=True))
    }


# --------------------------------------------------------------------------
# Functions as picklable IR text (`tidu_mlir.export`)
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Exported:
    """A function traced at one signature, as text (see `tidu_mlir.export`).

    `func_text` is the materialized function; its arguments are, in order,
    the entries of `sources`: an int is that leaf of the call's arguments, a
    `np.ndarray` an array the function captured."""

    func_text: str
    in_trees: tuple[PyTreeDef, ...]
    """The pytree structure of each argument."""
    in_specs: tuple[tuple[tuple[int, ...], str], ...]
    """(shape, dtype name) of each argument leaf, checked at call time."""
    sources: tuple[int | np.ndarray, ...]
    out_tree: PyTreeDef
    out_specs: tuple[tuple[tuple[int, ...], str], ...]
    """(shape, dtype name) of each result leaf."""

    @functools.cached_property
    def fingerprint(self) -> str:
        """SHA-256 of the function text: the per-process compilation key (hashed
        once per object, not on every call)."""
        return hashlib.sha256(self.func_text.encode()).hexdigest()

    def __call__(self, *args: Any) -> Any:
        arrays, sig = _flatten_args(args)  # scalars become arrays as in td.jit
        if sig.trees != self.in_trees:
            raise TypeError(f"exported function takes {self.in_trees}, got {sig.trees}")
        for k, (spec, (shape, dtype)) in enumerate(zip(sig.specs, self.in_specs, strict=True)):
            if spec.shape != shape or spec.dtype != np.dtype(dtype):
                got = f"{spec.dtype}{list(spec.shape)}"
                raise TypeError(
                    f"exported function: argument {sig.leaf_name(k)} is {got}, "
                    f"expected {dtype}{list(shape)}"
                )
        return self.run(arrays)

    def run(self, arrays: list[Any]) -> Any:
        """The function on the argument leaves `arrays`, already checked against
        `in_specs` (how an unpickled `td.jit`/`td.grad`/... result calls it)."""
        inputs = [arrays[s] if isinstance(s, int) else s for s in self.sources]
        return tree_unflatten(self.out_tree, _compiled(self)(*inputs))


@dataclass
class _CompiledTable:
    """The executables of the `Exported` functions this process has run."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    by_fingerprint: dict[str, Executable] = field(default_factory=dict)
    compilations: int = 0
    """How many distinct functions this process compiled (tests count them)."""


COMPILED = _CompiledTable()


def compilation_count() -> int:
    """How many exported functions this process compiled (a worker reports its
    own with `client.run(compilation_count)`)."""
    return COMPILED.compilations


def _compiled(exported: Exported) -> Executable:
    key = exported.fingerprint
    with COMPILED.lock:
        run = COMPILED.by_fingerprint.get(key)
        if run is None:
            run = COMPILED.by_fingerprint[key] = executable(_parse_func(exported.func_text))
            COMPILED.compilations += 1
    return run


def _parse_func(text: str) -> FuncOp:
    module = Parser(make_context(), text).parse_module()
    funcs = [op for op in module.ops if isinstance(op, FuncOp)]
    if len(funcs) != 1:
        raise ValueError(f"an exported function is one func.func, got {len(funcs)}")
    funcs[0].detach()
    return funcs[0]


def export(fn: Callable[..., Any], *example_args: Any) -> Exported:
    """`fn` traced at the signature of `example_args` (pytrees of arrays; only
    their shapes and dtypes matter), as a picklable `Exported`."""
    leaves, sig = _flatten_args(example_args)
    staged = _stage_primal(fn, sig)
    argument_of = {_arg_key(i): i for i in range(len(leaves))}
    bound = {op.key: value for value, op in [*staged.traced.closures, *staged.traced.captured]}
    sources: list[int | np.ndarray] = []
    for key in staged.arg_keys:
        if key in argument_of:
            sources.append(argument_of[key])
        elif isinstance(bound.get(key), np.ndarray):
            sources.append(bound[key])
        else:
            raise TypeError(
                f"cannot export {fn!r}: its input {key} is a traced value of an outer trace"
            )
    return Exported(
        func_text=op_text(staged.func),
        in_trees=sig.trees,
        in_specs=tuple((spec.shape, spec.dtype.name) for spec in sig.specs),
        sources=tuple(sources),
        out_tree=staged.traced.out_treedef,
        out_specs=tuple((s.shape, s.dtype.name) for s in _output_specs(staged.traced)),
    )


# --------------------------------------------------------------------------
# Transform results: callables that pickle as their function plus IR text
# --------------------------------------------------------------------------


Record = Callable[[Sequence[Any], _Signature], None]
"""How a transform reports a call's argument leaves and signature to its `Transformed`."""


class Transformed:
    """What `jit`, `grad`, `value_and_grad`, `vmap`, `jacfwd`, `jacrev` and
    `hessian` return: `fn` under `transform` (with `options`), run by `call`.

    `call` takes a `Record` first, through which the transform reports, from
    the flattening it does anyway, each signature it runs on concrete arrays
    with positional arguments only (no static ones). Pickled, a `Transformed`
    is the transform, its options and `fn` (by reference with `pickle`, by
    value with cloudpickle, as Dask sends it) plus each recorded signature
    exported as IR text (`Exported`, never native code). The copy runs those
    signatures without tracing, each compiled once per process (keyed by the
    text's hash), and traces others from `fn` as the original."""

    __name__: str

    def __init__(self, call: Callable[..., Any], transform: Callable[..., Transformed],
                 fn: Callable[..., Any], **options: Any) -> None:  # fmt: skip
        self._call = call
        self.transform = transform
        self.fn = fn
        self.options = options
        self.signatures: dict[_Signature, Exported | None] = {}
        """The signatures recorded, each exported when first pickled (not again:
        Dask may pickle a function once per task)."""
        self.shipped: dict[_Signature, Exported] = {}
        """The exported signatures an unpickled copy received."""
        self._fn_pickles = False
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.shipped and not kwargs:
            leaves, sig = _flatten_args(args)
            exported = self.shipped.get(sig)
            if exported is not None and current_trace(*leaves) is None:
                return exported.run(leaves)
        return self._call(self.record, *args, **kwargs)

    def record(self, leaves: Sequence[Any], sig: _Signature) -> None:
        """Note `sig` (a call's signature, `leaves` its argument leaves) unless
        the call was traced inside another transform."""
        if sig not in self.signatures and current_trace(*leaves) is None:
            self.signatures[sig] = None  # exported when pickled

    def __reduce__(self) -> tuple[Any, ...]:
        if not self._fn_pickles:  # checked once: Dask may pickle once per task
            self._fn_pickles = True  # first: `fn` may refer to this function
            try:
                _check_pickles(self.fn, f"td.{self.transform.__name__}({self.__name__})")
            except TypeError:
                self._fn_pickles = False
                raise
        shipped = [*map(self._exported, self.signatures), *self.shipped.values()]
        return _rebuilt, (self.transform, self.fn, self.options, shipped)

    def _exported(self, sig: _Signature) -> Exported:
        """This function at the recorded `sig` as IR text, exported once."""
        exported = self.signatures[sig]
        if exported is None:
            exported = self.signatures[sig] = export(self, *sig.unflatten(_zeros_like(sig.specs)))
        return exported


def _pickled(value: Any) -> bytes:
    """`value` pickled as Dask pickles it (cloudpickle: closures and lambdas by
    value) when cloudpickle is installed, else by the standard `pickle`."""
    try:
        import cloudpickle
    except ImportError:
        import pickle

        return pickle.dumps(value)
    return cloudpickle.dumps(value)


def _check_pickles(fn: Callable[..., Any], what: str) -> None:
    """Raise a `TypeError` naming the variable `fn` captures (through the
    functions it captures, if need be) that does not pickle, if `fn` does
    not: Dask's own error names only the task graph."""
    try:
        _pickled(fn)
    except Exception as error:
        culprit = _unpicklable_capture(fn)
        reason = f"{culprit} does not pickle ({error})" if culprit else str(error)
        raise TypeError(f"{what} cannot be pickled (to ship it to other processes): {reason}"
                        ) from error  # fmt: skip


def _unpicklable_capture(fn: Any, seen: frozenset[int] = frozenset()) -> str | None:
    """The first variable among `fn`'s closure cells and the globals it names
    that does not pickle, as `'name' (a T) captured by f`, looked for inside
    the functions among them too; None if each pickles."""
    code = getattr(fn, "__code__", None)
    if code is None or id(fn) in seen:
        return None
    cells = zip(code.co_freevars, fn.__closure__ or (), strict=True)
    captured = [(name, cell.cell_contents) for name, cell in cells if _filled(cell)]
    captured += [(name, fn.__globals__[name]) for name in code.co_names if name in fn.__globals__]
    for name, value in captured:
        try:
            _pickled(value)
        except Exception:
            return _unpicklable_capture(value, seen | {id(fn)}) or (
                f"'{name}' (a {type(value).__name__}) captured by {fn.__qualname__}"
            )
    return None


def _filled(cell: Any) -> bool:
    """Whether a closure cell holds a value (a name assigned after the inner
    function was made, or deleted, leaves it empty)."""
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


def _zeros_like(specs: Sequence[ArraySpec]) -> list[np.ndarray]:
    """Example arguments of a signature (export reads only shapes and dtypes)."""
    return [np.zeros(spec.shape, spec.dtype) for spec in specs]


def _rebuilt(transform: Callable[..., Transformed], fn: Callable[..., Any], options: dict[str, Any],
             shipped: Sequence[Exported]) -> Transformed:  # fmt: skip
    """An unpickled `Transformed`: the transform applied again, with the
    signatures it was shipped run from their exported text."""
    rebuilt = transform(fn, **options)
    for exported in shipped:
        specs = tuple(ArraySpec(shape, np.dtype(dtype)) for shape, dtype in exported.in_specs)
        rebuilt.shipped[_Signature(exported.in_trees, specs)] = exported
    return rebuilt


# --------------------------------------------------------------------------
# Public transforms
# --------------------------------------------------------------------------


def jit(fn: Callable[..., Any], *, static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Iterable[str] | None = None) -> Transformed:  # fmt: skip
    """Trace `fn` once per signature, compile it, and call the native code.

    Arguments (positional and keyword) are pytrees of arrays
    (`tidu_mlir.tree_util`); Python and numpy scalars become 0-d arrays, ints
    and bools float64 (tidu traces floating and complex arrays only). The
    signature (structures, shapes, dtypes) is the cache key. The arguments
    `static_argnums` (positions) and `static_argnames` (names; each completed
    from the other through `fn`'s signature) are passed to `fn` as the Python
    values given, not traced; they must be hashable, and each distinct value
    (by `==` and type) is traced and compiled once. Use as `@jit`,
    `jit(f, static_argnums=1)` or `functools.partial(jit, static_argnums=1)`."""
    nums, names, positional = _static_parameters(fn, static_argnums, static_argnames)

    def jitted(record: Record, *args: Any, **kwargs: Any) -> Any:
        if kwargs or nums:
            dynamic, labels, statics = _split_static(args, kwargs, nums, names, positional)
            leaves, sig = _flatten_args(dynamic, labels)
        else:  # only positional pytrees: no layout to record
            statics = None
            leaves, sig = _flatten_args(args)
        staged = _cached(fn, ("jit", sig, statics), lambda: _stage_primal(fn, sig, statics))
        # The stage was chosen by these leaves' own specs: nothing to check.
        inputs: dict[InputKey, Any] = {_arg_key(i): leaf for i, leaf in enumerate(leaves)}
        result = _pack(staged.traced, staged.call(inputs))
        if not (kwargs or nums):
            record(leaves, sig)
        return result

    options = {"static_argnums": static_argnums, "static_argnames": static_argnames}
    return Transformed(jitted, jit, fn, **options)


def _run_jvp(derived: _Derived, inputs: dict[InputKey, Any], tangents: Sequence[Any],
             sig: _Signature, like: Sequence[Any]) -> tuple[list[Any], list[Any]]:  # fmt: skip
    """Bind one tangent per primal leaf to `inputs` (primal values or residuals),
    run, and split into (primal outputs, tangent outputs with zeros where inactive)."""
    values = dict(inputs)
    for k, ((key, _), tangent, spec) in enumerate(
        zip(derived.linear.tangent_inputs, tangents, sig.specs, strict=True)
    ):
        what = functools.partial(_tangent_name, sig, k)
        values[key] = _check_like(tangent, spec, what)
    results = derived.staged.call(values)
    flags = derived.linear.fragment.active_flags
    primal_count = len(results) - sum(flags)
    specs = _output_specs(derived.staged.traced)[: len(flags)]
    tangent_outputs = _fill(results[primal_count:], flags, specs, like)
    return results[:primal_count], tangent_outputs


def _tangent_name(sig: _Signature, k: int) -> str:
    name = sig.leaf_name(k)
    return f"tangent {name} (for primal {name})"


def jvp(fn: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any],
        has_aux: bool = False) -> tuple[Any, ...]:  # fmt: skip
    """`(fn(*primals), J·tangents)`: forward mode, one linearization. `primals`
    is a tuple (or list) of pytrees; `tangents` must have the same structure;
    the tangent output has the output's structure. With `has_aux=True`, `fn`
    returns `(output, aux)`, the aux is not differentiated and `jvp` returns
    `(output, tangent, aux)`."""
    primals = _as_tuple(primals, "primals", "jvp")
    tangents = _as_tuple(tangents, "tangents", "jvp")
    _check_differentiable(primals, range(len(primals)), "jvp")
    leaves, sig = _flatten_args(primals)
    tangent_leaves = _tangent_leaves(tangents, sig)
    derived = _cached(fn, ("jvp", sig, has_aux), lambda: _stage_jvp(fn, sig, has_aux))
    values = _primal_values(leaves, sig.specs)
    like = [*leaves, *tangent_leaves]
    outputs, tangent_outputs = _run_jvp(derived, values, tangent_leaves, sig, like)
    out_tree, _ = _result_trees(derived.traced, has_aux)
    output = _pack(derived.traced, outputs)
    if has_aux:
        return output[0], tree_unflatten(out_tree, tangent_outputs), output[1]
    return output, tree_unflatten(out_tree, tangent_outputs)


def linearize(fn: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """`(fn(*primals), f_jvp)`: the forward function (primal outputs and the
    residuals `fn`'s policy saves, see `checkpoint`) runs once here; `f_jvp`
    runs only the compiled linear map on the stored residuals. Primals are
    pytrees; `f_jvp(*tangents)` takes tangents of their structures."""
    _check_differentiable(primals, range(len(primals)), "linearize")
    leaves, sig = _flatten_args(primals)
    split = _split(fn, sig, transpose=False)
    outputs, residuals = split.run_forward(leaves)

    def f_jvp(*tangents: Any) -> Any:
        tangent_leaves = _tangent_leaves(tangents, sig)
        like = [*leaves, *tangent_leaves]
        _, tangent_outputs = _run_jvp(split.derived, residuals, tangent_leaves, sig, like)
        return _pack(split.traced, tangent_outputs)

    return outputs, f_jvp


def vjp(fn: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """`(fn(*primals), vjp_fn)`; `vjp_fn(ct)` (`ct` with the output's structure)
    returns a tuple with one cotangent per primal, each with its primal's
    structure (for complex numbers the adjoint for Re(conj(a)·b),
    `docs/complex.md`). With `has_aux=True`, `fn` returns `(output, aux)`, the
    aux is not differentiated and `vjp` returns `(output, vjp_fn, aux)`. The
    forward function runs once here; `vjp_fn` runs only the transposed linear
    map on the residuals `fn`'s policy saves (see `checkpoint`)."""
    _check_differentiable(primals, range(len(primals)), "vjp")
    leaves, sig = _flatten_args(primals)
    split = _split(fn, sig, transpose=True, has_aux=has_aux)
    outputs, residuals = split.run_forward(leaves)
    out_tree, _ = _result_trees(split.traced, has_aux)
    out_specs = _output_specs(split.traced)[: out_tree.num_leaves]

    def vjp_fn(cotangent: Any) -> tuple[Any, ...]:
        cts = _cotangent_leaves(cotangent, out_tree)
        like = [*leaves, *cts]
        return sig.unflatten(_run_transposed(split.derived, residuals, cts, out_specs, like))

    if has_aux:
        output, aux = outputs
        return output, vjp_fn, aux
    return outputs, vjp_fn


def _run_transposed(derived: _Derived, inputs: dict[InputKey, Any], cts: Sequence[Any],
                    out_specs: Sequence[ArraySpec], like: Sequence[Any]) -> list[Any]:  # fmt: skip
    """Bind the seeds of the active outputs to `inputs` (primal values or
    residuals) and run the transposed function."""
    assert derived.transposed is not None
    values = dict(inputs)
    active_cts = [
        c for c, flag in zip(cts, derived.linear.fragment.active_flags, strict=True) if flag
    ]
    active_specs = [
        s for s, flag in zip(out_specs, derived.linear.fragment.active_flags, strict=True) if flag
    ]
    for (key, _), ct, spec in zip(
        derived.transposed.tangent_inputs, active_cts, active_specs, strict=True
    ):
        values[key] = _check_like(ct, spec, "cotangent")
    for i, (ct, spec) in enumerate(zip(cts, out_specs, strict=True)):
        _check_like(ct, spec, f"cotangent {i}")
    results = derived.staged.call(values)
    skip = len(results) - sum(derived.transposed.fragment.active_flags)
    specs = list(derived.staged.traced.input_specs)
    return _fill(results[skip:], derived.transposed.fragment.active_flags, specs, like)


def _check_scalar_output(out_tree: PyTreeDef, out_specs: Sequence[ArraySpec]) -> None:
    if not out_tree.is_leaf():
        raise TypeError(
            f"grad requires a scalar output; got {out_tree.num_leaves} outputs "
            f"(structure {out_tree})"
        )
    if out_specs[0].shape != ():
        raise TypeError(f"grad requires a scalar output; got shape {out_specs[0].shape}")
    if out_specs[0].dtype.kind == "c":
        raise TypeError("grad requires a real scalar output; got a complex one (use vjp)")


def _gradient(fn: Callable[..., Any], argnums: int | Sequence[int], has_aux: bool,
              args: Sequence[Any], kwargs: dict[str, Any], with_value: bool,
              record: Record) -> tuple[Any, Any]:  # fmt: skip
    """`(value or None, gradient)` of a real scalar function, from one compiled
    function that computes the value too only when asked (the value is
    `(value, aux)` with `has_aux`). It is fused (not unzipped like `vjp`): one
    function, no residuals stored and read back. Keyword arguments are passed
    through, not differentiated (see `_with_keywords`); a call without them is
    `record`ed."""
    nums = _normalize_argnums(argnums, len(args))
    _check_differentiable(args, nums)
    dynamic, labels, statics = _with_keywords(args, kwargs, nums)
    leaves, sig = _flatten_args(dynamic, labels)
    positions = list(statics.positions if statics is not None else range(len(args)))
    dynamic_nums = [positions.index(n) for n in nums]
    wrt = sig.leaves_of(dynamic_nums)
    with_primal = with_value or has_aux
    derived = _cached(
        fn,
        ("grad", sig, wrt, with_primal, has_aux, statics),
        lambda: _stage_vjp(fn, sig, wrt, with_primal, has_aux, statics),
    )
    assert derived.transposed is not None
    traced = derived.staged.traced
    out_specs = _output_specs(traced)
    _check_scalar_output(_result_trees(traced, has_aux)[0], out_specs)
    values = _primal_values(leaves, sig.specs)
    if derived.linear.fragment.active_flags[0]:
        ((ct_key, _),) = derived.transposed.tangent_inputs
        values[ct_key] = np.ones((), out_specs[0].dtype)
    results = derived.staged.call(values)
    count = traced.output_count if with_primal else 0
    flags = derived.transposed.fragment.active_flags
    flat = _fill(results[count:], flags, [sig.specs[k] for k in wrt], leaves)
    grads: list[Any] = []
    start = 0
    for n in dynamic_nums:
        size = sig.trees[n].num_leaves
        grads.append(tree_unflatten(sig.trees[n], flat[start : start + size]))
        start += size
    value = _pack(traced, results[:count]) if with_primal else None
    if statics is None:
        record(leaves, sig)
    return value, grads[0] if isinstance(argnums, int) else tuple(grads)


def value_and_grad(fn: Callable[..., Any], argnums: int | Sequence[int] = 0,
                   has_aux: bool = False) -> Transformed:  # fmt: skip
    """`(fn(*args), grad)` in one compiled function; grad per `argnums` (see
    `grad`). With `has_aux=True`, `fn` returns `(value, aux)` and the result
    is `((value, aux), grad)`."""

    def value_and_grad_fn(record: Record, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        return _gradient(fn, argnums, has_aux, args, kwargs, True, record)

    return Transformed(value_and_grad_fn, value_and_grad, fn, argnums=argnums, has_aux=has_aux)


def grad(fn: Callable[..., Any], argnums: int | Sequence[int] = 0,
         has_aux: bool = False) -> Transformed:  # fmt: skip
    """The gradient of a real scalar function (for complex inputs ∂L/∂x + i∂L/∂y,
    `docs/complex.md`: `grad |z|²` is `2z`). The value itself is not computed.
    One fused function (the forward and transposed passes together, no
    residual round trip), so it is faster than calling `vjp`'s `vjp_fn`; a
    `checkpoint` policy does not apply to it.

    Arguments are pytrees of arrays; the gradient w.r.t. argument `argnums`
    (an int) has that argument's structure, a tuple `argnums` gives a tuple
    of them. Python floats become float64 0-d arrays; an integer or boolean
    argument differentiated is a TypeError (as in JAX). With `has_aux=True`,
    `fn` returns `(value, aux)`; the aux (any pytree of arrays) is not
    differentiated and the result is `(grad, aux)`. Keyword arguments are
    passed to `fn`, not differentiated: traced when they are arrays or numbers,
    static (hashable; one trace per value) otherwise."""

    def grad_fn(record: Record, *args: Any, **kwargs: Any) -> Any:
        value, gradient = _gradient(fn, argnums, has_aux, args, kwargs, has_aux, record)
        return (gradient, value[1]) if has_aux else gradient

    return Transformed(grad_fn, grad, fn, argnums=argnums, has_aux=has_aux)


def _size(spec: ArraySpec) -> int:
    return int(np.prod(spec.shape, dtype=np.int64))


def _over_basis(fn: Callable[..., Any], args: tuple[Any, ...], seed_tree: PyTreeDef,
                seed_specs: Sequence[ArraySpec]) -> Any:  # fmt: skip
    """`vmap(fn, in_axes=(None, 0), out_axes=(0, None))(args, basis)` for the
    standard basis of the product space of `seed_specs` (row `r`: one at the
    `r`-th element of all the seeds' elements in order), without building the
    basis: the `batch` pass carries it as one-hot rows (seeded with ones)."""
    seeds = tree_unflatten(seed_tree, [np.ones(s.shape, s.dtype) for s in seed_specs])
    leaves, sig = _flatten_args((args, seeds))
    size = sum(_size(s) for s in seed_specs)
    basis = tuple(k >= len(leaves) - len(seed_specs) for k in range(len(leaves)))
    stage = _cached(fn, ("basis", sig), lambda: _stage_vmap(fn, sig, basis, size, basis))
    return stage.call({_arg_key(k): leaf for k, leaf in enumerate(leaves)}, (0, None), size)


def _blocks(stacked: Any, specs: Sequence[ArraySpec], trailing: tuple[int, ...]) -> list[Any]:
    """Split `stacked` (shape `(total, *trailing)`, its rows along the product
    space of `specs`) into one block per spec, shaped `spec.shape + trailing`."""
    blocks: list[Any] = []
    start = 0
    for spec in specs:
        size = _size(spec)
        rows = stacked if size == tnp.shape(stacked)[0] else stacked[start : start + size]
        blocks.append(tnp.reshape(rows, (*spec.shape, *trailing)))
        start += size
    return blocks


def _move_input_axes_last(x: Any, in_rank: int, out_rank: int) -> Any:
    order = (*range(in_rank, in_rank + out_rank), *range(in_rank))
    return tnp.transpose(x, order) if order != tuple(range(in_rank + out_rank)) else x


def _partial_at(fn: Callable[..., Any], args: Sequence[Any], nums: Sequence[int]) -> Checkpointed:
    """`fn` as a function of the arguments `nums` only, the others fixed to
    `args`, with `fn`'s policy."""
    body = _unwrapped(fn)

    def of_selected(*selected: Any) -> Any:
        full = list(args)
        for n, value in zip(nums, selected, strict=True):
            full[n] = value
        return body(*full)

    return Checkpointed(of_selected, _policy_of(fn))


@dataclass(frozen=True)
class _JacobianLayout:
    """The leaves a Jacobian relates, with their structures: the differentiated
    arguments' (as one tuple of arguments) and the output's (without the aux)."""

    single: bool
    """`argnums` was an int: each entry holds one argument's structure, not a tuple."""
    in_tree: PyTreeDef
    in_specs: tuple[ArraySpec, ...]
    out_tree: PyTreeDef
    out_specs: tuple[ArraySpec, ...]

    def assemble(self, blocks: Sequence[Sequence[Any]]) -> Any:
        """The Jacobian from `blocks[j][i]` (output leaf `j`, input leaf `i`): the
        output's structure, each leaf holding the inputs' structure (JAX's layout)."""
        entries = []
        for row in blocks:
            inputs = tree_unflatten(self.in_tree, list(row))
            entries.append(inputs[0] if self.single else inputs)
        return tree_unflatten(self.out_tree, entries)


def _jacobian_layout(fn: Callable[..., Any], argnums: int | Sequence[int], has_aux: bool,
                     args: Sequence[Any]) -> _JacobianLayout:  # fmt: skip
    """The leaves a Jacobian of `fn` at `args` relates, from `fn`'s trace (nothing run)."""
    nums = _normalize_argnums(argnums, len(args))
    _check_differentiable(args, nums)
    _, sig = _flatten_args(args)
    staged = _cached(fn, ("jit", sig, None), lambda: _stage_primal(fn, sig))
    out_tree, _ = _result_trees(staged.traced, has_aux)
    return _JacobianLayout(
        isinstance(argnums, int),
        tree_structure(tuple(args[n] for n in nums)),
        tuple(sig.specs[k] for k in sig.leaves_of(nums)),
        out_tree,
        tuple(_output_specs(staged.traced)[: out_tree.num_leaves]),
    )


def jacfwd(fn: Callable[..., Any], argnums: int | Sequence[int] = 0,
           has_aux: bool = False) -> Transformed:  # fmt: skip
    """The Jacobian by forward mode: the JVP batched (`vmap`) over the basis of
    the inputs `argnums`, one compiled call. Arguments and outputs are pytrees;
    the result has the output's structure, each leaf holding the structure of
    the input (a tuple of them for tuple `argnums`) with blocks shaped
    `out.shape + in.shape`, as in JAX. `has_aux`: `fn` returns `(out, aux)`
    and the result is `(jacobian, aux)`."""

    def pushforward(args: tuple[Any, ...], tangents: tuple[Any, ...]) -> Any:
        nums = _normalize_argnums(argnums, len(args))
        primals = tuple(args[n] for n in nums)
        if has_aux:
            _, tangent_out, aux = jvp(_partial_at(fn, args, nums), primals, tangents, has_aux=True)
            return tangent_out, aux
        return jvp(_partial_at(fn, args, nums), primals, tangents)[1], None

    def jacobian(record: Record, *args: Any) -> Any:
        layout = _jacobian_layout(fn, argnums, has_aux, args)
        columns, aux = _over_basis(pushforward, args, layout.in_tree, layout.in_specs)
        blocks = [
            [
                _move_input_axes_last(block, len(in_spec.shape), len(out_spec.shape))
                for block, in_spec in zip(
                    _blocks(column, layout.in_specs, out_spec.shape), layout.in_specs, strict=True
                )
            ]
            for column, out_spec in zip(tree_leaves(columns), layout.out_specs, strict=True)
        ]
        jac = layout.assemble(blocks)
        record(*_flatten_args(args))
        return (jac, aux) if has_aux else jac

    return Transformed(jacobian, jacfwd, fn, argnums=argnums, has_aux=has_aux)


def jacrev(fn: Callable[..., Any], argnums: int | Sequence[int] = 0,
           has_aux: bool = False) -> Transformed:  # fmt: skip
    """The Jacobian by reverse mode: the VJP batched (`vmap`) over the basis of
    the output, one compiled call. Same pytree layout and `has_aux` as `jacfwd`."""

    def pullback(args: tuple[Any, ...], cotangent: Any) -> Any:
        nums = _normalize_argnums(argnums, len(args))
        primals = tuple(args[n] for n in nums)
        if has_aux:
            _, vjp_fn, aux = vjp(_partial_at(fn, args, nums), *primals, has_aux=True)
            return vjp_fn(cotangent), aux
        return vjp(_partial_at(fn, args, nums), *primals)[1](cotangent), None

    def jacobian(record: Record, *args: Any) -> Any:
        layout = _jacobian_layout(fn, argnums, has_aux, args)
        rows, aux = _over_basis(pullback, args, layout.out_tree, layout.out_specs)
        by_input = [
            _blocks(row, layout.out_specs, in_spec.shape)
            for row, in_spec in zip(tree_leaves(rows), layout.in_specs, strict=True)
        ]
        blocks = [[column[j] for column in by_input] for j in range(len(layout.out_specs))]
        jac = layout.assemble(blocks)
        record(*_flatten_args(args))
        return (jac, aux) if has_aux else jac

    return Transformed(jacobian, jacrev, fn, argnums=argnums, has_aux=has_aux)


def hessian(fn: Callable[..., Any], argnums: int | Sequence[int] = 0,
            has_aux: bool = False) -> Transformed:  # fmt: skip
    """`jacfwd(jacrev(fn))`, with pytrees, `argnums` and `has_aux` as they do."""
    return jacfwd(jacrev(fn, argnums, has_aux), argnums, has_aux)


def hvp(fn: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]) -> Any:
    """The Hessian-vector product `H·v` as forward over reverse (`jvp(grad(fn))`),
    with the structure of the primals (one primal: its structure alone)."""
    primals = _as_tuple(primals, "primals", "hvp")
    tangents = _as_tuple(tangents, "tangents", "hvp")
    nums = tuple(range(len(primals)))
    grad_fn = grad(fn, nums)
    _, product = jvp(lambda *xs: grad_fn(*xs), primals, tangents)
    return product[0] if len(nums) == 1 else product


def linear_transpose(fn_lin: Callable[..., Any], *primals: Any) -> Callable[..., Any]:
    """The transpose of a linear function of pytrees of arrays shaped like
    `primals`: `transpose_fn(ct)` (`ct` with the output's structure) returns one
    cotangent per primal, with its structure. A function that is not linear is
    refused with the verifier's message."""
    _, sig = _flatten_args(primals)
    traced = _trace(fn_lin, sig)
    module = traced.module
    linear = linear_fragment_from_graph(module, traced.graph, _all_keys(sig))
    try:
        transposed = _transpose(linear)
    except OpError as error:  # the linearity check names the op
        raise TypeError(f"linear_transpose needs a linear function: {error.message}") from None
    func = ad.materialize(transposed.fragment, name="transpose")
    staged = Staged(traced, func)
    out_specs = [ArraySpec.of_value(v) for v in fragment_outputs(linear)]

    def transpose_fn(cotangent: Any) -> tuple[Any, ...]:
        cts = _cotangent_leaves(cotangent, traced.out_treedef)
        values: dict[InputKey, Any] = {}
        for (key, _), ct, spec in zip(transposed.tangent_inputs, cts, out_specs, strict=True):
            values[key] = _check_like(ct, spec, "cotangent")
        results = staged.call(values)
        return sig.unflatten(_fill(results, transposed.fragment.active_flags, sig.specs, cts))

    return transpose_fn


# --------------------------------------------------------------------------
# vmap: the batch pass on a traced function
# --------------------------------------------------------------------------


def _leaf_axes(axes: Any, values: Any, what: str) -> list[int | None]:
    """One axis per leaf of `values`: `axes` is an int, None, or a pytree prefix
    of `values` (JAX's `in_axes` / `out_axes` forms)."""
    try:
        flat = broadcast_prefix_leaves(axes, values)
    except ValueError as error:
        raise ValueError(f"vmap {what} {axes!r} does not match the structure: {error}") from None
    for axis in flat:
        if axis is not None and (not isinstance(axis, int) or isinstance(axis, bool)):
            raise TypeError(f"vmap {what} must hold ints or None, got {axis!r}")
    return flat


def _move_axis(x: Any, source: int, destination: int) -> Any:
    if source == destination:
        return x
    if isinstance(x, Tracer):
        order = [d for d in range(x.ndim) if d != source]
        order.insert(destination, source)
        return tnp.transpose(x, tuple(order))
    return np.moveaxis(x, source, destination)


def _batch_size(
    leaves: Sequence[Any], axes: Sequence[int | None], sig: _Signature, axis_size: int | None
) -> int:
    """The common extent of the mapped axes; a mismatch names the leaves and sizes."""
    sizes = {
        sig.leaf_name(k): leaf.shape[axis]
        for k, (leaf, axis) in enumerate(zip(leaves, axes, strict=True))
        if axis is not None
    }
    distinct = set(sizes.values())
    if axis_size is not None:
        distinct.add(axis_size)
    if not distinct:
        raise ValueError("vmap needs a mapped argument (an in_axes entry not None) or axis_size")
    if len(distinct) > 1:
        listed = ", ".join(f"argument {name}: {size}" for name, size in sizes.items())
        extra = f", axis_size: {axis_size}" if axis_size is not None else ""
        raise ValueError(f"vmap got inconsistent sizes for the mapped axes: {listed}{extra}")
    return distinct.pop()


def _normalized_axes(
    leaves: Sequence[Any], axes: Sequence[int | None], sig: _Signature
) -> list[int | None]:
    result: list[int | None] = []
    for k, (leaf, axis) in enumerate(zip(leaves, axes, strict=True)):
        if axis is not None:
            rank = len(leaf.shape)
            if not -rank <= axis < rank:
                raise ValueError(
                    f"vmap in_axes {axis} is out of range for argument {sig.leaf_name(k)} "
                    f"of rank {rank}"
                )
            axis %= rank
        result.append(axis)
    return result


@dataclass(frozen=True)
class _MappedCall:
    """The arguments of a vmapped call: their leaves with the batch axis moved
    to the front, the signature of one example, which leaves are mapped, and
    the batch size."""

    leaves: list[Any]
    example: _Signature
    mapped: tuple[bool, ...]
    size: int

    @staticmethod
    def of(args: Sequence[Any], in_axes: Any, axis_size: int | None) -> _MappedCall:
        leaves, sig = _flatten_args(args)
        axes_tree = in_axes if not isinstance(in_axes, list) else tuple(in_axes)
        if isinstance(axes_tree, tuple) and len(axes_tree) != len(args):
            raise ValueError(f"vmap in_axes has {len(axes_tree)} entries for {len(args)} arguments")
        axes = _normalized_axes(leaves, _leaf_axes(axes_tree, args, "in_axes"), sig)
        size = _batch_size(leaves, axes, sig, axis_size)
        moved = [
            leaf if axis is None else _move_axis(leaf, axis, 0)
            for leaf, axis in zip(leaves, axes, strict=True)
        ]
        example = _Signature(
            sig.trees,
            tuple(
                spec
                if axis is None
                else ArraySpec(spec.shape[:axis] + spec.shape[axis + 1 :], spec.dtype)
                for spec, axis in zip(sig.specs, axes, strict=True)
            ),
        )
        return _MappedCall(moved, example, tuple(axis is not None for axis in axes), size)


@dataclass
class _Vectorized:
    """A function batched by `ad.batch`: which outputs carry the batch axis."""

    staged: Staged
    batched_outputs: tuple[bool, ...]

    @property
    def traced(self) -> TracedFunction:
        return self.staged.traced

    def call(self, values: dict[InputKey, Any], out_axes: Any, size: int) -> Any:
        """Run on `values`; the results with each batch axis at `out_axes` (a
        pytree prefix of the results), the unbatched ones broadcast."""
        results = self.staged.call(values)
        out_leaf_axes = _leaf_axes(out_axes, _pack(self.traced, results), "out_axes")
        placed = [
            _place_output(r, flag, axis, size, k)
            for k, (r, flag, axis) in enumerate(
                zip(results, self.batched_outputs, out_leaf_axes, strict=True)
            )
        ]
        return _pack(self.traced, placed)


def _stage_vmap(fn: Callable[..., Any], sig: _Signature, mapped: tuple[bool, ...], size: int,
                basis: tuple[bool, ...] = ()) -> _Vectorized:  # fmt: skip
    """`fn` traced on `sig` and batched over its `mapped` leaves (those flagged
    in `basis` standing for the standard basis, see `ad.batch`)."""
    traced = _trace(fn, sig)
    bound = [False] * traced.bound_input_count
    flags = [*mapped, *bound]
    basis_flags = [*basis, *bound] if basis else []
    batched = ad.batch(traced.graph, flags, size, basis=basis_flags, dialect=AddOp)
    func = ad.materialize(batched.graph, name="batched")
    return _Vectorized(Staged(traced, func), batched.batched_outputs)


def vmap(
    fn: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0, axis_size: int | None = None
) -> Transformed:
    """`fn` mapped over an axis of its arguments, as one batched function (the
    `batch` pass): `in_axes` is an int, None (not mapped: the same value for
    every example) or a pytree prefix of the arguments (a tuple with one entry
    per argument); `out_axes` likewise for the results. Nests, and composes
    with the AD transforms both ways (`vmap(grad(f))`, `grad` of a vmap)."""

    def vmapped(record: Record, *args: Any) -> Any:
        call = _MappedCall.of(args, in_axes, axis_size)
        example, mapped, size = call.example, call.mapped, call.size
        stage = _cached(
            fn, ("vmap", example, mapped, size), lambda: _stage_vmap(fn, example, mapped, size)
        )
        values: dict[InputKey, Any] = {_arg_key(k): value for k, value in enumerate(call.leaves)}
        out = stage.call(values, out_axes, size)
        record(*_flatten_args(args))
        return out

    options = {"in_axes": in_axes, "out_axes": out_axes, "axis_size": axis_size}
    return Transformed(vmapped, vmap, fn, **options)


def _place_output(value: Any, batched: bool, axis: int | None, size: int, index: int) -> Any:
    """A result with its batch axis at `axis`: unbatched results are broadcast
    (or returned as they are for `axis=None`)."""
    if axis is None:
        if batched:
            raise ValueError(f"vmap out_axes is None for output {index}, which is batched")
        return value
    if not batched:
        shape = (size, *tnp.shape(value))
        value = (
            tnp.broadcast_to(value, shape)
            if isinstance(value, Tracer)
            else np.array(np.broadcast_to(value, shape))
        )
    rank = len(tnp.shape(value))
    if not -rank <= axis < rank:
        raise ValueError(f"vmap out_axes {axis} is out of range for output {index} of rank {rank}")
    return _move_axis(value, 0, axis % rank)


class Checkpointed:
    """A function carrying a residual policy: for the transforms applied to it
    (the whole function), or, called inside a traced function, for the ops it
    traces (a region: they are tagged `cg.policy`)."""

    __name__: str

    def __init__(self, fn: Callable[..., Any], policy: str):
        self.fn = fn
        self.policy = policy
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        trace = current_trace(*tree_leaves((args, kwargs)))
        if trace is None:
            return self.fn(*args, **kwargs)
        return trace.call_in_region(self.policy, self.fn, *args, **kwargs)


def checkpoint(fn: Callable[..., Any], policy: str = "save-all") -> Checkpointed:
    """`fn` with the residual policy `policy` (a name in `ad.POLICIES`) for the
    transforms that store residuals (`linearize`, `vjp`, `saved_residuals`):
    `save-all`, `recompute-elementwise` or `save-nothing` (inputs only). Use as
    `@checkpoint`, `checkpoint(f, policy=...)` or
    `functools.partial(checkpoint, policy=...)`. Called inside a function being
    traced, like `jax.checkpoint`, it marks a region: the ops it traces follow
    `policy`, the rest of the function its own."""
    policy_named(policy)
    return Checkpointed(_unwrapped(fn), policy)


def _unwrapped(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The function a `Checkpointed` wraps, or `fn` itself."""
    return fn.fn if isinstance(fn, Checkpointed) else fn


def _policy_of(fn: Callable[..., Any]) -> str:
    return fn.policy if isinstance(fn, Checkpointed) else "save-all"


def saved_residuals(fn: Callable[..., Any], *args: Any) -> list[ad.Residual]:
    """What `linearize(fn, *args)` stores under `fn`'s policy: one entry per
    residual (`shape`, `dtype`, `nbytes`, `source`), nothing run or compiled."""
    _, sig = _flatten_args(args)
    split = _split(fn, sig, transpose=False)
    return split.unzipped.residuals


STAGES = ("trace", "jvp", "unzip", "vjp", "materialize", "llvm")
"""The stages `ir` and `lower` show, in pipeline order."""


def ir(fn: Callable[..., Any], *example_args: Any, stage: str = "trace") -> str:
    """The module of `fn` at one stage, as text: `trace`, `jvp` (after
    linearize), `unzip` (a copy of the `jvp` module with the forward and
    residual graphs `unzip` adds under `fn`'s policy), `vjp` (after linearize
    and linear-transpose), `materialize` (the self-contained gradient
    function), or `llvm` (its LLVM IR). Only the stages up to the one asked
    for are run. `batch` is the module after the `batch` pass as `vmap(fn)`
    runs it: the example arguments carry the batch on their leading axis, and
    the module holds the graph of one example and its batched graph."""
    if stage == "batch":
        return _batch_stage(fn, example_args)
    if stage not in STAGES:
        stages = ", ".join((*STAGES, "batch"))
        raise ValueError(f"unknown stage '{stage}'; stages: {stages}")
    for name, text in _stages(fn, example_args):
        if name == stage:
            return text
    raise AssertionError("unreachable: every stage is produced")


def lower(fn: Callable[..., Any], *example_args: Any) -> dict[str, str]:
    """Every stage of `ir` at once."""
    return dict(_stages(fn, example_args))


def _batch_stage(fn: Callable[..., Any], example_args: Sequence[Any]) -> str:
    call = _MappedCall.of(example_args, 0, None)
    traced = _trace(fn, call.example)
    flags = [*call.mapped, *(False for _ in range(traced.bound_input_count))]
    ad.batch(traced.graph, flags, call.size)
    return str(traced.module)


def _stages(fn: Callable[..., Any], example_args: Sequence[Any]) -> Iterator[tuple[str, str]]:
    """(stage, text) in pipeline order, each computed when the caller asks for it."""
    _, sig = _flatten_args(example_args)
    traced = _trace(fn, sig)
    yield "trace", str(traced.module)
    linear = ad.linearize(traced.graph, wrt=_all_keys(sig))
    yield "jvp", str(traced.module)
    copy = traced.module.clone()
    ad.unzip((copy, fragment_path(linear.fragment)), _policy_of(fn))
    yield "unzip", str(copy)
    transposed = _transpose(linear)
    yield "vjp", str(traced.module)
    func = ad.materialize(transposed.fragment, name="vjp")
    yield "materialize", str(func)
    from tidu_mlir.lowering.runtime import llvm_ir

    yield "llvm", llvm_ir(func)


__all__ = [
    "checkpoint", "grad", "hessian", "hvp", "ir", "jacfwd", "jacrev", "jit", "jvp",
    "linear_transpose", "linearize", "lower", "saved_residuals", "value_and_grad", "vjp", "vmap",
    "key_spec",
]  # fmt: skip
