"""Cut a large loop-level module into modules compiled one after another and
side by side.

After `split-functions`, a large program is many `noinline` functions (parts,
outlined loop bodies) called by its entry points. The rest of the lowering
(to the `llvm` dialect, then LLVM IR) runs in Python, LLVM's optimizer and
code generator in threads that release the GIL. Cut into modules, the
program is lowered module by module while LLVM compiles the modules already
lowered (`llvm_threads.PipelinedCompilation`), so Python and LLVM work at
the same time. `split_module` deals the functions out:

* the entry points go to the first module, the other `noinline` functions
  (the parts of `split-functions`) each to the module with the fewest ops so
  far, and a function called in a loop (an outlined scan body) to the module
  of its caller;
* a private function that is meant to be inlined (not `noinline`: a helper,
  an outlined parallel body) and a constant global are copied into every
  module that uses them, so inlining and constant folding see them as before;
* a function that another module calls is made public there (external
  linkage) and declared in the modules that call it;
* declarations of external functions are repeated in every module.

Each function's code is therefore compiled as before: only a call between
two modules changes (to an external symbol, resolved when the objects are
linked in one engine).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr
from xdsl.ir import Operation

from tidu_mlir.lowering.split import NO_INLINE_ATTR

MIN_MODULE_OPS = 400
"""Loop-level ops (nested ones included) per module below which a module is
not cut further: about 50,000 characters of LLVM IR, 0.1 s of LLVM work on
the 2-core reference host."""

MAX_MODULES = 8
"""Modules a program is cut into at most: enough that the last one, which
LLVM compiles after the lowering ends, is small (first call of the K=1000
chain of `bench/bench_compile.py`, two runs each: at most 4 modules 12.8 /
12.4 s, 8 modules 12.3 / 11.6 s, 16 modules 12.1 / 11.8 s)."""

_PRIVATE = StringAttr("private")


def split_module(module: ModuleOp, count: int) -> list[ModuleOp]:
    """`module` cut into at most `count` modules (see the module docstring),
    its functions moved into them; `[module]` itself when it is too small
    to cut or has no two functions to deal out."""
    defined = {f.sym_name.data: f for f in _functions(module) if not f.is_declaration}
    copied = {name for name, f in defined.items() if _is_copied(f)}
    homed = [f for name, f in defined.items() if name not in copied]
    if min(count, len(homed)) < 2:
        return [module]  # (most functions: no walk to count their ops)
    surveys = {name: _Survey.of(f) for name, f in defined.items()}
    sizes = {f.sym_name.data: surveys[f.sym_name.data].ops for f in homed}
    count = min(count, len(homed), sum(sizes.values()) // MIN_MODULE_OPS)
    if count < 2:
        return [module]
    references = {name: survey.symbols for name, survey in surveys.items()}
    followers = {name for survey in surveys.values() for name in survey.called_in_loops}
    homes = _deal_out([f for f in homed if f.sym_name.data not in followers], sizes, count)
    _follow_callers(homes, [f.sym_name.data for f in homed], references)
    if len(set(homes.values())) < 2:
        return [module]
    members = [
        _closure(references, copied, [name for name, home in homes.items() if home == m])
        for m in range(count)
    ]
    called = [_used_by(references, names) for names in members]
    plans = [
        _ops_of(module, defined, names, used, homes)
        for names, used in zip(members, called, strict=True)
    ]
    for name, home in homes.items():
        if any(name in used for m, used in enumerate(called) if m != home):
            defined[name].sym_visibility = None  # external: other modules call it
    return [ModuleOp([_detached(op) for op in ops]) for ops in plans if ops]


@dataclass
class _Survey:
    """What one walk of a function finds: its ops (nested ones included), the
    symbols they refer to (callees, globals), and the functions it calls
    other than at the top of its body (in a loop: a scan's or a while loop's
    body). Those stay with their caller: a call between modules loses what
    LLVM infers across it (the calling convention, arguments passed by
    value), which costs in a loop (GradBench hand tracking ran 0.59 -> 0.92
    ms with its scan bodies dealt out)."""

    ops: int = 0
    symbols: set[str] = field(default_factory=set[str])
    called_in_loops: set[str] = field(default_factory=set[str])

    @staticmethod
    def of(function: func.FuncOp) -> _Survey:
        survey = _Survey()
        top = function.body.block
        for op in function.walk():
            survey.ops += 1
            for value in (*op.properties.values(), *op.attributes.values()):
                if isinstance(value, SymbolRefAttr):
                    survey.symbols.add(value.root_reference.data)
            if isinstance(op, func.CallOp) and op.parent is not top:
                survey.called_in_loops.add(op.callee.root_reference.data)
        return survey


def _follow_callers(
    homes: dict[str, int], names: list[str], references: dict[str, set[str]]
) -> None:
    """Give each function of `names` without a module the module of a
    function calling it (the first module when no function with one does)."""
    pending = [name for name in names if name not in homes]
    while pending:
        placed = False
        for name in list(pending):
            callers = (c for c, used in references.items() if name in used and c in homes)
            caller = next(callers, None)
            if caller is not None:
                homes[name] = homes[caller]
                pending.remove(name)
                placed = True
        if not placed:
            homes.update(dict.fromkeys(pending, 0))
            return


def _functions(module: ModuleOp) -> Iterator[func.FuncOp]:
    return (op for op in module.ops if isinstance(op, func.FuncOp))


def _is_copied(function: func.FuncOp) -> bool:
    """Whether `function` is copied into each module that uses it (a private
    function LLVM may inline) rather than living in one."""
    return function.sym_visibility == _PRIVATE and NO_INLINE_ATTR not in function.attributes


def _deal_out(homed: list[func.FuncOp], sizes: dict[str, int], count: int) -> dict[str, int]:
    """The module of each function: the entry points (public) in the first,
    every other function in turn to the module with the fewest ops so far
    (a module may stay empty: the entry points are many and large).
    Dealt in turn, the modules mix the program's stages (a gradient's
    forward parts cost LLVM about twice its backward parts, for as many ops)."""
    loads = [0] * count
    homes: dict[str, int] = {}
    for function in sorted(homed, key=lambda f: f.sym_visibility == _PRIVATE):
        name = function.sym_name.data
        home = 0 if function.sym_visibility != _PRIVATE else loads.index(min(loads))
        homes[name] = home
        loads[home] += sizes[name]
    return homes


def _closure(references: dict[str, set[str]], copied: set[str], roots: list[str]) -> set[str]:
    """`roots` and the copied functions they use, directly or through each other."""
    members = set(roots)
    pending = list(roots)
    while pending:
        for name in references[pending.pop()]:
            if name in copied and name not in members:
                members.add(name)
                pending.append(name)
    return members


def _used_by(references: dict[str, set[str]], members: set[str]) -> set[str]:
    return {name for member in members for name in references[member]}


def _ops_of(
    module: ModuleOp,
    defined: dict[str, func.FuncOp],
    members: set[str],
    used: set[str],
    homes: dict[str, int],
) -> list[Operation]:
    """The top-level ops of one module: its `members` (the homed ones
    themselves, copies of the others), declarations of the functions of other
    modules it calls, the globals it reads and every external declaration;
    none if it has no members."""
    if not members:
        return []
    ops: list[Operation] = []
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data in defined:
            name = op.sym_name.data
            if name in members:
                ops.append(op if name in homes else op.clone())
            elif name in used:
                ops.append(_declaration(op))
        elif not isinstance(op, memref.GlobalOp) or op.sym_name.data in used:
            ops.append(op.clone())
    return ops


def _detached(op: Operation) -> Operation:
    if op.parent is not None:
        op.detach()
    return op


def _declaration(function: func.FuncOp) -> func.FuncOp:
    """A declaration of `function` (defined in another module)."""
    function_type = function.function_type
    return func.FuncOp.external(
        function.sym_name.data, list(function_type.inputs.data), list(function_type.outputs.data)
    )
