"""Process-wide settings (`td.config`) and the bounded caches they size.

    td.config.update("compile_cache_size", 32)    # as jax.config.update
    td.config.compile_cache_size                  # 32
    td.config.reset("compile_cache_size")         # back to the environment / default
    td.config.update("log_compiles", True)        # a line per compilation on stderr
    td.config.update("jax_enable_x64", True)      # accepted for JAX code: always on
    td.clear_caches()                             # drop every cached stage and compiled function

Settings (an `update` overrides the environment variable, which overrides
the default):

* `compile_cache_size` (`TIDU_COMPILE_CACHE_SIZE`, 256): compiled functions
  the lowering runtime keeps (by content);
* `stage_cache_size` (`TIDU_STAGE_CACHE_SIZE`, 256): traced and derived
  stages of all transformed functions together (each holds its compiled code);
* `function_cache_size` (`TIDU_FUNCTION_CACHE_SIZE`, 64): stages of one
  transformed function;
* `eager_cache_size` (`TIDU_EAGER_CACHE_SIZE`, 256): entries of each cache of
  the eager frontend (traced graphs, backward plans, compiled backward code);
* `log_compiles` (`TIDU_LOG_COMPILES`, False): print one line per compilation
  to stderr with the time of each stage (`tidu_mlir.lowering.runtime`), as
  `jax_log_compiles`. A flag: `update` takes a bool (or 0/1), the variable
  `1`/`0`, `true`/`false`, `yes`/`no` or `on`/`off`;
* `compile_threads` (`TIDU_COMPILE_THREADS`, 0): threads a compilation may
  use: a large function is cut into modules that LLVM optimizes and compiles
  in threads while the next is lowered (`tidu_mlir.lowering.llvm_threads`);
  0 means the CPUs the process may run on, 1 compiles in the calling thread
  only. Small functions are compiled whole;
* `segment_ops` (`TIDU_SEGMENT_OPS`, 1500): with more than one compile
  thread, a function of more than twice this many prim ops is cut into
  segments of about this size, each lowered while LLVM compiles the ones
  before it (`tidu_mlir.lowering.segment`); 0 never cuts;
* `llvm_text` (`TIDU_LLVM_TEXT`, True): the JIT writes LLVM IR straight
  from the loop-level IR (`tidu_mlir.lowering.llvm_text`); off, it lowers
  through the `llvm` dialect as `tidu-opt -p lower-to-llvm` does (the
  same numbers, several times slower on large programs). A flag.

Every cache drops its least recently used entry beyond its bound, and
`update` shrinks them at once. Evicting drops the cache's reference only: a
compiled function or stage still held elsewhere (a `linearize` result, a
`CompiledFunction`) keeps working, and is freed with its last reference; an
evicted stage is traced and compiled again on its next use. 0 caches nothing.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import os
import threading
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar


@dataclass(frozen=True)
class Setting:
    """One setting: its environment variable and default (the module docstring
    says what each does). A bool default makes it a flag, else it is a count
    (an integer >= 0)."""

    env: str
    default: int

    @property
    def is_flag(self) -> bool:
        return isinstance(self.default, bool)


SETTINGS: dict[str, Setting] = {
    "compile_cache_size": Setting("TIDU_COMPILE_CACHE_SIZE", 256),
    "stage_cache_size": Setting("TIDU_STAGE_CACHE_SIZE", 256),
    "function_cache_size": Setting("TIDU_FUNCTION_CACHE_SIZE", 64),
    "eager_cache_size": Setting("TIDU_EAGER_CACHE_SIZE", 256),
    "log_compiles": Setting("TIDU_LOG_COMPILES", False),
    "compile_threads": Setting("TIDU_COMPILE_THREADS", 0),
    "llvm_text": Setting("TIDU_LLVM_TEXT", True),
    "segment_ops": Setting("TIDU_SEGMENT_OPS", 1500),
}

_values: dict[str, int] = {}
"""The values set by `update` (a flag's as a bool)."""

_FLAG_WORDS = {
    **dict.fromkeys(("1", "true", "yes", "on"), True),
    **dict.fromkeys(("0", "false", "no", "off"), False),
}
"""What a flag's environment variable may say (any case)."""


def _setting(name: str) -> Setting:
    if name not in SETTINGS:
        raise AttributeError(f"no setting {name!r} (have {', '.join(SETTINGS)})")
    return SETTINGS[name]


def get(name: str) -> int:
    """The value of `name`: set by `update`, else its environment variable, else
    the default (a bool for a flag)."""
    setting = _setting(name)
    if name in _values:
        return _values[name]
    text = os.environ.get(setting.env, "")
    if setting.is_flag:
        return _flag_from_environment(setting.env, text, bool(setting.default))
    return _from_environment(setting.env, text, setting.default)


def __getattr__(name: str) -> int:
    """`td.config.<setting>`."""
    return get(name)


@functools.cache
def _from_environment(env: str, text: str, default: int) -> int:
    """The integer in `text` (the value of `env`), else `default` (warned once
    for a value that is not a non-negative integer)."""
    if not text.strip():
        return default
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        warnings.warn(f"{env}={text!r} is not an integer >= 0: using {default}", stacklevel=2)
        return default
    return value


@functools.cache
def _flag_from_environment(env: str, text: str, default: bool) -> bool:
    """The flag `text` (the value of `env`) says, else `default` (warned once
    for a word that is not one of `_FLAG_WORDS`)."""
    if not text.strip():
        return default
    value = _FLAG_WORDS.get(text.strip().lower())
    if value is None:
        words = "/".join(_FLAG_WORDS)
        warnings.warn(f"{env}={text!r} is not one of {words}: using {default}", stacklevel=2)
        return default
    return value


def update(name: str, value: int) -> None:
    """Set `name` to `value` in this process: an integer >= 0 for a count (the
    caches it bounds shrink at once), a bool or 0/1 for a flag.
    `update("jax_enable_x64", True)` is accepted and changes nothing, so JAX
    code runs unchanged: tidu always has numpy's 64-bit dtypes."""
    if name == "jax_enable_x64":
        if value is not True and value != 1:
            raise ValueError("tidu always enables 64-bit dtypes (numpy's); jax_enable_x64 is True")
        return
    setting = _setting(name)
    if setting.is_flag:
        if not isinstance(value, int) or value not in (0, 1):
            raise ValueError(f"{name} must be a bool (or 0/1), got {value!r}")
        _values[name] = bool(value)
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    _values[name] = value
    _shrink_all()


def reset(name: str | None = None) -> None:
    """Forget `update` of `name` (of every setting for None): back to the
    environment variable or the default."""
    if name is None:
        _values.clear()
    else:
        _setting(name)
        _values.pop(name, None)
    _shrink_all()


# ----- caches ---------------------------------------------------------------


class Cache(Protocol):
    """What `clear_caches` and `update` need of a cache."""

    def clear(self) -> None: ...

    def shrink(self) -> None:
        """Evict down to the current bounds."""
        ...


_caches: weakref.WeakSet[Cache] = weakref.WeakSet()


def register(cache: Cache) -> None:
    """Have `clear_caches` empty `cache` and `update` shrink it (held weakly)."""
    _caches.add(cache)


def _shrink_all() -> None:
    for cache in list(_caches):
        cache.shrink()


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRUCache(Generic[K, V]):
    """A dict of at most `get(setting)` entries, the least recently used out
    first. Thread-safe. Evicted values are released outside the lock (their
    destructors, e.g. freeing native code, never run under it)."""

    def __init__(self, setting: str) -> None:
        _setting(setting)
        self.setting = setting
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        register(self)

    def get(self, key: K, default: V | None = None) -> V | None:
        """The value of `key` (now the most recently used), or `default`."""
        with self._lock:
            if key not in self._data:
                return default
            self._data.move_to_end(key)
            return self._data[key]

    def __setitem__(self, key: K, value: V) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            evicted = self._evict()
        del evicted  # released here, outside the lock

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def values(self) -> list[V]:
        """A snapshot of the values, least recently used first."""
        with self._lock:
            return list(self._data.values())

    def clear(self) -> None:
        with self._lock:
            dropped = list(self._data.values())
            self._data.clear()
        del dropped

    def shrink(self) -> None:
        with self._lock:
            evicted = self._evict()
        del evicted

    def _evict(self) -> list[V]:
        """Pop the oldest entries beyond the bound (call with the lock held)."""
        limit = get(self.setting)
        return [self._data.popitem(last=False)[1] for _ in range(len(self._data) - limit)]


class WeakOwnerCache:
    """Values by (owner, key), the owner held weakly (its entries go with it):
    at most `get(owner_setting)` entries per owner and `get(total_setting)` in
    all, the least recently used out first. Thread-safe. `TypeError` when the
    owner cannot be weakly referenced or hashed, or the key hashed."""

    def __init__(self, total_setting: str, owner_setting: str) -> None:
        _setting(total_setting)
        _setting(owner_setting)
        self.total_setting, self.owner_setting = total_setting, owner_setting
        self._data: OrderedDict[tuple[weakref.ref[object], Hashable], object] = OrderedDict()
        self._owners: dict[weakref.ref[object], _Owner] = {}
        """One weak reference per owner (all its entries use it: still found
        by identity once the owner is dead) and its entry count."""
        self._stale = False
        self._lock = threading.Lock()
        register(self)

    def get(self, owner: object, key: Hashable) -> object | None:
        """The value of (`owner`, `key`) (now the most recently used), or None."""
        probe = (weakref.ref(owner), key)
        with self._lock:
            dead = self._purge()
            value = self._data.get(probe)
            if value is not None:
                self._data.move_to_end(probe)
        del dead  # released outside the lock
        return value

    def put(self, owner: object, key: Hashable, value: object) -> None:
        probe = weakref.ref(owner)
        hash((probe, key))  # TypeError before anything changes
        with self._lock:
            dead = self._purge()
            record = self._owners.get(probe)
            if record is None:
                ref = weakref.ref(owner, self._owner_died)
                record = self._owners[ref] = _Owner(ref)
            entry = (record.ref, key)
            if entry not in self._data:
                record.count += 1
            self._data[entry] = value
            self._data.move_to_end(entry)
            evicted = self._evict()
        del dead, evicted

    def count(self, owner: object) -> int:
        """How many entries `owner` has."""
        record = self._owners.get(weakref.ref(owner))
        return 0 if record is None else record.count

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        with self._lock:
            dropped = list(self._data.values())
            self._data.clear()
            self._owners.clear()
        del dropped

    def shrink(self) -> None:
        with self._lock:
            evicted = self._evict()
        del evicted

    def _owner_died(self, _ref: weakref.ref[object]) -> None:
        # Only a flag: this may run at any allocation, even under our lock.
        self._stale = True

    def _purge(self) -> list[object]:
        """Pop the entries of owners that died (call with the lock held)."""
        if not self._stale:
            return []
        self._stale = False
        for ref in [ref for ref in self._owners if ref() is None]:
            del self._owners[ref]
        return [self._data.pop(entry) for entry in [e for e in self._data if e[0]() is None]]

    def _evict(self) -> list[object]:
        """Pop the oldest entries beyond the bounds (call with the lock held)."""
        per_owner, total = get(self.owner_setting), get(self.total_setting)
        excess = {
            ref: o.count - per_owner for ref, o in self._owners.items() if o.count > per_owner
        }
        surplus = len(self._data) - total
        victims = []
        for entry in self._data:
            if surplus <= 0 and not excess:
                break
            ref = entry[0]
            if surplus > 0 or ref in excess:
                victims.append(entry)
                surplus -= 1
                if ref in excess:
                    excess[ref] -= 1
                    if not excess[ref]:
                        del excess[ref]
        return [self._pop(entry) for entry in victims]

    def _pop(self, entry: tuple[weakref.ref[object], Hashable]) -> object:
        ref = entry[0]
        record = self._owners[ref]
        record.count -= 1
        if not record.count:
            del self._owners[ref]
        return self._data.pop(entry)


@dataclass
class _Owner:
    ref: weakref.ref[object]
    count: int = 0


def clear_caches() -> None:
    """Empty every cache (stages, compiled functions, eager graphs and plans),
    collect the garbage and give the freed heap back to the OS, as
    `jax.clear_caches`. Objects still referenced elsewhere stay usable. The
    disk cache stays (`tidu_mlir.lowering.disk_cache.clear`)."""
    for cache in list(_caches):
        cache.clear()
    gc.collect()
    trim_heap()


def trim_heap() -> bool:
    """glibc's `malloc_trim(0)`: return free heap pages to the OS (False if not
    glibc). Needed to see freed memory leave the RSS: glibc keeps free memory
    below its trim threshold, which `lowering.allocator` raises to 512 MiB."""
    malloc_trim = _malloc_trim()
    if malloc_trim is None:
        return False
    malloc_trim(0)
    return True


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        function = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_size_t]
    return function
