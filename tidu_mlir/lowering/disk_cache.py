"""A persistent compilation cache: object code on disk, shared by processes.

A second process compiling the same function (`runtime.compile_function`) loads
the object code MCJIT generated the first time instead of lowering, optimizing
and generating code again (like JAX's `jax_compilation_cache_dir`).

Settings
--------
* Directory: `set_cache_dir(path)` (None disables the cache, `reset_cache_dir()`
  goes back to the environment), else `TIDU_CACHE_DIR=/path`, else the user's
  cache directory (`platformdirs.user_cache_dir("tidu-mlir")`). `TIDU_CACHE_DIR=`
  (set and empty) disables the cache. Entries live in its `jit/` subdirectory.
* Size bound: `set_max_bytes(n)`, else `TIDU_CACHE_MAX_BYTES`, else 1 GiB. After
  each store the least recently used entries (by mtime; a hit touches its
  entry) are deleted while the total is over the bound.

Keys
----
`entry_key(digest, options)` hashes the SHA-256 of the function's text with
everything else that changes the object code: the format version, tidu-mlir's
version and a fingerprint of its source files, llvmlite's and LLVM's versions,
the target triple, the CPU name and features, and the lowering `options`
(optimization level, thresholds). Any change is a miss, never a stale hit.

Entries
-------
One file per key, `<key>.tjc`: a magic line, the SHA-256 of the rest, the
length of a JSON header, the header (key, format, the sizes of the objects,
metadata: the entry points' signatures, never pickle) and the object code (one
object, or several linked when loaded: a module compiled in parts). It is written to a temporary
file in the same directory and renamed over (`os.replace`): readers see a whole
entry or none, concurrent writers of one key each leave a whole entry. An entry
that fails its checks (truncated, corrupted, another key or format) is reported
by `warnings.warn` naming the file, deleted, and treated as a miss.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMAT_VERSION = 2
"""Bumped whenever the entry layout or its metadata change meaning."""

DEFAULT_MAX_BYTES = 1 << 30
ENTRY_SUFFIX = ".tjc"
SUBDIRECTORY = "jit"
STALE_TEMP_SECONDS = 3600.0
"""Temporary files older than this are left over from a killed writer: deleted."""

_MAGIC = b"TIDU-JIT-CACHE\n"
_TEMP_SUFFIX = ".tmp"

stats: Counter[str] = Counter()
"""Counts of `hits`, `misses`, `stores`, `evictions` and `corrupt` entries in
this process (for tests and benchmarks)."""


class CacheWarning(UserWarning):
    """A cache entry was unusable (it is deleted and the function recompiled), or
    the cache directory could not be written."""


class _Unset:
    pass


_UNSET = _Unset()
_directory: Path | None | _Unset = _UNSET
_max_bytes: int | None = None


def set_cache_dir(path: str | os.PathLike[str] | None) -> None:
    """Use `path` as the cache directory; None disables the cache. Overrides
    `TIDU_CACHE_DIR` until `reset_cache_dir()`."""
    global _directory
    _directory = None if path is None else Path(path).expanduser()


def reset_cache_dir() -> None:
    """Forget `set_cache_dir`: back to `TIDU_CACHE_DIR` or the default."""
    global _directory
    _directory = _UNSET


def get_cache_dir() -> Path | None:
    """The cache directory in use, or None when the cache is disabled."""
    if not isinstance(_directory, _Unset):
        return _directory
    value = os.environ.get("TIDU_CACHE_DIR")
    if value is not None:
        return Path(value).expanduser() if value.strip() else None
    import platformdirs

    return Path(platformdirs.user_cache_dir("tidu-mlir"))


def set_max_bytes(limit: int | None) -> None:
    """Bound the cache to `limit` bytes; None goes back to `TIDU_CACHE_MAX_BYTES`."""
    global _max_bytes
    if limit is not None and limit < 0:
        raise ValueError(f"the cache size bound must be >= 0, got {limit}")
    _max_bytes = limit


def get_max_bytes() -> int:
    """The size bound in bytes (`set_max_bytes`, `TIDU_CACHE_MAX_BYTES`, 1 GiB)."""
    if _max_bytes is not None:
        return _max_bytes
    value = os.environ.get("TIDU_CACHE_MAX_BYTES", "").strip()
    if not value:
        return DEFAULT_MAX_BYTES
    try:
        return max(0, int(value))
    except ValueError:
        warnings.warn(
            f"TIDU_CACHE_MAX_BYTES={value!r} is not an integer: using 1 GiB",
            CacheWarning,
            stacklevel=2,
        )
        return DEFAULT_MAX_BYTES


def entries_directory(root: Path) -> Path:
    """Where the entries of the cache rooted at `root` live."""
    return root / SUBDIRECTORY


# ----- keys ---------------------------------------------------------------------


@functools.cache
def _source_fingerprint() -> str:
    """SHA-256 of tidu-mlir's own Python sources: an edited compiler misses."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode())
        with contextlib.suppress(OSError):
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _tidu_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("tidu-mlir")
    except metadata.PackageNotFoundError:
        return "unknown"


@functools.cache
def environment() -> dict[str, Any]:
    """Everything of this process that changes the object code, as JSON data."""
    import llvmlite
    import llvmlite.binding as llvm

    return {
        "tidu": _tidu_version(),
        "tidu-sources": _source_fingerprint(),
        "llvmlite": llvmlite.__version__,
        "llvm": list(llvm.llvm_version_info),
        "triple": llvm.get_default_triple(),
        "cpu": llvm.get_host_cpu_name(),
        "features": llvm.get_host_cpu_features().flatten(),
    }


def entry_key(digest: str, options: Mapping[str, Any]) -> str:
    """The key of the function whose text has SHA-256 `digest`, compiled with the
    lowering `options` (JSON data) in this environment."""
    description = {
        "format": FORMAT_VERSION,
        "environment": environment(),
        "options": dict(options),
        "function": digest,
    }
    text = json.dumps(description, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


# ----- entries ------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """A cache entry read back: its JSON metadata and objects."""

    key: str
    metadata: dict[str, Any]
    objects: list[bytes]


def entry_path(root: Path, key: str) -> Path:
    return entries_directory(root) / f"{key}{ENTRY_SUFFIX}"


def _encode(key: str, metadata: Mapping[str, Any], objects: Sequence[bytes]) -> bytes:
    header = json.dumps(
        {
            "format": FORMAT_VERSION,
            "key": key,
            "objects": [len(code) for code in objects],
            "metadata": dict(metadata),
        }
    )
    header_bytes = header.encode()
    payload = b"%d\n" % len(header_bytes) + header_bytes + b"".join(objects)
    return _MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload


def _decode(data: bytes, key: str) -> Entry:
    """The entry in `data`; `ValueError` saying what is wrong with it."""
    if not data.startswith(_MAGIC):
        raise ValueError("not a tidu cache entry (bad magic)")
    checksum_end = len(_MAGIC) + 64
    checksum, payload = data[len(_MAGIC) : checksum_end], data[checksum_end + 1 :]
    if data[checksum_end : checksum_end + 1] != b"\n":
        raise ValueError("truncated header")
    if hashlib.sha256(payload).hexdigest().encode() != checksum:
        raise ValueError("checksum mismatch (truncated or corrupted)")
    length_text, newline, rest = payload.partition(b"\n")
    if not newline or not length_text.isdigit() or int(length_text) > len(rest):
        raise ValueError("bad header length")
    length = int(length_text)
    try:
        header = json.loads(rest[:length])
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"unreadable header ({error})") from error
    if not isinstance(header, dict) or header.get("format") != FORMAT_VERSION:
        raise ValueError("another format version")
    if header.get("key") != key:
        raise ValueError("the entry is for another key")
    metadata = header.get("metadata")
    if not isinstance(metadata, dict):
        raise ValueError("no metadata")
    return Entry(key, metadata, _objects(rest[length:], header.get("objects")))


def _objects(code: bytes, sizes: object) -> list[bytes]:
    """`code` cut into objects of `sizes` (from the header), which must cover it."""
    if (
        not isinstance(sizes, list)
        or not sizes
        or not all(isinstance(size, int) and size > 0 for size in sizes)
        or sum(sizes) != len(code)
    ):
        raise ValueError("the object sizes do not match the object code")
    starts = [sum(sizes[:k]) for k in range(len(sizes))]
    return [code[start : start + size] for start, size in zip(starts, sizes, strict=True)]


def load(root: Path, key: str) -> Entry | None:
    """The entry of `key` in the cache at `root`, or None (a miss). An unusable
    entry is warned about, deleted and missed. A hit marks the entry as used."""
    path = entry_path(root, key)
    try:
        data = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        stats["misses"] += 1
        return None
    except OSError as error:
        warnings.warn(f"tidu compilation cache: cannot read {path}: {error}", CacheWarning, 2)
        stats["misses"] += 1
        return None
    try:
        entry = _decode(data, key)
    except ValueError as error:
        discard(path, str(error))
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # least recently used = oldest mtime
    stats["hits"] += 1
    return entry


def discard(path: Path, reason: str) -> None:
    """Warn that the entry at `path` is unusable and delete it (a miss)."""
    warnings.warn(
        f"tidu compilation cache: ignoring and deleting the corrupted entry {path}: {reason}; "
        "the function is recompiled",
        CacheWarning,
        stacklevel=3,
    )
    stats["corrupt"] += 1
    stats["misses"] += 1
    with contextlib.suppress(OSError):
        path.unlink()


def store(root: Path, key: str, metadata: Mapping[str, Any], objects: Sequence[bytes]) -> bool:
    """Write the entry of `key` atomically, then evict down to the size bound.
    False (with a warning) when the directory cannot be written: never raises."""
    directory = entries_directory(root)
    temp: str | None = None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=directory, prefix=f".{key[:16]}.", suffix=_TEMP_SUFFIX)
        with os.fdopen(fd, "wb") as file:
            file.write(_encode(key, metadata, objects))
        os.replace(temp, entry_path(root, key))
        temp = None
    except OSError as error:
        warnings.warn(
            f"tidu compilation cache: cannot write to {directory}: {error}", CacheWarning, 2
        )
        return False
    finally:
        if temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(temp)
    stats["stores"] += 1
    evict(root, get_max_bytes())
    return True


def evict(root: Path, max_bytes: int) -> int:
    """Delete least recently used entries while the total exceeds `max_bytes`, and
    stale temporary files; the number of entries deleted."""
    entries: list[tuple[float, int, str]] = []
    now = time.time()
    try:
        with os.scandir(entries_directory(root)) as scan:
            for item in scan:
                try:
                    info = item.stat()
                except OSError:
                    continue  # deleted meanwhile
                if item.name.endswith(ENTRY_SUFFIX):
                    entries.append((info.st_mtime, info.st_size, item.path))
                elif item.name.endswith(_TEMP_SUFFIX) and now - info.st_mtime > STALE_TEMP_SECONDS:
                    with contextlib.suppress(OSError):
                        os.unlink(item.path)
    except OSError:
        return 0
    total = sum(size for _, size, _ in entries)
    deleted = 0
    for _, size, path in sorted(entries):
        if total <= max_bytes:
            break
        with contextlib.suppress(OSError):
            os.unlink(path)
            deleted += 1
        total -= size
    stats["evictions"] += deleted
    return deleted


def clear(root: Path | None = None) -> None:
    """Delete every entry of the cache at `root` (default: the one in use)."""
    root = root if root is not None else get_cache_dir()
    if root is not None:
        evict(root, -1)


def total_bytes(root: Path | None = None) -> int:
    """The size of the entries of the cache at `root` (default: the one in use)."""
    root = root if root is not None else get_cache_dir()
    if root is None:
        return 0
    try:
        return sum(p.stat().st_size for p in entries_directory(root).glob(f"*{ENTRY_SUFFIX}"))
    except OSError:
        return 0
