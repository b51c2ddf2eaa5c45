"""The training workloads a trace can be generated for, and their training steps.

Each :class:`Workload` builds its model on a device (``meta`` for tracing) and a training
step: a function computing the loss of one batch.  The diffusion workloads train with the
usual noise-prediction objective (sample t, noise the input, predict the noise, MSE); the CNN
baseline with cross-entropy.  Sizes come from the published configurations (``size="paper"``)
or tiny ones for tests (``size="tiny"``); either can be overridden field by field.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import nn
from torch.nn import functional as F

from engine.errors import DiffMemError
from engine.workloads.models.ddpm import DDPMConfig, DDPMUNet
from engine.workloads.models.dit import TrajDiTConfig, TrajectoryDiT
from engine.workloads.models.ldm_sr import AutoencoderConfig, LDMSRConfig, LDMSuperResolution
from engine.workloads.models.resnet import ResNet, ResNetConfig

DIFFUSION_STEPS = 1000


class WorkloadError(DiffMemError):
    """A workload request that cannot be built (unknown name, bad batch or resolution)."""


def _linear_alphas_cumprod(device: torch.device) -> torch.Tensor:
    betas = torch.linspace(1e-4, 0.02, DIFFUSION_STEPS, dtype=torch.float32)
    return torch.cumprod(1.0 - betas, dim=0).to(device)


class _NoiseSchedule(nn.Module):
    """Holds the cumulative alphas as a buffer and noises a clean sample."""

    def __init__(self, device: torch.device) -> None:
        super().__init__()
        self.register_buffer("alphas_cumprod", _linear_alphas_cumprod(device))

    def noise(self, x0: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        b = x0.shape[0]
        t = torch.randint(0, DIFFUSION_STEPS, (b,), device=x0.device)
        eps = torch.randn_like(x0)
        ab = self.alphas_cumprod[t].reshape(b, *([1] * (x0.dim() - 1))).to(x0.dtype)
        return ab.sqrt() * x0 + (1.0 - ab).sqrt() * eps, t, eps


class DDPMTraining(nn.Module):
    def __init__(self, cfg: DDPMConfig, device: torch.device) -> None:
        super().__init__()
        self.net = DDPMUNet(cfg)
        self.schedule = _NoiseSchedule(device)

    def forward(self, x0: torch.Tensor) -> torch.Tensor:
        xt, t, eps = self.schedule.noise(x0)
        return F.mse_loss(self.net(xt, t), eps)


class LDMSRTraining(nn.Module):
    def __init__(self, cfg: LDMSRConfig, device: torch.device) -> None:
        super().__init__()
        self.model = LDMSuperResolution(cfg)
        self.schedule = _NoiseSchedule(device)

    def forward(self, hr: torch.Tensor, lr: torch.Tensor) -> torch.Tensor:
        ae = self.model.autoencoder
        with torch.no_grad():
            z0 = ae.encode(hr)
        zt, t, eps = self.schedule.noise(z0)
        eps_hat = self.model.unet(zt, t, self.model.context(lr))
        loss = F.mse_loss(eps_hat, eps)
        with torch.no_grad():           # decode the predicted clean latent (for the SR output)
            b = z0.shape[0]
            ab = self.schedule.alphas_cumprod[t].reshape(b, 1, 1, 1)
            ae.decode((zt - (1.0 - ab).sqrt() * eps_hat) / ab.sqrt())
        return loss


class TrajDiTTraining(nn.Module):
    def __init__(self, cfg: TrajDiTConfig, device: torch.device) -> None:
        super().__init__()
        self.net = TrajectoryDiT(cfg)
        self.schedule = _NoiseSchedule(device)

    def forward(self, future: torch.Tensor, past: torch.Tensor) -> torch.Tensor:
        xt, t, eps = self.schedule.noise(future)
        return F.mse_loss(self.net(xt, t, past), eps)


class ResNetTraining(nn.Module):
    def __init__(self, cfg: ResNetConfig) -> None:
        super().__init__()
        self.net = ResNet(cfg)

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(self.net(x), labels)


@dataclass(frozen=True)
class Workload:
    """A named training workload."""

    name: str
    description: str
    default_resolution: int | None          # None: not an image workload
    make_config: Callable[[str, int | None, dict[str, Any]], Any]
    make_model: Callable[[Any, torch.device], nn.Module]
    make_inputs: Callable[[Any, int, torch.device, torch.dtype], tuple[torch.Tensor, ...]]
    downsampling: Callable[[Any], int]


def _replace(cfg: Any, overrides: dict[str, Any]) -> Any:
    names = {f.name for f in dataclasses.fields(cfg)}
    bad = sorted(set(overrides) - names)
    if bad:
        raise WorkloadError(f"unknown model setting(s) {', '.join(bad)}: expected some of "
                            f"{', '.join(sorted(names))}")
    return dataclasses.replace(cfg, **overrides)


def _ddpm_config(size: str, resolution: int | None, ov: dict[str, Any]) -> DDPMConfig:
    cfg = DDPMConfig.lsun256()
    if size == "tiny":
        cfg = DDPMConfig(resolution=16, ch=16, ch_mult=(1, 2), num_res_blocks=1,
                         attn_resolutions=(8,))
    if resolution is not None:
        cfg = dataclasses.replace(cfg, resolution=resolution)
    return _replace(cfg, ov)


def _ldm_config(size: str, resolution: int | None, ov: dict[str, Any]) -> LDMSRConfig:
    cfg = LDMSRConfig()
    if size == "tiny":
        cfg = LDMSRConfig(resolution=32, model_channels=16, ch_mult=(1, 2), num_res_blocks=1,
                          attn_levels=(1,), head_channels=8, context_dim=16, context_patch=2,
                          autoencoder=AutoencoderConfig(ch=8, ch_mult=(1, 2),
                                                        num_res_blocks=1))
    if resolution is not None:
        cfg = dataclasses.replace(cfg, resolution=resolution)
    return _replace(cfg, ov)


def _traj_config(size: str, resolution: int | None, ov: dict[str, Any]) -> TrajDiTConfig:
    cfg = TrajDiTConfig()
    if size == "tiny":
        cfg = TrajDiTConfig(agents=4, past_steps=3, future_steps=8, steps_per_token=4,
                            hidden=32, depth=2, heads=2)
    return _replace(cfg, ov)


def _resnet_config(size: str, resolution: int | None, ov: dict[str, Any]) -> ResNetConfig:
    cfg = ResNetConfig.resnet50()
    if size == "tiny":
        cfg = ResNetConfig(layers=(1, 1), width=8, num_classes=10, resolution=32)
    if resolution is not None:
        cfg = dataclasses.replace(cfg, resolution=resolution)
    return _replace(cfg, ov)


def _image(cfg: Any, batch: int, device: torch.device, dtype: torch.dtype,
           channels: int = 3) -> torch.Tensor:
    return torch.empty(batch, channels, cfg.resolution, cfg.resolution, device=device,
                       dtype=dtype)


WORKLOADS: dict[str, Workload] = {
    "ddpm": Workload(
        "ddpm", "DDPM UNet image generation (LSUN 256x256 configuration, 114M parameters)",
        256, _ddpm_config, lambda c, d: DDPMTraining(c, d),
        lambda c, b, d, dt: (_image(c, b, d, dt),), lambda c: c.downsampling),
    "ldm-sr": Workload(
        "ldm-sr", "latent-diffusion 4x super-resolution: KL autoencoder + cross-attention UNet",
        256, _ldm_config, lambda c, d: LDMSRTraining(c, d),
        lambda c, b, d, dt: (_image(c, b, d, dt),
                             torch.empty(b, 3, c.resolution // c.sr_factor,
                                         c.resolution // c.sr_factor, device=d, dtype=dt)),
        lambda c: max(c.downsampling, c.sr_factor * c.context_patch)),
    "dit-traj": Workload(
        "dit-traj", "diffusion transformer (adaLN-Zero) denoising agent trajectories",
        None, _traj_config, lambda c, d: TrajDiTTraining(c, d),
        lambda c, b, d, dt: (torch.empty(b, c.agents, c.future_steps, c.state_dim, device=d,
                                         dtype=dt),
                             torch.empty(b, c.agents, c.past_steps, c.state_dim, device=d,
                                         dtype=dt)),
        lambda c: 1),
    "resnet50": Workload(
        "resnet50", "ResNet-50 image classification (CNN baseline, 25.6M parameters)",
        224, _resnet_config, lambda c, d: ResNetTraining(c),
        lambda c, b, d, dt: (_image(c, b, d, dt),
                             torch.empty(b, dtype=torch.long, device=d)),
        lambda c: c.downsampling),
}


def get_workload(name: str) -> Workload:
    """The workload called ``name``; a :class:`WorkloadError` lists the known ones."""
    try:
        return WORKLOADS[name]
    except KeyError:
        raise WorkloadError(f"unknown workload {name!r}: expected one of "
                            f"{', '.join(WORKLOADS)}") from None


#: the largest batch and image side a step is traced at (beyond, torch's shape arithmetic
#: overflowed: a batch of 10^20 or a side of 100,000 crashed inside the model's build)
MAX_BATCH = 1 << 16
MAX_RESOLUTION = 1 << 13


def build(name: str, *, batch: int, resolution: int | None = None, size: str = "paper",
          overrides: dict[str, Any] | None = None, device: str | torch.device = "meta",
          dtype: torch.dtype = torch.float32
          ) -> tuple[Workload, Any, nn.Module, tuple[torch.Tensor, ...]]:
    """Check the request and build (workload, model config, training module, inputs)."""
    wl = get_workload(name)
    if size not in ("paper", "tiny"):
        raise WorkloadError(f"unknown model size {size!r}: expected 'paper' or 'tiny'")
    if isinstance(batch, bool) or not isinstance(batch, int) or not 0 < batch <= MAX_BATCH:
        raise WorkloadError(f"batch size {batch!r}: expected a positive integer up to "
                            f"{MAX_BATCH}")
    if resolution is not None and wl.default_resolution is None:
        raise WorkloadError(f"workload {name!r} takes no resolution (it is not an image "
                            "model); leave --resolution out")
    if resolution is not None and (isinstance(resolution, bool)
                                   or not 0 < resolution <= MAX_RESOLUTION):
        raise WorkloadError(f"resolution {resolution!r}: expected a positive integer up to "
                            f"{MAX_RESOLUTION}")
    cfg = wl.make_config(size, resolution, dict(overrides or {}))
    factor = wl.downsampling(cfg)
    if wl.default_resolution is not None and cfg.resolution % factor:
        raise WorkloadError(f"resolution {cfg.resolution} is not a multiple of {factor}, the "
                            f"downsampling factor of the {name} model: expected e.g. "
                            f"{max(factor, cfg.resolution // factor * factor)}")
    dev = torch.device(device)
    with torch.device(dev):
        model = wl.make_model(cfg, dev)
    model = model.to(device=dev)
    if dtype != torch.float32:
        model = model.to(dtype=dtype)
    inputs = wl.make_inputs(cfg, batch, dev, dtype)
    return wl, cfg, model, inputs
