// RUN: not tidu-opt %s -p lower-to-llvm -t llvm 2>&1 | filecheck %s
// RUN: tidu-opt %s -p 'materialize{graph=@f name=f_fn},lower-to-llvm' -t llvm | filecheck %s --check-prefix=FIXED

// A module of AD fragments only is not silently printed as an empty LLVM
// module: the diagnostic names the pass that makes a function of a fragment.
builtin.module {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    %y = prim.mul %x, %x : tensor<f64>
    cg.output %y : tensor<f64>
  }
}

// CHECK: error: nothing to translate to LLVM IR: the module holds only cg.graph fragments (@f); materialize one into a function first, e.g. -p 'materialize{graph=@f name=f_fn},lower-to-llvm'
// FIXED: define void @"f_fn"
