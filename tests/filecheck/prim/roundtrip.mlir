// RUN: tidu-opt %s | tidu-opt | filecheck %s
// RUN: tidu-opt %s --print-op-generic | tidu-opt | filecheck %s

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: tensor<3xf64>, %b: tensor<3xf64>, %z: tensor<3xcomplex<f64>>, %s: tensor<f32>) -> tensor<3xf64> {
  // CHECK-NEXT: %0 = prim.add %a, %b : tensor<3xf64>
  %0 = prim.add %a, %b : tensor<3xf64>
  // CHECK-NEXT: %1 = prim.sub %a, %b : tensor<3xf64>
  %1 = prim.sub %a, %b : tensor<3xf64>
  // CHECK-NEXT: %2 = prim.mul %z, %z {role = #cg.linearized<[fixed, active]>} : tensor<3xcomplex<f64>>
  %2 = prim.mul %z, %z {role = #cg.linearized<[fixed, active]>} : tensor<3xcomplex<f64>>
  // CHECK-NEXT: %3 = prim.div %s, %s : tensor<f32>
  %3 = prim.div %s, %s : tensor<f32>
  // CHECK-NEXT: %4 = prim.maximum %a, %b : tensor<3xf64>
  %4 = prim.maximum %a, %b : tensor<3xf64>
  // CHECK-NEXT: %5 = prim.minimum %a, %b : tensor<3xf64>
  %5 = prim.minimum %a, %b : tensor<3xf64>
  // CHECK-NEXT: %6 = prim.neg %a : tensor<3xf64>
  %6 = prim.neg %a : tensor<3xf64>
  // CHECK-NEXT: %7 = prim.exp %z : tensor<3xcomplex<f64>>
  %7 = prim.exp %z : tensor<3xcomplex<f64>>
  // CHECK-NEXT: %8 = prim.log %a : tensor<3xf64>
  %8 = prim.log %a : tensor<3xf64>
  // CHECK-NEXT: %9 = prim.sin %s : tensor<f32>
  %9 = prim.sin %s : tensor<f32>
  // CHECK-NEXT: %10 = prim.cos %a {role = #cg.linearized<[active]>} : tensor<3xf64>
  %10 = prim.cos %a {role = #cg.linearized<[active]>} : tensor<3xf64>
  // CHECK-NEXT: %11 = prim.tanh %a : tensor<3xf64>
  %11 = prim.tanh %a : tensor<3xf64>
  // CHECK-NEXT: %12 = prim.sqrt %z : tensor<3xcomplex<f64>>
  %12 = prim.sqrt %z : tensor<3xcomplex<f64>>
  // CHECK-NEXT: %13 = prim.conj %z : tensor<3xcomplex<f64>>
  %13 = prim.conj %z : tensor<3xcomplex<f64>>
  // CHECK-NEXT: %14 = prim.pow %a, 2.5 : tensor<3xf64>
  %14 = prim.pow %a, 2.5 : tensor<3xf64>
  // CHECK-NEXT: %15 = prim.pow %a, -3.0 {role = #cg.linearized<[active]>} : tensor<3xf64>
  %15 = prim.pow %a, -3 {role = #cg.linearized<[active]>} : tensor<3xf64>
  // CHECK-NEXT: %16 = prim.abs %z : tensor<3xcomplex<f64>> -> tensor<3xf64>
  %16 = prim.abs %z : tensor<3xcomplex<f64>> -> tensor<3xf64>
  // CHECK-NEXT: %17 = prim.real %z : tensor<3xcomplex<f64>> -> tensor<3xf64>
  %17 = prim.real %z : tensor<3xcomplex<f64>> -> tensor<3xf64>
  // CHECK-NEXT: %18 = prim.imag %z : tensor<3xcomplex<f64>> -> tensor<3xf64>
  %18 = prim.imag %z : tensor<3xcomplex<f64>> -> tensor<3xf64>
  // CHECK-NEXT: %19 = prim.complex %a, %b : tensor<3xf64>, tensor<3xf64> -> tensor<3xcomplex<f64>>
  %19 = prim.complex %a, %b : tensor<3xf64>, tensor<3xf64> -> tensor<3xcomplex<f64>>
  // CHECK-NEXT: %20 = prim.compare lt, %a, %b : tensor<3xf64>
  %20 = prim.compare lt, %a, %b : tensor<3xf64>
  // CHECK-NEXT: %21 = prim.select %20, %a, %b : tensor<3xi1>, tensor<3xf64>
  %21 = prim.select %20, %a, %b : tensor<3xi1>, tensor<3xf64>
  // CHECK-NEXT: %22 = prim.convert %a : tensor<3xf64> -> tensor<3xcomplex<f32>>
  %22 = prim.convert %a : tensor<3xf64> -> tensor<3xcomplex<f32>>
  // CHECK-NEXT: %23 = prim.compare ge, %s, %s {role = #cg.linearized<[fixed, fixed]>} : tensor<f32>
  %23 = prim.compare ge, %s, %s {role = #cg.linearized<[fixed, fixed]>} : tensor<f32>
  // CHECK-NEXT: %24 = prim.pow %a, 1.0e-05 : tensor<3xf64>
  %24 = prim.pow %a, 1.0e-05 : tensor<3xf64>
  func.return %21 : tensor<3xf64>
}

// CHECK-LABEL: func.func @constants
func.func @constants() -> tensor<2xf64> {
  // CHECK-NEXT: %0 = prim.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf64>
  %0 = prim.constant dense<[1.0, 2.0]> : tensor<2xf64>
  // CHECK-NEXT: %1 = prim.constant dense<(1.000000e+00,2.000000e+00)> : tensor<1xcomplex<f64>>
  %1 = prim.constant dense<[(1.0,2.0)]> : tensor<1xcomplex<f64>>
  // CHECK-NEXT: %2 = prim.constant dense<0.000000e+00> : tensor<2x3xf32>
  %2 = prim.constant dense<0.0> : tensor<2x3xf32>
  // CHECK-NEXT: %3 = prim.constant {role = #cg.linearized<[]>} dense<3.000000e+00> : tensor<f64>
  %3 = prim.constant {role = #cg.linearized<[]>} dense<3.0> : tensor<f64>
  func.return %0 : tensor<2xf64>
}

// CHECK-LABEL: func.func @shapes
func.func @shapes(%x: tensor<3xf64>, %m: tensor<2x3xf64>, %l: tensor<4x2x3xf64>, %r: tensor<4x3x5xf64>, %v: tensor<8xcomplex<f32>>) -> tensor<2x3xf64> {
  // CHECK-NEXT: %0 = prim.broadcast_in_dim %x, dims = [1] : tensor<3xf64> -> tensor<2x3xf64>
  %0 = prim.broadcast_in_dim %x, dims = [1] : tensor<3xf64> -> tensor<2x3xf64>
  // CHECK-NEXT: %1 = prim.reduce_sum %m, axes = [0] : tensor<2x3xf64> -> tensor<3xf64>
  %1 = prim.reduce_sum %m, axes = [0] : tensor<2x3xf64> -> tensor<3xf64>
  // CHECK-NEXT: %2 = prim.reduce_max %m, axes = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  %2 = prim.reduce_max %m, axes = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  // CHECK-NEXT: %3 = prim.reshape %m : tensor<2x3xf64> -> tensor<6xf64>
  %3 = prim.reshape %m : tensor<2x3xf64> -> tensor<6xf64>
  // CHECK-NEXT: %4 = prim.transpose %m, permutation = [1, 0] : tensor<2x3xf64> -> tensor<3x2xf64>
  %4 = prim.transpose %m, permutation = [1, 0] : tensor<2x3xf64> -> tensor<3x2xf64>
  // CHECK-NEXT: %5 = prim.dot_general %l, %r, batch = [0] x [0], contract = [2] x [1] : (tensor<4x2x3xf64>, tensor<4x3x5xf64>) -> tensor<4x2x5xf64>
  %5 = prim.dot_general %l, %r, batch = [0] x [0], contract = [2] x [1] : (tensor<4x2x3xf64>, tensor<4x3x5xf64>) -> tensor<4x2x5xf64>
  // CHECK-NEXT: %6 = prim.dot_general %x, %x, batch = [] x [], contract = [] x [] : (tensor<3xf64>, tensor<3xf64>) -> tensor<3x3xf64>
  %6 = prim.dot_general %x, %x, batch = [] x [], contract = [] x [] : (tensor<3xf64>, tensor<3xf64>) -> tensor<3x3xf64>
  // CHECK-NEXT: %7 = prim.slice %v [1:5:2] : tensor<8xcomplex<f32>> -> tensor<2xcomplex<f32>>
  %7 = prim.slice %v [1:5:2] : tensor<8xcomplex<f32>> -> tensor<2xcomplex<f32>>
  // CHECK-NEXT: %8 = prim.slice %m [0:2:1, 1:3:1] {role = #cg.linearized<[active]>} : tensor<2x3xf64> -> tensor<2x2xf64>
  %8 = prim.slice %m [0:2:1, 1:3:1] {role = #cg.linearized<[active]>} : tensor<2x3xf64> -> tensor<2x2xf64>
  // CHECK-NEXT: %9 = prim.pad %x, low = [1], high = [2], interior = [1] : tensor<3xf64> -> tensor<8xf64>
  %9 = prim.pad %x, low = [1], high = [2], interior = [1] : tensor<3xf64> -> tensor<8xf64>
  // CHECK-NEXT: %10 = prim.concatenate %m, %m, %m, dimension = 0 : (tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<6x3xf64>
  %10 = prim.concatenate %m, %m, %m, dimension = 0 : (tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<6x3xf64>
  // CHECK-NEXT: %11 = prim.concatenate %x, dimension = 0 : tensor<3xf64> -> tensor<3xf64>
  %11 = prim.concatenate %x, dimension = 0 : tensor<3xf64> -> tensor<3xf64>
  // CHECK-NEXT: %s = prim.reduce_sum %x, axes = [0] : tensor<3xf64> -> tensor<f64>
  // CHECK-NEXT: %12 = prim.slice %s [] : tensor<f64> -> tensor<f64>
  %s = prim.reduce_sum %x, axes = [0] : tensor<3xf64> -> tensor<f64>
  %12 = prim.slice %s [] : tensor<f64> -> tensor<f64>
  func.return %0 : tensor<2x3xf64>
}

// CHECK-LABEL: cg.graph @f
cg.graph @f {
  // CHECK-NEXT: %x = cg.input #cg.key<"x"> : tensor<f64>
  %x = cg.input #cg.key<"x"> : tensor<f64>
  // CHECK-NEXT: %p1 = prim.add %x, %x : tensor<f64>
  %p1 = prim.add %x, %x : tensor<f64>
  // CHECK-NEXT: %p2 = prim.mul %p1, %x : tensor<f64>
  %p2 = prim.mul %p1, %x : tensor<f64>
  cg.output %p2 : tensor<f64>
}
