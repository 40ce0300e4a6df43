func.func @f() -> tensor<4294967296xf64> {
  %c = prim.constant dense<1.0> : tensor<4294967296xf64>
  func.return %c : tensor<4294967296xf64>
}
