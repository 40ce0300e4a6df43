func.func @f(%x: tensor<4xf64>) -> tensor<4xf64> {
  %y = arith.addf %x, %x : tensor<4xf64>
  func.return %y : tensor<4xf64>
}
