// REQUIRES: prim-ad-rules
// RUN: tidu-opt %s -p 'linearize{graph=@g wrt=x},unzip{graph=@g::@jvp1}' | filecheck %s
// RUN: not tidu-opt %s -p 'linearize{graph=@h wrt=x},unzip{graph=@h::@jvp1}' 2>&1 | filecheck %s --check-prefix=BAD

// g(x) = sum(exp(sin x)) under save-all, but `sin` is in a save-nothing
// region (`td.checkpoint` inside a traced function tags it `cg.policy`): the
// cos x its JVP derives inherits the tag, so instead of cos x the input x is
// saved and cos x is recomputed in the linear fragment; exp's result is saved.
builtin.module {
  cg.graph @g {
    %x = cg.input #cg.key<"x"> : tensor<3xf64>
    %s = prim.sin %x {cg.policy = "save-nothing"} : tensor<3xf64>
    %e = prim.exp %s : tensor<3xf64>
    %r = prim.reduce_sum %e, axes = [0] : tensor<3xf64> -> tensor<f64>
    cg.output %r : tensor<f64>
  }
  cg.graph @h {
    %x = cg.input #cg.key<"x"> : tensor<3xf64>
    %s = prim.sin %x {cg.policy = "save-some"} : tensor<3xf64>
    cg.output %s : tensor<3xf64>
  }
}

// CHECK:      cg.graph @g_fwd2 attributes {cg.residuals = #cg.residuals<2, 2>} {
// CHECK-NEXT:   %[[X:.*]] = cg.input #cg.key<"x"> : tensor<3xf64>
// CHECK:        %[[E:.*]] = prim.exp
// CHECK:        cg.output %{{.*}}, %[[X]], %[[E]] : tensor<f64>, tensor<3xf64>, tensor<3xf64>
// CHECK:      cg.graph @g_lin2 {
// CHECK-NEXT:   %[[RX:.*]] = cg.input #cg.residual<0, 2> : tensor<3xf64>
// CHECK-NEXT:   %{{.*}} = cg.input #cg.residual<1, 2> : tensor<3xf64>
// CHECK-NEXT:   cg.linear @jvp1 pass 2 active [true] {
// CHECK-NEXT:     %{{.*}} = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<3xf64>
// CHECK-NEXT:     %{{.*}} = prim.cos %[[RX]] {cg.policy = "save-nothing"} : tensor<3xf64>

// BAD: region-policy.mlir:19:5: error: cg.policy must name an unzip policy; valid policies: save-all, recompute-elementwise, save-nothing
