"""~1 MB inputs: `tidu-opt` accepts a valid one and `tidu-run`/`tidu-opt`
report malformed ones as `input.mlir:LINE:COL: error: ...` with exit 1, as
processes that finish within a generous bound (no wall-clock assertion: the
times against the 1 s target are `bench/bench_parse.py`'s).

Inputs whose error is found only after parsing all of 1 MB of ops (an
undefined value on the last op), some of lines no two alike, are here; the
others are the benchmark's.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from .large_inputs import (
    LargeInput,
    deep_brackets,
    error_after_call_intrinsics,
    error_after_distinct_attribute_dictionaries,
    error_after_distinct_comments,
    error_after_distinct_constants,
    error_after_distinct_dense_lists,
    error_after_each_prim_op,
    error_after_fragments,
    error_after_function_declarations,
    error_after_functions,
    error_after_gathers_to_distinct_shapes,
    error_after_generic_slices,
    error_after_getelementptrs,
    error_after_hexadecimal_splats,
    error_after_input_keys,
    error_after_llvm_constants,
    error_after_llvm_loops,
    error_after_located_ops,
    error_after_loop_nests,
    error_after_modules,
    error_after_ops_with_attributes,
    error_after_pads_to_distinct_shapes,
    error_after_roles,
    error_at_the_end,
    garbage_line,
    long_integer,
    unterminated_string,
    valid_dense,
)

TOOL_DIR = Path(sys.executable).parent
BOUND = 60.0
"""Seconds: a hang (exponential backtracking, a quadratic pass) fails, a busy machine does not."""
ARGS = {"tidu-opt": [], "tidu-run": ["--entry", "@f", "--backend", "interp"]}


def error_after_scans() -> LargeInput:
    """Ops with a region, each line of their own (`error_after_each_prim_op`)."""
    return error_after_each_prim_op("prim.scan")[0]


def error_after_lus() -> LargeInput:
    """Ops of three results, each line of their own."""
    return error_after_each_prim_op("prim.lu")[0]


@pytest.mark.parametrize(
    ("tool", "generator"),
    [
        ("tidu-opt", valid_dense),
        ("tidu-opt", unterminated_string),
        ("tidu-run", deep_brackets),
        ("tidu-run", long_integer),
        ("tidu-opt", garbage_line),
        ("tidu-opt", error_at_the_end),
        ("tidu-run", error_after_ops_with_attributes),
        ("tidu-opt", error_after_distinct_constants),
        ("tidu-run", error_after_distinct_dense_lists),
        ("tidu-opt", error_after_located_ops),
        ("tidu-run", error_after_generic_slices),
        ("tidu-run", error_after_pads_to_distinct_shapes),
        ("tidu-opt", error_after_distinct_attribute_dictionaries),
        ("tidu-run", error_after_distinct_comments),
        ("tidu-opt", error_after_gathers_to_distinct_shapes),
        ("tidu-run", error_after_scans),
        ("tidu-opt", error_after_lus),
        ("tidu-opt", error_after_functions),
        ("tidu-run", error_after_function_declarations),
        ("tidu-run", error_after_fragments),
        ("tidu-opt", error_after_input_keys),
        ("tidu-run", error_after_roles),
        ("tidu-opt", error_after_llvm_loops),
        ("tidu-run", error_after_llvm_constants),
        ("tidu-opt", error_after_getelementptrs),
        ("tidu-run", error_after_call_intrinsics),
        ("tidu-opt", error_after_hexadecimal_splats),
        ("tidu-run", error_after_modules),
        ("tidu-run", error_after_loop_nests),
    ],
    ids=lambda value: value if isinstance(value, str) else value.__name__,
)
def test_one_megabyte_input(tool: str, generator: Callable[[], LargeInput], tmp_path: Path) -> None:
    large = generator()
    (tmp_path / "input.mlir").write_text(large.text)
    result = subprocess.run(
        [str(TOOL_DIR / tool), "input.mlir", *ARGS[tool]],
        cwd=tmp_path, capture_output=True, text=True, timeout=BOUND,
    )  # fmt: skip
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    if large.valid:
        assert result.returncode == 0, result.stderr[:2000]
        return
    assert result.returncode == 1
    first = result.stderr.splitlines()[0]
    assert re.match(rf"input\.mlir:{large.error_line}:\d+: error: ", first), first[:300]
