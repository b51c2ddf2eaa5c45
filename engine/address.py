"""Address decoding, one definition for everything outside the numba kernel.

:func:`decode` splits byte addresses into (channel, rank, bank group, bank, row, column)
exactly as the kernel's ``_decode`` does: DRAMsim3's mapping string, then the optional XOR
bank interleave (bank ^= low row bits, bank group ^= the next row bits). The GUI's bank
heatmap and the workload tools should call it rather than re-deriving positions and masks;
``tests/test_address.py`` checks it against the kernel's decoder.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Fields:
    ch: np.ndarray
    ra: np.ndarray
    bg: np.ndarray
    ba: np.ndarray
    ro: np.ndarray
    co: np.ndarray


def decode(cfg: Any, addr: Any) -> Fields:
    """The DRAM coordinates of each byte address under ``cfg`` (a MemoryConfig)."""
    a = np.asarray(addr, dtype=np.uint64) >> np.uint64(cfg.shift_bits)
    pos, mask = cfg.field_positions, cfg.field_masks

    def field(name: str) -> np.ndarray:
        return ((a >> np.uint64(pos[name])) & np.uint64(mask[name])).astype(np.int64)

    ch, ra, bg, ba, ro, co = (field(n) for n in ("ch", "ra", "bg", "ba", "ro", "co"))
    if getattr(cfg, "xor_bank_interleave", False):
        ba_mask, bg_mask = mask["ba"], mask["bg"]
        ba = ba ^ (ro & ba_mask)
        bg = bg ^ ((ro >> int(ba_mask).bit_length()) & bg_mask)
    return Fields(ch, ra, bg, ba, ro, co)


def bank_index(cfg: Any, addr: Any) -> np.ndarray:
    """Flat bank index (channel, rank, bank group, bank: the engine's per-bank order)."""
    f = decode(cfg, addr)
    banks = int(cfg.banks)
    bpg = int(cfg.banks_per_group_eff)
    return (f.ch * int(cfg.ranks) + f.ra) * banks + f.bg * bpg + f.ba
