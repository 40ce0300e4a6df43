"""Every `prim` op is reachable from the Python front end: a `tnp` (or `td.lax`)
call that records it. A new op without an entry in `SAMPLES` fails the guard.

With tests/dialects/test_prim_package.py (verifier, rules, reference, traits)
and tests/lowering/test_prim_ops.py (lowering), this is the guard that every
op has all of its pieces; `test_every_op_has_its_outside_pieces` checks the
two that live outside the op class in one walk."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tidu_mlir as td
import tidu_mlir.numpy as tnp
from tidu_mlir.dialects import prim
from tidu_mlir.lowering.prim_to_loops import LOWERED_OPS
from tidu_mlir.tracing import ArraySpec, trace_function

REAL = ArraySpec((2, 3), np.dtype(np.float64))
COMPLEX = ArraySpec((2, 3), np.dtype(np.complex128))
SQUARE = ArraySpec((3, 3), np.dtype(np.float64))

SAMPLES: dict[type[prim.PrimOp], tuple[Callable[..., Any], tuple[ArraySpec, ...]]] = {
    prim.AddOp: (lambda x: tnp.add(x, x), (REAL,)),
    prim.SubOp: (lambda x: tnp.subtract(x, 1.0), (REAL,)),
    prim.MulOp: (lambda x: tnp.multiply(x, x), (REAL,)),
    prim.DivOp: (lambda x: tnp.divide(x, 2.0), (REAL,)),
    prim.MaximumOp: (lambda x: tnp.maximum(x, 0.0), (REAL,)),
    prim.MinimumOp: (lambda x: tnp.minimum(x, 0.0), (REAL,)),
    prim.Atan2Op: (lambda x: tnp.arctan2(x, 1.0), (REAL,)),
    prim.NegOp: (tnp.negative, (REAL,)),
    prim.ExpOp: (tnp.exp, (REAL,)),
    prim.LogOp: (tnp.log, (REAL,)),
    prim.SinOp: (tnp.sin, (REAL,)),
    prim.CosOp: (tnp.cos, (REAL,)),
    prim.TanhOp: (tnp.tanh, (REAL,)),
    prim.SqrtOp: (tnp.sqrt, (REAL,)),
    prim.ConjOp: (tnp.conj, (COMPLEX,)),
    prim.PowOp: (lambda x: tnp.power(x, 2.5), (REAL,)),
    prim.AbsOp: (tnp.abs, (REAL,)),
    prim.RealOp: (tnp.real, (COMPLEX,)),
    prim.ImagOp: (tnp.imag, (COMPLEX,)),
    prim.ComplexOp: (lambda x: td.lax.complex(x, x), (REAL,)),
    prim.SelectOp: (lambda x: tnp.where(x > 0.0, x, 0.0), (REAL,)),
    prim.CompareOp: (lambda x: tnp.less(x, 0.0), (REAL,)),
    prim.ConvertOp: (lambda x: tnp.astype(x, np.float32), (REAL,)),
    prim.ConstantOp: (lambda x: tnp.add(x, np.ones((2, 3))), (REAL,)),
    prim.BroadcastInDimOp: (lambda x: tnp.broadcast_to(x, (4, 2, 3)), (REAL,)),
    prim.ReduceSumOp: (tnp.sum, (REAL,)),
    prim.ReduceMaxOp: (tnp.max, (REAL,)),
    prim.ReshapeOp: (lambda x: tnp.reshape(x, (3, 2)), (REAL,)),
    prim.TransposeOp: (tnp.transpose, (REAL,)),
    prim.DotGeneralOp: (lambda x: tnp.matmul(x, tnp.transpose(x)), (REAL,)),
    prim.SliceOp: (lambda x: x[:, 1:], (REAL,)),
    prim.PadOp: (lambda x: td.lax.pad(x, 0.0, [(1, 0, 0), (0, 2, 1)]), (REAL,)),
    prim.ConcatenateOp: (lambda x: tnp.concatenate([x, x], axis=1), (REAL,)),
    prim.ScanOp: (lambda x: td.lax.scan(lambda c, row: (c * row, c), x[0], x), (REAL,)),
    prim.CondOp: (lambda x: td.lax.cond(tnp.sum(x) > 0.0, tnp.sin, tnp.cos, x), (REAL,)),
    prim.WhileOp: (lambda x: td.lax.while_loop(lambda v: tnp.sum(v) > 1.0, tnp.sin, x), (REAL,)),
    prim.RecordWhileOp: (  # reverse mode through a while loop
        lambda x: td.grad(
            lambda v: tnp.sum(td.lax.while_loop(lambda u: tnp.sum(u) > 1.0, tnp.sin, v))
        )(x),
        (REAL,),
    ),
    prim.CheckOp: (
        lambda x: td.lax.while_loop(lambda v: tnp.sum(v) > 1.0, tnp.sin, x, max_steps=3),
        (REAL,),
    ),
    prim.FloorOp: (tnp.floor, (REAL,)),
    prim.CeilOp: (tnp.ceil, (REAL,)),
    prim.RoundOp: (tnp.rint, (REAL,)),
    prim.SignOp: (tnp.sign, (REAL,)),
    prim.ErfOp: (td.lax.erf, (REAL,)),
    prim.IotaOp: (lambda x: tnp.take_along_axis(x, np.array([[2, 1, 0], [0, 0, 1]]), 1), (REAL,)),
    prim.GatherOp: (lambda x: x[np.array([1, 0])], (REAL,)),
    prim.ScatterAddOp: (lambda x: x.at[np.array([0, 0])].add(1.0), (REAL,)),
    prim.ScatterOp: (lambda x: x.at[np.array([1])].set(0.0), (REAL,)),
    prim.DynamicSliceOp: (lambda x: td.lax.dynamic_slice(x, (0, 1), (1, 2)), (REAL,)),
    prim.DynamicUpdateSliceOp: (
        lambda x: td.lax.dynamic_update_slice(x, x[:1, :1], (1, 1)),
        (REAL,),
    ),
    prim.CholeskyOp: (tnp.linalg.cholesky, (SQUARE,)),
    prim.TriangularSolveOp: (lambda x: td.scipy.linalg.solve_triangular(x, x), (SQUARE,)),
    prim.LuOp: (tnp.linalg.det, (SQUARE,)),
    prim.QrOp: (tnp.linalg.qr, (REAL,)),
    prim.EighOp: (tnp.linalg.eigh, (SQUARE,)),
    prim.SvdOp: (tnp.linalg.svd, (REAL,)),
    prim.ArgMaxOp: (tnp.argmax, (REAL,)),
    prim.ArgMinOp: (tnp.argmin, (REAL,)),
    prim.CumsumOp: (lambda x: tnp.cumsum(x, axis=1), (REAL,)),
    prim.ArgsortOp: (tnp.argsort, (REAL,)),
}


def test_every_prim_op_has_a_front_end_sample():
    assert set(SAMPLES) == set(prim.PRIM_OPS)


def test_every_op_has_its_outside_pieces():
    for op_class in prim.PRIM_OPS:
        assert op_class in LOWERED_OPS, f"{op_class.name} has no lowering"
        assert op_class in SAMPLES, f"{op_class.name} has no tnp/td.lax function"


@pytest.mark.parametrize("op_class", prim.PRIM_OPS, ids=lambda k: k.name)
def test_front_end_records_the_op(op_class: type[prim.PrimOp]):
    fn, specs = SAMPLES[op_class]
    traced = trace_function(fn, specs)
    recorded = {type(op) for op in traced.graph.body.walk()}
    assert op_class in recorded, f"{fn} recorded {sorted(k.name for k in recorded)}"
