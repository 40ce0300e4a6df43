// Refused input: a diagnostic naming what exists, exit code 1.
// RUN: not tidu-opt %s -p 'linearize{graph=@f wrt=z}' 2>&1 | filecheck %s --check-prefix=WRT
// RUN: not tidu-opt %s -p 'linearize{graph=@g wrt=x}' 2>&1 | filecheck %s --check-prefix=GRAPH
// RUN: not tidu-opt %s -p 'linearize{graph=@f wrt=x outputs=3}' 2>&1 | filecheck %s --check-prefix=OUTPUTS
// RUN: not tidu-opt %s -p 'linearize{graph=@f wrt=tangent(x)}' 2>&1 | filecheck %s --check-prefix=MALFORMED
// RUN: not tidu-opt %s -p 'linearize{graph=@f wrt=u name=jvp},linearize{graph=@f wrt=u name=jvp}' 2>&1 | filecheck %s --check-prefix=NAME

builtin.module {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    %y = cg.input #cg.key<"y"> : tensor<f64>
    %u = cg.input #cg.key<"u"> : tensor<f64>
    %p = prim.mul %x, %y : tensor<f64>
    cg.output %p : tensor<f64>
  }
}

// WRT: errors.mlir:9:3: error: unknown wrt key 'z' for @f; inputs: x, y, u
// WRT-NEXT: cg.graph @f {
// WRT-NEXT: ^

// GRAPH: error: no fragment '@g' in the module; fragments: @f

// OUTPUTS: errors.mlir:9:3: error: output index 3 out of range: @f has 1 output(s)

// MALFORMED: error: malformed key 'tangent(x)': expected a name, tangent(KEY,N) or cotangent(I,N)

// NAME: errors.mlir:9:3: error: a symbol '@jvp' already exists in @f
