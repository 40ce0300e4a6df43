// REQUIRES: prim-ad-rules
// RUN: tidu-opt %s -p 'linearize{graph=@g wrt=x},unzip{graph=@g::@jvp1},verify-linearity' | filecheck %s --check-prefix=ALL
// RUN: tidu-opt %s -p 'linearize{graph=@g wrt=x},unzip{graph=@g::@jvp1 policy=recompute-elementwise},verify-linearity' | filecheck %s --check-prefix=ELEM
// RUN: tidu-opt %s -p 'linearize{graph=@g wrt=x},unzip{graph=@g::@jvp1 policy=save-nothing},verify-linearity' | filecheck %s --check-prefix=NONE
// RUN: tidu-opt %s -p 'linearize{graph=@g wrt=x},unzip{graph=@g::@jvp1 policy=recompute-elementwise},linear-transpose{graph=@g_lin2::@jvp1}' -o %t
// RUN: tidu-run %t --entry @g::@jvp1 --arg 0.5,1.0,2.0 --arg 1.0,-1.0,0.5 | filecheck %s --check-prefix=VALUE
// RUN: tidu-run %t --entry @g_fwd2 --arg 0.5,1.0,2.0 | filecheck %s --check-prefix=ELEMFWD
// RUN: tidu-run %t --entry @g_lin2::@jvp1 --arg 0.5,1.0,2.0 --arg 6.417500849172937 --arg 1.0,-1.0,0.5 | filecheck %s --check-prefix=VALUE

// g(x) = log(sum(exp(sin x))), x : 3 floats. The linear ops read cos x (from
// the JVP of sin), e = exp(sin x) and r = sum(e).
// save-all: saves them (three residuals, 56 bytes).
// recompute-elementwise: saves the reduction r and the input x; cos, sin and
//   exp are recomputed in the linear fragment as primary ops.
// save-nothing: saves the input x only; the reduction is recomputed too.
// Each time the linear fragment holds the four linear ops (plus recomputed ones).
builtin.module {
  cg.graph @g {
    %x = cg.input #cg.key<"x"> : tensor<3xf64>
    %s = prim.sin %x : tensor<3xf64>
    %e = prim.exp %s : tensor<3xf64>
    %r = prim.reduce_sum %e, axes = [0] : tensor<3xf64> -> tensor<f64>
    %l = prim.log %r : tensor<f64>
    cg.output %l : tensor<f64>
  }
}

// ALL:        cg.graph @g_fwd2 attributes {cg.residuals = #cg.residuals<3, 2>} {
// ALL:          %[[C:.*]] = prim.cos
// ALL-NEXT:     cg.output %[[L:.*]], %[[C]], %[[E:.*]], %[[R:.*]] : tensor<f64>, tensor<3xf64>, tensor<3xf64>, tensor<f64>
// ALL:        cg.graph @g_lin2 {
// ALL-NEXT:     %[[RC:.*]] = cg.input #cg.residual<0, 2> : tensor<3xf64>
// ALL-NEXT:     %[[RE:.*]] = cg.input #cg.residual<1, 2> : tensor<3xf64>
// ALL-NEXT:     %[[RR:.*]] = cg.input #cg.residual<2, 2> : tensor<f64>
// ALL-NEXT:     cg.linear @jvp1 pass 2 active [true] {
// ALL-NEXT:       %[[DX:.*]] = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<3xf64>
// ALL-NEXT:       %[[T1:.*]] = prim.mul %[[RC]], %[[DX]] {role = #cg.linearized<[fixed, active]>}
// ALL-NEXT:       %[[T2:.*]] = prim.mul %[[RE]], %[[T1]] {role = #cg.linearized<[fixed, active]>}
// ALL-NEXT:       %[[T3:.*]] = prim.reduce_sum %[[T2]], axes = [0] {role = #cg.linearized<[active]>}
// ALL-NEXT:       %[[T4:.*]] = prim.div %[[T3]], %[[RR]] {role = #cg.linearized<[active, fixed]>}
// ALL-NEXT:       cg.output %[[T4]] : tensor<f64>

// ELEM:       cg.graph @g_fwd2 attributes {cg.residuals = #cg.residuals<2, 2>} {
// ELEM-NEXT:    %[[X:.*]] = cg.input #cg.key<"x"> : tensor<3xf64>
// ELEM-NOT:     prim.cos
// ELEM:         %[[R:.*]] = prim.reduce_sum
// ELEM-NEXT:    %[[L:.*]] = prim.log %[[R]]
// ELEM-NEXT:    cg.output %[[L]], %[[X]], %[[R]] : tensor<f64>, tensor<3xf64>, tensor<f64>
// ELEM:       cg.graph @g_lin2 {
// ELEM-NEXT:    %[[RX:.*]] = cg.input #cg.residual<0, 2> : tensor<3xf64>
// ELEM-NEXT:    %[[RR:.*]] = cg.input #cg.residual<1, 2> : tensor<f64>
// ELEM-NEXT:    cg.linear @jvp1 pass 2 active [true] {
// ELEM-NEXT:      %[[DX:.*]] = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<3xf64>
// ELEM-NEXT:      %[[C:.*]] = prim.cos %[[RX]] : tensor<3xf64>
// ELEM-NEXT:      %[[S:.*]] = prim.sin %[[RX]] : tensor<3xf64>
// ELEM-NEXT:      %[[E:.*]] = prim.exp %[[S]] : tensor<3xf64>
// ELEM-NEXT:      %[[T1:.*]] = prim.mul %[[C]], %[[DX]] {role = #cg.linearized<[fixed, active]>}
// ELEM-NEXT:      %[[T2:.*]] = prim.mul %[[E]], %[[T1]] {role = #cg.linearized<[fixed, active]>}
// ELEM-NEXT:      %[[T3:.*]] = prim.reduce_sum %[[T2]], axes = [0] {role = #cg.linearized<[active]>}
// ELEM-NEXT:      %[[T4:.*]] = prim.div %[[T3]], %[[RR]] {role = #cg.linearized<[active, fixed]>}
// ELEM-NEXT:      cg.output %[[T4]] : tensor<f64>

// NONE:       cg.graph @g_fwd2 attributes {cg.residuals = #cg.residuals<1, 2>} {
// NONE-NEXT:    %[[X:.*]] = cg.input #cg.key<"x"> : tensor<3xf64>
// NONE:         cg.output %{{.*}}, %[[X]] : tensor<f64>, tensor<3xf64>
// NONE:       cg.graph @g_lin2 {
// NONE-NEXT:    %[[RX:.*]] = cg.input #cg.residual<0, 2> : tensor<3xf64>
// NONE-NEXT:    cg.linear @jvp1 pass 2 active [true] {
// NONE-NEXT:      %[[DX:.*]] = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<3xf64>
// NONE-NEXT:      prim.cos %[[RX]] : tensor<3xf64>
// NONE-NEXT:      prim.sin %[[RX]] : tensor<3xf64>
// NONE-NEXT:      prim.exp
// NONE-NEXT:      %[[R:.*]] = prim.reduce_sum %{{.*}}, axes = [0] : tensor<3xf64> -> tensor<f64>
// NONE-NEXT:      prim.mul {{.*}}role = #cg.linearized<[fixed, active]>
// NONE-NEXT:      prim.mul {{.*}}role = #cg.linearized<[fixed, active]>
// NONE-NEXT:      prim.reduce_sum {{.*}}role = #cg.linearized<[active]>
// NONE-NEXT:      prim.div %{{.*}}, %[[R]] {role = #cg.linearized<[active, fixed]>}
// NONE-NEXT:      cg.output

// The fused JVP and the unzipped one on (x, r) agree; the forward graph returns
// g(x), then the residuals x and r.
// VALUE: {{^-0\.0549303$}}
// ELEMFWD:      {{^1\.85903$}}
// ELEMFWD-NEXT: {{^\[0\.5, 1, 2\]$}}
// ELEMFWD-NEXT: {{^6\.4175$}}
