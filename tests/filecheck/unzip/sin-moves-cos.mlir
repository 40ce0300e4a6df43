// REQUIRES: prim-ad-rules
// RUN: tidu-opt %s -p 'linearize{graph=@g wrt=x},unzip{graph=@g::@jvp1},verify-linearity' | filecheck %s
// RUN: tidu-opt %s -p 'linearize{graph=@g wrt=x},unzip{graph=@g::@jvp1}' -o %t
// RUN: tidu-run %t --entry @g_fwd2 --arg 0.5 | filecheck %s --check-prefix=FWD
// RUN: tidu-run %t --entry @g::@jvp1 --arg 0.5 --arg 2.0 | filecheck %s --check-prefix=JVP
// RUN: tidu-run %t --entry @g_lin2::@jvp1 --arg 0.8775825618903728 --arg 2.0 | filecheck %s --check-prefix=JVP

// g(x) = sin(x). The JVP rule of sin emits `cos x`, a primary op, inside the
// linear fragment; unzip moves it to the forward graph, whose residual is
// cos x (x itself is not needed): the linear side is the single mul.
// At x = 0.5: sin = 0.479426, cos = 0.877583; the JVP on dx = 2 is 1.75517, the
// same from the fused @g::@jvp1 and from the unzipped fragment on the residual.
builtin.module {
  cg.graph @g {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    %s = prim.sin %x : tensor<f64>
    cg.output %s : tensor<f64>
  }
}

// CHECK:        cg.linear @jvp1 pass 1 active [true] {
// CHECK-NEXT:     %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
// CHECK-NEXT:     %[[COS:.*]] = prim.cos %x : tensor<f64>
// CHECK-NEXT:     prim.mul %[[COS]], %dx {role = #cg.linearized<[fixed, active]>} : tensor<f64>
// CHECK:        cg.graph @g_fwd2 attributes {cg.residuals = #cg.residuals<1, 2>} {
// CHECK-NEXT:     %[[X:.*]] = cg.input #cg.key<"x"> : tensor<f64>
// CHECK-NEXT:     %[[S:.*]] = prim.sin %[[X]] : tensor<f64>
// CHECK-NEXT:     %[[C:.*]] = prim.cos %[[X]] : tensor<f64>
// CHECK-NEXT:     cg.output %[[S]], %[[C]] : tensor<f64>, tensor<f64>
// CHECK-NEXT:   }
// CHECK-NEXT:   cg.graph @g_lin2 {
// CHECK-NEXT:     %[[R:.*]] = cg.input #cg.residual<0, 2> : tensor<f64>
// CHECK-NEXT:     cg.linear @jvp1 pass 2 active [true] {
// CHECK-NEXT:       %[[DX:.*]] = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
// CHECK-NEXT:       %[[T:.*]] = prim.mul %[[R]], %[[DX]] {role = #cg.linearized<[fixed, active]>} : tensor<f64>
// CHECK-NEXT:       cg.output %[[T]] : tensor<f64>
// CHECK-NEXT:     }
// CHECK-NEXT:     cg.output
// CHECK-NEXT:   }

// FWD:      {{^0\.479426$}}
// FWD-NEXT: {{^0\.877583$}}
// JVP: {{^1\.75517$}}
