"""Random numpy-style programs over the `tnp` functions, for differential testing.

A program is straight-line Python source over its inputs:

    def f(x0, x1):
        v2 = xp.sin(x0)
        v3 = xp.matmul(v2, x1)
        return v3

run with `xp` = `tidu_mlir.numpy` (traced by `td.jit`, `td.grad`, ...), numpy
or `jax.numpy` (and `lx` = `td.lax`, a numpy stand-in or `jax.lax`), so every
namespace computes the same function, and a failure prints code one can run.

The generator tracks each value's shape, dtype and bounds (interval arithmetic
on the real and imaginary parts) to stay in the functions' domains by
construction: `log`, `sqrt`, fractional powers and divisors only see values
at least 0.25 from zero and the branch cuts (else `v * v + 0.5` is taken
instead), `exp`, `sin`/`cos`/`tanh` of complex numbers see scaled-down
arguments, and values are scaled by powers of two (exactly) to stay below
`LIMIT`. Ops with a kink (`abs`, `maximum`, `minimum`, `max`) or a jump
(`where` on a comparison, `arctan2`'s cut) record a margin expression, the
distance of their operands to it: tests skip inputs closer than a threshold.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from hypothesis import strategies as st

LIMIT = 64.0
"""Values are scaled (by powers of two) to stay within ±LIMIT."""
MAX_SIZE = 48
"""The largest number of elements of a value."""
POSITIVE = 0.25
"""How far from zero (or a branch cut) the arguments of log, sqrt, ... stay."""

REAL = ("float64", "float32")
COMPLEX = ("complex128", "complex64")
PROMOTED = {np.dtype("float32"): np.dtype("float64"), np.dtype("complex64"): np.dtype("complex128")}


# --------------------------------------------------------------------------
# Bounds
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Bounds:
    """A closed interval holding every element (of a real or imaginary part)."""

    lo: float
    hi: float

    @staticmethod
    def symmetric(magnitude: float) -> Bounds:
        return Bounds(-magnitude, magnitude)

    @property
    def magnitude(self) -> float:
        return max(abs(self.lo), abs(self.hi))

    def __add__(self, other: Bounds) -> Bounds:
        return Bounds(self.lo + other.lo, self.hi + other.hi)

    def __neg__(self) -> Bounds:
        return Bounds(-self.hi, -self.lo)

    def __sub__(self, other: Bounds) -> Bounds:
        return self + -other

    def __mul__(self, other: Bounds) -> Bounds:
        products = [a * b for a in (self.lo, self.hi) for b in (other.lo, other.hi)]
        return Bounds(min(products), max(products))

    def scaled(self, factor: float) -> Bounds:
        """Multiplied by `factor` >= 0."""
        return Bounds(self.lo * factor, self.hi * factor)

    def union(self, other: Bounds) -> Bounds:
        return Bounds(min(self.lo, other.lo), max(self.hi, other.hi))

    def mapped(self, fn: Callable[[float], float]) -> Bounds:
        """The image under a monotonic `fn`."""
        a, b = fn(self.lo), fn(self.hi)
        return Bounds(min(a, b), max(a, b))


ZERO = Bounds(0.0, 0.0)


@dataclass(frozen=True)
class Value:
    """A named array of the program: an input, a constant, a computed value
    or a Python scalar (`shape` None)."""

    name: str
    shape: tuple[int, ...] | None
    dtype: str
    re: Bounds
    im: Bounds | None = None
    """The imaginary part's bounds (complex values only)."""

    @property
    def is_complex(self) -> bool:
        return np.dtype(self.dtype).kind == "c"

    @property
    def is_real(self) -> bool:
        return np.dtype(self.dtype).kind == "f"

    @property
    def imag(self) -> Bounds:
        return self.im if self.im is not None else ZERO

    @property
    def magnitude(self) -> float:
        """A bound of the elements' absolute values."""
        return math.hypot(self.re.magnitude, self.imag.magnitude)

    @property
    def dims(self) -> tuple[int, ...]:
        return self.shape if self.shape is not None else ()

    @property
    def size(self) -> int:
        return math.prod(self.dims)


def _dtype_of(*values: Value) -> str:
    """numpy's result dtype, Python scalars weak (NEP 50), as tnp promotes."""
    operands = [
        complex(1) if v.shape is None and v.is_complex else 1.0 if v.shape is None else np.dtype(v.dtype)
        for v in values
    ]  # fmt: skip
    return str(np.result_type(*operands))


def _real_dtype(dtype: str) -> str:
    return {"complex128": "float64", "complex64": "float32"}.get(dtype, dtype)


def _complex_dtype(dtype: str) -> str:
    return {"float64": "complex128", "float32": "complex64"}.get(dtype, dtype)


# --------------------------------------------------------------------------
# Programs
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Margin:
    """A numpy expression for the distance to a kink or jump, per element."""

    expression: str
    jump: bool
    """A discontinuity (matters for values too), not only a kink (derivatives)."""


@dataclass
class Program:
    """A generated function: its inputs, constants, lines and output."""

    inputs: list[Value]
    constants: dict[str, np.ndarray]
    lines: list[str]
    output: Value
    margins: list[Margin]
    scale: float
    """The largest bound of any value (the scale of rounding errors)."""
    weights: np.ndarray = field(default_factory=lambda: np.ones(()))
    """The real weights of the objective `real(sum(f(...) * w))`."""

    dtypes: frozenset[str] = frozenset()
    """The dtypes of every array of the program."""

    @property
    def low_precision(self) -> bool:
        """Whether any value is float32/complex64 (looser tolerances)."""
        return bool(self.dtypes & {"float32", "complex64"})

    @property
    def real_inputs(self) -> bool:
        return all(v.is_real for v in self.inputs)

    def source(self) -> str:
        """The function `f` and the objective `objective` as Python source."""
        args = ", ".join(v.name for v in self.inputs)
        body = "".join(f"    {line}\n" for line in self.lines)
        return (
            f"def f({args}):\n{body}    return {self.output.name}\n\n\n"
            f"def objective({args}):\n    return xp.real(xp.sum(f({args}) * w))\n"
        )

    def __repr__(self) -> str:
        constants = "".join(
            f"{name} = np.array({array.tolist()!r}, dtype={str(array.dtype)!r})\n"
            for name, array in {**self.constants, "w": self.weights}.items()
        )
        inputs = ", ".join(
            f"{v.name}: {v.dtype}{list(v.dims)} in {_bounds_text(v)}" for v in self.inputs
        )
        return f"\n# inputs: {inputs}\n{constants}\n{self.source()}"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """What hypothesis prints for a falsifying example: the source."""
        printer.text(repr(self))

    def functions(self, xp: Any, lx: Any, promote: bool = False) -> dict[str, Callable[..., Any]]:
        """`f` and `objective` in namespace `xp` (constants promoted with `promote`)."""
        constants = {**self.constants, "w": self.weights}
        if promote:
            constants = {k: promote_array(v) for k, v in constants.items()}
        namespace: dict[str, Any] = {"xp": xp, "lx": lx, "np": np, **constants}
        exec(compile(self.source(), "<fuzzed program>", "exec"), namespace)
        return {"f": namespace["f"], "objective": namespace["objective"]}

    def margin_values(self, inputs: Sequence[np.ndarray]) -> tuple[float, float]:
        """The smallest distance to a jump and to any kink or jump, on `inputs`."""
        if not self.margins:
            return math.inf, math.inf
        args = ", ".join(v.name for v in self.inputs)
        body = "".join(f"    {line}\n" for line in self.lines)
        found = ", ".join(m.expression for m in self.margins)
        source = f"def margins({args}):\n{body}    return [{found}]\n"
        xp = NumpyNamespace(promote=True)
        namespace: dict[str, Any] = {"xp": xp, "lx": NumpyLax(), "np": np, **MARGIN_HELPERS}
        namespace.update({k: promote_array(v) for k, v in self.constants.items()})
        exec(compile(source, "<fuzzed margins>", "exec"), namespace)
        with np.errstate(all="ignore"):
            values = namespace["margins"](*(promote_array(a) for a in inputs))
        smallest = [float(np.min(v)) if np.size(v) else math.inf for v in values]
        jumps = [s for s, m in zip(smallest, self.margins, strict=True) if m.jump]
        return min(jumps, default=math.inf), min(smallest)

    def sample_inputs(self, seed: int) -> list[np.ndarray]:
        """Input arrays drawn uniformly within their bounds."""
        rng = np.random.default_rng(seed)
        return [_uniform(rng, v) for v in self.inputs]


def _bounds_text(value: Value) -> str:
    text = f"[{value.re.lo:g}, {value.re.hi:g}]"
    return text + (f"+i[{value.imag.lo:g}, {value.imag.hi:g}]" if value.is_complex else "")


def _uniform(rng: np.random.Generator, value: Value) -> np.ndarray:
    array = rng.uniform(value.re.lo, value.re.hi, size=value.dims)
    if value.is_complex:
        array = array + 1j * rng.uniform(value.imag.lo, value.imag.hi, size=value.dims)
    return np.asarray(array, dtype=value.dtype)


def promote_array(array: np.ndarray) -> np.ndarray:
    """float32/complex64 arrays as float64/complex128 (finite differences)."""
    array = np.asarray(array)
    return array.astype(PROMOTED.get(array.dtype, array.dtype))


# --------------------------------------------------------------------------
# Namespaces: numpy under the tnp and lax names
# --------------------------------------------------------------------------


class NumpyNamespace:
    """numpy as `xp`; with `promote`, float32/complex64 casts keep double precision."""

    def __init__(self, promote: bool = False):
        self.promote = promote

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    def astype(self, x: Any, dtype: Any) -> np.ndarray:
        target = np.dtype(dtype)
        if self.promote:
            target = PROMOTED.get(target, target)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            return np.asarray(x).astype(target)


class NumpyLax:
    """`td.lax.complex` and `td.lax.pad` in numpy."""

    @staticmethod
    def complex(re: Any, im: Any) -> np.ndarray:
        re, im = np.asarray(re), np.asarray(im)
        return re + np.asarray(1j, dtype=_complex_dtype(str(re.dtype))) * im

    @staticmethod
    def pad(x: Any, value: float, config: Sequence[tuple[int, int, int]]) -> np.ndarray:
        x = np.asarray(x)
        shape = [
            lo + hi + n + max(n - 1, 0) * inner
            for n, (lo, hi, inner) in zip(x.shape, config, strict=True)
        ]
        out = np.full(shape, value, dtype=x.dtype)
        index = tuple(slice(lo, lo + (n - 1) * (inner + 1) + 1 if n else lo, inner + 1)
                      for n, (lo, _, inner) in zip(x.shape, config, strict=True))  # fmt: skip
        out[index] = x
        return out


def _max_gap(x: np.ndarray, axis: Any) -> np.ndarray:
    """Per reduced group, the largest element minus the second largest."""
    x = np.asarray(x)
    axes = tuple(range(x.ndim)) if axis is None else (axis,) if isinstance(axis, int) else axis
    axes = tuple(a % x.ndim for a in axes)
    kept = [a for a in range(x.ndim) if a not in axes]
    flat = np.transpose(x, kept + list(axes)).reshape(-1, math.prod(x.shape[a] for a in axes))
    if flat.shape[1] < 2:
        return np.full(flat.shape[0], np.inf)
    top = np.sort(flat, axis=1)
    return top[:, -1] - top[:, -2]


def _atan2_cut(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Distance to arctan2's jump (y = 0, x < 0) and its singular origin."""
    y, x = np.broadcast_arrays(np.asarray(y), np.asarray(x))
    return np.where(x < 0, np.abs(y), np.hypot(x, y))


def _min_gap(x: np.ndarray, axis: int) -> np.ndarray:
    """Per lane along `axis`, the smallest difference of two elements (sorting
    has a kink where two elements tie)."""
    ordered = np.sort(np.asarray(x), axis=axis)
    gaps = np.diff(ordered, axis=axis)
    return gaps.min(axis=axis) if gaps.shape[axis] else np.full(1, np.inf)


MARGIN_HELPERS: dict[str, Any] = {
    "_max_gap": _max_gap,
    "_min_gap": _min_gap,
    "_atan2_cut": _atan2_cut,
}


# --------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    """What a test wants generated."""

    input_dtypes: tuple[str, ...] = ("float64",) * 6 + ("float32", "complex128")
    smooth: bool = False
    """Arguments of arctan2 kept off its cut (derivative tests)."""
    max_ops: int = 6
    max_inputs: int = 3
    zero_size: bool = False
    """Allow dimensions of size 0 (jit tests only)."""
    complex_ops: bool = True
    """Allow casts to complex and `lax.complex` (else real values only)."""


class Builder:
    """Accumulates a program, drawing every choice from hypothesis."""

    def __init__(self, draw: st.DrawFn, config: Config):
        self.draw = draw
        self.config = config
        self.inputs: list[Value] = []
        self.values: list[Value] = []
        self.constants: dict[str, np.ndarray] = {}
        self.lines: list[str] = []
        self.margins: list[Margin] = []
        self.rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        self.scale = 1.0
        self.dtypes: set[str] = set()

    # ---- choices ---------------------------------------------------------

    def choose(self, options: Sequence[Any]) -> Any:
        return self.draw(st.sampled_from(list(options)))

    def flip(self) -> bool:
        return self.draw(st.booleans())

    def pick(self, accept: Callable[[Value], bool]) -> Value | None:
        """An existing array value `accept` takes, the most recent first."""
        candidates = [v for v in reversed(self.values) if accept(v)]
        return self.choose(candidates) if candidates else None

    def shape(self, max_rank: int = 3) -> tuple[int, ...]:
        dims = [0, 1, 2, 3, 4] if self.config.zero_size else [1, 2, 3, 4]
        rank = self.draw(st.integers(0, max_rank))
        shape = tuple(self.draw(st.sampled_from(dims[1:] + dims[:1])) for _ in range(rank))
        return shape if math.prod(shape) <= MAX_SIZE else shape[:1]

    # ---- new arrays -------------------------------------------------------

    def new_input(self, shape: tuple[int, ...], dtype: str | None = None) -> Value:
        if dtype is None:
            dtype = str(self.choose(self.config.input_dtypes))
        positive = self.flip()
        re = Bounds(0.5, 1.5) if positive else Bounds(-1.0, 1.0)
        im = Bounds(-1.0, 1.0) if np.dtype(dtype).kind == "c" else None
        value = Value(f"x{len(self.inputs)}", shape, dtype, re, im)
        self.dtypes.add(dtype)
        self.inputs.append(value)
        self.values.append(value)
        return value

    def new_constant(self, shape: tuple[int, ...], dtype: str) -> Value:
        name = f"c{len(self.constants)}"
        re = Bounds(-1.0, 1.0)
        array = self.rng.uniform(-1.0, 1.0, size=shape)
        im = None
        if np.dtype(dtype).kind == "c":
            array, im = array + 1j * self.rng.uniform(-1.0, 1.0, size=shape), Bounds(-1.0, 1.0)
        self.constants[name] = np.asarray(array, dtype=dtype)
        self.dtypes.add(dtype)
        return Value(name, shape, dtype, re, im)

    def scalar(self, allow_complex: bool) -> Value:
        options = [0.5, 2.0, -1.5, 3, 0.25, -0.75] + ([0.5j, 1 - 0.5j] if allow_complex else [])
        number = self.choose(options)
        re = Bounds(complex(number).real, complex(number).real)
        if isinstance(number, complex):
            return Value(repr(number), None, "complex128", re, Bounds(number.imag, number.imag))
        return Value(repr(number), None, "float64", re)

    def array_like(self, shape: tuple[int, ...], dtype: str, exact_dtype: bool = False) -> Value:
        """An array of `shape`: an existing value, a new input or a new constant."""
        real = np.dtype(dtype).kind == "f"
        existing = self.pick(
            lambda v: v.shape == shape and v.dtype != "bool" and not (real and v.is_complex)
            and (v.dtype == dtype or not exact_dtype)
        )  # fmt: skip
        options = ["constant"] + (["existing"] if existing else [])
        options += ["input"] if len(self.inputs) < self.config.max_inputs else []
        kind = self.choose(options)
        if kind == "existing" and existing is not None:
            return existing
        if not exact_dtype and kind == "constant":
            dtype = self.choose([dtype, "float64"])
        return self.new_input(shape, dtype) if kind == "input" else self.new_constant(shape, dtype)

    def partner(self, value: Value, real_only: bool = False) -> Value:
        """A second operand broadcasting with `value`: a Python scalar or an array."""
        kind = self.choose(["array", "scalar"])
        if kind == "scalar":
            return self.scalar(allow_complex=not real_only and self.config.complex_ops)
        shape = self.broadcast_partner(value.dims)
        dtype = _real_dtype(value.dtype) if real_only else value.dtype
        return self.array_like(shape, dtype)

    def broadcast_partner(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """A shape broadcasting with `shape` to at most `MAX_SIZE` elements."""
        choice = self.choose(["same", "suffix", "ones", "prepend"])
        if choice == "suffix" and shape:
            return shape[self.draw(st.integers(1, len(shape))) :]
        if choice == "ones" and shape:
            return tuple(1 if self.flip() else n for n in shape)
        if choice == "prepend" and math.prod(shape) * 3 <= MAX_SIZE and len(shape) < 3:
            return (self.choose([2, 3]), *shape)
        return shape

    # ---- emitting -----------------------------------------------------------

    def emit(self, expression: str, shape: tuple[int, ...], dtype: str, re: Bounds,
             im: Bounds | None = None) -> Value:  # fmt: skip
        """Append `v<N> = expression`, scaled by a power of two if it may exceed `LIMIT`."""
        if np.dtype(dtype).kind == "c" and im is None:
            im = ZERO
        magnitude = max(re.magnitude, im.magnitude if im else 0.0)
        if dtype != "bool" and magnitude > LIMIT:
            factor = 2.0 ** -math.ceil(math.log2(magnitude / LIMIT))
            expression = f"({expression}) * {factor!r}"
            re, im = re.scaled(factor), im.scaled(factor) if im else None
        self.scale = max(self.scale, re.magnitude, im.magnitude if im else 0.0)
        self.dtypes.add(dtype)
        value = Value(f"v{len(self.inputs) + len(self.lines)}", shape, dtype, re, im)
        self.lines.append(f"{value.name} = {expression}")
        self.values.append(value)
        return value

    def margin(self, expression: str, jump: bool = False) -> None:
        self.margins.append(Margin(expression, jump))

    def shrunk(self, value: Value, limit: float) -> tuple[str, Value]:
        """`value` scaled by a power of two to magnitude at most `limit`."""
        if value.magnitude <= limit:
            return value.name, value
        factor = 2.0 ** -math.ceil(math.log2(value.magnitude / limit))
        scaled = replace(
            value, re=value.re.scaled(factor), im=value.im.scaled(factor) if value.im else None
        )
        return f"({value.name} * {factor!r})", scaled

    def positive(self, value: Value) -> tuple[str, Value]:
        """`value` if it is at least `POSITIVE` from zero and the negative real
        axis, else `value * value + 0.5` (real) or `value * conj(value) + 0.5`."""
        if value.re.lo >= POSITIVE:
            return value.name, value
        if value.is_complex:
            bound = value.magnitude**2 + 0.5
            expr = f"({value.name} * xp.conj({value.name}) + 0.5)"
            return expr, replace(value, re=Bounds(0.5, bound), im=ZERO)
        expr = f"({value.name} * {value.name} + 0.5)"
        return expr, replace(value, re=Bounds(0.5, value.re.magnitude**2 + 0.5))


# --------------------------------------------------------------------------
# Ops: each returns False when it does not apply to what the program holds
# --------------------------------------------------------------------------

Op = Callable[[Builder], bool]


def _numeric(v: Value) -> bool:
    return v.dtype != "bool" and v.shape is not None


def _real(v: Value) -> bool:
    return _numeric(v) and v.is_real


def _call(name: str, *args: str) -> str:
    return f"xp.{name}({', '.join(args)})"


def op_negative(b: Builder) -> bool:
    v = b.pick(_numeric)
    if v is None:
        return False
    expr = f"-{v.name}" if b.flip() else _call("negative", v.name)
    b.emit(expr, v.dims, v.dtype, -v.re, -v.imag if v.is_complex else None)
    return True


def op_sin_cos(b: Builder) -> bool:
    v = b.pick(_numeric)
    if v is None:
        return False
    name = b.choose(["sin", "cos"])
    if v.is_real:
        b.emit(_call(name, v.name), v.dims, v.dtype, Bounds(-1.0, 1.0))
        return True
    expr, small = b.shrunk(v, 2.0)
    bound = math.cosh(small.imag.magnitude)
    b.emit(_call(name, expr), v.dims, v.dtype, Bounds.symmetric(bound), Bounds.symmetric(bound))
    return True


def op_tanh(b: Builder) -> bool:
    v = b.pick(_numeric)
    if v is None:
        return False
    if v.is_real:
        b.emit(_call("tanh", v.name), v.dims, v.dtype, v.re.mapped(math.tanh))
        return True
    expr, _ = b.shrunk(v, 1.0)  # |Im| <= 1 < pi/2: away from the poles, |tanh| < 2
    b.emit(_call("tanh", expr), v.dims, v.dtype, Bounds.symmetric(2.0), Bounds.symmetric(2.0))
    return True


def op_exp(b: Builder) -> bool:
    v = b.pick(_numeric)
    if v is None:
        return False
    expr, small = b.shrunk(v, 3.0)
    if v.is_real:
        b.emit(_call("exp", expr), v.dims, v.dtype, small.re.mapped(math.exp))
        return True
    bound = math.exp(small.re.hi)
    b.emit(_call("exp", expr), v.dims, v.dtype, Bounds.symmetric(bound), Bounds.symmetric(bound))
    return True


def op_log_sqrt(b: Builder) -> bool:
    v = b.pick(_numeric)
    if v is None:
        return False
    name = b.choose(["log", "sqrt"])
    expr, safe = b.positive(v)
    fn = math.log if name == "log" else math.sqrt
    if v.is_real:
        b.emit(_call(name, expr), v.dims, v.dtype, safe.re.mapped(fn))
        return True
    top = fn(max(safe.magnitude, POSITIVE))
    re = Bounds(min(fn(POSITIVE), 0.0), max(top, 0.0)) if name == "log" else Bounds(0.0, top)
    im = Bounds.symmetric(math.pi / 2) if name == "log" else Bounds.symmetric(top)
    b.emit(_call(name, expr), v.dims, v.dtype, re, im)
    return True


def op_abs(b: Builder) -> bool:
    v = b.pick(_numeric)
    if v is None:
        return False
    expr = f"abs({v.name})" if b.flip() else _call("abs", v.name)
    b.margin(f"np.abs({v.name})")
    b.emit(expr, v.dims, _real_dtype(v.dtype), Bounds(0.0, v.magnitude))
    return True


def op_complex_parts(b: Builder) -> bool:
    """`conj`, `real`, `imag` (of real values too, as numpy allows)."""
    v = b.pick(_numeric)
    if v is None:
        return False
    name = b.choose(["real", "imag", "conj"])
    method = b.flip()
    if name == "conj":
        expr = f"{v.name}.conj()" if method else _call("conj", v.name)
        b.emit(expr, v.dims, v.dtype, v.re, -v.imag if v.is_complex else None)
    else:
        part = v.re if name == "real" else v.imag
        expr = f"{v.name}.{name}" if method else _call(name, v.name)
        b.emit(expr, v.dims, _real_dtype(v.dtype), part)
    return True


def op_power_scalar(b: Builder) -> bool:
    v = b.pick(_numeric)
    if v is None:
        return False
    exponent = b.choose([2, 3, 2.0, 0.5, -1.0, 1.5, -0.5, 0.0])
    if isinstance(exponent, int) or exponent in (2.0, 0.0):
        expr, base = v.name, v
    else:
        expr, base = b.positive(v)
    syntax = f"{expr} ** {exponent!r}" if b.flip() else _call("power", expr, repr(exponent))
    if base.is_complex:
        bound = max(base.magnitude, POSITIVE) ** exponent if exponent >= 0 else POSITIVE**exponent
        b.emit(syntax, v.dims, v.dtype, Bounds.symmetric(bound), Bounds.symmetric(bound))
    elif base.re.lo > 0:
        b.emit(syntax, v.dims, v.dtype, base.re.mapped(lambda x: x**exponent))
    else:
        bound = base.re.magnitude**exponent
        re = Bounds(0.0, bound) if exponent in (2, 2.0) else Bounds.symmetric(bound)
        b.emit(syntax, v.dims, v.dtype, re if exponent != 0 else Bounds(1.0, 1.0))
    return True


def op_astype(b: Builder) -> bool:
    v = b.pick(_numeric)
    if v is None:
        return False
    targets = ["float64", "float32"] + (["complex128", "complex64"] if b.config.complex_ops else [])
    target = b.choose([t for t in targets if t != v.dtype])
    expr = _call("astype", v.name, repr(target))  # not `.astype`: numpy must see `xp.astype`
    if np.dtype(target).kind == "c":
        b.emit(expr, v.dims, target, v.re, v.imag)
    else:  # complex to real keeps the real part
        b.emit(expr, v.dims, target, v.re)
    return True


# ---- binary -----------------------------------------------------------------


def _broadcasts(*shapes: tuple[int, ...]) -> bool:
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        return False
    return True


def _broadcast(a: Value, c: Value) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(a.dims, c.dims))


def _complex_product(a: Value, c: Value) -> tuple[Bounds, Bounds | None]:
    re = a.re * c.re - a.imag * c.imag
    im = a.re * c.imag + a.imag * c.re
    return re, im if (a.is_complex or c.is_complex) else None


def op_arithmetic(b: Builder) -> bool:
    """`+`, `-`, `*` as operators or tnp functions, scalars on either side."""
    v = b.pick(_numeric)
    if v is None:
        return False
    c = b.partner(v)
    name = b.choose(["add", "subtract", "multiply"])
    left, right = (v, c) if b.flip() else (c, v)
    symbol = {"add": "+", "subtract": "-", "multiply": "*"}[name]
    if left.shape is None or b.flip():
        expr = f"{left.name} {symbol} {right.name}"
    else:
        expr = _call(name, left.name, right.name)
    if name == "multiply":
        re, im = _complex_product(left, right)
    elif name == "add":
        re, im = left.re + right.re, left.imag + right.imag
    else:
        re, im = left.re - right.re, left.imag - right.imag
    b.emit(expr, _broadcast(left, right), _dtype_of(left, right), re, im)
    return True


def op_divide(b: Builder) -> bool:
    v = b.pick(_numeric)
    if v is None:
        return False
    c = b.partner(v)
    numerator, denominator = (v, c) if b.flip() else (c, v)
    if denominator.shape is None:
        if denominator.magnitude < POSITIVE:
            return False
        expr_d, safe = denominator.name, denominator
    else:
        expr_d, safe = b.positive(denominator)
    expr = f"{numerator.name} / {expr_d}" if b.flip() else _call("divide", numerator.name, expr_d)
    smallest = safe.re.lo if safe.re.lo > 0 else POSITIVE
    bound = numerator.magnitude / smallest
    dtype = _dtype_of(numerator, safe)
    im = Bounds.symmetric(bound) if np.dtype(dtype).kind == "c" else None
    b.emit(expr, _broadcast(numerator, safe), dtype, Bounds.symmetric(bound), im)
    return True


def op_maximum_minimum(b: Builder) -> bool:
    v = b.pick(_real)
    if v is None:
        return False
    c = b.partner(v, real_only=True)
    name = b.choose(["maximum", "minimum"])
    b.margin(f"np.abs({v.name} - {c.name})")
    re = Bounds(max(v.re.lo, c.re.lo), max(v.re.hi, c.re.hi)) if name == "maximum" else Bounds(
        min(v.re.lo, c.re.lo), min(v.re.hi, c.re.hi))  # fmt: skip
    b.emit(_call(name, v.name, c.name), _broadcast(v, c), _dtype_of(v, c), re)
    return True


def op_arctan2(b: Builder) -> bool:
    y = b.pick(_real)
    if y is None:
        return False
    x = b.partner(y, real_only=True)
    expr_x = x.name
    if b.config.smooth and x.shape is not None:
        expr_x, x = b.positive(x)
    elif x.shape is not None:
        b.margin(f"_atan2_cut({y.name}, {x.name})", jump=True)
    elif x.re.lo <= 0:
        return False
    b.emit(
        _call("arctan2", y.name, expr_x),
        _broadcast(y, x),
        _dtype_of(y, x),
        Bounds.symmetric(math.pi),
    )
    return True


def op_power_array(b: Builder) -> bool:
    """`power(a, b)` of arrays: `exp(b * log(a))`, `a` kept positive."""
    v = b.pick(_real)
    if v is None:
        return False
    exponent = b.partner(v, real_only=True)
    base_expr, base = b.positive(v)
    log_bound = max(abs(math.log(base.re.lo)), abs(math.log(base.re.hi)))
    exp_expr, small = b.shrunk(exponent, max(3.0 / max(log_bound, 1e-9), 1e-3))
    top = math.exp(log_bound * small.re.magnitude)
    b.emit(_call("power", base_expr, exp_expr), _broadcast(base, small), _dtype_of(base, small),
           Bounds(1.0 / top, top))  # fmt: skip
    return True


def op_where(b: Builder) -> bool:
    """`where(a < c, p, q)` (a comparison, or a fixed boolean mask)."""
    a = b.pick(_real)
    if a is None:
        return False
    if b.flip():
        c = b.partner(a, real_only=True)
        name, symbol = b.choose([("less", "<"), ("less_equal", "<="), ("greater", ">"),
                                 ("greater_equal", ">="), ("equal", "=="), ("not_equal", "!=")])  # fmt: skip
        expr = f"{a.name} {symbol} {c.name}" if b.flip() else _call(name, a.name, c.name)
        b.margin(f"np.abs({a.name} - {c.name})", jump=True)
        condition = b.emit(expr, _broadcast(a, c), "bool", Bounds(0.0, 1.0))
    else:
        mask = b.rng.uniform(size=a.dims) < 0.5
        name = f"c{len(b.constants)}"
        b.constants[name] = mask
        condition = Value(name, a.dims, "bool", Bounds(0.0, 1.0))
    _emit_where(b, condition, a)
    return True


def _emit_where(b: Builder, condition: Value, fallback: Value) -> None:
    """`where(condition, p, q)` for values p (else `fallback`) and q that broadcast with it."""
    p = b.pick(lambda v: _numeric(v) and _broadcasts(v.dims, condition.dims)) or fallback
    q = b.partner(p)
    if not _broadcasts(q.dims, condition.dims, p.dims):
        q = b.scalar(allow_complex=b.config.complex_ops)
    shape = tuple(np.broadcast_shapes(condition.dims, p.dims, q.dims))
    dtype = _dtype_of(p, q)
    im = p.imag.union(q.imag) if np.dtype(dtype).kind == "c" else None
    b.emit(_call("where", condition.name, p.name, q.name), shape, dtype, p.re.union(q.re), im)


def op_logical(b: Builder) -> bool:
    """`where(m, p, q)` for `m` a logical combination (`logical_and/or/xor`,
    `& | ^`, maybe negated by `logical_not`, `invert` or `~`) of `a < c` and a
    fixed mask."""
    a = b.pick(_real)
    if a is None:
        return False
    c = b.partner(a, real_only=True)
    b.margin(f"np.abs({a.name} - {c.name})", jump=True)
    shape = _broadcast(a, c)
    less = b.emit(f"{a.name} < {c.name}", shape, "bool", Bounds(0.0, 1.0))
    name = f"c{len(b.constants)}"
    b.constants[name] = b.rng.uniform(size=shape) < 0.5
    function, symbol = b.choose([("logical_and", None), ("logical_or", None),
                                 ("logical_xor", None), ("bitwise_and", "&"),
                                 ("bitwise_or", "|"), ("bitwise_xor", "^")])  # fmt: skip
    combined = (
        f"({less.name} {symbol} {name})"
        if symbol and b.flip()
        else _call(function, less.name, name)
    )
    if b.flip():
        negation = b.choose(["logical_not", "invert", "~"])
        combined = f"~{combined}" if negation == "~" else _call(negation, combined)
    _emit_where(b, b.emit(combined, shape, "bool", Bounds(0.0, 1.0)), a)
    return True


# ---- reductions ---------------------------------------------------------------


def _axis(b: Builder, ndim: int) -> tuple[Any, tuple[int, ...]]:
    """An `axis` argument (None, an int, maybe negative, or a tuple) and the axes."""
    if ndim == 0:
        return None, ()
    kind = b.choose(["none", "int", "tuple"])
    if kind == "none":
        return None, tuple(range(ndim))
    if kind == "int":
        axis = b.draw(st.integers(-ndim, ndim - 1))
        return axis, (axis % ndim,)
    chosen = tuple(
        sorted(set(b.draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim))))
    )
    return chosen, chosen


def _reduced_shape(
    shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool
) -> tuple[int, ...]:
    return tuple(1 if i in axes else n for i, n in enumerate(shape) if keepdims or i not in axes)


def op_sum_mean(b: Builder) -> bool:
    v = b.pick(_numeric)
    if v is None:
        return False
    name = b.choose(["sum", "mean"])
    axis, axes = _axis(b, len(v.dims))
    keepdims = b.flip()
    count = math.prod(v.dims[a] for a in axes)
    if name == "mean" and count == 0:
        return False
    factor = float(count) if name == "sum" else 1.0
    args = [v.name] + ([f"axis={axis!r}"] if axis is not None or b.flip() else [])
    args += ["keepdims=True"] if keepdims else []
    shape = _reduced_shape(v.dims, axes, keepdims)
    im = v.imag.scaled(factor) if v.is_complex else None
    expr = f"{v.name}.{name}({', '.join(args[1:])})" if b.flip() else _call(name, *args)
    b.emit(expr, shape, v.dtype, v.re.scaled(factor).union(ZERO), im)
    return True


def op_max(b: Builder) -> bool:
    v = b.pick(lambda v: _real(v) and v.size > 0)
    if v is None:
        return False
    axis, axes = _axis(b, len(v.dims))
    keepdims = b.flip()
    b.margin(f"_max_gap({v.name}, {axis!r})")
    args = [v.name] + ([f"axis={axis!r}"] if axis is not None else [])
    args += ["keepdims=True"] if keepdims else []
    expr = f"{v.name}.max({', '.join(args[1:])})" if b.flip() else _call("max", *args)
    b.emit(expr, _reduced_shape(v.dims, axes, keepdims), v.dtype, v.re)
    return True


# ---- shapes ---------------------------------------------------------------------


def _factorizations(size: int, rank: int) -> list[tuple[int, ...]]:
    if rank == 0:
        return [()] if size == 1 else []
    if rank == 1:
        return [(size,)]
    found = []
    for first in range(1, size + 1):
        if size % first == 0:
            found += [(first, *rest) for rest in _factorizations(size // first, rank - 1)]
    return found


def op_reshape(b: Builder) -> bool:
    v = b.pick(lambda v: _numeric(v) and v.size > 0)
    if v is None:
        return False
    shapes = [s for rank in range(4) for s in _factorizations(v.size, rank) if s != v.dims]
    if not shapes:
        return False
    shape = b.choose(shapes)
    written = repr(shape)
    like = b.pick(lambda other: other.shape == shape)
    if like is not None and b.flip():
        written = _call("shape", like.name)
    elif shape and b.flip():
        at = b.draw(st.integers(0, len(shape) - 1))
        written = repr(shape[:at] + (-1,) + shape[at + 1 :])
    expr = f"{v.name}.reshape({written})" if b.flip() else _call("reshape", v.name, written)
    b.emit(expr, shape, v.dtype, v.re, v.im)
    return True


def op_transpose(b: Builder) -> bool:
    v = b.pick(lambda v: _numeric(v) and len(v.dims) >= 2)
    if v is None:
        return False
    ndim = len(v.dims)
    axes = tuple(b.draw(st.permutations(range(ndim))))
    if b.flip():
        axes = tuple(reversed(range(ndim)))
        expr = f"{v.name}.T" if b.flip() else _call("transpose", v.name)
    else:
        written = tuple(a - ndim if b.flip() else a for a in axes)
        expr = _call("transpose", v.name, repr(written))
    b.emit(expr, tuple(v.dims[a] for a in axes), v.dtype, v.re, v.im)
    return True


def op_broadcast_to(b: Builder) -> bool:
    v = b.pick(_numeric)
    if v is None:
        return False
    shape = tuple(b.choose([n, 2, 3]) if n == 1 else n for n in v.dims)
    if len(shape) < 3 and b.flip():
        shape = (b.choose([1, 2, 3]), *shape)
    if math.prod(shape) > MAX_SIZE or shape == v.dims:
        return False
    b.emit(_call("broadcast_to", v.name, repr(shape)), shape, v.dtype, v.re, v.im)
    return True


def op_concatenate(b: Builder) -> bool:
    v = b.pick(lambda v: _numeric(v) and len(v.dims) >= 1)
    if v is None:
        return False
    axis = b.draw(st.integers(0, len(v.dims) - 1))
    shape = v.dims[:axis] + (b.choose([1, 2, v.dims[axis]]),) + v.dims[axis + 1 :]
    if (v.size + math.prod(shape)) > MAX_SIZE:
        return False
    other = v if b.flip() and shape == v.dims else b.array_like(shape, v.dtype)
    written = axis - len(v.dims) if b.flip() else axis
    out = v.dims[:axis] + (v.dims[axis] + shape[axis],) + v.dims[axis + 1 :]
    dtype = _dtype_of(v, other)
    im = v.imag.union(other.imag) if np.dtype(dtype).kind == "c" else None
    expr = _call("concatenate", f"[{v.name}, {other.name}]", f"axis={written}")
    b.emit(expr, out, dtype, v.re.union(other.re), im)
    return True


def _index_item(b: Builder, size: int) -> str:
    """An index of one axis of `size`: an integer, a slice (positive step) or `:`."""
    kind = b.choose(["slice", "int", "full"] if size else ["full"])
    if kind == "int":
        position = b.draw(st.integers(-size, size - 1))
        return str(position)
    if kind == "slice":
        start = b.draw(st.integers(-size, size))
        stop = b.draw(st.integers(-size, size))
        step = b.choose([1, 1, 2, 3])
        return f"{start}:{stop}" + (f":{step}" if step != 1 else "")
    return ":"


def op_getitem(b: Builder) -> bool:
    v = b.pick(lambda v: _numeric(v) and len(v.dims) >= 1)
    if v is None:
        return False
    items = [_index_item(b, n) for n in v.dims]
    if b.flip() and len(items) > 1:
        items = items[: b.draw(st.integers(1, len(items) - 1))] + ["..."]
    for _ in range(b.draw(st.integers(0, 1))):  # a new axis of length 1
        items.insert(b.draw(st.integers(0, len(items))), "None")
    index = ", ".join(items)
    shape = np.zeros(v.dims)[eval(f"np.s_[{index}]", {"np": np})].shape
    b.emit(f"{v.name}[{index}]", tuple(shape), v.dtype, v.re, v.im)
    return True


def op_pad(b: Builder) -> bool:
    v = b.pick(lambda v: _numeric(v) and len(v.dims) >= 1)
    if v is None:
        return False
    config = [(b.choose([0, 1, 2]), b.choose([0, 1]), b.choose([0, 0, 1])) for _ in v.dims]
    shape = tuple(
        lo + hi + n + max(n - 1, 0) * inner
        for n, (lo, hi, inner) in zip(v.dims, config, strict=True)
    )
    if math.prod(shape) > MAX_SIZE:
        return False
    value = b.choose([0.0, 1.5])
    b.emit(f"lx.pad({v.name}, {value!r}, {config!r})", shape, v.dtype,
           v.re.union(Bounds(value, value)), v.im.union(ZERO) if v.im else None)  # fmt: skip
    return True


def op_complex(b: Builder) -> bool:
    """`lax.complex(re, im)` of two real arrays of one shape and dtype."""
    if not b.config.complex_ops:
        return False
    v = b.pick(_real)
    if v is None:
        return False
    other = b.array_like(v.dims, v.dtype, exact_dtype=True)
    b.emit(f"lx.complex({v.name}, {other.name})", v.dims, _complex_dtype(v.dtype), v.re, other.re)
    return True


# ---- products ---------------------------------------------------------------------


def _product_bounds(a: Value, c: Value, terms: int, dtype: str) -> tuple[Bounds, Bounds | None]:
    bound = max(terms, 1) * a.magnitude * c.magnitude
    return Bounds.symmetric(bound), Bounds.symmetric(bound) if np.dtype(dtype).kind == "c" else None


def op_matmul(b: Builder) -> bool:
    """`@`, `matmul` or `dot` with a vector, a matrix or a batch of matrices."""
    v = b.pick(lambda v: _numeric(v) and len(v.dims) >= 1)
    if v is None:
        return False
    k = v.dims[-1]
    options: list[tuple[int, ...]] = [(k,), (k, b.choose([1, 2, 3]))]
    if len(v.dims) <= 2:
        options.append((b.choose([1, 2]), k, b.choose([1, 2])))
    shape = b.choose(options)
    name = b.choose(["@", "matmul", "dot"] if len(shape) <= 2 else ["@", "matmul"])
    product = np.dot if name == "dot" else np.matmul
    out = product(np.zeros(v.dims), np.zeros(shape)).shape
    if math.prod(out) > MAX_SIZE:
        return False
    other = b.array_like(shape, v.dtype)
    expr = f"{v.name} @ {other.name}" if name == "@" else _call(name, v.name, other.name)
    dtype = _dtype_of(v, other)
    b.emit(expr, tuple(out), dtype, *_product_bounds(v, other, k, dtype))
    return True


EINSUMS = {
    1: ["i,i->", "i,j->ij", "i->", "i,i"],
    2: ["ij,jk->ik", "ij,j->i", "ij->ji", "ij->", "ij,ij->i", "ij,jk", "ij,ik->jk"],
    3: ["bij,bjk->bik", "bij->bj", "bij,j->bi"],
}


def op_einsum(b: Builder) -> bool:
    v = b.pick(lambda v: _numeric(v) and len(v.dims) in EINSUMS)
    if v is None:
        return False
    spec = b.choose(EINSUMS[len(v.dims)])
    inputs = spec.partition("->")[0].split(",")
    sizes = dict(zip(inputs[0], v.dims, strict=True))
    operands = [v]
    for letters in inputs[1:]:
        shape = tuple(sizes.setdefault(c, b.choose([1, 2, 3])) for c in letters)
        operands.append(b.array_like(shape, v.dtype))
    arrays = [np.zeros(o.dims) for o in operands]
    out = np.einsum(spec, *arrays).shape
    if math.prod(out) > MAX_SIZE:
        return False
    dtype = _dtype_of(*operands)
    terms = math.prod(sizes.values()) // max(math.prod(out), 1)
    bounds = _product_bounds(v, operands[-1], terms, dtype) if len(operands) > 1 else (
        Bounds.symmetric(terms * v.magnitude),
        Bounds.symmetric(terms * v.magnitude) if v.is_complex else None)  # fmt: skip
    names = ", ".join(o.name for o in operands)
    b.emit(_call("einsum", repr(spec), names), tuple(out), dtype, *bounds)
    return True


# ---- composites: more math, shapes and products (tnp functions built on the above) ----


def op_unary_math(b: Builder) -> bool:
    """Elementwise composites, each kept in its domain (and off its poles)."""
    v = b.pick(_real)
    if v is None:
        return False
    name = b.choose(["square", "reciprocal", "sinh", "cosh", "arctan", "arcsinh", "log2",
                     "log10", "exp2", "arcsin", "arccos", "arctanh", "log1p", "expm1"])  # fmt: skip
    if name in ("reciprocal", "log2", "log10"):
        expr, safe = b.positive(v)
        fn = {"reciprocal": lambda t: 1.0 / t, "log2": math.log2, "log10": math.log10}[name]
        b.emit(_call(name, expr), v.dims, v.dtype, safe.re.mapped(fn))
        return True
    limit = {"sinh": 3.0, "cosh": 3.0, "exp2": 3.0, "expm1": 3.0, "arcsin": 0.5,
             "arccos": 0.5}.get(name, 0.5)  # fmt: skip
    expr, small = b.shrunk(v, LIMIT if name in ("square", "arctan", "arcsinh") else limit)
    fn = {"square": lambda t: t * t, "sinh": math.sinh, "cosh": math.cosh, "arctan": math.atan,
          "arcsinh": math.asinh, "exp2": lambda t: 2.0**t, "arcsin": math.asin,
          "arccos": math.acos, "arctanh": math.atanh, "log1p": math.log1p,
          "expm1": math.expm1}[name]  # fmt: skip
    if name in ("square", "cosh"):  # not monotonic: 0 (or 1) to the larger end
        top = max(fn(small.re.lo), fn(small.re.hi))
        re = Bounds(0.0 if name == "square" else 1.0, top)
    else:
        re = small.re.mapped(fn)
    b.emit(_call(name, expr), v.dims, v.dtype, re)
    return True


def op_sign_clip(b: Builder) -> bool:
    """`sign` (a jump at 0) or `clip` (kinks at the bounds)."""
    v = b.pick(_real)
    if v is None:
        return False
    if b.flip():
        b.margin(f"np.abs({v.name})", jump=True)
        b.emit(_call("sign", v.name), v.dims, v.dtype, Bounds(-1.0, 1.0))
        return True
    low, high = b.choose([(-0.5, 0.5), (None, 0.25), (-0.25, None)])
    for bound in (low, high):
        if bound is not None:
            b.margin(f"np.abs({v.name} - {bound!r})")
    re = Bounds(v.re.lo if low is None else max(v.re.lo, low),
                v.re.hi if high is None else min(v.re.hi, high))  # fmt: skip
    re = Bounds(min(re.lo, re.hi), max(re.lo, re.hi))
    b.emit(_call("clip", v.name, repr(low), repr(high)), v.dims, v.dtype, re)
    return True


def op_rounding(b: Builder) -> bool:
    """`floor`, `ceil`, `trunc` (jumps at integers), `rint` or `round` (jumps
    at half-integers) of `2.5 * v`."""
    v = b.pick(_real)
    if v is None:
        return False
    name = b.choose(["floor", "ceil", "trunc", "rint", "round"])
    scaled = f"(2.5 * {v.name})"
    if name in ("floor", "ceil", "trunc"):
        b.margin(f"np.abs({scaled} - np.rint({scaled})) / 2.5", jump=True)
    else:
        b.margin(f"np.abs(np.abs({scaled} - np.floor({scaled})) - 0.5) / 2.5", jump=True)
    re = Bounds(math.floor(2.5 * v.re.lo) - 1.0, math.ceil(2.5 * v.re.hi) + 1.0)
    b.emit(_call(name, scaled), v.dims, v.dtype, re)
    return True


def op_sort_take(b: Builder) -> bool:
    """`sort` (or `take_along_axis` by `argsort`) along an axis: kinks where two
    elements tie; the element at `argmax`/`argmin` (a kink at ties, as `max`);
    `take` of static indices along an axis (smooth)."""
    v = b.pick(lambda v: _real(v) and v.size > 0 and len(v.dims) > 0)
    if v is None:
        return False
    ndim = len(v.dims)
    axis = b.draw(st.integers(-ndim, ndim - 1))
    name = b.choose(["sort", "take_along_axis", "argmax", "argmin", "take"])
    if name in ("sort", "take_along_axis"):
        b.margin(f"_min_gap({v.name}, {axis})")
        expr = (_call("sort", v.name, f"axis={axis}") if name == "sort" else _call(
            "take_along_axis", v.name, _call("argsort", v.name, f"axis={axis}"), f"axis={axis}"
        ))  # fmt: skip
        b.emit(expr, v.dims, v.dtype, v.re)
    elif name in ("argmax", "argmin"):
        sign = "" if name == "argmax" else "-"
        b.margin(f"_max_gap({sign}{v.name}, None)")
        b.emit(_call("take", _call("ravel", v.name), _call(name, v.name)), (), v.dtype, v.re)
    else:
        size = v.dims[axis]
        count = b.draw(st.integers(0, 4))
        picks = b.draw(st.lists(st.integers(-size, size - 1), min_size=count, max_size=count))
        position = axis % ndim
        shape = (*v.dims[:position], count, *v.dims[position + 1 :])
        indices = f"np.array({picks!r}, dtype=np.int64)"
        b.emit(_call("take", v.name, indices, f"axis={axis}"), shape, v.dtype, v.re)
    return True


def op_cumulative(b: Builder) -> bool:
    """`cumsum` or `cumprod` along an axis or of the flattened array, or `prod`
    over all of it."""
    v = b.pick(lambda v: _real(v) and len(v.dims) > 0)
    if v is None:
        return False
    name = b.choose(["cumsum", "cumprod", "prod"])
    if name == "prod":
        if v.size > 6:
            return False
        bound = max(v.re.magnitude, 1.0) ** v.size
        b.emit(_call("prod", v.name), (), v.dtype, Bounds.symmetric(bound))
        return True
    ndim = len(v.dims)
    axis = b.choose([None, b.draw(st.integers(-ndim, ndim - 1))])
    count = v.size if axis is None else v.dims[axis]
    if name == "cumprod" and count > 6:
        return False
    magnitude = v.re.magnitude
    bound = count * magnitude if name == "cumsum" else max(magnitude, 1.0) ** count
    shape = (v.size,) if axis is None else v.dims
    args = [v.name] + ([] if axis is None else [f"axis={axis}"])
    b.emit(_call(name, *args), shape, v.dtype, Bounds.symmetric(bound))
    return True


def op_min(b: Builder) -> bool:
    """`min`, `amin` (kinks at ties, as `max`) and `amax`."""
    v = b.pick(lambda v: _real(v) and v.size > 0)
    if v is None:
        return False
    name = b.choose(["min", "amin", "amax"])
    axis, axes = _axis(b, len(v.dims))
    keepdims = b.flip()
    sign = "" if name == "amax" else "-"
    b.margin(f"_max_gap({sign}{v.name}, {axis!r})")
    args = [v.name] + ([f"axis={axis!r}"] if axis is not None else [])
    args += ["keepdims=True"] if keepdims else []
    b.emit(_call(name, *args), _reduced_shape(v.dims, axes, keepdims), v.dtype, v.re)
    return True


def op_var_std(b: Builder) -> bool:
    """`var` or `std` (kept away from a zero deviation) over `axis`, with `ddof`."""
    v = b.pick(_numeric)
    if v is None:
        return False
    name = b.choose(["var", "std"])
    axis, axes = _axis(b, len(v.dims))
    count = math.prod(v.dims[a] for a in axes)
    ddof = b.choose([0, 1])
    if count - ddof < 1 or (name == "std" and count < 2):
        return False
    keepdims = b.flip()
    if name == "std":
        b.margin(f"np.std({v.name}, axis={axis!r})")
    args = [v.name] + ([f"axis={axis!r}"] if axis is not None else [])
    args += [f"ddof={ddof}"] if ddof else []
    args += ["keepdims=True"] if keepdims else []
    spread = v.magnitude**2 * count / (count - ddof)
    re = Bounds(0.0, spread if name == "var" else math.sqrt(spread))
    b.emit(_call(name, *args), _reduced_shape(v.dims, axes, keepdims), _real_dtype(v.dtype), re)
    return True


def op_hypot_logaddexp(b: Builder) -> bool:
    v = b.pick(_real)
    if v is None:
        return False
    c = b.partner(v, real_only=True)
    name = b.choose(["hypot", "logaddexp"])
    if name == "hypot":
        b.margin(f"np.hypot({v.name}, {c.name})")
        re = Bounds(0.0, math.hypot(v.magnitude, c.magnitude))
    else:
        re = Bounds(max(v.re.lo, c.re.lo), max(v.re.hi, c.re.hi) + math.log(2.0))
    b.emit(_call(name, v.name, c.name), _broadcast(v, c), _dtype_of(v, c), re)
    return True


def op_float_tests(b: Builder) -> bool:
    """`where(isfinite(a), p, q)` (all finite: p), or `isnan`/`isinf` (q); the
    test reduced by `all` (isfinite) or `any` (isnan/isinf) half the time."""
    a = b.pick(_numeric)
    if a is None:
        return False
    name = b.choose(["isfinite", "isnan", "isinf"])
    test, dims = _call(name, a.name), a.dims
    if b.flip():
        test, dims = _call("all" if name == "isfinite" else "any", test), ()
    condition = b.emit(test, dims, "bool", Bounds(0.0, 1.0))
    other = b.partner(a)
    if not _broadcasts(other.dims, a.dims):
        return True
    kept = a if name == "isfinite" else other
    shape = tuple(np.broadcast_shapes(a.dims, other.dims))
    dtype = _dtype_of(a, other)
    im = kept.imag if np.dtype(dtype).kind == "c" else None
    b.emit(_call("where", condition.name, a.name, other.name), shape, dtype, kept.re, im)
    return True


def op_products(b: Builder) -> bool:
    """`outer`, `inner`, `vdot`, `tensordot`, `kron` and `cross`."""
    v = b.pick(lambda v: _numeric(v) and len(v.dims) >= 1)
    if v is None:
        return False
    name = b.choose(["outer", "inner", "vdot", "tensordot", "kron", "cross"])
    k = v.dims[-1]
    args = ""
    if name == "outer":
        shape: tuple[int, ...] = (b.choose([1, 2, 3]),)
    elif name == "inner":
        shape = (b.choose([1, 2]), k) if b.flip() else (k,)
    elif name == "vdot":
        shape = (v.size,)
    elif name == "tensordot":
        shape, args = (k, b.choose([1, 2])), ", 1"
    elif name == "kron":
        shape = tuple(b.choose([1, 2]) for _ in v.dims)
    elif k == 3:
        shape = v.dims
    else:
        return False
    reference = {"outer": np.outer, "inner": np.inner, "vdot": np.vdot, "kron": np.kron,
                 "cross": np.cross, "tensordot": lambda p, q: np.tensordot(p, q, 1)}[name]  # fmt: skip
    out = np.shape(reference(np.zeros(v.dims), np.zeros(shape)))
    if math.prod(out) > MAX_SIZE:
        return False
    other = b.array_like(shape, v.dtype)
    terms = {"inner": k, "vdot": v.size, "tensordot": k, "cross": 2}.get(name, 1)
    dtype = _dtype_of(v, other)
    expr = f"xp.{name}({v.name}, {other.name}{args})"
    b.emit(expr, tuple(out), dtype, *_product_bounds(v, other, terms, dtype))
    return True


def _squeeze_or_expand(b: Builder, v: Value) -> tuple[str, tuple[int, ...]] | None:
    ones = [i for i, n in enumerate(v.dims) if n == 1]
    if ones and b.flip():
        axis = b.choose(ones + [None])
        shape = tuple(n for i, n in enumerate(v.dims) if n != 1 or (axis is not None and i != axis))
        return _call("squeeze", v.name, f"axis={axis!r}"), shape
    if len(v.dims) >= 3:
        return None
    axis = b.draw(st.integers(-len(v.dims) - 1, len(v.dims)))
    shape = list(v.dims)
    shape.insert(axis % (len(v.dims) + 1), 1)
    return _call("expand_dims", v.name, repr(axis)), tuple(shape)


def op_rearrange(b: Builder) -> bool:
    """Shape functions that keep the elements: `squeeze`, `expand_dims`,
    `ravel`, `moveaxis`, `swapaxes`, `flip`, `roll`, `asarray`."""
    v = b.pick(_numeric)
    if v is None:
        return False
    ndim = len(v.dims)
    name = b.choose(["squeeze", "ravel", "moveaxis", "swapaxes", "flip", "roll", "asarray"])
    axis = b.draw(st.integers(-ndim, ndim - 1)) if ndim else None
    if name == "squeeze":
        found = _squeeze_or_expand(b, v)
        if found is None:
            return False
        expr, shape = found
    elif name == "ravel":
        expr, shape = _call("ravel", v.name), (v.size,)
    elif name in ("moveaxis", "swapaxes") and axis is not None and ndim >= 2:
        other, moved = b.draw(st.integers(0, ndim - 1)), axis % ndim
        order = list(range(ndim))
        if name == "swapaxes":
            order[moved], order[other] = other, moved
        else:
            order.remove(moved)
            order.insert(other, moved)
        expr, shape = _call(name, v.name, str(axis), str(other)), tuple(v.dims[i] for i in order)
    elif name == "flip":
        args = [v.name] + ([f"axis={axis!r}"] if b.flip() else [])
        expr, shape = _call("flip", *args), v.dims
    elif name == "roll":
        shift = b.choose([1, -2, 3])
        expr, shape = _call("roll", v.name, str(shift), f"axis={axis!r}"), v.dims
    elif name == "asarray":
        expr, shape = _call("asarray", v.name), v.dims
    else:
        return False
    b.emit(expr, shape, v.dtype, v.re, v.im)
    return True


def op_replicate(b: Builder) -> bool:
    """`tile`, `repeat`, `split` (a piece) and joining: `stack`, `hstack`,
    `vstack`, `array` of two arrays of one shape."""
    v = b.pick(_numeric)
    if v is None:
        return False
    ndim = len(v.dims)
    name = b.choose(["tile", "repeat", "split", "stack", "hstack", "vstack", "array"])
    if name == "tile":
        reps = tuple(b.choose([1, 2]) for _ in range(b.draw(st.integers(1, 3))))
        shape = np.tile(np.zeros(v.dims), reps).shape
        expr = _call("tile", v.name, repr(reps))
    elif name == "repeat":
        axis = b.draw(st.integers(-ndim, ndim - 1)) if ndim and b.flip() else None
        shape = np.repeat(np.zeros(v.dims), 2, axis=axis).shape
        expr = _call("repeat", v.name, "2", f"axis={axis!r}")
    elif name == "split" and ndim:
        axis = b.draw(st.integers(0, ndim - 1))
        sections = b.choose([n for n in (1, 2, 3) if v.dims[axis] % n == 0])
        shape = v.dims[:axis] + (v.dims[axis] // sections,) + v.dims[axis + 1 :]
        expr = f"{_call('split', v.name, str(sections), f'axis={axis}')}[{sections - 1}]"
    elif name in ("stack", "hstack", "vstack", "array"):
        other = v if b.flip() else b.array_like(v.dims, v.dtype, exact_dtype=True)
        arrays = [np.zeros(v.dims), np.zeros(v.dims)]
        reference = {"stack": np.stack, "hstack": np.hstack, "vstack": np.vstack,
                     "array": np.array}[name]  # fmt: skip
        shape = np.shape(reference(arrays))
        expr = _call(name, f"[{v.name}, {other.name}]")
        if math.prod(shape) > MAX_SIZE:
            return False
        im = v.imag.union(other.imag) if v.is_complex else None
        b.emit(expr, tuple(shape), v.dtype, v.re.union(other.re), im)
        return True
    else:
        return False
    if math.prod(shape) > MAX_SIZE:
        return False
    b.emit(expr, tuple(shape), v.dtype, v.re, v.im)
    return True


def op_diagonals(b: Builder) -> bool:
    """`diag`, `diagonal`, `trace`, `triu`, `tril` (zeros enter the bounds)."""
    v = b.pick(lambda v: _numeric(v) and len(v.dims) in (1, 2, 3))
    if v is None:
        return False
    ndim = len(v.dims)
    k = b.choose([0, 1, -1])
    name = b.choose(["diag"] if ndim == 1 else ["diagonal", "trace", "triu", "tril"]
                    + (["diag"] if ndim == 2 else []))  # fmt: skip
    reference = {"diag": np.diag, "diagonal": np.diagonal, "trace": np.trace,
                 "triu": np.triu, "tril": np.tril}[name]  # fmt: skip
    shape = np.shape(reference(np.zeros(v.dims), k))
    if math.prod(shape) > MAX_SIZE:
        return False
    factor = float(max(min(v.dims[:2]), 1)) if name == "trace" else 1.0
    im = v.imag.scaled(factor).union(ZERO) if v.is_complex else None
    b.emit(_call(name, v.name, str(k)), tuple(shape), v.dtype, v.re.scaled(factor).union(ZERO), im)
    return True


def op_like(b: Builder) -> bool:
    """`v * ones_like(v)`, `v + zeros_like(v)`, `full_like`, and a reshape to
    the shape of `empty_like` (its values are undefined)."""
    v = b.pick(_numeric)
    if v is None:
        return False
    name = b.choose(["ones_like", "zeros_like", "full_like", "empty_like"])
    if name == "ones_like":
        b.emit(f"{v.name} * {_call(name, v.name)}", v.dims, v.dtype, v.re, v.im)
    elif name == "zeros_like":
        b.emit(f"{v.name} + {_call(name, v.name)}", v.dims, v.dtype, v.re, v.im)
    elif name == "full_like":
        expr = f"{v.name} - {_call(name, v.name, '0.5')}"
        b.emit(expr, v.dims, v.dtype, v.re - Bounds(0.5, 0.5), v.im)
    else:
        like = _call("shape", _call("empty_like", v.name))
        b.emit(_call("reshape", v.name, like), v.dims, v.dtype, v.re, v.im)
    return True


OPS: list[Op] = [
    op_arithmetic, op_sin_cos, op_tanh, op_exp, op_log_sqrt, op_sum_mean, op_matmul,
    op_negative, op_divide, op_power_scalar, op_reshape, op_transpose, op_getitem,
    op_broadcast_to, op_concatenate, op_einsum, op_where, op_maximum_minimum, op_max,
    op_abs, op_arctan2, op_power_array, op_complex_parts, op_astype, op_complex, op_pad,
    op_unary_math, op_sign_clip, op_min, op_var_std, op_hypot_logaddexp, op_float_tests,
    op_logical,
    op_products, op_rearrange, op_replicate, op_diagonals, op_like, op_rounding,
    op_sort_take, op_cumulative,
]  # fmt: skip
"""Simplest first: hypothesis shrinks towards the start of the list."""


@st.composite
def programs(draw: st.DrawFn, config: Config = Config()) -> Program:
    """A random program of 1 to `config.max_ops` ops over 1 to 3 inputs."""
    b = Builder(draw, config)
    b.new_input(b.shape())
    count = draw(st.integers(1, config.max_ops))
    attempts = 0
    while len(b.lines) < count and attempts < 4 * count:
        attempts += 1
        draw(st.sampled_from(OPS))(b)
    output = next(v for v in reversed(b.values) if v.dtype != "bool")
    weights = b.rng.uniform(0.5, 1.5, size=output.dims).astype(_real_dtype(output.dtype))
    return Program(b.inputs, b.constants, b.lines, output, b.margins, b.scale, weights,
                   frozenset(b.dtypes))  # fmt: skip
