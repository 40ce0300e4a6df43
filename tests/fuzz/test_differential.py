"""Differential fuzzing: random programs over the `tnp` functions
(`tests/fuzz/programs.py`) run through `td.jit`, `td.jvp`, `td.vjp`,
`td.grad` and `td.hessian` and compared with numpy on the same code, with
central finite differences of it, and with JAX when it is installed.

CI runs a few dozen derandomized examples per test; `--fuzz-budget N` runs N
per test and `--fuzz-seed S` other ones (docs/fuzzing.md). A failure prints the
program as Python source (`f` and `objective` over `xp` = tnp/numpy/jax.numpy).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import tidu_mlir as td
import tidu_mlir.numpy as tnp

from . import programs as programs_module
from .numerics import assert_close, fd_jacobian, from_real, random_direction, to_real
from .programs import Config, NumpyLax, NumpyNamespace, Program, programs, promote_array

FuzzSettings = Callable[[int], Callable[[Callable[..., None]], Callable[..., None]]]

VALUES = Config(input_dtypes=("float64",) * 5 + ("float32", "complex128", "complex64"),
                max_ops=8, zero_size=True)  # fmt: skip
DERIVATIVES = Config(input_dtypes=("float64",) * 6 + ("float32", "complex128"), smooth=True)
HESSIAN = Config(input_dtypes=("float64",), smooth=True, max_ops=5, max_inputs=2)

STEP = 1e-6
"""The finite-difference step (inputs are at most ~2 in magnitude)."""
KINK_MARGIN = 1e-3
"""Derivative tests skip inputs closer than this to a kink or jump."""


def tolerance(program: Program) -> float:
    """The relative tolerance for values computed two ways (numpy and LLVM)."""
    return 2e-4 if program.low_precision else 1e-9


def derivative_tolerance(program: Program) -> float:
    """The relative tolerance for derivatives against finite differences."""
    return 3e-3 if program.low_precision else 1e-6


def quietly(fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)` with numpy's warnings (overflow to inf, ComplexWarning) silenced."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def numpy_functions(program: Program, promote: bool = False) -> dict[str, Callable[..., Any]]:
    return program.functions(NumpyNamespace(promote), NumpyLax(), promote=promote)


def tidu_functions(program: Program) -> dict[str, Callable[..., Any]]:
    return program.functions(tnp, td.lax)


NOT_GENERATED = frozenset(
    {"zeros", "ones", "full", "empty", "eye", "identity", "arange", "linspace"}
)
"""Constructors taking no array: nothing of a program flows through them (they
are tested in tests/test_numpy_surface.py)."""


def test_generator_covers_every_tnp_function() -> None:
    """Each name of `tnp.__all__` but the constructors of `NOT_GENERATED` is one
    the generator writes (`xp.NAME` or an operator calling it)."""
    source = Path(programs_module.__file__).read_text()
    missing = [
        name for name in tnp.__all__ if f'"{name}"' not in source and name not in NOT_GENERATED
    ]
    assert not missing, f"tnp functions the generator never calls: {missing}"


# --------------------------------------------------------------------------
# jit against numpy
# --------------------------------------------------------------------------


def test_jit_matches_numpy(fuzz_settings: FuzzSettings) -> None:
    """`td.jit(f)` and tnp on concrete arrays compute what numpy computes:
    same shape, same dtype (promotion), values within rounding."""

    @fuzz_settings(100)
    @given(programs(VALUES), st.integers(0, 2**32 - 1))
    def check(program: Program, seed: int) -> None:
        inputs = program.sample_inputs(seed)
        jump, _ = program.margin_values(inputs)
        assume(jump > (1e-3 if program.low_precision else 1e-6) * program.scale)
        expected = np.asarray(quietly(numpy_functions(program)["f"], *inputs))
        f = tidu_functions(program)["f"]
        actual = quietly(td.jit(f), *inputs)
        assert actual.dtype == expected.dtype, f"dtype {actual.dtype}, numpy {expected.dtype}"
        rtol = tolerance(program)
        assert_close(actual, expected, rtol, rtol * program.scale, "td.jit(f) vs numpy")
        eager = np.asarray(quietly(f, *inputs))  # tnp on arrays: the primitives' references
        assert_close(eager, expected, rtol, rtol * program.scale, "tnp on arrays vs numpy")

    check()


# --------------------------------------------------------------------------
# Derivatives against finite differences
# --------------------------------------------------------------------------


def _smooth_inputs(program: Program, seed: int) -> list[np.ndarray]:
    """Inputs at least `KINK_MARGIN` from every kink and jump (else skipped)."""
    inputs = program.sample_inputs(seed)
    _, kink = program.margin_values(inputs)
    assume(kink > KINK_MARGIN)
    return inputs


def _jacobian(program: Program, inputs: Sequence[np.ndarray]) -> np.ndarray:
    f = numpy_functions(program, promote=True)["f"]
    return fd_jacobian(f, [promote_array(x) for x in inputs], STEP)


def _derivative_atol(program: Program, jacobian: np.ndarray, direction: np.ndarray) -> float:
    """Finite-difference noise in `J @ direction` (or `J.T @ direction`)."""
    size = float(np.abs(jacobian).max()) if jacobian.size else 0.0
    return derivative_tolerance(program) * (1.0 + size) * max(float(np.abs(direction).sum()), 1.0)


def test_derivatives_match_finite_differences(fuzz_settings: FuzzSettings) -> None:
    """`td.jvp` is `J @ t`, `td.vjp` is `J.T @ c` (the real adjoint) and
    `td.grad` of `real(sum(f * w))` is `J.T @ w`, J by central differences;
    the primal outputs of jvp and vjp are numpy's."""

    @fuzz_settings(30)
    @given(programs(DERIVATIVES), st.integers(0, 2**32 - 1))
    def check(program: Program, seed: int) -> None:
        inputs = _smooth_inputs(program, seed)
        jacobian = _jacobian(program, inputs)
        functions = tidu_functions(program)
        rng = np.random.default_rng(seed)
        expected = np.asarray(quietly(numpy_functions(program)["f"], *inputs))
        rtol = derivative_tolerance(program)

        tangent = random_direction(rng, jacobian.shape[1])
        out, jvp_out = td.jvp(functions["f"], tuple(inputs), tuple(from_real(tangent, inputs)))
        assert_close(out, expected, rtol, rtol * program.scale, "jvp primal vs numpy")
        assert_close(to_real([jvp_out]), jacobian @ tangent, rtol,
                     _derivative_atol(program, jacobian, tangent), "jvp vs J @ t")  # fmt: skip

        out, vjp_fn = td.vjp(functions["f"], *inputs)
        cotangent = random_direction(rng, jacobian.shape[0])
        cotangents = vjp_fn(from_real(cotangent, [np.asarray(out)])[0])
        assert_close(to_real(cotangents), jacobian.T @ cotangent, rtol,
                     _derivative_atol(program, jacobian, cotangent), "vjp vs J.T @ c")  # fmt: skip

        weights = _objective_cotangent(program.weights, expected)
        gradients = td.grad(functions["objective"], argnums=tuple(range(len(inputs))))(*inputs)
        assert_close(to_real(gradients), jacobian.T @ weights, rtol,
                     _derivative_atol(program, jacobian, weights), "grad vs J.T @ w")  # fmt: skip

    check()


def _objective_cotangent(weights: np.ndarray, output: np.ndarray) -> np.ndarray:
    """The gradient of `real(sum(out * w))` in the real coordinates of `out`:
    `w` on the real parts, 0 on the imaginary parts."""
    flat = weights.astype(np.float64).ravel()
    return np.concatenate([flat, np.zeros(flat.size)]) if output.dtype.kind == "c" else flat


def test_hessian_is_symmetric_and_matches_grad(fuzz_settings: FuzzSettings) -> None:
    """`td.hessian` of `real(sum(f * w))` wrt the first input is symmetric and
    is the finite-difference Jacobian of `td.grad`."""

    @fuzz_settings(20)
    @given(programs(HESSIAN), st.integers(0, 2**32 - 1))
    def check(program: Program, seed: int) -> None:
        inputs = _smooth_inputs(program, seed)
        objective = tidu_functions(program)["objective"]
        size = inputs[0].size
        hessian = np.asarray(td.hessian(objective)(*inputs)).reshape(size, size)
        grad = td.grad(objective)

        def gradient_at(x0: np.ndarray) -> np.ndarray:
            return np.asarray(grad(x0, *inputs[1:]))

        numeric = fd_jacobian(gradient_at, [inputs[0]], 1e-5 if not program.low_precision else 1e-2)
        scale = 1.0 + float(np.abs(hessian).max(initial=0.0))
        rtol = 1e-2 if program.low_precision else 1e-5
        assert_close(hessian, hessian.T, 0.0, rtol * 1e-3 * scale, "hessian symmetry")
        assert_close(hessian, numeric, rtol, rtol * scale, "hessian vs d(grad)")

    check()


# --------------------------------------------------------------------------
# JAX as an oracle
# --------------------------------------------------------------------------


class JaxNamespace:
    """`jax.numpy` as `xp`, casting complex to real by the real part (as tnp and
    numpy do; `jnp.astype` deprecates that cast)."""

    def __init__(self, jnp: ModuleType):
        self.jnp = jnp

    def __getattr__(self, name: str) -> Any:
        return getattr(self.jnp, name)

    def astype(self, x: Any, dtype: Any) -> Any:
        if np.dtype(dtype).kind != "c" and self.jnp.iscomplexobj(x):
            x = self.jnp.real(x)
        return self.jnp.astype(x, dtype)


class JaxLax:
    """`lax.complex` and `lax.pad` with tidu's signatures, in JAX."""

    def __init__(self, jax: ModuleType, jnp: ModuleType):
        self.jax, self.jnp = jax, jnp

    def complex(self, re: Any, im: Any) -> Any:
        return self.jax.lax.complex(re, im)

    def pad(self, x: Any, value: float, config: Sequence[tuple[int, int, int]]) -> Any:
        x = self.jnp.asarray(x)
        return self.jax.lax.pad(x, self.jnp.asarray(value, dtype=x.dtype), config)


@pytest.fixture(scope="module")
def jax_modules() -> tuple[ModuleType, ModuleType]:
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    jax.config.update("jax_enable_x64", True)
    return jax, jnp


def test_matches_jax(
    fuzz_settings: FuzzSettings, jax_modules: tuple[ModuleType, ModuleType]
) -> None:
    """`td.jit`, `td.jvp`, `td.vjp` and `td.grad` agree with JAX's on the same
    program (`vjp_ours(ct) = conj(vjp_jax(conj(ct)))`, docs/complex.md)."""
    jax, jnp = jax_modules

    @fuzz_settings(12)
    @given(programs(DERIVATIVES), st.integers(0, 2**32 - 1))
    def check(program: Program, seed: int) -> None:
        inputs = _smooth_inputs(program, seed)
        ours = tidu_functions(program)
        theirs = program.functions(JaxNamespace(jnp), JaxLax(jax, jnp))
        rng = np.random.default_rng(seed)
        rtol = 1e-3 if program.low_precision else 1e-8
        atol = rtol * program.scale

        expected = np.asarray(jax.jit(theirs["f"])(*inputs))
        actual = td.jit(ours["f"])(*inputs)
        assert actual.dtype == expected.dtype, f"dtype {actual.dtype}, JAX {expected.dtype}"
        assert_close(actual, expected, rtol, atol, "td.jit vs jax.jit")

        tangents = tuple(from_real(random_direction(rng, to_real(inputs).size), inputs))
        _, ours_t = td.jvp(ours["f"], tuple(inputs), tangents)
        _, theirs_t = jax.jvp(theirs["f"], tuple(inputs), tangents)
        assert_close(ours_t, np.asarray(theirs_t), rtol, atol, "td.jvp vs jax.jvp")

        out, vjp_fn = td.vjp(ours["f"], *inputs)
        ct = from_real(random_direction(rng, to_real([out]).size), [np.asarray(out)])[0]
        _, jax_vjp = jax.vjp(theirs["f"], *inputs)
        for k, (a, b) in enumerate(zip(vjp_fn(ct), jax_vjp(np.conj(ct)), strict=True)):
            assert_close(a, np.conj(np.asarray(b)), rtol, atol, f"td.vjp vs jax.vjp, input {k}")

        argnums = tuple(range(len(inputs)))
        ours_g = td.grad(ours["objective"], argnums=argnums)(*inputs)
        theirs_g = jax.grad(theirs["objective"], argnums=argnums)(*inputs)
        for k, (a, b) in enumerate(zip(ours_g, theirs_g, strict=True)):
            assert_close(a, np.conj(np.asarray(b)), rtol, atol, f"td.grad vs jax.grad, input {k}")

    check()
