// REQUIRES: prim-ad-rules
// RUN: tidu-opt %s -p 'linearize{graph=@exp wrt=x},linearize{graph=@matvec wrt=v},linearize{graph=@bcast wrt=x},linearize{graph=@slicepad wrt=x},verify-linearity' | filecheck %s
// RUN: tidu-opt %s -p 'linearize{graph=@exp wrt=x},linearize{graph=@matvec wrt=v},linearize{graph=@bcast wrt=x},linearize{graph=@slicepad wrt=x}' -o %t
// RUN: tidu-run %t --entry @exp::@jvp1 --arg '[0.0, 1.0]' --arg '[1.0, 2.0]' | filecheck %s --check-prefix=EXP
// RUN: tidu-run %t --backend interp --entry @exp::@jvp1 --arg '[0.0, 1.0]' --arg '[1.0, 2.0]' | filecheck %s --check-prefix=EXP
// RUN: tidu-run %t --entry @matvec::@jvp2 --arg '[[1, 2, 3], [4, 5, 6]]' --arg '[1.0, 0.0, -1.0]' | filecheck %s --check-prefix=MATVEC
// RUN: tidu-run %t --entry @bcast::@jvp3 --arg '[1.0, 2.0, 3.0]' | filecheck %s --check-prefix=BCAST
// RUN: tidu-run %t --entry @slicepad::@jvp4 --arg '[1.0, 2.0, 3.0, 4.0, 5.0]' | filecheck %s --check-prefix=SLICEPAD

// The JVP rules of a few prim ops (on the op classes, tidu_mlir/dialects/prim/). Fixed
// factors are primal values referenced directly (exp reuses its result %e);
// structural ops apply themselves to the tangent.
builtin.module {
  cg.graph @exp {
    %x = cg.input #cg.key<"x"> : tensor<2xf64>
    %e = prim.exp %x : tensor<2xf64>
    cg.output %e : tensor<2xf64>
  }
  cg.graph @matvec {
    %a = cg.input #cg.key<"a"> : tensor<2x3xf64>
    %v = cg.input #cg.key<"v"> : tensor<3xf64>
    %r = prim.dot_general %a, %v, batch = [] x [], contract = [1] x [0] : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2xf64>
    cg.output %r : tensor<2xf64>
  }
  cg.graph @bcast {
    %x = cg.input #cg.key<"x"> : tensor<3xf64>
    %b = prim.broadcast_in_dim %x, dims = [1] : tensor<3xf64> -> tensor<2x3xf64>
    %s = prim.reduce_sum %b, axes = [0] : tensor<2x3xf64> -> tensor<3xf64>
    cg.output %b, %s : tensor<2x3xf64>, tensor<3xf64>
  }
  cg.graph @slicepad {
    %x = cg.input #cg.key<"x"> : tensor<5xf64>
    %s = prim.slice %x [1:5:2] : tensor<5xf64> -> tensor<2xf64>
    %p = prim.pad %s, low = [1], high = [0], interior = [1] : tensor<2xf64> -> tensor<4xf64>
    cg.output %p : tensor<4xf64>
  }
}

// d exp(x) = exp(x)·dx: one mul by the primal result.
// CHECK-LABEL: cg.graph @exp {
// CHECK:         %[[E:.*]] = prim.exp %x : tensor<2xf64>
// CHECK-NEXT:    cg.linear @jvp1 pass 1 active [true] {
// CHECK-NEXT:      %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<2xf64>
// CHECK-NEXT:      %[[T:.*]] = prim.mul %[[E]], %dx {role = #cg.linearized<[fixed, active]>} : tensor<2xf64>
// CHECK-NEXT:      cg.output %[[T]] : tensor<2xf64>

// Bilinear dot_general, a fixed: dot_general(a, dv) with the same dimension numbers.
// CHECK-LABEL: cg.graph @matvec {
// CHECK:         cg.linear @jvp2 pass 2 active [true] {
// CHECK-NEXT:      %dv = cg.input #cg.tangent<#cg.key<"v">, 2> : tensor<3xf64>
// CHECK-NEXT:      %[[T:.*]] = prim.dot_general %a, %dv, batch = [] x [], contract = [1] x [0] {role = #cg.linearized<[fixed, active]>} : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2xf64>
// CHECK-NEXT:      cg.output %[[T]] : tensor<2xf64>

// CHECK-LABEL: cg.graph @bcast {
// CHECK:         cg.linear @jvp3 pass 3 active [true, true] {
// CHECK-NEXT:      %[[DX:.*]] = cg.input #cg.tangent<#cg.key<"x">, 3> : tensor<3xf64>
// CHECK-NEXT:      %[[B:.*]] = prim.broadcast_in_dim %[[DX]], dims = [1] {role = #cg.linearized<[active]>} : tensor<3xf64> -> tensor<2x3xf64>
// CHECK-NEXT:      %[[S:.*]] = prim.reduce_sum %[[B]], axes = [0] {role = #cg.linearized<[active]>} : tensor<2x3xf64> -> tensor<3xf64>
// CHECK-NEXT:      cg.output %[[B]], %[[S]] : tensor<2x3xf64>, tensor<3xf64>

// CHECK-LABEL: cg.graph @slicepad {
// CHECK:         cg.linear @jvp4 pass 4 active [true] {
// CHECK-NEXT:      %[[DX:.*]] = cg.input #cg.tangent<#cg.key<"x">, 4> : tensor<5xf64>
// CHECK-NEXT:      %[[S:.*]] = prim.slice %[[DX]] [1:5:2] {role = #cg.linearized<[active]>} : tensor<5xf64> -> tensor<2xf64>
// CHECK-NEXT:      %[[P:.*]] = prim.pad %[[S]], low = [1], high = [0], interior = [1] {role = #cg.linearized<[active]>} : tensor<2xf64> -> tensor<4xf64>
// CHECK-NEXT:      cg.output %[[P]] : tensor<4xf64>

// exp(x)·dx at x = [0, 1], dx = [1, 2]: [1, 2e].
// EXP: [1, 5.43656]

// a·dv with dv = [1, 0, -1].
// MATVEC: [-2, -2]

// BCAST: {{\[\[}}1, 2, 3], [1, 2, 3]]
// BCAST-NEXT: [2, 4, 6]

// SLICEPAD: [0, 2, 0, 4]
