"""Shared fixtures: a context with every dialect tidu knows, and a parser helper."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from tidu_mlir.diagnostics import LocatingParser
from tidu_mlir.registry import make_context


def pytest_addoption(parser: pytest.Parser) -> None:
    """The fuzzers' options: CI runs them with a small fixed budget and seed;
    longer campaigns raise the budget and change the seed (docs/fuzzing.md)."""
    group = parser.getgroup("fuzz", "fuzzing (tests/fuzz, see docs/fuzzing.md)")
    group.addoption(
        "--fuzz-budget",
        type=int,
        default=None,
        metavar="N",
        help="mutated inputs for the IR fuzzer, programs per differential test, "
        "rounds of the thread stress test (default: the small CI budget)",
    )
    group.addoption(
        "--fuzz-seed",
        type=int,
        default=None,
        metavar="S",
        help="the fuzzers' random seed (default: the fixed CI seed)",
    )


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


EXTRAS = {"jax": "oracle", "torch": "oracle", "dask": "dask"}
"""A word in a skip reason, and the extra that installs what was missing."""


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say how many tests of an optional extra were skipped and why (JAX oracle
    comparisons without JAX, the Dask cluster tests without Dask)."""
    reasons: dict[tuple[str, str], int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        reason = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else ""
        extra = next((e for word, e in EXTRAS.items() if word in reason.lower()), None)
        if extra is not None:
            key = (reason.removeprefix("Skipped: "), extra)
            reasons[key] = reasons.get(key, 0) + 1
    for (reason, extra), count in reasons.items():
        what = "oracle comparisons" if extra == "oracle" else f"{extra} tests"
        terminalreporter.write_line(
            f"{what} skipped: {count} ({reason}); install them with: pip install -e '.[{extra}]'"
        )
