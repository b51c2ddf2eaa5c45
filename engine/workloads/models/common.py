"""Building blocks shared by the workload models (timestep embeddings, norms, attention)."""
from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Any, Iterator

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


class _FusedAttention(torch.autograd.Function):
    """PyTorch's memory-efficient SDPA kernel with the backward its CUDA wrapper runs.

    Inputs are [batch, heads, tokens, dim] (BHMK, stride 1 in ``dim``; one head for the
    [batch*heads, tokens, dim] callers).
    Forward: ``aten._scaled_dot_product_efficient_attention``.  Backward, as
    ``_efficient_attention_backward`` in ``aten/src/ATen/native/transformers/cuda/
    attention_backward.cu`` does before launching the kernel: ``grad_out.contiguous()``
    (a copy only when the incoming gradient is strided), and, for fp32 (the
    kernel's ``kKernelComputesDelta`` is false unless the dtype is 16-bit,
    ``mem_eff_attention/kernel_backward.h``), ``delta = (grad_out.float() *
    out.float()).sum(-1).transpose(-2, -1).contiguous()`` (two ATen kernels, three with
    more than one head); then
    ``aten._scaled_dot_product_efficient_attention_backward``.  Those ops run here so the
    capture records them (on ``meta`` the fused backward is one allocation and nothing else).
    """

    @staticmethod
    def forward(ctx: Any, q: torch.Tensor, k: torch.Tensor,  # type: ignore[override]
                v: torch.Tensor) -> torch.Tensor:
        out, lse, seed, offset = torch.ops.aten._scaled_dot_product_efficient_attention(
            q, k, v, None, True)
        ctx.save_for_backward(q, k, v, out, lse, seed, offset)
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor  # type: ignore[override]
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        q, k, v, out, lse, seed, offset = ctx.saved_tensors
        g = grad.transpose(1, 2).contiguous()          # BMHK, as the CUDA wrapper sees it
        if g.element_size() > 2:                       # fp32: delta precomputed by ATen
            (g.float() * out.transpose(1, 2).float()).sum(-1).transpose(-2, -1).contiguous()
        dq, dk, dv, _ = torch.ops.aten._scaled_dot_product_efficient_attention_backward(
            g.transpose(1, 2), q, k, v, None, out, lse, seed, offset, 0.0,
            [True, True, True, False])
        return dq, dk, dv


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Softmax attention over [batch*heads, tokens, dim] tensors (under "flash" also
    [batch, heads, tokens, dim] ones from :func:`split_heads`; the result has their rank).

    ``math`` (default): written out as two batched matrix multiplies around a softmax, as
    the DDPM and LDM reference implementations do (and timm's ``Attention``, which DiT's
    reference imports, when its fused path is off), so the [tokens x tokens] score matrix
    is a real tensor whose memory traffic the trace captures.

    ``flash`` (inside ``attention_kernel("flash")``): what ``F.scaled_dot_product_attention``
    runs on CUDA for these shapes: the CUTLASS memory-efficient kernel
    (``aten._scaled_dot_product_efficient_attention`` and its backward, see
    :class:`_FusedAttention` and :mod:`engine.workloads.flash`): no score matrix reaches
    memory.  The op is called directly because ``F.scaled_dot_product_attention`` on the
    ``meta`` device the capture runs on picks the math decomposition.  Every fused kernel
    needs stride 1 in the head dimension (``check_last_dim_stride_equals_1_dense`` in
    ``sdp_utils_cpp.h``; otherwise SDPA silently takes the math path); inputs that are not
    (DDPM's transposed q/k/v) are copied first, which is what a user who wants the fused
    kernel pays (diffusers pays the same three copies inside its ``to_q``/``to_k``/``to_v``
    matmuls, which clone the transposed input).
    """
    if _attention_kernel == "flash":
        q, k, v = (t if t.stride(-1) == 1 else t.contiguous() for t in (q, k, v))
        if q.dim() == 4:
            return _FusedAttention.apply(q, k, v)
        out = _FusedAttention.apply(q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1))
        return out.squeeze(1)
    scale = q.shape[-1] ** -0.5
    scores = torch.bmm(q, k.transpose(1, 2)) * scale
    weights = torch.softmax(scores, dim=-1)
    return torch.bmm(weights, v)


def split_heads(t: torch.Tensor) -> torch.Tensor:
    """What :func:`attention` takes from a multi-head [batch, heads, tokens, dim] view: the
    reference code's [batch*heads, tokens, dim] copy under "math"; under "flash" the view
    itself, as timm and diffusers hand it to SDPA (no copy: the head dim has stride 1)."""
    if _attention_kernel == "flash" and t.stride(-1) == 1:
        return t
    return t.reshape(-1, t.shape[-2], t.shape[-1])


class AttentionModule(nn.Module):
    """Marker base class: operators run inside one of these are tagged phase 'attention'."""


def count_parameters(model: nn.Module, trainable_only: bool = False) -> int:
    """Number of parameters of ``model`` (works on the meta device)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)
