"""Running `tidu-opt`/`tidu-run` on fuzzed inputs, judging the outcome, shrinking
failures and storing them as regression inputs.

The tools run in-process (`tidu_mlir.tools.opt.run`, `...run.run`), ~50x
faster than a process each; a `SIGALRM` timer bounds each run. Inputs that
could exhaust the machine's memory (tensors of a million elements or more) or
run native code the timer cannot interrupt (`tidu-run` of a loop compiled by
LLVM) run as a process instead, with a memory limit and a timeout.

The contract checked: exit 0, or exit 1 with an `error:` diagnostic
(`tidu-run: ...` for its command-line errors, argparse's usage error and exit
2 for a missing flag), never an exception escaping the tool, a printed
traceback, a crash or a hang. A `tidu-run` timeout on a program with a loop
(`prim.while`, `prim.scan`) is `long-running`, not a failure: a mutated
bound or condition makes a loop run (nearly) forever, as it would anywhere.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import random
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TypeVar

from tidu_mlir.tools import opt, run

from .corpus import Seed
from .mutators import Token, join, mutate_args, mutate_text, tokenize

TOOL_DIR = Path(sys.executable).parent
REGRESSION_DIR = Path(__file__).resolve().parent / "regressions"
INPUT_NAME = "input.mlir"
"""The name diagnostics show: inputs are written to `<scratch>/input.mlir`."""
T = TypeVar("T")
TRACEBACK = "Traceback (most recent call last)"
ENTRY_POINTS: dict[str, Callable[[Sequence[str]], int]] = {"tidu-opt": opt.run, "tidu-run": run.run}
LOOPS = (b"prim.while", b"prim.scan")
SHAPE = re.compile(rb"(?:tensor|memref)<((?:\d+x)+)")
LARGE = 10**6
"""Elements of a tensor type from which an input runs as a process."""
MEMORY_LIMIT = 6 << 30
"""The address space of such a process (bytes): MemoryError, not the OOM killer."""
STARTUP = 15.0
"""Seconds added to a process's timeout for the interpreter's start-up."""


@dataclass(frozen=True)
class Case:
    """A tool, its input file's bytes and its other arguments."""

    tool: str
    text: bytes
    args: tuple[str, ...]


@dataclass(frozen=True)
class Outcome:
    """How a run ended."""

    kind: str
    """`ok`, `diagnostic`, `usage`, `long-running` (a loop of the program), or a
    failure: `exception` (escaped the tool), `traceback` (printed), `bad-exit`,
    `no-diagnostic`, `timeout`, `crash`."""
    code: int | None
    message: str
    """The first line of stderr (paths as `input.mlir`), or the exception."""
    signature: str = ""
    """What identifies a failure's cause (kind, exception type, raising frame)."""
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.kind not in ("ok", "diagnostic", "usage", "long-running")

    @property
    def located(self) -> bool:
        """A diagnostic of the form `input.mlir:line:col: error: ...`."""
        return self.message.startswith(f"{INPUT_NAME}:") and ": error: " in self.message


class FuzzTimeout(BaseException):
    """Raised by the timer in the middle of a run (a BaseException: the tools'
    `except Exception` must not swallow it)."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise `FuzzTimeout` in the main thread after `seconds` (no limit elsewhere)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise FuzzTimeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def isolation_reason(case: Case) -> str | None:
    """Why `case` must run as a process (None: in-process is safe)."""
    for match in SHAPE.finditer(case.text):
        dims = match.group(1).split(b"x")[:-1]
        if any(len(d) > 6 for d in dims) or math.prod(int(d) for d in dims) >= LARGE:
            return "large tensors"
    native = case.tool == "tidu-run" and "interp" not in case.args
    if native and any(loop in case.text for loop in LOOPS):
        return "a loop in native code"
    return None


def run_case(case: Case, scratch: Path, timeout: float) -> Outcome:
    """Run `case` on `scratch/input.mlir` (in-process unless `isolation_reason`)
    and judge the outcome."""
    if isolation_reason(case) is not None:
        return run_subprocess(case, scratch, timeout + STARTUP)
    return run_in_process(case, scratch, timeout)


def _timed_out(case: Case, timeout: float) -> Outcome:
    message = f"no result after {timeout} s"
    if case.tool == "tidu-run" and any(loop in case.text for loop in LOOPS):
        return Outcome("long-running", None, message, seconds=timeout)
    return Outcome("timeout", None, message, "timeout", timeout)


def run_in_process(case: Case, scratch: Path, timeout: float) -> Outcome:
    """Run `case` in-process on `scratch/input.mlir` and judge the outcome."""
    path = scratch / INPUT_NAME
    path.write_bytes(case.text)
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    try:
        with time_limit(timeout), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code: int | None = ENTRY_POINTS[case.tool]([str(path), *case.args])
    except FuzzTimeout:
        return _timed_out(case, timeout)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # noqa: BLE001 - every escape is a finding
        seconds = time.perf_counter() - start
        return Outcome("exception", None, _exception_line(error), _signature(error), seconds)
    seconds = time.perf_counter() - start
    stderr = err.getvalue().replace(str(path), INPUT_NAME)
    return judge(case.tool, code, stderr, out.getvalue(), seconds)


def judge(tool: str, code: int | None, stderr: str, stdout: str, seconds: float) -> Outcome:
    """Classify an exit code and output by the diagnostics contract."""
    first = next((line for line in stderr.splitlines() if line.strip()), "")
    if TRACEBACK in stderr or TRACEBACK in stdout:
        last = stderr.strip().splitlines()[-1] if stderr.strip() else stdout.strip()
        return Outcome("traceback", code, first, f"traceback: {last[:200]}", seconds)
    if code == 0:
        return Outcome("ok", 0, first, seconds=seconds)
    if code == 1 and ("error:" in stderr or stderr.startswith(f"{tool}: ")):
        return Outcome("diagnostic", 1, first, seconds=seconds)
    if code == 2 and stderr.startswith("usage:"):
        return Outcome("usage", 2, stderr.strip().splitlines()[-1], seconds=seconds)
    kind = "bad-exit" if code not in (0, 1) else "no-diagnostic"
    return Outcome(kind, code, first, f"{kind}: exit {code}: {first[:120]}", seconds)


def _exception_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {str(error)[:300]}"


def _signature(error: BaseException) -> str:
    """The exception type and the function that raised it (the innermost
    frame in tidu_mlir or xdsl), stable under shrinking of the input."""
    if isinstance(error, RecursionError):
        return "exception: RecursionError"  # where the limit strikes varies with the depth
    frames = traceback.extract_tb(error.__traceback__)
    ours = [f for f in frames if "tidu_mlir" in f.filename or "xdsl" in f.filename] or frames
    where = f"{Path(ours[-1].filename).name}:{ours[-1].name}" if ours else "?"
    return f"exception: {type(error).__name__} in {where}"


def run_subprocess(case: Case, scratch: Path, timeout: float) -> Outcome:
    """Run `case` with the installed executable, its memory limited (crash and
    hang check)."""
    path = scratch / INPUT_NAME
    path.write_bytes(case.text)
    # The limit is set by a shell, not a `preexec_fn`: that would fork the
    # (multithreaded, once JAX is loaded) test process instead of spawning.
    limit = f'ulimit -v {MEMORY_LIMIT >> 10} && exec "$@"'
    command = ["/bin/sh", "-c", limit, "sh", str(TOOL_DIR / case.tool), INPUT_NAME, *case.args]
    start = time.perf_counter()
    try:
        result = subprocess.run(command, cwd=scratch, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return _timed_out(case, timeout)
    seconds = time.perf_counter() - start
    stderr = result.stderr.decode(errors="replace")
    if result.returncode < 0:
        signal_name = signal.Signals(-result.returncode).name
        return Outcome("crash", result.returncode, signal_name, f"crash: {signal_name}", seconds)
    return judge(
        case.tool, result.returncode, stderr, result.stdout.decode(errors="replace"), seconds
    )


# --------------------------------------------------------------------------
# Campaigns
# --------------------------------------------------------------------------


@dataclass
class Finding:
    """A failing case, shrunk, with the seed it came from."""

    case: Case
    outcome: Outcome
    origin: str


@dataclass
class Report:
    """What a campaign saw."""

    runs: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    findings: dict[str, Finding] = field(default_factory=dict)
    """One per failure signature."""
    unlocated: Counter[str] = field(default_factory=Counter)
    """First lines of `tidu-opt` input diagnostics without a `file:line:col`."""
    slowest: list[tuple[float, str]] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.kinds.items()))
        slow = max((s for s, _ in self.slowest), default=0.0)
        unlocated = sum(self.unlocated.values())
        return (
            f"{self.runs} runs in {self.seconds:.1f} s: {kinds}; slowest run {slow:.2f} s; "
            f"{unlocated} tidu-opt diagnostics about the input without file:line:col"
        )


def mutate_case(rng: random.Random, seed: Seed, donors: Sequence[bytes]) -> Case:
    """A mutation of `seed`: its text (mostly), its arguments (sometimes), or both."""
    text, args = seed.text, seed.args
    roll = rng.random()
    if roll < 0.85:
        text = mutate_text(rng, text, donors)
    if roll >= 0.75:
        args = mutate_args(rng, seed.tool, args)
    return Case(seed.tool, text, args)


def campaign(
    seeds: Sequence[Seed], count: int, rng_seed: int, scratch: Path, timeout: float,
    known: Collection[str] = (),
) -> Report:  # fmt: skip
    """Run `count` mutated inputs; failures are shrunk, one per signature (not
    those of `known` bugs, already kept)."""
    rng = random.Random(rng_seed)
    files: dict[str, list[Seed]] = {}
    for seed in seeds:
        files.setdefault(seed.name.partition("#")[0], []).append(seed)
    groups = [files[name] for name in sorted(files)]
    donors = [seed.text for seed in seeds]
    report = Report()
    start = time.perf_counter()
    for _ in range(count):
        seed = rng.choice(rng.choice(groups))
        case = mutate_case(rng, seed, donors)
        outcome = run_case(case, scratch, timeout)
        _record(report, case, outcome, seed.name)
        if outcome.failed and outcome.signature not in report.findings:
            small = (
                case if outcome.signature in known else shrink_case(case, outcome, scratch, timeout)
            )
            report.findings[outcome.signature] = Finding(small, outcome, seed.name)
    report.seconds = time.perf_counter() - start
    return report


def _record(report: Report, case: Case, outcome: Outcome, origin: str) -> None:
    report.runs += 1
    report.kinds[outcome.kind] += 1
    if _unlocated_input_diagnostic(case, outcome):
        report.unlocated[outcome.message[:100]] += 1
    report.slowest = sorted([*report.slowest, (outcome.seconds, origin)], reverse=True)[:5]


def _unlocated_input_diagnostic(case: Case, outcome: Outcome) -> bool:
    """A `tidu-opt` diagnostic about the input (not the pass pipeline) without
    `file:line:col`."""
    about_pipeline = outcome.message.startswith("tidu-opt: error:")
    tidu_opt_diagnostic = outcome.kind == "diagnostic" and case.tool == "tidu-opt"
    return tidu_opt_diagnostic and not about_pipeline and not outcome.located


# --------------------------------------------------------------------------
# Shrinking
# --------------------------------------------------------------------------


def shrink_case(case: Case, outcome: Outcome, scratch: Path, timeout: float,
                max_runs: int = 400) -> Case:  # fmt: skip
    """A smaller input failing with the same signature: chunks of lines, then
    single tokens, are dropped while the failure stays (greedy delta debugging)."""
    budget = [max_runs if outcome.kind != "timeout" else 20]

    def fails(text: bytes) -> bool:
        if budget[0] <= 0:
            return False
        budget[0] -= 1
        again = run_case(Case(case.tool, text, case.args), scratch, timeout)
        return again.signature == outcome.signature

    lines = case.text.splitlines(keepends=True)
    lines = _drop_chunks(lines, lambda kept: fails(b"".join(kept)))
    tokens = _merge_spaces(tokenize(b"".join(lines)))
    tokens = _drop_chunks(tokens, lambda kept: fails(join(kept)))
    return Case(case.tool, join(tokens), case.args)


def _drop_chunks(items: list[T], fails: Callable[[list[T]], bool]) -> list[T]:
    """Remove chunks of halving size (down to single items) while `fails` holds."""
    size = max(1, len(items) // 2)
    while True:
        index = 0
        while index < len(items):
            candidate = items[:index] + items[index + size :]
            if fails(candidate):
                items = candidate
            else:
                index += size
        if size == 1:
            return items
        size //= 2


def _merge_spaces(tokens: list[Token]) -> list[Token]:
    """Attach whitespace to the token before it, so dropping a token drops its blank."""
    merged: list[Token] = []
    for token in tokens:
        if token.kind == "space" and merged:
            merged[-1] = Token(merged[-1].kind, merged[-1].text + token.text)
        else:
            merged.append(token)
    return merged


# --------------------------------------------------------------------------
# Regression inputs
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Regression:
    """A stored finding: `NAME.mlir` (the input) and `NAME.json` (the rest).

    `expect` is the outcome the contract requires: `exit` 0 or 1 and, for
    1, the `prefix` stderr starts with (`input.mlir:2:3: error: `). `xfail`
    names a bug left for others (the test is `xfail(strict=True)`), and
    `signature` its failure's, which campaigns then report without failing."""

    name: str
    case: Case
    expect_exit: int
    expect_prefix: str
    bug: str
    xfail: str | None
    signature: str | None

    @staticmethod
    def load(path: Path) -> Regression:
        meta = json.loads(path.read_text())
        text = path.with_suffix(".mlir").read_bytes()
        case = Case(meta["tool"], text, tuple(meta["args"]))
        expect = meta["expect"]
        return Regression(
            path.stem, case, expect["exit"], expect.get("prefix", ""), meta["bug"],
            meta.get("xfail"), meta.get("signature"),
        )  # fmt: skip


def load_regressions(directory: Path = REGRESSION_DIR) -> list[Regression]:
    return [Regression.load(path) for path in sorted(directory.glob("*.json"))]


def save_finding(finding: Finding, directory: Path, name: str) -> Path:
    """Write a finding in the regression format (expectation to be filled in)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.mlir").write_bytes(finding.case.text)
    meta = {
        "tool": finding.case.tool,
        "args": list(finding.case.args),
        "expect": {"exit": 1, "prefix": f"{INPUT_NAME}:"},
        "bug": f"{finding.outcome.signature} (from {finding.origin}): {finding.outcome.message}",
        "xfail": None,
        "signature": finding.outcome.signature,
    }
    path = directory / f"{name}.json"
    path.write_text(json.dumps(meta, indent=2) + "\n")
    return path
