// RUN: tidu-opt %s --split-input-file --verify-diagnostics | filecheck %s
// The verifier rules of the ops along one axis (prim/ordering.py).

func.func @axis_out_of_range(%x: tensor<3x4xf64>) {
  %0 = prim.argmax %x, axis = 2 : tensor<3x4xf64> -> tensor<3xi64>
  func.return
}
// CHECK: error: axis 2 is out of range for rank 2

// -----

func.func @empty_axis(%x: tensor<3x0xf64>) {
  %0 = prim.argmin %x, axis = 1 : tensor<3x0xf64> -> tensor<3xi64>
  func.return
}
// CHECK: error: prim.argmin needs a non-empty axis: axis 1 of tensor<3x0xf64> has extent 0

// -----

func.func @index_type(%x: tensor<3x4xf64>) {
  %0 = prim.argmax %x, axis = 0 : tensor<3x4xf64> -> tensor<4xi32>
  func.return
}
// CHECK: error: result must have element type i64, got i32

// -----

func.func @complex_keys(%x: tensor<3xcomplex<f64>>) {
  %0 = prim.argsort %x, axis = 0 : tensor<3xcomplex<f64>> -> tensor<3xi64>
  func.return
}
// CHECK: error: operand must have a real or integer element type (f32, f64, i32, i64), got complex<f64>

// -----

func.func @argsort_shape(%x: tensor<3x4xf64>) {
  %0 = prim.argsort %x, axis = 1 : tensor<3x4xf64> -> tensor<3xi64>
  func.return
}
// CHECK: error: result shape [3] does not match expected [3, 4]

// -----

func.func @cumsum_bool(%x: tensor<3xi1>) {
  %0 = prim.cumsum %x, axis = 0 : tensor<3xi1>
  func.return
}
// CHECK: error: operand must have a numeric element type (f32, f64, complex<f32>, complex<f64>, i32, i64), got i1

// -----

func.func @floor_integer(%x: tensor<3xi64>) {
  %0 = prim.floor %x : tensor<3xi64>
  func.return
}
// CHECK: error: operand must have a real element type (f32, f64), got i64
