"""Native code turns a failed `malloc` into `MemoryError` (numpy's behaviour for
an array too large), and the process stays usable. The failing runs happen in
a child process, so a regression (a NULL written through: SIGSEGV) fails the
test instead of killing the test run."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import numpy as np
from xdsl.parser import Parser

from tidu_mlir.lowering.allocation_guard import CHECKED_MALLOC, guard_name
from tidu_mlir.lowering.backend import translate_to_llvm_ir
from tidu_mlir.lowering.jit import compile_module
from tidu_mlir.lowering.lower_to_llvm import lower_prim_to_loops
from tidu_mlir.lowering.pipeline import lower_to_llvm_dialect
from tidu_mlir.registry import make_context

# Both matmul operands are materialized temporaries of 2**40 float64: malloc
# refuses them on any machine (8 TiB), where numpy raises MemoryError.
HUGE_TEMPORARY = """
import threading
import numpy as np
import tidu_mlir as td
import tidu_mlir.numpy as tnp

N = 1 << 20
huge = td.jit(lambda x, y: tnp.sum(tnp.broadcast_to(x, (N, N)) @ tnp.broadcast_to(y, (N, N))))
small = td.jit(lambda a: tnp.sum(tnp.exp(a) @ tnp.exp(a).T))
a = np.arange(9.0).reshape(3, 3) / 10

def expect_memory_error():
    try:
        huge(np.float64(1.0), np.float64(2.0))
    except MemoryError as error:
        return str(error)
    raise AssertionError("no MemoryError")

def run(results, rounds):
    for _ in range(rounds):
        results.append(expect_memory_error())
        results.append(float(small(a)))
"""


def run_child(code: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(HUGE_TEMPORARY) + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr[-2000:]}"
    return result.stdout.splitlines()


def test_a_temporary_too_large_for_malloc_raises_memory_error_and_the_process_goes_on() -> None:
    lines = run_child(
        """
        print(expect_memory_error())
        print(float(small(a)))
        print(expect_memory_error())
        """
    )
    expected = float(
        np.sum(
            np.exp(np.arange(9.0).reshape(3, 3) / 10) @ np.exp(np.arange(9.0).reshape(3, 3) / 10).T
        )
    )
    assert "malloc failed" in lines[0] and "@" in lines[0]
    assert np.isclose(float(lines[1]), expected)
    assert "malloc failed" in lines[2]


def test_threads_failing_and_succeeding_concurrently_each_get_their_own_outcome() -> None:
    lines = run_child(
        """
        outcomes = [[] for _ in range(6)]
        threads = [threading.Thread(target=run, args=(o, 5)) for o in outcomes]
        for t in threads: t.start()
        for t in threads: t.join()
        for o in outcomes:
            print(sum(isinstance(r, str) and "malloc failed" in r for r in o),
                  len({r for r in o if isinstance(r, float)}), len(o))
        """
    )
    assert lines == ["5 1 10"] * 6


SCALAR_RESULT = """
builtin.module {
  func.func @third(%a: memref<4xf64>) -> f64 {
    %t = memref.alloc() : memref<4xf64>
    "memref.copy"(%a, %t) : (memref<4xf64>, memref<4xf64>) -> ()
    %c = arith.constant 2 : index
    %v = memref.load %t[%c] : memref<4xf64>
    memref.dealloc %t : memref<4xf64>
    func.return %v : f64
  }
}
"""


def test_a_guarded_entry_returns_its_scalar_result_through_the_guard() -> None:
    module = compile_module(SCALAR_RESULT)
    assert module["third"](np.array([1.0, 2.0, 3.0, 4.0])) == 3.0
    assert guard_name("third") in (module.llvm_ir or "")


def function_bodies(llvm_ir: str) -> dict[str, str]:
    """Each defined function's name and body text in an LLVM IR module."""
    found = re.finditer(r'^define [^@]*@"?([\w.]+)"?\(.*?^}', llvm_ir, re.M | re.S)
    return {match.group(1): match.group(0) for match in found}


def test_every_allocation_goes_through_the_checked_malloc_and_every_entry_is_guarded() -> None:
    import tidu_mlir as td
    import tidu_mlir.numpy as tnp

    materialized = td.lower(lambda a: tnp.sum(tnp.exp(a) @ tnp.exp(a).T), np.ones((64, 64)))
    module = Parser(make_context(), str(materialized["materialize"])).parse_module()
    lower_prim_to_loops(module, make_context())
    lower_to_llvm_dialect(module)
    bodies = function_bodies(translate_to_llvm_ir(module).replace('"', ""))
    calling_malloc = {name for name, body in bodies.items() if "@malloc(" in body}
    assert calling_malloc == {CHECKED_MALLOC}
    assert any(f"@{CHECKED_MALLOC}(" in body for body in bodies.values())
    external = [n for n, body in bodies.items() if not body.startswith("define internal")]
    entries = [name for name in external if not name.endswith(".guarded")]
    assert entries == ["vjp"] and guard_name("vjp") in bodies
