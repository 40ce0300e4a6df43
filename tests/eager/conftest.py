"""The eager executor's configurations, as a fixture for tests that must hold
in each: `interp` (every backward fragment a numpy program), `llvm` (every
fragment LLVM code) and `default` (LLVM, small fragments numpy programs)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

import tidu_mlir.eager as te

BACKENDS = ["interp", "llvm", "default"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param != "interp" and importlib.util.find_spec("llvmlite") is None:
        pytest.skip("llvmlite is not installed")
    if request.param == "llvm":
        monkeypatch.setattr(te.RUNTIME.executor, "numpy_limits", None)
    te.set_backend("interp" if request.param == "interp" else "llvm")
    yield request.param
    te.set_backend(None)
