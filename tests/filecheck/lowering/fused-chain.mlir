// RUN: tidu-opt %s -p prim-bufferize,convert-prim-to-loops | filecheck %s
// RUN: tidu-opt %s -p lower-to-llvm | filecheck %s --check-prefix=LLVM

// A chain of elementwise ops with a broadcast operand and a value used twice
// becomes ONE loop nest: each input loaded once (the broadcast's where the
// add reads it), one store per result.

func.func @chain(%x: tensor<8x4xf64>, %y: tensor<8x4xf64>, %b: tensor<4xf64>) -> tensor<8x4xf64> {
  %bb = prim.broadcast_in_dim %b, dims = [1] : tensor<4xf64> -> tensor<8x4xf64>
  %s = prim.mul %x, %y : tensor<8x4xf64>
  %e = prim.exp %s : tensor<8x4xf64>
  %t = prim.add %e, %bb : tensor<8x4xf64>
  %u = prim.mul %t, %e : tensor<8x4xf64>
  %v = prim.sin %u : tensor<8x4xf64>
  func.return %v : tensor<8x4xf64>
}

// CHECK:      func.func @chain(%x: memref<8x4xf64>, %y: memref<8x4xf64>, %b: memref<4xf64>, %out0: memref<8x4xf64>) attributes {tidu.num_outputs = 1 : i64} {
// CHECK:        scf.for
// CHECK-NEXT:     scf.for
// CHECK-NEXT:       memref.load %x
// CHECK-NEXT:       memref.load %y
// CHECK-NEXT:       arith.mulf
// CHECK-NEXT:       math.exp
// CHECK-NEXT:       memref.load %b
// CHECK-NEXT:       arith.addf
// CHECK-NEXT:       arith.mulf
// CHECK-NEXT:       math.sin
// CHECK-NEXT:       memref.store {{.*}}, %out0
// CHECK-NOT:    scf.for
// CHECK-NOT:    memref.alloc
// CHECK:        func.return

// Two loops (the 2-d nest), so exactly two conditional back-edge branches.
// LLVM:     llvm.func @chain
// LLVM-COUNT-2: llvm.cond_br
// LLVM-NOT: llvm.cond_br
