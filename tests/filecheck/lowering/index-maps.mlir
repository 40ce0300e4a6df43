// RUN: tidu-opt %s -p prim-bufferize,convert-prim-to-loops | filecheck %s

// A determinant's minors as JAX writes them (`a[1:, kept]`, `moveaxis`, then
// a row picked and its axis of size 1 dropped), times `y`: the index maps
// (slice, gather, transpose, slice, reshape) are computed where the product
// reads them. ONE loop nest loads the index and the element of `x` it
// points to; no temporary, no other nest.

func.func @minors(%x: tensor<5x5xf64>, %kept: tensor<5x4xi64>, %y: tensor<5x4xf64>) -> tensor<5x4xf64> {
  %rows = prim.slice %x [1:5:1, 0:5:1] : tensor<5x5xf64> -> tensor<4x5xf64>
  %picked = prim.gather %rows, %kept, axis = 1 : tensor<4x5xf64>, tensor<5x4xi64> -> tensor<4x5x4xf64>
  %moved = prim.transpose %picked, permutation = [1, 0, 2] : tensor<4x5x4xf64> -> tensor<5x4x4xf64>
  %first = prim.slice %moved [0:5:1, 0:1:1, 0:4:1] : tensor<5x4x4xf64> -> tensor<5x1x4xf64>
  %flat = prim.reshape %first : tensor<5x1x4xf64> -> tensor<5x4xf64>
  %r = prim.mul %flat, %y : tensor<5x4xf64>
  func.return %r : tensor<5x4xf64>
}

// CHECK:      func.func @minors(%x: memref<5x5xf64>, %kept: memref<5x4xi64>, %y: memref<5x4xf64>, %out0: memref<5x4xf64>)
// CHECK-NOT:    memref.alloc
// CHECK:        scf.for %[[I:.*]] = 
// CHECK-NEXT:     scf.for %[[J:.*]] = 
// CHECK-NEXT:       memref.load %kept[%[[I]], %[[J]]]
// CHECK:            memref.load %x
// CHECK:            memref.load %y[%[[I]], %[[J]]]
// CHECK-NEXT:       arith.mulf
// CHECK-NEXT:       memref.store {{.*}}, %out0[%[[I]], %[[J]]]
// CHECK-NOT:    scf.for
// CHECK-NOT:    memref.alloc
// CHECK:        func.return
