"""Shared fixtures: a context with every dialect tidu knows, and a parser helper."""

from __future__ import annotations

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from tidu_mlir.diagnostics import LocatingParser
from tidu_mlir.registry import make_context


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
