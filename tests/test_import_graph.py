"""The package's import graph: layered as `LAYERS` says, no cycles, and every
module imports on its own.

Edges are read with `ast` from every `import` statement in `tidu_mlir/`, at
module level, inside functions and under `TYPE_CHECKING` alike: a cycle hidden
in a function body or a type-checking block is still a cycle for a reader.
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[1] / "tidu_mlir"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _all_modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE_ROOT.rglob("*.py"))}


OPTIONAL = {"tidu_mlir.dask": "distributed"}
"""Modules of an optional extra, and the package whose absence means it is not installed."""


def _optional_dependencies_present(module: str) -> bool:
    needed = OPTIONAL.get(module)
    return needed is None or importlib.util.find_spec(needed) is not None


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module `name` refers to: itself, or the nearest enclosing module."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules `module` imports (a `from pkg import sub` names `pkg.sub`)."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module if is_package else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            targets = [f"{base}.{alias.name}" for alias in node.names]
        for target in targets:
            if target.split(".")[0] != "tidu_mlir":
                continue
            resolved = _resolve(target, modules)
            if resolved is not None and resolved != module:
                found.add(resolved)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports."""
    modules = _all_modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules (first == last), or None."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    for root in sorted(graph):
        if state.get(root):
            continue
        stack: list[tuple[str, list[str]]] = [(root, sorted(graph[root]))]
        path = [root]
        state[root] = 1
        while stack:
            node, pending = stack[-1]
            if not pending:
                stack.pop()
                path.pop()
                state[node] = 2
                continue
            child = pending.pop()
            if state.get(child) == 1:
                return path[path.index(child) :] + [child]
            if not state.get(child):
                state[child] = 1
                path.append(child)
                stack.append((child, sorted(graph.get(child, ()))))
    return None


LAYERS: tuple[tuple[str, ...], ...] = (
    ("tidu_mlir.fast_syntax",),  # xDSL's parser and printer, faster for the tools
    (
        "tidu_mlir.types",
        "tidu_mlir.diagnostics",
        "tidu_mlir.array_operators",
        "tidu_mlir.tree_util",
        "tidu_mlir.config",
        "tidu_mlir.collector",
    ),
    ("tidu_mlir.dialects.cg",),
    ("tidu_mlir.interfaces",),
    ("tidu_mlir.dialects.prim.types",),
    ("tidu_mlir.dialects.prim.shapes",),
    ("tidu_mlir.dialects.prim.syntax",),
    ("tidu_mlir.dialects.prim.base",),
    ("tidu_mlir.dialects.prim.core",),
    ("tidu_mlir.dialects.prim.elementwise",),
    ("tidu_mlir.dialects.prim.structural",),
    ("tidu_mlir.dialects.prim.indexing",),
    ("tidu_mlir.dialects.prim.ordering",),
    ("tidu_mlir.dialects.prim.contraction",),
    ("tidu_mlir.dialects.prim.linalg",),
    ("tidu_mlir.dialects.prim.spectral",),
    ("tidu_mlir.dialects.prim.check",),
    ("tidu_mlir.dialects.prim.control.bodies",),
    ("tidu_mlir.dialects.prim.control.scan", "tidu_mlir.dialects.prim.control.cond"),
    ("tidu_mlir.dialects.prim.control.while_loop",),  # its JVP is a record_while and a scan
    ("tidu_mlir.dialects.prim.control",),
    ("tidu_mlir.dialects.prim", "tidu_mlir.dialects"),
    ("tidu_mlir.graph",),
    ("tidu_mlir.interp", "tidu_mlir.ad", "tidu_mlir.lowering"),
    ("tidu_mlir.passes", "tidu_mlir.execution", "tidu_mlir.tracing"),
    ("tidu_mlir.control_flow",),
    ("tidu_mlir.numpy", "tidu_mlir.registry"),
    ("tidu_mlir.lax",),
    ("tidu_mlir.nn",),
    ("tidu_mlir.scipy",),
    ("tidu_mlir.api", "tidu_mlir.eager", "tidu_mlir.tools"),
    ("tidu_mlir.export",),
    ("tidu_mlir.dask",),
    ("tidu_mlir",),
)
"""The architecture, bottom to top (docs/design.md draws it). A module belongs to
the longest entry naming it or a package holding it; it may import modules of
its own entry and of entries in lower rows only (so siblings in one row, e.g.
the lowering and the AD engine, know nothing of each other)."""


def _layer_entry(module: str) -> tuple[int, str]:
    """(row, entry) of `module` in `LAYERS`."""
    matches = [
        (len(entry), row, entry)
        for row, entries in enumerate(LAYERS)
        for entry in entries
        if module == entry or module.startswith(entry + ".")
    ]
    _, row, entry = max(matches)
    return row, entry


def test_every_module_has_a_layer_and_imports_only_below_it():
    violations = []
    for module, imported in import_graph().items():
        row, entry = _layer_entry(module)
        for target in imported:
            target_row, target_entry = _layer_entry(target)
            if target_entry != entry and target_row >= row:
                violations.append(f"{module} (row {row}) imports {target} (row {target_row})")
    assert not violations, "\n".join(violations)


def test_prim_package_modules_are_each_a_layer():
    """A new file in `dialects/prim/` must be placed in `LAYERS` explicitly."""
    listed = {entry for entries in LAYERS for entry in entries}
    prim_modules = [m for m in import_graph() if m.startswith("tidu_mlir.dialects.prim.")]
    assert prim_modules and all(m in listed for m in prim_modules)


def test_cycle_finder_finds_a_planted_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    cycle = find_cycle(graph)
    assert cycle is not None and cycle[0] == cycle[-1] and set(cycle) == {"a", "b", "c"}
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_graph_reads_function_level_imports():
    graph = import_graph()
    assert "tidu_mlir.dialects.cg" in graph["tidu_mlir.graph"]
    # tools/run.py imports the lowering runtime inside a function (lazy LLVM loading)
    assert "tidu_mlir.lowering.runtime" in graph["tidu_mlir.tools.run"]


def test_no_import_cycles():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_every_module_imports_alone_in_any_order():
    """Each module imports in a fresh `tidu_mlir` namespace (forward and reverse order)."""
    names = sorted(name for name in _all_modules() if _optional_dependencies_present(name))
    script = textwrap.dedent(
        f"""
        import importlib, sys
        names = {names!r}
        for order in (names, names[::-1]):
            for name in order:
                for loaded in [m for m in sys.modules if m.split(".")[0] == "tidu_mlir"]:
                    del sys.modules[loaded]
                importlib.import_module(name)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
