"""`prim-bufferize`: tensor function signatures to the buffer calling convention.

A `func.func` taking and returning static tensors becomes a function of input
memrefs then output memrefs with `tidu.num_outputs` (docs/lowering.md, calling
convention). The body still computes on tensors: each input is read through
`bufferization.to_tensor`, and each returned value is written to its output
buffer by `bufferization.materialize_in_destination`; `convert-prim-to-loops`
then replaces the tensor computation by loops over the buffers.

    func.func @f(%x: tensor<4xf64>) -> tensor<4xf64>
becomes
    func.func @f(%x: memref<4xf64>, %out0: memref<4xf64>) attributes {tidu.num_outputs = 1}
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import bufferization, func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import DiagnosticException

from tidu_mlir.lowering.loops import memref_type

NUM_OUTPUTS_ATTR = "tidu.num_outputs"


def buffer_type(typ: Attribute) -> MemRefType:
    """The memref holding a static tensor of type `typ` (same shape and element type)."""
    if not isinstance(typ, TensorType) or any(d < 0 for d in typ.get_shape()):
        raise DiagnosticException(f"only statically shaped tensors are bufferized, got {typ}")
    return memref_type(typ.get_element_type(), tuple(typ.get_shape()))


def needs_bufferization(op: func.FuncOp) -> bool:
    """A defined function with a tensor argument or result."""
    types = [*op.function_type.inputs.data, *op.function_type.outputs.data]
    return not op.is_declaration and any(isinstance(t, TensorType) for t in types)


def bufferize_function(op: func.FuncOp) -> None:
    """Rewrite `op` in place to take input and output memrefs (see the module docstring)."""
    block = op.body.block
    ret = block.last_op
    if len(op.body.blocks) != 1 or not isinstance(ret, func.ReturnOp):
        raise DiagnosticException(f"@{op.sym_name.data}: expected one block ending in func.return")
    for arg in list(block.args):
        tensor_type = arg.type
        new_arg = Rewriter.replace_value_with_new_type(arg, buffer_type(tensor_type))
        to_tensor = bufferization.ToTensorOp(new_arg, restrict=True)
        Rewriter.insert_op(to_tensor, InsertPoint.at_start(block))
        new_arg.replace_uses_with_if(
            to_tensor.tensor, lambda use, t=to_tensor: use.operation is not t
        )
    results = list(ret.arguments)
    outputs = [block.insert_arg(buffer_type(v.type), len(block.args)) for v in results]
    for index, (value, out) in enumerate(zip(results, outputs, strict=True)):
        out.name_hint = f"out{index}"
        store = bufferization.MaterializeInDestinationOp(
            operands=[value, out],
            result_types=[[]],
            properties={"restrict": UnitAttr(), "writable": UnitAttr()},
        )
        Rewriter.insert_op(store, InsertPoint.before(ret))
    Rewriter.replace_op(ret, func.ReturnOp())
    op.function_type = FunctionType.from_lists(block.arg_types, [])
    op.attributes[NUM_OUTPUTS_ATTR] = IntegerAttr(len(outputs), i64)
    if op.arg_attrs is not None:
        extra = [DictionaryAttr({}) for _ in outputs]
        op.arg_attrs = ArrayAttr([*op.arg_attrs.data, *extra])
    op.res_attrs = None


@dataclass(frozen=True)
class PrimBufferizePass(ModulePass):
    """Give every tensor `func.func` the buffer calling convention."""

    name = "prim-bufferize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in list(op.walk()):
            if isinstance(function, func.FuncOp) and needs_bufferization(function):
                bufferize_function(function)
