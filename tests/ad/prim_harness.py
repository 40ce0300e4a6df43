"""Building small `prim` graphs from Python and checking their derivatives.

`build(body, arrays)` makes `cg.graph @f` with one input `x<i>` per array
(typed like the array) and the outputs `body` returns. `check_derivatives`
runs the AD passes on it and checks, through the reference evaluator:
the JVP against 5-point central finite differences, the adjoint identity of
the transpose, `verify-linearity` on every derived fragment and, for closure
(higher order), the linearization of the VJP (FoR) against finite differences
of the VJP and the transpose of the VJP (RoR) against the JVP.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from tidu_mlir import ad
from tidu_mlir.dialects import cg, prim
from tidu_mlir.graph import fragment_signature
from tidu_mlir.interp import evaluate_fragment

Body = Callable[..., SSAValue | Sequence[SSAValue]]
Env = Mapping[Attribute, np.ndarray]


class Emitter:
    """Appends ops to a block: `b(prim.ExpOp(x))` returns the result."""

    def __init__(self, block: Block):
        self.block = block

    def __call__(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def const(self, value: object, like: SSAValue) -> SSAValue:
        t = like.type
        assert isinstance(t, TensorType)
        return self(prim.ConstantOp.from_value(np.asarray(value), t))


def key(index: int) -> cg.KeyAttr:
    return cg.KeyAttr(f"x{index}")


def tensor_type(array: np.ndarray) -> TensorType:
    return TensorType(prim.element_type_of_dtype(array.dtype), array.shape)


def build(body: Body, arrays: Sequence[np.ndarray]) -> tuple[ModuleOp, cg.GraphOp]:
    """`cg.graph @f` with inputs `x0, x1, ...` and the outputs of `body(b, *inputs)`."""
    block = Block()
    graph = cg.GraphOp("f", Region(block))
    module = ModuleOp([graph])
    inputs = []
    for index, array in enumerate(arrays):
        op = cg.InputOp(key(index), tensor_type(array))
        block.add_op(op)
        inputs.append(op.result)
    outputs = body(Emitter(block), *inputs)
    if isinstance(outputs, SSAValue):
        outputs = [outputs]
    block.add_op(cg.OutputOp(list(outputs)))
    module.verify()
    return module, graph


def run(fragment: cg.Fragment, env: Env) -> list[np.ndarray]:
    """Evaluate a fragment, its signature inputs taken from `env` by key."""
    return evaluate_fragment(fragment, [env[op.key] for op in fragment_signature(fragment)])


def primal_env(arrays: Sequence[np.ndarray]) -> dict[Attribute, np.ndarray]:
    return {key(i): a for i, a in enumerate(arrays)}


def random_like(rng: np.random.Generator, array: np.ndarray) -> np.ndarray:
    out = rng.standard_normal(array.shape)
    if np.iscomplexobj(array):
        out = out + 1j * rng.standard_normal(array.shape)
    return out.astype(array.dtype)


def real_dot(a: np.ndarray, b: np.ndarray) -> float:
    """<a, b> = Re(sum(conj(a)·b)), the inner product of docs/complex.md."""
    return float(np.real(np.vdot(a.astype(np.complex128), b.astype(np.complex128))))


def five_point(
    f: Callable[[Sequence[np.ndarray]], list[np.ndarray]],
    xs: Sequence[np.ndarray],
    dxs: Sequence[np.ndarray],
    h: float,
) -> list[np.ndarray]:
    """The directional derivative of `f` at `xs` along `dxs`: 5-point central
    differences at steps h and h/2, Richardson-extrapolated (error O(h⁶)), so
    deep chains of exp/sin with large high derivatives stay within tolerance."""

    def at(t: float) -> list[np.ndarray]:
        return [
            o.astype(np.complex128) for o in f([x + t * d for x, d in zip(xs, dxs, strict=True)])
        ]

    def central(step: float) -> list[np.ndarray]:
        plus2, plus1, minus1, minus2 = at(2 * step), at(step), at(-step), at(-2 * step)
        return [
            (-p2 + 8 * p1 - 8 * m1 + m2) / (12 * step)
            for p2, p1, m1, m2 in zip(plus2, plus1, minus1, minus2, strict=True)
        ]

    coarse, fine = central(h), central(h / 2)
    return [b + (b - a) / 15 for a, b in zip(coarse, fine, strict=True)]


def densify(values: Sequence[SSAValue | None], arrays: list[np.ndarray], like: Sequence) -> list:
    """Arrays for active entries, zeros (shaped like `like`) for inactive ones."""
    it = iter(arrays)
    return [
        next(it) if v is not None else np.zeros_like(ref)
        for v, ref in zip(values, like, strict=True)
    ]


@dataclass
class Tolerance:
    rtol: float
    atol: float
    h: float


F64 = Tolerance(rtol=1e-7, atol=1e-8, h=1e-3)
F32 = Tolerance(rtol=2e-2, atol=2e-2, h=3e-2)


def tolerance_for(arrays: Sequence[np.ndarray]) -> Tolerance:
    single = any(a.dtype in (np.float32, np.complex64) for a in arrays)
    return F32 if single else F64


def assert_close(actual: Sequence[np.ndarray], expected: Sequence[np.ndarray], tol: Tolerance):
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_allclose(
            np.asarray(a, dtype=np.complex128), e, rtol=tol.rtol, atol=tol.atol
        )


def check_derivatives(
    body: Body, arrays: Sequence[np.ndarray], seed: int = 0, higher: bool = True
) -> None:
    """All first-order checks, plus FoR and RoR when `higher`."""
    rng = np.random.default_rng(seed)
    _, graph = build(body, arrays)
    env = primal_env(arrays)
    keys = [key(i) for i in range(len(arrays))]
    primal = run(graph, env)
    tol = tolerance_for([*arrays, *primal])

    lin = ad.linearize(graph, wrt=keys)
    ad.verify_linearity(lin.fragment)
    dxs = [random_like(rng, a) for a in arrays]
    tangent_env = {**env, **{k: d for (k, _), d in zip(lin.tangent_inputs, dxs, strict=True)}}
    jvp = densify(lin.tangent_outputs, run(lin.fragment, tangent_env), primal)

    def f(xs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return run(graph, primal_env(xs))

    assert_close(jvp, five_point(f, arrays, dxs, tol.h), tol)
    if not any(v is not None for v in lin.tangent_outputs):
        return

    vjp = ad.linear_transpose(lin)
    ad.verify_linearity(vjp.fragment)
    active_outputs = [p for v, p in zip(lin.tangent_outputs, primal, strict=True) if v is not None]
    cts = [random_like(rng, p) for p in active_outputs]
    ct_env = {**env, **{k: c for (k, _), c in zip(vjp.tangent_inputs, cts, strict=True)}}
    grads = densify(vjp.tangent_outputs, run(vjp.fragment, ct_env), arrays)
    active_jvp = [j for v, j in zip(lin.tangent_outputs, jvp, strict=True) if v is not None]
    lhs = sum(real_dot(c, j) for c, j in zip(cts, active_jvp, strict=True))
    rhs = sum(real_dot(g, d) for g, d in zip(grads, dxs, strict=True))
    scale = 1.0 + abs(lhs) + abs(rhs)
    assert abs(lhs - rhs) <= (1e-4 if tol is F32 else 1e-10) * scale, (lhs, rhs)

    if higher:
        _check_for(vjp, keys, arrays, ct_env, grads, rng, tol)
        _check_ror(vjp, cts, dxs, ct_env, jvp, lin.tangent_outputs, tol)


def _check_for(vjp, keys, arrays, ct_env, grads, rng, tol) -> None:
    """FoR: the linearization of the VJP wrt the primal inputs vs finite differences."""
    hvp = ad.linearize(vjp.fragment, wrt=keys)
    ad.verify_linearity(hvp.fragment)
    vs = [random_like(rng, a) for a in arrays]
    hvp_env = {**ct_env, **{k: v for (k, _), v in zip(hvp.tangent_inputs, vs, strict=True)}}
    active_grads = [g for t, g in zip(vjp.tangent_outputs, grads, strict=True) if t is not None]
    actual = densify(hvp.tangent_outputs, run(hvp.fragment, hvp_env), active_grads)

    def g(xs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return run(vjp.fragment, {**ct_env, **primal_env(xs)})

    assert_close(actual, five_point(g, arrays, vs, tol.h), tol)


def _check_ror(vjp, cts, dxs, ct_env, jvp, jvp_outputs, tol) -> None:
    """RoR: the transpose of the VJP is the JVP again."""
    ror = ad.linear_transpose(vjp)
    ad.verify_linearity(ror.fragment)
    active_dxs = [d for t, d in zip(vjp.tangent_outputs, dxs, strict=True) if t is not None]
    env = {**ct_env, **{k: d for (k, _), d in zip(ror.tangent_inputs, active_dxs, strict=True)}}
    actual = densify(ror.tangent_outputs, run(ror.fragment, env), cts)
    expected = [j for v, j in zip(jvp_outputs, jvp, strict=True) if v is not None]
    assert_close(actual, [e.astype(np.complex128) for e in expected], tol)
