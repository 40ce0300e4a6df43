// REQUIRES: prim-ad-rules
// RUN: tidu-opt %s -p 'linear-transpose{graph=@exp::@jvp1},linear-transpose{graph=@matvec::@jvp2},linear-transpose{graph=@bcast::@jvp3},linear-transpose{graph=@slicepad::@jvp4},linear-transpose{graph=@cmul::@jvp5},verify-linearity' | filecheck %s
// RUN: tidu-opt %s -p 'linear-transpose{graph=@exp::@jvp1},linear-transpose{graph=@matvec::@jvp2},linear-transpose{graph=@bcast::@jvp3},linear-transpose{graph=@slicepad::@jvp4},linear-transpose{graph=@cmul::@jvp5}' -o %t
// RUN: tidu-run %t --entry @exp::@jvp1::@vjp6 --arg '[0.0, 1.0]' --arg '[1.0, 2.0]' | filecheck %s --check-prefix=EXP
// RUN: tidu-run %t --entry @matvec::@jvp2::@vjp7 --arg '[[1, 2, 3], [4, 5, 6]]' --arg '[1.0, -1.0]' | filecheck %s --check-prefix=MATVEC
// RUN: tidu-run %t --entry @bcast::@jvp3::@vjp8 --arg '[[1, 2, 3], [4, 5, 6]]' --arg '[1.0, 0.0, -1.0]' | filecheck %s --check-prefix=BCAST
// RUN: tidu-run %t --entry @slicepad::@jvp4::@vjp9 --arg '[1.0, 2.0, 3.0, 4.0]' | filecheck %s --check-prefix=SLICEPAD
// RUN: tidu-run %t --entry @cmul::@jvp5::@vjp10 --arg '[2+1j]' --arg '[1+1j]' | filecheck %s --check-prefix=CMUL
// RUN: tidu-run %t --backend interp --entry @cmul::@jvp5::@vjp10 --arg '[2+1j]' --arg '[1+1j]' | filecheck %s --check-prefix=CMUL

// The transpose rules of a few prim ops (tidu_mlir/dialects/prim_ad.py):
// mul by a fixed factor -> mul by its conjugate (a conj only for complex),
// dot_general -> dot_general of ct with the fixed operand, broadcast_in_dim
// <-> reduce_sum, slice <-> pad. The linear fragments are those `linearize`
// builds (tests/filecheck/linearize/prim-rules.mlir).
builtin.module attributes {cg.next_pass_id = 6 : i64} {
  cg.graph @exp {
    %x = cg.input #cg.key<"x"> : tensor<2xf64>
    %e = prim.exp %x : tensor<2xf64>
    cg.linear @jvp1 pass 1 active [true] {
      %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<2xf64>
      %t = prim.mul %e, %dx {role = #cg.linearized<[fixed, active]>} : tensor<2xf64>
      cg.output %t : tensor<2xf64>
    }
    cg.output %e : tensor<2xf64>
  }
  cg.graph @matvec {
    %a = cg.input #cg.key<"a"> : tensor<2x3xf64>
    %v = cg.input #cg.key<"v"> : tensor<3xf64>
    %r = prim.dot_general %a, %v, batch = [] x [], contract = [1] x [0] : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2xf64>
    cg.linear @jvp2 pass 2 active [true] {
      %dv = cg.input #cg.tangent<#cg.key<"v">, 2> : tensor<3xf64>
      %t = prim.dot_general %a, %dv, batch = [] x [], contract = [1] x [0] {role = #cg.linearized<[fixed, active]>} : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2xf64>
      cg.output %t : tensor<2xf64>
    }
    cg.output %r : tensor<2xf64>
  }
  cg.graph @bcast {
    %x = cg.input #cg.key<"x"> : tensor<3xf64>
    %b = prim.broadcast_in_dim %x, dims = [1] : tensor<3xf64> -> tensor<2x3xf64>
    %s = prim.reduce_sum %b, axes = [0] : tensor<2x3xf64> -> tensor<3xf64>
    cg.linear @jvp3 pass 3 active [true, true] {
      %dx = cg.input #cg.tangent<#cg.key<"x">, 3> : tensor<3xf64>
      %tb = prim.broadcast_in_dim %dx, dims = [1] {role = #cg.linearized<[active]>} : tensor<3xf64> -> tensor<2x3xf64>
      %ts = prim.reduce_sum %tb, axes = [0] {role = #cg.linearized<[active]>} : tensor<2x3xf64> -> tensor<3xf64>
      cg.output %tb, %ts : tensor<2x3xf64>, tensor<3xf64>
    }
    cg.output %b, %s : tensor<2x3xf64>, tensor<3xf64>
  }
  cg.graph @slicepad {
    %x = cg.input #cg.key<"x"> : tensor<5xf64>
    %s = prim.slice %x [1:5:2] : tensor<5xf64> -> tensor<2xf64>
    %p = prim.pad %s, low = [1], high = [0], interior = [1] : tensor<2xf64> -> tensor<4xf64>
    cg.linear @jvp4 pass 4 active [true] {
      %dx = cg.input #cg.tangent<#cg.key<"x">, 4> : tensor<5xf64>
      %ts = prim.slice %dx [1:5:2] {role = #cg.linearized<[active]>} : tensor<5xf64> -> tensor<2xf64>
      %tp = prim.pad %ts, low = [1], high = [0], interior = [1] {role = #cg.linearized<[active]>} : tensor<2xf64> -> tensor<4xf64>
      cg.output %tp : tensor<4xf64>
    }
    cg.output %p : tensor<4xf64>
  }
  cg.graph @cmul {
    %z = cg.input #cg.key<"z"> : tensor<1xcomplex<f64>>
    %w = cg.input #cg.key<"w"> : tensor<1xcomplex<f64>>
    %p = prim.mul %z, %w : tensor<1xcomplex<f64>>
    cg.linear @jvp5 pass 5 active [true] {
      %dz = cg.input #cg.tangent<#cg.key<"z">, 5> : tensor<1xcomplex<f64>>
      %t = prim.mul %dz, %w {role = #cg.linearized<[active, fixed]>} : tensor<1xcomplex<f64>>
      cg.output %t : tensor<1xcomplex<f64>>
    }
    cg.output %p : tensor<1xcomplex<f64>>
  }
}

// CHECK-LABEL: cg.graph @exp {
// CHECK:         cg.linear @vjp6 pass 6 active [true] {
// CHECK-NEXT:      %ct = cg.input #cg.cotangent<0, 6> : tensor<2xf64>
// CHECK-NEXT:      %[[C:.*]] = prim.mul %e, %ct {role = #cg.linearized<[fixed, active]>} : tensor<2xf64>
// CHECK-NEXT:      cg.output %[[C]] : tensor<2xf64>

// dot_general(a, dv) contracted a's axis 1; its transpose contracts ct with a's free axis 0.
// CHECK-LABEL: cg.graph @matvec {
// CHECK:         cg.linear @vjp7 pass 7 active [true] {
// CHECK-NEXT:      %[[CT:.*]] = cg.input #cg.cotangent<0, 7> : tensor<2xf64>
// CHECK-NEXT:      %[[C:.*]] = prim.dot_general %[[CT]], %a, batch = [] x [], contract = [0] x [0] {role = #cg.linearized<[active, fixed]>} : (tensor<2xf64>, tensor<2x3xf64>) -> tensor<3xf64>
// CHECK-NEXT:      cg.output %[[C]] : tensor<3xf64>

// reduce_sum^T = broadcast_in_dim, broadcast_in_dim^T = reduce_sum; %tb fans
// out (an output and the reduce_sum operand), so its two cotangents are added.
// CHECK-LABEL: cg.graph @bcast {
// CHECK:         cg.linear @vjp8 pass 8 active [true] {
// CHECK-NEXT:      %[[CB:.*]] = cg.input #cg.cotangent<0, 8> : tensor<2x3xf64>
// CHECK-NEXT:      %[[CS:.*]] = cg.input #cg.cotangent<1, 8> : tensor<3xf64>
// CHECK-NEXT:      %[[B:.*]] = prim.broadcast_in_dim %[[CS]], dims = [1] {role = #cg.linearized<[active]>} : tensor<3xf64> -> tensor<2x3xf64>
// CHECK-NEXT:      %[[A:.*]] = prim.add %[[CB]], %[[B]] {role = #cg.linearized<[active, active]>} : tensor<2x3xf64>
// CHECK-NEXT:      %[[R:.*]] = prim.reduce_sum %[[A]], axes = [0] {role = #cg.linearized<[active]>} : tensor<2x3xf64> -> tensor<3xf64>
// CHECK-NEXT:      cg.output %[[R]] : tensor<3xf64>

// pad^T = strided slice (stride = interior + 1); slice^T = pad (low = start,
// interior = stride - 1, high to the operand's size).
// CHECK-LABEL: cg.graph @slicepad {
// CHECK:         cg.linear @vjp9 pass 9 active [true] {
// CHECK-NEXT:      %[[CT:.*]] = cg.input #cg.cotangent<0, 9> : tensor<4xf64>
// CHECK-NEXT:      %[[S:.*]] = prim.slice %[[CT]] [1:4:2] {role = #cg.linearized<[active]>} : tensor<4xf64> -> tensor<2xf64>
// CHECK-NEXT:      %[[P:.*]] = prim.pad %[[S]], low = [1], high = [1], interior = [1] {role = #cg.linearized<[active]>} : tensor<2xf64> -> tensor<5xf64>
// CHECK-NEXT:      cg.output %[[P]] : tensor<5xf64>

// Complex: the adjoint of multiplication by w multiplies by conj(w) (a primary op).
// CHECK-LABEL: cg.graph @cmul {
// CHECK:         cg.linear @vjp10 pass 10 active [true] {
// CHECK-NEXT:      %[[CT:.*]] = cg.input #cg.cotangent<0, 10> : tensor<1xcomplex<f64>>
// CHECK-NEXT:      %[[W:.*]] = prim.conj %w : tensor<1xcomplex<f64>>
// CHECK-NEXT:      %[[C:.*]] = prim.mul %[[W]], %[[CT]] {role = #cg.linearized<[fixed, active]>} : tensor<1xcomplex<f64>>
// CHECK-NEXT:      cg.output %[[C]] : tensor<1xcomplex<f64>>

// exp(x)·ct at x = [0, 1], ct = [1, 2].
// EXP: [1, 5.43656]

// aᵀ·[1, -1].
// MATVEC: [-3, -3, -3]

// sum over axis 0 of ct_b + broadcast(ct_s).
// BCAST: [7, 7, 7]

// SLICEPAD: [0, 2, 0, 4, 0]

// conj(2+i)·(1+i) = 3+i.
// CMUL: [3+1j]
