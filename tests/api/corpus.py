"""A corpus of numpy-style test functions with example inputs.

Each entry is (name, function, argument factory). Functions take the array
namespace as keyword `xp` (default `tnp`), so the same code runs on concrete
arrays (tnp on arrays is numpy), on tracers, and under JAX (`xp=jax.numpy`)
as an oracle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import tidu_mlir.numpy as tnp


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable[..., Any]
    make_args: Callable[[np.random.Generator], tuple[np.ndarray, ...]]
    scalar_output: bool = False


def _r(*shape: int, dtype: Any = np.float64) -> Callable[[np.random.Generator], np.ndarray]:
    def make(rng: np.random.Generator) -> np.ndarray:
        value = rng.uniform(0.5, 1.5, size=shape)
        if np.dtype(dtype).kind == "c":
            value = value + 1j * rng.uniform(-1.0, 1.0, size=shape)
        return np.asarray(value, dtype=dtype)

    return make


_MASK = np.array([True, False, True, True, False, False, True])
"""A concrete boolean condition (a numpy array, not a comparison of traced values)."""


def _args(*factories: Callable[[np.random.Generator], np.ndarray]):
    return lambda rng: tuple(f(rng) for f in factories)


def _softmax(x, xp=tnp):
    shifted = x - xp.max(x, axis=-1, keepdims=True)
    e = xp.exp(shifted)
    return e / xp.sum(e, axis=-1, keepdims=True)


def _logsumexp(x, xp=tnp):
    m = xp.max(x)
    return m + xp.log(xp.sum(xp.exp(x - m)))


def _mlp_loss(x, w1, w2, y, xp=tnp):
    h = xp.tanh(x @ w1)
    pred = h @ w2
    return xp.mean((pred - y) ** 2)


CASES: list[Case] = [
    Case("sin_times_x", lambda x, xp=tnp: xp.sin(x) * x, _args(_r(5))),
    Case("exp_log_chain", lambda x, xp=tnp: xp.log(xp.exp(x) + 1.0) / x, _args(_r(4, 3))),
    Case("poly", lambda x, xp=tnp: 3.0 * x**3 - 2.0 * x + 1.0, _args(_r(6))),
    Case("sqrt_tanh", lambda x, xp=tnp: xp.sqrt(x) + xp.tanh(x), _args(_r(7))),
    Case("cos_neg", lambda x, xp=tnp: -xp.cos(x), _args(_r(3, 2))),
    Case("div_sub", lambda x, y, xp=tnp: (x - y) / (x + y), _args(_r(4), _r(4))),
    Case("broadcast_row", lambda x, b, xp=tnp: x + b, _args(_r(3, 4), _r(4))),
    Case("broadcast_col", lambda x, b, xp=tnp: x * b, _args(_r(3, 4), _r(3, 1))),
    Case("scalar_broadcast", lambda x, s, xp=tnp: x * s + s, _args(_r(2, 3), _r())),
    Case("sum_all", lambda x, xp=tnp: xp.sum(x * x), _args(_r(3, 4)), True),
    Case("sum_axis", lambda x, xp=tnp: xp.sum(x, axis=0), _args(_r(3, 4))),
    Case("sum_keepdims", lambda x, xp=tnp: x / xp.sum(x, axis=1, keepdims=True), _args(_r(3, 4))),
    Case("mean", lambda x, xp=tnp: xp.mean(x, axis=1), _args(_r(2, 5))),
    Case("max_axis", lambda x, xp=tnp: xp.max(x, axis=1), _args(_r(3, 4))),
    Case("maximum_relu", lambda x, xp=tnp: xp.maximum(x - 1.0, 0.0), _args(_r(8))),
    Case("minimum", lambda x, y, xp=tnp: xp.minimum(x, y), _args(_r(5), _r(5))),
    Case("arctan2", lambda y, x, xp=tnp: xp.arctan2(y, 1.0 - x), _args(_r(6), _r(6))),
    Case("bool_mask", lambda x, xp=tnp: (x > 1.0) * x * x, _args(_r(7))),
    Case("where_numpy_mask", lambda x, xp=tnp: xp.where(_MASK, x * x, -x), _args(_r(7))),
    Case("where", lambda x, xp=tnp: xp.where(x > 1.0, x * x, -x), _args(_r(6))),
    Case("matmul", lambda a, b, xp=tnp: a @ b, _args(_r(3, 4), _r(4, 2))),
    Case("matvec", lambda a, v, xp=tnp: a @ v, _args(_r(3, 4), _r(4))),
    Case("vecdot", lambda u, v, xp=tnp: xp.dot(u, v), _args(_r(4), _r(4)), True),
    Case("batched_matmul", lambda a, b, xp=tnp: xp.matmul(a, b), _args(_r(2, 3, 4), _r(2, 4, 5))),
    Case("einsum_bij", lambda a, b, xp=tnp: xp.einsum("bij,bjk->bik", a, b), _args(_r(2, 3, 4), _r(2, 4, 2))),
    Case("einsum_trace_free", lambda a, xp=tnp: xp.einsum("ij->j", a), _args(_r(3, 4))),
    Case("einsum_outer", lambda u, v, xp=tnp: xp.einsum("i,j", u, v), _args(_r(3), _r(2))),
    Case("transpose", lambda a, xp=tnp: xp.transpose(a) @ a, _args(_r(3, 2))),
    Case("transpose_axes", lambda a, xp=tnp: xp.transpose(a, (2, 0, 1)) * 2.0, _args(_r(2, 3, 4))),
    Case("reshape", lambda a, xp=tnp: xp.reshape(a, (4, -1)).sum(axis=1), _args(_r(2, 6))),
    Case("broadcast_to", lambda v, xp=tnp: xp.broadcast_to(v, (3, 4)) * 2.0, _args(_r(4))),
    Case("slicing", lambda x, xp=tnp: x[1:, ::2] * x[:-1, 1::2], _args(_r(4, 6))),
    Case("int_index", lambda x, xp=tnp: x[2] + x[..., 0][1] + x[None, 0, :][0], _args(_r(3, 4))),
    Case("concatenate", lambda x, y, xp=tnp: xp.concatenate([x, y * 2.0, x], axis=1), _args(_r(2, 3), _r(2, 1))),
    Case("softmax", _softmax, _args(_r(3, 5))),
    Case("logsumexp", _logsumexp, _args(_r(6)), True),
    Case("mlp_loss", _mlp_loss, _args(_r(4, 3), _r(3, 5), _r(5, 2), _r(4, 2)), True),
    Case("pow_scalar_base", lambda x, xp=tnp: 2.0**x + x**x, _args(_r(4))),
    Case("f32_chain", lambda x, xp=tnp: xp.exp(x) * 2.0 + xp.sin(x), _args(_r(5, dtype=np.float32))),
    Case("f32_f64_promote", lambda x, y, xp=tnp: x * y, _args(_r(3, dtype=np.float32), _r(3))),
    Case("complex_mul", lambda z, w, xp=tnp: z * w + xp.conj(z), _args(_r(4, dtype=np.complex128), _r(4, dtype=np.complex128))),
    Case("complex_abs2", lambda z, xp=tnp: xp.sum(xp.real(z * xp.conj(z))), _args(_r(3, dtype=np.complex128)), True),
    Case("complex_exp", lambda z, xp=tnp: xp.exp(z) * xp.imag(z), _args(_r(3, dtype=np.complex64))),
    Case("complex_abs", lambda z, xp=tnp: xp.abs(z) + xp.real(z), _args(_r(5, dtype=np.complex128))),
    Case("real_to_complex", lambda x, z, xp=tnp: x * z, _args(_r(3), _r(3, dtype=np.complex128))),
]  # fmt: skip
