"""The DDPM UNet (Ho et al. 2020): residual blocks, group norm, self-attention at low
resolutions and a sinusoidal timestep embedding.

The published LSUN 256x256 model uses ``ch=128, ch_mult=(1, 1, 2, 2, 4, 4),
num_res_blocks=2, attn_resolutions=(16,)`` and has 114M parameters (:func:`DDPMConfig.lsun256`).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from engine.workloads.models.common import (AttentionModule, attention, group_norm,
                                            timestep_embedding)


@dataclass(frozen=True)
class DDPMConfig:
    """Size of a DDPM UNet."""

    resolution: int = 256
    in_channels: int = 3
    ch: int = 128
    ch_mult: tuple[int, ...] = (1, 1, 2, 2, 4, 4)
    num_res_blocks: int = 2
    attn_resolutions: tuple[int, ...] = (16,)
    dropout: float = 0.0

    @classmethod
    def lsun256(cls) -> DDPMConfig:
        """The LSUN 256x256 configuration of the DDPM paper (114M parameters)."""
        return cls()

    @property
    def downsampling(self) -> int:
        """Factor by which the UNet downsamples: inputs must be a multiple of it."""
        return 2 ** (len(self.ch_mult) - 1)


class ResBlock(nn.Module):
    """GN-SiLU-conv, plus the projected timestep embedding, GN-SiLU-dropout-conv, skip."""

    def __init__(self, cin: int, cout: int, temb: int, dropout: float) -> None:
        super().__init__()
        self.norm1 = group_norm(cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.temb_proj = nn.Linear(temb, cout)
        self.norm2 = group_norm(cout)
        self.dropout = nn.Dropout(dropout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x: torch.Tensor, temb: torch.Tensor) -> torch.Tensor:
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb_proj(F.silu(temb))[:, :, None, None]
        h = self.conv2(self.dropout(F.silu(self.norm2(h))))
        return self.skip(x) + h


class AttnBlock(AttentionModule):
    """Single-head spatial self-attention with 1x1 q/k/v/out projections."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.norm = group_norm(channels)
        self.q = nn.Conv2d(channels, channels, 1)
        self.k = nn.Conv2d(channels, channels, 1)
        self.v = nn.Conv2d(channels, channels, 1)
        self.proj_out = nn.Conv2d(channels, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, hh, ww = x.shape
        h = self.norm(x)
        q = self.q(h).reshape(b, c, hh * ww).transpose(1, 2)
        k = self.k(h).reshape(b, c, hh * ww).transpose(1, 2)
        v = self.v(h).reshape(b, c, hh * ww).transpose(1, 2)
        out = attention(q, k, v).transpose(1, 2).reshape(b, c, hh, ww)
        return x + self.proj_out(out)


class Downsample(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


class Upsample(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(F.interpolate(x, scale_factor=2.0, mode="nearest"))


class DDPMUNet(nn.Module):
    """The DDPM noise-prediction UNet; ``forward(x, t)`` returns the predicted noise."""

    def __init__(self, cfg: DDPMConfig) -> None:
        super().__init__()
        self.cfg = cfg
        ch, temb = cfg.ch, cfg.ch * 4
        self.temb = nn.Sequential(nn.Linear(ch, temb), nn.SiLU(), nn.Linear(temb, temb))
        self.conv_in = nn.Conv2d(cfg.in_channels, ch, 3, padding=1)
        self.down = nn.ModuleList()
        skips = [ch]
        cur, res = ch, cfg.resolution
        for level, mult in enumerate(cfg.ch_mult):
            for _ in range(cfg.num_res_blocks):
                blocks = nn.ModuleList([ResBlock(cur, ch * mult, temb, cfg.dropout)])
                cur = ch * mult
                if res in cfg.attn_resolutions:
                    blocks.append(AttnBlock(cur))
                self.down.append(blocks)
                skips.append(cur)
            if level != len(cfg.ch_mult) - 1:
                self.down.append(nn.ModuleList([Downsample(cur)]))
                skips.append(cur)
                res //= 2
        self.mid = nn.ModuleList([ResBlock(cur, cur, temb, cfg.dropout), AttnBlock(cur),
                                  ResBlock(cur, cur, temb, cfg.dropout)])
        self.up = nn.ModuleList()
        for level, mult in reversed(list(enumerate(cfg.ch_mult))):
            for _ in range(cfg.num_res_blocks + 1):
                blocks = nn.ModuleList([ResBlock(cur + skips.pop(), ch * mult, temb,
                                                 cfg.dropout)])
                cur = ch * mult
                if res in cfg.attn_resolutions:
                    blocks.append(AttnBlock(cur))
                self.up.append(blocks)
            if level != 0:
                self.up.append(nn.ModuleList([Upsample(cur)]))
                res *= 2
        self.norm_out = group_norm(cur)
        self.conv_out = nn.Conv2d(cur, cfg.in_channels, 3, padding=1)

    @staticmethod
    def _run(blocks: nn.ModuleList, h: torch.Tensor, temb: torch.Tensor) -> torch.Tensor:
        for b in blocks:
            h = b(h, temb) if isinstance(b, ResBlock) else b(h)
        return h

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        # (in the input's dtype: the sinusoids are float32, and a bf16 or fp16 model's
        # layers take their own dtype; .to of a float32 input to float32 is a no-op)
        temb = self.temb(timestep_embedding(t, self.cfg.ch).to(x.dtype))
        hs = [self.conv_in(x)]
        for blocks in self.down:
            hs.append(self._run(blocks, hs[-1], temb))
        h = self._run(self.mid, hs[-1], temb)
        for blocks in self.up:
            if isinstance(blocks[0], ResBlock):
                h = torch.cat([h, hs.pop()], dim=1)
            h = self._run(blocks, h, temb)
        return self.conv_out(F.silu(self.norm_out(h)))
