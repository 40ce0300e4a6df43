// RUN: tidu-opt %s --split-input-file --verify-diagnostics | filecheck %s
// The verifier rules of the indexing ops (more in tests/dialects/test_prim_indexing.py).

func.func @float_indices(%x: tensor<3x4xf64>, %i: tensor<5xf64>) {
  %0 = prim.gather %x, %i, axis = 1 : tensor<3x4xf64>, tensor<5xf64> -> tensor<3x5xf64>
  func.return
}
// CHECK: error: indices must have {{an?}} integer element type (i32, i64), got f64

// -----

func.func @gather_axis(%x: tensor<3x4xf64>, %i: tensor<5xi64>) {
  %0 = prim.gather %x, %i, axis = 2 : tensor<3x4xf64>, tensor<5xi64> -> tensor<3x5xf64>
  func.return
}
// CHECK: error: axis 2 is out of range for rank 2

// -----

func.func @scatter_updates(%x: tensor<3x4xf64>, %i: tensor<5xi64>, %u: tensor<5x4xf64>) {
  %0 = prim.scatter_add %x, %i, %u, axis = 1 : tensor<3x4xf64>, tensor<5xi64>, tensor<5x4xf64> -> tensor<3x4xf64>
  func.return
}
// CHECK: error: updates shape [5, 4] does not match expected [3, 5]

// -----

func.func @start_rank(%x: tensor<3x4xf64>, %s: tensor<1xi64>, %t: tensor<i64>) {
  %0 = prim.dynamic_slice %x [%s, %t], sizes = [1, 1] : tensor<3x4xf64>, tensor<1xi64>, tensor<i64> -> tensor<1x1xf64>
  func.return
}
// CHECK: error: start #0 must be a 0-d tensor, got tensor<1xi64>

// -----

func.func @update_too_big(%x: tensor<3x4xf64>, %u: tensor<3x5xf64>, %s: tensor<i32>) {
  %0 = prim.dynamic_update_slice %x, %u [%s, %s] : tensor<3x4xf64>, tensor<3x5xf64>, tensor<i32>, tensor<i32> -> tensor<3x4xf64>
  func.return
}
// CHECK: error: update shape [3, 5] does not fit in operand shape [3, 4]
