"""LLVM IR written straight from loop-level IR (`llvm_text`): the same numbers
as the `llvm`-dialect path on programs covering the loop-level ops, no
fallback on them, no xDSL op created, and a fallback on what it does not know."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from xdsl.ir import Operation
from xdsl.parser import Parser

import tidu_mlir as td
import tidu_mlir.numpy as tnp
from tidu_mlir.lowering import jit, llvm_text
from tidu_mlir.lowering.allocation_guard import CHECKED_MALLOC, guard_name
from tidu_mlir.lowering.jit import compile_module
from tidu_mlir.lowering.lower_to_llvm import lower_prim_to_loops
from tidu_mlir.registry import make_context

from .test_allocation_guard import function_bodies

RNG = np.random.default_rng(7)
A = RNG.standard_normal((6, 6)) + 6 * np.eye(6)
X = RNG.standard_normal(6)
BIG = RNG.standard_normal((300, 300))
INTS = RNG.integers(-50, 50, 12)


def loop(x: Any) -> Any:
    return td.lax.fori_loop(0, 5, lambda i, v: tnp.sin(v) * 1.1 + i, x)


def while_positive(x: Any) -> Any:
    return td.lax.while_loop(lambda v: tnp.sum(v) < 100.0, lambda v: v * 1.5 + 1.0, x)


def branch(x: Any) -> Any:
    return td.lax.cond(tnp.sum(x) > 0, lambda v: tnp.exp(v), lambda v: tnp.cos(v) * 2.0, x)


def scan_rows(a: Any) -> Any:
    carry, rows = td.lax.scan(lambda c, row: (c * 0.5 + row, tnp.tanh(c)), tnp.zeros(6), a)
    return carry + tnp.sum(rows, 0)


PROGRAMS: dict[str, tuple[Callable[..., Any], tuple[np.ndarray, ...]]] = {
    "elementwise math": (
        lambda x: (
            tnp.log1p(tnp.abs(x))
            + tnp.expm1(x) * tnp.arctan2(x, 2.0)
            + tnp.tanh(x)
            + tnp.sqrt(x * x + 1)
            + tnp.floor(x)
            + tnp.maximum(x, 0.5)
            + tnp.minimum(x, -0.5)
            + tnp.where(x > 0, tnp.sinh(x), tnp.cosh(x))
            + x**3
            + td.scipy.special.erf(x)
        ),
        (X,),
    ),
    "reductions and broadcasts": (lambda a: tnp.sum(a, 0) * tnp.max(a, 1) - tnp.mean(a), (A,)),
    "matmul and transpose": (lambda a, x: (a @ x) @ a.T + tnp.outer(x, x) @ a, (A, X)),
    "float32 and casts": (
        lambda x: (
            (tnp.exp(x.astype(np.float32)) * 2).astype(np.float64)
            + x.astype(np.int64).astype(np.float64)
        ),
        (X,),
    ),
    "integers": (
        lambda n: n * 3 + 7 - tnp.maximum(n, 5) + tnp.abs(n) + (n > 3) * n + tnp.sort(n),
        (INTS,),
    ),
    "sorting and cumsum": (lambda x: tnp.sort(x) + tnp.cumsum(x) + tnp.argmax(x), (X,)),
    "indexing": (lambda a: a[2:5, ::2].sum() + a[[0, 3, 5]].sum(0) + a[:, 1], (A,)),
    "fori_loop": (loop, (X,)),
    "while_loop": (while_positive, (X,)),
    "cond": (branch, (X,)),
    "scan": (scan_rows, (A,)),
    "complex": (lambda x: tnp.abs(tnp.exp(1j * x) * (x + 2j)) + tnp.real(tnp.sqrt(x + 0j)), (X,)),
    "linear algebra": (lambda a, x: tnp.linalg.solve(a, x) + tnp.linalg.det(a), (A, X)),
    "large parallel loops and heap buffers": (
        lambda b: tnp.sum(tnp.exp(tnp.sin(b)) * b, 0) + tnp.sum(b @ b, 1),
        (BIG,),
    ),
}


@pytest.fixture
def written(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The outcome of each `llvm_ir_text` call of the JIT: "written", or the
    reason it fell back; the compilation caches are emptied around the test."""
    outcomes: list[str] = []
    write = llvm_text.llvm_ir_text

    def recording(module: Any, program: Any = None) -> str:
        try:
            text = write(module, program)
        except llvm_text.NotWritten as reason:
            outcomes.append(str(reason))
            raise
        outcomes.append("written")
        return text

    monkeypatch.setattr(jit, "llvm_ir_text", recording)
    monkeypatch.setenv("TIDU_CACHE_DIR", "")
    td.clear_caches()
    yield outcomes
    td.config.reset("llvm_text")
    td.clear_caches()


def _values(f: Callable[..., Any], args: tuple[np.ndarray, ...], direct: bool) -> list[np.ndarray]:
    td.config.update("llvm_text", direct)
    td.clear_caches()
    out = td.jit(f)(*args)
    grads = (
        td.grad(lambda *a: tnp.sum(tnp.real(f(*a)) ** 2))(*args)
        if args[0].dtype.kind == "f"
        else ()
    )
    return [np.asarray(v) for v in (out, *(grads if isinstance(grads, tuple) else (grads,)))]


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_the_written_ir_computes_what_the_llvm_dialect_path_computes(
    name: str, written: list[str]
) -> None:
    f, args = PROGRAMS[name]
    direct = _values(f, args, direct=True)
    assert written and set(written) == {"written"}, written
    written.clear()
    through_dialect = _values(f, args, direct=False)
    assert not written, "with llvm_text off the writer is not called"
    for got, want in zip(direct, through_dialect, strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_a_failed_check_and_a_failed_allocation_still_raise(written: list[str]) -> None:
    singular = np.zeros((3, 3))
    with pytest.raises(np.linalg.LinAlgError):
        td.jit(tnp.linalg.inv)(singular)
    assert "written" in written


def test_writing_creates_no_xdsl_op(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _loop_level(lambda a: tnp.sum(tnp.exp(a) @ tnp.exp(a).T), np.ones((64, 64)))
    created: list[str] = []
    original = Operation.__post_init__

    def counting(self: Operation) -> None:
        created.append(self.name)
        original(self)

    monkeypatch.setattr(Operation, "__post_init__", counting)
    text = llvm_text.llvm_ir_text(module)
    assert not created
    bodies = function_bodies(text.replace('"', ""))
    assert {name for name, body in bodies.items() if "@malloc(" in body} == {CHECKED_MALLOC}
    external = [n for n, body in bodies.items() if not body.startswith("define internal")]
    assert [n for n in external if not n.endswith(".guarded")] == ["vjp"]
    assert guard_name("vjp") in bodies and "noinline" in bodies["vjp"].splitlines()[0]


def _loop_level(f: Callable[..., Any], *args: np.ndarray) -> Any:
    materialized = td.lower(lambda *a: f(*a), *args)
    module = Parser(make_context(), str(materialized["materialize"])).parse_module()
    lower_prim_to_loops(module, make_context())
    return module


BRANCHES = """
builtin.module {
  func.func @pick(%x: f64, %out: memref<f64>) attributes {tidu.num_outputs = 1 : i64} {
    %zero = arith.constant 0.0 : f64
    %positive = arith.cmpf ogt, %x, %zero : f64
    cf.cond_br %positive, ^yes, ^no
  ^yes:
    memref.store %x, %out[] : memref<f64>
    func.return
  ^no:
    memref.store %zero, %out[] : memref<f64>
    func.return
  }
}
"""


def test_an_op_the_writer_does_not_know_falls_back_to_the_llvm_dialect(
    written: list[str],
) -> None:
    compiled = compile_module(BRANCHES)
    assert written == ["@pick has several blocks"]
    assert compiled["pick"](2.5) == 2.5 and compiled["pick"](-1.0) == 0.0
