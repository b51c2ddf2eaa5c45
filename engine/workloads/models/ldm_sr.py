"""Latent-diffusion super-resolution (Rombach et al. 2022): a KL autoencoder that maps images
to a latent space, and a latent UNet whose transformer blocks cross-attend to tokens of the
low-resolution image.

A training step encodes the high-resolution target with the frozen autoencoder, denoises the
noised latent with the UNet conditioned on the low-resolution image, and decodes the predicted
clean latent (the autoencoder's decode half, frozen too).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from engine.workloads.models.common import (AttentionModule, attention, group_norm,
                                            split_heads, timestep_embedding)
from engine.workloads.models.ddpm import AttnBlock, Downsample, ResBlock, Upsample


@dataclass(frozen=True)
class AutoencoderConfig:
    """KL autoencoder: downsamples by 2**(len(ch_mult)-1) into ``z_channels`` latents."""

    ch: int = 64
    ch_mult: tuple[int, ...] = (1, 2, 4)
    num_res_blocks: int = 1
    z_channels: int = 4

    @property
    def factor(self) -> int:
        return 2 ** (len(self.ch_mult) - 1)


@dataclass(frozen=True)
class LDMSRConfig:
    """Latent UNet with cross-attention, and its autoencoder (defaults: 4x SR to 256x256)."""

    resolution: int = 256           # high-resolution image side
    sr_factor: int = 4              # low-resolution input is resolution // sr_factor
    model_channels: int = 128
    ch_mult: tuple[int, ...] = (1, 2, 2, 4)
    num_res_blocks: int = 2
    attn_levels: tuple[int, ...] = (1, 2)     # levels (0 = full latent size) with attention
    head_channels: int = 32
    context_dim: int = 256
    context_patch: int = 4          # low-res image patch per context token
    autoencoder: AutoencoderConfig = AutoencoderConfig()

    @property
    def latent_size(self) -> int:
        return self.resolution // self.autoencoder.factor

    @property
    def downsampling(self) -> int:
        return self.autoencoder.factor * 2 ** (len(self.ch_mult) - 1)


class _VAEResBlock(nn.Module):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.norm1, self.conv1 = group_norm(cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.norm2, self.conv2 = group_norm(cout), nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv1(F.silu(self.norm1(x)))
        return self.skip(x) + self.conv2(F.silu(self.norm2(h)))


class Encoder(nn.Module):
    def __init__(self, cfg: AutoencoderConfig) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(3, cfg.ch, 3, padding=1)]
        cur = cfg.ch
        for i, m in enumerate(cfg.ch_mult):
            for _ in range(cfg.num_res_blocks):
                layers.append(_VAEResBlock(cur, cfg.ch * m))
                cur = cfg.ch * m
            if i != len(cfg.ch_mult) - 1:
                layers.append(Downsample(cur))
        layers += [_VAEResBlock(cur, cur), AttnBlock(cur), _VAEResBlock(cur, cur),
                   group_norm(cur), nn.SiLU(), nn.Conv2d(cur, 2 * cfg.z_channels, 3, padding=1),
                   nn.Conv2d(2 * cfg.z_channels, 2 * cfg.z_channels, 1)]
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class Decoder(nn.Module):
    def __init__(self, cfg: AutoencoderConfig) -> None:
        super().__init__()
        cur = cfg.ch * cfg.ch_mult[-1]
        layers: list[nn.Module] = [nn.Conv2d(cfg.z_channels, cfg.z_channels, 1),
                                   nn.Conv2d(cfg.z_channels, cur, 3, padding=1),
                                   _VAEResBlock(cur, cur), AttnBlock(cur),
                                   _VAEResBlock(cur, cur)]
        for i, m in reversed(list(enumerate(cfg.ch_mult))):
            for _ in range(cfg.num_res_blocks + 1):
                layers.append(_VAEResBlock(cur, cfg.ch * m))
                cur = cfg.ch * m
            if i != 0:
                layers.append(Upsample(cur))
        layers += [group_norm(cur), nn.SiLU(), nn.Conv2d(cur, 3, 3, padding=1)]
        self.net = nn.Sequential(*layers)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z)


class AutoencoderKL(nn.Module):
    """``encode`` returns a latent sample (mean + sigma * noise); ``decode`` maps it back."""

    def __init__(self, cfg: AutoencoderConfig) -> None:
        super().__init__()
        self.encoder, self.decoder = Encoder(cfg), Decoder(cfg)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        mean, logvar = self.encoder(x).chunk(2, dim=1)
        return mean + torch.exp(0.5 * logvar.clamp(-30.0, 20.0)) * torch.randn_like(mean)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return self.decoder(z)


class CrossAttention(AttentionModule):
    """Multi-head attention of ``x`` tokens over ``context`` tokens (self-attention if None)."""

    def __init__(self, dim: int, context_dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_k = nn.Linear(context_dim, dim, bias=False)
        self.to_v = nn.Linear(context_dim, dim, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def _split(self, t: torch.Tensor) -> torch.Tensor:
        b, n, c = t.shape
        return split_heads(t.reshape(b, n, self.heads, c // self.heads).transpose(1, 2))

    def forward(self, x: torch.Tensor, context: torch.Tensor | None = None) -> torch.Tensor:
        ctx = x if context is None else context
        b, n, c = x.shape
        out = attention(self._split(self.to_q(x)), self._split(self.to_k(ctx)),
                        self._split(self.to_v(ctx)))
        out = out.reshape(b, self.heads, n, c // self.heads).transpose(1, 2).reshape(b, n, c)
        return self.to_out(out)


class SpatialTransformer(nn.Module):
    """GN + 1x1 in, [self-attn, cross-attn, GEGLU feed-forward] with pre-LayerNorm, 1x1 out."""

    def __init__(self, channels: int, context_dim: int, heads: int) -> None:
        super().__init__()
        self.norm = group_norm(channels)
        self.proj_in = nn.Conv2d(channels, channels, 1)
        self.norm1, self.attn1 = nn.LayerNorm(channels), CrossAttention(channels, channels, heads)
        self.norm2, self.attn2 = nn.LayerNorm(channels), CrossAttention(channels, context_dim,
                                                                       heads)
        self.norm3 = nn.LayerNorm(channels)
        self.ff_in = nn.Linear(channels, channels * 8)      # GEGLU: 2 x 4*channels
        self.ff_out = nn.Linear(channels * 4, channels)
        self.proj_out = nn.Conv2d(channels, channels, 1)

    def forward(self, x: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        b, c, hh, ww = x.shape
        h = self.proj_in(self.norm(x)).reshape(b, c, hh * ww).transpose(1, 2)
        h = h + self.attn1(self.norm1(h))
        h = h + self.attn2(self.norm2(h), context)
        a, gate = self.ff_in(self.norm3(h)).chunk(2, dim=-1)
        h = h + self.ff_out(a * F.gelu(gate))
        return x + self.proj_out(h.transpose(1, 2).reshape(b, c, hh, ww))


class LatentUNet(nn.Module):
    """``forward(z, t, context)``: noise prediction on latents, cross-attending to context."""

    def __init__(self, cfg: LDMSRConfig) -> None:
        super().__init__()
        self.cfg = cfg
        ch, temb, zc = cfg.model_channels, cfg.model_channels * 4, cfg.autoencoder.z_channels
        self.temb = nn.Sequential(nn.Linear(ch, temb), nn.SiLU(), nn.Linear(temb, temb))
        self.conv_in = nn.Conv2d(zc, ch, 3, padding=1)
        self.down, self.up = nn.ModuleList(), nn.ModuleList()
        skips, cur = [ch], ch

        def transformer(c: int) -> SpatialTransformer:
            return SpatialTransformer(c, cfg.context_dim, max(1, c // cfg.head_channels))

        for level, mult in enumerate(cfg.ch_mult):
            for _ in range(cfg.num_res_blocks):
                blocks = nn.ModuleList([ResBlock(cur, ch * mult, temb, 0.0)])
                cur = ch * mult
                if level in cfg.attn_levels:
                    blocks.append(transformer(cur))
                self.down.append(blocks)
                skips.append(cur)
            if level != len(cfg.ch_mult) - 1:
                self.down.append(nn.ModuleList([Downsample(cur)]))
                skips.append(cur)
        self.mid = nn.ModuleList([ResBlock(cur, cur, temb, 0.0), transformer(cur),
                                  ResBlock(cur, cur, temb, 0.0)])
        for level, mult in reversed(list(enumerate(cfg.ch_mult))):
            for _ in range(cfg.num_res_blocks + 1):
                blocks = nn.ModuleList([ResBlock(cur + skips.pop(), ch * mult, temb, 0.0)])
                cur = ch * mult
                if level in cfg.attn_levels:
                    blocks.append(transformer(cur))
                self.up.append(blocks)
            if level != 0:
                self.up.append(nn.ModuleList([Upsample(cur)]))
        self.norm_out = group_norm(cur)
        self.conv_out = nn.Conv2d(cur, zc, 3, padding=1)

    def _run(self, blocks: nn.ModuleList, h: torch.Tensor, temb: torch.Tensor,
             context: torch.Tensor) -> torch.Tensor:
        for b in blocks:
            if isinstance(b, ResBlock):
                h = b(h, temb)
            elif isinstance(b, SpatialTransformer):
                h = b(h, context)
            else:
                h = b(h)
        return h

    def forward(self, z: torch.Tensor, t: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        # (in the latent's dtype, as in the DDPM UNet)
        temb = self.temb(timestep_embedding(t, self.cfg.model_channels).to(z.dtype))
        hs = [self.conv_in(z)]
        for blocks in self.down:
            hs.append(self._run(blocks, hs[-1], temb, context))
        h = self._run(self.mid, hs[-1], temb, context)
        for blocks in self.up:
            if isinstance(blocks[0], ResBlock):
                h = torch.cat([h, hs.pop()], dim=1)
            h = self._run(blocks, h, temb, context)
        return self.conv_out(F.silu(self.norm_out(h)))


class LDMSuperResolution(nn.Module):
    """The trainable latent UNet, a low-res image tokenizer and the frozen autoencoder."""

    def __init__(self, cfg: LDMSRConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.autoencoder = AutoencoderKL(cfg.autoencoder).requires_grad_(False)
        self.lr_tokenizer = nn.Conv2d(3, cfg.context_dim, cfg.context_patch,
                                      stride=cfg.context_patch)
        self.unet = LatentUNet(cfg)

    def context(self, lowres: torch.Tensor) -> torch.Tensor:
        """Tokens of the low-resolution image, [B, tokens, context_dim]."""
        return self.lr_tokenizer(lowres).flatten(2).transpose(1, 2)
