// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=y,x},verify-linearity' | filecheck %s
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=y,x},linear-transpose{graph=@f::@jvp1}' -o %t
// RUN: tidu-run %t --entry @f --arg 1.0 --arg -1.0 | filecheck %s --check-prefix=VALUE
// RUN: tidu-run %t --entry @f::@jvp1::@vjp2 --arg 1.0 --arg -1.0 --arg 1.0 | filecheck %s --check-prefix=GRAD
// RUN: tidu-run %t --backend interp --entry @f::@jvp1::@vjp2 --arg 1.0 --arg -1.0 --arg 1.0 | filecheck %s --check-prefix=GRAD

// prim.atan2 (numpy's arctan2(y, x)): d atan2(y, x) = (x·dy - y·dx) / (x² + y²).
// The numerator is linear in the tangents; x² + y² is computed on the primal
// side (fixed operands), and the division by it is linear in its numerator.
builtin.module {
  cg.graph @f {
    %y = cg.input #cg.key<"y"> : tensor<f64>
    %x = cg.input #cg.key<"x"> : tensor<f64>
    %a = prim.atan2 %y, %x : tensor<f64>
    cg.output %a : tensor<f64>
  }
}

// CHECK:      %a = prim.atan2 %y, %x : tensor<f64>
// CHECK:      cg.linear @jvp1 pass 1 active [true] {
// CHECK-DAG:    %[[DY:.*]] = cg.input #cg.tangent<#cg.key<"y">, 1> : tensor<f64>
// CHECK-DAG:    %[[DX:.*]] = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
// CHECK:        %[[XDY:.*]] = prim.mul %x, %[[DY]] {role = #cg.linearized<[fixed, active]>} : tensor<f64>
// CHECK:        %[[YDX:.*]] = prim.mul %y, %[[DX]] {role = #cg.linearized<[fixed, active]>} : tensor<f64>
// CHECK:        %[[NUM:.*]] = prim.sub %[[XDY]], %[[YDX]] {role = #cg.linearized<[active, active]>} : tensor<f64>
// CHECK:        %[[XX:.*]] = prim.mul %x, %x : tensor<f64>
// CHECK:        %[[YY:.*]] = prim.mul %y, %y : tensor<f64>
// CHECK:        %[[SQ:.*]] = prim.add %[[XX]], %[[YY]] : tensor<f64>
// CHECK:        %[[D:.*]] = prim.div %[[NUM]], %[[SQ]] {role = #cg.linearized<[active, fixed]>} : tensor<f64>
// CHECK:        cg.output %[[D]] : tensor<f64>

// atan2(1, -1) = 3π/4
// VALUE: 2.35619

// gradient (x, -y) / (x² + y²) at (y, x) = (1, -1): d/dy = -0.5, d/dx = -0.5
// GRAD:      -0.5
// GRAD-NEXT: -0.5
