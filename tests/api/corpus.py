"""A corpus of numpy-style test functions with example inputs.

Each entry is (name, function, argument factory). Functions use `tnp` so they
run on concrete arrays (plain numpy) and on tracers alike; the tests compare
the two, and the AD tests differentiate them.
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


def _args(*factories: Callable[[np.random.Generator], np.ndarray]):
    return lambda rng: tuple(f(rng) for f in factories)


def _softmax(x):
    shifted = x - tnp.max(x, axis=-1, keepdims=True)
    e = tnp.exp(shifted)
    return e / tnp.sum(e, axis=-1, keepdims=True)


def _logsumexp(x):
    m = tnp.max(x)
    return m + tnp.log(tnp.sum(tnp.exp(x - m)))


def _mlp_loss(x, w1, w2, y):
    h = tnp.tanh(x @ w1)
    pred = h @ w2
    return tnp.mean((pred - y) ** 2)


CASES: list[Case] = [
    Case("sin_times_x", lambda x: tnp.sin(x) * x, _args(_r(5))),
    Case("exp_log_chain", lambda x: tnp.log(tnp.exp(x) + 1.0) / x, _args(_r(4, 3))),
    Case("poly", lambda x: 3.0 * x**3 - 2.0 * x + 1.0, _args(_r(6))),
    Case("sqrt_tanh", lambda x: tnp.sqrt(x) + tnp.tanh(x), _args(_r(7))),
    Case("cos_neg", lambda x: -tnp.cos(x), _args(_r(3, 2))),
    Case("div_sub", lambda x, y: (x - y) / (x + y), _args(_r(4), _r(4))),
    Case("broadcast_row", lambda x, b: x + b, _args(_r(3, 4), _r(4))),
    Case("broadcast_col", lambda x, b: x * b, _args(_r(3, 4), _r(3, 1))),
    Case("scalar_broadcast", lambda x, s: x * s + s, _args(_r(2, 3), _r())),
    Case("sum_all", lambda x: tnp.sum(x * x), _args(_r(3, 4)), True),
    Case("sum_axis", lambda x: tnp.sum(x, axis=0), _args(_r(3, 4))),
    Case("sum_keepdims", lambda x: x / tnp.sum(x, axis=1, keepdims=True), _args(_r(3, 4))),
    Case("mean", lambda x: tnp.mean(x, axis=1), _args(_r(2, 5))),
    Case("max_axis", lambda x: tnp.max(x, axis=1), _args(_r(3, 4))),
    Case("maximum_relu", lambda x: tnp.maximum(x - 1.0, 0.0), _args(_r(8))),
    Case("minimum", lambda x, y: tnp.minimum(x, y), _args(_r(5), _r(5))),
    Case("where", lambda x: tnp.where(x > 1.0, x * x, -x), _args(_r(6))),
    Case("matmul", lambda a, b: a @ b, _args(_r(3, 4), _r(4, 2))),
    Case("matvec", lambda a, v: a @ v, _args(_r(3, 4), _r(4))),
    Case("vecdot", lambda u, v: tnp.dot(u, v), _args(_r(4), _r(4)), True),
    Case("batched_matmul", lambda a, b: tnp.matmul(a, b), _args(_r(2, 3, 4), _r(2, 4, 5))),
    Case("einsum_bij", lambda a, b: tnp.einsum("bij,bjk->bik", a, b), _args(_r(2, 3, 4), _r(2, 4, 2))),
    Case("einsum_trace_free", lambda a: tnp.einsum("ij->j", a), _args(_r(3, 4))),
    Case("einsum_outer", lambda u, v: tnp.einsum("i,j", u, v), _args(_r(3), _r(2))),
    Case("transpose", lambda a: tnp.transpose(a) @ a, _args(_r(3, 2))),
    Case("transpose_axes", lambda a: tnp.transpose(a, (2, 0, 1)) * 2.0, _args(_r(2, 3, 4))),
    Case("reshape", lambda a: tnp.reshape(a, (4, -1)).sum(axis=1), _args(_r(2, 6))),
    Case("broadcast_to", lambda v: tnp.broadcast_to(v, (3, 4)) * 2.0, _args(_r(4))),
    Case("slicing", lambda x: x[1:, ::2] * x[:-1, 1::2], _args(_r(4, 6))),
    Case("int_index", lambda x: x[2] + x[..., 0][1] + x[None, 0, :][0], _args(_r(3, 4))),
    Case("concatenate", lambda x, y: tnp.concatenate([x, y * 2.0, x], axis=1), _args(_r(2, 3), _r(2, 1))),
    Case("softmax", _softmax, _args(_r(3, 5))),
    Case("logsumexp", _logsumexp, _args(_r(6)), True),
    Case("mlp_loss", _mlp_loss, _args(_r(4, 3), _r(3, 5), _r(5, 2), _r(4, 2)), True),
    Case("pow_scalar_base", lambda x: 2.0**x + x**x, _args(_r(4))),
    Case("f32_chain", lambda x: tnp.exp(x) * 2.0 + tnp.sin(x), _args(_r(5, dtype=np.float32))),
    Case("f32_f64_promote", lambda x, y: x * y, _args(_r(3, dtype=np.float32), _r(3))),
    Case("complex_mul", lambda z, w: z * w + tnp.conj(z), _args(_r(4, dtype=np.complex128), _r(4, dtype=np.complex128))),
    Case("complex_abs2", lambda z: tnp.sum(tnp.real(z * tnp.conj(z))), _args(_r(3, dtype=np.complex128)), True),
    Case("complex_exp", lambda z: tnp.exp(z) * tnp.imag(z), _args(_r(3, dtype=np.complex64))),
    Case("complex_abs", lambda z: tnp.abs(z) + tnp.real(z), _args(_r(5, dtype=np.complex128))),
    Case("real_to_complex", lambda x, z: x * z, _args(_r(3), _r(3, dtype=np.complex128))),
]  # fmt: skip
