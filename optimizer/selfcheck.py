"""The optimiser's part of the installation self-check (``python main.py selfcheck``; the
engine's part, and the runner, are in engine/selfcheck.py): PyTorch imports and
differentiates, and every optimiser module imports.  Light to import: each check imports
what it needs when it runs.
"""
from __future__ import annotations

from typing import Callable


def check_torch() -> str:
    """torch imports, autograd gives the right gradient and an Adam step lowers a loss."""
    import torch

    x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    (x ** 2).sum().backward()
    expected = 2 * x.detach()
    if x.grad is None or not torch.allclose(x.grad, expected):
        raise RuntimeError(f"autograd gave {x.grad}, expected {expected}")
    p = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    opt = torch.optim.Adam([p], lr=0.1)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = (p ** 2).sum()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    if not losses[-1] < losses[0]:
        raise RuntimeError(f"Adam did not lower the loss: {losses}")
    return f"torch {torch.__version__}: autograd and Adam ok"


def check_optimizer() -> str:
    """The optimiser package imports (its modules, whatever exists of them)."""
    import importlib
    import pkgutil

    import optimizer

    names = sorted(m.name for m in pkgutil.iter_modules(optimizer.__path__))
    for name in names:
        importlib.import_module(f"optimizer.{name}")
    return "modules: " + (", ".join(names) if names else "(none yet)")


CHECKS: tuple[tuple[str, Callable[[], str]], ...] = (
    ("torch", check_torch),
    ("optimizer", check_optimizer),
)
