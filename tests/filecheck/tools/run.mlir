// RUN: tidu-run %s --entry @f --arg 3.0 | filecheck %s --check-prefix=PRIMAL
// RUN: tidu-run %s --entry @f::@jvp1 --arg 3.0 --arg 0.5 | filecheck %s --check-prefix=JVP
// RUN: tidu-run %s --entry @g --arg '[1.0, 2.0]' --arg '[[1, 2], [3, 4]]' | filecheck %s --check-prefix=MATVEC
// RUN: tidu-run %s --entry @z --arg '[1+2j, -0.5j]' | filecheck %s --check-prefix=COMPLEX
// RUN: tidu-run %s --entry @func_entry --arg '[1.0, 4.0]' | filecheck %s --check-prefix=FUNC
// RUN: not tidu-run %s --entry @f --arg '[1.0, 2.0]' 2>&1 | filecheck %s --check-prefix=BADSHAPE
// RUN: not tidu-run %s --entry @f 2>&1 | filecheck %s --check-prefix=BADCOUNT
// RUN: not tidu-run %s --entry @nope --arg 1.0 2>&1 | filecheck %s --check-prefix=NOENTRY

builtin.module attributes {cg.next_pass_id = 2 : i64} {
  // (x + x) * x with its linearization (the JVP fragment) written out.
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    %p1 = prim.add %x, %x : tensor<f64>
    %p2 = prim.mul %p1, %x : tensor<f64>
    cg.linear @jvp1 pass 1 active [true, false] {
      %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
      %t1 = prim.add %dx, %dx {role = #cg.linearized<[active, active]>} : tensor<f64>
      %t2 = prim.mul %p1, %dx {role = #cg.linearized<[fixed, active]>} : tensor<f64>
      %t3 = prim.mul %t1, %x {role = #cg.linearized<[active, fixed]>} : tensor<f64>
      %t4 = prim.add %t2, %t3 {role = #cg.linearized<[active, active]>} : tensor<f64>
      cg.output %t4 : tensor<f64>
    }
    cg.output %p2, %p1 : tensor<f64>, tensor<f64>
  }
  cg.graph @g {
    %v = cg.input #cg.key<"v"> : tensor<2xf64>
    %a = cg.input #cg.key<"a"> : tensor<2x2xf64>
    %r = prim.dot_general %a, %v, batch = [] x [], contract = [1] x [0] : (tensor<2x2xf64>, tensor<2xf64>) -> tensor<2xf64>
    cg.output %r, %a : tensor<2xf64>, tensor<2x2xf64>
  }
  cg.graph @z {
    %z = cg.input #cg.key<"z"> : tensor<2xcomplex<f64>>
    %c = prim.conj %z : tensor<2xcomplex<f64>>
    %m = prim.mul %z, %c : tensor<2xcomplex<f64>>
    cg.output %m, %c : tensor<2xcomplex<f64>>, tensor<2xcomplex<f64>>
  }
  func.func @func_entry(%x: tensor<2xf64>) -> tensor<2xf64> {
    %s = prim.sqrt %x : tensor<2xf64>
    func.return %s : tensor<2xf64>
  }
}

// PRIMAL: 18
// PRIMAL-NEXT: 6

// f'(3) * 0.5 = 12 * 0.5
// JVP: 6
// JVP-NEXT: inactive

// MATVEC: [5, 11]
// MATVEC-NEXT: {{\[\[}}1, 2], [3, 4]]

// COMPLEX: [5+0j, 0.25+0j]
// COMPLEX-NEXT: [1-2j, -0+0.5j]

// FUNC: [1, 2]

// BADSHAPE: tidu-run: argument 'x': expected shape () (tensor<f64>), got (2,)
// BADCOUNT: tidu-run: @f takes 1 arguments (x: tensor<f64>), got 0
// NOENTRY: tidu-run: no fragment '@nope' in the module; fragments: @f, @f::@jvp1, @g, @z
