// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=x},linear-transpose{graph=@f::@jvp1 add=prim.add}' | filecheck %s
// RUN: not tidu-opt %s -p 'linearize{graph=@f wrt=x},linear-transpose{graph=@f::@jvp1}' 2>&1 | filecheck %s --check-prefix=NOADD
// RUN: not tidu-opt %s -p 'linearize{graph=@f wrt=x},linear-transpose{graph=@f::@jvp1 add=prim.nope}' 2>&1 | filecheck %s --check-prefix=BADADD

// An input returned twice: its cotangent is the sum of the two seeds, but a
// graph without ops names no dialect, so the addition comes from `add=`.
builtin.module {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    cg.output %x, %x : tensor<f64>, tensor<f64>
  }
}

// CHECK:      cg.linear @vjp2 pass 2 active [true] {
// CHECK-NEXT:   %ct = cg.input #cg.cotangent<0, 2> : tensor<f64>
// CHECK-NEXT:   %ct_1 = cg.input #cg.cotangent<1, 2> : tensor<f64>
// CHECK-NEXT:   %[[SUM:.*]] = prim.add %ct, %ct_1 {role = #cg.linearized<[active, active]>} : tensor<f64>
// CHECK-NEXT:   cg.output %[[SUM]] : tensor<f64>

// NOADD: input-returned-twice.mlir:8:3: error: cannot accumulate cotangents in @f::@jvp1: no differentiable op names the dialect's addition (name it with the pass option add=<op>, e.g. add=prim.add)
// BADADD: error: add=prim.nope is not a differentiable op of a loaded dialect
