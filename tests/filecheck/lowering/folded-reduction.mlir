// RUN: tidu-opt %s -p prim-bufferize,convert-prim-to-loops | filecheck %s
// RUN: tidu-run %s --entry @f --arg '[[1.0, 2.0], [3.0, 4.0]]' | filecheck %s --check-prefix=OUT

// A sum of a whole array computed by a loop nest is folded by that nest: the
// accumulator is carried through both loops (iter_args) and stored once
// after them; the product is stored too, as it is returned.

func.func @f(%x: tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<f64>) {
  %p = prim.mul %x, %x : tensor<2x2xf64>
  %s = prim.reduce_sum %p, axes = [0, 1] : tensor<2x2xf64> -> tensor<f64>
  func.return %p, %s : tensor<2x2xf64>, tensor<f64>
}

// CHECK:      func.func @f(%x: memref<2x2xf64>, %out0: memref<2x2xf64>, %out1: memref<f64>)
// CHECK:        %[[TOTAL:.*]] = scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f64) {
// CHECK-NEXT:     %[[ROW:.*]] = scf.for {{.*}} iter_args(%[[INNER:.*]] = %[[ACC]]) -> (f64) {
// CHECK-NEXT:       memref.load %x
// CHECK-NEXT:       arith.mulf
// CHECK-NEXT:       memref.store {{.*}}, %out0
// CHECK-NEXT:       %[[NEXT:.*]] = arith.addf %[[INNER]], {{.*}} fastmath<reassoc,contract> : f64
// CHECK-NEXT:       scf.yield %[[NEXT]] : f64
// CHECK:          scf.yield %[[ROW]] : f64
// CHECK:        memref.store %[[TOTAL]], %out1[] : memref<f64>
// CHECK-NOT:    scf.for
// CHECK:        func.return

// OUT:      {{\[\[}}1, 4], [9, 16]]
// OUT-NEXT: 30
