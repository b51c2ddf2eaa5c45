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


@pytest.mark.parametrize("preset", ["DDR4-3200", "HBM2"])
def test_channel_is_the_decoders_channel(preset: str) -> None:
    from engine.address import channel
    cfg = load_preset(preset).replace(xor_bank_interleave=True)
    addr = np.random.default_rng(5).integers(0, cfg.capacity_bytes, 2000, dtype=np.int64)
    ch = channel(cfg, addr)
    assert (ch == decode(cfg, addr).ch).all()
    assert (channel(cfg, addr.astype(np.uint64)) == ch).all()
    assert len(np.unique(ch)) == cfg.channels


def _in_order_hits(bank: np.ndarray, row: np.ndarray) -> int:
    open_row: dict[int, int] = {}
    hits = 0
    for b, r in zip(bank.tolist(), row.tolist()):
        hits += open_row.get(b, -1) == r
        open_row[b] = r
    return hits


@pytest.mark.parametrize("xor", [False, True])
def test_workload_open_page_hits_use_the_engines_banks(xor: bool) -> None:
    """The workload generator's in-order open-page statistic counts per bank as the kernel
    decodes it: with the XOR interleave, two rows of one un-XORed bank are two banks."""
    from engine.workloads.generate import _Stats
    cfg = load_preset("DDR4-3200").replace(xor_bank_interleave=xor)
    pos, sh = cfg.field_positions, cfg.shift_bits
    # rows 1 and 2 of the same un-XORed bank, alternating: under XOR they land in two banks
    a1 = (1 << (pos["ro"] + sh)) | (3 << (pos["co"] + sh))
    a2 = (2 << (pos["ro"] + sh)) | (5 << (pos["co"] + sh))
    addr = np.array([a1, a2] * 20, np.int64)
    st = _Stats(int(cfg.columns_eff * cfg.bus_width // 8), cfg)
    n = addr.shape[0]
    st.add_open_page(addr, np.zeros(n, np.int64), np.zeros(n, np.int64))
    f = decode(cfg, addr)
    want = _in_order_hits(bank_index(cfg, addr), f.ro)
    assert int(st.open_hits.sum()) == want
    assert int(st.open_reqs.sum()) == n
    assert want == (n - 2 if xor else 0)
