// RUN: tidu-opt %s -p 'prim-bufferize,convert-prim-to-loops,parallelize-loops{min_work=0}' | filecheck %s
// RUN: tidu-opt %s -p 'prim-bufferize,convert-prim-to-loops,parallelize-loops' | filecheck %s --check-prefix=SMALL

// With the work threshold at 0, the fused loop is outlined: a body over
// [begin, end) taking the buffers as arguments, a per-thread function that
// unpacks them from the context array and takes its share, and GOMP_parallel.
// The default threshold keeps a loop this small serial.

func.func @f(%x: tensor<1024xf64>, %y: tensor<1024xf64>) -> tensor<1024xf64> {
  %e = prim.exp %x : tensor<1024xf64>
  %m = prim.mul %e, %y : tensor<1024xf64>
  func.return %m : tensor<1024xf64>
}

// CHECK:      func.func @f(%x: memref<1024xf64>, %y: memref<1024xf64>, %out0: memref<1024xf64>)
// CHECK:        %[[CTX:.*]] = llvm.alloca %{{.*}} x i64
// CHECK-COUNT-3: llvm.store
// CHECK:        %[[FN:.*]] = llvm.mlir.addressof @f__par0 : !llvm.ptr
// CHECK:        llvm.call @GOMP_parallel(%[[FN]], %[[CTX]], %{{.*}}, %{{.*}})
// CHECK-NOT:    scf.for
// CHECK:        func.return
// CHECK:      func.func private @f__par0_body(%{{.*}}: memref<1024xf64>, %{{.*}}: memref<1024xf64>, %{{.*}}: memref<1024xf64>, %[[B:.*]]: index, %[[E:.*]]: index)
// CHECK:        scf.for %{{.*}} = %[[B]] to %[[E]]
// CHECK:          math.exp
// CHECK:      func.func private @f__par0(%{{.*}}: !llvm.ptr)
// CHECK:        llvm.call @omp_get_thread_num()
// CHECK:        llvm.call @omp_get_num_threads()
// CHECK:        func.call @f__par0_body(
// CHECK:      llvm.func @GOMP_parallel(!llvm.ptr, !llvm.ptr, i32, i32)

// SMALL-NOT:  GOMP_parallel
// SMALL:      scf.for
// SMALL-NOT:  GOMP_parallel
