"""Workload models against their papers: parameter counts and FLOPs (built on meta)."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from torch.utils.flop_counter import FlopCounterMode, flop_registry  # noqa: E402

from engine.workloads.capture import PHASE_ID, capture_step  # noqa: E402
from engine.workloads.models.common import count_parameters  # noqa: E402
from engine.workloads.models.dit import DiT, DiTConfig  # noqa: E402
from engine.workloads.registry import build  # noqa: E402

META = torch.device("meta")


@pytest.mark.parametrize("name, published", [
    ("ddpm", 114e6),        # Ho et al. 2020, LSUN 256x256 model
    ("resnet50", 25.6e6),   # He et al. 2016 / torchvision
])
def test_published_parameter_counts(name: str, published: float) -> None:
    _, _, model, _ = build(name, batch=1)
    n = count_parameters(model.net)
    assert abs(n - published) / published < 0.01, n


def test_dit_xl2_parameters_and_flops() -> None:
    with torch.device("meta"):
        model = DiT(DiTConfig.xl2())
    n = count_parameters(model)
    assert abs(n - 675e6) / 675e6 < 0.01, n
    x = torch.empty(1, 4, 32, 32, device=META)
    t = torch.zeros(1, dtype=torch.long, device=META)
    with FlopCounterMode(display=False) as counter:
        model(x, t, t)
    # the DiT paper's "Gflops" are multiply-accumulates: FlopCounterMode counts 2 per MAC
    macs = counter.get_total_flops() / 2
    assert abs(macs - 118.6e9) / 118.6e9 < 0.05, macs


def _registry_flops(op_name: str) -> bool:
    packet = getattr(torch.ops.aten, op_name.split(".")[1], None)
    return packet is not None and packet in flop_registry


@pytest.mark.parametrize("name", ["ddpm", "ldm-sr", "dit-traj", "resnet50"])
def test_forward_flops_agree_with_flop_counter(name: str) -> None:
    _, _, model, inputs = build(name, batch=2, size="tiny")
    with FlopCounterMode(display=False) as counter:
        model(*inputs)
    expected = counter.get_total_flops()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], foreach=False)
    cap = capture_step(model, lambda m: m(*inputs), opt, META)
    forward = sum(op.flops for op in cap.ops
                  if op.phase in (PHASE_ID["forward"], PHASE_ID["attention"])
                  and _registry_flops(op.name))
    assert expected > 0
    assert forward == expected
