// RUN: tidu-opt %s -p lower-to-llvm -t llvm | filecheck %s
// RUN: tidu-run %s --entry @f --arg '[[1.0, 2.0], [3.0, 4.0]]' --arg '[[1.0, 0.0], [0.0, 2.0]]' | filecheck %s --check-prefix=OUT

// A matrix product followed by a sum over rows, compiled and run natively.

func.func @f(%a: tensor<2x2xf64>, %b: tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<2xf64>) {
  %p = prim.dot_general %a, %b, batch = [] x [], contract = [1] x [0] : (tensor<2x2xf64>, tensor<2x2xf64>) -> tensor<2x2xf64>
  %s = prim.reduce_sum %p, axes = [0] : tensor<2x2xf64> -> tensor<2xf64>
  func.return %p, %s : tensor<2x2xf64>, tensor<2xf64>
}

// CHECK: define void @"f"(ptr noalias {{.*}}, ptr noalias {{.*}}, ptr noalias {{.*}}, ptr noalias {{.*}})
// CHECK: fmul
// OUT:      {{\[\[}}1, 4], [3, 8]]
// OUT-NEXT: [4, 12]
