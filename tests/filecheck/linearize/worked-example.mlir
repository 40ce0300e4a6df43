// REQUIRES: prim-ad-rules
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=x}' | filecheck %s
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=x},verify-linearity' | filecheck %s
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=x}' -o %t && tidu-run %t --entry @f::@jvp1 --arg 3.0 --arg 0.5 | filecheck %s --check-prefix=VALUE

// The worked example: f(x) = (x+x)*x, f'(x) = 4x. The linear
// fragment is nested in @f and references the primal values %p1 and %x.
builtin.module {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    %p1 = prim.add %x, %x : tensor<f64>
    %p2 = prim.mul %p1, %x : tensor<f64>
    cg.output %p2 : tensor<f64>
  }
}

// CHECK:      builtin.module attributes {cg.next_pass_id = 2 : i64} {
// CHECK-NEXT:   cg.graph @f {
// CHECK-NEXT:     %x = cg.input #cg.key<"x"> : tensor<f64>
// CHECK-NEXT:     %p1 = prim.add %x, %x : tensor<f64>
// CHECK-NEXT:     %p2 = prim.mul %p1, %x : tensor<f64>
// CHECK-NEXT:     cg.linear @jvp1 pass 1 active [true] {
// CHECK-NEXT:       %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
// CHECK-NEXT:       %[[T1:.*]] = prim.add %dx, %dx {role = #cg.linearized<[active, active]>} : tensor<f64>
// CHECK-DAG:        %[[T2:.*]] = prim.mul %p1, %dx {role = #cg.linearized<[fixed, active]>} : tensor<f64>
// CHECK-DAG:        %[[T3:.*]] = prim.mul %[[T1]], %x {role = #cg.linearized<[active, fixed]>} : tensor<f64>
// CHECK:            %[[T4:.*]] = prim.add %{{.*}}, %{{.*}} {role = #cg.linearized<[active, active]>} : tensor<f64>
// CHECK-NEXT:       cg.output %[[T4]] : tensor<f64>
// CHECK-NEXT:     }
// CHECK-NEXT:     cg.output %p2 : tensor<f64>
// CHECK-NEXT:   }
// CHECK-NEXT: }

// VALUE: {{^6(\.0*)?$}}
