"""`td.draw`: a picture of a function's fragments at one stage (docs/pictures.md).

The module is the one `td.ir` gives for the stage; `tidu-opt -t dot` draws
it the same way (`tidu_mlir.tools.dot`). The DOT text needs nothing but
Python; rendering it to a file needs Graphviz's `dot` executable. The drawing
and `subprocess` are imported when first used: `import tidu_mlir` (and so
every `tidu-opt` start-up) does not pay for them.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from xdsl.parser import Parser

from tidu_mlir.api import ir
from tidu_mlir.registry import make_context

DRAWABLE_STAGES = ("trace", "jvp", "unzip", "vjp", "batch")
"""The stages of `td.ir` whose module holds `cg` fragments (later ones hold functions)."""


def draw(
    fn: Callable[..., Any],
    *example_args: Any,
    stage: str = "trace",
    path: str | Path | None = None,
    format: str = "svg",
) -> str:
    """The Graphviz DOT text of `fn`'s module at `stage` (a stage of `td.ir`
    that holds fragments: `trace`, `jvp`, `unzip`, `vjp`, `batch`). With
    `path`, also render it there in `format` (`svg`, `png`, `pdf`, ...), which
    needs Graphviz installed (a RuntimeError says so otherwise)."""
    if stage not in DRAWABLE_STAGES:
        raise ValueError(
            f"stage '{stage}' cannot be drawn; draw takes the stages with cg fragments: "
            + ", ".join(DRAWABLE_STAGES)
        )
    from tidu_mlir.tools.dot import module_to_dot

    module = Parser(make_context(), ir(fn, *example_args, stage=stage)).parse_module()
    dot = module_to_dot(module)
    if path is not None:
        render(dot, path, format)
    return dot


def render(dot: str, path: str | Path, format: str = "svg") -> None:
    """Render DOT text to `path` with Graphviz's `dot -T<format>`."""
    executable = shutil.which("dot")
    if executable is None:
        raise RuntimeError(
            "Graphviz is not installed (no `dot` executable on PATH), so the picture "
            f"cannot be rendered to {path}; install Graphviz (e.g. `apt install graphviz`), "
            "or call draw without `path` to get the DOT text"
        )
    import subprocess

    result = subprocess.run(
        [executable, f"-T{format}", "-o", str(path)],
        input=dot,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"Graphviz `dot -T{format}` failed: {result.stderr.strip()}")
