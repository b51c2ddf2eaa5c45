"""Building blocks shared by the workload models (timestep embeddings, norms, attention)."""
from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Iterator

import torch
from torch import nn
from torch.nn import functional as F


def timestep_embedding(t: torch.Tensor, dim: int, max_period: float = 10000.0) -> torch.Tensor:
    """Sinusoidal embedding of diffusion timesteps ``t`` (shape [B]) into ``dim`` features."""
    half = dim // 2
    freqs = torch.exp(-math.log(max_period)
                      * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t.float()[:, None] * freqs[None]
    emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    if dim % 2:
        emb = F.pad(emb, (0, 1))
    return emb


def group_norm(channels: int, groups: int = 32) -> nn.GroupNorm:
    """GroupNorm with ``groups`` groups (fewer when ``channels`` is small, for tiny configs)."""
    g = min(groups, channels)
    while channels % g:
        g -= 1
    return nn.GroupNorm(g, channels, eps=1e-6)


#: Attention kernels the models can be traced with (``TraceSpec.attention``).
ATTENTION_KERNELS = ("math", "flash")
_attention_kernel = "math"


@contextmanager
def attention_kernel(kind: str) -> Iterator[None]:
    """Run the models' :func:`attention` with kernel ``kind`` ("math" or "flash") inside."""
    global _attention_kernel
    if kind not in ATTENTION_KERNELS:
        raise ValueError(f"attention kernel {kind!r}: expected one of {ATTENTION_KERNELS}")
    prev, _attention_kernel = _attention_kernel, kind
    try:
        yield
    finally:
        _attention_kernel = prev


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Softmax attention over [batch*heads, tokens, dim] tensors.

    ``math`` (default): written out as two batched matrix multiplies around a softmax, as the
    DDPM/LDM/DiT reference implementations do, so the [tokens x tokens] score matrix is a
    real tensor whose memory traffic the trace captures.

    ``flash`` (inside ``attention_kernel("flash")``): one fused kernel,
    ``aten._scaled_dot_product_efficient_attention`` (the CUTLASS memory-efficient kernel
    that ``F.scaled_dot_product_attention`` selects on CUDA for fp32, and one of the two
    fused kernels it selects for fp16/bf16), whose autograd backward is
    ``_scaled_dot_product_efficient_attention_backward``: no score matrix reaches memory.
    The op is called directly because ``F.scaled_dot_product_attention`` on the ``meta``
    device the capture runs on picks the math decomposition.  The kernel needs the head
    dimension contiguous (stride 1); inputs that are not (DDPM's transposed q/k/v) are
    copied first, as a user would have to for the fused path to be eligible.
    """
    if _attention_kernel == "flash":
        q, k, v = (t if t.stride(-1) == 1 else t.contiguous() for t in (q, k, v))
        out = torch.ops.aten._scaled_dot_product_efficient_attention(
            q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1), None, True)[0]
        return out.squeeze(1)
    scale = q.shape[-1] ** -0.5
    scores = torch.bmm(q, k.transpose(1, 2)) * scale
    weights = torch.softmax(scores, dim=-1)
    return torch.bmm(weights, v)


class AttentionModule(nn.Module):
    """Marker base class: operators run inside one of these are tagged phase 'attention'."""


def count_parameters(model: nn.Module, trainable_only: bool = False) -> int:
    """Number of parameters of ``model`` (works on the meta device)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)
