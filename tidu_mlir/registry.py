"""The dialects and passes that tidu tools and the Python API know about."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Dialect
from xdsl.passes import ModulePass

from tidu_mlir.dialects.cg import CG
from tidu_mlir.dialects.prim import PRIM

ALL_DIALECTS: tuple[Dialect, ...] = (CG, PRIM)


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """The tidu passes (AD passes, then lowering passes) by command-line name."""
    from tidu_mlir.lowering import LOWERING_PASSES
    from tidu_mlir.passes import AD_PASSES

    return {**AD_PASSES, **LOWERING_PASSES}
