// A worked example: f(x) = (x + x) * x, so f'(x) = 4x.
// Try:  tidu-opt examples/square.mlir -p 'linearize{graph=@f wrt=x},linear-transpose{graph=@f::@jvp1}'
builtin.module {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    %p1 = prim.add %x, %x : tensor<f64>
    %p2 = prim.mul %p1, %x : tensor<f64>
    cg.output %p2 : tensor<f64>
  }
}
