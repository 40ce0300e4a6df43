"""`prim.check` in native code: a failed check raises `RuntimeError` with its
message (not `MemoryError`, the other failure of the same guard), the compiled
function stays usable, and the messages survive the disk cache (their table
is in the object code)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.ir import SSAValue

from tidu_mlir.dialects import prim
from tidu_mlir.lowering import disk_cache, runtime

from .oracle import build, tensor

SMALL = "the sum is not below 10"
POSITIVE = "an element is not positive"


def checked(name: str):
    """`exp(x)` checked twice: sum(x) < 10 and min(x) > 0 (a scalar operand too)."""

    def body(x: SSAValue) -> list[prim.PrimOp]:
        total = prim.ReduceSumOp(x, [0])
        small = prim.CompareOp("lt", total, prim.ConstantOp.from_value(np.float64(10.0)))
        lowest = prim.NegOp(prim.ReduceMaxOp(prim.NegOp(x), [0]))
        positive = prim.CompareOp("gt", lowest, prim.ConstantOp.from_value(np.float64(0.0)))
        first = prim.CheckOp(small, prim.ExpOp(x), SMALL)
        second = prim.CheckOp(positive, total, POSITIVE)
        return [prim.CheckOp(positive, first, POSITIVE), second]

    return build([tensor([4])], body, name=name)


def run_checks(compiled: runtime.CompiledFunction) -> None:
    good = np.array([0.5, 1.0, 1.5, 2.0])
    for _ in range(2):  # usable again after each failure
        values, total = compiled(good)
        np.testing.assert_allclose(values, np.exp(good), rtol=1e-14)
        assert float(total) == 5.0
        with pytest.raises(prim.CheckFailedError, match=f"^{SMALL}$"):
            compiled(good * 3.0)
        with pytest.raises(prim.CheckFailedError, match=f"^{POSITIVE}$"):
            compiled(good - 1.0)


def test_failed_check_raises_runtime_error_and_the_function_stays_usable() -> None:
    run_checks(runtime.compile_function(checked("check_native")))


def test_check_messages_survive_the_disk_cache(tmp_path: Path) -> None:
    disk_cache.set_cache_dir(tmp_path / "cache")
    runtime.clear_cache()
    try:
        f = checked("check_cached")
        run_checks(runtime.compile_function(f))
        runtime.clear_cache()
        lowerings = runtime.COUNTS["lowerings"]
        loaded = runtime.compile_function(f)
        assert runtime.COUNTS["lowerings"] == lowerings  # loaded from the disk cache
        assert loaded.module.llvm_ir is None
        run_checks(loaded)
    finally:
        disk_cache.reset_cache_dir()
        runtime.clear_cache()
