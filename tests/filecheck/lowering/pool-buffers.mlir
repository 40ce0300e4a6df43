// RUN: tidu-opt %s -p pool-buffers | filecheck %s
// RUN: tidu-opt %s -p 'pool-buffers{max_pool_bytes=100}' | filecheck %s --check-prefix=CAPPED
// RUN: tidu-opt %s -p pool-buffers,lower-scf-to-cf,convert-memref-to-llvm,convert-arith-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,reconcile-casts | filecheck %s --check-prefix=LLVM

// The temporaries allocated and freed at the top level of a function are
// carved out of one allocation, at offsets aligned to 64 bytes, freed before
// the return; one too large, one in a loop and one returned stay as they are.
// With max_pool_bytes=100 only the first two fit (0 and 64 + 8 bytes).

func.func @f(%out: memref<8xf64>) -> memref<4xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %v = arith.constant 1.0 : f64
  %a = memref.alloc() {alignment = 64 : i64} : memref<8xf64>
  %b = memref.alloc() {alignment = 64 : i64} : memref<f64>
  %c = memref.alloc() {alignment = 64 : i64} : memref<3xi64>
  %huge = memref.alloc() {alignment = 64 : i64} : memref<100000xf64>
  %returned = memref.alloc() : memref<4xf64>
  memref.store %v, %a[%c0] : memref<8xf64>
  memref.store %v, %b[] : memref<f64>
  memref.store %v, %huge[%c0] : memref<100000xf64>
  scf.for %i = %c0 to %c8 step %c1 {
    %inner = memref.alloc() : memref<2xf64>
    memref.store %v, %inner[%c0] : memref<2xf64>
    memref.dealloc %inner : memref<2xf64>
  }
  memref.dealloc %a : memref<8xf64>
  memref.dealloc %b : memref<f64>
  memref.dealloc %c : memref<3xi64>
  memref.dealloc %huge : memref<100000xf64>
  func.return %returned : memref<4xf64>
}

// CHECK-LABEL: func.func @f
// CHECK:         %[[POOL:.*]] = memref.alloc() {alignment = 64 : i64} : memref<152xi8>
// CHECK:         %[[AT0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %a = memref.view %[[POOL]][%[[AT0]]][] : memref<152xi8> to memref<8xf64>
// CHECK:         %[[AT64:.*]] = arith.constant 64 : index
// CHECK-NEXT:    %b = memref.view %[[POOL]][%[[AT64]]][] : memref<152xi8> to memref<f64>
// CHECK:         %[[AT128:.*]] = arith.constant 128 : index
// CHECK-NEXT:    %c = memref.view %[[POOL]][%[[AT128]]][] : memref<152xi8> to memref<3xi64>
// CHECK-NEXT:    %huge = memref.alloc() {alignment = 64 : i64} : memref<100000xf64>
// CHECK-NEXT:    %returned = memref.alloc() : memref<4xf64>
// CHECK:         scf.for
// CHECK:           %inner = memref.alloc() : memref<2xf64>
// CHECK:           memref.dealloc %inner
// CHECK-NOT:     memref.dealloc %a
// CHECK-NOT:     memref.dealloc %b
// CHECK-NOT:     memref.dealloc %c
// CHECK:         memref.dealloc %huge
// CHECK-NEXT:    memref.dealloc %[[POOL]] : memref<152xi8>
// CHECK-NEXT:    func.return %returned

// CAPPED-LABEL: func.func @f
// CAPPED:         memref.alloc() {alignment = 64 : i64} : memref<72xi8>
// CAPPED:         %c = memref.alloc() {alignment = 64 : i64} : memref<3xi64>
// CAPPED:         memref.dealloc %c

// Each view is the pool's pointer advanced by its offset in bytes.
// LLVM-LABEL: llvm.func @f
// LLVM:         %[[BASE:.*]] = llvm.call @tidu_malloc
// LLVM:         llvm.getelementptr inbounds %[[BASE]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
