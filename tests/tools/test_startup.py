"""`tidu-opt` starts without the tracing, JIT and oracle machinery: counted as
the modules a fresh interpreter loads, not as seconds (start-up time itself
is measured by bench/bench_startup.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "square.mlir"

# Loaded by the Python API and the JIT only; a tool that transforms IR text
# must not pay for them on every start.
HEAVY = ("tidu_mlir.api", "tidu_mlir.tracing", "tidu_mlir.lowering.jit", "llvmlite", "jax")


def loaded_modules(code: str) -> set[str]:
    """The module names a fresh interpreter holds after running `code`."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    return set(json.loads(result.stdout.splitlines()[-1]))


def heavy_among(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_importing_the_package_loads_no_submodule_until_a_name_is_used() -> None:
    modules = loaded_modules("import tidu_mlir")
    assert not [m for m in modules if m.startswith("tidu_mlir.")]
    assert "xdsl" not in modules and "numpy" not in modules


def test_a_public_name_is_imported_on_first_use() -> None:
    modules = loaded_modules("import tidu_mlir as td\nassert callable(td.grad)")
    assert "tidu_mlir.api" in modules


def test_tidu_opt_running_ad_passes_loads_no_tracing_or_jit() -> None:
    code = (
        "import contextlib, io, sys\n"
        "from tidu_mlir.tools.opt import main\n"
        f"sys.argv = ['tidu-opt', {str(EXAMPLE)!r}, '-p', "
        "'linearize{graph=@f wrt=x},linear-transpose{graph=@f::@jvp1}']\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit as exit:\n"
        "        assert not exit.code, exit.code\n"
        "assert '@jvp1' in out.getvalue()\n"
    )
    assert heavy_among(loaded_modules(code)) == []


def test_unknown_public_name_is_an_attribute_error() -> None:
    import tidu_mlir

    try:
        tidu_mlir.not_a_transform  # noqa: B018
    except AttributeError as error:
        assert "not_a_transform" in str(error)
    else:
        raise AssertionError("expected AttributeError")


def tidu_opt_modules(text: str, tmp_path: Path) -> set[str]:
    """The modules loaded by `tidu-opt` reading and printing `text`."""
    path = tmp_path / "input.mlir"
    path.write_text(text)
    code = (
        "import contextlib, io\n"
        "from tidu_mlir.tools.opt import run\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    assert run([{str(path)!r}]) == 0\n"
        "assert 'func.func' in out.getvalue()\n"
    )
    return loaded_modules(code)


def test_tidu_opt_loads_the_prim_dialect_and_numpy_only_for_an_input_that_uses_it(
    tmp_path: Path,
) -> None:
    lowered = (
        "func.func @f(%x: f64) -> f64 {\n"
        "  %y = arith.addf %x, %x : f64\n"
        "  func.return %y : f64\n}\n"
    )
    primitive = (
        "func.func @f(%x: tensor<2xf64>) -> tensor<2xf64> {\n"
        "  %y = prim.neg %x : tensor<2xf64>\n"
        "  func.return %y : tensor<2xf64>\n}\n"
    )
    without = tidu_opt_modules(lowered, tmp_path)
    assert "tidu_mlir.dialects.prim" not in without and "numpy" not in without
    assert "tidu_mlir.dialects.prim" in tidu_opt_modules(primitive, tmp_path)


def test_tidu_run_reports_a_malformed_input_before_loading_numpy_and_the_interpreter(
    tmp_path: Path,
) -> None:
    path = tmp_path / "input.mlir"
    path.write_text("func.func @f(%x: f64) -> f64 {\n  func.return %nope : f64\n}\n")
    code = (
        "import contextlib, io\n"
        "from tidu_mlir.tools.run import run\n"
        "with contextlib.redirect_stderr(io.StringIO()) as err:\n"
        f"    assert run([{str(path)!r}, '--entry', '@f', '--backend', 'interp']) == 1\n"
        "assert 'use of undefined value %nope' in err.getvalue()\n"
    )
    modules = loaded_modules(code)
    assert not {"numpy", "tidu_mlir.interp", "tidu_mlir.ad"} & modules
