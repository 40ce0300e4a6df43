"""IR mutation fuzzing: the lit inputs under tests/filecheck, mutated (tokens
deleted, repeated, swapped; numbers made huge; types and shapes changed;
brackets unbalanced or nested thousands deep; bytes flipped; truncation; pass
pipelines and `tidu-run` arguments changed), must make `tidu-opt` and
`tidu-run` end with success or a diagnostic, never a traceback or a hang.

CI runs `CI_INPUTS` inputs from the fixed seed `CI_SEED` in-process;
`--fuzz-budget N --fuzz-seed S` runs a longer campaign (docs/fuzzing.md).
Failures are shrunk and written in the regression format to a temporary
directory named in the failure message; the ones kept live in
`tests/fuzz/regressions/` and are replayed by `test_regression`.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from .corpus import FILECHECK_DIR, Seed, all_seeds, lit_files
from .driver import (
    INPUT_NAME,
    REGRESSION_DIR,
    Finding,
    Regression,
    Report,
    campaign,
    load_regressions,
    mutate_case,
    run_case,
    run_subprocess,
    save_finding,
)

CI_INPUTS = 150
CI_SEED = 16
TIMEOUT = 10.0
"""Seconds per input: runs take ~0.03 s, inputs are at most a few kB."""
SUBPROCESS_SAMPLE = 4
REGRESSIONS = load_regressions()


@pytest.fixture(scope="module")
def seeds() -> list[Seed]:
    return all_seeds()


def test_corpus_covers_the_lit_inputs(seeds: list[Seed]) -> None:
    """Every lit input with a `tidu-opt %s`/`tidu-run %s` RUN line is a seed."""
    named = {seed.name.partition("#")[0] for seed in seeds}
    runnable = {
        path.relative_to(FILECHECK_DIR).as_posix()
        for path in lit_files()
        if "tidu-opt %s" in path.read_text() or "tidu-run %s" in path.read_text()
    }
    assert runnable - named == set()
    assert {seed.tool for seed in seeds} == {"tidu-opt", "tidu-run"}


def test_mutated_inputs_end_in_success_or_a_diagnostic(
    seeds: list[Seed], tmp_path: Path, fuzz_budget: Callable[[int], int], fuzz_seed: int | None
) -> None:
    """Exit 0, or exit 1 with `error:`; no exception escapes, nothing hangs."""
    known = {r.signature for r in REGRESSIONS if r.xfail and r.signature}
    report = campaign(seeds, fuzz_budget(CI_INPUTS), _seed(fuzz_seed), tmp_path, TIMEOUT, known)
    print(report.summary())
    for signature in known & report.findings.keys():
        print(f"known bug (an xfail regression): {report.findings.pop(signature).outcome}")
    if report.findings:
        pytest.fail(_describe(report, tmp_path / "findings"), pytrace=False)


def _seed(fuzz_seed: int | None) -> int:
    return CI_SEED if fuzz_seed is None else fuzz_seed


def _describe(report: Report, directory: Path) -> str:
    """The findings, each saved in the regression format under `directory`."""
    parts = [f"{len(report.findings)} kinds of failure; {report.summary()}"]
    for index, finding in enumerate(report.findings.values()):
        path = save_finding(finding, directory, f"finding-{index}")
        parts.append(_finding_text(finding, path))
    return "\n\n".join(parts)


def _finding_text(finding: Finding, path: Path) -> str:
    text = finding.case.text.decode(errors="replace")
    shown = text if len(text) < 1500 else text[:1500] + "..."
    return (
        f"{finding.outcome.signature}\n  from {finding.origin}: {finding.case.tool} "
        f"{INPUT_NAME} {' '.join(finding.case.args)}\n  {finding.outcome.message}\n"
        f"  saved as {path}\n{shown}"
    )


def test_a_sample_behaves_the_same_in_a_process(
    seeds: list[Seed], tmp_path: Path, fuzz_seed: int | None
) -> None:
    """A few mutated inputs run by the installed executables: no crash by a
    signal, no hang, and the exit code and first stderr line of the in-process run."""
    rng = random.Random(_seed(fuzz_seed) + 1)
    donors = [seed.text for seed in seeds]
    for _ in range(SUBPROCESS_SAMPLE):
        case = mutate_case(rng, rng.choice(seeds), donors)
        inside = run_case(case, tmp_path, TIMEOUT)
        outside = run_subprocess(case, tmp_path, 60.0)
        assert not outside.failed, (outside, case)
        assert (outside.kind, outside.code, outside.message) == (
            inside.kind,
            inside.code,
            inside.message,
        ), case


def _regression_param(regression: Regression) -> object:
    marks = [pytest.mark.xfail(strict=True, reason=regression.xfail)] if regression.xfail else []
    return pytest.param(regression, id=regression.name, marks=marks)


@pytest.mark.parametrize("regression", [_regression_param(r) for r in REGRESSIONS])
def test_regression(regression: Regression, tmp_path: Path) -> None:
    """A kept finding ends as the contract says (its `.json`: exit code and
    the start of the diagnostic)."""
    outcome = run_case(regression.case, tmp_path, TIMEOUT)
    assert not outcome.failed, f"{regression.bug}\n{outcome}"
    assert outcome.code == regression.expect_exit, outcome
    assert outcome.message.startswith(regression.expect_prefix), outcome


def test_regression_files_come_in_pairs() -> None:
    """Each kept finding is an input (`NAME.mlir`) and its expectation (`NAME.json`)."""
    inputs = {path.stem for path in REGRESSION_DIR.glob("*.mlir")}
    expectations = {path.stem for path in REGRESSION_DIR.glob("*.json")}
    assert inputs == expectations
