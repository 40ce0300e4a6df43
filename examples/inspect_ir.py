"""What was derived: the module after tracing, linearize, linear-transpose, materialize."""

import numpy as np

import tidu_mlir as td
import tidu_mlir.numpy as tnp

stages = td.lower(lambda x: tnp.sum(tnp.sin(x) * x), np.ones(3))
for name in ("trace", "jvp", "vjp", "materialize"):
    print(f"// ----- {name}")
    print(stages[name])
