// A malformed or unknown pass option is one line naming the pass and the
// option (not xDSL's ArgSpecParseError traceback), and exit code 1.
// RUN: not tidu-opt %s -p 'linearize{graph=' 2>&1 | filecheck %s --check-prefix=EMPTY
// RUN: not tidu-opt %s -p 'linearize{graph=@f wrt=x,}' 2>&1 | filecheck %s --check-prefix=EMPTY-ELEMENT
// RUN: not tidu-opt %s -p 'linearize{graph=@f' 2>&1 | filecheck %s --check-prefix=BRACE
// RUN: not tidu-opt %s -p 'linearize{graph="@f}' 2>&1 | filecheck %s --check-prefix=STRING
// RUN: not tidu-opt %s -p 'linearize{graf=@f}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not tidu-opt %s -p 'cse,,dce' 2>&1 | filecheck %s --check-prefix=SYNTAX

builtin.module {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    cg.output %x : tensor<f64>
  }
}

// EMPTY: tidu-opt: error: option 'graph' of pass 'linearize' has an empty value
// EMPTY-NOT: Traceback
// EMPTY-ELEMENT: tidu-opt: error: option 'wrt' of pass 'linearize' has an empty value
// BRACE: tidu-opt: error: the options of pass 'linearize' lack a closing '}'
// STRING: tidu-opt: error: option 'graph' of pass 'linearize': unterminated string "@f}
// UNKNOWN: tidu-opt: error: pass 'linearize' has no option 'graf'; its options are graph, wrt, outputs, name
// SYNTAX: tidu-opt: error: Expected pass name here at column 5 of 'cse,,dce'
// SYNTAX-NOT: Traceback
