// `--help-passes` documents every tidu pass: its name, a description, each
// option with its type and default; `--help` names them and points there.
// RUN: tidu-opt --help-passes | filecheck %s
// RUN: env COLUMNS=80 tidu-opt --help | filecheck %s --check-prefix=HELP

// CHECK:      tidu passes (run as -p 'NAME{OPTION=VALUE ...}'; list values comma-separated):
// CHECK-LABEL: {{^}}batch{{$}}
// CHECK-NEXT:      Vectorize a module-level `cg.graph`
// CHECK:           options:
// CHECK-NEXT:        graph (str, required)
// CHECK:             size (int, required)
// CHECK:             axes (list of int or str, default: empty)
// CHECK:             name (str, default: unset)
// CHECK-LABEL: {{^}}linearize{{$}}
// CHECK-NEXT:      Linearize a fragment (JVP, forward mode)
// CHECK:             graph (str, required)
// CHECK-NEXT:            the fragment to linearize, by path
// CHECK:             wrt (list of str, default: empty)
// CHECK:             outputs (list of int, default: unset)
// CHECK:             name (str, default: unset)
// CHECK-LABEL: {{^}}linear-transpose{{$}}
// CHECK:             graph (str, required)
// CHECK:             name (str, default: unset)
// CHECK:             add (str, default: unset)
// CHECK-LABEL: {{^}}materialize{{$}}
// CHECK:             graph (str, required)
// CHECK:             name (str, default: unset)
// CHECK-LABEL: {{^}}unzip{{$}}
// CHECK:             graph (str, required)
// CHECK:             policy (str, default: save-all)
// CHECK:             report (bool, default: false)
// CHECK:             name (str, default: unset)
// CHECK-LABEL: {{^}}verify-linearity{{$}}
// CHECK:             graph (str, default: unset)
// CHECK-LABEL: {{^}}fuse-recorded-loops{{$}}
// CHECK-NEXT:      Fuse each recorded while loop with the forward scan replaying it
// CHECK-LABEL: {{^}}prim-bufferize{{$}}
// CHECK-NEXT:      Give every tensor `func.func` the buffer calling convention.
// CHECK-LABEL: {{^}}convert-prim-to-loops{{$}}
// CHECK-LABEL: {{^}}parallelize-loops{{$}}
// CHECK:             min_work (int, default: -1)
// CHECK-LABEL: {{^}}split-functions{{$}}
// CHECK:             max_ops (int, default: 500)
// CHECK-LABEL: {{^}}promote-buffers-to-stack{{$}}
// CHECK-NEXT:      Small top-level temporaries
// CHECK:             max_alloc_bytes (int, default: 256)
// CHECK:             max_frame_bytes (int, default: 16384)
// CHECK:             max_buffers (int, default: 256)
// CHECK-LABEL: {{^}}pool-buffers{{$}}
// CHECK-NEXT:      The small heap temporaries of each function's entry block
// CHECK:             max_alloc_bytes (int, default: 65536)
// CHECK:             max_pool_bytes (int, default: 4194304)
// CHECK-LABEL: {{^}}lower-to-llvm{{$}}
// CHECK-LABEL: {{^}}convert-arith-to-llvm{{$}}
// CHECK-LABEL: {{^}}convert-math-to-llvm{{$}}
// CHECK-LABEL: {{^}}convert-func-to-llvm{{$}}
// CHECK:             noalias (bool, default: false)
// CHECK-LABEL: {{^}}lower-scf-to-cf{{$}}
// CHECK-LABEL: {{^}}convert-cf-to-llvm{{$}}
// CHECK-LABEL: {{^}}convert-memref-to-llvm{{$}}
// CHECK-LABEL: {{^}}reconcile-casts{{$}}
// CHECK-NEXT:      Remove the cast chains that close

// HELP:      tidu-mlir modular optimizer driver. tidu passes: batch, linearize,
// HELP-NEXT: {{^}}linear-transpose, materialize, unzip, verify-linearity, fuse-recorded-loops,
// HELP:      reconcile-casts (see{{[ \n]}}
// HELP-SAME: --help-passes).
// HELP:      {{^}}  --help-passes Document the tidu passes
