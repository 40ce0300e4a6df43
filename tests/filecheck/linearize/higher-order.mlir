// REQUIRES: prim-ad-rules
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=x},linearize{graph=@f::@jvp1 wrt=x},verify-linearity' | filecheck %s --check-prefix=FOF
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=x},linearize{graph=@f::@jvp1 wrt=x}' -o %t.fof && tidu-run %t.fof --entry @f::@jvp1::@jvp2 --arg 1.0 --arg 1.0 --arg 1.0 | filecheck %s --check-prefix=SECOND
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=x},linear-transpose{graph=@f::@jvp1},linearize{graph=@f::@jvp1::@vjp2 wrt=x},verify-linearity' | filecheck %s --check-prefix=HVP
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=x},linear-transpose{graph=@f::@jvp1},linearize{graph=@f::@jvp1::@vjp2 wrt=x}' -o %t.for && tidu-run %t.for --entry @f::@jvp1::@vjp2::@jvp3 --arg 1.0 --arg 1.0 --arg 1.0 | filecheck %s --check-prefix=SECOND
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=x},linearize{graph=@f::@jvp1 wrt=x},linearize{graph=@f::@jvp1::@jvp2 wrt=x}' -o %t.third && tidu-run %t.third --entry @f::@jvp1::@jvp2::@jvp3 --arg 1.0 --arg 1.0 --arg 1.0 --arg 1.0 | filecheck %s --check-prefix=THIRD
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=x},linearize{graph=@f::@jvp1 wrt=x},linearize{graph=@f::@jvp1::@jvp2 wrt=x},linear-transpose{graph=@f::@jvp1::@jvp2::@jvp3}' -o %t.rev && tidu-run %t.rev --entry @f::@jvp1::@jvp2::@jvp3::@vjp4 --arg 1.0 --arg 1.0 --arg 1.0 --arg 1.0 | filecheck %s --check-prefix=THIRD

// Higher order with the prim rules on f(x) = sin(x)·x:
// f'' = 2cos x - x sin x, f''' = -3 sin x - x cos x.
// FoF: linearize the JVP fragment again; HVP (FoR): linearize the transposed
// fragment; third order: three nested linearizations, the last one also
// transposed. Arguments: the signature order (x, then the seeds outermost first).
builtin.module {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    %s = prim.sin %x : tensor<f64>
    %y = prim.mul %s, %x : tensor<f64>
    cg.output %y : tensor<f64>
  }
}

// The second linearization differentiates the first one's fixed factor cos(x)
// (to -sin(x)) and keeps its tangent input %dx as a fixed operand.
// FOF:      cg.linear @jvp1 pass 1 active [true] {
// FOF-NEXT:   %dx = cg.input #cg.tangent<#cg.key<"x">, 1> : tensor<f64>
// FOF-NEXT:   %[[COS:.*]] = prim.cos %x : tensor<f64>
// FOF:        cg.linear @jvp2 pass 2 active [true] {
// FOF-NEXT:     %[[DX2:.*]] = cg.input #cg.tangent<#cg.key<"x">, 2> : tensor<f64>
// FOF:          %[[SIN:.*]] = prim.sin %x : tensor<f64>
// FOF-NEXT:     %[[NEG:.*]] = prim.neg %[[SIN]] : tensor<f64>
// FOF-NEXT:     %[[T:.*]] = prim.mul %[[NEG]], %[[DX2]] {role = #cg.linearized<[fixed, active]>} : tensor<f64>
// FOF-NEXT:     prim.mul %[[T]], %dx {role = #cg.linearized<[active, fixed]>} : tensor<f64>

// The HVP fragment is nested in the gradient fragment and uses its cotangent %ct as fixed.
// HVP:      cg.linear @vjp2 pass 2 active [true] {
// HVP-NEXT:   %ct = cg.input #cg.cotangent<0, 2> : tensor<f64>
// HVP:        cg.linear @jvp3 pass 3 active [true] {
// HVP-NEXT:     %[[DX3:.*]] = cg.input #cg.tangent<#cg.key<"x">, 3> : tensor<f64>
// HVP:          prim.mul %[[DX3]], %ct {role = #cg.linearized<[active, fixed]>} : tensor<f64>
// HVP:          cg.output

// f''(1) = 2cos(1) - sin(1)
// SECOND: {{^0.23913}}

// f'''(1) = -3sin(1) - cos(1)
// THIRD: {{^-3.0647}}
