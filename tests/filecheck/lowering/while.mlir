// RUN: tidu-opt %s -p prim-bufferize,convert-prim-to-loops | filecheck %s
// RUN: tidu-run %s --entry @f --arg 1.0 --arg 100.0 | filecheck %s --check-prefix=OUT

// A while loop is an scf.while: its before region calls the outlined cond,
// which writes the predicate into a one-byte buffer, and its after region
// calls the outlined body; the carries swap between two buffers, and the
// last ones are copied into the output buffer (the trip count is known only
// at run time). Doubling 1.0 while below 100: 128.

func.func @f(%x: tensor<f64>, %limit: tensor<f64>) -> tensor<f64> {
  %r = prim.while init(%x) consts(%limit) : (tensor<f64>) (tensor<f64>) -> (tensor<f64>) cond {
  ^bb0(%c: tensor<f64>, %k: tensor<f64>):
    %p = prim.compare lt, %c, %k : tensor<f64>
    prim.yield %p : tensor<i1>
  } do {
  ^bb0(%c: tensor<f64>, %k: tensor<f64>):
    %n = prim.add %c, %c : tensor<f64>
    prim.yield %n : tensor<f64>
  }
  func.return %r : tensor<f64>
}

// CHECK:      func.func @f(%x: memref<f64>, %limit: memref<f64>, %out0: memref<f64>)
// CHECK:        "memref.copy"(%x, %[[FIRST:.*]]) : (memref<f64>, memref<f64>) -> ()
// CHECK:        %{{.*}} = scf.while
// CHECK:          func.call @[[COND:f__while[0-9]]](
// CHECK:          %[[FLAG:.*]] = memref.load %{{.*}}[] : memref<i1>
// CHECK:          scf.condition(%[[FLAG]])
// CHECK:        } do {
// CHECK:          func.call @[[BODY:f__while[0-9]]](
// CHECK:          scf.yield
// CHECK:        }
// CHECK:        "memref.copy"(%{{.*}}, %out0) : (memref<f64>, memref<f64>) -> ()
// CHECK-DAG:  func.func private @[[COND]](
// CHECK-DAG:  func.func private @[[BODY]](

// OUT: 128
