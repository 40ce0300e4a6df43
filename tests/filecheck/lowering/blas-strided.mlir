// REQUIRES: openblas
// RUN: tidu-opt %s -p 'prim-bufferize,convert-prim-to-loops' | filecheck %s
// RUN: tidu-opt %s -p 'prim-bufferize,convert-prim-to-loops,parallelize-loops{min_work=0}' | filecheck %s --check-prefix=SERIAL

// Matrix products on BLAS from strided matrices (`lowering/blas.py`).
// @einsum is GradBench gmm's einsum("ijk,mik->mij"): the batch axis i sits in
// the middle of %c and of the transposed result, which the gemm of each
// batch reads and writes in place (leading dimension 128 = 4 x 32, pointers
// advanced by each buffer's batch stride), the transpose folded into the call
// (row-major C^T = B^T A^T: the operands swapped). In @copied the batch axis is
// innermost in both operands: no strided matrix reads them, so each is copied
// to a (batch, rows, cols) temporary (the product does 64 multiply-adds per
// element copied), then one gemm per batch. In a module calling OpenBLAS only
// loops of `parallel.NEXT_TO_OPENBLAS_MIN_WORK` run in parallel (its threads
// and libgomp's would take turns on the cores): the exp of 10,000 elements
// stays serial even with the general threshold at 0.

func.func @einsum(%ls: tensor<4x32x32xf64>, %c: tensor<64x4x32xf64>) -> tensor<64x4x32xf64> {
  %p = prim.dot_general %ls, %c, batch = [0] x [1], contract = [2] x [2] : (tensor<4x32x32xf64>, tensor<64x4x32xf64>) -> tensor<4x32x64xf64>
  %t = prim.transpose %p, permutation = [2, 0, 1] : tensor<4x32x64xf64> -> tensor<64x4x32xf64>
  func.return %t : tensor<64x4x32xf64>
}

func.func @copied(%a: tensor<32x32x4xf64>, %b: tensor<32x64x4xf64>, %x: tensor<10000xf64>) -> (tensor<4x32x64xf64>, tensor<10000xf64>) {
  %p = prim.dot_general %a, %b, batch = [2] x [2], contract = [1] x [0] : (tensor<32x32x4xf64>, tensor<32x64x4xf64>) -> tensor<4x32x64xf64>
  %e = prim.exp %x : tensor<10000xf64>
  func.return %p, %e : tensor<4x32x64xf64>, tensor<10000xf64>
}

// CHECK-LABEL: func.func @einsum(%ls: memref<4x32x32xf64>, %c: memref<64x4x32xf64>, %out0: memref<64x4x32xf64>)
// CHECK-NOT:     memref.alloc
// CHECK:         %[[C:.*]] = builtin.unrealized_conversion_cast %c
// CHECK:         %[[LS:.*]] = builtin.unrealized_conversion_cast %ls
// CHECK:         %[[OUT:.*]] = builtin.unrealized_conversion_cast %out0
// CHECK:         scf.for
// CHECK:           %[[A:.*]] = llvm.getelementptr %[[C]]
// CHECK:           %[[B:.*]] = llvm.getelementptr %[[LS]]
// CHECK:           %[[W:.*]] = llvm.getelementptr %[[OUT]]
// CHECK:           %[[LDA:.*]] = arith.constant 128 : i64
// CHECK:           %[[LDC:.*]] = arith.constant 128 : i64
// CHECK:           func.call @scipy_cblas_dgemm64_({{.*}}, %[[A]], %[[LDA]], %[[B]], %{{.*}}, %{{.*}}, %[[W]], %[[LDC]])
// CHECK-NOT:     scf.for
// CHECK:         func.return

// CHECK-LABEL: func.func @copied(
// CHECK:         %[[TA:.*]] = memref.alloc() {{.*}} : memref<4x32x32xf64>
// CHECK:           memref.load %a[%{{.*}}, %{{.*}}, %{{.*}}] : memref<32x32x4xf64>
// CHECK:           memref.store %{{.*}}, %[[TA]]
// CHECK:         %[[TB:.*]] = memref.alloc() {{.*}} : memref<4x32x64xf64>
// CHECK:           memref.store %{{.*}}, %[[TB]]
// CHECK:         builtin.unrealized_conversion_cast %[[TA]]
// CHECK:         builtin.unrealized_conversion_cast %[[TB]]
// CHECK:         scf.for
// CHECK:           func.call @scipy_cblas_dgemm64_(

// SERIAL-NOT: GOMP_parallel
