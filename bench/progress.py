"""Progress bars for the benchmarks' outer loops (workloads, sizes, steps).

    for name, run in progress(cases, "bench_api"):
        print(run())

The bar is tqdm's, on stderr, shown when tqdm is installed (`pip install -e
'.[bench]'`) and stderr is a terminal, or always with `TIDU_BENCH_PROGRESS=1`
(`0`: never). Otherwise `progress` returns the iterable unchanged, so the
benchmarks run as before without tqdm. While a bar is shown, each complete
line printed to stdout is written with the bar cleared first and redrawn
after: rows and bar never share a terminal line, and stdout gets exactly the
text it gets without a bar (a table redirected to a file is unchanged). The
bar is cleared when the loop ends (`leave=False`).

tqdm is imported with this module, so a benchmark that measures memory
counts the import in its baseline rather than in its first reading.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Iterable, Iterator
from types import ModuleType
from typing import Any, Protocol, TextIO, TypeVar, cast

T = TypeVar("T")

ENV = "TIDU_BENCH_PROGRESS"
"""`1`: always show bars (tqdm permitting), `0`: never; unset: when stderr is a terminal."""

_TQDM: ModuleType | None = (
    importlib.import_module("tqdm") if importlib.util.find_spec("tqdm") else None
)


def progress(iterable: Iterable[T], desc: str, total: int | None = None) -> Iterable[T]:
    """`iterable` with a progress bar named `desc` when bars are on, else
    `iterable` itself. `total` for an iterable without a length."""
    if _TQDM is None or not _wanted():
        return iterable
    return _with_bar(iterable, desc, total)


def _wanted() -> bool:
    forced = os.environ.get(ENV, "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    return sys.stderr.isatty()


def _with_bar(iterable: Iterable[T], desc: str, total: int | None) -> Iterator[T]:
    assert _TQDM is not None
    stdout = sys.stdout
    bar = _TQDM.tqdm(
        iterable, desc=desc, total=total, file=sys.stderr, leave=False, dynamic_ncols=True
    )
    with bar:
        rows = _LinesAboveBar(stdout, bar)
        sys.stdout = cast(TextIO, rows)
        try:
            yield from bar
        finally:
            rows.finish()
            sys.stdout = stdout


class _Bar(Protocol):
    def clear(self) -> None: ...

    def refresh(self) -> None: ...


class _LinesAboveBar:
    """stdout while a bar is shown: complete lines are written with the bar
    cleared before and redrawn after; an unfinished line waits for its end."""

    def __init__(self, stream: TextIO, bar: _Bar) -> None:
        self.stream, self.bar, self.pending = stream, bar, ""

    def write(self, text: str) -> int:
        lines, newline, self.pending = (self.pending + text).rpartition("\n")
        if newline:
            self.bar.clear()
            self.stream.write(lines + newline)
            self.stream.flush()
            self.bar.refresh()
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def finish(self) -> None:
        """Write what is left of an unfinished line."""
        if self.pending:
            self.stream.write(self.pending)
            self.pending = ""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)
