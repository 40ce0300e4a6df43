// RUN: tidu-opt %s | filecheck %s
// RUN: tidu-opt %s | tidu-opt | filecheck %s

// Loops in the llvm dialect, as `lower-to-llvm` prints them, read back:
// blocks with arguments, branches to blocks before and after them (named
// and numbered), scalar types. Lines alike but for their names and
// successors are read from the form of the first (`tidu_mlir.fast_syntax`).

builtin.module {
  llvm.func @f(%x: !llvm.ptr {llvm.noalias}, %out0: !llvm.ptr {llvm.noalias}) {
    %0 = llvm.mlir.constant(1) : i64
    %1 = llvm.mlir.constant(3) : i64
    %2 = llvm.mlir.constant(0) : i64
    llvm.br ^bb1(%2 : i64)
  ^bb1(%3: i64):
    %4 = llvm.getelementptr inbounds %x[%3] : (!llvm.ptr, i64) -> !llvm.ptr, f64
    %5 = llvm.load %4 : !llvm.ptr -> f64
    %6 = llvm.call_intrinsic "llvm.exp.f64"(%5) : (f64) -> f64
    %7 = llvm.getelementptr inbounds %out0[%3] : (!llvm.ptr, i64) -> !llvm.ptr, f64
    llvm.store %6, %7 : f64, !llvm.ptr
    %8 = llvm.add %3, %0 : i64
    %9 = llvm.icmp "slt" %8, %1 : i64
    llvm.cond_br %9, ^bb1(%8 : i64), ^bb2
  ^bb2:
    llvm.br ^loop(%2 : i64)
  ^loop(%10: i64):
    %11 = llvm.getelementptr inbounds %out0[%10] : (!llvm.ptr, i64) -> !llvm.ptr, f64
    %12 = llvm.load %11 : !llvm.ptr -> f64
    %13 = llvm.call_intrinsic "llvm.exp.f64"(%12) : (f64) -> f64
    llvm.store %13, %11 : f64, !llvm.ptr
    %14 = llvm.add %10, %0 : i64
    %15 = llvm.icmp "slt" %14, %1 : i64
    llvm.cond_br %15, ^loop(%14 : i64), ^done
  ^done:
    llvm.return
  }
}

// CHECK:      llvm.func @f(%x: !llvm.ptr {llvm.noalias}, %out0: !llvm.ptr {llvm.noalias}) {
// CHECK:        llvm.br ^bb1(%2 : i64)
// CHECK-NEXT:   ^bb1(%3: i64):
// CHECK:          %6 = llvm.call_intrinsic "llvm.exp.f64"(%5) : (f64) -> f64
// CHECK:          llvm.cond_br %9, ^bb1(%8 : i64), ^bb2
// CHECK-NEXT:   ^bb2:
// CHECK-NEXT:     llvm.br ^loop(%2 : i64)
// CHECK-NEXT:   ^loop(%10: i64):
// CHECK:          llvm.cond_br %15, ^loop(%14 : i64), ^done
// CHECK-NEXT:   ^done:
// CHECK-NEXT:     llvm.return
