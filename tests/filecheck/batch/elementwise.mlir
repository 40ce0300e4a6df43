// RUN: tidu-opt %s -p 'batch{graph=@f axes=0,none size=4}' | filecheck %s
// RUN: tidu-opt %s -p 'batch{graph=@f axes=0,none size=2 name=fb}' -o %t
// RUN: tidu-run %t --entry @fb --arg '[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]' --arg '[1.0, 2.0, 3.0]' | filecheck %s --check-prefix=VALUE
// RUN: tidu-run %t --backend interp --entry @fb --arg '[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]' --arg '[1.0, 2.0, 3.0]' | filecheck %s --check-prefix=VALUE

// `x` is mapped over a new leading axis, `w` is the same for every example.
// `sin x` batches as itself on tensor<4x3xf64>; `w` is broadcast where it
// meets a batched operand; `cos w` reads only `w`, so it is copied, computed
// once, and its output stays unbatched (cg.batched_outputs says so).
builtin.module {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<3xf64>
    %w = cg.input #cg.key<"w"> : tensor<3xf64>
    %s = prim.sin %x : tensor<3xf64>
    %p = prim.mul %s, %w : tensor<3xf64>
    %c = prim.cos %w : tensor<3xf64>
    cg.output %p, %c : tensor<3xf64>, tensor<3xf64>
  }
}

// CHECK:      cg.graph @f {
// CHECK:      cg.graph @f_batched attributes {cg.batched_outputs = array<i1: true, false>} {
// CHECK-NEXT:   %[[X:.*]] = cg.input #cg.key<"x"> : tensor<4x3xf64>
// CHECK-NEXT:   %[[W:.*]] = cg.input #cg.key<"w"> : tensor<3xf64>
// CHECK-NEXT:   %[[S:.*]] = prim.sin %[[X]] : tensor<4x3xf64>
// CHECK-NEXT:   %[[WB:.*]] = prim.broadcast_in_dim %[[W]], dims = [1] : tensor<3xf64> -> tensor<4x3xf64>
// CHECK-NEXT:   %[[P:.*]] = prim.mul %[[S]], %[[WB]] : tensor<4x3xf64>
// CHECK-NEXT:   %[[C:.*]] = prim.cos %[[W]] : tensor<3xf64>
// CHECK-NEXT:   cg.output %[[P]], %[[C]] : tensor<4x3xf64>, tensor<3xf64>

// Row i is sin(x[i]) * w; cos(w) once.
// VALUE:      {{^}}{{\[\[}}0, 1.68294, 2.72789], [0.14112, -1.5136, -2.87677]]
// VALUE-NEXT: {{^}}[0.540302, -0.416147, -0.989992]
