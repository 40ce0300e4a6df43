// RUN: tidu-opt %s -p 'linear-transpose{graph=@f::@jvp1}' | filecheck %s

// No linear op at all: the cotangent of an output that is a tangent input is
// the seed itself; an input nothing flows to is an inactive output.
builtin.module attributes {cg.next_pass_id = 2 : i64} {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    %y = cg.input #cg.key<"y"> : tensor<3xf64>
    cg.linear @jvp1 pass 1 active [true] {
      %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
      %dy = cg.input #cg.tangent<#cg.key<"y">, 1> : tensor<3xf64>
      cg.output %dx : tensor<f64>
    }
    cg.output %x : tensor<f64>
  }
}

// CHECK:      builtin.module attributes {cg.next_pass_id = 3 : i64} {
// CHECK:          cg.linear @vjp2 pass 2 active [true, false] {
// CHECK-NEXT:       %ct = cg.input #cg.cotangent<0, 2> : tensor<f64>
// CHECK-NEXT:       cg.output %ct : tensor<f64>
// CHECK-NEXT:     }
// CHECK-NEXT:     cg.output %dx : tensor<f64>
