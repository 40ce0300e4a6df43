// RUN: tidu-opt %s -p prim-bufferize,convert-prim-to-loops | filecheck %s
// RUN: tidu-run %s --entry @f --arg 0.5 --arg '[1.0, 2.0]' | filecheck %s --check-prefix=OUT
// RUN: tidu-run %s --entry @f --arg -0.5 --arg '[1.0, 2.0]' | filecheck %s --check-prefix=NEG

// A cond is an scf.if on its loaded predicate, calling one of its two
// branches, each outlined into a private function (which LLVM may inline:
// called once, by no loop); the called branch writes the function's output
// buffer %out0 directly.

func.func @f(%x: tensor<f64>, %v: tensor<2xf64>) -> tensor<2xf64> {
  %zero = prim.constant dense<0.0> : tensor<f64>
  %p = prim.compare gt, %x, %zero : tensor<f64>
  %r = prim.cond %p, (%v) : tensor<i1>, (tensor<2xf64>) -> (tensor<2xf64>) {
  ^bb0(%a: tensor<2xf64>):
    %s = prim.sin %a : tensor<2xf64>
    prim.yield %s : tensor<2xf64>
  } else {
  ^bb0(%a: tensor<2xf64>):
    %n = prim.neg %a : tensor<2xf64>
    prim.yield %n : tensor<2xf64>
  }
  func.return %r : tensor<2xf64>
}

// CHECK:      func.func @f(%x: memref<f64>, %v: memref<2xf64>, %out0: memref<2xf64>)
// CHECK:        %[[FLAG:.*]] = memref.load %{{.*}}[] : memref<i1>
// CHECK:        scf.if %[[FLAG]] {
// CHECK:          func.call @[[TRUE:f__cond[0-9]]](%{{.*}}, %{{.*}})
// CHECK:        } else {
// CHECK:          func.call @[[FALSE:f__cond[0-9]]](%{{.*}}, %{{.*}})
// CHECK:        }
// CHECK:      func.func private @[[TRUE]](%{{.*}}: memref<2xf64>, %{{.*}}: memref<2xf64>) attributes {tidu.num_outputs
// CHECK:        math.sin
// CHECK:      func.func private @[[FALSE]](%{{.*}}: memref<2xf64>, %{{.*}}: memref<2xf64>) attributes {tidu.num_outputs
// CHECK:        arith.negf

// OUT: [0.841471, 0.909297]
// NEG: [-1, -2]
