// RUN: tidu-opt %s -p lower-scf-to-cf | filecheck %s

// A loop whose constant bounds make it run at least once is emitted rotated:
// the body, then the step, the test and a conditional branch back to the body
// (carried values passed along, the results read from the last iteration's
// yield). Other loops (a bound not constant, no iteration) keep the header
// block that tests before the body.

func.func @f(%n: index, %out: memref<4xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1.0 : f64
  %sum = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %one) -> (f64) {
    %next = arith.addf %acc, %one : f64
    scf.yield %next : f64
  }
  memref.store %sum, %out[%c0] : memref<4xf64>
  scf.for %j = %c0 to %n step %c1 {
    memref.store %one, %out[%j] : memref<4xf64>
  }
  scf.for %k = %c4 to %c0 step %c1 {
    memref.store %one, %out[%k] : memref<4xf64>
  }
  func.return
}

// CHECK-LABEL: func.func @f
// CHECK:         cf.br ^[[BODY:bb[0-9]+]](%c0, %one : index, f64)
// CHECK-NEXT:  ^[[BODY]](%i: index, %acc: f64):
// CHECK-NEXT:    %next = arith.addf %acc, %one : f64
// CHECK-NEXT:    %[[STEP:[0-9]+]] = arith.addi %i, %c1 : index
// CHECK-NEXT:    %[[MORE:[0-9]+]] = arith.cmpi slt, %[[STEP]], %c4 : index
// CHECK-NEXT:    cf.cond_br %[[MORE]], ^[[BODY]](%[[STEP]], %next : index, f64), ^[[EXIT:bb[0-9]+]]
// CHECK-NEXT:  ^[[EXIT]]:
// CHECK-NEXT:    memref.store %next, %out[%c0] : memref<4xf64>
// CHECK-NEXT:    cf.br ^[[HEADER:bb[0-9]+]](%c0 : index)
// CHECK-NEXT:  ^[[HEADER]](%j: index):
// CHECK-NEXT:    %[[TEST:[0-9]+]] = arith.cmpi slt, %j, %n : index
// CHECK-NEXT:    cf.cond_br %[[TEST]], ^{{bb[0-9]+}}, ^{{bb[0-9]+}}
// CHECK:         memref.store %one, %out[%j]
// CHECK:         cf.br ^[[HEADER]](%{{[0-9]+}} : index)
// CHECK:         cf.br ^[[HEADER2:bb[0-9]+]](%c4 : index)
// CHECK-NEXT:  ^[[HEADER2]](%k: index):
// CHECK-NEXT:    %{{[0-9]+}} = arith.cmpi slt, %k, %c0 : index
// CHECK:         func.return
