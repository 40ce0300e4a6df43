"""Functions shipped as IR text: `export(fn, *example_args)` traces `fn` (any
composition of transforms: `td.grad`, `td.vmap(...)`, ...) at the arguments'
signature into one materialized `func.func` and returns an `Exported`, a
plain picklable record: the function's text, the arguments' pytree structure
and specs, the arrays the function captured, the results' structure. No native
code and no Python code of `fn` travels: a process that unpickles it parses
the text and compiles it once (kept in a per-process table keyed by the text's
SHA-256, `compilation_count()`, and in the disk compilation cache), so its
thousandth call costs no compilation. This is what `tidu_mlir.dask` sends to
its workers, and what a pickled `td.jit`/`td.grad`/`td.vmap(...)` result
(`tidu_mlir.api.Transformed`) carries for each signature it has run.

The definitions live in `tidu_mlir.api`, which pickles its transform results
with them; this module is their public name.
"""

from __future__ import annotations

from tidu_mlir.api import COMPILED, Exported, Transformed, compilation_count, export

__all__ = ["COMPILED", "Exported", "Transformed", "compilation_count", "export"]
