// A value used before its definition in a func.func is refused when the input
// is verified, before any pass runs (it used to reach prim_to_loops).
// RUN: not tidu-opt %s -p lower-to-llvm 2>&1 | filecheck %s

func.func @f(%a: tensor<3xf64>) -> tensor<3xf64> {
  %1 = prim.add %0, %a : tensor<3xf64>
  %0 = prim.neg %a : tensor<3xf64>
  func.return %1 : tensor<3xf64>
}

// CHECK: use-before-def.mlir:6:3: error: operand #0 of 'prim.add' does not dominate its use (it is not defined before the use on every path to it)
// CHECK-NEXT: %1 = prim.add %0, %a : tensor<3xf64>
// CHECK-NEXT: ^
// CHECK-NOT: Traceback
