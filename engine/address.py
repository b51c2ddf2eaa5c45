"""Address decoding, one definition for everything outside the numba kernel.

:func:`decode` splits byte addresses into (channel, rank, bank group, bank, row, column)
exactly as the kernel's ``_decode`` does: DRAMsim3's mapping string, then the optional XOR
bank interleave (bank ^= low row bits, bank group ^= the next row bits). The GUI's bank
heatmap and command timeline, the workload generator's open-page statistic and the threaded
simulator's channel split call it rather than re-deriving positions and masks; the numba
kernel keeps its own twin (``engine.kernel._decode``, on the positions and masks the
simulator copies into the configuration vector from the same config properties), and
``tests/test_address.py`` checks the two against each other.
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


FIELDS = ("ch", "ra", "bg", "ba", "ro", "co")


@dataclass(frozen=True)
class Mapping:
    """What decoding needs from a config: the request shift, each field's bit position
    (after the shift) and mask, and the XOR bank interleave. :func:`decode` uses it, and the
    simulator copies it into the kernel's configuration vector for ``kernel._decode``."""

    shift: int
    pos: dict[str, int]
    mask: dict[str, int]
    xor: bool


def mapping(cfg: Any) -> Mapping:
    """The address mapping of ``cfg`` (a MemoryConfig)."""
    pos, mask = cfg.field_positions, cfg.field_masks
    return Mapping(int(cfg.shift_bits), {k: int(pos[k]) for k in FIELDS},
                   {k: int(mask[k]) for k in FIELDS},
                   bool(getattr(cfg, "xor_bank_interleave", False)))


def decode(cfg: Any, addr: Any) -> Fields:
    """The DRAM coordinates of each byte address under ``cfg`` (a MemoryConfig)."""
    m = mapping(cfg)
    a = np.asarray(addr, dtype=np.uint64) >> np.uint64(m.shift)
    pos, mask = m.pos, m.mask

    def field(name: str) -> np.ndarray:
        return ((a >> np.uint64(pos[name])) & np.uint64(mask[name])).astype(np.int64)

    ch, ra, bg, ba, ro, co = (field(n) for n in FIELDS)
    if m.xor:
        ba_mask, bg_mask = mask["ba"], mask["bg"]
        ba = ba ^ (ro & ba_mask)
        bg = bg ^ ((ro >> int(ba_mask).bit_length()) & bg_mask)
    return Fields(ch, ra, bg, ba, ro, co)


def channel(cfg: Any, addr: Any) -> np.ndarray:
    """The channel of each byte address (the XOR interleave never changes it): what
    :func:`decode` gives as ``ch``, without decoding the other fields."""
    m = mapping(cfg)
    a = np.asarray(addr)
    a = a.view(np.uint64) if a.dtype == np.int64 else a.astype(np.uint64)
    return ((a >> np.uint64(m.shift + m.pos["ch"])) & np.uint64(m.mask["ch"])).astype(np.int64)


def bank_index(cfg: Any, addr: Any) -> np.ndarray:
    """Flat bank index (channel, rank, bank group, bank: the engine's per-bank order)."""
    return bank_of(cfg, decode(cfg, addr))


def bank_of(cfg: Any, f: Fields) -> np.ndarray:
    """:func:`bank_index` of fields already decoded."""
    banks = int(cfg.banks)
    bpg = int(cfg.banks_per_group_eff)
    return (f.ch * int(cfg.ranks) + f.ra) * banks + f.bg * bpg + f.ba
