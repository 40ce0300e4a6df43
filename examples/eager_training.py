"""Training a small MLP in eager mode, PyTorch style: tensors that require grad,
`loss.backward()`, `.grad`, updates in place under `no_grad()`, and two
optimizers written out, plain SGD and Adam, each with `step()` and `zero_grad()`.

Each op's backward graph is derived and compiled once (the first step), then
every step runs numpy forward and native backward code (docs/eager.md).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import tidu_mlir.eager as te
from tidu_mlir.eager import Tensor

rng = np.random.default_rng(0)
X = te.tensor(rng.standard_normal((64, 8)))
Y = te.tensor(np.sin(X.numpy().sum(axis=1, keepdims=True)))


def init_params(seed: int = 1) -> list[Tensor]:
    """The weights and biases of an 8-16-1 MLP, leaves that require grad (the
    same for a given seed, so both optimizers start from one point)."""
    init = np.random.default_rng(seed)
    shapes = [(8, 16), (16,), (16, 1), (1,)]
    return [te.tensor(init.standard_normal(s) * 0.3, requires_grad=True) for s in shapes]


def mlp_loss(params: list[Tensor]) -> Tensor:
    """The mean squared error of the MLP on (X, Y), recorded for backward."""
    w1, b1, w2, b2 = params
    # te.tanh is generated from tnp.__all__ at import: pyright cannot see it.
    hidden = te.tanh(X @ w1 + b1)  # pyright: ignore[reportAttributeAccessIssue]
    return ((hidden @ w2 + b2 - Y) ** 2).mean()


class Optimizer:
    """What the optimizers share: the parameters and `zero_grad`."""

    def __init__(self, params: list[Tensor], lr: float) -> None:
        self.params, self.lr = params, lr

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients (`backward` accumulates into `.grad`)."""
        for p in self.params:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()

    def step(self) -> None:
        raise NotImplementedError


class SGD(Optimizer):
    """p -= lr * grad."""

    def step(self) -> None:
        with te.no_grad():  # an in-place update of a leaf is refused while recording
            for p in self.params:
                if p.grad is not None:
                    p -= self.lr * p.grad


class Adam(Optimizer):
    """Adam (Kingma & Ba): steps scaled by running averages of the gradient and
    of its square, bias-corrected."""

    def __init__(
        self, params: list[Tensor], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:  # fmt: skip
        super().__init__(params, lr)
        self.betas, self.eps, self.t = betas, eps, 0
        self.m = [te.tensor(np.zeros(p.shape)) for p in params]
        self.v = [te.tensor(np.zeros(p.shape)) for p in params]

    def step(self) -> None:
        beta1, beta2 = self.betas
        self.t += 1
        with te.no_grad():
            for p, m, v in zip(self.params, self.m, self.v, strict=True):
                if p.grad is None:
                    continue
                m *= beta1
                m += (1 - beta1) * p.grad
                v *= beta2
                v += (1 - beta2) * p.grad**2
                m_hat = m / (1 - beta1**self.t)
                v_hat = v / (1 - beta2**self.t)
                p -= self.lr * m_hat / (v_hat**0.5 + self.eps)


def train(optimizer: Optimizer, params: list[Tensor], steps: int = 60) -> list[float]:
    """Run `steps` steps; print the loss every 10; return every step's loss."""
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        loss = mlp_loss(params)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % 10 == 0 or step == steps - 1:
            print(f"  step {step:2d}  loss {losses[-1]:.5f}")
    return losses


OPTIMIZERS: dict[str, Callable[[list[Tensor]], Optimizer]] = {
    "SGD": lambda params: SGD(params, lr=0.1),
    "Adam": lambda params: Adam(params, lr=0.02),
}

for name, make_optimizer in OPTIMIZERS.items():
    print(name)
    params = init_params()
    losses = train(make_optimizer(params), params)
    assert params[0].is_leaf and params[0].requires_grad  # updated in place, still leaves
    assert losses[-1] < losses[0], f"{name} did not lower the loss: {losses[0]} -> {losses[-1]}"
