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
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np
from xdsl.dialects.builtin import DictionaryAttr
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import SSAValue

from tidu_mlir import ad
from tidu_mlir import numpy as tnp
from tidu_mlir.ad.linear_function import linear_fragment_from_graph
from tidu_mlir.ad.unzip import policy_named
from tidu_mlir.dialects.cg import ROLE_ATTR_NAME, InputKey, KeyAttr, key_spec
from tidu_mlir.execution import Executable, executable
from tidu_mlir.graph import fragment_outputs, fragment_path
from tidu_mlir.tracing import (
    ArraySpec,
    TracedFunction,
    Tracer,
    constant,
    current_trace,
    trace_function,
    tree_flatten,
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

    @property
    def arg_keys(self) -> list[InputKey]:
        attrs = self.func.arg_attrs
        assert attrs is not None, "materialized functions carry their keys"
        return [_key_of(d) for d in attrs.data]

    def call(self, values: dict[InputKey, Any]) -> list[Any]:
        """Run on concrete arrays, or inline into the trace of the tracers given."""
        for outer, input_op in self.traced.closures:
            values[input_op.key] = outer
        args = [values[key] for key in self.arg_keys]
        trace = current_trace(*args)
        if trace is not None:
            return _inline(self.func, args)
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


def _arg_key(index: int) -> KeyAttr:
    return KeyAttr(f"arg{index}")


def _specs(args: Sequence[Any]) -> tuple[ArraySpec, ...]:
    return tuple(ArraySpec.of(a, f"#{i}") for i, a in enumerate(args))


class _Stage(Protocol):
    @property
    def traced(self) -> TracedFunction: ...


StageT = TypeVar("StageT", bound=_Stage)

_STAGES: weakref.WeakKeyDictionary[Any, dict[Any, Any]] = weakref.WeakKeyDictionary()
"""Stages per function (weakly) and (transform, signature, ...) key."""


def _cached(fn: Callable[..., Any], key: tuple[Any, ...], build: Callable[[], StageT]) -> StageT:
    """The stage of `fn` for `key`, built once; not cached when `fn` cannot be
    weakly referenced, or when the trace closed over tracers of an enclosing
    trace (those bind to one call only)."""
    try:
        table = _STAGES.setdefault(fn, {})
    except TypeError:
        return build()
    stage = table.get(key)
    if stage is None:
        stage = build()
        if not stage.traced.closures:
            table[key] = stage
    return stage


# --------------------------------------------------------------------------
# Building stages
# --------------------------------------------------------------------------


def _trace(fn: Callable[..., Any], specs: Sequence[ArraySpec]) -> TracedFunction:
    return trace_function(_unwrapped(fn), specs)


def _stage_primal(fn: Callable[..., Any], specs: tuple[ArraySpec, ...]) -> Staged:
    traced = _trace(fn, specs)
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


def _stage_jvp(fn: Callable[..., Any], specs: tuple[ArraySpec, ...]) -> _Derived:
    """The JVP w.r.t. every argument, fused with the primal outputs."""
    traced = _trace(fn, specs)
    linear = ad.linearize(traced.graph, wrt=[_arg_key(i) for i in range(len(specs))])
    extra = fragment_outputs(traced.graph)
    func = ad.materialize(linear.fragment, name="jvp", extra_outputs=extra)
    return _Derived(Staged(traced, func), linear)


def _stage_vjp(fn: Callable[..., Any], specs: tuple[ArraySpec, ...], argnums: tuple[int, ...],
               with_primal: bool) -> _Derived:  # fmt: skip
    traced = _trace(fn, specs)
    linear = ad.linearize(traced.graph, wrt=[_arg_key(i) for i in argnums])
    transposed = ad.linear_transpose(linear)
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


def _stage_split(fn: Callable[..., Any], specs: tuple[ArraySpec, ...], transpose: bool) -> _Split:
    """Linearize w.r.t. every argument, unzip with `fn`'s policy, and materialize
    the forward function and the linear map (or its transpose)."""
    traced = _trace(fn, specs)
    linear = ad.linearize(traced.graph, wrt=[_arg_key(i) for i in range(len(specs))])
    unzipped = ad.unzip(linear.fragment, _policy_of(fn))
    forward = Staged(traced, ad.materialize(unzipped.forward, name="forward"))
    transposed = ad.linear_transpose(unzipped.linear) if transpose else None
    fragment = unzipped.linear if transposed is None else transposed.fragment
    func = ad.materialize(fragment, name="linear" if transposed is None else "transposed")
    derived = _Derived(Staged(traced, func), linear, transposed)
    return _Split(forward, derived, unzipped)


def _split(fn: Callable[..., Any], specs: tuple[ArraySpec, ...], transpose: bool) -> _Split:
    """The cached `_stage_split` of `fn` for `specs` and its policy."""
    key = ("vjp" if transpose else "linearize", specs, _policy_of(fn))
    return _cached(fn, key, lambda: _stage_split(fn, specs, transpose))


def _normalize_argnums(argnums: int | Sequence[int], count: int) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for n in nums:
        if not -count <= n < count:
            raise ValueError(f"argnums {n} is out of range for a function of {count} arguments")
    return tuple(n % count for n in nums)


def _check_like(value: Any, spec: ArraySpec, what: str) -> Any:
    """`value` (a tangent or cotangent) must have the shape and dtype of `spec`."""
    if isinstance(value, Tracer):
        if value.shape != spec.shape:
            raise ValueError(f"{what} has shape {value.shape}, expected {spec.shape}")
        return value
    array = np.asarray(value)
    if array.shape != spec.shape:
        raise ValueError(f"{what} has shape {array.shape}, expected {spec.shape}")
    if array.dtype != spec.dtype:
        if not np.can_cast(array.dtype, spec.dtype, "same_kind"):
            raise TypeError(f"{what} has dtype {array.dtype}, expected {spec.dtype}")
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
    return tree_unflatten(traced.out_tree, values)


def _primal_values(args: Sequence[Any], specs: Sequence[ArraySpec]) -> dict[InputKey, Any]:
    return {
        _arg_key(i): _check_like(a, s, f"argument {i}")
        for i, (a, s) in enumerate(zip(args, specs, strict=True))
    }


# --------------------------------------------------------------------------
# Public transforms
# --------------------------------------------------------------------------


def jit(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Trace `fn` once per signature, compile it, and call the native code."""

    @functools.wraps(fn)
    def jitted(*args: Any) -> Any:
        specs = _specs(args)
        staged = _cached(fn, ("jit", specs), lambda: _stage_primal(fn, specs))
        return _pack(staged.traced, staged.call(_primal_values(args, specs)))

    return jitted


def _run_jvp(derived: _Derived, inputs: dict[InputKey, Any], tangents: Sequence[Any],
             like: Sequence[Any]) -> tuple[list[Any], list[Any]]:  # fmt: skip
    """Bind one tangent per primal to `inputs` (primal values or residuals), run,
    and split into (primal outputs, tangent outputs with zeros where inactive)."""
    specs = derived.staged.traced.input_specs
    if len(tangents) != len(specs):
        raise ValueError(f"expected {len(specs)} tangents (one per primal), got {len(tangents)}")
    values = dict(inputs)
    for i, ((key, _), tangent, spec) in enumerate(
        zip(derived.linear.tangent_inputs, tangents, specs, strict=True)
    ):
        values[key] = _check_like(tangent, spec, f"tangent {i} (for primal {i})")
    results = derived.staged.call(values)
    traced = derived.staged.traced
    primal_count = len(results) - sum(derived.linear.fragment.active_flags)
    flags = derived.linear.fragment.active_flags
    tangent_outputs = _fill(results[primal_count:], flags, _output_specs(traced), like)
    return results[:primal_count], tangent_outputs


def jvp(fn: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
    """`(fn(*primals), J·tangents)`: forward mode, one linearization."""
    primals, tangents = tuple(primals), tuple(tangents)
    specs = _specs(primals)
    derived = _cached(fn, ("jvp", specs), lambda: _stage_jvp(fn, specs))
    values = _primal_values(primals, specs)
    outputs, tangent_outputs = _run_jvp(derived, values, tangents, [*primals, *tangents])
    traced = derived.staged.traced
    return _pack(traced, outputs), _pack(traced, tangent_outputs)


def linearize(fn: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """`(fn(*primals), f_jvp)`: the forward function (primal outputs and the
    residuals `fn`'s policy saves, see `checkpoint`) runs once here; `f_jvp`
    runs only the compiled linear map on the stored residuals."""
    specs = _specs(primals)
    split = _split(fn, specs, transpose=False)
    outputs, residuals = split.run_forward(primals)

    def f_jvp(*tangents: Any) -> Any:
        _, tangent_outputs = _run_jvp(split.derived, residuals, tangents, [*primals, *tangents])
        return _pack(split.traced, tangent_outputs)

    return outputs, f_jvp


def vjp(fn: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """`(fn(*primals), vjp_fn)`; `vjp_fn(ct)` returns one cotangent per primal
    (for complex numbers the adjoint for Re(conj(a)·b), `docs/complex.md`). The
    forward function runs once here; `vjp_fn` runs only the transposed linear
    map on the residuals `fn`'s policy saves (see `checkpoint`)."""
    specs = _specs(primals)
    split = _split(fn, specs, transpose=True)
    outputs, residuals = split.run_forward(primals)
    out_specs = _output_specs(split.traced)

    def vjp_fn(cotangent: Any) -> tuple[Any, ...]:
        cts, _ = tree_flatten(cotangent)
        if len(cts) != len(out_specs):
            raise ValueError(f"vjp_fn takes {len(out_specs)} cotangents, got {len(cts)}")
        like = [*primals, *cts]
        return tuple(_run_transposed(split.derived, residuals, cts, out_specs, like))

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


def _gradient(fn: Callable[..., Any], argnums: int | Sequence[int], args: Sequence[Any],
              with_value: bool) -> tuple[Any, Any]:  # fmt: skip
    """`(value or None, gradient)` of a real scalar function, from one compiled
    function that computes the value too only when asked. It is fused (not
    unzipped like `vjp`): one function, no residuals stored and read back."""
    specs = _specs(args)
    nums = _normalize_argnums(argnums, len(args))
    derived = _cached(
        fn, ("grad", specs, nums, with_value), lambda: _stage_vjp(fn, specs, nums, with_value)
    )
    assert derived.transposed is not None
    traced = derived.staged.traced
    out_specs = _output_specs(traced)
    if traced.out_tree is not None or out_specs[0].shape != ():
        shape = out_specs[0].shape if traced.out_tree is None else f"{len(out_specs)} outputs"
        raise TypeError(f"grad requires a scalar output; got shape {shape}")
    if out_specs[0].dtype.kind == "c":
        raise TypeError("grad requires a real scalar output; got a complex one (use vjp)")
    values = _primal_values(args, specs)
    if derived.linear.fragment.active_flags[0]:
        ((ct_key, _),) = derived.transposed.tangent_inputs
        values[ct_key] = np.ones((), out_specs[0].dtype)
    results = derived.staged.call(values)
    value, gradients = (results[0], results[1:]) if with_value else (None, results)
    flags = derived.transposed.fragment.active_flags
    grads = _fill(gradients, flags, [specs[n] for n in nums], args)
    return value, grads[0] if isinstance(argnums, int) else tuple(grads)


def value_and_grad(fn: Callable[..., Any], argnums: int | Sequence[int] = 0) -> Callable[..., Any]:
    """`(fn(*args), grad)` in one compiled function; grad per `argnums`."""

    @functools.wraps(fn)
    def value_and_grad_fn(*args: Any) -> tuple[Any, Any]:
        return _gradient(fn, argnums, args, with_value=True)

    return value_and_grad_fn


def grad(fn: Callable[..., Any], argnums: int | Sequence[int] = 0) -> Callable[..., Any]:
    """The gradient of a real scalar function (for complex inputs ∂L/∂x + i∂L/∂y,
    `docs/complex.md`: `grad |z|²` is `2z`). The value itself is not computed.
    One fused function (the forward and transposed passes together, no
    residual round trip), so it is faster than calling `vjp`'s `vjp_fn`; a
    `checkpoint` policy does not apply to it."""

    @functools.wraps(fn)
    def grad_fn(*args: Any) -> Any:
        return _gradient(fn, argnums, args, with_value=False)[1]

    return grad_fn


def _stack(parts: Sequence[Any], shape: tuple[int, ...]) -> Any:
    """Stack equally shaped results along a new leading axis, then reshape."""
    if current_trace(*parts) is None:
        return np.stack([np.asarray(p) for p in parts]).reshape(shape)
    rows = [tnp.reshape(p, (1, *tnp.shape(p))) for p in parts]
    return tnp.reshape(tnp.concatenate(rows, axis=0), shape)


def _basis(spec: ArraySpec) -> list[np.ndarray]:
    eye = np.eye(int(np.prod(spec.shape, dtype=np.int64)), dtype=spec.dtype)
    return [row.reshape(spec.shape) for row in eye]


def _partial_at(fn: Callable[..., Any], args: Sequence[Any], num: int) -> Checkpointed:
    """`fn` as a function of argument `num` only, the others fixed to `args`,
    with `fn`'s policy."""
    body = _unwrapped(fn)
    return Checkpointed(lambda x: body(*args[:num], x, *args[num + 1 :]), _policy_of(fn))


def jacfwd(fn: Callable[..., Any], argnums: int = 0) -> Callable[..., Any]:
    """The Jacobian by forward mode, shape `out.shape + in.shape`: one JVP per
    input element through one linearization."""

    @functools.wraps(fn)
    def jacobian(*args: Any) -> Any:
        (num,) = _normalize_argnums(argnums, len(args))
        specs = _specs(args)
        _, f_jvp = linearize(_partial_at(fn, args, num), args[num])
        columns = [f_jvp(e) for e in _basis(specs[num])]
        out_shape = tnp.shape(columns[0])
        stacked = _stack(columns, (*specs[num].shape, *out_shape))
        return _move_input_axes_last(stacked, len(specs[num].shape), len(out_shape))

    return jacobian


def _move_input_axes_last(x: Any, in_rank: int, out_rank: int) -> Any:
    order = (*range(in_rank, in_rank + out_rank), *range(in_rank))
    return tnp.transpose(x, order) if order != tuple(range(in_rank + out_rank)) else x


def jacrev(fn: Callable[..., Any], argnums: int = 0) -> Callable[..., Any]:
    """The Jacobian by reverse mode, shape `out.shape + in.shape`: one VJP per
    output element through one transposed linearization."""

    @functools.wraps(fn)
    def jacobian(*args: Any) -> Any:
        (num,) = _normalize_argnums(argnums, len(args))
        specs = _specs(args)
        out, vjp_fn = vjp(_partial_at(fn, args, num), args[num])
        out_spec = ArraySpec.of(out, "output")
        rows = [vjp_fn(e)[0] for e in _basis(out_spec)]
        return _stack(rows, (*out_spec.shape, *specs[num].shape))

    return jacobian


def hessian(fn: Callable[..., Any], argnums: int = 0) -> Callable[..., Any]:
    """`jacfwd(jacrev(fn))`."""
    return jacfwd(jacrev(fn, argnums), argnums)


def hvp(fn: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]) -> Any:
    """The Hessian-vector product `H·v` as forward over reverse (`jvp(grad(fn))`)."""
    nums = tuple(range(len(tuple(primals))))
    grad_fn = grad(fn, nums)
    _, product = jvp(lambda *xs: grad_fn(*xs), tuple(primals), tuple(tangents))
    return product[0] if len(nums) == 1 else product


def linear_transpose(fn_lin: Callable[..., Any], *primals: Any) -> Callable[..., Any]:
    """The transpose of a linear function of arrays shaped like `primals`; a
    function that is not linear is refused with the verifier's message."""
    specs = _specs(primals)
    traced = _trace(fn_lin, specs)
    module = traced.module
    linear = linear_fragment_from_graph(
        module, traced.graph, [_arg_key(i) for i in range(len(specs))]
    )
    transposed = ad.linear_transpose(linear)
    func = ad.materialize(transposed.fragment, name="transpose")
    staged = Staged(traced, func)
    out_specs = [ArraySpec.of_value(v) for v in fragment_outputs(linear)]

    def transpose_fn(cotangent: Any) -> tuple[Any, ...]:
        cts, _ = tree_flatten(cotangent)
        values: dict[InputKey, Any] = {}
        for (key, _), ct, spec in zip(transposed.tangent_inputs, cts, out_specs, strict=True):
            values[key] = _check_like(ct, spec, "cotangent")
        results = staged.call(values)
        return tuple(_fill(results, transposed.fragment.active_flags, specs, cts))

    return transpose_fn


class Checkpointed:
    """A function carrying the residual policy of the transforms applied to it."""

    __name__: str

    def __init__(self, fn: Callable[..., Any], policy: str):
        self.fn = fn
        self.policy = policy
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, *args: Any) -> Any:
        if current_trace(*args) is not None:
            raise NotImplementedError(
                f"td.checkpoint(policy='{self.policy}') applies to the whole function a "
                "transform is given; calling a checkpointed function inside a traced "
                "function (a region-level policy) is not supported"
            )
        return self.fn(*args)


def checkpoint(fn: Callable[..., Any], policy: str = "save-all") -> Checkpointed:
    """`fn` with the residual policy `policy` (a name in `ad.POLICIES`) for the
    transforms that store residuals (`linearize`, `vjp`, `saved_residuals`):
    `save-all`, `recompute-elementwise` or `save-nothing` (inputs only). Use as
    `@checkpoint`, `checkpoint(f, policy=...)` or
    `functools.partial(checkpoint, policy=...)`."""
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
    specs = _specs(args)
    split = _split(fn, specs, transpose=False)
    return split.unzipped.residuals


STAGES = ("trace", "jvp", "unzip", "vjp", "materialize", "llvm")
"""The stages `ir` and `lower` show, in pipeline order."""


def ir(fn: Callable[..., Any], *example_args: Any, stage: str = "trace") -> str:
    """The module of `fn` at one stage, as text: `trace`, `jvp` (after
    linearize), `unzip` (a copy of the `jvp` module with the forward and
    residual graphs `unzip` adds under `fn`'s policy), `vjp` (after linearize
    and linear-transpose), `materialize` (the self-contained gradient
    function), or `llvm` (its LLVM IR). Only the stages up to the one asked
    for are run."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage '{stage}'; stages: {', '.join(STAGES)}")
    for name, text in _stages(fn, example_args):
        if name == stage:
            return text
    raise AssertionError("unreachable: every stage is produced")


def lower(fn: Callable[..., Any], *example_args: Any) -> dict[str, str]:
    """Every stage of `ir` at once."""
    return dict(_stages(fn, example_args))


def _stages(fn: Callable[..., Any], example_args: Sequence[Any]) -> Iterator[tuple[str, str]]:
    """(stage, text) in pipeline order, each computed when the caller asks for it."""
    specs = _specs(example_args)
    traced = _trace(fn, specs)
    yield "trace", str(traced.module)
    linear = ad.linearize(traced.graph, wrt=[_arg_key(i) for i in range(len(specs))])
    yield "jvp", str(traced.module)
    copy = traced.module.clone()
    ad.unzip((copy, fragment_path(linear.fragment)), _policy_of(fn))
    yield "unzip", str(copy)
    transposed = ad.linear_transpose(linear)
    yield "vjp", str(traced.module)
    func = ad.materialize(transposed.fragment, name="vjp")
    yield "materialize", str(func)
    from tidu_mlir.lowering.runtime import llvm_ir

    yield "llvm", llvm_ir(func)


__all__ = [
    "checkpoint", "grad", "hessian", "hvp", "ir", "jacfwd", "jacrev", "jit", "jvp",
    "linear_transpose", "linearize", "lower", "saved_residuals", "value_and_grad", "vjp",
    "key_spec",
]  # fmt: skip
