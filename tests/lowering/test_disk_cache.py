"""The persistent compilation cache (`disk_cache`) and `TIDU_LOG_COMPILES`.

Work is counted, not timed: `runtime.COUNTS["lowerings"]` (functions lowered and
compiled) and `["disk-hits"]`, `disk_cache.stats`, and the log lines.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tidu_mlir.dialects import prim
from tidu_mlir.lowering import disk_cache, parallel, runtime
from tidu_mlir.lowering.disk_cache import CacheWarning
from tidu_mlir.lowering.jit import Signature

from .oracle import build, tensor

REPO = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    sys.path.insert(0, {repo!r})
    from tidu_mlir.dialects import prim
    from tidu_mlir.lowering import disk_cache, runtime
    from tests.lowering.oracle import build, tensor

    t = tensor([16])
    f = build(
        [t, t],
        lambda x, y: [prim.ExpOp(prim.MulOp(x, y)), prim.ReduceSumOp(prim.SinOp(x), [0])],
        name="disk_cached",
    )
    x = np.linspace(-1.0, 1.0, 16)
    y = np.linspace(0.5, 2.0, 16)
    a, b = runtime.compile_function(f)(x, y)
    print(json.dumps({{
        "counts": dict(runtime.COUNTS),
        "stats": dict(disk_cache.stats),
        "a": a.tolist(),
        "b": float(b),
    }}))
    """
).format(repo=str(REPO))


def run_script(cache_dir: Path | str, log: bool = False) -> tuple[dict, str]:
    env = {**os.environ, "TIDU_CACHE_DIR": str(cache_dir)}
    env["TIDU_LOG_COMPILES"] = "1" if log else "0"
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1]), result.stderr


def entries(root: Path) -> list[Path]:
    return sorted(disk_cache.entries_directory(root).glob(f"*{disk_cache.ENTRY_SUFFIX}"))


@pytest.fixture
def cache_dir(tmp_path: Path):
    """A fresh cache directory for this test, and an empty in-process cache."""
    root = tmp_path / "cache"
    disk_cache.set_cache_dir(root)
    runtime.clear_cache()
    yield root
    disk_cache.reset_cache_dir()
    disk_cache.set_max_bytes(None)
    runtime.clear_cache()


def function(n: int = 12, name: str = "cached"):
    t = tensor([n])
    return build([t], lambda x: prim.ExpOp(prim.SinOp(x)), name=name)


def check(compiled: runtime.CompiledFunction, n: int = 12) -> None:
    x = np.linspace(-2.0, 2.0, n)
    np.testing.assert_allclose(compiled(x), np.exp(np.sin(x)), rtol=1e-12)


def compile_again(f) -> runtime.CompiledFunction:
    """Compile `f` in a 'new process': the in-process cache forgotten."""
    runtime.clear_cache()
    return runtime.compile_function(f)


# ----- (a) a second process loads instead of compiling -----------------------------


def test_second_process_hits_and_does_not_lower(tmp_path: Path) -> None:
    first, first_log = run_script(tmp_path, log=True)
    second, second_log = run_script(tmp_path, log=True)
    assert first["counts"] == {"lowerings": 1}
    assert first["stats"]["stores"] == 1 and "disk cache miss" in first_log
    assert second["counts"] == {"disk-hits": 1}  # no lowering, optimization or codegen
    assert second["stats"] == {"hits": 1}
    assert "(disk cache hit)" in second_log and "lower-to-loops" not in second_log
    assert first["a"] == second["a"] and first["b"] == second["b"]  # the same bits
    assert len(entries(tmp_path)) == 1


def test_hit_in_process_same_results_and_llvm_ir(cache_dir: Path) -> None:
    f = function(name="hit_in_process")
    compiled = runtime.compile_function(f)
    lowerings = runtime.COUNTS["lowerings"]
    loaded = compile_again(f)
    assert loaded is not compiled and runtime.COUNTS["lowerings"] == lowerings
    assert loaded.module.llvm_ir is None  # nothing was lowered...
    check(loaded)
    assert loaded.signature == compiled.signature
    assert loaded.llvm_ir == compiled.llvm_ir  # ...until the IR is asked for


def test_signature_json_round_trip() -> None:
    t, s = tensor([3, 4], np.float32), tensor([], np.complex128)
    f = build([t, s], lambda x, z: [prim.ExpOp(x), z], name="sig")
    signature = runtime.CompiledFunction(f).signature
    data = json.loads(json.dumps(signature.to_json()))
    assert Signature.from_json(data) == signature
    with pytest.raises(ValueError):
        Signature.from_json({**data, "inputs": [{"name": "x", "dtype": "object"}]})


# ----- (b) corrupted entries ----------------------------------------------------------


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: data[: len(data) // 2], id="truncated"),
        pytest.param(lambda data: data[:-40] + bytes(40), id="object-zeroed"),
        pytest.param(lambda data: data[:100] + b"x" + data[101:], id="header-byte"),
        pytest.param(lambda data: b"", id="empty"),
        pytest.param(lambda data: b"garbage" * 10, id="garbage"),
    ],
)
def test_corrupted_entry_is_reported_deleted_and_recompiled(cache_dir: Path, damage) -> None:
    f = function(name="corrupted")
    runtime.compile_function(f)
    [path] = entries(cache_dir)
    path.write_bytes(damage(path.read_bytes()))
    lowerings = runtime.COUNTS["lowerings"]
    with pytest.warns(CacheWarning, match=re.escape(path.name)):
        compiled = compile_again(f)
    assert runtime.COUNTS["lowerings"] == lowerings + 1  # compiled again
    check(compiled)
    [rewritten] = entries(cache_dir)  # a valid entry replaces the bad one
    assert disk_cache.load(cache_dir, rewritten.stem) is not None


def test_bad_metadata_with_a_valid_checksum_is_discarded(cache_dir: Path) -> None:
    f = function(name="bad_metadata")
    runtime.compile_function(f)
    [path] = entries(cache_dir)
    entry = disk_cache.load(cache_dir, path.stem)
    assert entry is not None
    metadata = {**entry.metadata, "signatures": {"bad_metadata": {"name": 3}}}
    disk_cache.store(cache_dir, path.stem, metadata, entry.objects)
    lowerings = runtime.COUNTS["lowerings"]
    with pytest.warns(CacheWarning, match="bad metadata"):
        check(compile_again(f))
    assert runtime.COUNTS["lowerings"] == lowerings + 1


@pytest.mark.parametrize("sizes", [[], [0], [1], [1, 10**9], ["1"], 5], ids=str)
def test_object_sizes_that_do_not_cover_the_code_are_discarded(cache_dir: Path, sizes) -> None:
    """The header's sizes of the objects (a module compiled in parts has
    several) must cut the code exactly; anything else is a corrupted entry."""
    f = function(name="bad_sizes")
    runtime.compile_function(f)
    [path] = entries(cache_dir)
    entry = disk_cache.load(cache_dir, path.stem)
    assert entry is not None and len(entry.objects) == 1
    header = json.dumps(
        {
            "format": disk_cache.FORMAT_VERSION,
            "key": path.stem,
            "objects": sizes,
            "metadata": entry.metadata,
        }
    ).encode()
    payload = b"%d\n" % len(header) + header + entry.objects[0]
    checksum = hashlib.sha256(payload).hexdigest().encode()
    path.write_bytes(disk_cache._MAGIC + checksum + b"\n" + payload)  # pyright: ignore[reportPrivateUsage]
    with pytest.warns(CacheWarning, match="object sizes"):
        check(compile_again(f))


def test_unwritable_directory_warns_and_still_compiles(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    disk_cache.set_cache_dir(blocker)
    runtime.clear_cache()
    try:
        with pytest.warns(CacheWarning, match="cannot write"):
            compiled = runtime.compile_function(function(name="unwritable"))
        check(compiled)
    finally:
        disk_cache.reset_cache_dir()
        runtime.clear_cache()


# ----- (c) concurrent writers ----------------------------------------------------------


def test_concurrent_processes_leave_one_valid_entry(tmp_path: Path) -> None:
    env = {**os.environ, "TIDU_CACHE_DIR": str(tmp_path), "TIDU_LOG_COMPILES": "0"}
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        for _ in range(4)
    ]
    outputs = []
    for process in processes:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err.decode()[-3000:]
        outputs.append(json.loads(out.decode().strip().splitlines()[-1]))
    assert all(o["a"] == outputs[0]["a"] and o["b"] == outputs[0]["b"] for o in outputs)
    [entry] = entries(tmp_path)
    assert list(disk_cache.entries_directory(tmp_path).iterdir()) == [entry]  # no temp files
    after, _ = run_script(tmp_path)
    assert after["counts"] == {"disk-hits": 1} and after["a"] == outputs[0]["a"]


def test_concurrent_threads_compile_and_load(cache_dir: Path) -> None:
    import threading

    fs = [function(n, name=f"thread{n}") for n in (5, 6, 7)]
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for f, n in zip(fs, (5, 6, 7), strict=True):
                check(runtime.compile_function(f), n)
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(entries(cache_dir)) == 3


# ----- (d) disabled ------------------------------------------------------------------


def test_empty_tidu_cache_dir_disables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("TIDU_CACHE_DIR")
    assert disk_cache.get_cache_dir() == tmp_path / "xdg" / "tidu-mlir"  # the default
    monkeypatch.setenv("TIDU_CACHE_DIR", "")
    assert disk_cache.get_cache_dir() is None
    runtime.clear_cache()
    stores = disk_cache.stats["stores"]
    check(runtime.compile_function(function(name="disabled")))
    assert disk_cache.stats["stores"] == stores
    assert not (tmp_path / "xdg").exists()
    runtime.clear_cache()


def test_set_cache_dir_overrides_the_environment(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TIDU_CACHE_DIR", str(tmp_path / "env"))
    try:
        disk_cache.set_cache_dir(tmp_path / "api")
        assert disk_cache.get_cache_dir() == tmp_path / "api"
        disk_cache.set_cache_dir(None)
        assert disk_cache.get_cache_dir() is None
    finally:
        disk_cache.reset_cache_dir()
    assert disk_cache.get_cache_dir() == tmp_path / "env"


# ----- (e) size bound ------------------------------------------------------------------


def test_size_bound_evicts_least_recently_used(tmp_path: Path) -> None:
    disk_cache.set_max_bytes(10**9)
    try:
        for i, key in enumerate("abcd"):
            disk_cache.store(tmp_path, key * 64, {"i": i}, [bytes(1000)])
            os.utime(disk_cache.entry_path(tmp_path, key * 64), (1000 + i, 1000 + i))
        size = disk_cache.entry_path(tmp_path, "a" * 64).stat().st_size
        assert disk_cache.load(tmp_path, "a" * 64) is not None  # a hit: "a" is now recent
        assert disk_cache.evict(tmp_path, 2 * size) == 2
    finally:
        disk_cache.set_max_bytes(None)
    assert [p.stem[0] for p in entries(tmp_path)] == ["a", "d"]


def test_size_bound_from_the_environment(cache_dir: Path, monkeypatch) -> None:
    runtime.compile_function(function(8, name="first"))
    [first] = entries(cache_dir)
    os.utime(first, (1000, 1000))
    monkeypatch.setenv("TIDU_CACHE_MAX_BYTES", str(first.stat().st_size + 100))
    assert disk_cache.get_max_bytes() == first.stat().st_size + 100
    runtime.compile_function(function(9, name="second"))
    [kept] = entries(cache_dir)
    assert kept != first and disk_cache.stats["evictions"] >= 1


# ----- (f) key components --------------------------------------------------------------


def test_other_key_components_miss(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = function(name="keyed")
    runtime.compile_function(f)
    lowerings = runtime.COUNTS["lowerings"]
    compile_again(f)
    assert runtime.COUNTS["lowerings"] == lowerings  # same key: a hit
    compile_again(function(13, name="keyed"))  # another function
    assert runtime.COUNTS["lowerings"] == lowerings + 1
    monkeypatch.setattr(disk_cache, "FORMAT_VERSION", disk_cache.FORMAT_VERSION + 1)
    compile_again(f)  # another format version
    assert runtime.COUNTS["lowerings"] == lowerings + 2
    monkeypatch.setattr(parallel, "PARALLEL_MIN_WORK", parallel.PARALLEL_MIN_WORK + 1)
    compile_again(f)  # another lowering option
    assert runtime.COUNTS["lowerings"] == lowerings + 3
    monkeypatch.setenv("TIDU_LLVM_TEXT", "0")
    compile_again(f)  # through the llvm dialect: other object code
    assert runtime.COUNTS["lowerings"] == lowerings + 4
    assert len(entries(cache_dir)) == 5


def test_key_covers_the_toolchain(monkeypatch: pytest.MonkeyPatch) -> None:
    options = runtime.lowering_options()
    key = disk_cache.entry_key("0" * 64, options)
    assert key == disk_cache.entry_key("0" * 64, dict(options))
    assert key != disk_cache.entry_key("1" * 64, options)
    assert key != disk_cache.entry_key("0" * 64, {**options, "opt-level": 2})
    environment = disk_cache.environment()
    assert {"tidu", "tidu-sources", "llvmlite", "llvm", "triple", "cpu", "features"} <= set(
        environment
    )
    monkeypatch.setattr(disk_cache, "environment", lambda: {**environment, "cpu": "other"})
    assert key != disk_cache.entry_key("0" * 64, options)


# ----- TIDU_LOG_COMPILES -------------------------------------------------------------------

STAGE = r"[a-z-]+ \d+\.\d{3} s"


def test_log_compiles_format(cache_dir: Path, monkeypatch, capsys) -> None:
    f = function(name="logged")
    monkeypatch.setenv("TIDU_LOG_COMPILES", "1")
    runtime.compile_function(f)
    compile_again(f)
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2
    miss = rf"^tidu: compile @logged: ({STAGE}, )+total \d+\.\d{{3}} s \(disk cache miss\)$"
    assert re.match(miss, lines[0]), lines[0]
    for stage in ("key", "lower-to-loops", "llvm-text", "llvm-opt", "codegen", "disk-store"):
        assert f" {stage} " in lines[0]
    hit = rf"^tidu: compile @logged: ({STAGE}, )+total \d+\.\d{{3}} s \(disk cache hit\)$"
    assert re.match(hit, lines[1]) and "disk-load" in lines[1] and "codegen" not in lines[1]
    monkeypatch.setenv("TIDU_CACHE_DIR", "")
    disk_cache.reset_cache_dir()
    compile_again(f)
    [uncached] = capsys.readouterr().err.strip().splitlines()
    assert re.match(rf"^tidu: compile @logged: ({STAGE}, )+total \d+\.\d{{3}} s$", uncached)


def test_no_log_without_the_variable(cache_dir: Path, monkeypatch, capsys) -> None:
    monkeypatch.delenv("TIDU_LOG_COMPILES", raising=False)
    runtime.compile_function(function(name="quiet"))
    monkeypatch.setenv("TIDU_LOG_COMPILES", "0")
    compile_again(function(name="quiet"))
    assert capsys.readouterr().err == ""
