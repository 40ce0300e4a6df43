// RUN: tidu-opt %s -p 'unzip{graph=@f::@jvp1}' | filecheck %s
// RUN: tidu-opt %s -p 'unzip{graph=@f::@jvp1},verify-linearity,linear-transpose{graph=@f_lin2::@jvp1},verify-linearity' | filecheck %s --check-prefix=VJP
// RUN: tidu-opt %s -p 'unzip{graph=@f::@jvp1},linear-transpose{graph=@f_lin2::@jvp1}' -o %t
// RUN: tidu-run %t --entry @f_fwd2 --arg 3.0 | filecheck %s --check-prefix=FWD
// RUN: tidu-run %t --entry @f_lin2::@jvp1 --arg 6.0 --arg 3.0 --arg 0.5 | filecheck %s --check-prefix=JVP
// RUN: tidu-run %t --entry @f_lin2::@jvp1::@vjp3 --arg 6.0 --arg 3.0 --arg 1.0 | filecheck %s --check-prefix=GRAD
// RUN: tidu-opt %s -p 'unzip{graph=@f::@jvp1 name=sq},materialize{graph=@sq_fwd name=fwd},materialize{graph=@sq_lin::@jvp1 name=lin}' | filecheck %s --check-prefix=FUNC

// The worked example f(x) = (x + x) * x after linearize. unzip (pass 2) adds a
// forward graph returning the primal output and the residuals p1 = x + x and
// x (the primal values the linear ops read), and a graph of residual inputs
// holding a copy of @jvp1 that reads only them and its tangent: exactly the
// four linear ops. At x = 3: f = 18, p1 = 6; the JVP on dx = 0.5 is 4x·dx = 6,
// the gradient (transposing the unzipped fragment unchanged) is 4x = 12.
builtin.module attributes {cg.next_pass_id = 2 : i64} {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    %p1 = prim.add %x, %x : tensor<f64>
    %p2 = prim.mul %p1, %x : tensor<f64>
    cg.linear @jvp1 pass 1 active [true] {
      %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
      %t1 = prim.add %dx, %dx {role = #cg.linearized<[active, active]>} : tensor<f64>
      %t2 = prim.mul %p1, %dx {role = #cg.linearized<[fixed, active]>} : tensor<f64>
      %t3 = prim.mul %t1, %x {role = #cg.linearized<[active, fixed]>} : tensor<f64>
      %t4 = prim.add %t2, %t3 {role = #cg.linearized<[active, active]>} : tensor<f64>
      cg.output %t4 : tensor<f64>
    }
    cg.output %p2 : tensor<f64>
  }
}

// CHECK:      builtin.module attributes {cg.next_pass_id = 3 : i64} {
// CHECK:        cg.graph @f_fwd2 attributes {cg.residuals = #cg.residuals<2, 2>} {
// CHECK-NEXT:     %[[X:.*]] = cg.input #cg.key<"x"> : tensor<f64>
// CHECK-NEXT:     %[[P1:.*]] = prim.add %[[X]], %[[X]] : tensor<f64>
// CHECK-NEXT:     %[[P2:.*]] = prim.mul %[[P1]], %[[X]] : tensor<f64>
// CHECK-NEXT:     cg.output %[[P2]], %[[P1]], %[[X]] : tensor<f64>, tensor<f64>, tensor<f64>
// CHECK-NEXT:   }
// CHECK-NEXT:   cg.graph @f_lin2 {
// CHECK-NEXT:     %[[R0:.*]] = cg.input #cg.residual<0, 2> : tensor<f64>
// CHECK-NEXT:     %[[R1:.*]] = cg.input #cg.residual<1, 2> : tensor<f64>
// CHECK-NEXT:     cg.linear @jvp1 pass 2 active [true] {
// CHECK-NEXT:       %[[DX:.*]] = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
// CHECK-NEXT:       %[[T1:.*]] = prim.add %[[DX]], %[[DX]] {role = #cg.linearized<[active, active]>} : tensor<f64>
// CHECK-NEXT:       %[[T2:.*]] = prim.mul %[[R0]], %[[DX]] {role = #cg.linearized<[fixed, active]>} : tensor<f64>
// CHECK-NEXT:       %[[T3:.*]] = prim.mul %[[T1]], %[[R1]] {role = #cg.linearized<[active, fixed]>} : tensor<f64>
// CHECK-NEXT:       %[[T4:.*]] = prim.add %[[T2]], %[[T3]] {role = #cg.linearized<[active, active]>} : tensor<f64>
// CHECK-NEXT:       cg.output %[[T4]] : tensor<f64>
// CHECK-NEXT:     }
// CHECK-NEXT:     cg.output
// CHECK-NEXT:   }
// CHECK-NEXT: }

// VJP:        cg.graph @f_lin2 {
// VJP:            cg.linear @vjp3 pass 3 active [true] {
// VJP-NEXT:         %ct = cg.input #cg.cotangent<0, 3> : tensor<f64>
// VJP-COUNT-4:      role = #cg.linearized
// VJP:              cg.output

// FWD:      {{^18(\.0*)?$}}
// FWD-NEXT: {{^6(\.0*)?$}}
// FWD-NEXT: {{^3(\.0*)?$}}
// JVP: {{^6(\.0*)?$}}
// GRAD: {{^12(\.0*)?$}}

// FUNC:      func.func @fwd(%[[X:[a-z0-9_]+]]: tensor<f64> {cg.key = #cg.key<"x">}) -> (tensor<f64>, tensor<f64>, tensor<f64>)
// FUNC:      func.func @lin(%{{.*}}: tensor<f64> {cg.key = #cg.residual<0, 2>}, %{{.*}}: tensor<f64> {cg.key = #cg.residual<1, 2>}, %{{.*}}: tensor<f64> {cg.key = #cg.tangent<#cg.key<"x">, 1>}) -> tensor<f64>
// FUNC-COUNT-4: role = #cg.linearized
// FUNC-NEXT:    func.return
