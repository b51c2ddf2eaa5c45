"""Adam (Kingma & Ba) and a cosine learning-rate schedule, written out.

``torch.optim.Adam``'s first use in a process imports ``torch._dynamo``, which costs seconds
(about 14 s on the 2-core machine): more than a whole small optimisation.  The gradient
methods (FADiff, the DOSA-style baseline) use this instead."""
from __future__ import annotations

import math
from typing import Sequence

import torch


class Adam:
    """Adam on a list of tensors (each with its own moments)."""

    def __init__(self, params: Sequence[torch.Tensor], lr: float,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> None:
        self.params = list(params)
        self.lr, self.b1, self.b2, self.eps = lr, betas[0], betas[1], eps
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]
        self.t = 0

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        self.t += 1
        for p, m, v in zip(self.params, self.m, self.v):
            if p.grad is None:
                continue
            g = p.grad
            m.mul_(self.b1).add_(g, alpha=1 - self.b1)
            v.mul_(self.b2).addcmul_(g, g, value=1 - self.b2)
            m_hat = m / (1 - self.b1 ** self.t)
            v_hat = v / (1 - self.b2 ** self.t)
            p.sub_(self.lr * m_hat / (v_hat.sqrt() + self.eps))


def cosine_lr(step: int, steps: int, lr_start: float, lr_end: float) -> float:
    """Cosine annealing from lr_start (step 0) to lr_end (last step)."""
    frac = min(1.0, step / max(1, steps - 1))
    return lr_end + 0.5 * (lr_start - lr_end) * (1 + math.cos(math.pi * frac))


@torch.no_grad()
def clip_grad_norm(params: Sequence[torch.Tensor], max_norm: float) -> float:
    """Scale the gradients so their joint L2 norm is at most max_norm; returns the norm."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return 0.0
    norm = float(torch.sqrt(sum((g * g).sum() for g in grads)))
    if norm > max_norm > 0:
        for g in grads:
            g.mul_(max_norm / norm)
    return norm
