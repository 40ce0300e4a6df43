"test.op"() {v = 0xFFFFFFFFFFFFFFFFFFFF : f64} : () -> ()
