// REQUIRES: prim-ad-rules
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=x},materialize{graph=@f::@jvp1},fuse-recorded-loops' | filecheck %s
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=x},materialize{graph=@f::@jvp1}' -o %t && tidu-run %t --entry @f_jvp1 --arg 1.5 --arg 1.0 | filecheck %s --check-prefix=VALUE
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=x},linear-transpose{graph=@f::@jvp1},materialize{graph=@f::@jvp1::@vjp2},fuse-recorded-loops' | filecheck %s --check-prefix=REVERSE

// Forward mode: the JVP of a while loop records its iterations, then replays
// them in a forward scan; nothing else reads the tapes, so the two loops fuse
// into one prim.while carrying x and dx (no tape, one loop). In reverse mode
// the replay runs backwards and stays a scan over the tapes.
builtin.module {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    %limit = prim.constant dense<100.0> : tensor<f64>
    %r = prim.while init(%x) consts(%limit) : (tensor<f64>) (tensor<f64>) -> (tensor<f64>) cond {
    ^bb0(%c: tensor<f64>, %k: tensor<f64>):
      %p = prim.compare lt, %c, %k : tensor<f64>
      prim.yield %p : tensor<i1>
    } do {
    ^bb0(%c: tensor<f64>, %k: tensor<f64>):
      %n = prim.mul %c, %c : tensor<f64>
      prim.yield %n : tensor<f64>
    }
    cg.output %r : tensor<f64>
  }
}

// CHECK:      func.func @f_jvp1(
// CHECK-NOT:    prim.record_while
// CHECK:        %{{.*}}, %[[DR:[0-9]+]] = prim.while init(%x_1, %{{[0-9]+}}) consts(%limit_1)
// CHECK:          prim.select
// CHECK:          prim.yield
// CHECK-NOT:    prim.scan
// CHECK:        func.return %[[DR]] : tensor<f64>

// VALUE: 7006.3

// REVERSE:      func.func @f_jvp1_vjp2(
// REVERSE:        prim.record_while
// REVERSE:        prim.scan count(%{{[0-9]+}} : tensor<i64>) reverse
