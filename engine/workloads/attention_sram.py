"""What-if: a dedicated on-chip SRAM for the attention module (the origin document's "为attention
模块配置专用SRAM缓存").

It operates on a trace written by ``python main.py trace``: requests whose ``phase`` tag is
``attention`` (the forward operators inside an attention module: Q/K/V projections, scores,
softmax, the weighted sum -- see :mod:`engine.workloads.capture`) are offered to an SRAM of a
given size; the ones it serves leave the DRAM trace, the rest (and every other request) go to
DRAM unchanged, at their cycles. The requests in such a trace already missed the on-chip
cache modelled by the generator (``--cache-mib``, default a 40 MiB A100 L2), so the SRAM sits
beside that cache and only removes what still reached DRAM.

Two organisations:

* ``lru``: a write-back, write-allocate cache of 64-byte lines, ``ways``-way set associative
  with LRU replacement. A read hit is removed; a read miss stays (it is the line's fill); a
  write is absorbed (a whole line is written, no fill needed) and makes the line dirty; a
  dirty line is written back to DRAM when it is evicted (at the evicting request's cycle).
* ``pinned``: the first ``size / 64`` distinct attention lines of the trace (first-touch
  order) are pinned for the whole trace: every access to them is removed except a first
  access that is a read (the compulsory fill from DRAM).

With ``writeback_at_end`` every line still dirty when the trace ends is written back at the
last cycle (conservative: the SRAM does not know whether attention intermediates are dead).

Energy per access: M. Horowitz, "Computing's energy problem (and what we can do about it)",
ISSCC 2014, 45 nm: a 64-bit SRAM read costs 10 pJ (8 KB), 20 pJ (32 KB), 100 pJ (1 MB). Sizes
in between are interpolated log-log, larger ones extrapolated with the 32 KB-1 MB slope; a
64-byte line is 8 such words. No leakage, no technology scaling (state the node when
comparing with the DRAM energy, which is DRAMsim3's IDD model of a DDR4/HBM2 part).
"""
from __future__ import annotations

import json
import logging
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np
from numba import njit

from engine.errors import DiffMemError
from engine.trace import TraceChunk, write_hdf5

log = logging.getLogger(__name__)

LINE = 64
POLICIES = ("lru", "pinned")
#: changes whenever the model's results change (derived traces and their summaries are cached)
MODEL_VERSION = 2
#: (SRAM bytes, pJ per 64-bit access), Horowitz ISSCC 2014, 45 nm.
HOROWITZ_45NM = ((8 << 10, 10.0), (32 << 10, 20.0), (1 << 20, 100.0))
ENERGY_SOURCE = ("M. Horowitz, 'Computing's energy problem (and what we can do about it)', "
                 "ISSCC 2014: 64-bit SRAM access 10 pJ (8 KB), 20 pJ (32 KB), 100 pJ (1 MB), "
                 "45 nm; log-log interpolation, 8 words per 64-B line, no leakage")
_CHUNK = 1 << 20


class SramError(DiffMemError):
    """A bad attention-SRAM what-if: its spec or the trace it reads."""


@dataclass(frozen=True)
class SramSpec:
    size_bytes: int = 2 << 20
    policy: str = "lru"
    ways: int = 16
    phases: tuple[str, ...] = ("attention",)
    writeback_at_end: bool = True

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise SramError(f"attention SRAM: policy = {self.policy!r}: expected one of "
                            f"{', '.join(POLICIES)}")
        if self.size_bytes < LINE or self.size_bytes % LINE:
            raise SramError(f"attention SRAM: size_bytes = {self.size_bytes}: expected a "
                            f"positive multiple of {LINE}")
        if self.ways < 1 or (self.size_bytes // LINE) % self.ways:
            raise SramError(f"attention SRAM: ways = {self.ways}: must divide the "
                            f"{self.size_bytes // LINE} lines")
        if not self.phases:
            raise SramError("attention SRAM: phases is empty")

    @property
    def lines(self) -> int:
        return self.size_bytes // LINE


def energy_per_line_pj(size_bytes: int) -> float:
    """Energy of one 64-byte SRAM access (8 x 64-bit words), pJ (see the module docstring)."""
    pts = HOROWITZ_45NM
    x = math.log(size_bytes)
    if size_bytes <= pts[0][0]:
        lo, hi = pts[0], pts[1]
    elif size_bytes <= pts[1][0]:
        lo, hi = pts[0], pts[1]
    else:
        lo, hi = pts[1], pts[2]
    slope = (math.log(hi[1]) - math.log(lo[1])) / (math.log(hi[0]) - math.log(lo[0]))
    word = math.exp(math.log(lo[1]) + slope * (x - math.log(lo[0])))
    return 8.0 * word


@dataclass
class SramResult:
    """What the SRAM did to one trace."""

    spec: dict[str, Any]
    requests_in: int = 0            # DRAM requests of the original trace
    requests_out: int = 0           # DRAM requests left (incl. write-backs added)
    tagged: int = 0                 # requests of the SRAM's phases
    tagged_reads: int = 0
    tagged_writes: int = 0
    removed_reads: int = 0          # read hits (served on chip)
    removed_writes: int = 0         # writes absorbed
    fills: int = 0                  # tagged reads that still went to DRAM (misses)
    writebacks: int = 0             # dirty lines written back (evictions + end of trace)
    sram_accesses: int = 0          # tagged requests + fills written in + write-backs read out
    energy_per_access_pJ: float = 0.0
    sram_energy_pJ: float = 0.0
    energy_source: str = ENERGY_SOURCE

    @property
    def removed(self) -> int:
        return self.removed_reads + self.removed_writes

    @property
    def hit_rate(self) -> float:
        return self.removed / self.tagged if self.tagged else 0.0

    @property
    def dram_bytes_removed(self) -> int:
        return (self.requests_in - self.requests_out) * LINE

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(removed=self.removed, hit_rate=self.hit_rate,
                 dram_bytes_removed=self.dram_bytes_removed)
        return d


# ---- the LRU cache (numba) -----------------------------------------------------------------
@njit(cache=True)
def _lru_run(lines, is_write, tagged, tags, dirty, stamp, clock, keep, wb_line, wb_pos, out):
    """Offer the tagged requests of one chunk to the cache. keep[i]: the request still goes
    to DRAM; write-backs of evicted dirty lines are listed (line, index of the evicting
    request). out: [removed_reads, removed_writes, fills, writebacks]; returns the clock."""
    sets, ways = tags.shape
    nwb = 0
    for i in range(lines.shape[0]):
        if not tagged[i]:
            continue
        ln = lines[i]
        s = ln % sets
        clock += 1
        hit = -1
        for w in range(ways):
            if tags[s, w] == ln:
                hit = w
                break
        if hit >= 0:
            stamp[s, hit] = clock
            if is_write[i]:
                dirty[s, hit] = 1
                out[1] += 1
            else:
                out[0] += 1
            keep[i] = False
            continue
        # miss: allocate (LRU victim)
        v = 0
        for w in range(1, ways):
            if stamp[s, w] < stamp[s, v]:
                v = w
        if tags[s, v] >= 0 and dirty[s, v]:
            wb_line[nwb] = tags[s, v]
            wb_pos[nwb] = i
            nwb += 1
            out[3] += 1
        tags[s, v] = ln
        stamp[s, v] = clock
        if is_write[i]:
            dirty[s, v] = 1
            out[1] += 1
            keep[i] = False
        else:
            dirty[s, v] = 0
            out[2] += 1
    return clock, nwb


# ---- reading the tagged trace ----------------------------------------------------------------
def _iter_tagged(path: Path, phases: tuple[str, ...]
                 ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """(addr, is_write, cycle, stream, tagged) chunks of an HDF5 trace with phase tags."""
    import h5py
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise SramError(f"{path}: cannot open the trace: {exc}") from exc
    with f:
        g = f.get("trace")
        if g is None or "phase" not in g:
            raise SramError(f"{path}: no per-request 'phase' tags (group 'trace', dataset "
                            "'phase'): the attention-SRAM what-if needs a trace written by "
                            "`python main.py trace`")
        try:
            names = json.loads(g.attrs["phase_names"])
        except (KeyError, ValueError) as exc:
            raise SramError(f"{path}: trace attribute 'phase_names' missing or not JSON "
                            f"({exc})") from exc
        unknown = [p for p in phases if p not in names]
        if unknown:
            raise SramError(f"{path}: phase(s) {', '.join(unknown)} not in the trace's "
                            f"phase_names {names}")
        ids = np.array([names.index(p) for p in phases], np.uint8)
        n = int(g["addr"].shape[0])
        stream = g["stream"] if "stream" in g else None
        for lo in range(0, n, _CHUNK):
            hi = min(n, lo + _CHUNK)
            addr = g["addr"][lo:hi].astype(np.uint64)
            isw = g["is_write"][lo:hi].astype(bool)
            cyc = g["cycle"][lo:hi].astype(np.int64)
            st = (stream[lo:hi].astype(np.uint16) if stream is not None
                  else np.zeros(hi - lo, np.uint16))
            tagged = np.isin(g["phase"][lo:hi], ids)
            yield addr, isw, cyc, st, tagged


def apply_attention_sram(src: str | Path, dst: str | Path, spec: SramSpec | None = None
                         ) -> SramResult:
    """Write *dst* (HDF5): the DRAM requests of *src* left with the SRAM in place."""
    spec = spec or SramSpec()
    src, dst = Path(src), Path(dst)
    res = SramResult(spec={**asdict(spec), "phases": list(spec.phases)},
                     energy_per_access_pJ=energy_per_line_pj(spec.size_bytes))
    pinned: set[int] | np.ndarray | None = None
    if spec.policy == "pinned":
        pinned = _pinned_lines(src, spec)
    sets = spec.lines // spec.ways
    tags = np.full((sets, spec.ways), -1, np.int64)
    dirty = np.zeros((sets, spec.ways), np.uint8)
    stamp = np.zeros((sets, spec.ways), np.int64)
    clock = 0
    seen_pinned = np.zeros(0, np.int64)
    dirty_pinned = np.zeros(0, np.int64)
    last_cycle = 0
    counts = np.zeros(4, np.int64)

    def chunks() -> Iterator[TraceChunk]:
        nonlocal clock, seen_pinned, dirty_pinned, last_cycle
        for addr, isw, cyc, st, tagged in _iter_tagged(src, spec.phases):
            res.requests_in += addr.size
            res.tagged += int(tagged.sum())
            res.tagged_writes += int((tagged & isw).sum())
            if cyc.size:
                last_cycle = max(last_cycle, int(cyc[-1]))
            lines = (addr // LINE).astype(np.int64)
            keep = np.ones(addr.size, bool)
            if pinned is None:
                wb_line = np.empty(int(tagged.sum()), np.int64)
                wb_pos = np.empty(int(tagged.sum()), np.int64)
                clock, nwb = _lru_run(lines, isw, tagged, tags, dirty, stamp, clock, keep,
                                      wb_line, wb_pos, counts)
                wb_line, wb_pos = wb_line[:nwb], wb_pos[:nwb]
            else:
                on = tagged & np.isin(lines, pinned)
                idx = np.flatnonzero(on)
                ln = lines[idx]
                # first access of each pinned line in this chunk, and whether it is new
                uniq, first = np.unique(ln, return_index=True)
                new = ~np.isin(uniq, seen_pinned)
                fill = np.zeros(idx.size, bool)
                fill[first[new]] = ~isw[idx[first[new]]]     # a first read fills from DRAM
                keep[idx[~fill]] = False
                counts[0] += int((~fill & ~isw[idx]).sum())
                counts[1] += int(isw[idx].sum())
                counts[2] += int(fill.sum())
                seen_pinned = np.union1d(seen_pinned, uniq)
                dirty_pinned = np.union1d(dirty_pinned, ln[isw[idx]])
                wb_line = wb_pos = np.zeros(0, np.int64)
            out_addr, out_w, out_c, out_s = addr[keep], isw[keep], cyc[keep], st[keep]
            if wb_line.size:
                # each write-back goes right before the request that evicted its line
                pos = np.searchsorted(np.flatnonzero(keep), wb_pos)
                out_addr = np.insert(out_addr, pos, (wb_line * LINE).astype(np.uint64))
                out_w = np.insert(out_w, pos, True)
                out_c = np.insert(out_c, pos, cyc[wb_pos])
                out_s = np.insert(out_s, pos, st[wb_pos])
            res.requests_out += out_addr.size
            yield TraceChunk(out_addr, out_w, out_c, out_s)
        if spec.writeback_at_end:
            if pinned is None:
                end = tags[(tags >= 0) & (dirty != 0)]
            else:
                end = dirty_pinned
            end = np.sort(end)
            counts[3] += end.size
            res.requests_out += end.size
            if end.size:
                yield TraceChunk((end * LINE).astype(np.uint64), np.ones(end.size, bool),
                                 np.full(end.size, last_cycle, np.int64),
                                 np.zeros(end.size, np.uint16))

    dst.parent.mkdir(parents=True, exist_ok=True)
    write_hdf5(dst, chunks(), compression="lzf")
    _copy_placement(src, dst)
    res.tagged_reads = res.tagged - res.tagged_writes
    res.removed_reads, res.removed_writes, res.fills, res.writebacks = (int(c) for c in counts)
    # every tagged request touches the SRAM; a fill also writes the line into it, a
    # write-back reads it out
    res.sram_accesses = res.tagged + res.fills + res.writebacks
    res.sram_energy_pJ = res.sram_accesses * res.energy_per_access_pJ
    log.info("attention SRAM %s on %s: %d of %d tagged requests removed (%.1f %%), %d "
             "write-backs", spec.policy, src.name, res.removed, res.tagged,
             100 * res.hit_rate, res.writebacks)
    return res


def _copy_placement(src: Path, dst: Path) -> None:
    """Keep the source trace's placement record (engine.workloads.retarget), so the
    filtered trace can be re-placed for another memory like its source."""
    import h5py
    with h5py.File(src, "r") as f:
        g = f.get("trace")
        raw = g.attrs.get("placement") if g is not None else None
    if raw is not None:
        with h5py.File(dst, "a") as f:
            f["trace"].attrs["placement"] = raw


def _pinned_lines(src: Path, spec: SramSpec) -> np.ndarray:
    """The first spec.lines distinct tagged lines of the trace, in first-touch order."""
    order: list[np.ndarray] = []
    seen = np.zeros(0, np.int64)
    for addr, _isw, _cyc, _st, tagged in _iter_tagged(src, spec.phases):
        ln = (addr[tagged] // LINE).astype(np.int64)
        uniq, first = np.unique(ln, return_index=True)
        fresh = ~np.isin(uniq, seen)
        new = ln[np.sort(first[fresh])]
        order.append(new)
        seen = np.union1d(seen, new)
        if seen.size >= spec.lines:
            break
    allnew = np.concatenate(order) if order else np.zeros(0, np.int64)
    return np.sort(allnew[:spec.lines])


def what_if(cfg: Any, src: str | Path, workdir: str | Path, spec: SramSpec | None = None
            ) -> dict[str, Any]:
    """Simulate *src* with and without the SRAM on *cfg* (requests offered as fast as the
    memory takes them): DRAM traffic, time and energy removed, SRAM energy added."""
    from engine.studies.jobs import _simulate_saturated, summarise
    from engine.simulator import SimOptions

    spec = spec or SramSpec()
    dst = Path(workdir) / f"{Path(src).stem}.sram-{spec.policy}-{spec.size_bytes}.h5"
    res = apply_attention_sram(src, dst, spec)
    base = summarise(cfg, _simulate_saturated(cfg, str(src), SimOptions(epoch=0), "trace"))
    new = summarise(cfg, _simulate_saturated(cfg, str(dst), SimOptions(epoch=0), "trace"))
    return {"sram": res.to_dict(),
            "dram_time_ns": [base["step_time_ns"], new["step_time_ns"]],
            "dram_time_removed_ns": base["step_time_ns"] - new["step_time_ns"],
            "dram_energy_pJ": [base["energy_total_pJ"], new["energy_total_pJ"]],
            "energy_with_sram_pJ": new["energy_total_pJ"] + res.sram_energy_pJ,
            "dram_bytes": [base["bytes"], new["bytes"]]}
