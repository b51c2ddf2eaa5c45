"""On-chip cache filter: a set-associative, write-back, LRU cache of 64-byte lines.

It sits between the expanded request stream and DRAM: read hits vanish, read misses go to
DRAM (and allocate), writes allocate without a fetch (kernels write whole lines) and reach
DRAM only when a dirty line is evicted or the cache is flushed at the end of the step.  The
default is an A100-class L2: 40 MB, 16 ways.  ``size_bytes = 0`` disables the filter: every
request goes to DRAM.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from engine.workloads.expand import LINE_BYTES

DEFAULT_CACHE_BYTES = 40 * 1024 * 1024
DEFAULT_WAYS = 16


@dataclass
class Filtered:
    """Requests that reach DRAM, with the index of the request that caused each."""

    lines: np.ndarray          # int64
    is_write: np.ndarray       # bool
    role: np.ndarray           # uint8
    phase: np.ndarray          # uint8
    op: np.ndarray             # uint32
    source: np.ndarray         # int64 index into the input request slice (0 for a flush)

    def __getitem__(self, index: np.ndarray) -> Filtered:
        return Filtered(self.lines[index], self.is_write[index], self.role[index],
                        self.phase[index], self.op[index], self.source[index])


@njit(cache=True, nogil=True)
def _filter(lines: np.ndarray, is_write: np.ndarray, roles: np.ndarray, phase: int, op: int,
            tags: np.ndarray, dirty: np.ndarray, stamp: np.ndarray, line_role: np.ndarray,
            clock: np.ndarray,
            out_lines: np.ndarray, out_write: np.ndarray, out_role: np.ndarray,
            out_phase: np.ndarray, out_op: np.ndarray, out_src: np.ndarray) -> int:
    sets, ways = tags.shape
    n_out = 0
    t = clock[0]
    for i in range(lines.shape[0]):
        line = lines[i]
        s = line % sets
        t += 1
        hit = -1
        invalid = -1
        lru = -1
        lru_t = 0
        for w in range(ways):
            tag = tags[s, w]
            if tag == line:
                hit = w
                break
            if tag < 0:
                if invalid < 0:
                    invalid = w
            elif lru < 0 or stamp[s, w] < lru_t:
                lru = w
                lru_t = stamp[s, w]
        victim = invalid if invalid >= 0 else lru
        if hit >= 0:
            stamp[s, hit] = t
            if is_write[i]:
                dirty[s, hit] = True
                line_role[s, hit] = roles[i]
            continue
        if tags[s, victim] >= 0 and dirty[s, victim]:
            out_lines[n_out] = tags[s, victim]
            out_write[n_out] = True
            out_role[n_out] = line_role[s, victim]
            out_phase[n_out] = phase
            out_op[n_out] = op
            out_src[n_out] = i
            n_out += 1
        tags[s, victim] = line
        stamp[s, victim] = t
        dirty[s, victim] = is_write[i]
        line_role[s, victim] = roles[i]
        if not is_write[i]:
            out_lines[n_out] = line
            out_write[n_out] = False
            out_role[n_out] = roles[i]
            out_phase[n_out] = phase
            out_op[n_out] = op
            out_src[n_out] = i
            n_out += 1
    clock[0] = t
    return n_out


class CacheFilter:
    """Keeps the cache state across calls; feed requests in issue order."""

    def __init__(self, size_bytes: int = DEFAULT_CACHE_BYTES, ways: int = DEFAULT_WAYS) -> None:
        if size_bytes < 0 or ways <= 0:
            raise ValueError(f"cache of {size_bytes} bytes, {ways} ways: expected a size >= 0 "
                             "and at least one way")
        self.size_bytes = size_bytes
        sets = size_bytes // (LINE_BYTES * ways)
        self.enabled = sets > 0
        self.tags = np.full((max(sets, 1), ways), -1, np.int64)
        self.dirty = np.zeros((max(sets, 1), ways), np.bool_)
        self.stamp = np.zeros((max(sets, 1), ways), np.int64)
        self.line_role = np.zeros((max(sets, 1), ways), np.uint8)
        self.clock = np.zeros(1, np.int64)

    def filter(self, lines: np.ndarray, is_write: np.ndarray, role: np.ndarray, phase: int,
               op: int) -> Filtered:
        """The requests of this slice (all of operator ``op``, in ``phase``) that reach DRAM,
        in order.  A write-back is tagged with the role of the data it writes and with the
        phase and operator during which it happens (the access that evicted the line)."""
        n = lines.shape[0]
        if not self.enabled:
            return Filtered(lines, is_write, role, np.full(n, phase, np.uint8),
                            np.full(n, op, np.uint32), np.arange(n, dtype=np.int64))
        out_l = np.empty(2 * n, np.int64)
        out_w = np.empty(2 * n, np.bool_)
        out_r = np.empty(2 * n, np.uint8)
        out_p = np.empty(2 * n, np.uint8)
        out_o = np.empty(2 * n, np.uint32)
        out_s = np.empty(2 * n, np.int64)
        k = _filter(lines, is_write, role, phase, op, self.tags, self.dirty, self.stamp,
                    self.line_role, self.clock,
                    out_l, out_w, out_r, out_p, out_o, out_s)
        return Filtered(out_l[:k], out_w[:k], out_r[:k], out_p[:k], out_o[:k], out_s[:k])

    def flush(self, phase: int, op: int) -> Filtered:
        """Write back every dirty line (in address order, tagged ``phase`` and ``op``) and
        empty the cache."""
        mask = (self.tags >= 0) & self.dirty if self.enabled else np.zeros((0, 0), np.bool_)
        lines = self.tags[mask] if self.enabled else np.empty(0, np.int64)
        order = np.argsort(lines, kind="stable")
        n = lines.shape[0]
        out = Filtered(lines[order], np.ones(n, np.bool_),
                       self.line_role[mask][order] if n else np.empty(0, np.uint8),
                       np.full(n, phase, np.uint8), np.full(n, op, np.uint32),
                       np.zeros(n, np.int64))
        self.tags.fill(-1)
        self.dirty.fill(False)
        return out
