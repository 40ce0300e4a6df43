// REQUIRES: prim-ad-rules
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=x}' | filecheck %s
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=x}' -o %t && tidu-run %t --backend interp --entry @f::@jvp1 --arg 1.5 --arg 1.0 | filecheck %s --check-prefix=VALUE
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=x},linear-transpose{graph=@f::@jvp1}' | filecheck %s --check-prefix=REVERSE
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=x},linear-transpose{graph=@f::@jvp1}' -o %t2 && tidu-run %t2 --entry @f::@jvp1::@vjp2 --arg 1.5 --arg 1.0 | filecheck %s --check-prefix=VALUE

// The JVP of a while loop is its unzip: a prim.record_while runs the body's
// forward part (c * c), recording per iteration the predicate it started with
// and the residual c in tapes(tensor<?x...>) and counting the iterations;
// then a scan over those tapes, as many times as counted, runs the body's
// linear part (2 c dc), kept only where the recorded predicate held. That
// scan is linear, so linear-transpose reverses it: reverse mode through a
// loop whose trip count only the run knows.
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

// CHECK:      cg.linear @jvp1 pass 1 active [true] {
// CHECK-NEXT:   %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
// CHECK-NEXT:   %{{[0-9]+}}, %[[N:[0-9]+]], %[[HELD:[0-9]+]], %[[TAPE:[0-9]+]] = prim.record_while init(%x) consts(%limit) : (tensor<f64>) (tensor<f64>) -> (tensor<f64>) count tensor<i64> tapes(tensor<?xi1>, tensor<?xf64>) cond {
// CHECK:        } do {
// CHECK-NEXT:   ^bb0(%[[C:[0-9]+]]: tensor<f64>, %[[K:[0-9]+]]: tensor<f64>):
// CHECK-NEXT:     %[[SQ:[a-z0-9_]+]] = prim.mul %[[C]], %[[C]] : tensor<f64>
// CHECK-NEXT:     %[[P:[a-z0-9_]+]] = prim.compare lt, %[[C]], %[[K]] : tensor<f64>
// CHECK-NEXT:     prim.yield %[[SQ]], %[[P]], %[[C]] : tensor<f64>, tensor<i1>, tensor<f64>
// CHECK:        %[[DR:[0-9]+]] = prim.scan count(%[[N]] : tensor<i64>) init(%dx) xs(%[[HELD]], %[[TAPE]]) consts() {role = #cg.linearized<[active, fixed, fixed, fixed]>}
// CHECK:          prim.select {{.*}} {role = #cg.linearized<[fixed, active, active]>} : tensor<i1>, tensor<f64>
// CHECK:        cg.output %[[DR]] : tensor<f64>

// REVERSE:      cg.linear @vjp2
// REVERSE:        prim.scan count(%{{[0-9]+}} : tensor<i64>) reverse init(

// 1.5 -> 2.25 -> 5.0625 -> 25.6289 -> 656.8: x^16, derivative 16 x^15 at 1.5,
// forward (interpreted) and reverse (compiled).
// VALUE: 7006.3
