"""Place the captured storages in a simulated device address space.

A model of PyTorch's CUDA caching allocator, reduced to what shapes the addresses DRAM sees:

* every block is rounded up to ``alignment`` bytes (512, as the caching allocator does);
* persistent storages (weights, parameter gradients, optimizer moments) are laid out first,
  one after the other from address 0, as they are after the first training step;
* every other storage lives from the first operator that touches it to the last one; when it
  dies its block returns to a free list, adjacent free blocks merge, and a new storage takes
  the smallest free block that fits (best fit), splitting off the rest; when none fits the
  arena grows.

The result is a base address per storage and the peak footprint.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from engine.workloads.capture import Capture

ALIGNMENT = 512


def _round_up(n: int, a: int) -> int:
    return max(a, (n + a - 1) // a * a)


@dataclass
class Placement:
    """Where each storage lives."""

    base: np.ndarray                  # int64 byte address per storage
    persistent_bytes: int             # size of the static region
    peak_bytes: int                   # highest address in use + 1 (the footprint)


class BestFitArena:
    """Best-fit free-list allocator with block splitting and coalescing."""

    def __init__(self, start: int, alignment: int = ALIGNMENT) -> None:
        self.alignment = alignment
        self.top = start
        self.free_by_size: list[tuple[int, int]] = []     # (size, addr), sorted
        self.free_by_addr: dict[int, int] = {}            # addr -> size
        self.free_end: dict[int, int] = {}                # end addr -> start addr
        self.peak = start

    def _remove_free(self, addr: int, size: int) -> None:
        i = bisect.bisect_left(self.free_by_size, (size, addr))
        del self.free_by_size[i]
        del self.free_by_addr[addr]
        del self.free_end[addr + size]

    def _add_free(self, addr: int, size: int) -> None:
        bisect.insort(self.free_by_size, (size, addr))
        self.free_by_addr[addr] = size
        self.free_end[addr + size] = addr

    def malloc(self, nbytes: int) -> tuple[int, int]:
        """(address, block size) of a new block of at least ``nbytes`` bytes."""
        size = _round_up(nbytes, self.alignment)
        i = bisect.bisect_left(self.free_by_size, (size, -1))
        if i < len(self.free_by_size):
            fsize, addr = self.free_by_size[i]
            self._remove_free(addr, fsize)
            if fsize > size:
                self._add_free(addr + size, fsize - size)
            return addr, size
        addr = self.top
        self.top += size
        self.peak = max(self.peak, self.top)
        return addr, size

    def free(self, addr: int, size: int) -> None:
        """Return a block; it merges with free neighbours (and shrinks the arena at the top)."""
        nxt = self.free_by_addr.get(addr + size)
        if nxt is not None:
            self._remove_free(addr + size, nxt)
            size += nxt
        prev = self.free_end.get(addr)
        if prev is not None:
            psize = self.free_by_addr[prev]
            self._remove_free(prev, psize)
            addr, size = prev, size + psize
        if addr + size == self.top:
            self.top = addr
        else:
            self._add_free(addr, size)


def place(capture: Capture, alignment: int = ALIGNMENT) -> Placement:
    """Give every storage of ``capture`` a base address (see the module docstring)."""
    n = len(capture.storages)
    base = np.full(n, -1, np.int64)
    addr = 0
    for s in capture.storages:
        if s.persistent:
            base[s.index] = addr
            addr += _round_up(s.nbytes, alignment)
    persistent = addr
    arena = BestFitArena(persistent, alignment)
    n_ops = len(capture.ops)
    born: list[list[int]] = [[] for _ in range(n_ops)]
    dies: list[list[int]] = [[] for _ in range(n_ops)]
    for s in capture.storages:
        if not s.persistent and s.first_op >= 0:
            born[s.first_op].append(s.index)
            dies[s.last_op].append(s.index)
    sizes = {}
    for i in range(n_ops):
        for k in born[i]:
            base[k], sizes[k] = arena.malloc(capture.storages[k].nbytes)
        for k in dies[i]:
            arena.free(int(base[k]), sizes.pop(k))
    base[base < 0] = 0                # storages no operator touched
    return Placement(base, persistent, max(arena.peak, persistent))
