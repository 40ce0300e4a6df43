"""`ArrayOperators`: numpy's operators and array methods for any array class.

The mixin defines `+ - * / ** @`, unary `- + abs`, comparisons, `& | ^ ~`, indexing and
the methods numpy arrays have (`.T`, `.sum()`, `.reshape()`, ...) once, for
`tidu_mlir.tracing.Tracer` and `tidu_mlir.eager.Tensor`. Each operator calls
the numpy-named function of the same meaning (`add`, `matmul`, `getitem`,
...) in the namespace its class is bound to with `bind_functions`.

Why a binding instead of an import: the functions are written on top of the
array class (`tidu_mlir.numpy` imports `Tracer`, `tidu_mlir.eager.functions`
imports `Tensor`), so the class's module cannot import them without an import
cycle. Instead the module defining the functions binds itself to the class
once its functions exist: `Tracer.bind_functions(sys.modules[__name__])` at
the end of `tidu_mlir.numpy`, likewise for `Tensor` in
`tidu_mlir.eager.functions`. Both modules are imported by their package's
`__init__`, so the operators are bound before any array exists. Imports only
go downwards.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, ClassVar, Self


class ArrayOperators:
    """numpy's operators and array methods, delegated to `_functions`."""

    __slots__ = ()
    __array_priority__ = 1000  # numpy defers binary operators to us
    __hash__ = object.__hash__  # `__eq__` is elementwise; identity hashing stays

    _functions: ClassVar[ModuleType]
    """The numpy-named functions on this class's arrays (see `bind_functions`)."""

    @classmethod
    def bind_functions(cls, functions: ModuleType) -> None:
        """Implement the operators of `cls` with the functions of `functions`."""
        cls._functions = functions

    # Arithmetic (numpy broadcasting and promotion).
    def __add__(self, other: Any) -> Self:
        return self._functions.add(self, other)

    def __radd__(self, other: Any) -> Self:
        return self._functions.add(other, self)

    def __sub__(self, other: Any) -> Self:
        return self._functions.subtract(self, other)

    def __rsub__(self, other: Any) -> Self:
        return self._functions.subtract(other, self)

    def __mul__(self, other: Any) -> Self:
        return self._functions.multiply(self, other)

    def __rmul__(self, other: Any) -> Self:
        return self._functions.multiply(other, self)

    def __truediv__(self, other: Any) -> Self:
        return self._functions.divide(self, other)

    def __rtruediv__(self, other: Any) -> Self:
        return self._functions.divide(other, self)

    def __pow__(self, other: Any) -> Self:
        return self._functions.power(self, other)

    def __rpow__(self, other: Any) -> Self:
        return self._functions.power(other, self)

    def __matmul__(self, other: Any) -> Self:
        return self._functions.matmul(self, other)

    def __rmatmul__(self, other: Any) -> Self:
        return self._functions.matmul(other, self)

    def __neg__(self) -> Self:
        return self._functions.negative(self)

    def __pos__(self) -> Self:
        return self

    def __abs__(self) -> Self:
        return self._functions.abs(self)

    # Comparisons give boolean arrays.
    def __lt__(self, other: Any) -> Self:
        return self._functions.less(self, other)

    def __le__(self, other: Any) -> Self:
        return self._functions.less_equal(self, other)

    def __gt__(self, other: Any) -> Self:
        return self._functions.greater(self, other)

    def __ge__(self, other: Any) -> Self:
        return self._functions.greater_equal(self, other)

    def __eq__(self, other: Any) -> Self:  # type: ignore[override]
        return self._functions.equal(self, other)

    def __ne__(self, other: Any) -> Self:  # type: ignore[override]
        return self._functions.not_equal(self, other)

    # Boolean operators (numpy's bitwise functions, on booleans only here).
    def __and__(self, other: Any) -> Self:
        return self._functions.bitwise_and(self, other)

    def __rand__(self, other: Any) -> Self:
        return self._functions.bitwise_and(other, self)

    def __or__(self, other: Any) -> Self:
        return self._functions.bitwise_or(self, other)

    def __ror__(self, other: Any) -> Self:
        return self._functions.bitwise_or(other, self)

    def __xor__(self, other: Any) -> Self:
        return self._functions.bitwise_xor(self, other)

    def __rxor__(self, other: Any) -> Self:
        return self._functions.bitwise_xor(other, self)

    def __invert__(self) -> Self:
        return self._functions.invert(self)

    def __getitem__(self, index: Any) -> Self:
        return self._functions.getitem(self, index)

    # Methods numpy arrays have.
    @property
    def T(self) -> Self:  # noqa: N802 - numpy's name
        return self._functions.transpose(self)

    @property
    def real(self) -> Self:
        return self._functions.real(self)

    @property
    def imag(self) -> Self:
        return self._functions.imag(self)

    def conj(self) -> Self:
        return self._functions.conj(self)

    def reshape(self, *shape: Any) -> Self:
        return self._functions.reshape(self, shape[0] if len(shape) == 1 else shape)

    def transpose(self, *axes: Any) -> Self:
        return self._functions.transpose(self, (axes[0] if len(axes) == 1 else axes) or None)

    def sum(self, axis: Any = None, keepdims: bool = False) -> Self:
        return self._functions.sum(self, axis=axis, keepdims=keepdims)

    def mean(self, axis: Any = None, keepdims: bool = False) -> Self:
        return self._functions.mean(self, axis=axis, keepdims=keepdims)

    def max(self, axis: Any = None, keepdims: bool = False) -> Self:
        return self._functions.max(self, axis=axis, keepdims=keepdims)

    def astype(self, dtype: Any) -> Self:
        return self._functions.astype(self, dtype)
