// RUN: tidu-opt %s | tidu-opt | filecheck %s
// RUN: tidu-opt %s --print-op-generic | tidu-opt | filecheck %s
// The linear-algebra ops (prim/linalg.py) print and parse back in their custom
// syntax: flags as keywords, the results of lu and qr inferred from the operand
// type (qr: q m×k, r k×n, k = m with full_matrices, else min(m, n); eigh: the
// real eigenvalues [..., n] and the eigenvectors, the operand's type; svd: u,
// the real singular values [..., min(m, n)], vh).

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

// CHECK-LABEL: func.func @qr
func.func @qr(%tall: tensor<2x5x3xf64>, %wide: tensor<3x4xcomplex<f32>>) -> (tensor<2x5x3xf64>, tensor<2x3x3xf64>, tensor<2x5x5xf64>, tensor<2x5x3xf64>, tensor<3x3xcomplex<f32>>, tensor<3x4xcomplex<f32>>) {
  // CHECK-NEXT: %q, %r = prim.qr %tall : tensor<2x5x3xf64>
  %q, %r = prim.qr %tall : tensor<2x5x3xf64>
  // CHECK-NEXT: %q_1, %r_1 = prim.qr %tall, full_matrices : tensor<2x5x3xf64>
  %q_1, %r_1 = prim.qr %tall, full_matrices : tensor<2x5x3xf64>
  // CHECK-NEXT: %q_2, %r_2 = prim.qr %wide, full_matrices {role = #cg.linearized<[active]>} : tensor<3x4xcomplex<f32>>
  %q_2, %r_2 = prim.qr %wide, full_matrices {role = #cg.linearized<[active]>} : tensor<3x4xcomplex<f32>>
  // CHECK-NEXT: func.return %q, %r, %q_1, %r_1, %q_2, %r_2 : tensor<2x5x3xf64>, tensor<2x3x3xf64>, tensor<2x5x5xf64>, tensor<2x5x3xf64>, tensor<3x3xcomplex<f32>>, tensor<3x4xcomplex<f32>>
  func.return %q, %r, %q_1, %r_1, %q_2, %r_2 : tensor<2x5x3xf64>, tensor<2x3x3xf64>, tensor<2x5x5xf64>, tensor<2x5x3xf64>, tensor<3x3xcomplex<f32>>, tensor<3x4xcomplex<f32>>
}

// CHECK-LABEL: func.func @eigh
func.func @eigh(%a: tensor<2x3x3xcomplex<f64>>) -> (tensor<2x3xf64>, tensor<2x3x3xcomplex<f64>>) {
  // CHECK-NEXT: %w, %v = prim.eigh %a : tensor<2x3x3xcomplex<f64>>
  %w, %v = prim.eigh %a : tensor<2x3x3xcomplex<f64>>
  // CHECK-NEXT: func.return %w, %v : tensor<2x3xf64>, tensor<2x3x3xcomplex<f64>>
  func.return %w, %v : tensor<2x3xf64>, tensor<2x3x3xcomplex<f64>>
}

// CHECK-LABEL: func.func @svd
func.func @svd(%a: tensor<5x3xf32>, %z: tensor<2x3x4xcomplex<f64>>) -> (tensor<5x5xf32>, tensor<3xf32>, tensor<3x3xf32>, tensor<2x3x3xcomplex<f64>>, tensor<2x3xf64>, tensor<2x3x4xcomplex<f64>>) {
  // CHECK-NEXT: %u, %s, %vh = prim.svd %a, full_matrices : tensor<5x3xf32>
  %u, %s, %vh = prim.svd %a, full_matrices : tensor<5x3xf32>
  // CHECK-NEXT: %u_1, %s_1, %vh_1 = prim.svd %z : tensor<2x3x4xcomplex<f64>>
  %u_1, %s_1, %vh_1 = prim.svd %z : tensor<2x3x4xcomplex<f64>>
  // CHECK-NEXT: func.return %u, %s, %vh, %u_1, %s_1, %vh_1 : tensor<5x5xf32>, tensor<3xf32>, tensor<3x3xf32>, tensor<2x3x3xcomplex<f64>>, tensor<2x3xf64>, tensor<2x3x4xcomplex<f64>>
  func.return %u, %s, %vh, %u_1, %s_1, %vh_1 : tensor<5x5xf32>, tensor<3xf32>, tensor<3x3xf32>, tensor<2x3x3xcomplex<f64>>, tensor<2x3xf64>, tensor<2x3x4xcomplex<f64>>
}
