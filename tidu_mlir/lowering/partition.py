"""Cut one LLVM module into several, optimized and compiled in parallel threads.

LLVM's optimizer and code generator work on one module in one thread, and a
large program (`split-functions` cut it into many `noinline` parts) spends
most of its first call there. Modules in separate LLVM contexts can be
optimized and compiled concurrently, and MCJIT links their objects in one
engine. `partition_module` deals the module's functions out to `count`
modules as even in printed size as it can, keeping their order:

* a function that is meant to be inlined (internal and not `noinline`, such as
  `tidu_malloc`) and an internal constant is copied into every module that
  refers to it, so inlining and constant folding see it as before;
* every other definition (entry points, their guards, the `noinline` parts,
  mutable globals) lives in exactly one module; one that another module refers
  to gets external linkage there and a declaration in the other;
* declarations and metadata are repeated in every module.

The modules' texts differ from the whole module's only in linkage and in what
is declared, so the code of each function is compiled as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from llvmlite import ir

_REFERENCE = re.compile(r'@"([^"]*)"')
"""A global's name in LLVM IR text, as llvmlite prints it (quoted, with `"`
and `\\` as `\\22` and `\\5c`)."""

MIN_MODULE_CHARS = 50_000
"""Printed size of LLVM IR per module below which a module is not cut
further: about 0.1 s of LLVM work on the 2-core reference host. GradBench's
hand tracking (~300,000 characters) is cut in two at this size, its LLVM
time 1.22 -> 0.69 s; its run time did not change (0.65 / 0.67 ms)."""

_LOCAL_LINKAGES = ("internal", "private")


@dataclass
class _Global:
    """A global value of the module: its text and the globals that text names."""

    value: ir.GlobalValue
    text: str
    references: set[str] = field(default_factory=set[str])

    @property
    def name(self) -> str:
        return self.value.name

    @property
    def is_declaration(self) -> bool:
        return isinstance(self.value, ir.Function) and self.value.is_declaration

    @property
    def is_copied(self) -> bool:
        """Whether it is copied into each module that uses it rather than
        living in one (see the module docstring)."""
        value = self.value
        if value.linkage not in _LOCAL_LINKAGES:
            return False
        if isinstance(value, ir.Function):
            return "noinline" not in value.attributes
        return isinstance(value, ir.GlobalVariable) and value.global_constant


def partition_module(module: ir.Module, count: int) -> list[str]:
    """The texts of at most `count` modules that together define what `module`
    does (see the module docstring); the module's own text alone when there
    are not two functions to deal out."""
    globals_ = _globals_of(module)
    homed = [g for g in globals_ if not g.is_declaration and not g.is_copied]
    functions = [g for g in homed if isinstance(g.value, ir.Function)]
    count = min(count, len(functions), sum(len(g.text) for g in globals_) // MIN_MODULE_CHARS)
    if count < 2:
        return [str(module)]
    homes = _deal_out(functions, count)
    for g in homed:
        homes.setdefault(g.name, 0)  # global variables live in the first module
    by_name = {g.name: g for g in globals_}
    members = [
        _closure(by_name, [name for name, home in homes.items() if home == k]) for k in range(count)
    ]
    exported = {
        name
        for k, names in enumerate(members)
        for member in names
        for name in by_name[member].references
        if homes.get(name, k) != k
    }
    return [_text(module, globals_, names, exported) for names in members]


def _globals_of(module: ir.Module) -> list[_Global]:
    globals_ = [_Global(value, str(value)) for value in module.global_values]
    for g in globals_:
        if not g.is_declaration:
            names = _REFERENCE.findall(g.text)
            g.references = {_unescaped(name) for name in names} - {g.name}
    return globals_


def _unescaped(name: str) -> str:
    return name.replace("\\22", '"').replace("\\5c", "\\")


def _deal_out(functions: list[_Global], count: int) -> dict[str, int]:
    """The module of each function: each in turn to the module with the least
    printed text so far. Dealt in turn, the modules mix the program's stages
    (the parts of a gradient's forward pass cost LLVM about twice as much as
    those of its backward pass, for the same text)."""
    loads = [0] * count
    homes: dict[str, int] = {}
    for g in functions:
        lightest = loads.index(min(loads))
        homes[g.name] = lightest
        loads[lightest] += len(g.text)
    return homes


def _closure(by_name: dict[str, _Global], roots: list[str]) -> set[str]:
    """`roots` and the copied globals they use, directly or through each other."""
    members = set(roots)
    pending = list(roots)
    while pending:
        for name in by_name[pending.pop()].references:
            used = by_name.get(name)
            if used is not None and used.is_copied and name not in members:
                members.add(name)
                pending.append(name)
    return members


def _text(module: ir.Module, globals_: list[_Global], members: set[str], exported: set[str]) -> str:
    """One module: its members (external if `exported`), declarations of
    everything else it may use, the metadata."""
    lines = [
        f'; ModuleID = "{module.name}"',
        f'target triple = "{module.triple}"',
        f'target datalayout = "{module.data_layout}"',
        "",
        *(t.get_declaration() for t in module.get_identified_types().values()),
    ]
    for g in globals_:
        if g.name in members:
            lines.append(_printed(g.value, linkage="") if g.name in exported else g.text)
        elif g.is_declaration:
            lines.append(g.text)
        elif g.name in exported:
            lines.append(_declaration(g.value))
    lines += module._get_metadata_lines()  # pyright: ignore[reportPrivateUsage]
    return "\n".join(lines)


def _declaration(value: ir.GlobalValue) -> str:
    """`value` declared: a function without its body, a variable without its
    initializer (both external)."""
    if isinstance(value, ir.Function):
        return _printed(value, linkage="", blocks=[])
    return _printed(value, linkage="", initializer=None)


def _printed(value: ir.GlobalValue, **changes: object) -> str:
    """The text of `value` with some attributes changed for the printing only
    (llvmlite caches a variable's text: dropped before and after)."""
    saved = {name: getattr(value, name) for name in changes}
    try:
        for name, changed in changes.items():
            setattr(value, name, changed)
        value._clear_string_cache()  # pyright: ignore[reportPrivateUsage]
        return str(value)
    finally:
        for name, original in saved.items():
            setattr(value, name, original)
        value._clear_string_cache()  # pyright: ignore[reportPrivateUsage]
