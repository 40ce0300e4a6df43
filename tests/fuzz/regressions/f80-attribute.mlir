builtin.module attributes {a = 2 : f80} {}
