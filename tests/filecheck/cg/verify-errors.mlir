// RUN: tidu-opt %s --split-input-file --verify-diagnostics | filecheck %s

builtin.module {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    %y = cg.input #cg.key<"x"> : tensor<f64>
    cg.output %x : tensor<f64>
  }
}
// CHECK: verify-errors.mlir:6:5: error: input key #cg.key<"x"> appears twice in the fragment
// CHECK-NEXT: %y = cg.input #cg.key<"x"> : tensor<f64>
// CHECK-NEXT: ^

// -----

builtin.module {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    %y = prim.add %z, %x : tensor<f64>
    %z = prim.add %x, %x : tensor<f64>
    cg.output %y : tensor<f64>
  }
}
// CHECK: verify-errors.mlir:19:5: error: operand #0 of 'prim.add' does not dominate its use

// -----

// A primal op may not reference a value of a nested fragment.
builtin.module {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    cg.linear @jvp1 pass 1 active [true] {
      %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
      cg.output %dx : tensor<f64>
    }
    %y = prim.add %dx, %x : tensor<f64>
    cg.output %y : tensor<f64>
  }
}
// CHECK: verify-errors.mlir:36:19: error: use of undefined value %dx

// -----

builtin.module {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
  }
}
// CHECK: error: {{.*}}cg.graph' must end with cg.output

// -----

builtin.module {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    cg.linear @jvp1 pass 1 active [true, true] {
      %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
      cg.output %dx : tensor<f64>
    }
    cg.output %x : tensor<f64>
  }
}
// CHECK: error: cg.linear has 2 active outputs but cg.output returns 1 values

// -----

builtin.module attributes {cg.next_pass_id = 2 : i64} {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    cg.linear @jvp1 pass 5 active [true] {
      %dx = cg.input #cg.tangent<#cg.key<"x">, 5> : tensor<f64>
      cg.output %dx : tensor<f64>
    }
    cg.output %x : tensor<f64>
  }
}
// CHECK: error: cg.linear pass id 5 is not below the module's cg.next_pass_id 2

// -----

builtin.module {
  cg.linear @jvp1 pass 1 active [] {
    cg.output
  }
}
// CHECK: error: 'cg.linear' expects parent op to be one of 'cg.graph', 'cg.linear'

// -----

builtin.module {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    %y = prim.add %x, %x {role = #cg.linearized<[active]>} : tensor<f64>
    cg.output %y : tensor<f64>
  }
}
// CHECK: error: role mask has 1 entries but the op has 2 operands

// -----

builtin.module {
  cg.graph @f {
    %x = cg.input #cg.tangent<#cg.key<"x">> : tensor<f64>
    cg.output %x : tensor<f64>
  }
}
// CHECK: verify-errors.mlir:103:43: error: Expected ','

// -----

builtin.module {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    %y = prim.add %x, %x {role = #cg.linearized<[active, maybe]>} : tensor<f64>
    cg.output %y : tensor<f64>
  }
}
// CHECK: verify-errors.mlir:114:58: error: Expected one of 'active', 'fixed' in a role mask
