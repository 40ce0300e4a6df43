"""Keep freed buffers in the process instead of returning them to the kernel.

glibc's `malloc` serves blocks above its mmap threshold (128 KiB at first, then
the largest block freed so far) with a fresh `mmap` and trims the heap top on
`free`, so every call of a compiled function page-faults and zero-fills its
large temporaries (and numpy its outputs) again: 55 % of the GMM gradient's
time in `bench/bench_api.py` (4.6 ms -> 0.5 ms with this setting). Blocks up to
32 MiB now come from the heap, and up to 512 MiB of free heap is kept. Set
`TIDU_MALLOC_TUNING=0` to leave glibc's defaults alone.
"""

from __future__ import annotations

import ctypes
import functools
import os

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 << 20
"""glibc's maximum (HEAP_MAX_SIZE / 2 on 64-bit); larger blocks are still mmapped."""
TRIM_THRESHOLD = 512 << 20


@functools.cache
def retain_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds once per process; False if not glibc
    or disabled."""
    if os.environ.get("TIDU_MALLOC_TUNING", "1") == "0":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
