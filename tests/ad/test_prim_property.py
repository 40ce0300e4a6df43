"""Property test: random DAGs of prim ops (elementwise unary and binary,
broadcast, reduce, reshape, transpose, dot_general) on real and complex
inputs; their JVP must match finite differences and their transpose must
satisfy the adjoint identity (prim_harness.check_derivatives).

Values stay in the domain where every op is smooth: log and sqrt see
`|v|² + 1`, divisions divide by `|v|² + 1`, and graphs whose values grow
large are discarded (`assume`). max/min/abs (kinks) are tested on their own
in test_prim_rules.py.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from tidu_mlir.dialects import prim

from .prim_harness import Emitter, build, check_derivatives, primal_env, run

Shape = tuple[int, ...]


def _positive(b: Emitter, v: SSAValue) -> SSAValue:
    """|v|² + 1 (in v's type): positive, smooth."""
    square = b(prim.MulOp(v, b(prim.ConjOp(v))))
    return b(prim.AddOp(square, b.const(1.0, v)))


UNARY: dict[str, Callable[[Emitter, SSAValue], SSAValue]] = {
    "neg": lambda b, v: b(prim.NegOp(v)),
    "exp": lambda b, v: b(prim.ExpOp(v)),
    "sin": lambda b, v: b(prim.SinOp(v)),
    "cos": lambda b, v: b(prim.CosOp(v)),
    "tanh": lambda b, v: b(prim.TanhOp(v)),
    "conj": lambda b, v: b(prim.ConjOp(v)),
    "log": lambda b, v: b(prim.LogOp(_positive(b, v))),
    "sqrt": lambda b, v: b(prim.SqrtOp(_positive(b, v))),
    "pow": lambda b, v: b(prim.PowOp(_positive(b, v), 1.5)),
    "square": lambda b, v: b(prim.PowOp(v, 2.0)),
}

BINARY: dict[str, Callable[[Emitter, SSAValue, SSAValue], SSAValue]] = {
    "add": lambda b, u, v: b(prim.AddOp(u, v)),
    "sub": lambda b, u, v: b(prim.SubOp(u, v)),
    "mul": lambda b, u, v: b(prim.MulOp(u, v)),
    "div": lambda b, u, v: b(prim.DivOp(u, _positive(b, v))),
}


def _retype(v: SSAValue, shape: Shape) -> TensorType:
    return TensorType(prim.element_type_of(v.type), list(shape))


def _shape_step(b: Emitter, v: SSAValue, choice: int) -> SSAValue:
    """A shape op applicable to `v`, picked by `choice`."""
    shape = prim.shape_of(v)
    rank = len(shape)
    options: list[Callable[[], SSAValue]] = [
        lambda: b(prim.ReduceSumOp(v, [rank - 1] if rank else [])),
        lambda: b(prim.BroadcastInDimOp(v, list(range(rank)), _retype(v, (*shape, 2)))),
        lambda: b(prim.ReshapeOp(v, (int(np.prod(shape)),))),
    ]
    if rank >= 2:
        options.append(lambda: b(prim.TransposeOp(v, list(range(rank))[::-1])))
    if rank == 1 and shape[0] % 2 == 0 and shape[0] > 0:
        options.append(lambda: b(prim.ReshapeOp(v, (2, shape[0] // 2))))
    if rank == 1:
        options.append(lambda: b(prim.BroadcastInDimOp(v, [1], _retype(v, (3, shape[0])))))
    return options[choice % len(options)]()


def _dot(b: Emitter, u: SSAValue, v: SSAValue) -> SSAValue:
    """Contract the last axis of u with a matching axis of v (or an outer product)."""
    su, sv = prim.shape_of(u), prim.shape_of(v)
    if su and sv and su[-1] in sv:
        axis = sv.index(su[-1])
        return b(prim.DotGeneralOp(u, v, lhs_contract=[len(su) - 1], rhs_contract=[axis]))
    if len(su) + len(sv) <= 3:
        return b(prim.DotGeneralOp(u, v))
    return b(prim.MulOp(u, u))


@st.composite
def programs(draw: st.DrawFn) -> tuple[list[tuple], np.dtype]:
    """A list of steps (kind, operand indices, choice) and the dtype."""
    dtype = np.dtype(draw(st.sampled_from([np.float64, np.complex128])))
    steps = []
    for index in range(draw(st.integers(2, 7))):
        available = 2 + index
        kind = draw(st.sampled_from(["unary", "binary", "shape", "dot"]))
        operands = (draw(st.integers(0, available - 1)), draw(st.integers(0, available - 1)))
        choice = draw(st.integers(0, 11))
        steps.append((kind, operands, choice))
    return steps, dtype


def _interpret(steps: list[tuple]) -> Callable[..., list[SSAValue]]:
    def body(b: Emitter, x: SSAValue, y: SSAValue) -> list[SSAValue]:
        values = [x, y]
        for kind, (i, j), choice in steps:
            u, v = values[i], values[j]
            if kind == "unary":
                result = list(UNARY.values())[choice % len(UNARY)](b, u)
            elif kind == "binary":
                if prim.shape_of(u) != prim.shape_of(v):
                    v = u
                result = list(BINARY.values())[choice % len(BINARY)](b, u, v)
            elif kind == "shape":
                result = _shape_step(b, u, choice)
            else:
                result = _dot(b, u, v)
            values.append(result)
        return [values[-1], values[len(values) // 2]]

    return body


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)  # fixed examples in CI
@given(programs(), st.integers(0, 2**16))
def test_random_graphs(program: tuple[list[tuple], np.dtype], seed: int) -> None:
    steps, dtype = program
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(0.2, 1.0, (2, 3)), rng.uniform(0.2, 1.0, (3,))]
    if dtype.kind == "c":
        arrays = [a + 0.5j * rng.uniform(-1, 1, a.shape) for a in arrays]
    arrays = [a.astype(dtype) for a in arrays]
    body = _interpret(steps)
    _, graph = build(body, arrays)
    outputs = run(graph, primal_env(arrays))
    assume(all(np.all(np.isfinite(o)) and np.max(np.abs(o), initial=0) < 1e3 for o in outputs))
    check_derivatives(body, arrays, seed=seed, higher=False)
