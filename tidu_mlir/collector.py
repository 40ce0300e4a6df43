"""Python's cyclic garbage collector paused while tidu builds large IR.

Tracing, the AD passes and the lowering build millions of small objects
(xDSL ops, values, attributes). Each collection the interpreter triggers
meanwhile walks the objects built so far, so that work grows faster than the
program: on a 4,000-step chain's gradient, tracing and AD took 7.4 s with the
collector and 4.8 s without (growth exponent 1.10 -> 1.0 from 2,000 steps),
printing its function for the cache key 2.4 s with it and 1.6 s without at
8,000 steps, and a 200-step chain's translation 1.5 s with it, 0.5 s
without. The garbage is collected once the collector is back on.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_pauses = 0
_lock = threading.Lock()


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """The collector off within the block (nestable, any thread; left off if
    the user turned it off)."""
    global _pauses
    with _lock:
        ours = _pauses > 0 or gc.isenabled()
        if ours:
            _pauses += 1
            gc.disable()
    try:
        yield
    finally:
        if ours:
            with _lock:
                _pauses -= 1
                if _pauses == 0:
                    gc.enable()
