func.func @f(%v: tensor<2xf64>) -> tensor<2xf64> {
  %s = prim.reduce_sum %v, axes = [0] : tensor<2xf64> -> tensor<f64>
  %ok = prim.compare lt, %s, %s : tensor<f64>
  %w = prim.sin %v : tensor<2xf64>
  %r = prim.check %ok, %w, message = "sum too large" : tensor<2xf64>
  func.return %r : tensor<2xf64>
}
