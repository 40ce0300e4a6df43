"""`prim.scan` compiled (its body outlined and called from one loop) vs the evaluator,
and compiled once: the lowered code does not grow with the scan's length."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from tidu_mlir.dialects import prim
from tidu_mlir.interp import evaluate_func
from tidu_mlir.lowering import parallel
from tidu_mlir.lowering.backend import translate_to_llvm_ir
from tidu_mlir.lowering.bufferize import PrimBufferizePass
from tidu_mlir.lowering.fusion import Cluster, plan
from tidu_mlir.lowering.jit import CompiledModule
from tidu_mlir.lowering.lower_to_llvm import LowerToLLVMPass, lower_prim_to_loops
from tidu_mlir.lowering.parallel import ParallelizeLoopsPass
from tidu_mlir.lowering.prim_to_loops import ConvertPrimToLoopsPass, index_map_reads, is_fusable
from tidu_mlir.lowering.runtime import CompiledFunction
from tidu_mlir.lowering.split import NO_INLINE_ATTR, SplitFunctionsPass, op_count

from .oracle import assert_matches, build, check, random_array, tensor

REAL = [np.float32, np.float64]
COMPLEX = [np.complex64, np.complex128]

Step = Callable[..., Sequence[SSAValue | Operation]]


def scan(
    init: Sequence[SSAValue | Operation],
    xs: Sequence[SSAValue | Operation],
    consts: Sequence[SSAValue | Operation],
    step: Step,
    length: int | None = None,
    reverse: bool = False,
) -> prim.ScanOp:
    """A scan whose body's ops are created by `step(*body arguments)` (returning
    the new carries, then the slices of the ys)."""
    init, xs, consts = ([SSAValue.get(v) for v in vs] for vs in (init, xs, consts))
    if length is None:
        length = prim.shape_of(xs[0])[0]
    return prim.ScanOp.from_body(init, xs, consts, length, step, reverse)


def results(op: prim.ScanOp) -> list[SSAValue]:
    return [*op.carries, *op.ys]


def splat(value: float, like: SSAValue) -> SSAValue:
    """`value` broadcast to the type of `like`."""
    dtype = prim.tensor_dtype(like.type)
    t = prim.tensor_type_of(like)
    return prim.ConstantOp.from_value(np.full(t.get_shape(), value, dtype=dtype), t).result


def outlined_bodies(module: ModuleOp) -> list[func.FuncOp]:
    return [f for f in module.ops if isinstance(f, func.FuncOp) and "__scan" in f.sym_name.data]


# ----- semantics -------------------------------------------------------------------


def test_one_carry_no_xs() -> None:
    def body(c):
        op = scan([c], [], [], lambda a: [prim.AddOp(prim.SinOp(a), a)], length=7)
        return results(op)

    check(build([tensor((3,))], body))


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("length", [0, 1, 2, 5])
def test_xs_and_ys(length: int, reverse: bool) -> None:
    """Both parities of the length (the carries' two buffers swap at each step)."""

    def step(c, x):
        new = prim.AddOp(prim.MulOp(c, x), x)
        return [new, prim.MulOp(new, x), prim.ExpOp(x)]

    def body(c, xs):
        return results(scan([c], [xs], [], step, reverse=reverse))

    check(build([tensor((2,)), tensor((length, 2))], body), low=-1.0, high=1.0)


def test_several_carries_of_different_shapes_and_consts() -> None:
    def step(s, m, v, x, w, k):
        row = prim.ReduceSumOp(m, [0])
        s_new = prim.AddOp(s, prim.ReduceSumOp(prim.MulOp(v, k), [0]))
        m_new = prim.AddOp(prim.MulOp(m, w), prim.BroadcastInDimOp(x, [1], m.type))
        v_new = prim.SubOp(v, prim.BroadcastInDimOp(s, [], v.type))
        return [s_new, m_new, v_new, prim.AddOp(row, x)]

    def body(s, m, v, xs, w, k):
        return results(scan([s, m, v], [xs], [w, k], step))

    types = [tensor(()), tensor((2, 3)), tensor((4,)), tensor((6, 3)), tensor((2, 3)), tensor((4,))]
    check(build(types, body), low=-0.7, high=0.7)


@pytest.mark.parametrize("dtype", REAL + COMPLEX)
@pytest.mark.parametrize("reverse", [False, True])
def test_element_types(dtype: type, reverse: bool) -> None:
    """Complex buffers are interleaved reals: a slice offset counts both parts."""

    def step(c, x, w):
        new = prim.AddOp(prim.MulOp(c, w), x)
        return [new, prim.MulOp(new, new)]

    def body(c, xs, w):
        return results(scan([c], [xs], [w], step, reverse=reverse))

    check(build([tensor((3,), dtype), tensor((5, 3), dtype), tensor((3,), dtype)], body), low=-1)


def test_boolean_carry_and_ys() -> None:
    """`i1` tensors are byte buffers: their slices are byte offsets too."""

    def step(flag, x):
        above = prim.CompareOp("gt", x, splat(0.0, x))
        return [above, prim.SelectOp(flag, x, prim.NegOp(x)), above]

    def body(x0, xs):
        flag = prim.CompareOp("lt", x0, splat(0.0, x0))
        return results(scan([flag], [xs], [], step))

    check(build([tensor((3,)), tensor((4, 3))], body))


def test_nested_scan() -> None:
    """The inner body is outlined from the outer one's outlined body."""

    def inner(acc, e, w):
        new = prim.AddOp(prim.MulOp(acc, w), e)
        return [new, prim.SinOp(new)]

    def outer(c, row, w):
        op = scan([c], [row], [w], inner, reverse=True)
        total = prim.ReduceSumOp(op.ys[0], [0])
        return [prim.AddOp(op.carries[0], total), op.ys[0]]

    def body(c, xs, w):
        return results(scan([c], [xs], [w], outer))

    function = build([tensor(()), tensor((5, 4)), tensor(())], body)
    check(function, low=-0.5, high=0.5)
    module = ModuleOp([function.clone()])
    lower_prim_to_loops(module)
    names = [f.sym_name.data for f in outlined_bodies(module)]
    assert names == ["f__scan0", "f__scan0__scan0"]


@pytest.mark.parametrize("n", [3, 128])
def test_body_with_dot_general(n: int) -> None:
    """A recurrent cell `h = tanh(W h + x)`; at n = 128 the product is a BLAS gemv
    when numpy's OpenBLAS is found (a call inside the outlined body)."""

    def step(h, x, w):
        wh = prim.DotGeneralOp(w, h, lhs_contract=[1], rhs_contract=[0])
        return [prim.TanhOp(prim.AddOp(wh, x)), h]

    def body(h, xs, w):
        return results(scan([h], [xs], [w], step))

    scale = 1 / n
    check(build([tensor((n,)), tensor((6, n)), tensor((n, n))], body), low=-scale, high=scale)


def test_carries_returned_directly_and_twice() -> None:
    """A carry computed into the function's output buffer (both parities), the
    same carry returned twice, the init returned too, a ys returned reshaped."""

    def step(c, x):
        return [prim.AddOp(c, x), prim.MulOp(c, x)]

    def body(c, xs):
        op = scan([c], [xs], [], step)
        flat = prim.ReshapeOp(op.ys[0], (2 * prim.shape_of(xs)[0],))
        return [op.carries[0], c, op.carries[0], flat]

    for length in (2, 3):
        check(build([tensor((2,)), tensor((length, 2))], body))


def test_carry_passed_through_and_constant_yields() -> None:
    """A body yielding its own arguments and a constant (copies into its outputs)."""

    def step(a, b, x):
        return [b, a, x, splat(2.0, x)]

    def body(a, b, xs):
        return results(scan([a, b], [xs], [], step))

    check(build([tensor((2,)), tensor((2,)), tensor((3, 2))], body))


def test_scan_between_elementwise_ops_is_not_fused() -> None:
    """`exp` feeds the scan and the op after it: the scan is a node of its own and
    the clusters on both sides of it stay apart (convexity)."""

    def body(x, xs):
        e = prim.ExpOp(x)
        op = scan([e], [xs], [], lambda c, v: [prim.MulOp(c, v)])
        return prim.AddOp(prim.MulOp(e, op.carries[0]), e)

    function = build([tensor((3,)), tensor((4, 3))], body)
    nodes = plan(list(function.body.block.ops)[:-1], is_fusable, reads=index_map_reads)
    kinds = [type(node) if not isinstance(node, Cluster) else Cluster for node in nodes]
    assert kinds == [Cluster, prim.ScanOp, Cluster]
    check(function)


def test_transpose_used_by_a_scan_and_a_product() -> None:
    """BLAS planning does not fold a transpose that a scan reads as well."""

    def step(x, m):
        return [prim.DotGeneralOp(m, x, lhs_contract=[1], rhs_contract=[0])]

    def body(a, xs):
        t = prim.TransposeOp(a, [1, 0])
        product = prim.DotGeneralOp(t, a, lhs_contract=[1], rhs_contract=[0])
        op = scan([], [xs], [t], step)
        return [product, op.ys[0]]

    check(build([tensor((40, 40)), tensor((3, 40))], body), low=-0.3, high=0.3)


# ----- structure -------------------------------------------------------------------


def recurrence(length: int) -> func.FuncOp:
    def step(c, x, w):
        new = prim.TanhOp(prim.AddOp(prim.MulOp(c, w), x))
        return [new, prim.MulOp(new, x)]

    def body(c, xs, w):
        return results(scan([c], [xs], [w], step))

    return build([tensor((4,)), tensor((length, 4)), tensor((4,))], body)


def lowered(function: func.FuncOp) -> ModuleOp:
    module = ModuleOp([function.clone()])
    LowerToLLVMPass().apply(Context(allow_unregistered=True), module)
    return module


def test_code_size_does_not_depend_on_the_length() -> None:
    """10⁴ iterations lower to as many xDSL ops and LLVM instructions as 10."""
    short, long = lowered(recurrence(10)), lowered(recurrence(10_000))
    assert op_count(short) == op_count(long)
    short_ir, long_ir = translate_to_llvm_ir(short), translate_to_llvm_ir(long)
    assert len(short_ir.splitlines()) == len(long_ir.splitlines())
    assert short_ir.count('define internal void @"f__scan0"(') == 1
    assert short_ir.count('call ccc void @"f__scan0"(') == 1


def test_optimized_code_is_a_loop_calling_the_body_once() -> None:
    compiled = CompiledFunction(recurrence(10_000))
    ir = compiled.llvm_ir
    parent = ir[ir.index("define void @f(") :]
    parent = parent[: parent.index("\n}")]
    assert parent.count("call fastcc void @f__scan0(") == 1
    assert len([line for line in parent.splitlines() if " = phi i64 " in line]) == 1
    assert ir.count("define internal fastcc void @f__scan0(") == 1
    rng = np.random.default_rng(0)
    args = [random_array(t, rng, -1.0, 1.0) for t in recurrence(10_000).function_type.inputs.data]  # type: ignore[arg-type]
    assert_matches(list(compiled(*args)), evaluate_func(recurrence(10_000), args))


def test_outlined_body_is_private_and_not_inlined() -> None:
    module = ModuleOp([recurrence(5)])
    lower_prim_to_loops(module)
    (outlined,) = outlined_bodies(module)
    assert outlined.sym_visibility is not None and outlined.sym_visibility.data == "private"
    assert NO_INLINE_ATTR in outlined.attributes
    assert outlined.attributes["tidu.num_outputs"].value.data == 2  # type: ignore[attr-defined]
    loops = [op for op in module.ops if isinstance(op, func.FuncOp)][0].body.block.ops
    assert len([op for op in loops if isinstance(op, scf.ForOp)]) == 1


def test_split_functions_with_a_scan() -> None:
    """Parent and body split into parts (a tiny part size): same results."""

    def step(c, x):
        for _ in range(4):
            total = prim.ReduceSumOp(prim.SinOp(c), [0])
            c = prim.AddOp(prim.BroadcastInDimOp(total, [], tensor((3,))), x)
        return [c, prim.ExpOp(c)]

    def body(c, xs):
        c = prim.CosOp(prim.ReduceSumOp(prim.ExpOp(c), [0]))
        c = prim.BroadcastInDimOp(c, [], tensor((3,)))
        op = scan([c], [xs], [], step)
        return [prim.SinOp(op.carries[0]), op.ys[0]]

    function = build([tensor((3,)), tensor((5, 3))], body)
    module = ModuleOp([function.clone()])
    ctx = Context(allow_unregistered=True)
    for lowering in (PrimBufferizePass(), ConvertPrimToLoopsPass(), ParallelizeLoopsPass()):
        lowering.apply(ctx, module)
    SplitFunctionsPass(max_ops=40).apply(ctx, module)
    names = [f.sym_name.data for f in module.ops if isinstance(f, func.FuncOp)]
    assert any(n.startswith("f__part") for n in names)
    assert any(n.startswith("f__scan0__part") for n in names)
    rng = np.random.default_rng(1)
    args = [random_array(t, rng, -0.5, 0.5) for t in function.function_type.inputs.data]  # type: ignore[arg-type]
    got = CompiledModule(module)["f"](*args)
    assert_matches(list(got), evaluate_func(function, args))


@pytest.mark.skipif(not parallel.libgomp_available(), reason="no libgomp")
def test_scan_without_carries_may_run_in_parallel(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scan without carries is a map: its iterations write disjoint slices."""

    def body(xs, w):
        return scan([], [xs], [w], lambda x, v: [prim.SinOp(prim.MulOp(x, v))]).ys[0]

    function = build([tensor((3000, 5)), tensor((5,))], body)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_WORK", 0)
    compiled = CompiledFunction(function)
    assert "GOMP_parallel" in compiled.llvm_ir
    rng = np.random.default_rng(2)
    args = [random_array(t, rng) for t in function.function_type.inputs.data]  # type: ignore[arg-type]
    assert_matches([compiled(*args)], evaluate_func(function, args))


@pytest.mark.skipif(not parallel.libgomp_available(), reason="no libgomp")
def test_scan_with_carries_stays_serial(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "PARALLEL_MIN_WORK", 0)
    module = ModuleOp([recurrence(3000)])
    lower_prim_to_loops(module)
    parent = [op for op in module.ops if isinstance(op, func.FuncOp)][0]
    (call,) = [op for op in parent.walk() if isinstance(op, func.CallOp)]
    assert call.callee.string_value() == "f__scan0"
    assert isinstance(call.parent_op(), scf.ForOp)
