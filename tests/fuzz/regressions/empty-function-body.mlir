func.func @f(%x: tensor<4xf64>) -> tensor<4xf64> {
}
