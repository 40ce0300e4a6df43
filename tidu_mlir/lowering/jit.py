"""The JIT runtime: compile a module of buffer functions once, call them on numpy arrays.

Calling convention
------------------
A compiled entry point is a `func.func` whose arguments are, in order, its
*inputs* then its *outputs*:

    func.func @name(%in0: memref<3x4xf64>, ..., %out0: memref<4xf64>, ...)
        attributes {tidu.num_outputs = 1 : i64}

* The last `tidu.num_outputs` arguments (default 0) are outputs; they must be
  memrefs. Inputs are memrefs or scalars (`f32`, `f64`, `i1`..`i64`, `index`).
* Every memref has a static shape and the identity layout: a contiguous
  row-major (C order) buffer, passed as a bare pointer to its first element.
  Complex elements use numpy's interleaved layout (re, im) per element.
* After lowering the native symbol is `void @name(ptr in0, ..., ptr out0, ...)`
  (a scalar input is passed by value; a single scalar `func.return` value, if
  any, is the native return value). Pointer arguments are `noalias`: inputs are
  only read, outputs are only written, and outputs are fresh buffers.

`JitFunction.__call__` takes one numpy array per memref input (exact dtype and
shape, C-contiguous, aligned; a Python number per scalar input), allocates the
outputs, calls the native code through ctypes without the GIL, and returns the
outputs (then the scalar result): one value alone, several as a tuple, or None.
"""

import ctypes
import dataclasses
import hashlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, NoReturn, cast

import cffi
import llvmlite.binding as llvm_binding
import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, builtin, cf, func, llvm, math, memref, scf
from xdsl.dialects.builtin import (
    ComplexType,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
)
from xdsl.ir import Attribute
from xdsl.parser import Parser

from tidu_mlir import config
from tidu_mlir.collector import collection_paused
from tidu_mlir.config import LRUCache
from tidu_mlir.dialects.prim.check import check_failure
from tidu_mlir.lowering.allocation_guard import (
    FAILED,
    FIRST_CHECK,
    KEY_GLOBAL,
    MESSAGES_GLOBAL,
    ProgramGuards,
    check_failures,
    entry_points,
    guard_name,
    install_key,
)
from tidu_mlir.lowering.backend import (
    LLVM_LOCK,
    new_target_machine,
    optimize_with_text,
    translate_to_llvm_ir,
)
from tidu_mlir.lowering.llvm_text import NotWritten, llvm_ir_text
from tidu_mlir.lowering.llvm_threads import PipelinedCompilation, compile_threads, object_code
from tidu_mlir.lowering.partition import MAX_MODULES, split_module
from tidu_mlir.lowering.pipeline import lower_to_llvm_dialect

NUM_OUTPUTS_ATTR = "tidu.num_outputs"

_INT_DTYPES = {1: np.bool_, 8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}


def numpy_dtype(typ: Attribute) -> np.dtype[Any]:
    """The numpy dtype of an element type (complex numbers interleaved)."""
    match typ:
        case Float32Type():
            return np.dtype(np.float32)
        case Float64Type():
            return np.dtype(np.float64)
        case ComplexType():
            return np.dtype(np.complex64 if typ.element_type == builtin.f32 else np.complex128)
        case IndexType():
            return np.dtype(np.int64)
        case IntegerType() if typ.width.data in _INT_DTYPES:
            return np.dtype(_INT_DTYPES[typ.width.data])
        case _:
            raise TypeError(f"no numpy dtype for element type {typ}")


_C_SCALAR = {
    "f4": "float",
    "f8": "double",
    "b1": "_Bool",
    "i1": "int8_t",
    "i2": "int16_t",
    "i4": "int32_t",
    "i8": "int64_t",
}
"""C type names of scalar dtypes (`dtype.kind + itemsize`), for the cffi prototype."""

_ffi = cffi.FFI()
_pointer_to: Callable[[np.ndarray[Any, Any]], object] = cast(Any, _ffi.from_buffer)
"""A cffi pointer to an array's data (through the buffer protocol, no copy)."""


def _c_scalar(dtype: np.dtype[Any]) -> str:
    return _C_SCALAR[f"{dtype.kind}{dtype.itemsize}"]


@dataclass(frozen=True)
class BufferParam:
    """A memref argument: a C-contiguous array of `shape` and `dtype`."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype[Any]


@dataclass(frozen=True)
class ScalarParam:
    """A scalar argument or result."""

    name: str
    dtype: np.dtype[Any]


Param = BufferParam | ScalarParam


def _param(name: str, typ: Attribute) -> Param:
    if isinstance(typ, MemRefType):
        if typ.layout != builtin.NoneAttr():
            raise TypeError(f"argument {name!r}: only identity-layout memrefs can be passed")
        return BufferParam(name, typ.get_shape(), numpy_dtype(typ.element_type))
    return ScalarParam(name, numpy_dtype(typ))


@dataclass(frozen=True)
class Prototype:
    """The parts of a `func.func` its signature is read from (no body kept)."""

    name: str
    arg_names: tuple[str | None, ...]
    function_type: builtin.FunctionType
    num_outputs: int

    @staticmethod
    def of(op: func.FuncOp) -> "Prototype":
        attr = op.attributes.get(NUM_OUTPUTS_ATTR)
        num_outputs = attr.value.data if isinstance(attr, IntegerAttr) else 0
        names = tuple(a.name_hint for a in op.body.blocks[0].args) if op.body.blocks else ()
        return Prototype(op.sym_name.data, names, op.function_type, num_outputs)


@dataclass(frozen=True)
class Signature:
    """What a compiled function takes and gives."""

    name: str
    inputs: tuple[Param, ...]
    outputs: tuple[BufferParam, ...]
    result: ScalarParam | None

    @staticmethod
    def of(proto: Prototype, num_outputs: int | None = None) -> "Signature":
        """The signature of `proto`; `num_outputs` overrides its `tidu.num_outputs`."""
        name = proto.name
        types = proto.function_type.inputs.data
        n_out = proto.num_outputs if num_outputs is None else num_outputs
        n_in = len(types) - n_out
        if not 0 <= n_in <= len(types):
            raise ValueError(f"@{name}: {n_out} outputs but {len(types)} arguments")
        params = [_param(_arg_name(proto, i, n_in), typ) for i, typ in enumerate(types)]
        outputs = [p for p in params[n_in:] if isinstance(p, BufferParam)]
        if len(outputs) != n_out:
            raise TypeError(f"@{name}: outputs must be memrefs")
        results = proto.function_type.outputs.data
        if len(results) > 1 or any(isinstance(r, MemRefType) for r in results):
            raise TypeError(f"@{name}: return outputs through output memrefs")
        result = ScalarParam("result", numpy_dtype(results[0])) if results else None
        return Signature(name, tuple(params[:n_in]), tuple(outputs), result)

    def to_json(self) -> dict[str, Any]:
        """A JSON-able description (`from_json` reads it back): names, shapes, dtypes."""
        return {
            "name": self.name,
            "inputs": [_param_json(p) for p in self.inputs],
            "outputs": [_param_json(p) for p in self.outputs],
            "result": None if self.result is None else _param_json(self.result),
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> "Signature":
        """The signature `to_json` described; `ValueError` if it is malformed."""
        try:
            inputs = tuple(_param_from_json(p) for p in data["inputs"])
            outputs = tuple(_param_from_json(p) for p in data["outputs"])
            result = None if data["result"] is None else _param_from_json(data["result"])
            name = data["name"]
        except (KeyError, TypeError) as error:
            raise ValueError(f"malformed signature: {error!r}") from error
        if not isinstance(name, str) or not all(isinstance(p, BufferParam) for p in outputs):
            raise ValueError("malformed signature: bad name or output")
        if result is not None and not isinstance(result, ScalarParam):
            raise ValueError("malformed signature: the result must be a scalar")
        return Signature(name, inputs, cast(tuple[BufferParam, ...], outputs), result)

    def c_prototype(self, guarded: bool = False) -> str:
        """The C function-pointer type of the native entry point (cffi syntax), or
        of its guard (`allocation_guard`: an int status, the result through a
        trailing pointer)."""
        args = [
            "void *" if isinstance(p, BufferParam) else _c_scalar(p.dtype)
            for p in (*self.inputs, *self.outputs)
        ]
        restype = "void" if self.result is None else _c_scalar(self.result.dtype)
        if guarded:
            args += [] if self.result is None else [f"{restype} *"]
            restype = "int"
        return f"{restype} (*)({', '.join(args) or 'void'})"


def _param_json(param: Param) -> dict[str, Any]:
    if isinstance(param, BufferParam):
        return {"name": param.name, "shape": list(param.shape), "dtype": param.dtype.name}
    return {"name": param.name, "dtype": param.dtype.name}


_JSON_DTYPES = frozenset(
    ("float32", "float64", "complex64", "complex128", "bool", "int8", "int16", "int32", "int64")
)


def _param_from_json(data: dict[str, Any]) -> Param:
    name, dtype_name = data["name"], data["dtype"]
    if not isinstance(name, str) or dtype_name not in _JSON_DTYPES:
        raise ValueError(f"malformed parameter {data!r}")
    dtype = np.dtype(dtype_name)
    if "shape" not in data:
        return ScalarParam(name, dtype)
    shape = data["shape"]
    if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
        raise ValueError(f"malformed shape in {data!r}")
    return BufferParam(name, tuple(shape), dtype)


def _check_buffer(fn: str, index: int, param: BufferParam, value: object) -> object:
    """A cffi pointer to the data of `value`, after checking it fits `param`."""
    where = f"@{fn}: argument {index} ({param.name!r})"
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{where} must be a numpy.ndarray, got {type(value).__name__}")
    if value.dtype != param.dtype:
        raise TypeError(f"{where} must have dtype {param.dtype}, got {value.dtype}")
    if value.shape != param.shape:
        raise ValueError(f"{where} must have shape {param.shape}, got {value.shape}")
    if not (value.flags.c_contiguous and value.flags.aligned):
        raise ValueError(f"{where} must be C-contiguous and aligned (use numpy.ascontiguousarray)")
    return _pointer_to(value)


def _check_scalar(fn: str, index: int, param: ScalarParam, value: object) -> object:
    where = f"@{fn}: argument {index} ({param.name!r})"
    kind = param.dtype.kind
    allowed: tuple[type, ...] = (
        (int, float, np.integer, np.floating) if kind == "f" else (int, np.integer)
    )
    if isinstance(value, bool | np.bool_) and kind != "b":
        raise TypeError(f"{where} must be a {param.dtype} number, got bool")
    if kind != "b" and not isinstance(value, allowed):
        raise TypeError(f"{where} must be a {param.dtype} number, got {type(value).__name__}")
    return value


def _arg_name(proto: Prototype, index: int, n_in: int) -> str:
    if index < len(proto.arg_names) and (hint := proto.arg_names[index]) is not None:
        return hint
    return f"in{index}" if index < n_in else f"out{index - n_in}"


def _buffer_checker(fn: str, index: int, param: BufferParam) -> Callable[[object], object]:
    """The argument check of one buffer input: a fast path for an exact match
    (ndarray of the very dtype object and shape, C-contiguous and aligned), else
    the full check with its error message."""
    dtype, shape = param.dtype, param.shape

    def check(value: object) -> object:
        if (
            type(value) is np.ndarray
            and value.dtype is dtype
            and value.shape == shape
            and (flags := value.flags).c_contiguous
            and flags.aligned
        ):
            return _pointer_to(value)
        return _check_buffer(fn, index, param, value)

    return check


def _scalar_checker(fn: str, index: int, param: ScalarParam) -> Callable[[object], object]:
    """The argument check of one scalar input (a Python float passes at once)."""
    fast = float if param.dtype.kind == "f" else int

    def check(value: object) -> object:
        if type(value) is fast:
            return value
        return _check_scalar(fn, index, param, value)

    return check


class JitFunction:
    """A compiled entry point, callable on numpy arrays (see the module docstring).

    It holds its `CompiledModule`, so the machine code lives as long as it does.
    Calls share no mutable state and may run concurrently from several threads.
    The checks, the output allocations and the cffi function pointer are planned
    once here, so a call costs a few microseconds (cffi releases the GIL during
    the native call).
    """

    def __init__(
        self, owner: "CompiledModule", signature: Signature, address: int, guarded: bool = False
    ) -> None:
        self.owner = owner
        self.signature = signature
        self._guarded = guarded
        self._native = _ffi.cast(signature.c_prototype(guarded), address)
        self._checks = tuple(
            _buffer_checker(signature.name, i, p)
            if isinstance(p, BufferParam)
            else _scalar_checker(signature.name, i, p)
            for i, p in enumerate(signature.inputs)
        )
        self._outputs = tuple((p.shape, p.dtype) for p in signature.outputs)
        self._returns = len(self._outputs) + (signature.result is not None)

    def __call__(self, *args: object) -> Any:
        if len(args) != len(self._checks):
            self._wrong_count(len(args))
        native = [check(a) for check, a in zip(self._checks, args, strict=True)]
        outputs = [np.empty(shape, dtype) for shape, dtype in self._outputs]
        pointers = [_pointer_to(o) for o in outputs]
        if self._guarded:
            result = self._call_guarded(native, pointers)
        else:
            result = self._native(*native, *pointers)
        if self._returns == len(outputs):
            return None if not outputs else outputs[0] if len(outputs) == 1 else tuple(outputs)
        return result if not outputs else (*outputs, result)

    def _call_guarded(self, native: list[object], pointers: list[object]) -> object:
        """Call the entry's guard (`allocation_guard`); its scalar result, if any."""
        result = self.signature.result
        slot = [] if result is None else [_ffi.new(f"{_c_scalar(result.dtype)} *")]
        status = self._native(*native, *pointers, *slot)
        if status == FAILED:
            raise MemoryError(
                f"@{self.signature.name}: a temporary buffer could not be allocated "
                "(malloc failed); the arrays are too large for this machine's memory"
            )
        if status >= FIRST_CHECK:
            raise check_failure(self.owner.check_message(status - FIRST_CHECK))
        return slot[0][0] if slot else None

    def _wrong_count(self, got: int) -> NoReturn:
        sig = self.signature
        names = ", ".join(p.name for p in sig.inputs)
        raise TypeError(f"@{sig.name} takes {len(sig.inputs)} inputs ({names}), got {got}")


class CompiledModule:
    """A module lowered, optimized and loaded by MCJIT, with one engine it owns.

    The engine (and the machine code) is freed when this object and every
    `JitFunction` taken from it are gone. Code is generated by a throwaway
    MCJIT engine and its object code loaded into the engine kept: an engine
    that generated code keeps its codegen state alive (~700 KB for a small
    function), one that loaded an object ~50 KB.
    """

    llvm_ir: str | None
    """The optimized LLVM IR, for inspection and tests (None when loaded from
    object code, `CompiledModule.load`)."""

    objects: list[bytes] | None
    """The relocatable objects MCJIT generated (one, or one per part of a large
    module, `llvm_threads`), when asked for (`keep_object`)."""

    def __init__(
        self,
        module: ModuleOp,
        consume: bool = False,
        *,
        timings: dict[str, float] | None = None,
        keep_object: bool = False,
    ) -> None:
        """Compile `module`; with `consume` it is lowered in place instead of a copy
        (the caller gives it up: saves a clone of a large module). Each stage's
        time in seconds is added to `timings` (`llvm-text`, or `lower-to-llvm`
        and `translate`: `_llvm_ir`; `llvm-opt`, `codegen`); with `keep_object`
        the generated object code is kept in `objects` (for the disk cache)."""
        self.prototypes = _entry_prototypes(module)
        self._signatures: dict[str, Signature] = {}
        with collection_paused():
            self._compile(module, consume, timings, keep_object)

    def _compile(
        self,
        module: ModuleOp,
        consume: bool,
        timings: dict[str, float] | None,
        keep_object: bool,
    ) -> None:
        clock = time.perf_counter()
        lowered = module if consume else module.clone()
        threads = compile_threads()
        program = ProgramGuards.of(lowered)  # (before `split_module` makes some functions public)
        parts = split_module(lowered, MAX_MODULES) if threads > 1 else [lowered]
        if len(parts) == 1:
            text = _llvm_ir(lowered, None, timings)
            clock = time.perf_counter()
            optimized, self.llvm_ir = optimize_with_text(text)
            clock = lap(timings, "llvm-opt", clock)
            with LLVM_LOCK:
                objects = [object_code(optimized, new_target_machine(), concurrent=False)]
            lap(timings, "codegen", clock)
        else:
            objects = self._compile_pipelined(
                llvm_ir_of_parts(parts, program, timings), threads, timings
            )
        self._engine = _engine_from_objects(objects)
        self.objects = objects if keep_object else None

    @classmethod
    def of_modules(
        cls,
        modules: Iterable[ModuleOp],
        entry: ModuleOp,
        *,
        timings: dict[str, float] | None = None,
        keep_object: bool = False,
    ) -> "CompiledModule":
        """One program from loop-level `modules` and their `entry` module (the
        program's entry points, calling the others' public functions), each
        module's LLVM IR compiled in threads while the next one is made: a
        generator of `modules` can lower each one when it is asked for
        (`segment`). Consumes the modules; `timings` and `keep_object` as for
        the constructor."""
        self = cls.__new__(cls)
        self.prototypes = _entry_prototypes(entry)
        self._signatures = {}
        entries = frozenset(self.prototypes)
        failures: list[str] = []

        def texts() -> Iterator[str]:
            for module in modules:
                yield _llvm_ir(module, _program_part(module, frozenset(), failures), timings)
            program = _program_part(entry, entries, failures)
            yield _llvm_ir(entry, dataclasses.replace(program, defines_globals=True), timings)

        with collection_paused():
            objects = self._compile_pipelined(texts(), compile_threads(), timings)
            self._engine = _engine_from_objects(objects)
        self.objects = objects if keep_object else None
        return self

    def _compile_pipelined(
        self, texts: Iterable[str], threads: int, timings: dict[str, float] | None
    ) -> list[bytes]:
        """The objects of the LLVM IR `texts`, each made here (`texts` may lower
        and translate it when asked for) while LLVM compiles those before it
        in threads (`llvm_threads`). Timings: `llvm-opt` and `codegen` the
        threads' time (spent beside the lowering), `llvm-wait` the time LLVM
        took after the last text was made."""
        with PipelinedCompilation(threads) as compilation:
            for text in texts:
                compilation.submit(text)
            clock = time.perf_counter()
            compiled = compilation.finish()
            lap(timings, "llvm-wait", clock)
        if timings is not None:
            timings["llvm-opt"] = timings.get("llvm-opt", 0.0) + sum(p.optimizing for p in compiled)
            timings["codegen"] = timings.get("codegen", 0.0) + sum(p.generating for p in compiled)
        self.llvm_ir = "\n".join(part.llvm_ir for part in compiled)
        return [part.object_code for part in compiled]

    @classmethod
    def load(cls, objects: list[bytes], signatures: dict[str, Signature]) -> "CompiledModule":
        """A module from the objects MCJIT generated before and the signatures of
        its entry points: no lowering, optimization or codegen. Every external
        symbol they call must already be loaded in the process."""
        self = cls.__new__(cls)
        self.prototypes = {}
        self._signatures = dict(signatures)
        self.llvm_ir = None
        self.objects = objects
        self._engine = _engine_from_objects(objects)
        return self

    @property
    def function_names(self) -> list[str]:
        return list(self.prototypes or self._signatures)

    def signature(self, name: str, num_outputs: int | None = None) -> Signature:
        """The signature of the entry point `name` (see `function`)."""
        if name in self.prototypes:
            return Signature.of(self.prototypes[name], num_outputs)
        known = self._signatures.get(name)
        if known is None:
            raise KeyError(f"no function @{name} (have {', '.join(self.function_names)})")
        if num_outputs is not None and num_outputs != len(known.outputs):
            raise ValueError(f"@{name} was loaded with {len(known.outputs)} outputs")
        return known

    def function(self, name: str, num_outputs: int | None = None) -> JitFunction:
        """The entry point `name`; `num_outputs` overrides its `tidu.num_outputs`."""
        signature = self.signature(name, num_outputs)
        guard = self._engine.get_function_address(guard_name(name))
        if guard:
            return JitFunction(self, signature, guard, guarded=True)
        address = self._engine.get_function_address(name)
        if not address:
            raise KeyError(f"no native symbol @{name} in the compiled code")
        return JitFunction(self, signature, address)

    def __getitem__(self, name: str) -> JitFunction:
        return self.function(name)

    def check_message(self, index: int) -> str:
        """The message of the module's `prim.check` number `index` (its table
        `MESSAGES_GLOBAL` is in the object code, see `allocation_guard`)."""
        table = self._engine.get_global_value_address(MESSAGES_GLOBAL)
        if not table:
            return f"a run-time check failed (check #{index})"
        pointer = ctypes.c_void_p.from_address(table + index * ctypes.sizeof(ctypes.c_void_p))
        if pointer.value is None:
            return f"a run-time check failed (check #{index})"
        return ctypes.string_at(pointer.value).decode(errors="replace")


def _entry_prototypes(module: ModuleOp) -> dict[str, Prototype]:
    """The prototypes of the entry points of `module`: its public definitions."""
    return {op.sym_name.data: Prototype.of(op) for op in entry_points(module)}


def _program_part(module: ModuleOp, entries: frozenset[str], failures: list[str]) -> ProgramGuards:
    """What a module of a program compiled module by module shares with the
    others: the program's `entries` (guarded where defined) and its check
    failure functions numbered in order of first appearance, `failures`,
    which this module's own extend (the key and the message table are
    defined by the last module, which knows them all)."""
    failures.extend(name for name in check_failures(module) if name not in failures)
    return ProgramGuards(entries, tuple(failures), defines_globals=False)


def llvm_ir_of_parts(
    parts: list[ModuleOp], program: ProgramGuards, timings: dict[str, float] | None = None
) -> Iterator[str]:
    """The LLVM IR of each module of a program cut by `partition.split_module`
    (`program` taken before the cut), each lowered when the next is asked for
    (the first one defines the program's guard globals); the time of each
    step is added to `timings` (`_llvm_ir`'s stages)."""
    for index, part in enumerate(parts):
        yield _llvm_ir(part, dataclasses.replace(program, defines_globals=index == 0), timings)


def _llvm_ir(
    module: ModuleOp, program: ProgramGuards | None, timings: dict[str, float] | None
) -> str:
    """LLVM IR of a loop-level `module`, written directly (`llvm_text`, stage
    `llvm-text`) unless `td.config.llvm_text` is off or the writer does not
    know one of its ops; else lowered to the `llvm` dialect and translated
    (stages `lower-to-llvm`, `translate`)."""
    clock = time.perf_counter()
    if config.get("llvm_text"):
        try:
            text = llvm_ir_text(module, program)
        except NotWritten:
            clock = lap(timings, "llvm-text", clock)
        else:
            lap(timings, "llvm-text", clock)
            return text
    lower_to_llvm_dialect(module)
    clock = lap(timings, "lower-to-llvm", clock)
    text = translate_to_llvm_ir(module, program)
    lap(timings, "translate", clock)
    return text


def lap(timings: dict[str, float] | None, stage: str, start: float) -> float:
    """Add the time since `start` to `timings[stage]`; the current time."""
    now = time.perf_counter()
    if timings is not None:
        timings[stage] = timings.get(stage, 0.0) + now - start
    return now


def _engine_from_objects(objects: list[bytes]) -> llvm_binding.ExecutionEngine:
    """An MCJIT engine (with its own target machine) running `objects`, linked
    together (a module compiled in parts, `llvm_threads`)."""
    with LLVM_LOCK:
        machine = new_target_machine()
        empty = llvm_binding.parse_assembly("")
        empty.triple = machine.triple
        empty.data_layout = str(machine.target_data)
        engine = llvm_binding.create_mcjit_compiler(empty, machine)
        for code in objects:
            # The engine takes the object's buffer over (llvmlite moves the binary).
            engine.add_object_file(llvm_binding.ObjectFileRef.from_data(code))
        engine.finalize_object()
        engine.run_static_constructors()
        key_address = engine.get_global_value_address(KEY_GLOBAL)
        if key_address:
            install_key(key_address)
        return engine


_DIALECTS = (
    builtin.Builtin,
    func.Func,
    scf.Scf,
    cf.Cf,
    arith.Arith,
    math.Math,
    memref.MemRef,
    llvm.LLVM,
)

_cache: LRUCache[str, CompiledModule] = LRUCache("compile_cache_size")
_cache_lock = threading.Lock()


def parse_module(text: str) -> ModuleOp:
    """Parse a module of the dialects the lowering accepts."""
    ctx = Context()
    for dialect in _DIALECTS:
        ctx.load_dialect(dialect)
    return Parser(ctx, text).parse_module()


def _key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def compile_module(module: ModuleOp | str) -> CompiledModule:
    """Compile `module` (IR object or text), or return the cached result for the same module.

    The cache key is the SHA-256 of the printed module (text input is also
    remembered verbatim, so a repeated string is not parsed again); beyond
    `td.config.compile_cache_size` entries the least recently used is dropped
    (its code lives on while a `JitFunction` uses it).
    """
    with _cache_lock:
        raw_key = _key(module) if isinstance(module, str) else None
        if raw_key is not None and (hit := _cache.get(raw_key)) is not None:
            return hit
        ir = parse_module(module) if isinstance(module, str) else module
        key = _key(str(ir))
        if (compiled := _cache.get(key)) is None:
            compiled = CompiledModule(ir)
            _cache[key] = compiled
        if raw_key is not None:
            _cache[raw_key] = compiled
        return compiled


def clear_cache() -> None:
    """Forget every cached compiled module."""
    _cache.clear()
