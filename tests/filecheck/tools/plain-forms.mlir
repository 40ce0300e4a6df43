// Forms tidu-opt reads in one match each (tidu_mlir/fast_syntax.py), read as
// xDSL reads them: ops in the generic syntax with properties and attributes,
// locations, function declarations, dense literals of nested lists, regions
// whose values leave the scope when they end, llvm.getelementptr (the second
// one's array element type goes token by token), llvm.call_intrinsic, nested
// modules. Also seeds of the IR mutation fuzzer (tests/fuzz/corpus.py).
// RUN: tidu-opt %s --print-debuginfo | filecheck %s

// CHECK: func.func private @g(tensor<2x2xf64>, f64) -> tensor<2x2xf64> loc("{{.*}}plain-forms.mlir":10:1)
func.func private @g(tensor<2x2xf64>, f64) -> tensor<2x2xf64>

func.func @f(%x: tensor<2x3xf64>, %c: i1, %s: f64) -> tensor<3x2xf64> {
  %t = "prim.transpose"(%x) <{permutation = array<i64: 1, 0>}> {tag = 7 : i64} : (tensor<2x3xf64>) -> tensor<3x2xf64> loc("model.py":4:2)
  %u = "prim.slice"(%x) <{start = array<i64: 0, 1>, limit = array<i64: 2, 3>, stride = array<i64: 1, 1>}> : (tensor<2x3xf64>) -> tensor<2x2xf64>
  %k = prim.constant dense<[[1.5, -2], [3, 0.25]]> : tensor<2x2xf64> loc("model.py":5:8)
  %v = func.call @g(%k, %s) : (tensor<2x2xf64>, f64) -> tensor<2x2xf64>
  %r = scf.if %c -> (f64) {
    %a = arith.addf %s, %s : f64
    scf.yield %a : f64
  } else {
    %a = arith.mulf %s, %s : f64
    scf.yield %a : f64
  }
  func.return %t : tensor<3x2xf64>
}

// CHECK:      %t = prim.transpose %x, permutation = [1, 0] {tag = 7 : i64} : tensor<2x3xf64> -> tensor<3x2xf64> loc("model.py":4:2)
// CHECK-NEXT: %u = prim.slice %x [0:2:1, 1:3:1] : tensor<2x3xf64> -> tensor<2x2xf64> loc("{{.*}}plain-forms.mlir":14:3)
// CHECK-NEXT: %k = prim.constant dense<[[1.500000e+00, -2.000000e+00], [3.000000e+00, 2.500000e-01]]> : tensor<2x2xf64> loc("model.py":5:8)
// CHECK-NEXT: %v = func.call @g(%k, %s) : (tensor<2x2xf64>, f64) -> tensor<2x2xf64>
// CHECK-NEXT: %r = scf.if %c -> (f64) {
// CHECK-NEXT:   %a = arith.addf %s, %s : f64
// CHECK-NEXT:   scf.yield %a : f64
// CHECK-NEXT: } else {
// CHECK-NEXT:   %a_1 = arith.mulf %s, %s : f64
// CHECK-NEXT:   scf.yield %a_1 : f64
// CHECK-NEXT: }

llvm.func @h(%p: !llvm.ptr, %i: i64) -> !llvm.ptr {
  %c = llvm.getelementptr inbounds %p[3] : (!llvm.ptr) -> !llvm.ptr, i64
  %v = llvm.getelementptr %c[1, %i] : (!llvm.ptr, i64) -> !llvm.ptr, !llvm.array<4 x f64>
  llvm.return %v : !llvm.ptr
}

// CHECK:      %c = llvm.getelementptr inbounds %p[3] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT: %v = llvm.getelementptr %c[1, %i] : (!llvm.ptr, i64) -> !llvm.ptr, !llvm.array<4 x f64>

llvm.func @k(%x: f64) -> f64 {
  %e = llvm.call_intrinsic "llvm.exp.f64"(%x) : (f64) -> f64  // a comment
  %m = llvm.call_intrinsic "llvm.maximum.f64"(%e, %x) : (f64, f64) -> f64
  llvm.return %m : f64
}

// CHECK:      %e = llvm.call_intrinsic "llvm.exp.f64"(%x) : (f64) -> f64
// CHECK-NEXT: %m = llvm.call_intrinsic "llvm.maximum.f64"(%e, %x) : (f64, f64) -> f64

builtin.module @inner attributes {t.i = 3 : i64} {
  func.func private @q(f64) -> f64
}

// CHECK:      builtin.module @inner attributes {t.i = 3 : i64} {
// CHECK-NEXT:   func.func private @q(f64) -> f64
// CHECK-NEXT: }
