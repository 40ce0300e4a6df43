// RUN: tidu-opt %s -p 'batch{graph=@f axes=0,none size=2}' | filecheck %s
// RUN: tidu-opt %s -p 'batch{graph=@f axes=0,none size=2 name=fb}' -o %t
// RUN: tidu-run %t --backend interp --entry @fb --arg '[[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]]' --arg 2.0 | filecheck %s --check-prefix=VALUE

// A batched scan: the body is batched (its scanned argument carries the
// batch, so the carry does too and its start is broadcast); the scanned
// operand's batch axis moves behind the scan axis (prim.transpose [1, 0]) and
// the stacked result's back in front. The const %w stays unbatched.
builtin.module {
  cg.graph @f {
    %xs = cg.input #cg.key<"xs"> : tensor<3xf64>
    %w = cg.input #cg.key<"w"> : tensor<f64>
    %c, %ys = prim.scan length 3 init(%w) xs(%xs) consts(%w) : (tensor<f64>) (tensor<3xf64>) (tensor<f64>) -> (tensor<f64>) (tensor<3xf64>) {
    ^bb0(%a: tensor<f64>, %x: tensor<f64>, %k: tensor<f64>):
      %m = prim.mul %a, %x : tensor<f64>
      %n = prim.add %m, %k : tensor<f64>
      prim.yield %n, %a : tensor<f64>, tensor<f64>
    }
    cg.output %c, %ys : tensor<f64>, tensor<3xf64>
  }
}

// CHECK:      cg.graph @f_batched attributes {cg.batched_outputs = array<i1: true, true>} {
// CHECK-NEXT:   %[[XS:xs[_0-9]*]] = cg.input #cg.key<"xs"> : tensor<2x3xf64>
// CHECK-NEXT:   %[[W:w[_0-9]*]] = cg.input #cg.key<"w"> : tensor<f64>
// CHECK-NEXT:   %[[START:.*]] = prim.broadcast_in_dim %[[W]], dims = [] : tensor<f64> -> tensor<2xf64>
// CHECK-NEXT:   %[[SCANNED:.*]] = prim.transpose %[[XS]], permutation = [1, 0] : tensor<2x3xf64> -> tensor<3x2xf64>
// CHECK-NEXT:   %[[C:[a-z0-9_]+]], %[[YS:[a-z0-9_]+]] = prim.scan length 3 init(%[[START]]) xs(%[[SCANNED]]) consts(%[[W]]) : (tensor<2xf64>) (tensor<3x2xf64>) (tensor<f64>) -> (tensor<2xf64>) (tensor<3x2xf64>) {
// CHECK-NEXT:   ^bb0(%{{.*}}: tensor<2xf64>, %{{.*}}: tensor<2xf64>, %{{.*}}: tensor<f64>):
// CHECK:          prim.yield %{{.*}}, %{{.*}} : tensor<2xf64>, tensor<2xf64>
// CHECK-NEXT:   }
// CHECK-NEXT:   %[[BACK:.*]] = prim.transpose %[[YS]], permutation = [1, 0] : tensor<3x2xf64> -> tensor<2x3xf64>
// CHECK-NEXT:   cg.output %[[C]], %[[BACK]] : tensor<2xf64>, tensor<2x3xf64>

// c = ((2·1 + 2)·2 + 2)·3 + 2 = 32 and ((2·0.5 + 2)·0.5 + 2)·0.5 + 2 = 3.75;
// ys are the carries before each step.
// VALUE: [32, 3.75]
// VALUE-NEXT: {{\[\[}}2, 4, 10], [2, 3, 3.5]]
