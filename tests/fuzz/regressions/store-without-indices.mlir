func.func @f() {
  %v = arith.constant 1.0 : f64
  %inner = memref.alloc() : memref<2xf64>
  memref.store %v, %inner[] : memref<2xf64>
  func.return
}
