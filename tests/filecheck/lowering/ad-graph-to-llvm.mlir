// RUN: tidu-opt %S/../../../examples/square.mlir -p 'linearize{graph=@f wrt=x},linear-transpose{graph=@f::@jvp1},materialize{graph=@f::@jvp1::@vjp2 name=grad},lower-to-llvm' -t llvm | filecheck %s
// REQUIRES: prim-ad-rules

// The gradient of f(x) = (x + x) * x, materialized from its cg.graph fragments
// and lowered to LLVM IR: the fragments (the AD source) stay in the module and
// are not translated; the func.func is.

// CHECK:      define void @"grad"(ptr noalias %{{.*}}, ptr noalias %{{.*}}, ptr noalias %{{.*}})
// CHECK:        fadd contract double
// CHECK:        store double
// CHECK-NEXT:   ret void
// CHECK-NOT:  define
// CHECK-NOT:  cg.graph
