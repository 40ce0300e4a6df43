// REQUIRES: prim-ad-rules
// RUN: tidu-opt %s -p 'linearize{graph=@solve wrt=b},linear-transpose{graph=@solve::@jvp1},verify-linearity' | filecheck %s
// RUN: tidu-opt %s -p 'linearize{graph=@solve wrt=b},linear-transpose{graph=@solve::@jvp1}' -o %t
// RUN: tidu-run %t --entry @solve::@jvp1::@vjp2 --arg '[[2.0, 0.0], [1.0, 4.0]]' --arg '[[1.0], [1.0]]' | filecheck %s --check-prefix=VJP
// RUN: tidu-run %t --backend interp --entry @solve::@jvp1::@vjp2 --arg '[[2.0, 0.0], [1.0, 4.0]]' --arg '[[1.0], [1.0]]' | filecheck %s --check-prefix=VJP
// RUN: tidu-opt %s -p 'linearize{graph=@solve wrt=a}' | filecheck %s --check-prefix=WRT-A

// triangular_solve is linear in b: its JVP solves the tangent with the same
// triangle, its transpose solves with op(a)ᴴ (here Lᵀ: `transpose_a`); the
// VJP of x = L⁻¹ b at L = [[2, 0], [1, 4]] and ct = [1, 1] is L⁻ᵀ ct.
// With respect to a, dX = -op(a)⁻¹ (tril(da) X): the triangle read (a select
// on two iotas' comparison), a product with the primal solution, the same solve.
builtin.module {
  cg.graph @solve {
    %a = cg.input #cg.key<"a"> : tensor<2x2xf64>
    %b = cg.input #cg.key<"b"> : tensor<2x1xf64>
    %x = prim.triangular_solve %a, %b, lower : (tensor<2x2xf64>, tensor<2x1xf64>) -> tensor<2x1xf64>
    cg.output %x : tensor<2x1xf64>
  }
}

// CHECK:      cg.linear @jvp1
// CHECK:        %[[DB:.*]] = cg.input #cg.tangent<#cg.key<"b">, 1> : tensor<2x1xf64>
// CHECK-NEXT:   %[[DX:.*]] = prim.triangular_solve %a, %[[DB]], lower {role = #cg.linearized<[fixed, active]>}
// CHECK:        cg.linear @vjp2
// CHECK-NEXT:     %[[CT:.*]] = cg.input #cg.cotangent<0, 2> : tensor<2x1xf64>
// CHECK-NEXT:     %{{.*}} = prim.triangular_solve %a, %[[CT]], lower, transpose_a {role = #cg.linearized<[fixed, active]>}

// VJP: {{\[\[}}0.375], [0.25]]

// WRT-A:      %[[DA:.*]] = cg.input #cg.tangent<#cg.key<"a">, 1> : tensor<2x2xf64>
// WRT-A:      %[[LOWER:.*]] = prim.compare le, %{{.*}}, %{{.*}} : tensor<2x2xi32>
// WRT-A:      %[[READ:.*]] = prim.select %[[LOWER]], %[[DA]], %{{.*}} {role = #cg.linearized<[fixed, active, fixed]>}
// WRT-A-NEXT: %[[CHANGE:.*]] = prim.dot_general %[[READ]], %x
// WRT-A-NEXT: %[[NEG:.*]] = prim.neg %[[CHANGE]]
// WRT-A-NEXT: prim.triangular_solve %a, %[[NEG]], lower {role = #cg.linearized<[fixed, active]>}
