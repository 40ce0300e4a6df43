func.func @""(%a: tensor<2xf64>) -> tensor<2xf64> {
  func.return %a : tensor<2xf64>
}
