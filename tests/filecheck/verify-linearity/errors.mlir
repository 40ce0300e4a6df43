// A linear fragment must be linear in its tangent inputs, op by op; the
// diagnostic names the offending op at its location.
// RUN: not tidu-opt %s -p 'verify-linearity{graph=@f::@primary}' 2>&1 | filecheck %s --check-prefix=PRIMARY
// RUN: not tidu-opt %s -p 'verify-linearity{graph=@f::@mask}' 2>&1 | filecheck %s --check-prefix=MASK
// RUN: not tidu-opt %s -p 'verify-linearity{graph=@f::@constant}' 2>&1 | filecheck %s --check-prefix=CONSTANT
// RUN: not tidu-opt %s -p 'verify-linearity' 2>&1 | filecheck %s --check-prefix=PRIMARY
// RUN: not tidu-opt %s -p 'verify-linearity{graph=@f}' 2>&1 | filecheck %s --check-prefix=GRAPH
// RUN: not tidu-opt %s -p 'linear-transpose{graph=@f::@mask}' 2>&1 | filecheck %s --check-prefix=MASK

builtin.module attributes {cg.next_pass_id = 4 : i64} {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    cg.linear @primary pass 1 active [true] {
      %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
      %t = prim.exp %dx : tensor<f64>
      cg.output %t : tensor<f64>
    }
    cg.linear @mask pass 2 active [true] {
      %dx = cg.input #cg.tangent<#cg.key<"x">, 2> : tensor<f64>
      %t = prim.mul %dx, %x {role = #cg.linearized<[fixed, active]>} : tensor<f64>
      cg.output %t : tensor<f64>
    }
    cg.linear @constant pass 3 active [true] {
      %dx = cg.input #cg.tangent<#cg.key<"x">, 3> : tensor<f64>
      %t = prim.exp %x : tensor<f64>
      cg.output %t : tensor<f64>
    }
    cg.output %x : tensor<f64>
  }
}

// PRIMARY: errors.mlir:15:7: error: 'prim.exp' has no linearized role (it is primary) but operand #0 depends on a tangent input of @f::@primary
// PRIMARY-NEXT: %t = prim.exp %dx : tensor<f64>
// PRIMARY-NEXT: ^

// MASK: errors.mlir:20:7: error: the role of 'prim.mul' marks operand #1 active, but operand #0 depends on a tangent input of @f::@mask

// CONSTANT: errors.mlir:26:7: error: output #0 of @f::@constant does not depend on a tangent input (a constant output is not linear)

// GRAPH: error: verify-linearity checks cg.linear fragments; '@f' is a cg.graph
