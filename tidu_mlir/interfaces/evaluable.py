"""The evaluation contract: what an op class provides to run on numpy arrays.

The reference evaluator (`tidu_mlir.interp`) runs any `Evaluable` op by
calling `evaluate` on its operand arrays; it then checks each result against
the result type (shape) and casts it to the result's element type.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np


class EvaluationError(Exception):
    """The evaluator cannot run an op (not evaluable, missing value, bad result)."""


class Evaluable(ABC):
    """Mixin for op classes that carry their own numpy semantics."""

    @abstractmethod
    def evaluate(self, *operands: np.ndarray) -> tuple[np.ndarray, ...]:
        """One array per result, computed from one array per operand (in order)."""
