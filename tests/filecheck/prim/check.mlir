// RUN: tidu-opt %s | tidu-opt | filecheck %s
// RUN: tidu-opt %s --print-op-generic | tidu-opt | filecheck %s
// prim.check (prim/check.py): its operand when the 0-d boolean holds, a
// run-time failure with its message otherwise; prints and parses back.

// CHECK-LABEL: func.func @check
func.func @check(%ok: tensor<i1>, %x: tensor<3xf64>, %z: tensor<2xcomplex<f32>>) {
  // CHECK-NEXT: %0 = prim.check %ok, %x, message = "while_loop: max_steps=3" : tensor<3xf64>
  %0 = prim.check %ok, %x, message = "while_loop: max_steps=3" : tensor<3xf64>
  // CHECK-NEXT: %1 = prim.check %ok, %z, message = "a \22quoted\22 word" {role = #cg.linearized<[fixed, active]>} : tensor<2xcomplex<f32>>
  %1 = prim.check %ok, %z, message = "a \22quoted\22 word" {role = #cg.linearized<[fixed, active]>} : tensor<2xcomplex<f32>>
  func.return
}
