// REQUIRES: prim-ad-rules
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=x,y},verify-linearity' | filecheck %s
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=x,y},linear-transpose{graph=@f::@jvp1}' -o %t && tidu-run %t --backend interp --entry @f::@jvp1::@vjp2 --arg 0.5 --arg 2.0 --arg 1.0 | filecheck %s --check-prefix=VALUE

// The JVP of a cond is two conds on the same predicate: a forward cond whose
// branches also yield their residuals (the true branch: cos a, sin a and b;
// the false branch: exp b), each branch yielding zeros for the other's, and
// a linear cond over the tangents and all the residuals.
builtin.module {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    %y = cg.input #cg.key<"y"> : tensor<f64>
    %zero = prim.constant dense<0.0> : tensor<f64>
    %p = prim.compare gt, %x, %zero : tensor<f64>
    %r = prim.cond %p, (%x, %y) : tensor<i1>, (tensor<f64>, tensor<f64>) -> (tensor<f64>) {
    ^bb0(%a: tensor<f64>, %b: tensor<f64>):
      %s = prim.sin %a : tensor<f64>
      %m = prim.mul %s, %b : tensor<f64>
      prim.yield %m : tensor<f64>
    } else {
    ^bb0(%a: tensor<f64>, %b: tensor<f64>):
      %e = prim.exp %b : tensor<f64>
      prim.yield %e : tensor<f64>
    }
    cg.output %r : tensor<f64>
  }
}

// CHECK:      cg.linear @jvp1 pass 1 active [true] {
// CHECK:        %{{.*}}, %[[R1:[0-9]+]], %[[R2:[0-9]+]], %[[R3:[0-9]+]], %[[R4:[0-9]+]] = prim.cond %p, (%x, %y) : tensor<i1>, (tensor<f64>, tensor<f64>) -> (tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>) {
// CHECK:          prim.cos
// CHECK:          prim.yield %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ZERO:[0-9]+]] :
// CHECK:        } else {
// CHECK:          %[[E:e.*]] = prim.exp
// CHECK:          prim.yield %[[E]], %{{.*}}, %{{.*}}, %{{.*}}, %[[E]] :
// CHECK:        %[[T:[0-9]+]] = prim.cond %p, (%dx, %dy, %[[R1]], %[[R2]], %[[R3]], %[[R4]]) {role = #cg.linearized<[fixed, active, active, fixed, fixed, fixed, fixed]>}
// CHECK:        cg.output %[[T]] : tensor<f64>

// At x = 0.5 > 0: d(sin x · y) = (y cos x, sin x) = (2 cos 0.5, sin 0.5).
// VALUE: 1.75517
// VALUE-NEXT: 0.479426
