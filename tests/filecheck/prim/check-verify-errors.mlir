// RUN: tidu-opt %s --split-input-file --verify-diagnostics | filecheck %s
// The verifier rules of prim.check (prim/check.py): a 0-d boolean predicate.

func.func @not_scalar(%ok: tensor<3xi1>, %x: tensor<3xf64>) {
  %0 = "prim.check"(%ok, %x) <{message = "m"}> : (tensor<3xi1>, tensor<3xf64>) -> tensor<3xf64>
  func.return
}
// CHECK: error: ok shape [3] does not match expected []

// -----

func.func @not_boolean(%ok: tensor<f64>, %x: tensor<3xf64>) {
  %0 = "prim.check"(%ok, %x) <{message = "m"}> : (tensor<f64>, tensor<3xf64>) -> tensor<3xf64>
  func.return
}
// CHECK: error: ok must have a boolean element type (i1), got f64

// -----

func.func @result_type(%ok: tensor<i1>, %x: tensor<3xf64>) {
  %0 = "prim.check"(%ok, %x) <{message = "m"}> : (tensor<i1>, tensor<3xf64>) -> tensor<3xf32>
  func.return
}
// CHECK: error: result
