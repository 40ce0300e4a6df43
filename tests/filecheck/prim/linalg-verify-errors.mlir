// RUN: tidu-opt %s --split-input-file --verify-diagnostics | filecheck %s
// The verifier rules of the linear-algebra ops (prim/linalg.py, prim/spectral.py).

func.func @not_square(%a: tensor<2x3xf64>) {
  %0 = prim.cholesky %a : tensor<2x3xf64>
  func.return
}
// CHECK: error: operand must be a (batch of) square matrices [..., n, n], got shape [2, 3]

// -----

func.func @rhs_rows(%a: tensor<3x3xf64>, %b: tensor<4x2xf64>) {
  %0 = prim.triangular_solve %a, %b, lower : (tensor<3x3xf64>, tensor<4x2xf64>) -> tensor<4x2xf64>
  func.return
}
// CHECK: error: b shape [4, 2] does not match a shape [3, 3]: expected [3, k]

// -----

func.func @batch_mismatch(%a: tensor<2x3x3xf64>, %b: tensor<5x3x1xf64>) {
  %0 = prim.triangular_solve %a, %b : (tensor<2x3x3xf64>, tensor<5x3x1xf64>) -> tensor<5x3x1xf64>
  func.return
}
// CHECK: error: b shape [5, 3, 1] does not match a shape [2, 3, 3]: expected [2, 3, k]

// -----

func.func @conjugate_alone(%a: tensor<3x3xcomplex<f64>>, %b: tensor<3x1xcomplex<f64>>) {
  %0 = prim.triangular_solve %a, %b, conjugate_a : (tensor<3x3xcomplex<f64>>, tensor<3x1xcomplex<f64>>) -> tensor<3x1xcomplex<f64>>
  func.return
}
// CHECK: error: conjugate_a needs transpose_a (op(a) = aᴴ)

// -----

func.func @integer_matrix(%a: tensor<3x3xi32>) {
  %0 = prim.cholesky %a : tensor<3x3xi32>
  func.return
}
// CHECK: error: operand must have a float or complex element type

// -----

func.func @qr_of_a_vector(%a: tensor<3xf64>) {
  %q, %r = "prim.qr"(%a) : (tensor<3xf64>) -> (tensor<3xf64>, tensor<3xf64>)
  func.return
}
// CHECK: error: operand must be a (batch of) matrices [..., m, n], got shape [3]

// -----

func.func @qr_reduced_shapes_with_full_matrices(%a: tensor<5x3xf64>) {
  %q, %r = "prim.qr"(%a) <{full_matrices}> : (tensor<5x3xf64>) -> (tensor<5x3xf64>, tensor<3x3xf64>)
  func.return
}
// CHECK: error: result #0 type tensor<5x3xf64> must equal tensor<5x5xf64>

// -----

func.func @eigh_not_square(%a: tensor<3x4xf32>) {
  %w, %v = "prim.eigh"(%a) : (tensor<3x4xf32>) -> (tensor<3xf32>, tensor<3x4xf32>)
  func.return
}
// CHECK: error: operand must be a (batch of) square matrices [..., n, n], got shape [3, 4]

// -----

func.func @eigh_complex_eigenvalues(%a: tensor<3x3xcomplex<f32>>) {
  %w, %v = "prim.eigh"(%a) : (tensor<3x3xcomplex<f32>>) -> (tensor<3xcomplex<f32>>, tensor<3x3xcomplex<f32>>)
  func.return
}
// CHECK: error: result #0 type tensor<3xcomplex<f32>> must equal tensor<3xf32>

// -----

func.func @svd_reduced_shapes_with_full_matrices(%a: tensor<3x5xf64>) {
  %u, %s, %vh = "prim.svd"(%a) <{full_matrices}> : (tensor<3x5xf64>) -> (tensor<3x3xf64>, tensor<3xf64>, tensor<3x5xf64>)
  func.return
}
// CHECK: error: result #2 type tensor<3x5xf64> must equal tensor<5x5xf64>
