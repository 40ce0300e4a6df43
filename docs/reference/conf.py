"""Sphinx configuration of the API reference (`docs/reference/`).

The pages are generated from the public names (`__all__`) and their docstrings,
so a name added to the package appears here without editing a page. Two local
directives do it:

* `tidu-api MODULE`: one autodoc entry per name of `MODULE.__all__`, in that
  order, with the signature. The directive's content holds examples: a line
  `name:` followed by an indented doctest block, shown under that name's entry
  (the `doctest` builder runs them: `tests/test_api_reference.py`). An example
  for a name that is not public is a warning. A missing docstring, or one
  borrowed from a type (a `functools.partial`'s), gets the `:undocumented:`
  text instead (`{name}` filled in).
* `tidu-coverage MODULE`: a table of which names of a reference library
  (numpy, `jax.lax`, `jax`, `jax.nn`, `jax.scipy.special`) `MODULE` has.
  Content lines are `group: name name=elsewhere ...`: a name of
  `MODULE.__all__` is "in", one given `=elsewhere` (for instance
  `sub=tnp.subtract`) is covered by another tidu name, the rest are "not
  yet". Public names in no group get a row.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
import sys
import types
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.pycode import ModuleAnalyzer
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

project = "tidu-mlir"
author = "tidu-mlir"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.doctest"]
napoleon_numpy_docstring = True
napoleon_google_docstring = True
default_role = "literal"  # the docstrings' `name` (markdown style) is code
autodoc_member_order = "bysource"
html_theme = "alabaster"
html_static_path: list[str] = []
exclude_patterns = ["_build"]

# What every example assumes (index.rst shows it).
doctest_global_setup = """
import numpy as np
import tidu_mlir as td
import tidu_mlir.numpy as tnp
from tidu_mlir import lax
"""

logger = logging.getLogger(__name__)

ALIASES = {
    "td": "tidu_mlir",
    "tnp": "tidu_mlir.numpy",
    "td.lax": "tidu_mlir.lax",
    "td.nn": "tidu_mlir.nn",
    "td.scipy.special": "tidu_mlir.scipy.special",
}
"""The short module names a coverage table's `=elsewhere` may use."""


def _borrowed_doc(obj: Any) -> bool:
    """Whether `obj.__doc__` is its type's (or a wrapped partial's), not its own."""
    doc = getattr(obj, "__doc__", None)
    if not doc:
        return False
    owners = [type(obj)]
    if hasattr(obj, "__wrapped__"):
        owners.append(type(obj.__wrapped__))
    return any(doc == owner.__doc__ for owner in owners)


def _own_doc(obj: Any) -> str | None:
    return None if _borrowed_doc(obj) else inspect.getdoc(obj)


def _attribute_doc(module: types.ModuleType, name: str, obj: Any) -> list[str]:
    """The docstring written under `name = ...` in the module defining it."""
    prefix = module.__name__.split(".")[0] + "."
    candidates = [module] + [
        m for key, m in sorted(sys.modules.items()) if key.startswith(prefix) and m is not module
    ]
    for candidate in candidates:
        if candidate is None or getattr(candidate, name, None) is not obj:
            continue
        try:
            docs = ModuleAnalyzer.for_module(candidate.__name__).find_attr_docs()
        except Exception:  # noqa: BLE001 - no source: try the next module
            continue
        if ("", name) in docs:
            return list(docs[("", name)])
    return []


def _is_own(obj: Any, package: str) -> bool:
    return (getattr(obj, "__module__", None) or "").startswith(package)


def _module_pages(srcdir: Path) -> set[str]:
    """The modules some page documents with `automodule`."""
    found = re.compile(r"^\.\. automodule:: (\S+)", re.MULTILINE)
    return {m for page in srcdir.glob("**/*.rst") for m in found.findall(page.read_text())}


def _module_entry(module: types.ModuleType, name: str, pages: set[str]) -> list[str]:
    """A public submodule: a link to its page, or (none yet) its documented members here."""
    obj = getattr(module, name)
    if obj.__name__ in pages:
        summary = (inspect.getdoc(obj) or "").split("\n\n")[0].replace("\n", " ")
        return [f"``{name}``: the module :py:mod:`{obj.__name__}`. {summary}", ""]
    return [f".. automodule:: {obj.__name__}", "   :members:", ""]


def _entry(module: types.ModuleType, name: str, undocumented: str) -> list[str]:
    """The reST lines documenting `module.name` (the examples are added after)."""
    full = f"{module.__name__}.{name}"
    obj = getattr(module, name)
    package = module.__name__.split(".")[0]
    note = [] if _own_doc(obj) else ["   " + undocumented.format(name=name), ""]
    if inspect.isclass(obj) and _is_own(obj, package):
        return [f".. autoclass:: {full}", "   :members:", "", *note]
    if inspect.isroutine(obj) or isinstance(obj, functools.partial):
        return [f".. autofunction:: {full}", "", *note]
    # Data and aliases of other libraries' objects: the attribute docstring.
    if isinstance(obj, str | int | float | bool):
        option = f":value: {obj!r}"
    elif inspect.isclass(obj):  # an alias: `PyTreeDef = optree.PyTreeSpec`
        option = f":value: {obj.__module__}.{obj.__qualname__}"
    else:
        option = f":type: {type(obj).__module__}.{type(obj).__qualname__}"
    doc = _attribute_doc(module, name, obj)
    if not doc and _is_own(type(obj), package):  # an instance: its class's docstring
        doc = (inspect.getdoc(obj) or "").splitlines()
    body = [f"   {line}" if line else "" for line in doc or [undocumented.format(name=name)]]
    return [f".. py:data:: {name}", f"   :module: {module.__name__}", f"   {option}", "", *body, ""]


def _content_blocks(content: StringList) -> dict[str, list[tuple[str, Any, int]]]:
    """`name:` lines and the lines indented under them (dedented), by name."""
    blocks: dict[str, list[tuple[str, Any, int]]] = {}
    current: list[tuple[str, Any, int]] | None = None
    for line, (source, offset) in zip(content, content.items, strict=True):
        header = re.fullmatch(r"(\w+):\s*", line)
        if header:
            current = blocks.setdefault(header.group(1), [])
        elif current is not None:
            current.append((line, source, offset))
        elif line.strip():
            logger.warning("tidu-api: text before the first 'name:' line",
                           location=f"{source}:{offset + 1}")  # fmt: skip
    for block in blocks.values():
        indent = min((len(t) - len(t.lstrip()) for t, _, _ in block if t.strip()), default=0)
        block[:] = [(t[indent:], source, offset) for t, source, offset in block]
    return blocks


class ApiDirective(SphinxDirective):
    """`.. tidu-api:: MODULE`: every public name of MODULE, with its examples."""

    required_arguments = 1
    has_content = True
    option_spec = {"undocumented": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        module = importlib.import_module(self.arguments[0])
        undocumented = self.options.get("undocumented", "(No docstring yet.)")
        blocks = _content_blocks(self.content)
        source, line = self.get_source_info()
        for name in sorted(set(blocks) - set(module.__all__)):
            logger.warning(
                "example for %s.%s, which is not public", module.__name__, name,
                location=self.get_location(),
            )  # fmt: skip
        pages = _module_pages(Path(self.env.srcdir))
        result = StringList()
        for name in module.__all__:
            inline_module = isinstance(getattr(module, name), types.ModuleType)
            entry = (
                _module_entry(module, name, pages)
                if inline_module
                else _entry(module, name, undocumented)
            )
            for text in entry:
                result.append(text, source, line)
            for text, block_source, offset in blocks.get(name, []):
                result.append("   " + text if text.strip() else "", block_source, offset)
            result.append("", source, line)
            if inline_module:  # back to this module for what follows
                result.append(f".. py:currentmodule:: {module.__name__}", source, line)
                result.append("", source, line)
        container = nodes.container()
        self.state.nested_parse(result, self.content_offset, container)
        return container.children


class CoverageDirective(SphinxDirective):
    """`.. tidu-coverage:: MODULE`: which names of a reference library it has."""

    required_arguments = 1
    has_content = True
    option_spec = {"against": directives.unchanged_required, "label": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        module = importlib.import_module(self.arguments[0])
        label = self.options.get("label", module.__name__)
        public = [n for n in module.__all__ if not isinstance(getattr(module, n), types.ModuleType)]
        rows: list[tuple[str, list[str], list[str], list[str]]] = []
        listed: set[str] = set()
        total = 0
        for line in self.content:
            if not line.strip():
                continue
            group, _, names = line.partition(":")
            have, elsewhere, missing = [], [], []
            for item in names.split():
                name, _, other = item.partition("=")
                listed.add(name)
                total += 1
                if name in public:
                    have.append(f"``{name}``")
                elif other:
                    self._check_elsewhere(other)
                    elsewhere.append(f"``{name}`` → ``{other}``")
                else:
                    missing.append(name)
            rows.append((group.strip(), have, elsewhere, missing))
        extra = [f"``{n}``" for n in public if n not in listed]
        if extra:
            rows.append(("other", extra, [], []))
        by_name = sum(len(r[1]) for r in rows) - len(extra)
        by_other = sum(len(r[2]) for r in rows)
        against = self.options["against"]
        lines = [
            f"``{label}`` has {len(public)} public functions. Of the {total} common "
            f"``{against}`` names listed, {by_name} are in ``{label}`` and {by_other} are "
            "done by another tidu function (→).",
            "",
            ".. list-table::",
            "   :header-rows: 1",
            "   :widths: 12 40 30 30",
            "",
            "   * - group",
            f"     - in ``{label}``",
            "     - elsewhere in tidu",
            "     - not yet",
        ]
        for group, have, elsewhere, missing in rows:
            lines += [
                f"   * - {group}",
                f"     - {', '.join(have) or '—'}",
                f"     - {', '.join(elsewhere) or '—'}",
                f"     - {', '.join(missing) or '—'}",
            ]
        source, line = self.get_source_info()
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source), self.content_offset, container)
        return container.children

    def _check_elsewhere(self, other: str) -> None:
        """`tnp.name` / `td.name` / `td.lax.name` must be public, else the table rots."""
        head, _, rest = other.rpartition(".")
        module_name = ALIASES.get(head, head)
        try:
            public = importlib.import_module(module_name).__all__
        except ImportError:
            public = []
        if rest not in public:
            logger.warning("coverage: %s is not a public tidu name", other,
                           location=self.get_location())  # fmt: skip


def _drop_borrowed(app: Sphinx, what: str, name: str, obj: Any, options: Any,
                   lines: list[str]) -> None:  # fmt: skip
    """A docstring that is its type's (a `functools.partial`'s) says nothing of `obj`."""
    if what in ("function", "method") and _borrowed_doc(obj):
        lines.clear()


_ATTRIBUTE_DOCS: dict[str, list[str]] = {}


def _attribute_doc_as_written(app: Sphinx, what: str, name: str, obj: Any, options: Any,
                              lines: list[str]) -> None:  # fmt: skip
    """Napoleon reads a property's first line `text: more` as `type: description`;
    tidu's property docstrings are prose: kept before napoleon, restored after."""
    if what not in ("attribute", "property", "data"):
        return
    if name in _ATTRIBUTE_DOCS:
        lines[:] = _ATTRIBUTE_DOCS.pop(name)
    else:
        _ATTRIBUTE_DOCS[name] = list(lines)


def _callable_ellipsis(app: Sphinx, what: str, name: str, obj: Any, options: Any,
                       signature: str | None, return_annotation: str | None) -> Any:  # fmt: skip
    """Autodoc shows `Callable[..., Any]` as `Callable[[...], Any]`: undo that."""
    fix = functools.partial(re.sub, r"\[\[\.\.\.\], ", "[..., ")
    return (signature and fix(signature), return_annotation and fix(return_annotation))


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("tidu-api", ApiDirective)
    app.add_directive("tidu-coverage", CoverageDirective)
    app.connect("autodoc-process-docstring", _drop_borrowed)
    app.connect("autodoc-process-docstring", _attribute_doc_as_written, priority=400)
    app.connect("autodoc-process-docstring", _attribute_doc_as_written, priority=600)
    app.connect("autodoc-process-signature", _callable_ellipsis)
    return {"parallel_read_safe": True}
