// RUN: tidu-opt %s --split-input-file --verify-diagnostics | filecheck %s
// The verifiers of prim.scan and prim.cond: the regions' signatures against the
// operands and results.

func.func @carry_type(%c: tensor<f64>, %xs: tensor<4xf64>) {
  %r, %ys = prim.scan length 4 init(%c) xs(%xs) consts() : (tensor<f64>) (tensor<4xf64>) () -> (tensor<f64>) (tensor<4x2xf64>) {
  ^bb0(%a: tensor<f64>, %x: tensor<f64>):
    %b = prim.broadcast_in_dim %a, dims = [] : tensor<f64> -> tensor<2xf64>
    prim.yield %b, %b : tensor<2xf64>, tensor<2xf64>
  }
  func.return
}
// CHECK: control-verify-errors.mlir:6:3: error: carry returned by the body #0 has type tensor<2xf64>, expected tensor<f64>

// -----

func.func @xs_length(%c: tensor<f64>, %xs: tensor<3xf64>) {
  %r = prim.scan length 4 init(%c) xs(%xs) consts() : (tensor<f64>) (tensor<3xf64>) () -> (tensor<f64>) () {
  ^bb0(%a: tensor<f64>, %x: tensor<f64>):
    prim.yield %a : tensor<f64>
  }
  func.return
}
// CHECK: error: xs #0 of type tensor<3xf64> must have a leading axis of the scan length 4

// -----

func.func @arguments(%c: tensor<f64>, %k: tensor<2xf64>) {
  %r = prim.scan length 4 init(%c) xs() consts(%k) : (tensor<f64>) () (tensor<2xf64>) -> (tensor<f64>) () {
  ^bb0(%a: tensor<f64>):
    prim.yield %a : tensor<f64>
  }
  func.return
}
// CHECK: error: expected 2 body arguments, got 1

// -----

func.func @ys_type(%c: tensor<f64>) {
  %r, %ys = prim.scan length 4 init(%c) xs() consts() : (tensor<f64>) () () -> (tensor<f64>) (tensor<3xf64>) {
  ^bb0(%a: tensor<f64>):
    prim.yield %a, %a : tensor<f64>, tensor<f64>
  }
  func.return
}
// CHECK: error: ys result #0 has type tensor<3xf64>, expected tensor<4xf64>

// -----

func.func @isolated(%c: tensor<f64>) {
  %r = prim.scan length 2 init(%c) xs() consts() : (tensor<f64>) () () -> (tensor<f64>) () {
  ^bb0(%a: tensor<f64>):
    %b = prim.add %a, %c : tensor<f64>
    prim.yield %b : tensor<f64>
  }
  func.return
}
// CHECK: error: Operation using value defined out of its IsolatedFromAbove parent

// -----

func.func @yield_outside(%c: tensor<f64>) {
  prim.yield %c : tensor<f64>
  func.return
}
// CHECK: error: 'prim.yield' {{(expects parent op .*prim.scan.*|must be the last operation in its parent block)}}

// -----

func.func @branch_types(%p: tensor<i1>, %x: tensor<2xf64>) {
  %r = prim.cond %p, (%x) : tensor<i1>, (tensor<2xf64>) -> (tensor<2xf64>) {
  ^bb0(%a: tensor<2xf64>):
    prim.yield %a : tensor<2xf64>
  } else {
  ^bb0(%a: tensor<2xf64>):
    %s = prim.reduce_sum %a, axes = [0] : tensor<2xf64> -> tensor<f64>
    prim.yield %s : tensor<f64>
  }
  func.return
}
// CHECK: error: on_false result #0 has type tensor<f64>, expected tensor<2xf64>

// -----

func.func @predicate(%p: tensor<2xi1>, %x: tensor<2xf64>) {
  %r = prim.cond %p, (%x) : tensor<2xi1>, (tensor<2xf64>) -> (tensor<2xf64>) {
  ^bb0(%a: tensor<2xf64>):
    prim.yield %a : tensor<2xf64>
  } else {
  ^bb0(%a: tensor<2xf64>):
    prim.yield %a : tensor<2xf64>
  }
  func.return
}
// CHECK: error: the predicate must be a 0-d tensor<i1>, got tensor<2xi1>
