"""Time parallel loops (not a test): dispatch cost and serial vs parallel kernels.

Run: python bench/time_parallel.py
1. An empty parallel region: `GOMP_parallel` called from JIT code, against a
   plain native call and a Python thread pool running one native chunk while the
   caller runs the other (cffi releases the GIL). Best and median of 3,000.
2. Kernel time (preallocated output, no argument checks) of `x*y` and of
   `tanh(x*y)*exp(-x)+sin(y)`, compiled serial and parallel, best of 3x200.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import cffi
import numpy as np
from bench_lowering import best_median, build, chain_body, vec

from tidu_mlir.dialects import prim
from tidu_mlir.lowering import jit, parallel
from tidu_mlir.lowering.backend import create_engine, optimize
from tidu_mlir.lowering.runtime import CompiledFunction

EMPTY_REGION = r"""
declare void @GOMP_parallel(ptr, ptr, i32, i32)
declare i32 @omp_get_thread_num()
define void @body(ptr %d) {
  %t = call i32 @omp_get_thread_num()
  %p = getelementptr i64, ptr %d, i32 %t
  store i64 1, ptr %p
  ret void
}
define void @region(ptr %d) {
  call void @GOMP_parallel(ptr @body, ptr %d, i32 0, i32 0)
  ret void
}
define void @plain(ptr %d) {
  store i64 1, ptr %d
  ret void
}
"""


def dispatch() -> None:
    parallel.libgomp_available()
    engine = create_engine(optimize(EMPTY_REGION))
    ffi = cffi.FFI()
    region, plain = (
        ffi.cast("void(*)(void*)", engine.get_function_address(name))
        for name in ("region", "plain")
    )
    data = ffi.new("int64_t[8]")
    pool = ThreadPoolExecutor(2)

    def pooled() -> None:
        future = pool.submit(plain, data)
        plain(data)
        future.result()

    for name, fn in [("plain call", plain), ("GOMP_parallel", region), ("thread pool", pooled)]:
        b, m = (
            best_median(lambda fn=fn: fn(data), 3000) if fn is not pooled else best_median(fn, 3000)
        )
        print(f"{name:14s} best {b * 1e6:6.2f} us  median {m * 1e6:6.2f} us")


def kernels() -> None:
    bodies = [("x*y", lambda x, y: [prim.MulOp(x, y)]), ("chain", chain_body)]
    pointer = jit._pointer_to  # pyright: ignore[reportPrivateUsage]
    for name, body in bodies:
        for n in [1024, 4096, 16384, 65536, 262144]:
            t = vec(n)
            functions = []  # kept alive: they own the machine code
            for min_work in (1 << 62, 0):
                parallel.PARALLEL_MIN_WORK = min_work
                functions.append(CompiledFunction(build(f"k{n}_{min_work}", [t, t], body)))
            x, y, out = np.random.rand(n), np.random.rand(n), np.empty(n)
            args = (pointer(x), pointer(y), pointer(out))
            serial, par = (
                min(
                    best_median(lambda k=f._native._native, a=args: k(*a), 200)[0] for _ in range(3)
                )  # pyright: ignore[reportPrivateUsage]
                for f in functions
            )
            print(f"{name:6s} n={n:7d} serial {serial * 1e6:8.1f} us  parallel {par * 1e6:8.1f} us")


if __name__ == "__main__":
    dispatch()
    kernels()
