"""Diffusion transformers with adaLN-Zero blocks (Peebles & Xie 2023).

:class:`DiT` denoises latent images (DiT-XL/2: 28 blocks, hidden 1152, 16 heads, patch 2 on
a 32x32x4 latent, 675M parameters, :meth:`DiTConfig.xl2`); :class:`TrajectoryDiT` uses the same
blocks to denoise the future trajectories of the agents of a driving scene conditioned on
their past trajectories (each token is one agent's future over a window of time steps).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from engine.workloads.models.common import (AttentionModule, attention, split_heads,
                                            timestep_embedding)


def _modulate(x: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


class SelfAttention(AttentionModule):
    """Multi-head self-attention with a fused qkv projection."""

    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        hd = c // self.heads
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, hd).permute(2, 0, 3, 1, 4)
        q, k, v = (split_heads(qkv[i]) for i in range(3))
        out = attention(q, k, v).reshape(b, self.heads, n, hd).transpose(1, 2)
        return self.proj(out.reshape(b, n, c))


class DiTBlock(nn.Module):
    """LayerNorm (no affine) + adaLN-Zero modulation around attention and an MLP."""

    def __init__(self, hidden: int, heads: int, mlp_ratio: float = 4.0) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(hidden, elementwise_affine=False, eps=1e-6)
        self.attn = SelfAttention(hidden, heads)
        self.norm2 = nn.LayerNorm(hidden, elementwise_affine=False, eps=1e-6)
        inner = int(hidden * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(hidden, inner), nn.GELU(approximate="tanh"),
                                 nn.Linear(inner, hidden))
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(hidden, 6 * hidden))

    def forward(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        sh1, sc1, g1, sh2, sc2, g2 = self.adaLN_modulation(c).chunk(6, dim=1)
        x = x + g1.unsqueeze(1) * self.attn(_modulate(self.norm1(x), sh1, sc1))
        return x + g2.unsqueeze(1) * self.mlp(_modulate(self.norm2(x), sh2, sc2))


class FinalLayer(nn.Module):
    def __init__(self, hidden: int, out_dim: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(hidden, elementwise_affine=False, eps=1e-6)
        self.linear = nn.Linear(hidden, out_dim)
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(hidden, 2 * hidden))

    def forward(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        shift, scale = self.adaLN_modulation(c).chunk(2, dim=1)
        return self.linear(_modulate(self.norm(x), shift, scale))


class TimestepEmbedder(nn.Module):
    def __init__(self, hidden: int, freq_dim: int = 256) -> None:
        super().__init__()
        self.freq_dim = freq_dim
        self.mlp = nn.Sequential(nn.Linear(freq_dim, hidden), nn.SiLU(),
                                 nn.Linear(hidden, hidden))

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        return self.mlp(timestep_embedding(t, self.freq_dim))


def _sincos_2d(dim: int, grid: int) -> torch.Tensor:
    """Fixed 2-D sine-cosine position embedding, [grid*grid, dim]."""
    quarter = dim // 4
    omega = 1.0 / 10000 ** (torch.arange(quarter, dtype=torch.float32) / quarter)
    coords = torch.arange(grid, dtype=torch.float32)
    yy, xx = torch.meshgrid(coords, coords, indexing="ij")
    parts = []
    for pos in (yy.reshape(-1), xx.reshape(-1)):
        out = pos[:, None] * omega[None]
        parts += [torch.sin(out), torch.cos(out)]
    return torch.cat(parts, dim=1)


def _sincos_1d(dim: int, length: int) -> torch.Tensor:
    half = dim // 2
    omega = 1.0 / 10000 ** (torch.arange(half, dtype=torch.float32) / half)
    out = torch.arange(length, dtype=torch.float32)[:, None] * omega[None]
    return torch.cat([torch.sin(out), torch.cos(out)], dim=1)


@dataclass(frozen=True)
class DiTConfig:
    """Size of an image DiT (defaults: DiT-XL/2 on 256x256 images, i.e. 32x32x4 latents)."""

    input_size: int = 32
    patch_size: int = 2
    in_channels: int = 4
    hidden: int = 1152
    depth: int = 28
    heads: int = 16
    mlp_ratio: float = 4.0
    num_classes: int = 1000
    learn_sigma: bool = True

    @classmethod
    def xl2(cls) -> DiTConfig:
        """DiT-XL/2 (675M parameters, 118.6 GFLOPs per forward at 256x256)."""
        return cls()


class DiT(nn.Module):
    """Class-conditional latent DiT; ``forward(x, t, y)`` predicts noise (and sigma)."""

    def __init__(self, cfg: DiTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        p, h = cfg.patch_size, cfg.hidden
        self.out_channels = cfg.in_channels * (2 if cfg.learn_sigma else 1)
        self.x_embedder = nn.Conv2d(cfg.in_channels, h, p, stride=p)
        self.t_embedder = TimestepEmbedder(h)
        self.y_embedder = nn.Embedding(cfg.num_classes + 1, h)   # +1: the "null" class
        grid = cfg.input_size // p
        self.pos_embed = nn.Parameter(_sincos_2d(h, grid)[None], requires_grad=False)
        self.blocks = nn.ModuleList(DiTBlock(h, cfg.heads, cfg.mlp_ratio)
                                    for _ in range(cfg.depth))
        self.final_layer = FinalLayer(h, p * p * self.out_channels)

    def forward(self, x: torch.Tensor, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        p, g = self.cfg.patch_size, self.cfg.input_size // self.cfg.patch_size
        tokens = self.x_embedder(x).flatten(2).transpose(1, 2) + self.pos_embed
        c = self.t_embedder(t) + self.y_embedder(y)
        for blk in self.blocks:
            tokens = blk(tokens, c)
        out = self.final_layer(tokens, c)
        b = x.shape[0]
        out = out.reshape(b, g, g, p, p, self.out_channels).permute(0, 5, 1, 3, 2, 4)
        return out.reshape(b, self.out_channels, g * p, g * p)


@dataclass(frozen=True)
class TrajDiTConfig:
    """Size of a trajectory DiT: ``agents`` agents, ``past_steps`` observed and
    ``future_steps`` predicted time steps of ``state_dim`` features (x, y, heading, speed);
    each token holds ``steps_per_token`` future steps of one agent."""

    agents: int = 64
    past_steps: int = 11
    future_steps: int = 80
    steps_per_token: int = 8
    state_dim: int = 4
    hidden: int = 384
    depth: int = 12
    heads: int = 6
    mlp_ratio: float = 4.0

    @property
    def tokens(self) -> int:
        return self.agents * (self.future_steps // self.steps_per_token)


class TrajectoryDiT(nn.Module):
    """``forward(future_noisy, t, past)`` predicts the noise on the future trajectories.

    future_noisy: [B, agents, future_steps, state_dim]; past: [B, agents, past_steps,
    state_dim].  The past of each agent is encoded by an MLP into a context token that is
    added to its future tokens; the scene summary (mean over agents) joins the timestep in
    the adaLN conditioning vector.
    """

    def __init__(self, cfg: TrajDiTConfig) -> None:
        super().__init__()
        if cfg.future_steps % cfg.steps_per_token:
            raise ValueError("future_steps must be a multiple of steps_per_token")
        self.cfg = cfg
        h = cfg.hidden
        tok_in = cfg.steps_per_token * cfg.state_dim
        self.token_embed = nn.Linear(tok_in, h)
        self.past_encoder = nn.Sequential(nn.Linear(cfg.past_steps * cfg.state_dim, h),
                                          nn.SiLU(), nn.Linear(h, h))
        self.t_embedder = TimestepEmbedder(h)
        windows = cfg.future_steps // cfg.steps_per_token
        self.time_embed = nn.Parameter(_sincos_1d(h, windows)[None, None], requires_grad=False)
        self.blocks = nn.ModuleList(DiTBlock(h, cfg.heads, cfg.mlp_ratio)
                                    for _ in range(cfg.depth))
        self.final_layer = FinalLayer(h, tok_in)

    def forward(self, future: torch.Tensor, t: torch.Tensor, past: torch.Tensor) -> torch.Tensor:
        cfg = self.cfg
        b, a = future.shape[:2]
        windows = cfg.future_steps // cfg.steps_per_token
        tok = self.token_embed(future.reshape(b, a, windows, -1))       # [B, A, W, h]
        ctx = self.past_encoder(past.reshape(b, a, -1))                 # [B, A, h]
        tok = (tok + ctx[:, :, None] + self.time_embed).reshape(b, a * windows, -1)
        c = self.t_embedder(t) + ctx.mean(dim=1)
        for blk in self.blocks:
            tok = blk(tok, c)
        out = self.final_layer(tok, c)
        return out.reshape(b, a, cfg.future_steps, cfg.state_dim)

