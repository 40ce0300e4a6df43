// RUN: tidu-opt %s -p 'batch{graph=@f axes=0,0 size=5}' | filecheck %s
// RUN: tidu-opt %s -p 'batch{graph=@f axes=none,0 size=5}' | filecheck %s --check-prefix=RHS

// Axis-carrying ops shift their axes past the new leading one: the
// reduction's axes, the transpose's permutation, and dot_general gains a
// batch dimension when both operands are batched. With only the right
// operand batched, its new axis is a free dimension of the contraction, and a
// transpose brings it to the front.
builtin.module {
  cg.graph @f {
    %a = cg.input #cg.key<"a"> : tensor<2x3xf64>
    %b = cg.input #cg.key<"b"> : tensor<3x4xf64>
    %m = prim.dot_general %a, %b, batch = [] x [], contract = [1] x [0] : (tensor<2x3xf64>, tensor<3x4xf64>) -> tensor<2x4xf64>
    %t = prim.transpose %m, permutation = [1, 0] : tensor<2x4xf64> -> tensor<4x2xf64>
    %r = prim.reduce_sum %t, axes = [1] : tensor<4x2xf64> -> tensor<4xf64>
    cg.output %r : tensor<4xf64>
  }
}

// CHECK:      cg.graph @f_batched
// CHECK:      prim.dot_general %{{.*}}, %{{.*}}, batch = [0] x [0], contract = [2] x [1] : (tensor<5x2x3xf64>, tensor<5x3x4xf64>) -> tensor<5x2x4xf64>
// CHECK-NEXT: prim.transpose %{{.*}}, permutation = [0, 2, 1] : tensor<5x2x4xf64> -> tensor<5x4x2xf64>
// CHECK-NEXT: prim.reduce_sum %{{.*}}, axes = [2] : tensor<5x4x2xf64> -> tensor<5x4xf64>

// RHS:      cg.graph @f_batched attributes {cg.batched_outputs = array<i1: true>} {
// RHS:      %[[M:.*]] = prim.dot_general %{{.*}}, %{{.*}}, batch = [] x [], contract = [1] x [1] : (tensor<2x3xf64>, tensor<5x3x4xf64>) -> tensor<2x5x4xf64>
// RHS-NEXT: prim.transpose %[[M]], permutation = [1, 0, 2] : tensor<2x5x4xf64> -> tensor<5x2x4xf64>
