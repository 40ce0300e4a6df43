// RUN: tidu-opt %s -p prim-bufferize,convert-prim-to-loops | filecheck %s
// RUN: tidu-run %s --entry @f --arg '[1.0, 2.0]' | filecheck %s --check-prefix=OUT

// A check loads its predicate and, when it is false, calls its failure
// function (declared, named after the message in hex; defined at the LLVM
// level, `allocation_guard`); its result is its operand's buffer, here the
// output buffer %out0 itself (no copy).

func.func @f(%v: tensor<2xf64>) -> tensor<2xf64> {
  %s = prim.reduce_sum %v, axes = [0] : tensor<2xf64> -> tensor<f64>
  %big = prim.constant dense<100.0> : tensor<f64>
  %ok = prim.compare lt, %s, %big : tensor<f64>
  %w = prim.sin %v : tensor<2xf64>
  %r = prim.check %ok, %w, message = "sum too large" : tensor<2xf64>
  func.return %r : tensor<2xf64>
}

// CHECK:      func.func @f(%v: memref<2xf64>, %out0: memref<2xf64>)
// CHECK:        math.sin
// CHECK:        memref.store %{{.*}}, %[[DEST:.*]][%{{.*}}] : memref<2xf64>
// CHECK:        %[[FLAG:.*]] = memref.load %{{.*}}[] : memref<i1>
// CHECK:        %[[FAILED:.*]] = arith.xori %[[FLAG]], %{{.*}} : i1
// CHECK:        scf.if %[[FAILED]] {
// CHECK-NEXT:     func.call @tidu_check_failed_73756d20746f6f206c61726765() : () -> ()
// CHECK-NEXT:   }
// CHECK-NOT:    memref.copy
// CHECK:        func.return
// CHECK:      func.func private @tidu_check_failed_73756d20746f6f206c61726765() -> ()

// OUT: [0.841471, 0.909297]
