// RUN: tidu-opt %s | tidu-opt | filecheck %s
// RUN: tidu-opt %s --print-op-generic | tidu-opt | filecheck %s
// The linear-algebra ops (prim/linalg.py) print and parse back in their custom
// syntax: flags as keywords, lu's three results inferred from the operand type.

// CHECK-LABEL: func.func @linalg
func.func @linalg(%a: tensor<2x3x3xf64>, %b: tensor<2x3x4xf64>, %z: tensor<3x3xcomplex<f32>>, %w: tensor<3x1xcomplex<f32>>) {
  // CHECK-NEXT: %0 = prim.cholesky %a : tensor<2x3x3xf64>
  %0 = prim.cholesky %a : tensor<2x3x3xf64>
  // CHECK-NEXT: %1 = prim.triangular_solve %0, %b, lower : (tensor<2x3x3xf64>, tensor<2x3x4xf64>) -> tensor<2x3x4xf64>
  %1 = prim.triangular_solve %0, %b, lower : (tensor<2x3x3xf64>, tensor<2x3x4xf64>) -> tensor<2x3x4xf64>
  // CHECK-NEXT: %2 = prim.triangular_solve %z, %w, transpose_a, conjugate_a, unit_diagonal {role = #cg.linearized<[fixed, active]>} : (tensor<3x3xcomplex<f32>>, tensor<3x1xcomplex<f32>>) -> tensor<3x1xcomplex<f32>>
  %2 = prim.triangular_solve %z, %w, transpose_a, conjugate_a, unit_diagonal {role = #cg.linearized<[fixed, active]>} : (tensor<3x3xcomplex<f32>>, tensor<3x1xcomplex<f32>>) -> tensor<3x1xcomplex<f32>>
  // CHECK-NEXT: %lu, %pivots, %perm = prim.lu %z : tensor<3x3xcomplex<f32>>
  %lu, %pivots, %perm = prim.lu %z : tensor<3x3xcomplex<f32>>
  func.return
}
