// RUN: tidu-opt %s | tidu-opt | filecheck %s
// RUN: tidu-opt %s --print-op-generic | tidu-opt | filecheck %s
// The ops along one axis and the rounding, sign and erf ops (prim/ordering.py,
// prim/elementwise.py) print and parse back in their custom syntax.

// CHECK-LABEL: func.func @ordering
func.func @ordering(%x: tensor<3x4xf64>, %n: tensor<5xi32>, %z: tensor<2x3xcomplex<f32>>) {
  // CHECK-NEXT: %0 = prim.argmax %x, axis = 1 : tensor<3x4xf64> -> tensor<3xi64>
  %0 = prim.argmax %x, axis = 1 : tensor<3x4xf64> -> tensor<3xi64>
  // CHECK-NEXT: %1 = prim.argmin %n, axis = 0 : tensor<5xi32> -> tensor<i64>
  %1 = prim.argmin %n, axis = 0 : tensor<5xi32> -> tensor<i64>
  // CHECK-NEXT: %2 = prim.cumsum %x, axis = 0 : tensor<3x4xf64>
  %2 = prim.cumsum %x, axis = 0 : tensor<3x4xf64>
  // CHECK-NEXT: %3 = prim.cumsum %z, axis = 1, reverse {role = #cg.linearized<[active]>} : tensor<2x3xcomplex<f32>>
  %3 = prim.cumsum %z, axis = 1, reverse {role = #cg.linearized<[active]>} : tensor<2x3xcomplex<f32>>
  // CHECK-NEXT: %4 = prim.argsort %n, axis = 0 : tensor<5xi32> -> tensor<5xi64>
  %4 = prim.argsort %n, axis = 0 : tensor<5xi32> -> tensor<5xi64>
  // CHECK-NEXT: %5 = prim.floor %x : tensor<3x4xf64>
  %5 = prim.floor %x : tensor<3x4xf64>
  // CHECK-NEXT: %6 = prim.ceil %x : tensor<3x4xf64>
  %6 = prim.ceil %x : tensor<3x4xf64>
  // CHECK-NEXT: %7 = prim.round %x : tensor<3x4xf64>
  %7 = prim.round %x : tensor<3x4xf64>
  // CHECK-NEXT: %8 = prim.sign %n : tensor<5xi32>
  %8 = prim.sign %n : tensor<5xi32>
  // CHECK-NEXT: %9 = prim.erf %x : tensor<3x4xf64>
  %9 = prim.erf %x : tensor<3x4xf64>
  func.return
}
