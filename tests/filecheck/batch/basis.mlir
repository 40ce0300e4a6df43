// RUN: tidu-opt %s -p 'batch{graph=@f axes=basis,none,none size=3}' | filecheck %s
// RUN: tidu-opt %s -p 'batch{graph=@f axes=basis,none,none size=3 name=fb}' -o %t
// RUN: tidu-run %t --entry @fb --arg '[1.0, 1.0, 1.0]' --arg '[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]' --arg '[2.0, 3.0, 4.0]' | filecheck %s --check-prefix=VALUE
// RUN: tidu-run %t --backend interp --entry @fb --arg '[1.0, 1.0, 1.0]' --arg '[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]' --arg '[2.0, 3.0, 4.0]' | filecheck %s --check-prefix=VALUE

// `c` seeds the standard basis (the cotangent seeds of a Jacobian): example b
// is c[b] at position b, zero elsewhere. No 3x3 basis is built for it: `c * w`
// stays one-hot rows (scale `c * w`); the contraction of those rows with `a`
// picks `a`'s rows, scaled (a broadcast and a mul on 3x2, no 3x3 product); the
// one-hot output is built at the end (the scale with 3 zeros between its
// elements is the 3x3 diagonal read row by row).
builtin.module {
  cg.graph @f {
    %c = cg.input #cg.key<"c"> : tensor<3xf64>
    %a = cg.input #cg.key<"a"> : tensor<3x2xf64>
    %w = cg.input #cg.key<"w"> : tensor<3xf64>
    %s = prim.mul %c, %w : tensor<3xf64>
    %d = prim.dot_general %s, %a, batch = [] x [], contract = [0] x [0] : (tensor<3xf64>, tensor<3x2xf64>) -> tensor<2xf64>
    cg.output %d, %s : tensor<2xf64>, tensor<3xf64>
  }
}

// CHECK:      cg.graph @f_batched attributes {cg.batched_outputs = array<i1: true, true>} {
// CHECK-NEXT:   %[[C:.*]] = cg.input #cg.key<"c"> : tensor<3xf64>
// CHECK-NEXT:   %[[A:.*]] = cg.input #cg.key<"a"> : tensor<3x2xf64>
// CHECK-NEXT:   %[[W:.*]] = cg.input #cg.key<"w"> : tensor<3xf64>
// CHECK-NEXT:   %[[S:.*]] = prim.mul %[[C]], %[[W]] : tensor<3xf64>
// CHECK-NEXT:   %[[B:.*]] = prim.broadcast_in_dim %[[S]], dims = [0] : tensor<3xf64> -> tensor<3x2xf64>
// CHECK-NEXT:   %[[D:.*]] = prim.mul %[[B]], %[[A]] : tensor<3x2xf64>
// CHECK-NEXT:   %[[P:.*]] = prim.pad %[[S]], low = [0], high = [0], interior = [3] : tensor<3xf64> -> tensor<9xf64>
// CHECK-NEXT:   %[[R:.*]] = prim.reshape %[[P]] : tensor<9xf64> -> tensor<3x3xf64>
// CHECK-NEXT:   cg.output %[[D]], %[[R]] : tensor<3x2xf64>, tensor<3x3xf64>
// CHECK-NOT:    prim.dot_general

// Row b of the first output is w[b] * a[b]; the second is diag(w).
// VALUE:      {{^}}{{\[\[}}2, 4], [9, 12], [20, 24]]
// VALUE-NEXT: {{^}}{{\[\[}}2, 0, 0], [0, 3, 0], [0, 0, 4]]
