// RUN: tidu-opt %s --split-input-file --verify-diagnostics | filecheck %s
// One case per verifier rule of the prim dialect (xDSL's --verify-diagnostics
// prints the diagnostic of each chunk; the CHECK lines match them in order).

func.func @dynamic(%x: tensor<?xf64>) {
  %0 = prim.neg %x : tensor<?xf64>
  func.return
}
// CHECK: verify-errors.mlir:6:3: error: operand must have a static shape, got tensor<?xf64>

// -----

func.func @unranked(%x: tensor<*xf64>) {
  %0 = prim.exp %x : tensor<*xf64>
  func.return
}
// CHECK: error: operand must be a ranked tensor, got tensor<*xf64>

// -----

func.func @scalar_operand(%x: f64) {
  %0 = prim.exp %x : f64
  func.return
}
// CHECK: error: operand must be a ranked tensor, got f64

// -----

func.func @boolean_arithmetic(%x: tensor<3xi1>) {
  %0 = prim.add %x, %x : tensor<3xi1>
  func.return
}
// CHECK: error: lhs must have a numeric element type (f32, f64, complex<f32>, complex<f64>, i32, i64), got i1

// -----

func.func @integer_exp(%x: tensor<3xi32>) {
  %0 = prim.exp %x : tensor<3xi32>
  func.return
}
// CHECK: error: operand must have a float or complex element type (f32, f64, complex<f32>, complex<f64>), got i32

// -----

func.func @binary_types_differ(%a: tensor<3xf64>, %b: tensor<3xf32>) {
  %0 = "prim.mul"(%a, %b) : (tensor<3xf64>, tensor<3xf32>) -> tensor<3xf64>
  func.return
}
// CHECK: error: rhs type tensor<3xf32> must equal tensor<3xf64>

// -----

func.func @unary_result_differs(%a: tensor<3xf64>) {
  %0 = "prim.sin"(%a) : (tensor<3xf64>) -> tensor<2xf64>
  func.return
}
// CHECK: error: result type tensor<2xf64> must equal tensor<3xf64>

// -----

func.func @role_mask_length(%a: tensor<3xf64>) {
  %0 = prim.add %a, %a {role = #cg.linearized<[active]>} : tensor<3xf64>
  func.return
}
// CHECK: error: role mask has 1 entries but the op has 2 operands

// -----

func.func @maximum_complex(%z: tensor<3xcomplex<f64>>) {
  %0 = prim.maximum %z, %z : tensor<3xcomplex<f64>>
  func.return
}
// CHECK: error: lhs must have a real or integer element type (f32, f64, i32, i64), got complex<f64>

// -----

func.func @minimum_complex(%z: tensor<3xcomplex<f32>>) {
  %0 = prim.minimum %z, %z : tensor<3xcomplex<f32>>
  func.return
}
// CHECK: error: lhs must have a real or integer element type (f32, f64, i32, i64), got complex<f32>

// -----

func.func @pow_exponent_type(%x: tensor<3xf64>) {
  %0 = "prim.pow"(%x) <{exponent = 2.0 : f32}> : (tensor<3xf64>) -> tensor<3xf64>
  func.return
}
// CHECK: error: exponent must be an f64 attribute, got f32

// -----

func.func @abs_result(%z: tensor<3xcomplex<f64>>) {
  %0 = prim.abs %z : tensor<3xcomplex<f64>> -> tensor<3xcomplex<f64>>
  func.return
}
// CHECK: error: result type tensor<3xcomplex<f64>> must equal tensor<3xf64>

// -----

func.func @real_of_real(%x: tensor<3xf64>) {
  %0 = prim.real %x : tensor<3xf64> -> tensor<3xf64>
  func.return
}
// CHECK: error: operand must have a complex element type (complex<f32>, complex<f64>), got f64

// -----

func.func @imag_of_real(%x: tensor<3xf32>) {
  %0 = prim.imag %x : tensor<3xf32> -> tensor<3xf32>
  func.return
}
// CHECK: error: operand must have a complex element type (complex<f32>, complex<f64>), got f32

// -----

func.func @complex_parts_differ(%a: tensor<3xf64>, %b: tensor<3xf32>) {
  %0 = prim.complex %a, %b : tensor<3xf64>, tensor<3xf32> -> tensor<3xcomplex<f64>>
  func.return
}
// CHECK: error: im type tensor<3xf32> must equal tensor<3xf64>

// -----

func.func @complex_of_complex(%z: tensor<3xcomplex<f64>>) {
  %0 = prim.complex %z, %z : tensor<3xcomplex<f64>>, tensor<3xcomplex<f64>> -> tensor<3xcomplex<f64>>
  func.return
}
// CHECK: error: re must have a real element type (f32, f64), got complex<f64>

// -----

func.func @complex_result(%a: tensor<3xf64>) {
  %0 = prim.complex %a, %a : tensor<3xf64>, tensor<3xf64> -> tensor<3xcomplex<f32>>
  func.return
}
// CHECK: error: result type tensor<3xcomplex<f32>> must equal tensor<3xcomplex<f64>>

// -----

func.func @select_pred_not_i1(%p: tensor<3xf64>, %a: tensor<3xf64>) {
  %0 = prim.select %p, %a, %a : tensor<3xf64>, tensor<3xf64>
  func.return
}
// CHECK: error: pred must have a boolean element type (i1), got f64

// -----

func.func @select_pred_shape(%p: tensor<2xi1>, %a: tensor<3xf64>) {
  %0 = prim.select %p, %a, %a : tensor<2xi1>, tensor<3xf64>
  func.return
}
// CHECK: error: pred shape [2] does not match expected [3]

// -----

func.func @select_branches_differ(%p: tensor<3xi1>, %a: tensor<3xf64>, %b: tensor<3xf32>) {
  %0 = "prim.select"(%p, %a, %b) : (tensor<3xi1>, tensor<3xf64>, tensor<3xf32>) -> tensor<3xf64>
  func.return
}
// CHECK: error: on_false type tensor<3xf32> must equal tensor<3xf64>

// -----

func.func @compare_direction(%a: tensor<3xf64>) {
  %0 = prim.compare lte, %a, %a : tensor<3xf64>
  func.return
}
// CHECK: error: direction must be one of eq, ne, lt, le, gt, ge, got 'lte'

// -----

func.func @compare_complex(%z: tensor<3xcomplex<f64>>) {
  %0 = prim.compare eq, %z, %z : tensor<3xcomplex<f64>>
  func.return
}
// CHECK: error: lhs must have a real or integer element type (f32, f64, i32, i64), got complex<f64>

// -----

func.func @compare_result(%a: tensor<3xf64>) {
  %0 = "prim.compare"(%a, %a) <{direction = "lt"}> : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
  func.return
}
// CHECK: error: result type tensor<3xf64> must equal tensor<3xi1>

// -----

func.func @convert_shape(%a: tensor<3xf64>) {
  %0 = prim.convert %a : tensor<3xf64> -> tensor<4xf32>
  func.return
}
// CHECK: error: result shape [4] does not match expected [3]

// -----

func.func @convert_to_i8(%a: tensor<3xf64>) {
  %0 = prim.convert %a : tensor<3xf64> -> tensor<3xi8>
  func.return
}
// CHECK: error: result must have a supported element type (f32, f64, complex<f32>, complex<f64>, i32, i64, i1), got i8

// -----

func.func @constant_type() {
  %0 = "prim.constant"() <{value = dense<[1.0, 2.0]> : tensor<2xf64>}> : () -> tensor<2xf32>
  func.return
}
// CHECK: error: value type tensor<2xf64> must equal tensor<2xf32>

// -----

func.func @broadcast_dims_count(%x: tensor<3xf64>) {
  %0 = prim.broadcast_in_dim %x, dims = [0, 1] : tensor<3xf64> -> tensor<2x3xf64>
  func.return
}
// CHECK: error: dims has 2 entries, expected 1 (the rank)

// -----

func.func @broadcast_dims_order(%x: tensor<3x3xf64>) {
  %0 = prim.broadcast_in_dim %x, dims = [1, 0] : tensor<3x3xf64> -> tensor<3x3xf64>
  func.return
}
// CHECK: error: dims [1, 0] must be strictly increasing (sorted, unique)

// -----

func.func @broadcast_dims_range(%x: tensor<3xf64>) {
  %0 = prim.broadcast_in_dim %x, dims = [2] : tensor<3xf64> -> tensor<2x3xf64>
  func.return
}
// CHECK: error: broadcast dim 2 is out of range for rank 2

// -----

func.func @broadcast_sizes(%x: tensor<2xf64>) {
  %0 = prim.broadcast_in_dim %x, dims = [1] : tensor<2xf64> -> tensor<2x3xf64>
  func.return
}
// CHECK: error: operand dimension 0 has size 2, which is neither 1 nor the size 3 of result dimension 1

// -----

func.func @broadcast_element_type(%x: tensor<3xf64>) {
  %0 = prim.broadcast_in_dim %x, dims = [1] : tensor<3xf64> -> tensor<2x3xf32>
  func.return
}
// CHECK: error: result element type f32 must equal f64

// -----

func.func @reduce_axes_unsorted(%x: tensor<2x3xf64>) {
  %0 = prim.reduce_sum %x, axes = [1, 0] : tensor<2x3xf64> -> tensor<f64>
  func.return
}
// CHECK: error: axes [1, 0] must be strictly increasing (sorted, unique)

// -----

func.func @reduce_axes_range(%x: tensor<2x3xf64>) {
  %0 = prim.reduce_sum %x, axes = [2] : tensor<2x3xf64> -> tensor<2x3xf64>
  func.return
}
// CHECK: error: reduction axis 2 is out of range for rank 2

// -----

func.func @reduce_result_shape(%x: tensor<2x3xf64>) {
  %0 = prim.reduce_sum %x, axes = [0] : tensor<2x3xf64> -> tensor<2xf64>
  func.return
}
// CHECK: error: result shape [2] does not match expected [3]

// -----

func.func @reduce_max_complex(%z: tensor<3xcomplex<f64>>) {
  %0 = prim.reduce_max %z, axes = [0] : tensor<3xcomplex<f64>> -> tensor<complex<f64>>
  func.return
}
// CHECK: error: operand must have a real or integer element type (f32, f64, i32, i64), got complex<f64>

// -----

func.func @reshape_count(%x: tensor<2x3xf64>) {
  %0 = prim.reshape %x : tensor<2x3xf64> -> tensor<5xf64>
  func.return
}
// CHECK: error: reshape changes the element count from 6 to 5

// -----

func.func @transpose_not_permutation(%x: tensor<2x3xf64>) {
  %0 = prim.transpose %x, permutation = [0, 0] : tensor<2x3xf64> -> tensor<2x2xf64>
  func.return
}
// CHECK: error: permutation [0, 0] is not a permutation of 0..1

// -----

func.func @transpose_shape(%x: tensor<2x3xf64>) {
  %0 = prim.transpose %x, permutation = [1, 0] : tensor<2x3xf64> -> tensor<2x3xf64>
  func.return
}
// CHECK: error: result shape [2, 3] does not match expected [3, 2]

// -----

func.func @dot_dims_overlap(%l: tensor<3x3xf64>, %r: tensor<3x3xf64>) {
  %0 = prim.dot_general %l, %r, batch = [0] x [0], contract = [0] x [1] : (tensor<3x3xf64>, tensor<3x3xf64>) -> tensor<3x3xf64>
  func.return
}
// CHECK: error: lhs batch [0] and contracting [0] dimensions must be unique and disjoint

// -----

func.func @dot_dims_range(%l: tensor<2x3xf64>, %r: tensor<3x5xf64>) {
  %0 = prim.dot_general %l, %r, batch = [] x [], contract = [1] x [2] : (tensor<2x3xf64>, tensor<3x5xf64>) -> tensor<2x5xf64>
  func.return
}
// CHECK: error: rhs contracting dimension 2 is out of range for rank 2

// -----

func.func @dot_batch_sizes(%l: tensor<4x2x3xf64>, %r: tensor<5x3x5xf64>) {
  %0 = prim.dot_general %l, %r, batch = [0] x [0], contract = [2] x [1] : (tensor<4x2x3xf64>, tensor<5x3x5xf64>) -> tensor<4x2x5xf64>
  func.return
}
// CHECK: error: batch dimension sizes differ: lhs dimension 0 has size 4, rhs dimension 0 has size 5

// -----

func.func @dot_contract_sizes(%l: tensor<2x3xf64>, %r: tensor<4x5xf64>) {
  %0 = prim.dot_general %l, %r, batch = [] x [], contract = [1] x [0] : (tensor<2x3xf64>, tensor<4x5xf64>) -> tensor<2x5xf64>
  func.return
}
// CHECK: error: contracting dimension sizes differ: lhs dimension 1 has size 3, rhs dimension 0 has size 4

// -----

func.func @dot_contract_count(%l: tensor<2x3xf64>, %r: tensor<3x5xf64>) {
  %0 = prim.dot_general %l, %r, batch = [] x [], contract = [1] x [] : (tensor<2x3xf64>, tensor<3x5xf64>) -> tensor<2x5xf64>
  func.return
}
// CHECK: error: lhs and rhs contracting dimension lists differ in length

// -----

func.func @dot_result_shape(%l: tensor<2x3xf64>, %r: tensor<3x5xf64>) {
  %0 = prim.dot_general %l, %r, batch = [] x [], contract = [1] x [0] : (tensor<2x3xf64>, tensor<3x5xf64>) -> tensor<5x2xf64>
  func.return
}
// CHECK: error: result shape [5, 2] does not match expected [2, 5]

// -----

func.func @dot_element_types(%l: tensor<2x3xf64>, %r: tensor<3x5xf32>) {
  %0 = prim.dot_general %l, %r, batch = [] x [], contract = [1] x [0] : (tensor<2x3xf64>, tensor<3x5xf32>) -> tensor<2x5xf64>
  func.return
}
// CHECK: error: rhs element type f32 must equal f64

// -----

func.func @slice_bounds(%x: tensor<8xf64>) {
  %0 = prim.slice %x [5:9:1] : tensor<8xf64> -> tensor<4xf64>
  func.return
}
// CHECK: error: slice bounds of dimension 0 must satisfy 0 <= start <= limit <= 8, got start 5, limit 9

// -----

func.func @slice_stride(%x: tensor<8xf64>) {
  %0 = prim.slice %x [1:5:0] : tensor<8xf64> -> tensor<4xf64>
  func.return
}
// CHECK: error: slice stride of dimension 0 must be > 0, got 0

// -----

func.func @slice_result(%x: tensor<8xf64>) {
  %0 = prim.slice %x [1:6:2] : tensor<8xf64> -> tensor<2xf64>
  func.return
}
// CHECK: error: result shape [2] does not match expected [3]

// -----

func.func @slice_rank(%x: tensor<8x2xf64>) {
  %0 = prim.slice %x [1:6:2] : tensor<8x2xf64> -> tensor<3x2xf64>
  func.return
}
// CHECK: error: start has 1 entries, expected 2 (the rank)

// -----

func.func @pad_negative(%x: tensor<3xf64>) {
  %0 = prim.pad %x, low = [-1], high = [0], interior = [0] : tensor<3xf64> -> tensor<2xf64>
  func.return
}
// CHECK: error: pad low [-1] must be non-negative

// -----

func.func @pad_result(%x: tensor<3xf64>) {
  %0 = prim.pad %x, low = [1], high = [2], interior = [1] : tensor<3xf64> -> tensor<7xf64>
  func.return
}
// CHECK: error: result shape [7] does not match expected [8]

// -----

func.func @concatenate_rank(%a: tensor<2x3xf64>, %b: tensor<3xf64>) {
  %0 = prim.concatenate %a, %b, dimension = 0 : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<5x3xf64>
  func.return
}
// CHECK: error: concatenate input #1 has rank 1, expected 2

// -----

func.func @concatenate_other_dims(%a: tensor<2x3xf64>, %b: tensor<2x4xf64>) {
  %0 = prim.concatenate %a, %b, dimension = 0 : (tensor<2x3xf64>, tensor<2x4xf64>) -> tensor<4x3xf64>
  func.return
}
// CHECK: error: concatenate input #1 has size 4 in dimension 1, expected 3

// -----

func.func @concatenate_sizes(%a: tensor<2x3xf64>, %b: tensor<1x3xf64>) {
  %0 = prim.concatenate %a, %b, dimension = 0 : (tensor<2x3xf64>, tensor<1x3xf64>) -> tensor<4x3xf64>
  func.return
}
// CHECK: error: result shape [4, 3] does not match expected [3, 3]

// -----

func.func @concatenate_dimension(%a: tensor<2x3xf64>) {
  %0 = prim.concatenate %a, %a, dimension = 2 : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<4x3xf64>
  func.return
}
// CHECK: error: concatenate dimension 2 is out of range for rank 2

// -----

func.func @concatenate_element_types(%a: tensor<2xf64>, %b: tensor<2xf32>) {
  %0 = prim.concatenate %a, %b, dimension = 0 : (tensor<2xf64>, tensor<2xf32>) -> tensor<4xf64>
  func.return
}
// CHECK: error: input #1 element type f32 must equal f64
