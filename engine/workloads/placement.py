"""From the allocator's virtual addresses to the addresses the memory controller decodes.

Two steps, both bijections on the memory's address space, applied to every request after
the allocator (:mod:`engine.workloads.allocator`) has given each storage a virtual address:

1. **Pages** (:class:`PageTable`).  The virtual space is cut into 2 MiB pages (the large
   pages the CUDA driver backs device allocations with); each page the step touches gets a
   physical frame, drawn without replacement from a seeded permutation of all the frames of
   the memory, as a driver handing out free frames does.  Distinct pages never share a frame,
   so two tensors alive at the same time never alias.  If the footprint needs more frames
   than the memory has, :func:`page_table` stops with a :class:`PlacementError` naming both
   sizes -- unless folding is asked for explicitly (``fold=True``, CLI
   ``--fold-addresses``): then page ``p`` takes frame ``perm[p mod frames]`` (aliasing,
   recorded in the trace summary).

2. **GPU address hash** (:class:`GpuAddressHash`, optional, ``address_hash="gpu"``).  A GPU
   does not hand physical addresses to a DRAM controller with a plain bit-field mapping: its
   memory partitions and their banks are selected by XOR hashes of many address bits, so that
   consecutive chunks of a few hundred bytes go to different channels and banks and power-of
   -two strides do not camp on one bank (published reverse engineering of NVIDIA GPUs finds
   XOR functions of row-level bits for partition and bank selection; the exact functions are
   not public).  The engine's controller decodes addresses with the preset's DRAMsim3 field
   mapping (plus its optional ``xor_bank_interleave``, which XORs the bank and bank-group
   fields with the lowest row bits only and never touches the channel).  So the hash is
   applied here, as a transform of the physical address, before the controller's mapping:
   the physical address is decoded with a GPU-style field order (from least significant:
   ``chunk`` = 256 B of the column, then channel, bank group, bank, the rest of the column,
   rank, row), the channel is XORed with a fold of every bit above it and the bank and bank
   group with a fold of the row bits, and the fields are re-encoded at the positions of the
   preset's own mapping, so that the engine's decoder sees exactly the hashed fields.  Every
   field is XORed only with bits of other fields that are themselves left unchanged (or are
   restored first), so the transform is invertible: no two addresses collide.

The identity placement (``pages="identity"``) keeps the allocator's addresses, as before
these models existed, for before/after comparisons.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.errors import DiffMemError

PAGE_BYTES = 2 * 1024 * 1024
#: Bytes of consecutive column that stay in one channel and bank under the GPU hash.
GPU_CHUNK_BYTES = 256
HASHES = ("none", "gpu")


class PlacementError(DiffMemError):
    """The step's footprint does not fit the memory (and folding was not asked for)."""


@dataclass
class PageTable:
    """Frame of every 2 MiB virtual page the step uses."""

    frames: np.ndarray            # int64 frame index per virtual page
    page_bytes: int
    folded: bool                  # more pages than frames: pages share frames (aliasing)
    identity: bool = False

    def translate(self, lines: np.ndarray, line_bytes: int) -> np.ndarray:
        """Physical line numbers of virtual ``lines`` (int64)."""
        if self.identity:
            return lines
        per = self.page_bytes // line_bytes
        page = lines // per
        return self.frames[page] * per + (lines - page * per)


def page_table(footprint_bytes: int, capacity_bytes: int, seed: int, *, fold: bool = False,
               identity: bool = False, memory_name: str = "the memory",
               page_bytes: int = PAGE_BYTES) -> PageTable:
    """Frames for the pages of a ``footprint_bytes`` virtual space (see the module docstring).

    Raises:
        PlacementError: the footprint needs more frames than ``capacity_bytes`` holds and
            ``fold`` is False.
    """
    n_frames = max(1, capacity_bytes // page_bytes)
    n_pages = max(1, -(-footprint_bytes // page_bytes))
    if n_pages > n_frames and not fold:
        raise PlacementError(
            f"the training step needs {footprint_bytes / 1e9:.3g} GB of device memory "
            f"({n_pages} pages of {page_bytes // 2**20} MiB) but {memory_name} holds "
            f"{capacity_bytes / 1e9:.3g} GB ({n_frames} pages): choose a larger memory "
            "preset (e.g. DDR4-3200-8ch, 128 GB), a smaller batch or model, or pass "
            "--fold-addresses to fold the addresses into the capacity (tensors then alias)")
    if identity:
        return PageTable(np.arange(n_pages, dtype=np.int64), page_bytes,
                         n_pages > n_frames, identity=True)
    rng = np.random.default_rng([seed, 0x9A6E])
    if n_pages <= n_frames:
        frames = rng.choice(n_frames, size=n_pages, replace=False).astype(np.int64)
    else:
        perm = rng.permutation(n_frames).astype(np.int64)
        frames = perm[np.arange(n_pages) % n_frames]
    return PageTable(frames, page_bytes, n_pages > n_frames)


def _fold(x: np.ndarray, width: int) -> np.ndarray:
    """XOR of the ``width``-bit groups of ``x`` (0 for width 0)."""
    if width <= 0:
        return np.zeros_like(x)
    mask = (1 << width) - 1
    out = np.zeros_like(x)
    y = x.copy()
    while np.any(y):
        out ^= y & mask
        y >>= width
    return out


class GpuAddressHash:
    """The GPU-style address hash for one memory config (see the module docstring)."""

    def __init__(self, cfg) -> None:
        self.shift = int(cfg.shift_bits)
        w = dict(cfg.field_widths)
        self.pos = dict(cfg.field_positions)
        self.w = w
        chunk = max(0, min(w["co"], int(np.log2(max(GPU_CHUNK_BYTES >> self.shift, 1)))))
        self.co_lo = chunk
        self.co_hi = w["co"] - chunk
        # GPU field order from the least significant bit (after the request shift)
        order = [("co_lo", self.co_lo), ("ch", w["ch"]), ("bg", w["bg"]), ("ba", w["ba"]),
                 ("co_hi", self.co_hi), ("ra", w["ra"]), ("ro", w["ro"])]
        self.gpos: dict[str, int] = {}
        p = 0
        for name, width in order:
            self.gpos[name] = p
            p += width
        self.gwidth = dict(order)
        self.total_bits = p

    def _get(self, a: np.ndarray, name: str) -> np.ndarray:
        return (a >> self.gpos[name]) & ((1 << self.gwidth[name]) - 1)

    def apply(self, addr: np.ndarray) -> np.ndarray:
        """Hashed byte addresses (uint64 in, uint64 out) of physical byte addresses."""
        a = addr.astype(np.int64)
        low = a & ((1 << self.shift) - 1)
        a = a >> self.shift
        f = {n: self._get(a, n) for n in self.gwidth}
        ro, ra, co_hi = f["ro"], f["ra"], f["co_hi"]
        bg = f["bg"] ^ _fold(ro, self.w["bg"])
        ba = f["ba"] ^ _fold(ro >> self.w["bg"], self.w["ba"]) if self.w["ba"] else f["ba"]
        above = (((ro << self.w["ra"]) | ra) << self.co_hi | co_hi)
        above = (above << self.w["ba"] | f["ba"]) << self.w["bg"] | f["bg"]
        ch = f["ch"] ^ _fold(above, self.w["ch"])
        co = (co_hi << self.co_lo) | f["co_lo"]
        out = ((ch << self.pos["ch"]) | (ra << self.pos["ra"]) | (bg << self.pos["bg"])
               | (ba << self.pos["ba"]) | (ro << self.pos["ro"]) | (co << self.pos["co"]))
        return ((out << self.shift) | low).astype(np.uint64)

    def invert(self, addr: np.ndarray) -> np.ndarray:
        """Physical byte addresses of hashed ones: ``invert(apply(a)) == a`` (uint64)."""
        a = addr.astype(np.int64)
        low = a & ((1 << self.shift) - 1)
        a = a >> self.shift
        w = self.w
        f = {n: (a >> self.pos[n]) & ((1 << w[n]) - 1) for n in ("ch", "ra", "bg", "ba", "ro",
                                                                  "co")}
        ro, ra, co = f["ro"], f["ra"], f["co"]
        co_hi, co_lo = co >> self.co_lo, co & ((1 << self.co_lo) - 1)
        bg = f["bg"] ^ _fold(ro, w["bg"])
        ba = f["ba"] ^ _fold(ro >> w["bg"], w["ba"]) if w["ba"] else f["ba"]
        above = (((ro << w["ra"]) | ra) << self.co_hi | co_hi)
        above = (above << w["ba"] | ba) << w["bg"] | bg
        ch = f["ch"] ^ _fold(above, w["ch"])
        g = self.gpos
        out = ((co_lo << g["co_lo"]) | (ch << g["ch"]) | (bg << g["bg"]) | (ba << g["ba"])
               | (co_hi << g["co_hi"]) | (ra << g["ra"]) | (ro << g["ro"]))
        return ((out << self.shift) | low).astype(np.uint64)


def geometry(cfg) -> dict:
    """What a placement depends on in a memory config: request size, field widths, the
    field positions (the hash re-encodes at them) and the capacity."""
    return {"shift_bits": int(cfg.shift_bits),
            "field_widths": {k: int(v) for k, v in dict(cfg.field_widths).items()},
            "field_positions": {k: int(v) for k, v in dict(cfg.field_positions).items()},
            "capacity_bytes": int(cfg.capacity_bytes)}


def same_device(a: dict, b: dict) -> bool:
    """Whether a trace placed for geometry ``a`` replays as placed on geometry ``b``: same
    request size, field widths and capacity.  Field positions (the controller's address
    mapping) may differ: a mapping what-if re-decodes the same physical addresses."""
    return (a["shift_bits"] == b["shift_bits"] and a["field_widths"] == b["field_widths"]
            and a["capacity_bytes"] == b["capacity_bytes"])


class _Geometry:
    """A stand-in config for :class:`GpuAddressHash` from a stored :func:`geometry`."""

    def __init__(self, g: dict) -> None:
        self.shift_bits = g["shift_bits"]
        self.field_widths = g["field_widths"]
        self.field_positions = g["field_positions"]
        self.capacity_bytes = g["capacity_bytes"]


def hash_for(g: dict) -> GpuAddressHash:
    """The GPU hash of a stored :func:`geometry`."""
    return GpuAddressHash(_Geometry(g))
