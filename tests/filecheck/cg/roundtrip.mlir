// RUN: tidu-opt %s | filecheck %s
// RUN: tidu-opt %s --print-op-generic | tidu-opt | filecheck %s

// The worked example (x + x) * x after linearize: a linear fragment nested in
// the primal one, referencing primal values by SSA use.
builtin.module attributes {cg.next_pass_id = 4 : i64} {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    %p1 = prim.add %x, %x : tensor<f64>
    %p2 = prim.mul %p1, %x : tensor<f64>
    cg.linear @jvp1 pass 1 active [true] {
      %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
      %t1 = prim.add %dx, %dx {role = #cg.linearized<[active, active]>} : tensor<f64>
      %t2 = prim.mul %p1, %dx {role = #cg.linearized<[fixed, active]>} : tensor<f64>
      %t3 = prim.mul %t1, %x {role = #cg.linearized<[active, fixed]>} : tensor<f64>
      %t4 = prim.add %t2, %t3 {role = #cg.linearized<[active, active]>} : tensor<f64>
      cg.linear @t2 pass 2 active [true] {
        %ct = cg.input #cg.cotangent<0, 2> : tensor<f64>
        cg.output %ct : tensor<f64>
      }
      cg.output %t4 : tensor<f64>
    }
    cg.output %p2 : tensor<f64>
  }
  cg.graph @g {
    %y = cg.input #cg.tangent<#cg.tangent<#cg.key<"y">, 1>, 3> : tensor<2xcomplex<f32>>
    cg.linear @none pass 3 active [false, false] {
      cg.output
    }
    cg.output %y : tensor<2xcomplex<f32>>
  }
}

// CHECK:      builtin.module attributes {cg.next_pass_id = 4 : i64} {
// CHECK-NEXT:   cg.graph @f {
// CHECK-NEXT:     %x = cg.input #cg.key<"x"> : tensor<f64>
// CHECK-NEXT:     %p1 = prim.add %x, %x : tensor<f64>
// CHECK-NEXT:     %p2 = prim.mul %p1, %x : tensor<f64>
// CHECK-NEXT:     cg.linear @jvp1 pass 1 active [true] {
// CHECK-NEXT:       %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
// CHECK-NEXT:       %t1 = prim.add %dx, %dx {role = #cg.linearized<[active, active]>} : tensor<f64>
// CHECK-NEXT:       %t2 = prim.mul %p1, %dx {role = #cg.linearized<[fixed, active]>} : tensor<f64>
// CHECK-NEXT:       %t3 = prim.mul %t1, %x {role = #cg.linearized<[active, fixed]>} : tensor<f64>
// CHECK-NEXT:       %t4 = prim.add %t2, %t3 {role = #cg.linearized<[active, active]>} : tensor<f64>
// CHECK-NEXT:       cg.linear @t2 pass 2 active [true] {
// CHECK-NEXT:         %ct = cg.input #cg.cotangent<0, 2> : tensor<f64>
// CHECK-NEXT:         cg.output %ct : tensor<f64>
// CHECK-NEXT:       }
// CHECK-NEXT:       cg.output %t4 : tensor<f64>
// CHECK-NEXT:     }
// CHECK-NEXT:     cg.output %p2 : tensor<f64>
// CHECK-NEXT:   }
// CHECK-NEXT:   cg.graph @g {
// CHECK-NEXT:     %y = cg.input #cg.tangent<#cg.tangent<#cg.key<"y">, 1>, 3> : tensor<2xcomplex<f32>>
// CHECK-NEXT:     cg.linear @none pass 3 active [false, false] {
// CHECK-NEXT:       cg.output
// CHECK-NEXT:     }
// CHECK-NEXT:     cg.output %y : tensor<2xcomplex<f32>>
// CHECK-NEXT:   }
// CHECK-NEXT: }
