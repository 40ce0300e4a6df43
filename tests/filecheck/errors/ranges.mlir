// RUN: tidu-opt %s --split-input-file --verify-diagnostics | filecheck %s
// Integers, dimensions and pass ids beyond 64 bits, dense literals xDSL cannot
// store and unterminated strings are diagnostics at the offending text (they
// were tracebacks, silently wrapped numbers or an exponential-time lexer).

func.func @axes(%m: tensor<2x3xf64>) {
  %r = prim.reduce_sum %m, axes = [18446744073709551616] : tensor<2x3xf64> -> tensor<3xf64>
  func.return
}
// CHECK: ranges.mlir:7:36: error: 'axes' entry 18446744073709551616 does not fit in 64 bits

// -----

func.func @dims(%v: tensor<3xf64>) {
  %r = prim.broadcast_in_dim %v, dims = [18446744073709551616] : tensor<3xf64> -> tensor<2x3xf64>
  func.return
}
// CHECK: ranges.mlir:15:42: error: 'dims' entry 18446744073709551616 does not fit in 64 bits

// -----

func.func @contract(%m: tensor<2x3xf64>) {
  %r = prim.dot_general %m, %m, batch = [] x [], contract = [18446744073709551616] x [1] : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x2xf64>
  func.return
}
// CHECK: ranges.mlir:23:62: error: 'contract' entry 18446744073709551616 does not fit in 64 bits

// -----

func.func @f80() {
  %c = prim.constant dense<[(1.0, 2.0)]> : tensor<1xcomplex<f80>>
  func.return
}
// CHECK: ranges.mlir:31:27: error: dense literals of element type f80, f128 or integers wider than 64 bits are not supported

// -----

func.func @dimension(%a: tensor<100000000000000000000000xf64>) {
  func.return
}
// CHECK: ranges.mlir:38:33: error: dimension 100000000000000000000000 is larger than 9223372036854775807

// -----

builtin.module {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    cg.linear @jvp1 pass 9223372036854775808 active [true] {
      %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
      cg.output %dx : tensor<f64>
    }
    cg.output %x : tensor<f64>
  }
}
// CHECK: ranges.mlir:48:26: error: pass id 9223372036854775808 does not fit in 64 bits

// -----

builtin.module attributes {cg.next_pass_id = 9223372036854775808 : i64} {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    cg.output %x : tensor<f64>
  }
}
// CHECK: ranges.mlir:59:1: error: module attribute cg.next_pass_id must be an integer in 1..9223372036854775806, got -9223372036854775808 : i64

// -----

func.func @string() {
  "test.op"() {s = "unterminated} : () -> ()
  func.return
}
// CHECK: ranges.mlir:70:20: error: unterminated string literal
