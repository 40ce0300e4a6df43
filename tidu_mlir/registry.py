"""The dialects and passes that tidu tools and the Python API know about."""

from __future__ import annotations

import functools
from collections.abc import Callable

from xdsl.context import Context
from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.universe import Universe


def _cg() -> Dialect:
    from tidu_mlir.dialects.cg import CG

    return CG


def _prim() -> Dialect:
    from tidu_mlir.dialects.prim import PRIM

    return PRIM


TIDU_DIALECTS: dict[str, Callable[[], Dialect]] = {"cg": _cg, "prim": _prim}
"""The tidu dialects by name, each imported when a context first needs it (the
prim dialect, with numpy, is a quarter of `tidu-opt`'s start-up; lowered IR
does not use it)."""


@functools.cache
def xdsl_universe() -> Universe:
    """xDSL's dialects, passes and targets with its plugins', discovered once
    per process (the discovery reads every installed package's metadata)."""
    return Universe.get_multiverse()


def make_context() -> Context:
    """A context with xDSL's dialects and the tidu dialects, loaded on demand."""
    ctx = Context()
    for name, factory in xdsl_universe().all_dialects.items():
        ctx.register_dialect(name, factory)
    for name, factory in TIDU_DIALECTS.items():
        ctx.register_dialect(name, factory)
    return ctx


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """The tidu passes (AD passes, then lowering passes) by command-line name."""
    from tidu_mlir.lowering import LOWERING_PASSES
    from tidu_mlir.passes import AD_PASSES

    return {**AD_PASSES, **LOWERING_PASSES}
