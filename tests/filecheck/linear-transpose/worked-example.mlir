// REQUIRES: prim-ad-rules
// RUN: tidu-opt %s -p 'linear-transpose{graph=@f::@jvp1}' | filecheck %s
// RUN: tidu-opt %s -p 'linear-transpose{graph=@f::@jvp1},verify-linearity' | filecheck %s
// RUN: tidu-opt %s -p 'linear-transpose{graph=@f::@jvp1}' -o %t && tidu-run %t --entry @f::@jvp1::@vjp2 --arg 3.0 --arg 1.0 | filecheck %s --check-prefix=GRAD
// RUN: tidu-opt %s -p 'linear-transpose{graph=@f::@jvp1},linearize{graph=@f::@jvp1::@vjp2 wrt=x}' -o %t.for && tidu-run %t.for --entry @f::@jvp1::@vjp2::@jvp3 --arg 1.0 --arg 1.0 | filecheck %s --check-prefix=FOR

// The transpose of the worked example (x + x) * x: %t1 = %dx + %dx
// sends c1 = x*ct to %dx twice, after c2 = p1*ct: exactly two fan-out adds,
// emitted as ordinary prim.add ops with role [active, active].
// Results: the gradient 4x at x = 3, and f'' = 4 from linearizing the transposed fragment.
builtin.module attributes {cg.next_pass_id = 2 : i64} {
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
      cg.output %t4 : tensor<f64>
    }
    cg.output %p2 : tensor<f64>
  }
}

// CHECK:      builtin.module attributes {cg.next_pass_id = 3 : i64} {
// CHECK:          %t4 = prim.add %t2, %t3 {role = #cg.linearized<[active, active]>} : tensor<f64>
// CHECK-NEXT:     cg.linear @vjp2 pass 2 active [true] {
// CHECK-NEXT:       %ct = cg.input #cg.cotangent<0, 2> : tensor<f64>
// CHECK-NEXT:       %[[C1:.*]] = prim.mul {{.*}}%ct{{.*}} : tensor<f64>
// CHECK-NEXT:       %[[C2:.*]] = prim.mul {{.*}}%ct{{.*}} : tensor<f64>
// CHECK-NEXT:       %[[C3:.*]] = prim.add %[[C2]], %[[C1]] {role = #cg.linearized<[active, active]>} : tensor<f64>
// CHECK-NEXT:       %[[C4:.*]] = prim.add %[[C3]], %[[C1]] {role = #cg.linearized<[active, active]>} : tensor<f64>
// CHECK-NEXT:       cg.output %[[C4]] : tensor<f64>
// CHECK-NEXT:     }
// CHECK-NEXT:     cg.output %t4 : tensor<f64>
// CHECK-NEXT:   }

// GRAD: {{^12(\.0*)?$}}
// FOR: {{^4(\.0*)?$}}
