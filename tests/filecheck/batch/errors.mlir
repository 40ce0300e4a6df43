// Refused input: a diagnostic saying what was expected, exit code 1.
// RUN: not tidu-opt %s -p 'batch{graph=@f axes=0 size=2}' 2>&1 | filecheck %s --check-prefix=COUNT
// RUN: not tidu-opt %s -p 'batch{graph=@f axes=1,0 size=2}' 2>&1 | filecheck %s --check-prefix=AXIS
// RUN: not tidu-opt %s -p 'batch{graph=@f axes=0,0}' 2>&1 | filecheck %s --check-prefix=SIZE
// RUN: not tidu-opt %s -p 'batch{graph=@g axes=0,0 size=2}' 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not tidu-opt %s -p 'batch{graph=@f axes=0,0 size=2 name=f}' 2>&1 | filecheck %s --check-prefix=TAKEN
// RUN: not tidu-opt %s -p 'batch{graph=@f axes=basis,basis size=3}' 2>&1 | filecheck %s --check-prefix=BASIS

builtin.module {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<3xf64>
    %y = cg.input #cg.key<"y"> : tensor<3xf64>
    %p = prim.mul %x, %y : tensor<3xf64>
    cg.output %p : tensor<3xf64>
  }
}

// COUNT: errors.mlir:10:3: error: batch of @f needs one axis per input (2: x, y); got 1
// AXIS: error: batch axis '1' is not supported: the pass maps leading axes (`0`), broadcasts (`none`) or seeds a basis (`basis`); move other axes to the front first (td.vmap does)
// SIZE: error
// SIZE-SAME: size
// MISSING: error: no fragment '@g' in the module; fragments: @f
// TAKEN: error: a symbol '@f' already exists in the module
// BASIS: errors.mlir:10:3: error: batch of @f: the basis inputs have 6 elements in all; the batch size must equal it, got 3
