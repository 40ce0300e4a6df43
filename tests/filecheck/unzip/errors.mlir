// Refused input: a diagnostic saying what was expected, exit code 1.
// RUN: not tidu-opt %s -p 'unzip{graph=@f::@jvp1 policy=save-some}' 2>&1 | filecheck %s --check-prefix=POLICY
// RUN: not tidu-opt %s -p 'unzip{graph=@f}' 2>&1 | filecheck %s --check-prefix=GRAPH
// RUN: not tidu-opt %s -p 'unzip{graph=@f::@bad}' 2>&1 | filecheck %s --check-prefix=NONLINEAR
// RUN: not tidu-opt %s -p 'unzip{graph=@f::@nope}' 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not tidu-opt %s -p 'unzip{graph=@f::@jvp1 name=f}' 2>&1 | filecheck %s --check-prefix=TAKEN

builtin.module attributes {cg.next_pass_id = 2 : i64} {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    %p = prim.mul %x, %x : tensor<f64>
    cg.linear @jvp1 pass 1 active [true] {
      %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
      %t = prim.mul %x, %dx {role = #cg.linearized<[fixed, active]>} : tensor<f64>
      cg.output %t : tensor<f64>
    }
    cg.linear @bad pass 1 active [true] {
      %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
      %t = prim.mul %dx, %dx : tensor<f64>
      cg.output %t : tensor<f64>
    }
    cg.output %p : tensor<f64>
  }
  cg.graph @f_lin {
    %y = cg.input #cg.key<"y"> : tensor<f64>
    cg.output %y : tensor<f64>
  }
}

// POLICY: error: unknown unzip policy 'save-some'; valid policies: save-all, recompute-elementwise, save-nothing

// GRAPH: errors.mlir:9:3: error: unzip expects a linear fragment nested in the fragment it linearizes (e.g. @f::@jvp1, built by linearize); '@f' is a cg.graph
// GRAPH-NEXT: cg.graph @f {

// NONLINEAR: errors.mlir:19:7: error: unzip expects a linear fragment: 'prim.mul' has no linearized role (it is primary) but operands #0, #1 depend on a tangent input of @f::@bad
// NONLINEAR-NEXT: %t = prim.mul %dx, %dx : tensor<f64>

// MISSING: error: no fragment '@f::@nope' in the module; fragments: @f, @f::@jvp1, @f::@bad, @f_lin

// TAKEN: errors.mlir:8:1: error: a symbol '@f_lin' already exists in the module
