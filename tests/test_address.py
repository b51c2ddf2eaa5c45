"""engine.address.decode is the kernel's decoder (XOR bank interleave included)."""
from __future__ import annotations

import numpy as np
import pytest

from engine import kernel as K
from engine.address import bank_index, decode
from engine.config import load_preset
from engine.simulator import Simulator


@pytest.mark.parametrize("preset", ["DDR4-3200", "HBM2", "DDR5-3200AN", "LPDDR5-6400"])
@pytest.mark.parametrize("xor", [False, True])
def test_decode_matches_the_kernel(preset: str, xor: bool) -> None:
    cfg = load_preset(preset).replace(xor_bank_interleave=xor)
    sim = Simulator(cfg)
    try:
        P = sim.P
    finally:
        sim.close()
    rng = np.random.default_rng(3)
    addr = rng.integers(0, cfg.capacity_bytes, 400, dtype=np.int64)
    f = decode(cfg, addr)
    for i, a in enumerate(addr):
        ch, ra, bg, ba, ro, co = K._decode(P, np.int64(a))
        assert (f.ch[i], f.ra[i], f.bg[i], f.ba[i], f.ro[i], f.co[i]) == (ch, ra, bg, ba, ro, co)
    idx = bank_index(cfg, addr)
    assert idx.max() < cfg.channels * cfg.ranks * cfg.banks


def test_gui_heatmap_uses_the_xor_interleave() -> None:
    from gui.cosim_process import bank_index as gui_bank_index
    cfg = load_preset("DDR4-3200").replace(xor_bank_interleave=True)
    addr = np.arange(0, 1 << 24, 4096, dtype=np.int64)
    assert (gui_bank_index(cfg, addr) == bank_index(cfg, addr)).all()
    plain = load_preset("DDR4-3200")
    assert (gui_bank_index(plain, addr) != bank_index(cfg, addr)).any()
