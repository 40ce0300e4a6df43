// RUN: tidu-opt %s -p prim-bufferize,convert-prim-to-loops | filecheck %s
// RUN: tidu-opt %s -p lower-to-llvm -t llvm | filecheck %s --check-prefix=LLVM
// RUN: tidu-run %s --entry @f --arg 1.0 --arg '[1.0, 2.0, 3.0, 4.0, 5.0]' --arg '[0.5, 0.25, 0.25]' | filecheck %s --check-prefix=OUT

// A reverse scan is ONE loop calling its body, outlined into a private
// no_inline function (compiled once, whatever the length). The carry swaps
// between two buffers at each step; with an odd length it starts in the spare
// one and ends in the output buffer %out0. Slice i of xs and ys is a pointer
// computed in the loop (getelementptr by i).

func.func @f(%c0: tensor<f64>, %xs: tensor<5xf64>, %w: tensor<3xf64>) -> (tensor<f64>, tensor<5xf64>) {
  %c, %ys = prim.scan length 5 reverse init(%c0) xs(%xs) consts(%w) : (tensor<f64>) (tensor<5xf64>) (tensor<3xf64>) -> (tensor<f64>) (tensor<5xf64>) {
  ^bb0(%a: tensor<f64>, %x: tensor<f64>, %v: tensor<3xf64>):
    %s = prim.reduce_sum %v, axes = [0] : tensor<3xf64> -> tensor<f64>
    %m = prim.mul %a, %x : tensor<f64>
    %n = prim.add %m, %s : tensor<f64>
    prim.yield %n, %m : tensor<f64>, tensor<f64>
  }
  func.return %c, %ys : tensor<f64>, tensor<5xf64>
}

// CHECK:      func.func @f(%c0: memref<f64>, %xs: memref<5xf64>, %w: memref<3xf64>, %out0: memref<f64>, %out1: memref<5xf64>)
// CHECK-DAG:    %[[FOUR:.*]] = arith.constant 4 : index
// CHECK-DAG:    %[[FIVE:.*]] = arith.constant 5 : index
// CHECK:        %[[SPARE:.*]] = memref.alloc() {{.*}} : memref<f64>
// CHECK-NEXT:   "memref.copy"(%c0, %[[SPARE]])
// CHECK-DAG:    %[[FIRST:.*]] = builtin.unrealized_conversion_cast %[[SPARE]] : memref<f64> to !llvm.ptr
// CHECK-DAG:    %[[SECOND:.*]] = builtin.unrealized_conversion_cast %out0 : memref<f64> to !llvm.ptr
// CHECK-DAG:    %[[XS:.*]] = builtin.unrealized_conversion_cast %xs : memref<5xf64> to !llvm.ptr
// CHECK-DAG:    %[[YS:.*]] = builtin.unrealized_conversion_cast %out1 : memref<5xf64> to !llvm.ptr
// CHECK:        scf.for %[[K:.*]] = %{{.*}} to %[[FIVE]] step %{{.*}} iter_args(%[[CUR:.*]] = %[[FIRST]], %[[NEXT:.*]] = %[[SECOND]]) -> (!llvm.ptr, !llvm.ptr) {
// CHECK-NEXT:     %[[I:.*]] = arith.subi %[[FOUR]], %[[K]] : index
// CHECK-NEXT:     %[[I64:.*]] = arith.index_cast %[[I]] : index to i64
// CHECK-NEXT:     %[[X:.*]] = llvm.getelementptr inbounds %[[XS]][%[[I64]]] : (!llvm.ptr, i64) -> !llvm.ptr, f64
// CHECK-NEXT:     %[[Y:.*]] = llvm.getelementptr inbounds %[[YS]][%[[I64]]] : (!llvm.ptr, i64) -> !llvm.ptr, f64
// CHECK:          func.call @f__scan0(
// CHECK-SAME:       (memref<f64>, memref<f64>, memref<3xf64>, memref<f64>, memref<f64>) -> ()
// CHECK-NEXT:     scf.yield %[[NEXT]], %[[CUR]] : !llvm.ptr, !llvm.ptr
// CHECK-NEXT:   }
// CHECK-NEXT:   memref.dealloc %[[SPARE]]
// CHECK:      func.func private @f__scan0(%a: memref<f64>, %x: memref<f64>, %v: memref<3xf64>, %out0: memref<f64>, %out1: memref<f64>) attributes {no_inline, tidu.num_outputs = 2 : i64}
// CHECK:        arith.mulf
// CHECK:        func.return

// One loop in @f (rotated: the trip count is a constant > 0): one phi on the
// induction variable, one call of the body, which is defined once and not
// inlined, then one conditional back-edge.
// LLVM:      define void @"f"(
// LLVM-NOT:  define
// LLVM:        phi i64
// LLVM-NOT:    phi i64
// LLVM-NOT:    br i1
// LLVM:        call ccc void @"f__scan0"(
// LLVM-NOT:    phi i64
// LLVM:        br i1
// LLVM-NOT:    phi i64
// LLVM-NOT:    br i1
// LLVM-NOT:    call ccc void @"f__scan0"(
// LLVM:      define internal void @"f__scan0"(
// LLVM-SAME:   noinline
// LLVM-NOT:    call ccc void @"f__scan0"(

// From the last element to the first: y = c·x, c = y + sum(w) = y + 1, so
// c = 1 -> 6 -> 25 -> 76 -> 153 -> 154 and ys = [153, 152, 75, 24, 5].
// OUT:      154
// OUT-NEXT: [153, 152, 75, 24, 5]
