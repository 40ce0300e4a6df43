"""The fuzzers' budget and seed (`--fuzz-budget`, `--fuzz-seed`, in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import seed as hypothesis_seed


@pytest.fixture
def fuzz_budget(request: pytest.FixtureRequest) -> Callable[[int], int]:
    """`budget(ci_default)`: the `--fuzz-budget` if given, else the CI default."""
    given: int | None = request.config.getoption("--fuzz-budget")
    return lambda default: default if given is None else given


@pytest.fixture
def fuzz_seed(request: pytest.FixtureRequest) -> int | None:
    """The `--fuzz-seed` if given (None: the fixed CI seed)."""
    return request.config.getoption("--fuzz-seed")


@pytest.fixture
def fuzz_settings(
    fuzz_budget: Callable[[int], int], fuzz_seed: int | None
) -> Callable[[int], Callable[[Callable[..., None]], Callable[..., None]]]:
    """A decorator factory for a nested `@given` check: `fuzz_settings(40)(check)`
    runs 40 examples in CI, derandomized (the same examples every run), no
    example database; `--fuzz-budget`/`--fuzz-seed` change the count and seed."""

    def configure(default: int) -> Callable[[Callable[..., None]], Callable[..., None]]:
        def decorate(check: Callable[..., None]) -> Callable[..., None]:
            configured = settings(
                max_examples=fuzz_budget(default),
                derandomize=fuzz_seed is None,
                database=None,
                deadline=None,
                print_blob=False,
                suppress_health_check=[
                    HealthCheck.too_slow,
                    HealthCheck.filter_too_much,
                    HealthCheck.data_too_large,
                ],
            )(check)
            return configured if fuzz_seed is None else hypothesis_seed(fuzz_seed)(configured)

        return decorate

    return configure
