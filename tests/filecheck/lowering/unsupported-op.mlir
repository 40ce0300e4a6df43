// RUN: not tidu-opt %s -p lower-to-llvm 2>&1 | filecheck %s

func.func @f(%x: tensor<4xf64>) -> tensor<4xf64> {
  %y = arith.addf %x, %x : tensor<4xf64>
  func.return %y : tensor<4xf64>
}

// CHECK: convert-prim-to-loops: cannot lower 'arith.addf' (in @f)
