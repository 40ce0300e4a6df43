// RUN: not tidu-opt %s -p 'linear-transpose{graph=@f}' 2>&1 | filecheck %s --check-prefix=GRAPH
// RUN: not tidu-opt %s -p 'linear-transpose{graph=@f::@jvp9}' 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not tidu-opt %s -p 'linear-transpose{graph=@f::@bad}' 2>&1 | filecheck %s --check-prefix=NONLINEAR

builtin.module attributes {cg.next_pass_id = 2 : i64} {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    cg.linear @bad pass 1 active [true] {
      %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
      %e = prim.exp %x : tensor<f64>
      %t = prim.sin %dx : tensor<f64>
      %u = prim.mul %e, %t {role = #cg.linearized<[fixed, active]>} : tensor<f64>
      cg.output %u : tensor<f64>
    }
    cg.output %x : tensor<f64>
  }
}

// GRAPH: error: linear-transpose needs a cg.linear fragment; '@f' is a cg.graph
// MISSING: error: no fragment '@f::@jvp9' in the module; fragments: @f, @f::@bad
// NONLINEAR: errors.mlir:11:7: error: 'prim.sin' has no linearized role (it is primary) but operand #0 depends on a tangent input of @f::@bad
