"""Integer and boolean values in the AD walk: they never carry a tangent."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import IntegerType, TensorType

from tidu_mlir import ad
from tidu_mlir.diagnostics import OpError
from tidu_mlir.dialects import prim

from .prim_harness import build


def test_no_tangent_is_built_for_integer_values() -> None:
    """The JVP of `x * convert(n)` differentiates through the float path only:
    no op of the linear fragment has an integer or boolean result, and asking
    for the tangent of the integer input is an error naming its type."""
    n = np.arange(4, dtype=np.int64)
    x = np.ones(4)

    def body(b: Any, x: Any, n: Any) -> Any:
        doubled = b(prim.AddOp(n, n))
        as_float = b(prim.ConvertOp(doubled, prim.element_type_of_dtype(np.float64)))
        two = b(prim.ConstantOp.from_value(2, TensorType(prim.element_type_of(n.type), [4])))
        mask = b(prim.CompareOp("gt", n, two))
        return [b(prim.SelectOp(mask, b(prim.MulOp(x, as_float)), x)), doubled]

    module, graph = build(body, [x, n])
    lin = ad.linearize(graph, wrt=["x0"])
    linear_ops = list(lin.fragment.walk())
    assert any(isinstance(op, prim.MulOp) for op in linear_ops)
    for op in linear_ops:
        for result in op.results:
            element = prim.element_type_of(result.type)
            assert not isinstance(element, IntegerType), op.name
    with pytest.raises(OpError, match=r"wrt key 'x1' has type tensor<4xi64>"):
        ad.linearize(graph, wrt=["x1"])
