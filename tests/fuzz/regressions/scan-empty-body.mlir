func.func @f(%c: tensor<f64>) {
  %r, %ys = prim.scan length 4 init(%c) xs() consts() : (tensor<f64>) () () -> (tensor<f64>) (tensor<3xf64>) {
  ^bb0(%a: tensor<f64>):
  }
  func.return
}
