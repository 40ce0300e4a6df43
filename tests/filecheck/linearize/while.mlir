// REQUIRES: prim-ad-rules
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=x}' | filecheck %s
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=x}' -o %t && tidu-run %t --backend interp --entry @f::@jvp1 --arg 1.5 --arg 1.0 | filecheck %s --check-prefix=VALUE
// RUN: not tidu-opt %s -p 'linearize{graph=@f wrt=x},linear-transpose{graph=@f::@jvp1}' 2>&1 | filecheck %s --check-prefix=REVERSE

// The JVP of a while loop is one while loop carrying the primal carry and its
// tangent: its cond reads the primal carry only, its body is the body's
// forward part (c * c, residual c) then its linear part (2 c dc). Forward
// mode runs it; it is not linear (the primal carry evolves), so transposing
// it is refused with the reason.
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
// CHECK-NEXT:   %[[R:[0-9]+]], %[[DR:[0-9]+]] = prim.while init(%x, %dx) consts(%limit) {role = #cg.linearized<[fixed, active, fixed]>} : (tensor<f64>, tensor<f64>) (tensor<f64>) -> (tensor<f64>, tensor<f64>) cond {
// CHECK-NEXT:   ^bb0(%[[C:[a-z0-9_]+]]: tensor<f64>, %{{[a-z0-9_]+}}: tensor<f64>, %[[K:[a-z0-9_]+]]: tensor<f64>):
// CHECK-NEXT:     %{{.*}} = prim.compare lt, %[[C]], %[[K]] : tensor<f64>
// CHECK:        } do {
// CHECK:          prim.mul
// CHECK:          prim.mul {{.*}} {role = #cg.linearized<[fixed, active]>}
// CHECK:          prim.yield
// CHECK:        cg.output %[[DR]] : tensor<f64>

// 1.5 -> 2.25 -> 5.0625 -> 25.6289 -> 656.8: x^16, derivative 16 x^15 at 1.5.
// VALUE: 7006.3
// REVERSE: error: 'prim.while' is not linear in operand #1: reverse mode (grad, vjp, linearize) through a while loop is not supported yet
