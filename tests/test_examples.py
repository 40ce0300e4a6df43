"""Every example script runs, and the README's demo pipeline and Python tour work."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def _needs_missing_extra(script: Path) -> bool:
    """An example of the `dask` extra, on an installation without it."""
    import importlib.util

    uses_dask = "tidu_mlir.dask" in script.read_text()
    return uses_dask and importlib.util.find_spec("distributed") is None


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script: Path) -> None:
    if _needs_missing_extra(script):
        pytest.skip("the 'dask' extra is not installed")
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip(), "an example prints what it shows"


def test_readme_demo_pipeline() -> None:
    """The pipeline of the README's first command: the worked example's gradient."""
    tool_dir = Path(sys.executable).parent
    opt = subprocess.run(
        [str(tool_dir / "tidu-opt"), "examples/square.mlir", "-p",
         "linearize{graph=@f wrt=x},linear-transpose{graph=@f::@jvp1}"],
        capture_output=True, text=True, cwd=ROOT, check=True,
    )  # fmt: skip
    assert "cg.linear @vjp2" in opt.stdout
    module = ROOT / "build" / "square-grad.mlir"
    module.parent.mkdir(exist_ok=True)
    module.write_text(opt.stdout)
    run = subprocess.run(
        [str(tool_dir / "tidu-run"), str(module), "--entry", "@f::@jvp1::@vjp2",
         "--arg", "3.0", "--arg", "1.0"],
        capture_output=True, text=True, cwd=ROOT, check=True,
    )  # fmt: skip
    assert run.stdout.split() == ["12"]  # d/dx (x+x)·x = 4x at x = 3


def test_readme_python_tour_runs() -> None:
    """Every ```python block of the README runs as written."""
    text = (ROOT / "README.md").read_text()
    blocks = [block.split("```", 1)[0] for block in text.split("```python\n")[1:]]
    assert blocks, "the README shows the Python API"
    for block in blocks:
        namespace: dict[str, object] = {}
        exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 - our own README
    grads = namespace["grads"]
    assert isinstance(grads, dict) and grads["w"].shape == (8, 3) and grads["b"].shape == (8,)


def test_readme_eager_step_keeps_the_leaf_and_follows_the_gradient() -> None:
    """The tour's eager lines: the gradient of sum(tanh(w)·w) and an SGD step
    under no_grad that leaves `w` a leaf requiring grad."""
    text = (ROOT / "README.md").read_text()
    block = next(b.split("```", 1)[0] for b in text.split("```python\n")[1:] if "eager" in b)
    namespace: dict[str, object] = {}
    exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 - our own README
    w = namespace["w"]
    grad = np.tanh(1.0) + (1 - np.tanh(1.0) ** 2)  # d/dw tanh(w)·w at w = 1
    assert w.requires_grad  # type: ignore[attr-defined]
    np.testing.assert_allclose(w.numpy(), np.full(3, 1.0 - 0.1 * grad))  # type: ignore[attr-defined]
