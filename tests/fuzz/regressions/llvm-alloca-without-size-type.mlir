func.func @f(%n: i64) {
  %p = llvm.alloca %n x f64 : () -> !llvm.ptr
  func.return
}
