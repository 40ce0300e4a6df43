"""The benchmarks' progress bars (`bench/progress.py`): on stderr when asked,
never changing what the tables print on stdout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"

LOOP = """
import sys
from progress import progress
for i in progress(range(3), "demo-bench"):
    print(f"row {i}", end="" if i == 1 else "\\n")
    print(" done" if i == 1 else "", end="\\n" if i == 1 else "")
print("table end")
"""


def run_loop(setting: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TIDU_BENCH_PROGRESS": setting, "PYTHONPATH": str(BENCH)}
    return subprocess.run(
        [sys.executable, "-c", LOOP], capture_output=True, text=True, env=env, check=True
    )


EXPECTED = "row 0\nrow 1 done\nrow 2\ntable end\n"


def test_without_bars_stdout_is_the_table_and_stderr_is_empty() -> None:
    result = run_loop("0")
    assert result.stdout == EXPECTED
    assert result.stderr == ""


def test_a_bar_goes_to_stderr_and_leaves_stdout_unchanged() -> None:
    pytest.importorskip("tqdm", reason="tqdm (the 'bench' extra) draws the bars")
    result = run_loop("1")
    assert result.stdout == EXPECTED
    assert "demo-bench" in result.stderr
    assert "/3 [" in result.stderr  # the bar counts the three steps
