// RUN: tidu-opt %s -p 'unzip{graph=@f::@jvp1 report=true}' 2>&1 >/dev/null | filecheck %s
// RUN: tidu-opt %s -p 'unzip{graph=@f::@jvp1 report=true policy=save-nothing}' 2>&1 >/dev/null | filecheck %s --check-prefix=NOTHING
// RUN: tidu-opt %s -p 'unzip{graph=@f::@jvp1}' 2>&1 >/dev/null | filecheck %s --allow-empty --check-prefix=QUIET

// report=true prints, on stderr, one remark for the pass (at the unzipped
// fragment) and one per residual: its index, type, dtype, size and source
// (the op computing it and where, or the input it is).
builtin.module attributes {cg.next_pass_id = 2 : i64} {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<2x3xf32>
    %p1 = prim.add %x, %x : tensor<2x3xf32>
    %p2 = prim.mul %p1, %x : tensor<2x3xf32>
    cg.linear @jvp1 pass 1 active [true] {
      %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<2x3xf32>
      %t1 = prim.add %dx, %dx {role = #cg.linearized<[active, active]>} : tensor<2x3xf32>
      %t2 = prim.mul %p1, %dx {role = #cg.linearized<[fixed, active]>} : tensor<2x3xf32>
      %t3 = prim.mul %t1, %x {role = #cg.linearized<[active, fixed]>} : tensor<2x3xf32>
      %t4 = prim.add %t2, %t3 {role = #cg.linearized<[active, active]>} : tensor<2x3xf32>
      cg.output %t4 : tensor<2x3xf32>
    }
    cg.output %p2 : tensor<2x3xf32>
  }
}

// CHECK:      report.mlir:13:5: remark: unzip of @f::@jvp1 (policy save-all) saves 2 residual(s), 48 bytes: @f_fwd2 -> @f_lin2::@jvp1
// CHECK-NEXT: report.mlir:13:5: remark: residual #0: tensor<2x3xf32>, float32, 24 bytes, from prim.add at {{.*}}report.mlir:11:5
// CHECK-NEXT: report.mlir:13:5: remark: residual #1: tensor<2x3xf32>, float32, 24 bytes, from input x
// CHECK-NOT:  remark

// NOTHING:      remark: unzip of @f::@jvp1 (policy save-nothing) saves 1 residual(s), 24 bytes
// NOTHING-NEXT: remark: residual #0: tensor<2x3xf32>, float32, 24 bytes, from input x

// QUIET-NOT: remark
