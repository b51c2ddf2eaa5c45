"""On-chip cache filter: a sectored, set-associative, write-back, LRU cache (A100-class L2).

It sits between the expanded request stream and DRAM.  Policy (the A100's L2 as NVIDIA
describes it: 128-byte lines of four 32-byte sectors, write-back, sector-granular fills):

* a line holds ``line_bytes`` (128) of address space with a tag, per-sector valid and dirty
  bits and an LRU stamp; a set holds ``ways`` (16) lines;
* a read whose sectors are valid hits; a read of a line that is present but whose sectors
  are not is a *sector miss*: only those sectors are fetched from DRAM; a read of an absent
  line allocates it (evicting the set's least recently used line) and fetches only the
  requested sectors -- never the whole 128-byte line;
* a write allocates without a fetch (kernels write whole sectors) and marks its sectors
  dirty; dirty sectors reach DRAM only when their line is evicted, or at the end of the step;
* the end-of-step write-back empties the cache in eviction order: least recently used line
  first, as the next step's traffic would push the lines out -- not sorted by address.

The trace's requests are 64 bytes (the DRAM burst of the presets), so a request covers two
sectors and they move together: the model tracks validity and dirtiness per 64-byte half
line, which is per-sector tracking at the granularity requests have.  ``line_bytes = 64``
gives a plain 64-byte-line cache (one request per line).  The default is 40 MB, 16 ways.
``size_bytes = 0`` disables the filter: every request goes to DRAM.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from engine.workloads.expand import LINE_BYTES

DEFAULT_CACHE_BYTES = 40 * 1024 * 1024
DEFAULT_WAYS = 16
DEFAULT_LINE_BYTES = 128
SECTOR_BYTES = 32


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
            halves: int, tags: np.ndarray, valid: np.ndarray, dirty: np.ndarray,
            stamp: np.ndarray, line_role: np.ndarray, clock: np.ndarray,
            out_lines: np.ndarray, out_write: np.ndarray, out_role: np.ndarray,
            out_phase: np.ndarray, out_op: np.ndarray, out_src: np.ndarray,
            counts: np.ndarray, outcome: np.ndarray) -> int:
    """counts[0] += accesses that hit, counts[1] += sector misses of a present line;
    outcome[i] = 1 (hit), 2 (sector miss) or 0 (line miss) for input i."""
    sets, ways = tags.shape
    n_out = 0
    t = clock[0]
    for i in range(lines.shape[0]):
        tag = lines[i] // halves
        bit = np.uint8(1 << (lines[i] - tag * halves))
        s = tag % sets
        t += 1
        hit = -1
        invalid = -1
        lru = -1
        lru_t = 0
        for w in range(ways):
            tg = tags[s, w]
            if tg == tag:
                hit = w
                break
            if tg < 0:
                if invalid < 0:
                    invalid = w
            elif lru < 0 or stamp[s, w] < lru_t:
                lru = w
                lru_t = stamp[s, w]
        if hit >= 0:
            stamp[s, hit] = t
            if is_write[i]:
                valid[s, hit] |= bit
                dirty[s, hit] |= bit
                line_role[s, hit] = roles[i]
                counts[0] += 1
                outcome[i] = 1
            elif valid[s, hit] & bit:
                counts[0] += 1
                outcome[i] = 1
            else:                                  # sector miss: fetch just these sectors
                valid[s, hit] |= bit
                counts[1] += 1
                outcome[i] = 2
                out_lines[n_out] = lines[i]
                out_write[n_out] = False
                out_role[n_out] = roles[i]
                out_phase[n_out] = phase
                out_op[n_out] = op
                out_src[n_out] = i
                n_out += 1
            continue
        outcome[i] = 0
        victim = invalid if invalid >= 0 else lru
        if tags[s, victim] >= 0 and dirty[s, victim]:
            for h in range(halves):
                if dirty[s, victim] & (1 << h):
                    out_lines[n_out] = tags[s, victim] * halves + h
                    out_write[n_out] = True
                    out_role[n_out] = line_role[s, victim]
                    out_phase[n_out] = phase
                    out_op[n_out] = op
                    out_src[n_out] = i
                    n_out += 1
        tags[s, victim] = tag
        stamp[s, victim] = t
        valid[s, victim] = bit
        dirty[s, victim] = bit if is_write[i] else np.uint8(0)
        line_role[s, victim] = roles[i]
        if not is_write[i]:
            out_lines[n_out] = lines[i]
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

    def __init__(self, size_bytes: int = DEFAULT_CACHE_BYTES, ways: int = DEFAULT_WAYS,
                 line_bytes: int = DEFAULT_LINE_BYTES) -> None:
        if size_bytes < 0 or ways <= 0:
            raise ValueError(f"cache of {size_bytes} bytes, {ways} ways: expected a size >= 0 "
                             "and at least one way")
        if line_bytes not in (64, 128):
            raise ValueError(f"cache line of {line_bytes} bytes: expected 64 or 128")
        self.size_bytes = size_bytes
        self.line_bytes = line_bytes
        self.halves = line_bytes // LINE_BYTES
        sets = size_bytes // (line_bytes * ways)
        self.enabled = sets > 0
        shape = (max(sets, 1), ways)
        self.tags = np.full(shape, -1, np.int64)
        self.valid = np.zeros(shape, np.uint8)
        self.dirty = np.zeros(shape, np.uint8)
        self.stamp = np.zeros(shape, np.int64)
        self.line_role = np.zeros(shape, np.uint8)
        self.clock = np.zeros(1, np.int64)
        self.last_counts = np.zeros(2, np.int64)     # (hits, sector misses) of the last call
        self.last_outcome = np.zeros(0, np.uint8)    # per input of the last call (see _filter)

    def filter(self, lines: np.ndarray, is_write: np.ndarray, role: np.ndarray, phase: int,
               op: int) -> Filtered:
        """The requests of this slice (all of operator ``op``, in ``phase``) that reach DRAM,
        in order.  A write-back is tagged with the role of the data it writes and with the
        phase and operator during which it happens (the access that evicted the line).
        ``last_counts`` then holds the slice's hits and sector misses, ``last_outcome`` each
        request's (1 hit, 2 sector miss, 0 line miss)."""
        n = lines.shape[0]
        self.last_counts = np.zeros(2, np.int64)
        self.last_outcome = np.zeros(n, np.uint8)
        if not self.enabled:
            return Filtered(lines, is_write, role, np.full(n, phase, np.uint8),
                            np.full(n, op, np.uint32), np.arange(n, dtype=np.int64))
        m = (self.halves + 1) * n
        out_l = np.empty(m, np.int64)
        out_w = np.empty(m, np.bool_)
        out_r = np.empty(m, np.uint8)
        out_p = np.empty(m, np.uint8)
        out_o = np.empty(m, np.uint32)
        out_s = np.empty(m, np.int64)
        k = _filter(lines, is_write, role, phase, op, self.halves, self.tags, self.valid,
                    self.dirty, self.stamp, self.line_role, self.clock,
                    out_l, out_w, out_r, out_p, out_o, out_s, self.last_counts,
                    self.last_outcome)
        return Filtered(out_l[:k], out_w[:k], out_r[:k], out_p[:k], out_o[:k], out_s[:k])

    def state(self) -> dict[str, np.ndarray]:
        """A copy of the whole cache state (load it with :meth:`load_state`)."""
        return {k: getattr(self, k).copy()
                for k in ("tags", "valid", "dirty", "stamp", "line_role", "clock")}

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        """Put back a state :meth:`state` took (of a cache of the same shape)."""
        for k, v in state.items():
            getattr(self, k)[...] = v

    def snapshot(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The cache's contents in recency order: per set, the ways sorted from the most
        recently used, as (tag, valid sectors, dirty sectors) arrays [sets, ways] (tag -1:
        an empty way).  Two snapshots are equal when the caches hold the same lines with the
        same sectors valid and dirty and would evict them in the same order."""
        order = np.argsort(-self.stamp, axis=1, kind="stable")
        tags = np.take_along_axis(self.tags, order, axis=1)
        empty = tags < 0
        valid = np.where(empty, 0, np.take_along_axis(self.valid, order, axis=1))
        dirty = np.where(empty, 0, np.take_along_axis(self.dirty, order, axis=1))
        # empty ways last, whatever their stamps
        key = np.argsort(empty, axis=1, kind="stable")
        return (np.take_along_axis(tags, key, axis=1), np.take_along_axis(valid, key, axis=1),
                np.take_along_axis(dirty, key, axis=1))

    def lines_differing(self, before: tuple[np.ndarray, np.ndarray, np.ndarray]) -> int:
        """Lines (ways) whose tag, valid or dirty sectors or recency rank differ between
        the snapshot ``before`` and the cache now (0: the same state)."""
        now = self.snapshot()
        differ = np.zeros(now[0].shape, np.bool_)
        for a, b in zip(now, before):
            differ |= a != b
        return int(np.count_nonzero(differ & ((now[0] >= 0) | (before[0] >= 0))))

    def resident_lines(self) -> int:
        """Lines the cache holds now."""
        return int(np.count_nonzero(self.tags >= 0)) if self.enabled else 0

    def flush(self, phase: int, op: int) -> Filtered:
        """Write back every dirty sector, least recently used line first (the order in which
        further traffic would evict them), tagged ``phase`` and ``op``; empty the cache."""
        if not self.enabled:
            e = np.empty(0, np.int64)
            return Filtered(e, np.empty(0, np.bool_), np.empty(0, np.uint8),
                            np.empty(0, np.uint8), np.empty(0, np.uint32), e)
        mask = (self.tags >= 0) & (self.dirty != 0)
        order = np.argsort(self.stamp[mask], kind="stable")
        tags = self.tags[mask][order]
        dirty = self.dirty[mask][order]
        role = self.line_role[mask][order]
        h = np.arange(self.halves)
        sel = (dirty[:, None] >> h[None, :]) & 1 == 1               # [lines, halves]
        lines = (tags[:, None] * self.halves + h[None, :])[sel]
        roles = np.repeat(role[:, None], self.halves, axis=1)[sel]
        n = lines.shape[0]
        out = Filtered(lines, np.ones(n, np.bool_), roles.astype(np.uint8),
                       np.full(n, phase, np.uint8), np.full(n, op, np.uint32),
                       np.zeros(n, np.int64))
        self.tags.fill(-1)
        self.valid.fill(0)
        self.dirty.fill(0)
        return out
