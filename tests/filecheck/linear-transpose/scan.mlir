// REQUIRES: prim-ad-rules
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=c,w},linear-transpose{graph=@f::@jvp1}' | filecheck %s
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=c,w},linear-transpose{graph=@f::@jvp1}' -o %t && tidu-run %t --backend interp --entry @f::@jvp1::@vjp2 --arg 0.5 --arg '[1.0, 2.0, 3.0]' --arg 0.3 --arg 1.0 | filecheck %s --check-prefix=VALUE

// The transpose of a linear scan is a scan in the other direction over the
// transposed body. The cotangent of the loop-invariant %w (a const of the
// scan) is summed over the iterations in an extra carry, which starts at zero
// and gains one accumulating prim.add per iteration.
builtin.module {
  cg.graph @f {
    %c0 = cg.input #cg.key<"c"> : tensor<f64>
    %xs = cg.input #cg.key<"xs"> : tensor<3xf64>
    %w = cg.input #cg.key<"w"> : tensor<f64>
    %c = prim.scan length 3 init(%c0) xs(%xs) consts(%w) : (tensor<f64>) (tensor<3xf64>) (tensor<f64>) -> (tensor<f64>) () {
    ^bb0(%a: tensor<f64>, %x: tensor<f64>, %k: tensor<f64>):
      %m = prim.mul %a, %x : tensor<f64>
      %s = prim.sin %a : tensor<f64>
      %t = prim.mul %s, %k : tensor<f64>
      %n = prim.add %m, %t : tensor<f64>
      prim.yield %n : tensor<f64>
    }
    cg.output %c : tensor<f64>
  }
}

// CHECK:      cg.linear @vjp2 pass 2 active [true, true] {
// CHECK-NEXT:   %ct = cg.input #cg.cotangent<0, 2> : tensor<f64>
// CHECK:        %[[ZERO:.*]] = prim.constant dense<0.000000e+00> : tensor<f64>
// CHECK-NEXT:   %[[DC:.*]], %[[DW:.*]] = prim.scan length 3 reverse init(%ct, %[[ZERO]]) xs(%{{.*}}) consts(%w) {role = #cg.linearized<[active, fixed, fixed, fixed, fixed, fixed]>}
// CHECK-NEXT:   ^bb0(%[[CTA:[a-z0-9_]+]]: tensor<f64>, %[[ACC:[a-z0-9_]+]]: tensor<f64>,
// CHECK:          %[[SUM:.*]] = prim.add %[[ACC]], %{{.*}} {role = #cg.linearized<[active, active]>} : tensor<f64>
// CHECK-NEXT:     prim.yield %{{.*}}, %[[SUM]] : tensor<f64>, tensor<f64>
// CHECK-NEXT:   }
// CHECK-NEXT:   cg.output %[[DC]], %[[DW]] : tensor<f64>, tensor<f64>

// The gradient of c_3 w.r.t. c_0 and w at c_0 = 0.5, xs = [1, 2, 3], w = 0.3;
// central finite differences give 8.576318537 and 6.068803427.
// VALUE: 8.57632
// VALUE-NEXT: 6.0688
