// Bad input never gives a Python traceback: a diagnostic and exit code 1.
// RUN: not tidu-opt %s 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not tidu-opt %s -p 'no-such-pass' 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not tidu-opt %s -p 'cse{bogus=1}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not tidu-opt %s.missing 2>&1 | filecheck %s --check-prefix=MISSING

builtin.module {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    %y = prim.frobnicate %x : tensor<f64>
    cg.output %y : tensor<f64>
  }
}

// UNKNOWN: opt-errors.mlir:10:{{[0-9]+}}: error: Operation prim.frobnicate is not registered
// UNKNOWN-NEXT: %y = prim.frobnicate %x : tensor<f64>
// UNKNOWN-NOT: Traceback
// PASS: tidu-opt: error: Unrecognized passes: ['no-such-pass']
// OPTION: tidu-opt: error: {{.*}}bogus
// MISSING: tidu-opt: error: No such file or directory
