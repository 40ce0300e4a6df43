"""Failed allocations in native code become `MemoryError`, failed `prim.check`s
`RuntimeError`, not a crash.

Compiled code takes its temporaries from `tidu_malloc` (the lowering of
`memref.alloc`), which calls `malloc` and, when it returns NULL, jumps back
(`longjmp`) to the guard of the entry point that is running. Every externally
visible function `@f` of a module that allocates gets a guard `@"f.guarded"`:
it records a jump buffer for the calling thread (a pthread key, since MCJIT
has no thread-local storage), calls `@f`, and returns 0, or 1 if an allocation
failed; a scalar result of `@f` goes through a trailing pointer argument.
(more generally, the code of the jump that ended the call).
`JitFunction` calls the guard and raises `MemoryError` on 1.

A failed `prim.check` (run-time assertion) calls its failure function
`@tidu_check_failed_<hex of the message>` (declared by the lowering, defined
here), which jumps to the guard the same way with the code
`FIRST_CHECK + k`, `k` the message's index in the module's table
`@tidu.check_messages` (an array of pointers to NUL-terminated UTF-8
strings, an external global of the object code, so it is there as well in a
module loaded from the disk cache). `JitFunction` reads the message there and
raises `check_failure(message)` (`CheckFailedError`, or `LinAlgError`).

Temporaries allocated by the failed call before the failure are not freed
(there is no record of them); the process stays usable. Modules that neither
allocate nor check get no guard and are called directly.
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass

from llvmlite import ir
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr

CHECKED_MALLOC = "tidu_malloc"
"""What `memref.alloc` lowers to: `malloc` that jumps to the guard on failure."""

CHECKED_REALLOC = "tidu_realloc"
"""`realloc` that jumps to the guard on failure (growing a `prim.record_while`'s tapes)."""

KEY_GLOBAL = "tidu.jump_key"
"""The module global holding the process's pthread key (set at load)."""

FAILED = 1
"""What a guard returns when an allocation failed (0: the call completed)."""

FIRST_CHECK = 2
"""What a guard returns when the check of message index 0 failed (index k: + k)."""

CHECK_FAILED_PREFIX = "tidu_check_failed_"
"""The failure functions of `prim.check`: this prefix and the message in hex."""

MESSAGES_GLOBAL = "tidu.check_messages"
"""The module global listing the messages of its checks (pointers to C strings)."""

_JMP_BUF_BYTES = 512  # glibc's x86-64 / aarch64 jmp_buf is 200 / 312 bytes

_I32 = ir.IntType(32)
_I64 = ir.IntType(64)
_PTR = ir.PointerType()


def guard_name(function: str) -> str:
    """The name of the guard of the entry point `function`."""
    return f"{function}.guarded"


def check_failure_symbol(message: str) -> str:
    """The function a failed `prim.check` with `message` calls (declared by the
    lowering; `add_allocation_guards` defines it)."""
    return CHECK_FAILED_PREFIX + message.encode().hex()


def check_message(symbol: str) -> str:
    """The message of the failure function `symbol` (`check_failure_symbol`)."""
    return bytes.fromhex(symbol.removeprefix(CHECK_FAILED_PREFIX)).decode()


@dataclass(frozen=True)
class ProgramGuards:
    """What the modules of a program compiled in parts (`partition`) share:
    the names of its entry points, the failure functions of all its checks
    (their order gives their codes) and whether this module is the one
    defining the key and the message table (the first)."""

    entries: frozenset[str]
    failures: tuple[str, ...]
    defines_globals: bool = True

    @staticmethod
    def of(module: ModuleOp) -> ProgramGuards:
        """The entry points (public definitions) and failure functions
        (declarations) of a loop-level `module`, before it is cut."""
        entries = frozenset(f.sym_name.data for f in entry_points(module))
        return ProgramGuards(entries, tuple(sorted(check_failures(module))))


def entry_points(module: ModuleOp) -> list[func.FuncOp]:
    """The functions of `module` callable from outside: its public definitions."""
    return [
        op
        for op in module.ops
        if isinstance(op, func.FuncOp)
        and not op.is_declaration
        and op.sym_visibility != StringAttr("private")
    ]


def check_failures(module: ModuleOp) -> list[str]:
    """The failure functions of the `prim.check`s of a loop-level `module`
    (declared by the lowering), in module order."""
    return [
        op.sym_name.data
        for op in module.ops
        if isinstance(op, func.FuncOp) and op.sym_name.data.startswith(CHECK_FAILED_PREFIX)
    ]


def add_allocation_guards(
    module: ir.Module,
    program: ProgramGuards | None = None,
    defined_elsewhere: frozenset[str] = frozenset(),
) -> set[str]:
    """Define `tidu_malloc`, the checks' failure functions, their message table
    and a guard per external function, if `module` calls `tidu_malloc` or a
    failure function (they are declared then). For a module of a program
    compiled in parts (`program`), the guards are those of the program's entry
    points, the failure codes the program's, and only the first module
    defines the key and the table (the others declare the key). Functions
    declared here but in `defined_elsewhere` are definitions of the same
    module written apart (`llvm_text`). The names of the guarded entries
    (which must not be inlined into their guard: one copy of the body)."""
    checked = module.globals.get(CHECKED_MALLOC)
    regrow = module.globals.get(CHECKED_REALLOC)
    failures = sorted(
        (fn for fn in module.functions if fn.name.startswith(CHECK_FAILED_PREFIX)),
        key=lambda fn: fn.name,
    )

    def defined(fn: ir.Function) -> bool:
        return not fn.is_declaration or fn.name in defined_elsewhere

    if program is None:
        if not isinstance(checked, ir.Function) and not failures:
            return set()
        program = ProgramGuards(
            frozenset(
                fn.name
                for fn in module.functions
                if defined(fn) and fn.linkage not in ("internal", "private")
            ),
            tuple(fn.name for fn in failures),
        )
    key = ir.GlobalVariable(module, _I32, KEY_GLOBAL)
    if program.defines_globals:
        key.initializer = ir.Constant(_I32, 0)  # pyright: ignore[reportAttributeAccessIssue] - untyped in llvmlite
    if isinstance(checked, ir.Function):
        _define_checked_malloc(module, checked, key)
    if isinstance(regrow, ir.Function):
        _define_checked_realloc(module, regrow, key)
    _define_check_failures(module, failures, program, key)
    entries = [fn for fn in module.functions if fn.name in program.entries and defined(fn)]
    for entry in entries:
        entry.attributes.add("noinline")
        _define_guard(module, entry, key)
    return {entry.name for entry in entries}


def _declare(module: ir.Module, name: str, ret: ir.Type, *args: ir.Type) -> ir.Function:
    existing = module.globals.get(name)
    if isinstance(existing, ir.Function):
        return existing
    return ir.Function(module, ir.FunctionType(ret, args), name)


def _define_checked_malloc(module: ir.Module, fn: ir.Function, key: ir.GlobalVariable) -> None:
    malloc = _declare(module, "malloc", _PTR, _I64)
    fn.linkage = "internal"
    (size,) = fn.args
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    _return_unless_null(module, builder, builder.call(malloc, [size]), size, key)


def _define_checked_realloc(module: ir.Module, fn: ir.Function, key: ir.GlobalVariable) -> None:
    realloc = _declare(module, "realloc", _PTR, _PTR, _I64)
    fn.linkage = "internal"
    block, size = fn.args
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    _return_unless_null(module, builder, builder.call(realloc, [block, size]), size, key)


def _return_unless_null(
    module: ir.Module,
    builder: ir.IRBuilder,
    pointer: ir.Instruction,
    size: ir.Argument,
    key: ir.GlobalVariable,
) -> None:
    """Return `pointer`, an allocation of `size` bytes, or jump to the guard with
    `FAILED` if it is NULL for a non-zero size."""
    get_specific = _declare(module, "pthread_getspecific", _PTR, _I32)
    longjmp = _declare(module, "longjmp", ir.VoidType(), _PTR, _I32)
    longjmp.attributes.add("noreturn")
    is_null = builder.icmp_unsigned("==", pointer, ir.Constant(_PTR, None))
    failed = builder.and_(is_null, builder.icmp_unsigned("!=", size, ir.Constant(_I64, 0)))
    with builder.if_then(failed, likely=False):
        buffer = builder.call(get_specific, [builder.load(key)])
        builder.call(longjmp, [buffer, ir.Constant(_I32, FAILED)])
        builder.unreachable()
    builder.ret(pointer)


def _define_check_failures(
    module: ir.Module, failures: list[ir.Function], program: ProgramGuards, key: ir.GlobalVariable
) -> None:
    """Each failure function jumps to the guard with `FIRST_CHECK + its index`
    among the program's; the message table `MESSAGES_GLOBAL` lists the
    program's messages in that order."""
    if failures:
        _define_failure_jumps(module, failures, program.failures, key)
    if program.failures and program.defines_globals:
        _define_messages(module, program.failures)


def _define_failure_jumps(
    module: ir.Module, failures: list[ir.Function], order: tuple[str, ...], key: ir.GlobalVariable
) -> None:
    """The bodies of `failures`: a jump to the guard with `FIRST_CHECK` plus
    the function's index in `order`."""
    get_specific = _declare(module, "pthread_getspecific", _PTR, _I32)
    longjmp = _declare(module, "longjmp", ir.VoidType(), _PTR, _I32)
    longjmp.attributes.add("noreturn")
    codes = {name: FIRST_CHECK + index for index, name in enumerate(order)}
    for fn in failures:
        fn.linkage = "internal"
        fn.attributes.add("noreturn")
        fn.attributes.add("cold")
        builder = ir.IRBuilder(fn.append_basic_block("entry"))
        buffer = builder.call(get_specific, [builder.load(key)])
        builder.call(longjmp, [buffer, ir.Constant(_I32, codes[fn.name])])
        builder.unreachable()


def _define_messages(module: ir.Module, failures: tuple[str, ...]) -> None:
    """The table `MESSAGES_GLOBAL` of the messages of `failures`, in order."""
    texts: list[ir.Constant] = []
    for index, name in enumerate(failures):
        data = bytearray(check_message(name).encode() + b"\0")
        text_type = ir.ArrayType(ir.IntType(8), len(data))
        text = ir.GlobalVariable(module, text_type, f"tidu.check_message.{index}")
        text.initializer = ir.Constant(text_type, data)  # pyright: ignore[reportAttributeAccessIssue] - untyped in llvmlite
        text.global_constant = True
        text.linkage = "private"
        texts.append(text)  # pyright: ignore[reportArgumentType] - a global is a pointer constant
    table_type = ir.ArrayType(_PTR, len(texts))
    table = ir.GlobalVariable(module, table_type, MESSAGES_GLOBAL)
    table.initializer = ir.Constant(table_type, texts)  # pyright: ignore[reportAttributeAccessIssue] - untyped in llvmlite
    table.global_constant = True


def _define_guard(module: ir.Module, entry: ir.Function, key: ir.GlobalVariable) -> None:
    returns = entry.function_type.return_type
    result_slot = [] if isinstance(returns, ir.VoidType) else [_PTR]
    guard_type = ir.FunctionType(_I32, [*entry.function_type.args, *result_slot])
    guard = ir.Function(module, guard_type, guard_name(entry.name))
    get_specific = _declare(module, "pthread_getspecific", _PTR, _I32)
    set_specific = _declare(module, "pthread_setspecific", _I32, _I32, _PTR)
    setjmp = _declare(module, "_setjmp", _I32, _PTR)
    setjmp.attributes.add("returns_twice")

    builder = ir.IRBuilder(guard.append_basic_block("entry"))
    buffer = builder.alloca(ir.ArrayType(ir.IntType(8), _JMP_BUF_BYTES))
    buffer.align = 16  # pyright: ignore[reportAttributeAccessIssue] - untyped in llvmlite
    thread_key = builder.load(key)
    previous = builder.call(get_specific, [thread_key])
    builder.call(set_specific, [thread_key, buffer])
    jumped = builder.call(setjmp, [buffer])  # returns twice: the declaration says so
    completed = builder.icmp_signed("==", jumped, ir.Constant(_I32, 0))
    with builder.if_else(completed) as (run, failed):
        with run:
            value = builder.call(entry, guard.args[: len(entry.args)])
            if result_slot:
                builder.store(value, guard.args[-1])
        with failed:
            pass
    status = builder.select(completed, ir.Constant(_I32, 0), jumped)
    builder.call(set_specific, [thread_key, previous])
    builder.ret(status)


@functools.cache
def process_key() -> int:
    """The pthread key guards keep their jump buffers under, made once per process."""
    libc = ctypes.CDLL(None)
    key = ctypes.c_uint(0)
    if libc.pthread_key_create(ctypes.byref(key), None) != 0:
        raise MemoryError("pthread_key_create failed: no key for the allocation guards")
    return key.value


def install_key(global_address: int) -> None:
    """Give a loaded module (its `KEY_GLOBAL` at `global_address`) the process's key."""
    ctypes.c_uint.from_address(global_address).value = process_key()
