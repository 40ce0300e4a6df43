// RUN: tidu-opt %s -p prim-bufferize,convert-prim-to-loops | filecheck %s
// RUN: tidu-run %s --entry @f --arg 1.0 --arg 100.0 | filecheck %s --check-prefix=OUT

// A prim.record_while is the scf.while of prim.while that also carries its
// iteration count, the room of its tapes and one heap block per tape: the
// body writes its recorded value straight into slice `count` of the tape
// (`tidu_realloc` doubles the block when it is full). The dynamic scan then
// runs `count` times (loaded at run time) over that tape, last slice first.
// Doubling 1.0 while below 100 (7 iterations) records 1, 2, ..., 64; the
// reverse scan folds s = 2 s + slice from s = 0 over 64, 32, ..., 1: 5461.

func.func @f(%x: tensor<f64>, %limit: tensor<f64>) -> (tensor<f64>, tensor<i64>, tensor<f64>) {
  %r, %n, %tape = prim.record_while init(%x) consts(%limit) : (tensor<f64>) (tensor<f64>) -> (tensor<f64>) count tensor<i64> tapes(tensor<?xf64>) cond {
  ^bb0(%c: tensor<f64>, %k: tensor<f64>):
    %p = prim.compare lt, %c, %k : tensor<f64>
    prim.yield %p : tensor<i1>
  } do {
  ^bb0(%c: tensor<f64>, %k: tensor<f64>):
    %d = prim.add %c, %c : tensor<f64>
    prim.yield %d, %c : tensor<f64>, tensor<f64>
  }
  %zero = prim.constant dense<0.0> : tensor<f64>
  %s = prim.scan count(%n : tensor<i64>) reverse init(%zero) xs(%tape) consts() : (tensor<f64>) (tensor<?xf64>) () -> (tensor<f64>) () {
  ^bb0(%acc: tensor<f64>, %slice: tensor<f64>):
    %twice = prim.add %acc, %acc : tensor<f64>
    %next = prim.add %twice, %slice : tensor<f64>
    prim.yield %next : tensor<f64>
  }
  func.return %r, %n, %s : tensor<f64>, tensor<i64>, tensor<f64>
}

// CHECK:      func.func @f(
// CHECK:        %[[BLOCK:.*]] = func.call @tidu_malloc(%{{.*}}) : (i64) -> !llvm.ptr
// CHECK:        scf.while
// CHECK:          func.call @[[COND:f__while[0-9]]](
// CHECK:        } do {
// CHECK:          scf.if
// CHECK:            func.call @tidu_realloc(
// CHECK:          func.call @[[BODY:f__while[0-9]]](
// CHECK:        memref.store %{{.*}}, %out1[] : memref<i64>
// CHECK:        scf.for
// CHECK:          func.call @{{f__scan[0-9]}}(
// CHECK:        memref.dealloc %{{.*}} : memref<?xf64>

// OUT: 128
// OUT: 7
// OUT: 5461
