func.func @f(%x: tensor<f64>) -> tensor<1000000000000xf64> {
  %b = prim.broadcast_in_dim %x, dims = [] : tensor<f64> -> tensor<1000000000000xf64>
  func.return %b : tensor<1000000000000xf64>
}
