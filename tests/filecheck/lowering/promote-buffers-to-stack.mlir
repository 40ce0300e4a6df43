// RUN: tidu-opt %s -p promote-buffers-to-stack | filecheck %s
// RUN: tidu-opt %s -p 'promote-buffers-to-stack{max_buffers=1}' | filecheck %s --check-prefix=ONE

// Small temporaries allocated and freed at the top level of a function move to
// its frame; a large one, one allocated inside a loop, one returned and one
// never freed here stay on the heap. With max_buffers=1 only the first moves.

func.func @f(%out: memref<8xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %v = arith.constant 1.0 : f64
  %small = memref.alloc() {alignment = 64 : i64} : memref<8xf64>
  %scalar = memref.alloc() {alignment = 64 : i64} : memref<f64>
  %large = memref.alloc() {alignment = 64 : i64} : memref<64xf64>
  memref.store %v, %small[%c0] : memref<8xf64>
  memref.store %v, %scalar[] : memref<f64>
  memref.store %v, %large[%c0] : memref<64xf64>
  scf.for %i = %c0 to %c8 step %c1 {
    %inner = memref.alloc() : memref<2xf64>
    memref.store %v, %inner[%c0] : memref<2xf64>
    memref.dealloc %inner : memref<2xf64>
  }
  memref.dealloc %small : memref<8xf64>
  memref.dealloc %scalar : memref<f64>
  memref.dealloc %large : memref<64xf64>
  func.return
}

// CHECK-LABEL: func.func @f
// CHECK:         %small = memref.alloca() {alignment = 64 : i64} : memref<8xf64>
// CHECK:         %scalar = memref.alloca() {alignment = 64 : i64} : memref<f64>
// CHECK:         %large = memref.alloc() {alignment = 64 : i64} : memref<64xf64>
// CHECK:         scf.for
// CHECK:           %inner = memref.alloc() : memref<2xf64>
// CHECK:           memref.dealloc %inner
// CHECK-NOT:     memref.dealloc %small
// CHECK-NOT:     memref.dealloc %scalar
// CHECK:         memref.dealloc %large
// CHECK:         func.return

// ONE-LABEL: func.func @f
// ONE:         %small = memref.alloca()
// ONE:         %scalar = memref.alloc()
// ONE:         memref.dealloc %scalar

func.func @escaping(%flag: i1) -> memref<4xf64> {
  %returned = memref.alloc() : memref<4xf64>
  %kept = memref.alloc() : memref<4xf64>
  %maybe = memref.alloc() : memref<4xf64>
  scf.if %flag {
    memref.dealloc %maybe : memref<4xf64>
  }
  func.return %returned : memref<4xf64>
}

// A buffer returned, one not freed here and one freed in a nested region only
// outlive the frame or may: all three stay on the heap.
// CHECK-LABEL: func.func @escaping
// CHECK:         %returned = memref.alloc() : memref<4xf64>
// CHECK:         %kept = memref.alloc() : memref<4xf64>
// CHECK:         %maybe = memref.alloc() : memref<4xf64>
