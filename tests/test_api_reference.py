"""The API reference (`docs/reference/`) cannot rot: it builds with warnings as
errors, shows every public name, runs its examples, gives every transform,
`td.lax`, `td.nn` and `td.scipy.special` function an example, and its coverage
tables name real functions."""

from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "reference"
MODULES = (
    "tidu_mlir",
    "tidu_mlir.numpy",
    "tidu_mlir.lax",
    "tidu_mlir.nn",
    "tidu_mlir.scipy",
    "tidu_mlir.scipy.special",
    "tidu_mlir.scipy.linalg",
    "tidu_mlir.tree_util",
    "tidu_mlir.eager",
)
# Each public function of these needs a doctest calling it as `prefix.name`.
EXAMPLE_PREFIXES = {
    "tidu_mlir": "td",
    "tidu_mlir.lax": "lax",
    "tidu_mlir.nn": "td.nn",
    "tidu_mlir.scipy.special": "td.scipy.special",
    "tidu_mlir.scipy.linalg": "td.scipy.linalg",
    "tidu_mlir.tree_util": "tree_util",
}


def _sphinx(builder: str, out: Path, doctrees: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", builder,
         "-d", str(doctrees), str(REFERENCE), str(out)],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The HTML build (its doctrees are reused by the doctest build)."""
    tmp = tmp_path_factory.mktemp("reference")
    result = _sphinx("html", tmp / "html", tmp / "doctrees")
    assert result.returncode == 0, f"sphinx-build -W -b html failed:\n{result.stderr}"
    return tmp


def test_every_public_name_is_in_the_html(built: Path) -> None:
    html = "\n".join(p.read_text() for p in (built / "html").glob("*.html"))
    missing = []
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            is_module = isinstance(obj, types.ModuleType)
            anchor = f"module-{obj.__name__}" if is_module else f"{module_name}.{name}"
            if f'id="{anchor}"' not in html:
                missing.append(f"{module_name}.{name}")
    assert not missing, f"public names without an entry in the reference: {missing}"


def test_examples_run(built: Path) -> None:
    result = _sphinx("doctest", built / "doctest", built / "doctrees")
    report = built / "doctest" / "output.txt"
    output = report.read_text() if report.exists() else result.stderr
    assert result.returncode == 0, f"reference examples failed:\n{output}\n{result.stderr}"
    tests = re.search(r"^\s*(\d+) tests$", output, re.MULTILINE)
    assert tests and int(tests.group(1)) >= 50, f"the examples were not collected:\n{output}"


def _doctest_lines() -> list[str]:
    """The examples' code: the pages' and the docstrings' (autodoc shows those)."""
    texts = [page.read_text() for page in REFERENCE.glob("*.rst")]
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        texts += [inspect.getdoc(getattr(module, name)) or "" for name in module.__all__]
    lines = []
    for text in texts:
        for line in text.splitlines():
            stripped = line.strip()
            if stripped.startswith((">>> ", "... ")):
                lines.append(stripped[4:])
    return lines


def test_every_transform_and_lax_function_has_an_example() -> None:
    code = "\n".join(_doctest_lines())
    missing = []
    for module_name, prefix in EXAMPLE_PREFIXES.items():
        module = importlib.import_module(module_name)
        for name in module.__all__:
            if inspect.isroutine(getattr(module, name)) and not re.search(
                rf"\b{re.escape(prefix)}\.{name}\b", code
            ):
                missing.append(f"{module_name}.{name}")
    assert not missing, (
        f"no example calls {missing}: add one under the name's `name:` line in the "
        "`tidu-api` directive of its page in docs/reference/"
    )


def _coverage_lists() -> dict[str, list[str]]:
    """The names of each `tidu-coverage` table in coverage.rst, by `:against:` module."""
    lists: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in (REFERENCE / "coverage.rst").read_text().splitlines():
        if line.startswith(".. tidu-coverage::"):
            current = None
        elif against := re.fullmatch(r"\s+:against:\s*(\S+)\s*", line):
            current = lists.setdefault(against.group(1), [])
        elif current is not None and re.match(r"\s+\w[\w ]*:", line):
            current += [item.partition("=")[0] for item in line.partition(":")[2].split()]
        elif line and not line[0].isspace():
            current = None
    return lists


@pytest.mark.parametrize(
    "against", ["numpy", "jax.lax", "jax", "jax.nn", "jax.scipy.special", "jax.scipy.linalg"]
)
def test_coverage_tables_list_real_names(against: str) -> None:
    names = _coverage_lists()[against]
    library = pytest.importorskip(against)
    assert len(names) > 10
    assert len(set(names)) == len(names), f"a name listed twice for {against}"
    unknown = [n for n in names if not hasattr(library, n)]
    assert not unknown, f"not in {against}: {unknown}"
