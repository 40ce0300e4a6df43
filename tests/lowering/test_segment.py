"""A large prim function is cut into segments (`segment`), each lowered to
loops and LLVM IR while LLVM compiles the ones before it, linked with the
entry that calls them (`CompiledModule.of_modules`).

Counted, not timed: the segments and what crosses between them; the numbers,
gradients and failed checks against the function compiled whole."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.parser import Parser

import tidu_mlir as td
import tidu_mlir.numpy as tnp
from tidu_mlir import config
from tidu_mlir.dialects import prim
from tidu_mlir.lowering import disk_cache, jit, runtime, segment
from tidu_mlir.lowering.bufferize import NUM_OUTPUTS_ATTR
from tidu_mlir.lowering.segment import Segments, segment_function
from tidu_mlir.registry import make_context

from .oracle import build, tensor
from .test_llvm_text import PROGRAMS
from .test_llvm_threads import chain_steps

POSITIVE = "an element is not positive"
SMALL = "the sum is not below 1e6"


def checked_at_both_ends(steps: int, name: str) -> func.FuncOp:
    """A check of the input first, `steps` steps of `chain_steps`, then a
    check of the result: cut small, the checks are in the first and the last
    segment (their failure codes are numbered across modules)."""

    def body(x: SSAValue) -> list[Operation | SSAValue]:
        zero = prim.ConstantOp.from_value(np.float64(0.0))
        lowest = prim.NegOp(prim.ReduceMaxOp(prim.NegOp(x), [0]))
        checked = prim.CheckOp(prim.CompareOp("gt", lowest, zero), x, POSITIVE)
        y = chain_steps(checked.result, steps)
        total = prim.ReduceSumOp(y, [0])
        small = prim.CompareOp("lt", total, prim.ConstantOp.from_value(np.float64(1e6)))
        return [prim.CheckOp(small, y, SMALL), total, y]

    return build([tensor([16])], body, name=name)


@pytest.fixture
def two_threads() -> Iterator[None]:
    config.update("compile_threads", 2)
    runtime.clear_cache()
    yield
    config.reset("compile_threads")
    runtime.clear_cache()


@dataclass
class Cut:
    """A function cut: its number of segments and the types crossing the cuts."""

    segments: int
    crossing: list[Attribute]


@pytest.fixture
def cuts(monkeypatch: pytest.MonkeyPatch) -> list[Cut]:
    """Segments of about 2 ops; the cuts made, recorded."""
    made: list[Cut] = []

    def recorded(function: func.FuncOp, _size: int) -> Segments | None:
        result = segment_function(function, 2)
        if result is not None:
            made.append(Cut(len(result.modules), _signature_types(result)))
        return result

    monkeypatch.setattr(segment, "segment_function", recorded)
    return made


def _signature_types(segments: Segments) -> list[Attribute]:
    return [
        t
        for module in segments.modules
        for f in module.ops
        if isinstance(f, func.FuncOp)
        for t in (*f.function_type.inputs.data, *f.function_type.outputs.data)
    ]


def _static(types: list[Attribute]) -> bool:
    return all(isinstance(t, TensorType) and all(d >= 0 for d in t.get_shape()) for t in types)


def test_a_function_is_cut_into_verified_modules_called_by_its_entry() -> None:
    function = checked_at_both_ends(20, "cut")
    prims = sum(1 for op in function.walk() if isinstance(op, prim.PrimOp))
    segments = segment_function(function, 30)
    assert segments is not None
    assert len(segments.modules) >= 4
    moved = 0
    for module in segments.modules:  # each module stands alone (no value from elsewhere)
        module.verify()
        (seg,) = module.ops
        assert isinstance(seg, func.FuncOp) and seg.sym_visibility is None
        moved += sum(
            1
            for op in seg.walk()
            if isinstance(op, prim.PrimOp | prim.CheckOp) and not isinstance(op, prim.ConstantOp)
        )
    constants = sum(
        1 for op in checked_at_both_ends(20, "c").walk() if isinstance(op, prim.ConstantOp)
    )
    assert moved == prims - constants  # every op moved once; only constants are copied
    entry, *declared = segments.entry.ops
    assert isinstance(entry, func.FuncOp) and entry.sym_name.data == "cut"
    assert entry.attributes[NUM_OUTPUTS_ATTR].value.data == 3  # pyright: ignore
    calls = [op.callee.root_reference.data for op in entry.walk() if isinstance(op, func.CallOp)]
    assert calls == [f"cut__seg{k}" for k in range(len(segments.modules))]
    assert {f.sym_name.data for f in declared if isinstance(f, func.FuncOp)} == set(calls)
    assert not any(isinstance(op, prim.PrimOp) for op in entry.walk())
    allocs = [op for op in entry.walk() if isinstance(op, memref.AllocOp | memref.AllocaOp)]
    crossing = sum(
        len(f.function_type.outputs.data)
        for m in segments.modules[:-1]
        for f in m.ops
        if isinstance(f, func.FuncOp)
    )
    assert allocs and crossing >= len(segments.modules) - 1
    assert _static(_signature_types(segments))


def test_a_function_of_at_most_two_segments_is_not_cut() -> None:
    function = checked_at_both_ends(20, "small")
    body = sum(1 for _ in function.body.walk()) - 1  # (not the return)
    assert segment_function(function, body // 2) is None
    assert segment_function(function, body // 2 - 1) is not None


def test_cut_functions_compile_to_the_same_numbers_and_failed_checks(
    tmp_path: Path, two_threads: None, cuts: list[Cut]
) -> None:
    """Compiled in segments (each a module of its own), stored on disk as
    several objects and loaded back: the numbers of the function compiled
    whole, and each failed check's own message although the two checks are
    in different modules."""
    good = np.linspace(0.1, 0.4, 16)
    config.update("compile_threads", 1)  # one thread: never cut
    whole = runtime.compile_function(checked_at_both_ends(30, "whole"))
    assert not cuts
    config.update("compile_threads", 2)
    disk_cache.set_cache_dir(tmp_path)
    try:
        runtime.clear_cache()
        cut = runtime.compile_function(checked_at_both_ends(30, "segmented"))
        (made,) = cuts
        assert cut.module.llvm_ir is not None
        assert cut.module.llvm_ir.count('target triple = "') == made.segments + 1
        runtime.clear_cache()
        hits = runtime.COUNTS["disk-hits"]
        loaded = runtime.compile_function(checked_at_both_ends(30, "segmented"))
        assert runtime.COUNTS["disk-hits"] == hits + 1
    finally:
        disk_cache.reset_cache_dir()
    for compiled in (cut, loaded):
        for got, want in zip(compiled(good), whole(good), strict=True):
            np.testing.assert_array_equal(got, want)
        with pytest.raises(prim.CheckFailedError, match=f"^{POSITIVE}$"):
            compiled(good - 1.0)
        with pytest.raises(prim.CheckFailedError, match=f"^{SMALL}$"):
            compiled(good * 1000.0)


DIFFERENTIATED = ("elementwise math", "fori_loop", "while_loop", "cond", "scan")


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_programs_cut_small_give_the_numbers_and_gradients_of_the_whole(
    name: str, two_threads: None, cuts: list[Cut], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every program of the llvm_text tests (loops, while loops with their
    recorded tapes under `grad`, conds, scans, kernels, LAPACK, complex
    numbers, integers) cut every 2 ops: the values (and gradients) of the
    program compiled whole, and no value of a dynamic shape crosses a cut."""
    fallbacks: list[object] = []
    monkeypatch.setattr(jit, "lower_to_llvm_dialect", fallbacks.append)
    fn, args = PROGRAMS[name]
    transforms: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [td.jit]
    if name in DIFFERENTIATED:
        transforms.append(lambda f: td.jit(td.grad(lambda *a: tnp.sum(f(*a)))))
    made = 0
    for transform in transforms:
        runtime.clear_cache()
        got = transform(fn)(*args)
        made += len(cuts)
        assert all(_static(cut.crossing) for cut in cuts)
        cuts.clear()
        config.update("compile_threads", 1)
        runtime.clear_cache()
        whole = transform(fn)(*args)
        config.update("compile_threads", 2)
        assert not cuts
        np.testing.assert_allclose(np.asarray(got), np.asarray(whole), rtol=1e-13, atol=1e-13)
    assert made, "the program or its gradient was cut"
    assert not fallbacks, "every module's LLVM IR was written directly (`llvm_text`)"


def test_the_entry_module_prints_and_parses_back() -> None:
    """The entry is ordinary loop-level IR (inspectable, re-readable)."""
    segments = segment_function(checked_at_both_ends(20, "printed"), 30)
    assert segments is not None
    text = str(segments.entry)
    parsed = Parser(make_context(), text).parse_module()
    parsed.verify()
    assert str(parsed) == text


def test_segment_ops_sets_the_size_and_zero_never_cuts(
    two_threads: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes: list[int] = []

    def recorded(function: func.FuncOp, size: int) -> Segments | None:
        sizes.append(size)
        return segment_function(function, size)

    monkeypatch.setattr(segment, "segment_function", recorded)
    good = np.linspace(0.1, 0.4, 16)
    try:
        config.update("segment_ops", 0)
        whole = runtime.compile_function(checked_at_both_ends(30, "never"))
        assert sizes == []
        config.update("segment_ops", 40)
        cut = runtime.compile_function(checked_at_both_ends(30, "forty"))
        assert sizes == [40]
        assert cut.module.llvm_ir is not None and whole.module.llvm_ir is not None
        assert whole.module.llvm_ir.count("define") < cut.module.llvm_ir.count("define")
    finally:
        config.reset("segment_ops")
    for got, want in zip(cut(good), whole(good), strict=True):
        np.testing.assert_array_equal(got, want)
