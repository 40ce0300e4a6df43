"""`tidu-opt --help-passes` documents every tidu pass (name, description, each
option with its type and default), the pass docstrings follow the convention
it reads, and `--help` names the tidu passes without importing them."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tidu_mlir.registry import all_passes
from tidu_mlir.tools import opt

TOOL_DIR = Path(sys.executable).parent

PASS_NAMES = list(all_passes())


def run_help(capsys: pytest.CaptureFixture[str], flag: str) -> str:
    """Run `tidu-opt FLAG` in-process: argparse exits 0 after printing."""
    with pytest.raises(SystemExit) as exited:
        opt.run([flag])
    assert exited.value.code in (0, None)
    return capsys.readouterr().out


def sections(text: str) -> dict[str, str]:
    """The `--help-passes` text by pass: a section starts with the pass name
    alone on a line, sections are separated by a blank line."""
    found: dict[str, str] = {}
    for section in text.strip().split("\n\n")[1:]:  # [0] is the heading
        name, _, body = section.partition("\n")
        found[name] = body
    return found


def test_every_tidu_pass_has_a_section_with_every_option(capsys) -> None:
    by_pass = sections(run_help(capsys, "--help-passes"))
    assert list(by_pass) == PASS_NAMES
    for name, factory in all_passes().items():
        body = by_pass[name]
        assert body.startswith("    ") and len(body.split()) > 3, name  # a description
        for option in opt.pass_options(factory()):
            assert f"\n      {option.name} ({option.type}, {option.default})\n" in body + "\n"


def test_help_passes_exits_zero_from_the_installed_tool() -> None:
    result = subprocess.run(
        [str(TOOL_DIR / "tidu-opt"), "--help-passes"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("tidu passes")
    assert "linear-transpose\n" in result.stdout


def test_option_types_and_defaults_as_written_in_a_pipeline(capsys) -> None:
    body = sections(run_help(capsys, "--help-passes"))
    assert "      graph (str, required)\n" in body["linearize"]
    assert "      wrt (list of str, default: empty)\n" in body["linearize"]
    assert "      outputs (list of int, default: unset)\n" in body["linearize"]
    assert "      name (str, default: unset)\n" in body["linearize"]  # the field is sym_name
    assert "      axes (list of int or str, default: empty)\n" in body["batch"]
    assert "      policy (str, default: save-all)\n" in body["unzip"]
    assert "      report (bool, default: false)\n" in body["unzip"]
    assert "      noalias (bool, default: false)" in body["convert-func-to-llvm"]
    assert "sym_name" not in "".join(body.values())


@pytest.mark.parametrize("name", PASS_NAMES)
def test_pass_docstring_documents_exactly_its_options(name: str) -> None:
    """The convention: a one-paragraph description first, then an `Options:`
    section with one `option: description` entry per option, no other."""
    cls = all_passes()[name]()
    options = [option.name for option in opt.pass_options(cls)]
    assert list(opt.documented_options(cls)) == options
    description = opt.pass_description(cls)
    assert description.endswith(".") and not description.startswith("Options")


def test_documented_options_reads_continuation_lines_and_stops_at_a_blank() -> None:
    class Example:
        """Do something.

        Options:
            graph: the fragment,
                by path.
            name: its symbol.

        Notes after the options.
        """

    assert opt.documented_options(Example) == {
        "graph": "the fragment, by path.",
        "name": "its symbol.",
    }


def test_help_names_the_tidu_passes_and_points_to_help_passes(capsys) -> None:
    text = run_help(capsys, "--help")
    description = text.split("\n\n")[1]  # after the usage
    listed = "tidu passes: " + ", ".join(PASS_NAMES) + " (see --help-passes)."
    assert listed in " ".join(description.split())  # a pass name is not broken at a hyphen
    assert "--help-passes" in text.split("options:")[1]  # the flag itself is listed


def test_help_imports_no_pass_and_no_output_target() -> None:
    """What keeps `tidu-opt --help` fast: pass classes and the dot and llvm
    targets are imported only when used."""
    script = textwrap.dedent(
        """
        import sys
        from tidu_mlir.tools import opt
        try:
            opt.run(["--help"])
        except SystemExit:
            pass
        heavy = ("tidu_mlir.lowering.", "tidu_mlir.tools.dot", "llvmlite")
        loaded = [m for m in sys.modules if m.startswith(heavy)]
        loaded += [m for m in sys.modules if m.startswith("tidu_mlir.passes.")
                   and m != "tidu_mlir.passes.options"]
        print(sorted(loaded), file=sys.stderr)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert result.stderr.strip() == "[]"
