"""The LLVM backend: an `llvm`-dialect module to optimized native code via llvmlite.

Steps: xDSL's `convert_module` builds llvmlite IR; llvmlite parses and verifies
it, optimizes it at O3 with the new pass manager for a target machine of the
host CPU (its name and features, so the loop vectorizer may use AVX2/AVX-512),
and MCJIT compiles it. Workarounds for xDSL 0.74's backend: intrinsics reach it
only as `llvm.call_intrinsic` with mangled names (its `llvm.intr.*` declarations
are unmangled), and the module must contain only `llvm.func`/`llvm.mlir.global`
(and `cg.graph` fragments, which are not translated), which `check_llvm_module`
enforces with a readable diagnostic.
"""

import functools
import threading
from collections.abc import Callable
from typing import NoReturn, ParamSpec, TypeVar

import llvmlite.binding as llvm
from llvmlite import ir
from llvmlite.binding import ffi
from llvmlite.binding.newpassmanagers import NewPassManager
from xdsl.backend.llvm.convert import convert_module
from xdsl.dialects import llvm as llvm_dialect
from xdsl.dialects.builtin import ModuleOp, UnrealizedConversionCastOp
from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException

from tidu_mlir.dialects.cg import GraphOp
from tidu_mlir.lowering.allocation_guard import ProgramGuards, add_allocation_guards
from tidu_mlir.lowering.vector_library import use_libmvec

_P = ParamSpec("_P")
_R = TypeVar("_R")

OPT_LEVEL = 3

UNROLL_THRESHOLD = 50
"""LLVM's cost cap on unrolling a loop (`-unroll-threshold`; O3's default is
300). Full unrolling of the many small fixed-count loops of tidu's kernels
was most of the LLVM time of small programs (GradBench llsq's first call
3.3 -> 0.8 s, gmm d=20 k=25 2.0 -> 1.3 s) and bought nothing at run time;
big loops keep the vectorizer's interleaving. The option is LLVM's, so it
holds for the whole process (any other llvmlite user in it included)."""

VECTORIZER_MIN_TRIP_COUNT = 8
"""Loops of a known trip count below this are vectorized only without a
scalar remainder (`-vectorizer-min-trip-count`; LLVM's default is 16). With
16, the many 10- to 15-element loops of small kernels were vectorized with
masked loads and stores on every iteration (AVX2 `vmaskmovpd`), slower than
a vector body and a scalar remainder: GradBench gmm d=10 k=25 n=1000 ran in
5.1 ms with 16, 3.8 ms with 8 (one thread); 4 made 5-element loops (det
5x5) twice as slow. Process-wide, like `UNROLL_THRESHOLD`."""

# LLVM's global state (target registry, option parsing) is not safe to
# initialize or use for compilation from several threads at once.
LLVM_LOCK = threading.RLock()


def new_target_machine() -> llvm.TargetMachine:
    """A new target machine for this CPU (name and features), at O3, for the JIT."""
    with LLVM_LOCK:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_default_triple()
        return target.create_target_machine(
            cpu=llvm.get_host_cpu_name(),
            features=llvm.get_host_cpu_features().flatten(),
            opt=OPT_LEVEL,
            codemodel="jitdefault",
        )


@functools.cache
def host_target_machine() -> llvm.TargetMachine:
    """The shared target machine used for the data layout and the optimizer.

    Never hand it to MCJIT: an engine takes ownership of its target machine and
    frees it with itself (a shared one would be freed twice).
    """
    return new_target_machine()


def check_llvm_module(module: ModuleOp) -> None:
    """Raise a diagnostic naming the first op that is not in the `llvm` dialect
    (or a function or global with an empty name, which LLVM cannot declare).

    Top-level `cg.graph` fragments are accepted and left alone: they are the AD
    source that materialized functions were made from, not code to translate.
    """
    for top in module.ops:
        if isinstance(top, GraphOp):
            continue
        if not isinstance(top, llvm_dialect.FuncOp | llvm_dialect.GlobalOp):
            _not_lowered(top)
        if not top.sym_name.data:
            raise DiagnosticException(
                f"cannot translate to LLVM IR: a '{top.name}' has an empty symbol name"
            )
        for op in top.walk():
            if isinstance(op, UnrealizedConversionCastOp) or not op.name.startswith("llvm."):
                _not_lowered(op)


def _not_lowered(op: Operation) -> NoReturn:
    raise DiagnosticException(
        f"cannot translate to LLVM IR: '{op.name}' was not lowered to the llvm "
        f"dialect (in {_enclosing_function(op)})"
    )


def _enclosing_function(op: Operation) -> str:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, llvm_dialect.FuncOp):
        parent = parent.parent_op()
    return f"@{parent.sym_name.data}" if parent is not None else "the module"


def translate_to_llvm_ir(module: ModuleOp, program: ProgramGuards | None = None) -> str:
    """LLVM IR text of an `llvm`-dialect module, for the host target (`cg.graph`
    fragments are skipped); `program` when it is one module of a program
    compiled in parts (`allocation_guard.ProgramGuards`)."""
    return str(_llvm_ir_module(module, program))


def _llvm_ir_module(module: ModuleOp, program: ProgramGuards | None) -> ir.Module:
    check_llvm_module(module)
    if any(isinstance(op, GraphOp) for op in module.ops):
        module = ModuleOp([op.clone() for op in module.ops if not isinstance(op, GraphOp)])
    tm = host_target_machine()
    ir_module = convert_module(
        module, fallback_target_triple=tm.triple, data_layout=str(tm.target_data)
    )
    # xDSL's translation drops the linkage (internal helpers may be deleted once
    # inlined) and `no_inline` (split-functions parts must stay apart).
    for op in module.ops:
        if not isinstance(op, llvm_dialect.FuncOp):
            continue
        if op.linkage.linkage.data == "internal":
            ir_module.get_global(op.sym_name.data).linkage = "internal"
        if op.no_inline is not None:
            ir_module.get_global(op.sym_name.data).attributes.add("noinline")
    add_allocation_guards(ir_module, program)
    return ir_module


def optimize(llvm_ir: str) -> llvm.ModuleRef:
    """Parse, verify and optimize LLVM IR at O3 for the host CPU, then map vector
    math intrinsics to libmvec (`vector_library.use_libmvec`)."""
    return optimize_with_text(llvm_ir)[0]


def optimize_with_text(llvm_ir: str) -> tuple[llvm.ModuleRef, str]:
    """`optimize`, and the text of the optimized module, which it prints anyway
    (for libmvec): printed once (a large module takes ~0.2 s)."""
    with LLVM_LOCK:
        return optimize_in_context(llvm_ir, llvm.get_global_context(), 0, concurrent=False)


def optimize_in_context(
    llvm_ir: str, context: llvm.ContextRef, slot: int, concurrent: bool
) -> tuple[llvm.ModuleRef, str]:
    """`optimize_with_text` in `context` with the pass builders of `slot`
    (`prepare_slots`). The caller holds `LLVM_LOCK`. With `concurrent`, other
    threads optimize at the same time, each in its own context and slot, and
    the pass pipeline runs without llvmlite's lock (`without_llvmlite_lock`)."""
    module = _optimized(llvm_ir, context, slot, concurrent, slp_vectorization=True)
    if not _verifies(module):
        # LLVM 22's SLP vectorizer can emit an instruction after one of its
        # uses (AVX-512 hosts, small unrolled buffers of a scatter's
        # gradient); codegen would abort the process on such a module.
        module.close()
        module = _optimized(llvm_ir, context, slot, concurrent, slp_vectorization=False)
        module.verify()
    text = str(module)
    vectorized = use_libmvec(text)
    if vectorized == text:
        return module, text
    module.close()
    module = llvm.parse_assembly(vectorized, context)
    module.verify()
    return module, vectorized


def prepare_slots(count: int) -> None:
    """Make the pass builders of slots 0..count-1 (LLVM's option parsing must
    not run while another thread optimizes). The caller holds `LLVM_LOCK`."""
    for slot in range(count):
        for slp_vectorization in (True, False):
            _pass_builder(slp_vectorization, slot)


def without_llvmlite_lock(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """An LLVM C function of llvmlite's, called without the lock llvmlite puts
    around every call (it serializes all of LLVM in the process). For the long
    calls on modules each in its own LLVM context, which LLVM runs safely
    side by side; like any ctypes call, it releases the GIL."""
    return function._cfn  # pyright: ignore[reportFunctionMemberAccess]


def _optimized(
    llvm_ir: str,
    context: llvm.ContextRef,
    slot: int,
    concurrent: bool,
    slp_vectorization: bool,
) -> llvm.ModuleRef:
    """`llvm_ir` parsed, verified and run through the O3 pipeline for the host."""
    tm = _slot_machine(slot)
    module = llvm.parse_assembly(llvm_ir, context)
    try:
        module.verify()
        module.triple = tm.triple
        module.data_layout = str(tm.target_data)
        _run_default_pipeline(module, slp_vectorization, slot, concurrent)
    except BaseException:
        module.close()  # before its context is: not when the traceback goes
        raise
    return module


def _verifies(module: llvm.ModuleRef) -> bool:
    """Whether `module` passes LLVM's verifier."""
    try:
        module.verify()
    except RuntimeError:
        return False
    return True


@functools.cache
def _slot_machine(slot: int) -> llvm.TargetMachine:
    """The target machine of the optimizer in `slot` (one per thread)."""
    return host_target_machine() if slot == 0 else new_target_machine()


@functools.cache
def _pass_builder(slp_vectorization: bool, slot: int) -> llvm.PassBuilder:
    """The O3 pass builder for the host target (unrolling capped at
    `UNROLL_THRESHOLD`, `VECTORIZER_MIN_TRIP_COUNT`) in `slot`, made once:
    every builder llvmlite creates keeps ~2 KB alive (its instrumentation
    callbacks)."""
    llvm.set_option("tidu", f"-unroll-threshold={UNROLL_THRESHOLD}")
    llvm.set_option("tidu", f"-vectorizer-min-trip-count={VECTORIZER_MIN_TRIP_COUNT}")
    tuning = llvm.create_pipeline_tuning_options(speed_level=OPT_LEVEL)
    tuning.loop_vectorization = True
    tuning.slp_vectorization = slp_vectorization
    return llvm.create_pass_builder(_slot_machine(slot), tuning)


def _run_default_pipeline(
    module: llvm.ModuleRef, slp_vectorization: bool, slot: int, concurrent: bool
) -> None:
    """Run the O3 pipeline on `module`, then free the pass manager: llvmlite
    0.50's `ModulePassManager` never frees itself (its `_dispose` resolves to
    `ObjectRef`'s, which does nothing), which kept ~70 KB per compilation."""
    builder = _pass_builder(slp_vectorization, slot)
    passes = builder.getModulePassManager()
    try:
        if concurrent:
            without_llvmlite_lock(ffi.lib.LLVMPY_RunNewModulePassManager)(passes, module, builder)
        else:
            passes.run(module, builder)
    finally:
        NewPassManager._dispose(passes)  # pyright: ignore[reportPrivateUsage]
        passes.detach()


def create_engine(module: llvm.ModuleRef) -> llvm.ExecutionEngine:
    """An MCJIT engine owning `module` and its own target machine, code finalized."""
    with LLVM_LOCK:
        engine = llvm.create_mcjit_compiler(module, new_target_machine())
        engine.finalize_object()
        engine.run_static_constructors()
        return engine
