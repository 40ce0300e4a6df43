"""Shared fixtures: a context with every dialect tidu knows, and a parser helper."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from tidu_mlir.diagnostics import LocatingParser
from tidu_mlir.registry import make_context


@pytest.fixture(scope="session", autouse=True)
def _private_compilation_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Never write into the user's compilation cache: the whole session (and the
    processes it starts, which inherit the environment) uses a temporary one."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIDU_CACHE_DIR", str(tmp_path_factory.mktemp("tidu-cache")))
        yield


@pytest.fixture(scope="session")
def ctx() -> Context:
    return make_context()


@pytest.fixture
def parse(ctx: Context):
    """Parse and verify a module from text."""

    def _parse(text: str) -> ModuleOp:
        module = LocatingParser(ctx, text, "test.mlir").parse_module()
        module.verify()
        return module

    return _parse
