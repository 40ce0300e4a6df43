// REQUIRES: prim-ad-rules
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=c,xs}' | filecheck %s
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=c,xs},verify-linearity' | filecheck %s
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=c,xs}' -o %t && tidu-run %t --backend interp --entry @f::@jvp1 --arg 0.5 --arg '[1.0, 2.0, 3.0]' --arg 1.0 --arg '[0.0, 0.0, 0.0]' | filecheck %s --check-prefix=VALUE

// The JVP of a scan is two scans (the unzip of a loop): a forward scan, the
// original body also returning its residuals stacked per iteration (the carry
// %a and cos %a), and a linear scan over the tangents and those residuals.
// The scanned input %xs is a residual too, read as it is (not stacked again).
builtin.module {
  cg.graph @f {
    %c0 = cg.input #cg.key<"c"> : tensor<f64>
    %xs = cg.input #cg.key<"xs"> : tensor<3xf64>
    %c, %ys = prim.scan length 3 init(%c0) xs(%xs) consts() : (tensor<f64>) (tensor<3xf64>) () -> (tensor<f64>) (tensor<3xf64>) {
    ^bb0(%a: tensor<f64>, %x: tensor<f64>):
      %m = prim.mul %a, %x : tensor<f64>
      %s = prim.sin %a : tensor<f64>
      %n = prim.add %m, %s : tensor<f64>
      prim.yield %n, %n : tensor<f64>, tensor<f64>
    }
    cg.output %c, %ys : tensor<f64>, tensor<3xf64>
  }
}

// CHECK:      cg.linear @jvp1 pass 1 active [true, true] {
// CHECK-NEXT:   %dc = cg.input #cg.tangent<#cg.key<"c">, 1> : tensor<f64>
// CHECK-NEXT:   %dxs = cg.input #cg.tangent<#cg.key<"xs">, 1> : tensor<3xf64>
// CHECK-NEXT:   %{{.*}}, %{{.*}}, %[[CARRIES:.*]], %[[COS:.*]] = prim.scan length 3 init(%c0) xs(%xs) consts() : (tensor<f64>) (tensor<3xf64>) () -> (tensor<f64>) (tensor<3xf64>, tensor<3xf64>, tensor<3xf64>) {
// CHECK:          %[[C:.*]] = prim.cos
// CHECK:          prim.yield %{{.*}}, %{{.*}}, %{{.*}}, %[[C]] : tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>
// CHECK-NEXT:   }
// CHECK-NEXT:   %[[DC:.*]], %[[DYS:.*]] = prim.scan length 3 init(%dc) xs(%dxs, %[[CARRIES]], %xs, %[[COS]]) consts() {role = #cg.linearized<[active, active, fixed, fixed, fixed]>}
// CHECK-NEXT:   ^bb0(%[[DA:[a-z0-9_]+]]: tensor<f64>, %[[DX:[a-z0-9_]+]]: tensor<f64>, %[[A:[a-z0-9_]+]]: tensor<f64>, %[[X:[a-z0-9_]+]]: tensor<f64>, %[[CA:[a-z0-9_]+]]: tensor<f64>):
// CHECK-DAG:      prim.mul %[[A]], %[[DX]] {role = #cg.linearized<[fixed, active]>}
// CHECK-DAG:      prim.mul %[[DA]], %[[X]] {role = #cg.linearized<[active, fixed]>}
// CHECK-DAG:      prim.mul %[[CA]], %[[DA]] {role = #cg.linearized<[fixed, active]>}
// CHECK:          prim.yield
// CHECK-NEXT:   }
// CHECK-NEXT:   cg.output %[[DC]], %[[DYS]] : tensor<f64>, tensor<3xf64>

// d c_{i+1} = x_i dc_i + c_i dx_i + cos(c_i) dc_i, with dc_0 = 1, dx = 0
// (at c = 0.5, xs = [1, 2, 3], dc = 1: dc_1 = 1 + cos(0.5) = 1.87758)
// VALUE: 9.8992
// VALUE-NEXT: [1.87758, 4.80192, 9.8992]
