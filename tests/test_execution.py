"""Running compiled functions on numpy arrays that are views, not dense buffers."""

import numpy as np
import pytest

import tidu_mlir as td
import tidu_mlir.numpy as tnp


@pytest.mark.parametrize(
    "view",
    [lambda a: a.T, lambda a: a[:, ::2], lambda a: a[::-1], lambda a: np.asfortranarray(a)],
    ids=["transposed", "strided", "reversed", "fortran"],
)
def test_compiled_functions_accept_non_contiguous_views(view):
    base = np.arange(24.0).reshape(4, 6)
    x = view(base)
    assert not x.flags.c_contiguous or x.base is not None
    np.testing.assert_allclose(td.jit(lambda a: tnp.sin(a) * 2.0)(x), np.sin(x) * 2.0)
    np.testing.assert_allclose(td.grad(lambda a: tnp.sum(a * a))(x), 2 * x)
