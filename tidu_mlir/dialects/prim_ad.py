"""The AD rules of the `prim` ops (SPEC §1.1, §1.6): one mixin per op class.

Each `XxxRules` mixin is inherited by `prim.XxxOp` (prim.py lists it first in
the op's bases), so the op class carries its own JVP rule, transpose rule and
linearity predicate; `PrimRules.accumulate` names `prim.add` as the dialect's
addition for `linear-transpose`.

Conventions (docs/complex.md):
* JVP is the full R-linear derivative; for a holomorphic f it is `f'(z)·dz`.
* Transpose is the adjoint for the real inner product `<a, b> = Re(conj(a)·b)`:
  multiplication by a fixed `a` transposes to multiplication by `conj(a)`,
  `conj` to `conj`, `real` to `complex(ct, 0)`, `imag` to `complex(0, ct)`.
* Fixed factors (`cos(x)` for `sin`, ...) are computed on the primal side and
  enter the linear graph only as the fixed operand of a `mul`/`div`.
* A symbolic-zero operand that an op needs (a branch of `select`, a part of
  `complex`, an input of `concatenate`) is a zero constant, a fixed operand;
  `is_linear_in` accepts such a fixed operand only when it is a zero constant
  (possibly broadcast), so the op stays linear.
* Ties: `maximum` and `minimum` send the whole tangent to the lhs when the
  operands are equal; `reduce_max` splits it evenly among the maximal entries
  (JAX). `abs` of a real 0 has derivative +1 (JAX's `select(x >= 0, dx, -dx)`);
  `abs` of a complex 0 has derivative 0.

Rules emit ops only through `ctx.emit`, reference primal operands and results
directly (never copies), and every op they emit has rules itself (closure), so
derivatives of any order work. `prim` is imported at the end of this module
(prim.py imports this module to define its op classes), and only used inside
functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from tidu_mlir.ad.interface import ADRuleError, Differentiable, RuleContext, active_mask_of

if TYPE_CHECKING:
    from xdsl.irdl import IRDLOperation as _OpBase
else:
    _OpBase = object

Values = Sequence[SSAValue | None]


# --------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------


def _emit(ctx: RuleContext, op: Operation) -> SSAValue:
    """Emit a single-result op; its result."""
    return ctx.emit(op).results[0]


def _type(value: SSAValue) -> TensorType:
    return prim.tensor_type_of(value)


def full_like(ctx: RuleContext, value: float | complex, t: TensorType) -> SSAValue:
    """A constant tensor of type `t` filled with `value`: a scalar constant,
    broadcast (so a zero stays recognisable and costs no storage)."""
    scalar = TensorType(t.get_element_type(), [])
    constant = _emit(ctx, prim.ConstantOp.from_value(np.asarray(value), scalar))
    if not t.get_shape():
        return constant
    return _emit(ctx, prim.BroadcastInDimOp(constant, [], t))


def zeros_like(ctx: RuleContext, value: SSAValue) -> SSAValue:
    """The zero tensor of `value`'s type (a fixed operand standing for a symbolic zero)."""
    return full_like(ctx, 0.0, _type(value))


def conj_if_complex(ctx: RuleContext, value: SSAValue) -> SSAValue:
    """`conj(value)` for a complex tensor, `value` itself for a real one."""
    return _emit(ctx, prim.ConjOp(value)) if prim.is_complex(value.type) else value


def is_zero_constant(value: SSAValue) -> bool:
    """Whether `value` is a zero constant, possibly broadcast, reshaped,
    transposed or converted (a fixed operand that keeps an op linear)."""
    owner = value.owner
    while isinstance(
        owner, prim.BroadcastInDimOp | prim.ReshapeOp | prim.TransposeOp | prim.ConvertOp
    ):
        owner = owner.operand.owner
    return isinstance(owner, prim.ConstantOp) and not owner.to_array().any()


def _or_zeros(ctx: RuleContext, tangent: SSAValue | None, like: SSAValue) -> SSAValue:
    return tangent if tangent is not None else zeros_like(ctx, like)


def _scale(ctx: RuleContext, factor: SSAValue, tangent: SSAValue | None) -> SSAValue:
    """`factor · tangent` with a fixed factor (the JVP of a holomorphic unary op)."""
    assert tangent is not None
    return _emit(ctx, prim.MulOp(factor, tangent))


def _kept_axes(rank: int, removed: Sequence[int]) -> list[int]:
    return [axis for axis in range(rank) if axis not in removed]


def _inverse_permutation(permutation: Sequence[int]) -> list[int]:
    return [int(i) for i in np.argsort(permutation)]


def sum_to_shape(
    ctx: RuleContext, ct: SSAValue, dims: Sequence[int], operand_type: TensorType
) -> SSAValue:
    """The transpose of `broadcast_in_dim(operand, dims)`: sum `ct` over the
    result axes the operand does not occupy and over the size-1 operand axes
    that were expanded, then reshape to the operand's shape."""
    result_shape = prim.shape_of(ct)
    operand_shape = tuple(operand_type.get_shape())
    expanded = [
        dim
        for size, dim in zip(operand_shape, dims, strict=True)
        if size == 1 and result_shape[dim] != 1
    ]
    axes = sorted(set(_kept_axes(len(result_shape), dims)) | set(expanded))
    summed = _emit(ctx, prim.ReduceSumOp(ct, axes)) if axes else ct
    if prim.shape_of(summed) != operand_shape:
        summed = _emit(ctx, prim.ReshapeOp(summed, operand_shape))
    return summed


# --------------------------------------------------------------------------
# Bases
# --------------------------------------------------------------------------


class PrimRules(Differentiable, _OpBase):
    """Base of every prim rule mixin: `prim.add` accumulates cotangents."""

    @classmethod
    def accumulate(cls, lhs: SSAValue, rhs: SSAValue) -> Operation:
        return prim.AddOp(lhs, rhs)


class NonlinearRules(PrimRules):
    """An op that is linear in no operand: it has no transpose rule."""

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        raise ADRuleError("transpose", self, f"{self.name} is not linear")

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return not any(active_mask)


class UnaryLinearRules(PrimRules):
    """A single-operand linear op: its JVP applies the op to the tangent
    (`apply_to`), its transpose emits the adjoint map (`emit_adjoint`)."""

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        (tangent,) = tangents
        assert tangent is not None
        return [_emit(ctx, self.apply_to(tangent))]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        (cotangent,) = cotangents
        assert cotangent is not None
        return [self.emit_adjoint(ctx, cotangent)]

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return True

    def apply_to(self, tangent: SSAValue) -> Operation:
        """The op itself applied to `tangent` (not yet emitted)."""
        raise NotImplementedError

    def emit_adjoint(self, ctx: RuleContext, cotangent: SSAValue) -> SSAValue:
        """Emit the adjoint map applied to `cotangent`."""
        raise NotImplementedError


def _for_active(op: Operation, values: Sequence[SSAValue]) -> Values:
    """`values[i]` for the active operands of `op`, None for the fixed ones."""
    mask = active_mask_of(op)
    return [value if active else None for active, value in zip(mask, values, strict=True)]


def _active_or_zero(op: Operation, active_mask: Sequence[bool], first: int = 0) -> bool:
    """Operands from `first` on are active or zero constants (and some is active)."""
    operands = op.operands[first:]
    mask = active_mask[first:]
    return any(mask) and all(
        active or is_zero_constant(value) for active, value in zip(mask, operands, strict=True)
    )


# --------------------------------------------------------------------------
# Elementwise arithmetic
# --------------------------------------------------------------------------


class AddRules(PrimRules):
    """d(a + b) = da + db; transpose: ct to each active operand."""

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        left, right = tangents
        if left is None or right is None:
            return [left if left is not None else right]
        return [_emit(ctx, prim.AddOp(left, right))]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        (ct,) = cotangents
        assert ct is not None
        return _for_active(self, [ct, ct])

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return all(active_mask)


class SubRules(PrimRules):
    """d(a - b) = da - db; transpose: (ct, -ct)."""

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        left, right = tangents
        if right is None:
            return [left]
        if left is None:
            return [_emit(ctx, prim.NegOp(right))]
        return [_emit(ctx, prim.SubOp(left, right))]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        (ct,) = cotangents
        assert ct is not None
        if not active_mask_of(self)[1]:
            return [ct, None]
        return _for_active(self, [ct, _emit(ctx, prim.NegOp(ct))])

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return all(active_mask)


class MulRules(PrimRules):
    """d(a·b) = a·db + da·b, emitted in that order (the worked example of
    seeds/000); linear in exactly one operand; transpose: conj(fixed)·ct."""

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        lhs, rhs = self.operands
        dlhs, drhs = tangents
        terms: list[SSAValue] = []
        if drhs is not None:
            terms.append(_emit(ctx, prim.MulOp(lhs, drhs)))
        if dlhs is not None:
            terms.append(_emit(ctx, prim.MulOp(dlhs, rhs)))
        if len(terms) == 1:
            return terms
        return [_emit(ctx, prim.AddOp(terms[0], terms[1]))]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        (ct,) = cotangents
        assert ct is not None
        lhs_active = active_mask_of(self)[0]
        fixed = self.operands[1] if lhs_active else self.operands[0]
        contribution = _emit(ctx, prim.MulOp(conj_if_complex(ctx, fixed), ct))
        return [contribution, None] if lhs_active else [None, contribution]

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return sum(active_mask) == 1


class DivRules(PrimRules):
    """y = a/b: dy = (da - y·db)/b; linear in a only; transpose: ct/conj(b)."""

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        _, rhs = self.operands
        dlhs, drhs = tangents
        numerator = dlhs
        if drhs is not None:
            product = _emit(ctx, prim.MulOp(self.results[0], drhs))
            numerator = (
                _emit(ctx, prim.NegOp(product))
                if dlhs is None
                else _emit(ctx, prim.SubOp(dlhs, product))
            )
        assert numerator is not None
        return [_emit(ctx, prim.DivOp(numerator, rhs))]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        (ct,) = cotangents
        assert ct is not None
        return [_emit(ctx, prim.DivOp(ct, conj_if_complex(ctx, self.operands[1]))), None]

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return tuple(active_mask) == (True, False)


class NegRules(UnaryLinearRules):
    """d(-x) = -dx; transpose: -ct."""

    def apply_to(self, tangent: SSAValue) -> Operation:
        return prim.NegOp(tangent)

    def emit_adjoint(self, ctx: RuleContext, cotangent: SSAValue) -> SSAValue:
        return _emit(ctx, prim.NegOp(cotangent))


class ConjRules(UnaryLinearRules):
    """d conj(z) = conj(dz) (R-linear); transpose: conj(ct)."""

    def apply_to(self, tangent: SSAValue) -> Operation:
        return prim.ConjOp(tangent)

    def emit_adjoint(self, ctx: RuleContext, cotangent: SSAValue) -> SSAValue:
        return _emit(ctx, prim.ConjOp(cotangent))


# --------------------------------------------------------------------------
# Holomorphic unary functions: dy = f'(x)·dx with f'(x) computed on the primal side
# --------------------------------------------------------------------------


class ExpRules(NonlinearRules):
    """d exp(x) = exp(x)·dx (reuses the primal result)."""

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        return [_scale(ctx, self.results[0], tangents[0])]


class LogRules(NonlinearRules):
    """d log(x) = dx/x."""

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        (tangent,) = tangents
        assert tangent is not None
        return [_emit(ctx, prim.DivOp(tangent, self.operands[0]))]


class SinRules(NonlinearRules):
    """d sin(x) = cos(x)·dx."""

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        return [_scale(ctx, _emit(ctx, prim.CosOp(self.operands[0])), tangents[0])]


class CosRules(NonlinearRules):
    """d cos(x) = -sin(x)·dx."""

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        sine = _emit(ctx, prim.SinOp(self.operands[0]))
        return [_scale(ctx, _emit(ctx, prim.NegOp(sine)), tangents[0])]


class TanhRules(NonlinearRules):
    """d tanh(x) = (1 - y²)·dx with y = tanh(x)."""

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        y = self.results[0]
        one = full_like(ctx, 1.0, _type(y))
        factor = _emit(ctx, prim.SubOp(one, _emit(ctx, prim.MulOp(y, y))))
        return [_scale(ctx, factor, tangents[0])]


class SqrtRules(NonlinearRules):
    """d sqrt(x) = dx/(2y) with y = sqrt(x)."""

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        (tangent,) = tangents
        assert tangent is not None
        y = self.results[0]
        return [_emit(ctx, prim.DivOp(tangent, _emit(ctx, prim.AddOp(y, y))))]


class PowRules(NonlinearRules):
    """d x^c = c·x^(c-1)·dx (constant c; no tangent when c = 0)."""

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        (tangent,) = tangents
        exponent = cast("prim.PowOp", self).exponent_value
        if exponent == 0.0:
            return [None]
        if exponent == 1.0:
            return [tangent]
        x = self.operands[0]
        power = x if exponent == 2.0 else _emit(ctx, prim.PowOp(x, exponent - 1.0))
        factor = _emit(ctx, prim.MulOp(full_like(ctx, exponent, _type(x)), power))
        return [_scale(ctx, factor, tangent)]


class AbsRules(NonlinearRules):
    """Real x: d|x| = sign(x)·dx with sign(0) = +1. Complex z:
    d|z| = Re(conj(z)/|z| · dz), 0 at z = 0."""

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        x, y = self.operands[0], self.results[0]
        if prim.is_complex(x.type):
            return [self._complex_jvp(ctx, x, y, tangents[0])]
        zero = zeros_like(ctx, x)
        nonnegative = _emit(ctx, prim.CompareOp("ge", x, zero))
        one, minus_one = full_like(ctx, 1.0, _type(x)), full_like(ctx, -1.0, _type(x))
        sign = _emit(ctx, prim.SelectOp(nonnegative, one, minus_one))
        return [_scale(ctx, sign, tangents[0])]

    @staticmethod
    def _complex_jvp(
        ctx: RuleContext, z: SSAValue, magnitude: SSAValue, tangent: SSAValue | None
    ) -> SSAValue:
        is_zero = _emit(ctx, prim.CompareOp("eq", magnitude, zeros_like(ctx, magnitude)))
        safe = _emit(ctx, prim.SelectOp(is_zero, full_like(ctx, 1.0, _type(magnitude)), magnitude))
        denominator = _emit(ctx, prim.ConvertOp(safe, _type(z).get_element_type()))
        direction = _emit(ctx, prim.DivOp(_emit(ctx, prim.ConjOp(z)), denominator))
        return _emit(ctx, prim.RealOp(_scale(ctx, direction, tangent)))


# --------------------------------------------------------------------------
# Complex parts and conversions
# --------------------------------------------------------------------------


class RealRules(UnaryLinearRules):
    """d Re(z) = Re(dz); transpose: complex(ct, 0)."""

    def apply_to(self, tangent: SSAValue) -> Operation:
        return prim.RealOp(tangent)

    def emit_adjoint(self, ctx: RuleContext, cotangent: SSAValue) -> SSAValue:
        return _emit(ctx, prim.ComplexOp(cotangent, zeros_like(ctx, cotangent)))


class ImagRules(UnaryLinearRules):
    """d Im(z) = Im(dz); transpose: complex(0, ct)."""

    def apply_to(self, tangent: SSAValue) -> Operation:
        return prim.ImagOp(tangent)

    def emit_adjoint(self, ctx: RuleContext, cotangent: SSAValue) -> SSAValue:
        return _emit(ctx, prim.ComplexOp(zeros_like(ctx, cotangent), cotangent))


class ComplexRules(PrimRules):
    """d complex(re, im) = complex(dre, dim) (zeros for a missing part);
    transpose: (Re ct, Im ct). Linear when each fixed part is a zero constant."""

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        re, im = self.operands
        dre, dim = tangents
        return [_emit(ctx, prim.ComplexOp(_or_zeros(ctx, dre, re), _or_zeros(ctx, dim, im)))]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        (ct,) = cotangents
        assert ct is not None
        re_active, im_active = active_mask_of(self)
        return [
            _emit(ctx, prim.RealOp(ct)) if re_active else None,
            _emit(ctx, prim.ImagOp(ct)) if im_active else None,
        ]

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return _active_or_zero(self, active_mask)


class ConvertRules(UnaryLinearRules):
    """d convert(x) = convert(dx). Transpose: convert back; real -> complex
    transposes to the real part, complex -> real (the real part) to complex(ct, 0)."""

    def apply_to(self, tangent: SSAValue) -> Operation:
        return prim.ConvertOp(tangent, _type(self.results[0]).get_element_type())

    def emit_adjoint(self, ctx: RuleContext, cotangent: SSAValue) -> SSAValue:
        operand_type = _type(self.operands[0])
        if prim.is_complex(cotangent.type) and not prim.is_complex(operand_type):
            cotangent = _emit(ctx, prim.RealOp(cotangent))
        if cotangent.type == operand_type:
            return cotangent
        return _emit(ctx, prim.ConvertOp(cotangent, operand_type.get_element_type()))


# --------------------------------------------------------------------------
# Selection and comparison
# --------------------------------------------------------------------------


def _select_jvp(ctx: RuleContext, pred: SSAValue, tangents: Values, like: SSAValue) -> SSAValue:
    """select(pred, da, db) with a zero constant for a missing tangent."""
    da, db = tangents
    return _emit(ctx, prim.SelectOp(pred, _or_zeros(ctx, da, like), _or_zeros(ctx, db, like)))


class MaximumRules(NonlinearRules):
    """d max(a, b) = select(a >= b, da, db): ties go to the lhs."""

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        lhs, rhs = self.operands
        pick_lhs = _emit(ctx, prim.CompareOp("ge", lhs, rhs))
        return [_select_jvp(ctx, pick_lhs, tangents, lhs)]


class MinimumRules(NonlinearRules):
    """d min(a, b) = select(a <= b, da, db): ties go to the lhs."""

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        lhs, rhs = self.operands
        pick_lhs = _emit(ctx, prim.CompareOp("le", lhs, rhs))
        return [_select_jvp(ctx, pick_lhs, tangents, lhs)]


class SelectRules(PrimRules):
    """d select(p, a, b) = select(p, da, db); transpose: (select(p, ct, 0),
    select(p, 0, ct)). Linear in the branches when a fixed branch is a zero constant."""

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        pred, on_true, _ = self.operands
        if tangents[1] is None and tangents[2] is None:
            return [None]
        return [_select_jvp(ctx, pred, tangents[1:], on_true)]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        (ct,) = cotangents
        assert ct is not None
        pred = self.operands[0]
        _, true_active, false_active = active_mask_of(self)
        zero = zeros_like(ctx, ct)
        return [
            None,
            _emit(ctx, prim.SelectOp(pred, ct, zero)) if true_active else None,
            _emit(ctx, prim.SelectOp(pred, zero, ct)) if false_active else None,
        ]

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return not active_mask[0] and _active_or_zero(self, active_mask, first=1)


class CompareRules(NonlinearRules):
    """A comparison has no tangent (its i1 result is piecewise constant)."""

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        return [None]


class ConstantRules(NonlinearRules):
    """A constant has no operands, so no tangent."""

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        return [None]


# --------------------------------------------------------------------------
# Shape ops
# --------------------------------------------------------------------------


class BroadcastInDimRules(UnaryLinearRules):
    """d broadcast(x) = broadcast(dx); transpose: sum back to the operand's shape."""

    def _dims(self) -> tuple[int, ...]:
        return cast("prim.BroadcastInDimOp", self).prop_values("dims")

    def apply_to(self, tangent: SSAValue) -> Operation:
        return prim.BroadcastInDimOp(tangent, self._dims(), self.results[0].type)

    def emit_adjoint(self, ctx: RuleContext, cotangent: SSAValue) -> SSAValue:
        return sum_to_shape(ctx, cotangent, self._dims(), _type(self.operands[0]))


class ReduceSumRules(UnaryLinearRules):
    """d sum(x) = sum(dx); transpose: broadcast ct over the reduced axes."""

    def _axes(self) -> tuple[int, ...]:
        return cast("prim.ReduceSumOp", self).prop_values("axes")

    def apply_to(self, tangent: SSAValue) -> Operation:
        return prim.ReduceSumOp(tangent, self._axes())

    def emit_adjoint(self, ctx: RuleContext, cotangent: SSAValue) -> SSAValue:
        operand_type = _type(self.operands[0])
        kept = _kept_axes(len(operand_type.get_shape()), self._axes())
        return _emit(ctx, prim.BroadcastInDimOp(cotangent, kept, operand_type))


class ReduceMaxRules(NonlinearRules):
    """d max(x) = sum(w·dx) with w = 1/count on the maximal entries, 0 elsewhere
    (ties share the tangent evenly, as JAX does)."""

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        x, y = self.operands[0], self.results[0]
        axes = cast("prim.ReduceMaxOp", self).prop_values("axes")
        x_type = _type(x)
        kept = _kept_axes(len(x_type.get_shape()), axes)
        maximum = _emit(ctx, prim.BroadcastInDimOp(y, kept, x_type))
        is_max = _emit(ctx, prim.CompareOp("eq", x, maximum))
        indicator = _emit(
            ctx, prim.SelectOp(is_max, full_like(ctx, 1.0, x_type), zeros_like(ctx, x))
        )
        count = _emit(ctx, prim.ReduceSumOp(indicator, axes))
        weights = _emit(
            ctx, prim.DivOp(indicator, _emit(ctx, prim.BroadcastInDimOp(count, kept, x_type)))
        )
        return [_emit(ctx, prim.ReduceSumOp(_scale(ctx, weights, tangents[0]), axes))]


class ReshapeRules(UnaryLinearRules):
    """d reshape(x) = reshape(dx); transpose: reshape back."""

    def apply_to(self, tangent: SSAValue) -> Operation:
        return prim.ReshapeOp(tangent, prim.shape_of(self.results[0]))

    def emit_adjoint(self, ctx: RuleContext, cotangent: SSAValue) -> SSAValue:
        return _emit(ctx, prim.ReshapeOp(cotangent, prim.shape_of(self.operands[0])))


class TransposeRules(UnaryLinearRules):
    """d transpose(x) = transpose(dx); transpose: the inverse permutation."""

    def _permutation(self) -> tuple[int, ...]:
        return cast("prim.TransposeOp", self).prop_values("permutation")

    def apply_to(self, tangent: SSAValue) -> Operation:
        return prim.TransposeOp(tangent, self._permutation())

    def emit_adjoint(self, ctx: RuleContext, cotangent: SSAValue) -> SSAValue:
        inverse = _inverse_permutation(self._permutation())
        return _emit(ctx, prim.TransposeOp(cotangent, inverse))


class DotGeneralRules(PrimRules):
    """Bilinear: d dot(a, b) = dot(a, db) + dot(da, b) (fixed operand first, as
    for mul). Transpose: contract ct with conj(fixed) over the fixed operand's
    free axes, then transpose the axes back into the active operand's order."""

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        op = cast("prim.DotGeneralOp", self)
        lhs, rhs = self.operands
        dlhs, drhs = tangents
        terms: list[SSAValue] = []
        if drhs is not None:
            terms.append(_emit(ctx, _dot_like(op, lhs, drhs)))
        if dlhs is not None:
            terms.append(_emit(ctx, _dot_like(op, dlhs, rhs)))
        if len(terms) == 1:
            return terms
        return [_emit(ctx, prim.AddOp(terms[0], terms[1]))]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        (ct,) = cotangents
        assert ct is not None
        lhs, rhs = self.operands
        lhs_batch, rhs_batch, lhs_contract, rhs_contract = cast("prim.DotGeneralOp", self).dims()
        if active_mask_of(self)[0]:
            lhs_free = len(_kept_axes(len(prim.shape_of(lhs)), [*lhs_batch, *lhs_contract]))
            contribution = _dot_cotangent(
                ctx, ct, rhs, lhs, (lhs_batch, lhs_contract), (rhs_batch, rhs_contract),
                fixed_free_start=len(lhs_batch) + lhs_free,
            )  # fmt: skip
            return [contribution, None]
        contribution = _dot_cotangent(
            ctx, ct, lhs, rhs, (rhs_batch, rhs_contract), (lhs_batch, lhs_contract),
            fixed_free_start=len(lhs_batch),
        )  # fmt: skip
        return [None, contribution]

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return sum(active_mask) == 1


def _dot_like(op: prim.DotGeneralOp, lhs: SSAValue, rhs: SSAValue) -> prim.DotGeneralOp:
    """A dot_general with the dimension numbers of `op`."""
    lhs_batch, rhs_batch, lhs_contract, rhs_contract = op.dims()
    return prim.DotGeneralOp(
        lhs,
        rhs,
        lhs_batch=lhs_batch,
        rhs_batch=rhs_batch,
        lhs_contract=lhs_contract,
        rhs_contract=rhs_contract,
    )


def _dot_cotangent(
    ctx: RuleContext,
    ct: SSAValue,
    fixed: SSAValue,
    active: SSAValue,
    active_dims: tuple[Sequence[int], Sequence[int]],
    fixed_dims: tuple[Sequence[int], Sequence[int]],
    fixed_free_start: int,
) -> SSAValue:
    """The cotangent of the active operand of a dot_general.

    `ct`'s axes are batch, lhs free, rhs free; the fixed operand's free axes
    start at `fixed_free_start`. Contracting them (and batching the batch axes)
    with conj(fixed) leaves batch, active free, then the active contracting
    axes ordered like the fixed ones; a transpose restores the active order.
    """
    (active_batch, active_contract), (fixed_batch, fixed_contract) = active_dims, fixed_dims
    fixed_free = _kept_axes(len(prim.shape_of(fixed)), [*fixed_batch, *fixed_contract])
    active_free = _kept_axes(len(prim.shape_of(active)), [*active_batch, *active_contract])
    product = _emit(
        ctx,
        prim.DotGeneralOp(
            ct,
            conj_if_complex(ctx, fixed),
            lhs_batch=range(len(active_batch)),
            rhs_batch=fixed_batch,
            lhs_contract=range(fixed_free_start, fixed_free_start + len(fixed_free)),
            rhs_contract=fixed_free,
        ),
    )
    by_fixed = sorted(range(len(fixed_contract)), key=lambda i: fixed_contract[i])
    axes = [*active_batch, *active_free, *(active_contract[i] for i in by_fixed)]
    permutation = _inverse_permutation(axes)
    if permutation == list(range(len(permutation))):
        return product
    return _emit(ctx, prim.TransposeOp(product, permutation))


class SliceRules(UnaryLinearRules):
    """d slice(x) = slice(dx); transpose: pad ct with zeros back into place
    (low = start, interior = stride - 1)."""

    def apply_to(self, tangent: SSAValue) -> Operation:
        return prim.SliceOp(tangent, *cast("prim.SliceOp", self).bounds())

    def emit_adjoint(self, ctx: RuleContext, cotangent: SSAValue) -> SSAValue:
        start, _, stride = cast("prim.SliceOp", self).bounds()
        operand_shape = prim.shape_of(self.operands[0])
        sizes = prim.shape_of(cotangent)
        interior = [step - 1 for step in stride]
        high = [
            dim - low - size - max(size - 1, 0) * inner
            for dim, low, size, inner in zip(operand_shape, start, sizes, interior, strict=True)
        ]
        return _emit(ctx, prim.PadOp(cotangent, start, high, interior))


class PadRules(UnaryLinearRules):
    """d pad(x) = pad(dx) (zero padding is linear); transpose: the strided
    slice picking the operand's positions (stride = interior + 1)."""

    def apply_to(self, tangent: SSAValue) -> Operation:
        return prim.PadOp(tangent, *cast("prim.PadOp", self).paddings())

    def emit_adjoint(self, ctx: RuleContext, cotangent: SSAValue) -> SSAValue:
        low, _, interior = cast("prim.PadOp", self).paddings()
        sizes = prim.shape_of(self.operands[0])
        stride = [inner + 1 for inner in interior]
        limit = [
            lo + (size - 1) * step + 1 if size else lo
            for lo, size, step in zip(low, sizes, stride, strict=True)
        ]
        return _emit(ctx, prim.SliceOp(cotangent, low, limit, stride))


class ConcatenateRules(PrimRules):
    """d concat(xs) = concat(dxs) (zeros for missing tangents); transpose: the
    slice of ct each active input came from. Linear when fixed inputs are zero."""

    def _dimension(self) -> int:
        return cast("prim.ConcatenateOp", self).dimension_value

    def jvp_rule(self, ctx: RuleContext, tangents: Values) -> Values:
        parts = [
            _or_zeros(ctx, tangent, value)
            for tangent, value in zip(tangents, self.operands, strict=True)
        ]
        return [_emit(ctx, prim.ConcatenateOp(parts, self._dimension()))]

    def transpose_rule(self, ctx: RuleContext, cotangents: Values) -> Values:
        (ct,) = cotangents
        assert ct is not None
        dimension = self._dimension()
        shape = prim.shape_of(ct)
        offset = 0
        result: list[SSAValue | None] = []
        for value, active in zip(self.operands, active_mask_of(self), strict=True):
            size = prim.shape_of(value)[dimension]
            if active:
                start = [offset if axis == dimension else 0 for axis in range(len(shape))]
                limit = [offset + size if axis == dimension else d for axis, d in enumerate(shape)]
                result.append(_emit(ctx, prim.SliceOp(ct, start, limit)))
            else:
                result.append(None)
            offset += size
        return result

    def is_linear_in(self, active_mask: Sequence[bool]) -> bool:
        return _active_or_zero(self, active_mask)


from tidu_mlir.dialects import prim  # noqa: E402  (prim.py imports this module first)
