func.func @f(%x: tensor<4xf64>) -> tensor<4xf64> {
  %e = prim.exp %x : tensor<4xf64>
  func.return %e : tensor<4xf64>
}
