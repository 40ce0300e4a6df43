// RUN: tidu-run %s --entry @f --arg '[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]' --arg '[2, -1, 7, -9]' --arg '-5' | filecheck %s
// RUN: tidu-opt %s -p 'prim-bufferize,convert-prim-to-loops' | filecheck %s --check-prefix=LOOPS

// The indexing ops compiled and run natively: negative indices count from the
// end once, out-of-range ones are clamped (2, 2, 2, 0 along an axis of 3);
// duplicates accumulate in scatter_add and the last one wins in scatter;
// dynamic_slice clamps its start (-5 -> 0).

func.func @f(%x: tensor<2x3xf64>, %i: tensor<4xi64>, %s: tensor<i32>) -> (tensor<2x4xf64>, tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x2xf64>, tensor<2x3xi32>) {
  %g = prim.gather %x, %i, axis = 1 : tensor<2x3xf64>, tensor<4xi64> -> tensor<2x4xf64>
  %a = prim.scatter_add %x, %i, %g, axis = 1 : tensor<2x3xf64>, tensor<4xi64>, tensor<2x4xf64> -> tensor<2x3xf64>
  %n = prim.neg %g : tensor<2x4xf64>
  %w = prim.scatter %x, %i, %n, axis = 1 : tensor<2x3xf64>, tensor<4xi64>, tensor<2x4xf64> -> tensor<2x3xf64>
  %d = prim.dynamic_slice %x [%s, %s], sizes = [2, 2] : tensor<2x3xf64>, tensor<i32>, tensor<i32> -> tensor<2x2xf64>
  %k = prim.iota dimension = 1 : tensor<2x3xi32>
  func.return %g, %a, %w, %d, %k : tensor<2x4xf64>, tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x2xf64>, tensor<2x3xi32>
}

// CHECK:      {{\[\[}}3, 3, 3, 1], [6, 6, 6, 4]]
// CHECK-NEXT: {{\[\[}}2, 2, 12], [8, 5, 24]]
// CHECK-NEXT: {{\[\[}}-1, 2, -3], [-4, 5, -6]]
// CHECK-NEXT: {{\[\[}}1, 2], [4, 5]]
// CHECK-NEXT: {{\[\[}}0, 1, 2], [0, 1, 2]]

// The index is loaded, cast to index, wrapped and clamped once per row:
// LOOPS:     memref.load
// LOOPS:     arith.index_cast
// LOOPS:     arith.cmpi slt
// LOOPS:     arith.select
// LOOPS:     arith.maxsi
// LOOPS:     arith.minsi
// LOOPS-NOT: prim.
