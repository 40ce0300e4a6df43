"""Seeds for the IR mutation fuzzer: the lit inputs under `tests/filecheck`,
each with the tool invocations of its RUN lines.

A RUN line such as `tidu-opt %s -p 'linearize{graph=@f wrt=x}' | filecheck %s`
gives the seed (file text, `tidu-opt`, `-p linearize{graph=@f wrt=x}`). Files
run with `--split-input-file` give one seed per chunk as well (smaller inputs
make mutations land on what each chunk tests). A `tidu-run %t` after
`tidu-opt %s ... -o %t` gets the module that `tidu-opt` writes as its input,
produced in-process when the corpus is built. So is the output of each
`tidu-opt` call that lowers below `prim` (`LOWERING_PASSES`): a seed of its
own, read back by `tidu-opt` alone (loops, `cf` and `llvm` dialect IR).
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tidu_mlir.tools import opt

FILECHECK_DIR = Path(__file__).resolve().parents[1] / "filecheck"
TOOLS = ("tidu-opt", "tidu-run")
SPLIT_MARKER = re.compile(r"^// -----\s*$", re.MULTILINE)

# Flags that change nothing the fuzzer checks, or write files, or are global:
# `--disable-verify` patches xDSL's Attribute class for the whole process.
_DROPPED_FLAGS = {"--disable-verify", "--shrink"}

LOWERING_PASSES = ("convert-prim-to-loops", "lower-to-llvm")
"""Passes whose output (scf, memref, cf, llvm dialects) the corpus reads back."""


@dataclass(frozen=True)
class Seed:
    """One input to mutate and the command line to run it with."""

    name: str
    """`dir/file.mlir` (and `#chunk` for a chunk of a split file)."""
    tool: str
    """`tidu-opt` or `tidu-run`."""
    text: bytes
    args: tuple[str, ...]
    """The arguments after the input file name."""


def lit_files() -> list[Path]:
    """The lit inputs, in a stable order (the fuzzer's seed makes runs repeatable)."""
    files = (p for p in FILECHECK_DIR.rglob("*.mlir") if "Output" not in p.parts)
    return sorted(files, key=lambda p: p.relative_to(FILECHECK_DIR).as_posix())


def run_lines(text: str) -> list[str]:
    """The RUN commands of a lit file (continuation lines joined)."""
    commands: list[str] = []
    pending = ""
    for line in text.splitlines():
        match = re.match(r"^\s*//\s*RUN:\s?(.*)$", line)
        if match is None:
            continue
        pending += match.group(1)
        if pending.endswith("\\"):
            pending = pending[:-1]
            continue
        commands.append(pending.strip())
        pending = ""
    return commands


@dataclass(frozen=True)
class Invocation:
    """One tool call of a RUN line: the tool, its input (`%s`, `%t...`) and arguments."""

    tool: str
    input: str
    args: tuple[str, ...]
    output: str | None
    """The `-o` file of a `tidu-opt` call."""


def invocations(command: str) -> list[Invocation]:
    """The `tidu-opt`/`tidu-run` calls of a RUN command (pipes and `&&` split)."""
    found: list[Invocation] = []
    for segment in re.split(r"\|\||&&|\|", command):
        try:
            words = shlex.split(segment)
        except ValueError:
            continue
        words = [w for w in words if not re.match(r"^\d?>", w) and w != "not"]
        if not words or words[0] not in TOOLS or len(words) < 2:
            continue
        found.append(_invocation(words))
    return found


def _invocation(words: list[str]) -> Invocation:
    tool, rest = words[0], words[1:]
    source = next((w for w in rest if w.startswith("%")), "")
    args: list[str] = []
    output: str | None = None
    skip = False
    for index, word in enumerate(rest):
        if skip:
            skip = False
        elif word == "-o":
            output = rest[index + 1] if index + 1 < len(rest) else None
            skip = True
        elif word != source and word not in _DROPPED_FLAGS:
            args.append(word)
    return Invocation(tool, source, tuple(args), output)


def seeds_of(path: Path) -> list[Seed]:
    """The seeds of one lit file (duplicates of the same command removed)."""
    text = path.read_text()
    name = path.relative_to(FILECHECK_DIR).as_posix()
    seeds: dict[tuple[str, tuple[str, ...], bytes], Seed] = {}
    outputs: dict[str, bytes] = {}
    for command in run_lines(text):
        for call in invocations(command):
            if call.input == "%s":
                source = text.encode()
            elif call.input in outputs:
                source = outputs[call.input]
            else:
                continue  # the input of a call the corpus cannot run (a pipe)
            if call.tool == "tidu-opt" and call.output is not None:
                outputs[call.output] = _opt_output(source, call.args)
                continue
            for seed in _with_chunks(name, call.tool, source, call.args):
                seeds.setdefault((seed.tool, seed.args, seed.text), seed)
            if _lowers(call) and (lowered := _opt_output(source, call.args)):
                seed = Seed(f"{name}>{len(seeds)}", "tidu-opt", lowered, ())
                seeds.setdefault((seed.tool, seed.args, seed.text), seed)
    return list(seeds.values())


def _lowers(call: Invocation) -> bool:
    """Whether `call` prints a module lowered below `prim` (MLIR, not LLVM IR)."""
    pipeline = " ".join(call.args)
    return (
        call.tool == "tidu-opt"
        and "-t" not in call.args
        and any(name in pipeline for name in LOWERING_PASSES)
    )


def _with_chunks(name: str, tool: str, text: bytes, args: tuple[str, ...]) -> list[Seed]:
    """The seed itself, and for `--split-input-file` one seed per chunk."""
    whole = Seed(name, tool, text, args)
    if "--split-input-file" not in args:
        return [whole]
    plain = tuple(a for a in args if a not in ("--split-input-file", "--verify-diagnostics"))
    chunks = SPLIT_MARKER.split(text.decode())
    return [whole] + [
        Seed(f"{name}#{i}", tool, chunk.encode(), plain) for i, chunk in enumerate(chunks)
    ]


def _opt_output(source: bytes, args: tuple[str, ...]) -> bytes:
    """What `tidu-opt` writes for `source` (empty if it fails)."""
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "input.mlir"
        path.write_bytes(source)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = opt.run([str(path), *args])
    return out.getvalue().encode() if code == 0 else b""


def all_seeds() -> list[Seed]:
    """Every seed of every lit file; `tidu-opt --help-passes` lines have no input."""
    return [seed for path in lit_files() for seed in seeds_of(path)]
