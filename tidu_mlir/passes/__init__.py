"""The AD passes, one module each, by command-line name."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass

AD_PASSES: dict[str, Callable[[], type[ModulePass]]] = {}
