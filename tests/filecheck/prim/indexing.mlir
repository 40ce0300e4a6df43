// RUN: tidu-opt %s | tidu-opt | filecheck %s
// RUN: tidu-opt %s --print-op-generic | tidu-opt | filecheck %s

// The indexing ops print and parse back (custom and generic forms).

// CHECK-LABEL: func.func @indexing
func.func @indexing(%x: tensor<3x4xf64>, %i: tensor<2x5xi32>, %u: tensor<3x2x5xf64>, %s: tensor<i64>, %z: tensor<4xcomplex<f32>>, %j: tensor<i64>) {
  // CHECK-NEXT: %0 = prim.iota dimension = 1 : tensor<3x4xi64>
  %0 = prim.iota dimension = 1 : tensor<3x4xi64>
  // CHECK-NEXT: %1 = prim.gather %x, %i, axis = 1 : tensor<3x4xf64>, tensor<2x5xi32> -> tensor<3x2x5xf64>
  %1 = prim.gather %x, %i, axis = 1 : tensor<3x4xf64>, tensor<2x5xi32> -> tensor<3x2x5xf64>
  // CHECK-NEXT: %2 = prim.scatter_add %x, %i, %u, axis = 1 {role = #cg.linearized<[active, fixed, active]>} : tensor<3x4xf64>, tensor<2x5xi32>, tensor<3x2x5xf64> -> tensor<3x4xf64>
  %2 = prim.scatter_add %x, %i, %u, axis = 1 {role = #cg.linearized<[active, fixed, active]>} : tensor<3x4xf64>, tensor<2x5xi32>, tensor<3x2x5xf64> -> tensor<3x4xf64>
  // CHECK-NEXT: %3 = prim.scatter %x, %i, %u, axis = 1 : tensor<3x4xf64>, tensor<2x5xi32>, tensor<3x2x5xf64> -> tensor<3x4xf64>
  %3 = prim.scatter %x, %i, %u, axis = 1 : tensor<3x4xf64>, tensor<2x5xi32>, tensor<3x2x5xf64> -> tensor<3x4xf64>
  // CHECK-NEXT: %4 = prim.dynamic_slice %x [%s, %s], sizes = [2, 0] : tensor<3x4xf64>, tensor<i64>, tensor<i64> -> tensor<2x0xf64>
  %4 = prim.dynamic_slice %x [%s, %s], sizes = [2, 0] : tensor<3x4xf64>, tensor<i64>, tensor<i64> -> tensor<2x0xf64>
  // CHECK-NEXT: %5 = prim.gather %z, %j, axis = 0 : tensor<4xcomplex<f32>>, tensor<i64> -> tensor<complex<f32>>
  %5 = prim.gather %z, %j, axis = 0 : tensor<4xcomplex<f32>>, tensor<i64> -> tensor<complex<f32>>
  // CHECK-NEXT: %6 = prim.dynamic_update_slice %z, %z [%j] : tensor<4xcomplex<f32>>, tensor<4xcomplex<f32>>, tensor<i64> -> tensor<4xcomplex<f32>>
  %6 = prim.dynamic_update_slice %z, %z [%j] : tensor<4xcomplex<f32>>, tensor<4xcomplex<f32>>, tensor<i64> -> tensor<4xcomplex<f32>>
  func.return
}
