func.func @f(%a: i64) {
  %c = llvm.icmp "x" %a, %a : i64
  func.return
}
