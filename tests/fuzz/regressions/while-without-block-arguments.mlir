func.func @f() {
  %c0 = arith.constant 0 : index
  %r = "scf.while"(%c0) ({
  ^bb0:
    %t = arith.constant true
    scf.condition(%t) %c0 : index
  }, {
  ^bb1(%b: index):
    scf.yield %b : index
  }) : (index) -> index
  func.return
}
