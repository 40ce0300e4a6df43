"""Neural-network functions (`td.nn`, as `jax.nn`): activations, the softmax
family and `one_hot`.

Each is a composite of `tidu_mlir.numpy` functions, no primitive of its own,
so it traces, differentiates and batches like any tnp code, and on concrete
arrays runs numpy (integer and boolean inputs computed as float64). They are
written to be stable where the textbook formula is not: exponentials are only
taken of non-positive numbers, and the softmax family subtracts the maximum
first, so values and gradients stay finite for inputs like ±1000.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import tidu_mlir.numpy as tnp
from tidu_mlir.tracing import Tracer

__all__ = [
    "gelu", "log_sigmoid", "log_softmax", "logsumexp", "one_hot", "relu", "sigmoid",
    "silu", "softmax", "softplus",
]  # fmt: skip

Axis = int | tuple[int, ...] | None


def _array(x: Any) -> Any:
    """A tracer as it is; anything else as a numpy array (integers, booleans as float64)."""
    if isinstance(x, Tracer):
        return x
    array = np.asarray(x)
    return array.astype(np.float64) if array.dtype.kind in "biu" else array


def _max_shift(x: Any, axis: Axis) -> Any:
    """The maximum over `axis` (kept as size-1 axes) to subtract before `exp`,
    0 where it is not finite. Subtracting it changes no gradient: its cotangent
    is `g · (1 - Σ softmax)`, zero up to rounding."""
    m = tnp.max(x, axis=axis, keepdims=True)
    return tnp.where(tnp.less(tnp.abs(m), math.inf), m, 0.0)


def relu(x: Any) -> Any:
    """Rectified linear unit, `max(x, 0)`, with gradient 0 at 0 (as JAX).

    Examples
    --------
    >>> td.nn.relu(np.array([-2.0, 0.0, 3.0]))
    array([0., 0., 3.])
    >>> td.grad(lambda x: tnp.sum(td.nn.relu(x)))(np.array([-2.0, 0.0, 3.0]))
    array([0., 0., 1.])
    """
    x = _array(x)
    return tnp.where(tnp.less_equal(x, 0.0), 0.0, x)  # NaN stays NaN


def sigmoid(x: Any) -> Any:
    """Logistic sigmoid, `1 / (1 + exp(-x))`.

    Computed from `e = exp(-|x|)` (never overflows): `1 / (1 + e)` for
    `x ≥ 0`, `e / (1 + e)` below, so both tails keep full relative precision.

    Examples
    --------
    >>> td.nn.sigmoid(np.array([-1000.0, 0.0, 1000.0]))
    array([0. , 0.5, 1. ])
    >>> td.grad(lambda x: td.nn.sigmoid(x))(np.array(0.0))
    array(0.25)
    """
    x = _array(x)
    positive = tnp.greater_equal(x, 0.0)
    e = tnp.exp(tnp.where(positive, tnp.negative(x), x))
    return tnp.where(positive, 1.0, e) / (1.0 + e)


def softplus(x: Any) -> Any:
    """`log(1 + exp(x))`, computed as `max(x, 0) + log1p(exp(-|x|))`.

    Examples
    --------
    >>> td.nn.softplus(np.array([-1000.0, 0.0, 1000.0]))
    array([0.00000000e+00, 6.93147181e-01, 1.00000000e+03])
    >>> td.grad(lambda x: tnp.sum(td.nn.softplus(x)))(np.array([0.0, 1000.0]))
    array([0.5, 1. ])
    """
    x = _array(x)
    positive = tnp.greater_equal(x, 0.0)
    tail = tnp.log1p(tnp.exp(tnp.where(positive, tnp.negative(x), x)))
    return tnp.where(positive, x, 0.0) + tail


def log_sigmoid(x: Any) -> Any:
    """`log(sigmoid(x))`, computed as `-softplus(-x)`.

    Examples
    --------
    >>> td.nn.log_sigmoid(np.array([-1000.0, 0.0]))
    array([-1.00000000e+03, -6.93147181e-01])
    """
    return tnp.negative(softplus(tnp.negative(_array(x))))


def silu(x: Any) -> Any:
    """SiLU (swish), `x · sigmoid(x)`.

    Examples
    --------
    >>> td.nn.silu(np.array([-1000.0, 0.0, 2.0]))
    array([-0.        ,  0.        ,  1.76159416])
    """
    x = _array(x)
    return x * sigmoid(x)


def gelu(x: Any, approximate: bool = True) -> Any:
    """Gaussian error linear unit, `x · Φ(x)` (`Φ` the standard normal CDF).

    Parameters
    ----------
    x : array_like
        The input.
    approximate : bool
        True (the default, as JAX): the tanh approximation
        `x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³)))`. False: the exact
        `x/2 · (1 + erf(x/√2))`, which needs `tnp.erf`; until tnp has it this
        raises `NotImplementedError`.

    Examples
    --------
    >>> td.nn.gelu(np.array([-1000.0, 0.0, 1.0]))
    array([-0.        ,  0.        ,  0.84119199])
    """
    x = _array(x)
    if not approximate:
        if "erf" not in tnp.__all__:
            raise NotImplementedError(
                "gelu(approximate=False) needs erf, which tidu_mlir.numpy does not have yet; "
                "use the default approximate=True (the tanh form)"
            )
        erf = tnp.erf  # pyright: ignore[reportAttributeAccessIssue]
        return 0.5 * x * (1.0 + erf(x * (1.0 / math.sqrt(2.0))))
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * (x * x * x))
    return 0.5 * x * (1.0 + tnp.tanh(inner))


def logsumexp(a: Any, axis: Axis = None, *, keepdims: bool = False) -> Any:
    """`log(sum(exp(a), axis))`, the maximum subtracted first so nothing overflows.

    `-inf` entries add nothing (and get gradient 0); all `-inf` gives `-inf`.
    JAX's `b`, `return_sign` and `where` arguments are not supported.

    Parameters
    ----------
    a : array_like
        The input.
    axis : int, tuple of ints or None
        The axes to reduce; None (the default) reduces all of them.
    keepdims : bool
        Keep the reduced axes with size 1.

    Examples
    --------
    >>> td.nn.logsumexp(np.array([1000.0, 1000.0]))
    np.float64(1000.6931471805599)
    >>> td.grad(td.nn.logsumexp)(np.array([0.0, 0.0, -np.inf]))
    array([0.5, 0.5, 0. ])
    """
    a = _array(a)
    m = _max_shift(a, axis)
    total = tnp.sum(tnp.exp(a - m), axis=axis, keepdims=keepdims)
    return tnp.reshape(m, tnp.shape(total)) + tnp.log(total)


def softmax(x: Any, axis: Axis = -1) -> Any:
    """`exp(x) / sum(exp(x), axis)`, the maximum subtracted first.

    Parameters
    ----------
    x : array_like
        The logits.
    axis : int, tuple of ints or None
        The axes normalized over (default: the last).

    Examples
    --------
    >>> td.nn.softmax(np.array([1000.0, 0.0, -1000.0]))
    array([1., 0., 0.])
    >>> td.nn.softmax(np.array([[0.0, 0.0], [0.0, np.log(3.0)]]))
    array([[0.5 , 0.5 ],
           [0.25, 0.75]])
    """
    x = _array(x)
    e = tnp.exp(x - _max_shift(x, axis))
    return e / tnp.sum(e, axis=axis, keepdims=True)


def log_softmax(x: Any, axis: Axis = -1) -> Any:
    """`x - logsumexp(x, axis, keepdims=True)`, the log of `softmax`.

    Parameters
    ----------
    x : array_like
        The logits.
    axis : int, tuple of ints or None
        The axes normalized over (default: the last).

    Examples
    --------
    >>> td.nn.log_softmax(np.array([1000.0, 0.0, -1000.0]))
    array([    0., -1000., -2000.])
    """
    x = _array(x)
    shifted = x - _max_shift(x, axis)
    return shifted - tnp.log(tnp.sum(tnp.exp(shifted), axis=axis, keepdims=True))


def one_hot(x: Any, num_classes: int, *, dtype: Any = np.float64, axis: int = -1) -> Any:
    """`x` encoded one-hot: 1 where the new axis's index equals the label, else 0.

    Labels outside `[0, num_classes)` give all zeros. tidu traces float and
    complex arrays only, so the labels are either concrete (numpy integer
    arrays or Python ints: computed with numpy, the result a numpy array) or a
    traced float array holding integral values. No gradient flows to `x`.

    Parameters
    ----------
    x : array_like
        The labels.
    num_classes : int
        The length of the new axis.
    dtype : dtype
        The result's dtype (default float64).
    axis : int
        Where the new axis goes in the result (default: last).

    Examples
    --------
    >>> td.nn.one_hot(np.array([0, 2]), 3)
    array([[1., 0., 0.],
           [0., 0., 1.]])
    >>> td.jit(lambda labels: td.nn.one_hot(labels, 3, axis=0))(np.array([0.0, 2.0]))
    array([[1., 0.],
           [0., 0.],
           [0., 1.]])
    """
    labels = x if isinstance(x, Tracer) else np.asarray(x)
    if labels.dtype.kind not in "iuf":
        raise TypeError(f"one_hot needs integer or integral float labels, got {labels.dtype}")
    rank = labels.ndim + 1
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is out of bounds for a one_hot result of rank {rank}")
    axis %= rank
    # Labels with a size-1 axis at `axis`, compared with the classes along it.
    expanded = tnp.reshape(labels, (*labels.shape[:axis], 1, *labels.shape[axis:]))
    classes = np.arange(num_classes, dtype=labels.dtype).reshape((-1,) + (1,) * (rank - 1 - axis))
    return tnp.astype(tnp.equal(expanded, classes), dtype)
