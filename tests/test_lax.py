"""`td.lax`: primitive-level functions agree with numpy, traced and concrete."""

from __future__ import annotations

import numpy as np
import pytest

import tidu_mlir as td
import tidu_mlir.numpy as tnp
from tidu_mlir import lax


def test_pad_matches_numpy_pad_without_interior():
    x = np.arange(6.0).reshape(2, 3)
    expected = np.pad(x, [(1, 0), (2, 1)], constant_values=7.0)
    config = [(1, 0, 0), (2, 1, 0)]
    np.testing.assert_array_equal(lax.pad(x, 7.0, config), expected)
    np.testing.assert_array_equal(td.jit(lambda a: lax.pad(a, 7.0, config))(x), expected)


def test_pad_interior_and_its_gradient():
    x = np.array([1.0, 2.0, 3.0])
    config = [(1, 1, 2)]
    expected = np.array([5.0, 1.0, 5.0, 5.0, 2.0, 5.0, 5.0, 3.0, 5.0])
    np.testing.assert_array_equal(lax.pad(x, 5.0, config), expected)
    np.testing.assert_array_equal(td.jit(lambda a: lax.pad(a, 5.0, config))(x), expected)
    # d/dx sum(pad(x)^2) = 2x: the padding value is a constant
    grad = td.grad(lambda a: (lax.pad(a, 5.0, config) ** 2).sum())(x)
    np.testing.assert_allclose(grad, 2 * x)


def test_complex_assembles_parts_and_differentiates():
    re, im = np.array([1.0, -2.0]), np.array([0.5, np.inf])
    z = lax.complex(re, im)
    assert z.dtype == np.complex128 and np.isinf(z.imag[1]) and z.real[1] == -2.0
    np.testing.assert_array_equal(td.jit(lax.complex)(re, im), z)
    # |re + i im|^2 summed: gradient 2 re with respect to re
    grad = td.grad(lambda a, b: tnp.sum(tnp.abs(lax.complex(a, b)) ** 2))(re, re)
    np.testing.assert_allclose(grad, 2 * re)


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (lambda x: lax.complex(x, x[:1]), "one shape and dtype"),
        (lambda x: lax.complex(x.astype(np.complex128), x), "real parts"),
        (lambda x: lax.pad(x, 0.0, [(1, 1)]), "triple per axis"),
        (lambda x: lax.pad(x, 0.0, [(-1, 0, 0)]), "non-negative"),
    ],
)
def test_bad_arguments_are_clear_errors(fn, message):
    with pytest.raises((TypeError, ValueError), match=message):
        td.jit(fn)(np.ones(3))
