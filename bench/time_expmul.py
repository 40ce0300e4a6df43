"""Time `out = exp(a) * b` over 10**6 f64 values: the JIT against numpy (not a test).

Run: python bench/time_expmul.py
Prints the best and median of 50 calls each; the JIT figure includes argument
checks and allocating the output, like numpy's.
"""

import time

import numpy as np
from bench_lowering import best_median

from tidu_mlir.lowering.jit import compile_module

N = 1_000_000
T = f"memref<{N}xf64>"
SOURCE = f"""
func.func @expmul(%a: {T}, %b: {T}, %out: {T}) attributes {{tidu.num_outputs = 1 : i64}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant {N} : index
  scf.for %i = %c0 to %n step %c1 {{
    %x = memref.load %a[%i] : {T}
    %y = memref.load %b[%i] : {T}
    %e = math.exp %x : f64
    %r = arith.mulf %e, %y : f64
    memref.store %r, %out[%i] : {T}
  }}
  func.return
}}
"""


REPEAT = 50


def main() -> None:
    start = time.perf_counter()
    expmul = compile_module(SOURCE)["expmul"]
    compile_ms = (time.perf_counter() - start) * 1e3
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=N), rng.normal(size=N)
    np.testing.assert_allclose(expmul(a, b), np.exp(a) * b, rtol=1e-14)
    jit_best, jit_median = best_median(lambda: expmul(a, b), REPEAT)
    np_best, np_median = best_median(lambda: np.exp(a) * b, REPEAT)
    print(f"compile: {compile_ms:.0f} ms")
    print(f"tidu JIT: best {jit_best * 1e3:.2f} ms, median {jit_median * 1e3:.2f} ms")
    print(f"numpy:    best {np_best * 1e3:.2f} ms, median {np_median * 1e3:.2f} ms")
    print(f"ratio (numpy / JIT, best): {np_best / jit_best:.2f}")


if __name__ == "__main__":
    main()
