"""Functions shipped as IR text: `export(fn, *example_args)` traces `fn` (any
composition of transforms: `td.grad`, `td.vmap(...)`, ...) at the arguments'
signature into one materialized `func.func` and returns an `Exported`, a
plain picklable record: the function's text, the arguments' pytree structure
and specs, the arrays the function captured, the results' structure. No native
code and no Python code of `fn` travels: a process that unpickles it parses
the text and compiles it once (kept in a per-process table keyed by the text,
and in the disk compilation cache), so its thousandth call costs no
compilation. This is what `tidu_mlir.dask` sends to its workers.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects.func import FuncOp
from xdsl.parser import Parser

from tidu_mlir import api
from tidu_mlir.execution import Executable, executable
from tidu_mlir.registry import make_context
from tidu_mlir.tree_util import PyTreeDef, tree_unflatten


@dataclass(frozen=True)
class Exported:
    """A function traced at one signature, as text (see the module docstring).

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
        arrays, sig = api._flatten_args(args)  # scalars become arrays as in td.jit
        if sig.trees != self.in_trees:
            raise TypeError(f"exported function takes {self.in_trees}, got {sig.trees}")
        for k, (spec, (shape, dtype)) in enumerate(zip(sig.specs, self.in_specs, strict=True)):
            if spec.shape != shape or spec.dtype != np.dtype(dtype):
                got = f"{spec.dtype}{list(spec.shape)}"
                raise TypeError(
                    f"exported function: argument {sig.leaf_name(k)} is {got}, "
                    f"expected {dtype}{list(shape)}"
                )
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
    leaves, sig = api._flatten_args(example_args)
    staged = api._stage_primal(fn, sig)
    argument_of = {api._arg_key(i): i for i in range(len(leaves))}
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
        func_text=str(staged.func),
        in_trees=sig.trees,
        in_specs=tuple((spec.shape, spec.dtype.name) for spec in sig.specs),
        sources=tuple(sources),
        out_tree=staged.traced.out_treedef,
        out_specs=tuple((s.shape, s.dtype.name) for s in api._output_specs(staged.traced)),
    )
