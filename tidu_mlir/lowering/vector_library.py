"""Vector math through glibc's libmvec: a rewrite of the optimized LLVM IR.

The loop vectorizer turns `llvm.exp.f64` into `llvm.exp.v4f64`, but the code
generator then splits the vector call into four scalar libm calls. LLVM's
`-vector-library` option would map it to libmvec, but llvmlite's pass builder
does not apply it (measured: no effect). So after O3 every call of a vector
math intrinsic that libmvec implements (exp log sin cos tanh sinh cosh pow
atan2 on <2 x double>, <4 x double>, <4 x float>, <8 x float>) is renamed to
its vector-ABI symbol (`_ZGVdN4v_exp`: AVX2, 4 lanes; `_ZGVbN2v_exp`: SSE,
2 lanes), and libmvec is loaded into the process so MCJIT resolves the names.
256-bit variants are used only when the CPU has AVX2. Scalar remainder loops
keep calling libm. Accuracy: libmvec is documented to 4 ulp.
"""

from __future__ import annotations

import functools
import re

import llvmlite.binding as llvm

from tidu_mlir.lowering.common import load_system_library

_FUNCTIONS: dict[str, int] = {
    "exp": 1,
    "log": 1,
    "sin": 1,
    "cos": 1,
    "tanh": 1,
    "sinh": 1,
    "cosh": 1,
    "pow": 2,
    "atan2": 2,
}
"""libmvec functions by LLVM intrinsic name, with their number of arguments."""

# (lanes, element) -> ISA letter of the x86 vector function ABI
_VARIANTS: dict[tuple[int, str], str] = {
    (2, "f64"): "b",
    (4, "f32"): "b",
    (4, "f64"): "d",
    (8, "f32"): "d",
}

_INTRINSIC = re.compile(r"@llvm\.(" + "|".join(_FUNCTIONS) + r")\.v(\d+)(f32|f64)\b")


@functools.cache
def libmvec_available() -> bool:
    """Load libmvec into the process once; False when it is missing."""
    return load_system_library("mvec")


@functools.cache
def _has_avx2() -> bool:
    return bool(llvm.get_host_cpu_features().get("avx2", False))


def libmvec_name(function: str, lanes: int, element: str) -> str | None:
    """The libmvec symbol of a vector intrinsic, or None if there is none usable here."""
    isa = _VARIANTS.get((lanes, element))
    if isa is None or (isa == "d" and not _has_avx2()):
        return None
    suffix = "f" if element == "f32" else ""
    return f"_ZGV{isa}N{lanes}{'v' * _FUNCTIONS[function]}_{function}{suffix}"


def use_libmvec(llvm_ir: str) -> str:
    """`llvm_ir` with vector math intrinsic calls renamed to libmvec functions."""
    if "@llvm." not in llvm_ir or not libmvec_available():
        return llvm_ir

    def rename(match: re.Match[str]) -> str:
        name = libmvec_name(match.group(1), int(match.group(2)), match.group(3))
        return match.group(0) if name is None else "@" + name

    return _INTRINSIC.sub(rename, llvm_ir)
