"""Small synthetic training-step traces, for tests, examples and smoke runs of the studies.

These are *not* measured workloads (``engine.workloads`` captures real ones): a step is
modelled as ``layers`` layers, each reading its weights and its input activations and writing
its output activations (forward), then the same in reverse with gradient writes (backward),
then an optimiser pass reading and writing weights and two moment buffers. The ``diffusion``
kind adds attention-like scattered reads (short runs in random rows of a score buffer) and
skip connections (reads of activations written many layers earlier), the ``cnn`` kind
streams larger activations. Activation traffic scales with the batch, weight and optimiser
traffic does not. Everything is deterministic in ``seed``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.studies.spec import StudyError, TraceInput
from engine.trace import TraceChunk, write_trace

LINE = 64
_ACT_BASE = 1 << 28
_W_BASE = 1 << 30
_OPT_BASE = 3 << 29
_ATTN_BASE = 1 << 31


def _seq(base: int, nbytes: int) -> np.ndarray:
    return base + np.arange(max(1, nbytes // LINE), dtype=np.int64) * LINE


def training_step(kind: str, batch: int, *, layers: int = 6, weight_kb: int = 64,
                  act_kb_per_sample: int = 2, interval: int = 2, seed: int = 0
                  ) -> tuple[TraceChunk, float]:
    """One synthetic training step: (requests, FLOPs of the step)."""
    if kind not in ("diffusion", "cnn"):
        raise StudyError(f"synthetic trace: kind = {kind!r}: expected diffusion or cnn")
    if batch <= 0 or layers <= 0:
        raise StudyError("synthetic trace: batch and layers must be positive")
    rng = np.random.default_rng(seed)
    w_bytes = weight_kb * 1024
    act = act_kb_per_sample * 1024 * batch * (2 if kind == "cnn" else 1)
    addr: list[np.ndarray] = []
    wr: list[np.ndarray] = []

    def emit(a: np.ndarray, write: bool) -> None:
        addr.append(a)
        wr.append(np.full(a.size, write))

    act_region = lambda i: _ACT_BASE + i * (act + (1 << 20))           # noqa: E731
    for i in range(layers):                                            # forward
        emit(_seq(_W_BASE + i * w_bytes, w_bytes), False)
        emit(_seq(act_region(i), act), False)
        if kind == "diffusion":
            if i >= 2:                                                 # skip connection
                emit(_seq(act_region(i - 2), act // 2), False)
            rows = rng.integers(0, 1 << 14, max(1, act // (4 * LINE * 4)), dtype=np.int64)
            attn = (_ATTN_BASE + rows[:, None] * 8192 + np.arange(4) * LINE).reshape(-1)
            emit(attn, False)
        emit(_seq(act_region(i + 1), act), True)
    for i in reversed(range(layers)):                                  # backward
        emit(_seq(act_region(i + 1), act), False)
        emit(_seq(act_region(i), act), False)
        emit(_seq(_W_BASE + i * w_bytes, w_bytes), False)
        if kind == "diffusion":
            rows = rng.integers(0, 1 << 14, max(1, act // (4 * LINE * 4)), dtype=np.int64)
            emit((_ATTN_BASE + rows[:, None] * 8192 + np.arange(4) * LINE).reshape(-1), False)
        emit(_seq(_OPT_BASE + i * w_bytes, w_bytes), True)              # weight gradients
    total_w = layers * w_bytes                                          # optimiser (Adam)
    for region in (_W_BASE, _OPT_BASE, _OPT_BASE + (64 << 20), _OPT_BASE + (128 << 20)):
        emit(_seq(region, total_w), False)
    for region in (_W_BASE, _OPT_BASE + (64 << 20), _OPT_BASE + (128 << 20)):
        emit(_seq(region, total_w), True)
    a = np.concatenate(addr).astype(np.uint64)
    w = np.concatenate(wr)
    cycles = np.arange(a.size, dtype=np.int64) * interval
    positions = 64 if kind == "diffusion" else 196
    flops = 6.0 * (total_w / 2) * batch * positions
    return TraceChunk.from_arrays(a, w, cycles), flops


def write_training_step(path: str | Path, label: str, kind: str, batch: int,
                        **kw: int) -> TraceInput:
    """Write :func:`training_step` to *path* (any trace format); returns the labelled input."""
    chunk, flops = training_step(kind, batch, **kw)
    write_trace(path, chunk)
    return TraceInput(label=label, path=str(path), kind=kind, batch=batch, flops=flops)
