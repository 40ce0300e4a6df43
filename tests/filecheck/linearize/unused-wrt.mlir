// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=u,x outputs=1}' | filecheck %s

// A wrt key is seeded even when nothing depends on it; outputs whose tangent
// is zero are inactive. Needs no AD rule: no tangent reaches prim.mul.
builtin.module {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    %u = cg.input #cg.key<"u"> : tensor<2xf64>
    %y = cg.input #cg.key<"y"> : tensor<f64>
    %p = prim.mul %y, %y : tensor<f64>
    cg.output %x, %p : tensor<f64>, tensor<f64>
  }
}

// CHECK:      builtin.module attributes {cg.next_pass_id = 2 : i64} {
// CHECK:          %p = prim.mul %y, %y : tensor<f64>
// CHECK-NEXT:     cg.linear @jvp1 pass 1 active [false] {
// CHECK-NEXT:       %du = cg.input #cg.tangent<#cg.key<"u">, 1> : tensor<2xf64>
// CHECK-NEXT:       %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
// CHECK-NEXT:       cg.output
// CHECK-NEXT:     }
// CHECK-NEXT:     cg.output %x, %p : tensor<f64>, tensor<f64>
