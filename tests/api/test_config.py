"""`td.config` (settings from `update`, the environment, defaults) and the bounded
caches it sizes (`LRUCache`, `WeakOwnerCache`): sizes are counted after every
insertion, never above their bounds; evicted values are released. The flag
`log_compiles` turns the compile log on and off."""

from __future__ import annotations

import gc
import re
import weakref
from collections.abc import Hashable, Iterator
from typing import cast

import numpy as np
import pytest

import tidu_mlir as td
import tidu_mlir.numpy as tnp
from tidu_mlir.config import LRUCache, WeakOwnerCache
from tidu_mlir.lowering import runtime


@pytest.fixture(autouse=True)
def _restore_settings() -> Iterator[None]:
    yield
    td.config.reset()


class Owner:
    """A weakly referenceable owner (a stand-in for a transformed function)."""


class Value:
    """A weakly referenceable cached value (a stand-in for a stage)."""


def test_update_overrides_the_environment_which_overrides_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert td.config.stage_cache_size == td.config.SETTINGS["stage_cache_size"].default
    monkeypatch.setenv("TIDU_STAGE_CACHE_SIZE", "7")
    assert td.config.stage_cache_size == 7
    td.config.update("stage_cache_size", 3)
    assert td.config.stage_cache_size == td.config.get("stage_cache_size") == 3
    td.config.reset("stage_cache_size")
    assert td.config.stage_cache_size == 7


def test_bad_names_and_values_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(AttributeError, match="no setting 'cache_sise'"):
        td.config.update("cache_sise", 3)
    with pytest.raises(AttributeError, match="no setting"):
        _ = td.config.cache_sise
    for bad in (-1, 2.5, True, "8"):
        with pytest.raises(ValueError, match="integer >= 0"):
            td.config.update("compile_cache_size", bad)  # type: ignore[arg-type]
    monkeypatch.setenv("TIDU_EAGER_CACHE_SIZE", "lots")
    with pytest.warns(UserWarning, match="TIDU_EAGER_CACHE_SIZE='lots'"):
        assert td.config.eager_cache_size == 256


def test_lru_cache_stays_within_its_bound_and_keeps_the_recently_used() -> None:
    td.config.update("eager_cache_size", 3)
    cache: LRUCache[int, str] = LRUCache("eager_cache_size")
    for key in range(10):
        cache[key] = str(key)
        assert cache.get(0) in ("0", None)  # 0 is used at each step: it stays
        assert len(cache) <= 3
    assert 0 in cache and cache.get(9) == "9" and 5 not in cache
    assert len(cache) == 3


def test_lowering_a_bound_evicts_at_once_and_releases_the_values() -> None:
    cache: LRUCache[int, Value] = LRUCache("eager_cache_size")
    values = [Value() for _ in range(6)]
    alive = [weakref.ref(v) for v in values]
    for key in range(6):
        cache[key] = values[key]
    del values
    td.config.update("eager_cache_size", 2)
    gc.collect()
    assert len(cache) == 2
    assert [ref() is not None for ref in alive] == [False] * 4 + [True] * 2
    td.config.update("eager_cache_size", 0)
    assert len(cache) == 0 and all(ref() is None for ref in alive)


def test_clear_caches_empties_every_cache() -> None:
    lru: LRUCache[int, int] = LRUCache("eager_cache_size")
    owned = WeakOwnerCache("stage_cache_size", "function_cache_size")
    owner = Owner()
    lru[1] = 1
    owned.put(owner, "k", Value())
    td.clear_caches()
    assert len(lru) == 0 and len(owned) == 0 and owned.count(owner) == 0


def test_weak_owner_cache_bounds_each_owner_and_the_total() -> None:
    td.config.update("function_cache_size", 3)
    td.config.update("stage_cache_size", 5)
    cache = WeakOwnerCache("stage_cache_size", "function_cache_size")
    owners = [Owner() for _ in range(3)]
    for step in range(12):
        for owner in owners:
            cache.put(owner, step, Value())
            assert len(cache) <= 5
            assert all(cache.count(o) <= 3 for o in owners)
    assert cache.get(owners[2], 11) is not None  # the most recent stays
    assert cache.get(owners[0], 0) is None  # the oldest went first


def test_weak_owner_cache_per_owner_bound_evicts_that_owners_oldest() -> None:
    td.config.update("function_cache_size", 2)
    cache = WeakOwnerCache("stage_cache_size", "function_cache_size")
    busy, quiet = Owner(), Owner()
    cache.put(quiet, "q", Value())
    for step in range(5):
        cache.put(busy, step, Value())
    assert cache.count(busy) == 2 and cache.count(quiet) == 1
    assert cache.get(quiet, "q") is not None  # older, but another owner's
    assert cache.get(busy, 4) is not None and cache.get(busy, 2) is None


def test_weak_owner_cache_drops_the_entries_of_a_dead_owner() -> None:
    cache = WeakOwnerCache("stage_cache_size", "function_cache_size")
    owner, other = Owner(), Owner()
    value = Value()
    alive = weakref.ref(value)
    cache.put(owner, "k", value)
    del owner, value
    gc.collect()
    assert cache.get(other, "k") is None  # any use purges the dead owner's entries
    assert alive() is None and len(cache) == 0


def test_weak_owner_cache_refuses_unhashable_keys_and_owners() -> None:
    cache = WeakOwnerCache("stage_cache_size", "function_cache_size")
    with pytest.raises(TypeError):
        cache.put(Owner(), cast(Hashable, ["unhashable"]), Value())
    with pytest.raises(TypeError):
        cache.get(3.0, "k")  # a float cannot be weakly referenced
    assert len(cache) == 0


# ----- log_compiles ----------------------------------------------------------------


def test_log_compiles_flag_from_update_the_environment_and_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TIDU_LOG_COMPILES", raising=False)
    assert td.config.log_compiles is False
    for text, value in (("1", True), ("0", False), ("TRUE", True), ("off", False), ("", False)):
        monkeypatch.setenv("TIDU_LOG_COMPILES", text)
        assert td.config.log_compiles is value, text
    td.config.update("log_compiles", True)
    assert td.config.get("log_compiles") is True  # update beats the environment's "off"
    td.config.update("log_compiles", 0)
    assert td.config.log_compiles is False
    monkeypatch.setenv("TIDU_LOG_COMPILES", "1")
    td.config.reset("log_compiles")
    assert td.config.log_compiles is True


def test_log_compiles_refuses_what_is_not_a_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    for bad in (2, -1, 0.5, "yes", None):
        with pytest.raises(ValueError, match="bool"):
            td.config.update("log_compiles", bad)  # type: ignore[arg-type]
    monkeypatch.setenv("TIDU_LOG_COMPILES", "loud")
    with pytest.warns(UserWarning, match="TIDU_LOG_COMPILES='loud'"):
        assert td.config.log_compiles is False


def _compiles() -> int:
    """How many functions the runtime lowered or loaded from disk so far."""
    return runtime.COUNTS["lowerings"] + runtime.COUNTS["disk-hits"]


def test_log_compiles_prints_a_line_per_compilation_only_when_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("TIDU_LOG_COMPILES", raising=False)
    f = td.jit(lambda x: tnp.cos(x) * 0.375 + 1.0)  # shapes no other test compiles
    capsys.readouterr()
    td.config.update("log_compiles", True)
    before = _compiles()
    f(np.ones((3, 1, 7)))
    assert _compiles() == before + 1, "a fresh shape compiles"
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tidu: compile @"), lines
    assert " llvm-text " in lines[0] or "disk-load" in lines[0]
    assert re.search(r"total \d+\.\d{3} s", lines[0])
    td.config.update("log_compiles", False)
    before = _compiles()
    f(np.ones((3, 1, 8)))
    assert _compiles() == before + 1, "a fresh shape compiles"
    assert capsys.readouterr().err == ""
