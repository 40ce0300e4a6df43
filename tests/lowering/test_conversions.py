"""Structural tests of the individual conversions to the `llvm` dialect."""

import numpy as np
from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.utils.exceptions import DiagnosticException

import tidu_mlir as td
from tidu_mlir.lowering import LOWERING_PASSES
from tidu_mlir.lowering.jit import parse_module
from tidu_mlir.lowering.pipeline import LLVM_LOWERING_PIPELINE, lower_to_llvm_dialect

SOURCE = """
func.func @f(%a: memref<2x3xf32>, %b: memref<6xf64>, %o: memref<6xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  scf.for %i = %c0 to %c6 step %c1 {
    %x = memref.load %b[%i] : memref<6xf64>
    %y = memref.load %a[%c1, %c0] : memref<2x3xf32>
    %e = math.exp %x : f64
    %g = math.exp %y : f32
    %h = arith.extf %g : f32 to f64
    %r = arith.addf %e, %h : f64
    memref.store %r, %o[%i] : memref<6xf64>
  }
  func.return
}
"""


def lowered_text() -> str:
    module = parse_module(SOURCE)
    lower_to_llvm_dialect(module)
    module.verify()
    return str(module)


def test_pipeline_reaches_pure_llvm_with_zero_index_constants():
    text = lowered_text()
    assert "llvm.mlir.constant(0) : i64" in text
    assert "index" not in text and "memref" not in text and "unrealized" not in text


def test_intrinsics_are_type_mangled():
    text = lowered_text()
    assert '"llvm.exp.f64"' in text and '"llvm.exp.f32"' in text


def test_memory_access_is_an_inbounds_gep_with_static_strides():
    text = lowered_text()
    assert "llvm.getelementptr inbounds %b[%" in text
    assert "llvm.mul" in text and "overflow<nsw>" in text
    assert "-> !llvm.ptr, f32" in text


def test_entry_point_pointers_are_noalias_and_loop_counter_is_i64():
    text = lowered_text()
    assert "llvm.func @f(%a: !llvm.ptr {llvm.noalias}" in text
    assert "(%i: i64)" in text


def test_pass_registry_names_match_the_pass_classes():
    for name, factory in LOWERING_PASSES.items():
        assert factory().name == name
        if name.endswith("-to-llvm") and name.startswith("convert-"):
            assert name in LLVM_LOWERING_PIPELINE


def test_func_to_llvm_declarations_and_calls():
    module = parse_module(
        """
        func.func private @ext(f64) -> f64
        func.func @g(%x: f64) -> f64 {
          %y = func.call @ext(%x) : (f64) -> f64
          func.return %y : f64
        }
        """
    )
    LOWERING_PASSES["convert-func-to-llvm"]()().apply(Context(), module)
    funcs = [op for op in module.ops if isinstance(op, llvm.FuncOp)]
    assert [f.sym_name.data for f in funcs] == ["ext", "g"]
    assert not funcs[0].body.blocks
    assert "llvm.call @ext(%x) : (f64) -> f64" in str(module)


def test_dynamic_memref_is_rejected_with_a_diagnostic():
    module = parse_module(
        """
        func.func @d(%a: memref<3x?xf64>, %i: index) -> f64 {
          %x = memref.load %a[%i, %i] : memref<3x?xf64>
          func.return %x : f64
        }
        """
    )
    try:
        lower_to_llvm_dialect(module)
    except DiagnosticException as error:
        assert "static strides and offset" in str(error)
    else:
        raise AssertionError("expected a diagnostic")


def test_constant_outputs_of_different_shapes_compile_together():
    """Each output copied from its own global: the globals' addresses reach
    `llvm.memcpy` as opaque pointers (xDSL typed them by the first global,
    `[2 x double]*`, and refused the second)."""
    first, second, third = td.jit(lambda x: [np.arange(2.0), np.eye(3), np.arange(7.0) * 2])(
        np.ones(2)
    )
    np.testing.assert_array_equal(first, np.arange(2.0))
    np.testing.assert_array_equal(second, np.eye(3))
    np.testing.assert_array_equal(third, np.arange(7.0) * 2)
