"""The `prim` dialect: the differentiable tensor primitives (docs/design.md).

Every op takes and gives statically shaped ranked tensors of f32, f64,
complex<f32> or complex<f64> (i1 only for the result of `prim.compare` and the
predicate of `prim.select`). Every op is `Pure`, accepts an optional
discardable `role` attribute (`#cg.linearized<[...]>`) and checks it in its
verifier. Constructors infer the result type wherever the operands and
properties determine it, so AD rules can emit ops without computing shapes.

Each op class holds everything about itself: verifier, assembly format, AD
rules and numpy reference. The modules are layered; each imports only the
ones before it:

1. `types`: element types, dtypes, type checks
2. `shapes`: shape rules
3. `syntax`: role attribute, array properties, print/parse helpers
4. `base`: `PrimOp`, the rule-shape and structural bases, `prim.add`
5. `core`: the linear core ops and the rule helpers that emit them
6. `elementwise`: the non-linear elementwise ops
7. `structural`: slice, pad, concatenate, reduce_max
8. `contraction`: dot_general
"""

from xdsl.ir import Dialect

from tidu_mlir.dialects.prim.base import (
    AddOp,
    ArrayPropsUnaryOp,
    ElementwiseBinaryOp,
    ElementwiseUnaryOp,
    NotLinear,
    PrimOp,
    ReduceOp,
    TypeChangingUnaryOp,
    UnaryLinear,
)
from tidu_mlir.dialects.prim.contraction import DOT_PROPS, DotGeneralOp, einsum_spec
from tidu_mlir.dialects.prim.core import (
    BroadcastInDimOp,
    ComplexOp,
    ConjOp,
    ConstantOp,
    ConvertOp,
    ImagOp,
    MulOp,
    NegOp,
    RealOp,
    ReduceSumOp,
    ReshapeOp,
    SelectOp,
    SubOp,
    TransposeOp,
    conj_if_complex,
    dense_to_array,
    full_like,
    is_zero_constant,
    sum_to_shape,
    zeros_like,
)
from tidu_mlir.dialects.prim.elementwise import (
    COMPARE_DIRECTIONS,
    AbsOp,
    CompareOp,
    CosOp,
    DivOp,
    ExpOp,
    LogOp,
    MaximumOp,
    MinimumOp,
    PowOp,
    SinOp,
    SqrtOp,
    TanhOp,
)
from tidu_mlir.dialects.prim.shapes import (
    broadcast_in_dim_check,
    concatenate_shape,
    dot_general_shape,
    pad_shape,
    reduce_shape,
    slice_shape,
    transpose_shape,
)
from tidu_mlir.dialects.prim.structural import ConcatenateOp, PadOp, ReduceMaxOp, SliceOp
from tidu_mlir.dialects.prim.syntax import RoleSpec, array_values, i64_array
from tidu_mlir.dialects.prim.types import (
    COMPLEX_TYPES,
    FLOAT_TYPES,
    VALUE_TYPES,
    Shape,
    Value,
    check_same_element_type,
    check_same_type,
    check_shape,
    check_tensor,
    complex_type,
    element_type_of,
    element_type_of_dtype,
    is_complex,
    real_element_type,
    real_type,
    shape_of,
    tensor_dtype,
    tensor_type_of,
    with_element_type,
)

PRIM_OPS: tuple[type[PrimOp], ...] = (
    AddOp,
    SubOp,
    MulOp,
    DivOp,
    MaximumOp,
    MinimumOp,
    NegOp,
    ExpOp,
    LogOp,
    SinOp,
    CosOp,
    TanhOp,
    SqrtOp,
    ConjOp,
    PowOp,
    AbsOp,
    RealOp,
    ImagOp,
    ComplexOp,
    SelectOp,
    CompareOp,
    ConvertOp,
    ConstantOp,
    BroadcastInDimOp,
    ReduceSumOp,
    ReduceMaxOp,
    ReshapeOp,
    TransposeOp,
    DotGeneralOp,
    SliceOp,
    PadOp,
    ConcatenateOp,
)

PRIM = Dialect("prim", list(PRIM_OPS), [])

__all__ = [
    "COMPARE_DIRECTIONS",
    "COMPLEX_TYPES",
    "DOT_PROPS",
    "FLOAT_TYPES",
    "PRIM",
    "PRIM_OPS",
    "VALUE_TYPES",
    "AbsOp",
    "AddOp",
    "ArrayPropsUnaryOp",
    "BroadcastInDimOp",
    "CompareOp",
    "ComplexOp",
    "ConcatenateOp",
    "ConjOp",
    "ConstantOp",
    "ConvertOp",
    "CosOp",
    "DivOp",
    "DotGeneralOp",
    "ElementwiseBinaryOp",
    "ElementwiseUnaryOp",
    "ExpOp",
    "ImagOp",
    "LogOp",
    "MaximumOp",
    "MinimumOp",
    "MulOp",
    "NegOp",
    "NotLinear",
    "PadOp",
    "PowOp",
    "PrimOp",
    "RealOp",
    "ReduceMaxOp",
    "ReduceOp",
    "ReduceSumOp",
    "ReshapeOp",
    "RoleSpec",
    "SelectOp",
    "Shape",
    "SinOp",
    "SliceOp",
    "SqrtOp",
    "SubOp",
    "TanhOp",
    "TransposeOp",
    "TypeChangingUnaryOp",
    "UnaryLinear",
    "Value",
    "array_values",
    "broadcast_in_dim_check",
    "check_same_element_type",
    "check_same_type",
    "check_shape",
    "check_tensor",
    "complex_type",
    "concatenate_shape",
    "conj_if_complex",
    "dense_to_array",
    "dot_general_shape",
    "einsum_spec",
    "element_type_of",
    "element_type_of_dtype",
    "full_like",
    "i64_array",
    "is_complex",
    "is_zero_constant",
    "pad_shape",
    "real_element_type",
    "real_type",
    "reduce_shape",
    "shape_of",
    "slice_shape",
    "sum_to_shape",
    "tensor_dtype",
    "tensor_type_of",
    "transpose_shape",
    "with_element_type",
    "zeros_like",
]
