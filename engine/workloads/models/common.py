"""Building blocks shared by the workload models (timestep embeddings, norms, attention)."""
from __future__ import annotations

import math

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


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Plain (materialised) softmax attention over [batch*heads, tokens, dim] tensors.

    Written out as two batched matrix multiplies around a softmax, as the DDPM/LDM/DiT
    reference implementations do, so the [tokens x tokens] score matrix is a real tensor
    whose memory traffic the trace captures.
    """
    scale = q.shape[-1] ** -0.5
    scores = torch.bmm(q, k.transpose(1, 2)) * scale
    weights = torch.softmax(scores, dim=-1)
    return torch.bmm(weights, v)


class AttentionModule(nn.Module):
    """Marker base class: operators run inside one of these are tagged phase 'attention'."""


def count_parameters(model: nn.Module, trainable_only: bool = False) -> int:
    """Number of parameters of ``model`` (works on the meta device)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)
