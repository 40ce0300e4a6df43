// RUN: tidu-opt %s -p 'materialize{graph=@f::@jvp1::@vjp2 name=grad}' | filecheck %s
// RUN: tidu-opt %s -p 'materialize{graph=@f::@jvp1}' | filecheck %s --check-prefix=JVP
// RUN: not tidu-opt %s -p 'materialize{graph=@f::@nope}' 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not tidu-opt %s -p 'materialize{graph=@f name=f_jvp1},materialize{graph=@f::@jvp1}' 2>&1 | filecheck %s --check-prefix=TAKEN

// The worked example (x + x) * x after linearize and linear-transpose. The
// function takes the signature inputs (enclosing fragments' inputs first), each
// with its key. Every reachable op is cloned, then CSE merges structurally
// identical ops (%c1b into %c1) but never a primary op with a linearized one
// (%d stays apart from %c1: roles are kept on the cloned ops).
builtin.module attributes {cg.next_pass_id = 3 : i64} {
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
      cg.linear @vjp2 pass 2 active [true, true] {
        %ct = cg.input #cg.cotangent<0, 2> : tensor<f64>
        %c1 = prim.mul %x, %ct {role = #cg.linearized<[fixed, active]>} : tensor<f64>
        %c2 = prim.mul %p1, %ct {role = #cg.linearized<[fixed, active]>} : tensor<f64>
        %c3 = prim.add %c2, %c1 {role = #cg.linearized<[active, active]>} : tensor<f64>
        %c1b = prim.mul %x, %ct {role = #cg.linearized<[fixed, active]>} : tensor<f64>
        %c4 = prim.add %c3, %c1b {role = #cg.linearized<[active, active]>} : tensor<f64>
        %d = prim.mul %x, %ct : tensor<f64>
        cg.output %c4, %d : tensor<f64>, tensor<f64>
      }
      cg.output %t4 : tensor<f64>
    }
    cg.output %p2 : tensor<f64>
  }
}

// CHECK:      func.func @grad(%[[X:[a-z0-9_]+]]: tensor<f64> {cg.key = #cg.key<"x">}, %[[CT:[a-z0-9_]+]]: tensor<f64> {cg.key = #cg.cotangent<0, 2>}) -> (tensor<f64>, tensor<f64>) {
// CHECK-NEXT:   %[[P1:[a-z0-9_]+]] = prim.add %[[X]], %[[X]] : tensor<f64>
// CHECK-NEXT:   %[[C2:[a-z0-9_]+]] = prim.mul %[[P1]], %[[CT]] {role = #cg.linearized<[fixed, active]>} : tensor<f64>
// CHECK-NEXT:   %[[C1:[a-z0-9_]+]] = prim.mul %[[X]], %[[CT]] {role = #cg.linearized<[fixed, active]>} : tensor<f64>
// CHECK-NEXT:   %[[C3:[a-z0-9_]+]] = prim.add %[[C2]], %[[C1]] {role = #cg.linearized<[active, active]>} : tensor<f64>
// CHECK-NEXT:   %[[C4:[a-z0-9_]+]] = prim.add %[[C3]], %[[C1]] {role = #cg.linearized<[active, active]>} : tensor<f64>
// CHECK-NEXT:   %[[D:[a-z0-9_]+]] = prim.mul %[[X]], %[[CT]] : tensor<f64>
// CHECK-NEXT:   func.return %[[C4]], %[[D]] : tensor<f64>, tensor<f64>
// CHECK-NEXT: }

// JVP:      func.func @f_jvp1(%[[X:[a-z0-9_]+]]: tensor<f64> {cg.key = #cg.key<"x">}, %[[DX:[a-z0-9_]+]]: tensor<f64> {cg.key = #cg.tangent<#cg.key<"x">, 1>}) -> tensor<f64> {
// JVP-NEXT:   %[[P1:[a-z0-9_]+]] = prim.add %[[X]], %[[X]] : tensor<f64>
// JVP-NEXT:   %[[T2:[a-z0-9_]+]] = prim.mul %[[P1]], %[[DX]] {role = #cg.linearized<[fixed, active]>} : tensor<f64>
// JVP-NEXT:   %[[T1:[a-z0-9_]+]] = prim.add %[[DX]], %[[DX]] {role = #cg.linearized<[active, active]>} : tensor<f64>
// JVP-NEXT:   %[[T3:[a-z0-9_]+]] = prim.mul %[[T1]], %[[X]] {role = #cg.linearized<[active, fixed]>} : tensor<f64>
// JVP-NEXT:   %[[T4:[a-z0-9_]+]] = prim.add %[[T2]], %[[T3]] {role = #cg.linearized<[active, active]>} : tensor<f64>
// JVP-NEXT:   func.return %[[T4]] : tensor<f64>
// JVP-NEXT: }

// MISSING: error: no fragment '@f::@nope' in the module; fragments: @f, @f::@jvp1, @f::@jvp1::@vjp2

// TAKEN: error: a symbol '@f_jvp1' already exists in the module
